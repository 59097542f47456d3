import 'reflect-metadata';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assertLimits, readServiceConfig, LIMITS } from '@mink/config';
import { Heartbeater } from '@mink/metalog';
import { SUBJECTS } from '@mink/protocol';
import { serveJson } from '@mink/transport';
import { ClusterMember, ServiceState, createLogger, runHttpService } from '@mink/runtime';
import { StreamReader } from '@mink/s3stream';
import { MinkClient } from '@mink/client';
import { KafkaListener, kafkaBroker } from '@mink/kafka';
import { Gauge } from 'prom-client';
import { DataNodeModule } from './data-node.module';
import { BucketSyncMetrics } from './bucket-sync';
import { Incarnation, notRegistered, type IncarnationContext } from './incarnation';
import { DataNodeKafkaBackend } from './kafka-backend';
import { InternalScans } from './internal-scans';
import { lakeStoreUri } from '@mink/lake';
import { LakeReads } from './lake-reads';

/**
 * A data node: registers a fresh incarnation (a higher node epoch on every start, and again whenever it
 * finds itself fenced), heartbeats, tails the view and opens or closes the buckets it should lead (seed,
 * "Opening a bucket"), and serves the data path of the buckets it leads.
 */
async function main(): Promise<void> {
  assertLimits();
  const config = readServiceConfig(process.env);
  const logger = createLogger('data-node', config.nodeId, config.logLevel);
  const state = new ServiceState('data-node', config.nodeId);
  const heartbeatIntervalMs = Math.max(50, Math.floor(config.leaseTtlMs / LIMITS.heartbeatsPerLeaseTtl));
  let heartbeater!: Heartbeater;
  // Heartbeats start at epoch 0 (joining, not live) before the catch-up with the log, which can take a while
  // with many buckets: the coordinator then waits for this node instead of moving its buckets away.
  const member = await ClusterMember.join(config, logger, `data-node-${config.nodeId}`, async (nc) => {
    heartbeater = await Heartbeater.create(nc, { onError: (error) => logger.warn({ err: error }, 'heartbeat failed') });
    await heartbeater.start(config.nodeId, 'data-node', 0, heartbeatIntervalMs);
  });
  member.registerMetrics(state.registry);
  // Reads are served under this lease (ReadFence): most of lease_ttl, so a few late heartbeats do not break it.
  heartbeater.trackLease(config.leaseTtlMs * (1 - 1 / LIMITS.heartbeatsPerLeaseTtl));
  // Beats tell how far this node has applied the log: the coordinator keeps those entries and slows creates for it.
  heartbeater.reportAppliedSeq(() => member.view.seq);
  new Gauge({
    name: 'mink_heartbeat_delay_max_ms',
    help: 'Longest delay of a heartbeat past its schedule since the last scrape (event loop held up)',
    registers: [state.registry],
    collect() {
      this.set(heartbeater.takeLongestDelayMs());
    },
  });
  let current: Incarnation | null = null;
  let stopping = false;
  let kafka: KafkaListener | null = null;

  const { port: httpPort } = await runHttpService({
    // Health, metrics and the internal scan route (scan pages for gateways and clients, see InternalScans).
    module: DataNodeModule.register(state, new InternalScans(config.nodeId, () => current?.data ?? null, state.registry)),
    port: config.httpPort,
    host: config.httpBindHost,
    logger,
    shutdown: async () => {
      // A clean leave: give the buckets up and stop heartbeating so the coordinator re-leads them at
      // once instead of after lease_ttl (docs/ownership.md).
      stopping = true;
      await kafka?.stop();
      await current?.retire();
      await heartbeater.stop().catch(() => undefined);
      await member.close();
    },
  });

  // KV tablets are caches of snapshot plus changelog in object storage: whatever an earlier run left is stale.
  const tabletsDir = join(config.dataDir || join(tmpdir(), `mink-data-node-${config.nodeId}-${process.pid}`), 'kv');
  await rm(tabletsDir, { recursive: true, force: true });
  const objectStore = member.objectStore;
  const context: IncarnationContext = {
    member,
    config,
    logger,
    heartbeater,
    objectStore,
    reader: new StreamReader({ store: objectStore, meta: member.store }),
    lakeReads: new LakeReads(objectStore, lakeStoreUri(objectStore.bucket, objectStore.prefix)),
    metrics: new BucketSyncMetrics(state),
    httpPort,
    tabletsDir,
  };
  const first = await Incarnation.begin(context);
  current = first;

  // The Kafka listener (docs/architecture.md §12): topics are kafka-format tables, served through the current incarnation.
  const kafkaBackend = new DataNodeKafkaBackend(member, MinkClient.over(member.nc), config, () => current?.data ?? null);
  kafka = new KafkaListener({ host: config.kafkaBindHost, port: config.kafkaPort, handler: kafkaBroker(kafkaBackend), logger });
  const kafkaPort = await kafka.start();
  logger.info({ host: config.kafkaBindHost, port: kafkaPort, advertised: `${config.advertisedHost}:${config.kafkaPort}` }, 'Kafka listener started');

  const handle = (body: unknown) => (current ? current.handle(body) : notRegistered(config.nodeId));
  const onError = (error: unknown) => logger.error({ err: error }, 'node request failed');
  serveJson(member.nc, SUBJECTS.nodeRpc(SUBJECTS.nodeAddress(config.nodeId)), handle, { onError });
  serveJson(member.nc, SUBJECTS.anyNodeRpc, handle, { queue: SUBJECTS.nodesQueue, onError });

  // Seed: a node that comes back after being taken over finds its epoch moved on; it gives up what the
  // old incarnation held and registers a fresh one that re-syncs from the view.
  let reincarnating = false;
  const checkFenced = (): void => {
    if (stopping || reincarnating || !current?.isFenced(member, config.nodeId)) return;
    reincarnating = true;
    const fenced = current;
    current = null;
    logger.warn({ nodeEpoch: fenced.nodeEpoch }, 'this incarnation was fenced by a takeover; registering a new one');
    void (async () => {
      try {
        await fenced.abandon();
        if (!stopping) current = await Incarnation.begin(context);
      } catch (error) {
        logger.fatal({ err: error }, 'could not register a new incarnation');
        process.exit(1);
      } finally {
        reincarnating = false;
      }
    })();
  };
  // Also after a reload from a snapshot: the entries skipped may have fenced this incarnation.
  member.store.onApplied(checkFenced);
  member.store.onReloaded(checkFenced);
  state.setReady(true);
}

main().catch((error) => {
  // eslint-disable-next-line no-console
  console.error(error);
  process.exit(1);
});
