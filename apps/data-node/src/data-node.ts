import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Inject, Injectable, type BeforeApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { LIMITS, type ServiceConfig } from '@mink/config';
import type { KafkaListener } from '@mink/kafka';
import { ClusterMember, LOGGER, OBJECT_STORE, SERVICE_CONFIG, SERVICE_STATE, type Logger, type ServiceState } from '@mink/runtime';
import { StreamReader, type ObjectStore } from '@mink/s3stream';
import { Gauge } from 'prom-client';
import { BucketSyncMetrics, DataNodeKafkaBackend, DataNodeMetrics, Incarnation, LakeReads, crashHookOf, type IncarnationContext } from '@mink/data-plane';
import { CurrentIncarnation } from './current-incarnation';
import { NodeHeartbeats } from './node-heartbeats';

/** The data node's Kafka listener (a provider of this token; started by DataNode once an incarnation serves). */
export const KAFKA_LISTENER = Symbol('KafkaListener');

/**
 * A data node's life: it registers a fresh incarnation (a higher node epoch on every start, and again whenever
 * it finds itself fenced), then serves the buckets that incarnation opens; on SIGTERM it leaves cleanly.
 *
 * Order at start: heartbeats at epoch 0 and the catch-up with the log (while the cluster member is built,
 * see NodeHeartbeats), `onModuleInit` (lease tracking, the local tablet folder emptied), the HTTP server,
 * `begin` with its bound port (the first incarnation registers that address, then the Kafka listener starts),
 * and only then the NATS endpoints (`startService`).
 *
 * Order at shutdown: `beforeApplicationShutdown` gives the buckets up and stops heartbeating while the
 * endpoints still answer, so the coordinator re-leads the buckets at once instead of after lease_ttl
 * (docs/ownership.md); Nest then closes the HTTP server and the NATS endpoints, and the process leaves the
 * cluster last (ClusterMembership).
 */
@Injectable()
export class DataNode implements OnModuleInit, BeforeApplicationShutdown {
  private stopping = false;
  private reincarnating = false;
  private context: IncarnationContext | null = null;
  /** KV tablets are caches of snapshot plus changelog in object storage: whatever an earlier run left is stale. */
  private readonly tabletsDir: string;

  constructor(
    @Inject(ClusterMember) private readonly member: ClusterMember,
    @Inject(SERVICE_CONFIG) private readonly config: ServiceConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(SERVICE_STATE) private readonly state: ServiceState,
    @Inject(NodeHeartbeats) private readonly heartbeats: NodeHeartbeats,
    @Inject(OBJECT_STORE) private readonly objectStore: ObjectStore,
    @Inject(StreamReader) private readonly reader: StreamReader,
    @Inject(LakeReads) private readonly lakeReads: LakeReads,
    @Inject(BucketSyncMetrics) private readonly metrics: BucketSyncMetrics,
    @Inject(DataNodeMetrics) private readonly nodeMetrics: DataNodeMetrics,
    @Inject(CurrentIncarnation) private readonly current: CurrentIncarnation,
    @Inject(KAFKA_LISTENER) private readonly kafka: KafkaListener,
    @Inject(DataNodeKafkaBackend) private readonly kafkaBackend: DataNodeKafkaBackend,
  ) {
    this.tabletsDir = join(config.dataDir || join(tmpdir(), `mink-data-node-${config.nodeId}-${process.pid}`), 'kv');
  }

  async onModuleInit(): Promise<void> {
    const heartbeater = this.heartbeats.heartbeater;
    // Reads are served under this lease (ReadFence): most of lease_ttl, so a few late heartbeats do not break it.
    heartbeater.trackLease(this.config.leaseTtlMs * (1 - 1 / LIMITS.heartbeatsPerLeaseTtl));
    // Beats tell how far this node has applied the log: the coordinator keeps those entries and slows creates for it.
    heartbeater.reportAppliedSeq(() => this.member.view.seq);
    new Gauge({
      name: 'mink_heartbeat_delay_max_ms',
      help: 'Longest delay of a heartbeat past its schedule since the last scrape (event loop held up)',
      registers: [this.state.registry],
      collect() {
        this.set(heartbeater.takeLongestDelayMs());
      },
    });
    await rm(this.tabletsDir, { recursive: true, force: true });
  }

  /** Registers the first incarnation, which advertises `httpPort` for scan pages, and starts the Kafka listener. */
  async begin(httpPort: number): Promise<void> {
    const { member, config, logger } = this;
    this.context = {
      member,
      config,
      logger,
      heartbeater: this.heartbeats.heartbeater,
      objectStore: this.objectStore,
      reader: this.reader,
      lakeReads: this.lakeReads,
      metrics: this.metrics,
      nodeMetrics: this.nodeMetrics,
      httpPort,
      tabletsDir: this.tabletsDir,
      // A fault test's kill -9 at a chosen point of a WAL object's life (MINK_TEST_CRASH_AT); never set in production.
      ...(config.crashAt ? { walReached: crashHookOf(config.crashAt, () => process.kill(process.pid, 'SIGKILL')) } : {}),
      transactionOffsets: (request) => this.kafkaBackend.transactionOffsets(request),
      kafkaGroups: (request) => this.kafkaBackend.coordinatedGroups(request),
    };
    this.nodeMetrics.readCacheSizesFrom(() => [...this.reader.cacheSizes, this.lakeReads.cacheSize]);
    this.current.incarnation = await Incarnation.begin(this.context);
    // The Kafka listener (docs/architecture.md §12): topics are kafka-format tables, served through the current incarnation.
    const kafkaPort = await this.kafka.start();
    this.kafkaBackend.start();
    logger.info({ host: config.kafkaBindHost, port: kafkaPort, advertised: `${config.advertisedHost}:${config.kafkaPort}` }, 'Kafka listener started');
    // Also after a reload from a snapshot: the entries skipped may have fenced this incarnation.
    member.store.onApplied(() => this.checkFenced());
    member.store.onReloaded(() => this.checkFenced());
  }

  /** A clean leave: the buckets given up and the heartbeats stopped while the process is still connected. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    try {
      await this.kafka.stop();
      this.kafkaBackend.stop();
      await this.current.incarnation?.retire();
      await this.heartbeats.heartbeater.stop().catch(() => undefined);
    } catch (error) {
      this.logger.error({ err: error }, 'error while leaving');
    }
  }

  /**
   * docs/ownership.md §4.5: a node that comes back after being taken over finds its epoch moved on; it gives
   * up what the old incarnation held and registers a fresh one that re-syncs from the view.
   */
  private checkFenced(): void {
    const fenced = this.current.incarnation;
    if (this.stopping || this.reincarnating || !fenced?.isFenced(this.member, this.config.nodeId)) return;
    this.reincarnating = true;
    this.current.incarnation = null;
    this.logger.warn({ nodeEpoch: fenced.nodeEpoch }, 'this incarnation was fenced by a takeover; registering a new one');
    void (async () => {
      try {
        await fenced.abandon();
        if (!this.stopping) this.current.incarnation = await Incarnation.begin(this.context!);
      } catch (error) {
        this.logger.fatal({ err: error }, 'could not register a new incarnation');
        process.exit(1);
      } finally {
        this.reincarnating = false;
      }
    })();
  }
}
