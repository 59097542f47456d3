export * from './tiering-config';
export * from './range-reader';
export * from './log-bucket-compaction';
export * from './pk-bucket-merge';
export * from './round-executor';
export * from './lake-sweep';
export * from './tiering-loop';
