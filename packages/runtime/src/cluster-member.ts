import { connect, ErrorCode, NatsError, type NatsConnection } from 'nats';
import { LIMITS, natsAuthOptions, natsTlsOptions, sleep, type ServiceConfig } from '@mink/config';
import { MinkError } from '@mink/protocol';
import type { View } from '@mink/meta';
import { JetStreamMetaLog, LivenessTracker, MetaStore, ViewSnapshots, ensureMetaBuckets, failRequestsFastAcrossReconnects, startMetaStore, type MetaResource } from '@mink/metalog';
import { S3ObjectStore } from '@mink/s3stream';
import type { Logger } from 'pino';
import { Counter, Gauge, type Registry } from 'prom-client';

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
    /** The metadata log tail's pace (`JetStreamMetaLogOptions.tailPaceMs`); 0, each entry as it comes, when absent. */
    metaTailPaceMs = 0,
  ): Promise<ClusterMember> {
    // Every server of MINK_NATS_URL: when the one this process is connected to goes away, it reconnects to
    // another (or to the same one once it is back), forever. noAsyncTraces: no Error (stack capture) per
    // request; requests are the hot path of every service, and the errors mink raises name their subject and
    // timeout themselves. MINK_NATS_USER/MINK_NATS_PASSWORD, when set, are the credentials of the connection,
    // and MINK_NATS_TLS_CA_FILE (with MINK_NATS_TLS_CERT_FILE/MINK_NATS_TLS_KEY_FILE) its TLS.
    const nc = failRequestsFastAcrossReconnects(
      await connect({
        servers: config.natsServers,
        name,
        maxReconnectAttempts: -1,
        reconnectTimeWait: 250,
        noAsyncTraces: true,
        ...natsAuthOptions(config.natsCredentials),
        ...natsTlsOptions(config.natsTls),
      }),
    );
    // Joining a NATS cluster that is itself starting (or electing leaders) meets timeouts and "no responders"
    // for a few seconds: each step is tried again until LIMITS.joinCatchUpTimeoutMs has passed.
    const step = retryingTransientFailures(logger, Date.now() + LIMITS.joinCatchUpTimeoutMs);
    // The stream and every KV bucket are created here, with MINK_META_REPLICAS replicas, before onConnected
    // (a data node opens the heartbeat bucket there) or anything else opens one with the default.
    const log = await step('create the metadata log', () =>
      JetStreamMetaLog.create(nc, { streamName: config.metaStream, replicas: config.metaReplicas, tailPaceMs: metaTailPaceMs }),
    );
    log.onTailTrouble = (error) => logger.warn({ err: error }, 'the metadata log tail cannot create a consumer yet; retrying');
    const buckets = await step('create the KV buckets', () => ensureMetaBuckets(nc, config.metaReplicas));
    warnAboutReplicas(logger, config.metaReplicas, [{ name: log.streamName, replicas: log.replicas }, ...buckets]);
    await step('start heartbeating', () => onConnected(nc));
    const objectStore = S3ObjectStore.fromConfig(config);
    const snapshots = await step('open the view snapshots', () => ViewSnapshots.open(nc, objectStore, config.metaStream, { replicas: config.metaReplicas }));
    // Start from the newest snapshot and catch up with everything committed since, so the first decisions
    // see the whole past while startup costs no more than one snapshot interval of entries.
    // A process that later falls behind the purged part of the log reloads the newest snapshot and goes on.
    const started = await step('catch up with the metadata log', () =>
      startMetaStore({ log, snapshots, catchUpTimeoutMs: LIMITS.joinCatchUpTimeoutMs, storeOptions: { snapshots } }),
    );
    const { store } = started;
    store.onReloaded((view, skippedFromSeq) =>
      logger.warn({ skippedFromSeq, seq: view.seq }, 'fell behind the purged metadata log: reloaded the view from the newest snapshot'),
    );
    const liveness = await step('start the liveness tracker', () => LivenessTracker.start(nc, { replicas: config.metaReplicas }));
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
    new Counter({
      name: 'mink_object_store_retries_total',
      help: 'Object store requests made again after a transient failure (5xx, a broken or timed-out connection), by S3 operation',
      labelNames: ['operation'],
      registers: [registry],
      collect() {
        // The store counts; each scrape reports its counts as they are. The operations are the store's own
        // names (a handful), never a caller's string.
        this.reset();
        for (const [operation, count] of member.objectStore.retries) this.labels(operation).inc(count);
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

/**
 * Streams and buckets are created with MINK_META_REPLICAS replicas but never changed afterwards: a cluster
 * started with one replica keeps one after a restart with more (or the other way round). Said once at join,
 * so an operator sees why a server failure still stalls the metadata log.
 */
function warnAboutReplicas(logger: Logger, wanted: number, resources: MetaResource[]): void {
  const differing = resources.filter((resource) => resource.replicas !== wanted);
  if (differing.length === 0) return;
  logger.warn(
    { wanted, found: Object.fromEntries(differing.map((resource) => [resource.name, resource.replicas])) },
    'MINK_META_REPLICAS differs from the replicas of existing JetStream streams, which are left as they are',
  );
}

/**
 * Runs one step of joining, again after a pause while it fails for a reason that passes (a NATS request that
 * timed out or found no responder: a JetStream cluster still electing its leaders), until `deadlineMs`.
 */
function retryingTransientFailures(logger: Logger, deadlineMs: number) {
  return async <T>(what: string, run: () => Promise<T>): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await run();
      } catch (error) {
        if (!isTransientFailure(error) || Date.now() >= deadlineMs) throw error;
        logger.warn({ err: error, attempt }, `could not ${what} yet; trying again`);
        await sleep(Math.min(LIMITS.joinRetryMaxMs, LIMITS.joinRetryInitialMs * attempt));
      }
    }
  };
}

function isTransientFailure(error: unknown): boolean {
  if (error instanceof MinkError) return error.code === 'Unavailable' || error.code === 'Timeout';
  return error instanceof NatsError && (error.code === ErrorCode.Timeout || error.code === ErrorCode.NoResponders);
}
