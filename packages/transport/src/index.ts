export * from './rpc';
export * from './multi-message';
