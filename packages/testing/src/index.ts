export * from './eventually';
export * from './in-memory-meta-log';
export { startNatsServer, startS3Server, freePort } from '@mink/devcluster';
export type { NatsServerHandle, S3ServerHandle } from '@mink/devcluster';
export * from './led-table';
export * from './s3-fault-proxy';
export * from './view-records';
export * from './abuse-clients';
