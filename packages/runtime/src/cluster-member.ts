import { connect, type NatsConnection } from 'nats';
import { LIMITS, type ServiceConfig } from '@mink/config';
import type { View } from '@mink/meta';
import { JetStreamMetaLog, LivenessTracker, MetaStore, ViewSnapshots, startMetaStore } from '@mink/metalog';
import { S3ObjectStore } from '@mink/s3stream';
import type { Logger } from 'pino';
import { Gauge, type Registry } from 'prom-client';

/**
 * A process's membership in the cluster: its NATS connection, its own copy of the metadata view (loaded
 * from the newest snapshot, then kept current by tailing the log after it) and its view of liveness (from
 * the heartbeat bucket). Every service has one; nothing here decides anything. The log and the snapshots
 * are exposed for the coordinator lease holder, which writes snapshots and purges the log below them.
 */
export class ClusterMember {
  private constructor(
    readonly nc: NatsConnection,
    readonly store: MetaStore,
    readonly liveness: LivenessTracker,
    readonly config: ServiceConfig,
    private readonly logger: Logger,
    readonly log: JetStreamMetaLog,
    readonly snapshots: ViewSnapshots,
    /** The process's one S3 client (its concurrency bound is per process), shared by every component. */
    readonly objectStore: S3ObjectStore,
  ) {}

  /**
   * Connects and catches up with the log. `onConnected` runs once connected and before the catch-up (a data
   * node starts heartbeating there, so the coordinator sees it joining while it replays the log).
   */
  static async join(
    config: ServiceConfig,
    logger: Logger,
    name: string,
    onConnected: (nc: NatsConnection) => Promise<void> = async () => undefined,
  ): Promise<ClusterMember> {
    // noAsyncTraces: no Error (stack capture) per request; requests are the hot path of every service, and
    // the errors mink raises name their subject and timeout themselves.
    const nc = await connect({ servers: config.natsUrl, name, maxReconnectAttempts: -1, reconnectTimeWait: 250, noAsyncTraces: true });
    await onConnected(nc);
    const log = await JetStreamMetaLog.create(nc, { streamName: config.metaStream });
    const objectStore = S3ObjectStore.fromConfig(config);
    const snapshots = await ViewSnapshots.open(nc, objectStore, config.metaStream);
    // Start from the newest snapshot and catch up with everything committed since, so the first decisions
    // see the whole past while startup costs no more than one snapshot interval of entries.
    // A process that later falls behind the purged part of the log reloads the newest snapshot and goes on.
    const started = await startMetaStore({ log, snapshots, catchUpTimeoutMs: LIMITS.joinCatchUpTimeoutMs, storeOptions: { snapshots } });
    const { store } = started;
    store.onReloaded((view, skippedFromSeq) =>
      logger.warn({ skippedFromSeq, seq: view.seq }, 'fell behind the purged metadata log: reloaded the view from the newest snapshot'),
    );
    const liveness = await LivenessTracker.start(nc);
    logger.info(
      { seq: store.view.seq, snapshotSeq: started.snapshotSeq, replayedEntries: started.replayedEntries, attempts: started.attempts },
      'joined the cluster: metadata view caught up',
    );
    return new ClusterMember(nc, store, liveness, config, logger, log, snapshots, objectStore);
  }

  /**
   * Metrics of this process's copy of the view: the last applied entry and how many entries of the log it
   * has not applied yet (read from the stream when scraped).
   */
  registerMetrics(registry: Registry): void {
    const member = this;
    new Gauge({
      name: 'mink_meta_applied_seq',
      help: 'Sequence of the last metadata log entry this process applied',
      registers: [registry],
      collect() {
        this.set(member.store.view.seq);
      },
    });
    new Gauge({
      name: 'mink_meta_apply_lag_entries',
      help: 'Metadata log entries appended but not yet applied by this process, when scraped',
      registers: [registry],
      async collect() {
        const lastSeq = await member.log.lastSeq().catch(() => member.store.view.seq);
        this.set(Math.max(0, lastSeq - member.store.view.seq));
      },
    });
  }

  get view(): View {
    return this.store.view;
  }

  /** Data nodes that are live now: fresh heartbeat at their current epoch (docs/architecture.md §3). */
  liveNodes(): Set<string> {
    return this.liveness.liveNodes(this.store.view, this.config.leaseTtlMs);
  }

  async close(): Promise<void> {
    await this.liveness.stop().catch(() => undefined);
    await this.store.stop().catch(() => undefined);
    await this.nc.drain().catch(() => undefined);
    this.objectStore.close();
    this.logger.info('left the cluster');
  }
}
