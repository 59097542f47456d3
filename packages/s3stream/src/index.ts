export * from './object-store';
export * from './ports';
export * from './wal-writer';
export * from './stream-reader';
