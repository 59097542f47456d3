import 'reflect-metadata';
import { assertLimits, readServiceConfig, LIMITS } from '@mink/config';
import { Heartbeater } from '@mink/metalog';
import { SUBJECTS } from '@mink/protocol';
import { serveJson } from '@mink/transport';
import { ClusterMember, ServiceState, createLogger, runHttpService } from '@mink/runtime';
import { DataNodeModule } from './data-node.module';
import { BucketSync } from './bucket-sync';
import { NodeRequestHandler } from './node-request-handler';
import { DataPlane } from './data-plane';
import { S3ObjectStore, StreamReader, WalWriter } from '@mink/s3stream';

/**
 * A data node: registers a fresh incarnation (a higher node epoch on every start), heartbeats, tails the
 * view and opens or closes the buckets it should lead (seed, "Opening a bucket").
 */
async function main(): Promise<void> {
  assertLimits();
  const config = readServiceConfig(process.env);
  const logger = createLogger('data-node', config.nodeId, config.logLevel);
  const state = new ServiceState('data-node', config.nodeId);
  const member = await ClusterMember.join(config, logger, `data-node-${config.nodeId}`);
  const heartbeater = await Heartbeater.create(member.nc, { onError: (error) => logger.warn({ err: error }, 'heartbeat failed') });
  let sync: BucketSync | null = null;
  let wal: WalWriter | null = null;

  const { port: httpPort } = await runHttpService({
    module: DataNodeModule.register(state),
    port: config.httpPort,
    logger,
    shutdown: async () => {
      // A clean leave: give the buckets up and stop heartbeating so the coordinator re-leads them at
      // once instead of after lease_ttl (DESIGN §6).
      await wal?.close().catch(() => undefined);
      await sync?.stopAndCloseAll();
      await heartbeater.stop().catch(() => undefined);
      await member.close();
    },
  });

  const address = SUBJECTS.nodeAddress(config.nodeId);
  const registered = await member.store.proposeOrThrow({
    type: 'RegisterNode',
    nodeId: config.nodeId,
    address,
    kafka: `${config.advertisedHost}:${config.kafkaPort}`,
    http: `${config.advertisedHost}:${httpPort}`,
  });
  const nodeEpoch = registered.epoch!;
  logger.info({ nodeEpoch, address }, 'registered node incarnation');
  await heartbeater.start(config.nodeId, 'data-node', nodeEpoch, Math.max(50, Math.floor(config.leaseTtlMs / LIMITS.heartbeatsPerLeaseTtl)));

  sync = new BucketSync(member, { nodeId: config.nodeId, nodeEpoch }, logger, state);
  const objectStore = S3ObjectStore.fromConfig(config);
  const reader = new StreamReader({ store: objectStore, meta: member.store });
  wal = new WalWriter({
    nodeId: config.nodeId,
    nodeEpoch,
    store: objectStore,
    meta: member.store,
    onCommitted: (bucketId, slice, payload) => reader.cache(bucketId, slice, payload),
  });
  const data = new DataPlane(member, { nodeId: config.nodeId, nodeEpoch }, sync, wal, reader);
  const handler = new NodeRequestHandler(config.nodeId, nodeEpoch, sync, data);
  const onError = (error: unknown) => logger.error({ err: error }, 'node request failed');
  serveJson(member.nc, SUBJECTS.nodeRpc(address), (body) => handler.handle(body), { onError });
  serveJson(member.nc, SUBJECTS.anyNodeRpc, (body) => handler.handle(body), { queue: SUBJECTS.nodesQueue, onError });
  sync.start();
  state.setReady(true);
}

main().catch((error) => {
  // eslint-disable-next-line no-console
  console.error(error);
  process.exit(1);
});
