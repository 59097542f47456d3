export * from './duration';
export * from './limits';
export * from './env';
export * from './backoff';
export * from './host-identity';
export * from './secret-file';
export * from './exposure';
