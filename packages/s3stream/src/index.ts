export * from './object-store';
export * from './ports';
export * from './wal-writer';
export * from './stream-reader';
export * from './compactor';
export * from './garbage-collector';
export * from './slice-reads';
export * from './packed-slice';
