export * from './view';
export * from './commands';
export * from './schema';
export * from './apply';
export * from './prng';
export * from './deep-freeze';
export * from './lookup';
export * from './ports';
