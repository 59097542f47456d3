export * from './row';
export * from './validate';
export * from './arrow-codec';
export * from './json';
export * from './bucketing';
export * from './ipc-reader';
export * from './scan-stream';
export * from './scan-json';
export { END_OF_STREAM, ipcStreamParts } from './arrow-ipc';
