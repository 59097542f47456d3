export * from './rpc';
export * from './multi-message';
export * from './seal';
