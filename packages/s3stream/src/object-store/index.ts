export * from './object-store';
export * from './byte-range';
export * from './semaphore';
export * from './s3-object-store';
export * from './in-memory-object-store';
export * from './delegating-object-store';
