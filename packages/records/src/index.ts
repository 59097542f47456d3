export * from './row';
export * from './validate';
export * from './arrow-codec';
export * from './json';
export * from './bucketing';
