export * from './logger';
export * from './service-state';
export * from './health.controller';
export * from './http-errors';
export * from './cluster-member';
export * from './run-service';
export * from './http-adapter';
