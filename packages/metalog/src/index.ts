
export * from './nats-errors';
export * from './meta-log';
export * from './meta-store';
export * from './server-clock';
export * from './liveness';
export * from './lease';
export * from './view-snapshots';
export * from './start-from-snapshot';
export * from './snapshot-scheduler';
export * from './batcher';
export * from './purge-point';
export * from './meta-resources';
export * from './nats-connection';
