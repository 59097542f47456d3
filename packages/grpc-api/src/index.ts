export * from './grpc-errors';
export * from './requests';
export * from './responses';
export * from './proto';
export * from './grpc-gateway';
export * from './grpc-client';
