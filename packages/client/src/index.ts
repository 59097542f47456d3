export * from './backoff';
export * from './mink-client';
