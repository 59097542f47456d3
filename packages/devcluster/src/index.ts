export * from './ports';
export * from './managed-process';
export * from './nats-server';
export * from './nats-cluster';
export * from './s3-server';
export * from './local-cluster';
export * from './secrets';
