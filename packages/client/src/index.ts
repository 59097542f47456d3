export * from './backoff';
export * from './mink-client';
export * from './table-client';
