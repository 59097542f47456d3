import type { LakeReads } from './lake-reads';
import type { ServiceConfig } from '@mink/config';
import { ownRecord } from '@mink/meta';
import type { Heartbeater } from '@mink/metalog';
import { SUBJECTS, UnavailableError, type KafkaGroupsAnswer, type KafkaGroupsRequest, type TransactionOffsetsRequest } from '@mink/protocol';
import type { ClusterMember, Logger } from '@mink/runtime';
import { LIMITS } from '@mink/config';
import { Compactor, WalWriter, type ObjectStore, type StreamReader, type WalPoint } from '@mink/s3stream';
import { BucketSync, type BucketSyncMetrics } from './bucket-sync';
import { CommitWaiters } from './commit-waiters';
import { DataPlane } from './data-plane';
import type { DataNodeMetrics } from './node-metrics';
import { NodeRequestHandler } from './node-request-handler';
import { PkBuckets } from './pk-buckets';
import { ReadFence } from './read-fence';
import type { TabletStorage } from './tablet-storage';

/** What an incarnation needs from the process that hosts it; shared by all its incarnations. */
export interface IncarnationContext {
  member: ClusterMember;
  config: ServiceConfig;
  logger: Logger;
  heartbeater: Heartbeater;
  objectStore: ObjectStore;
  /** The union read's lake side, shared by the incarnations of the process (its caches outlive them). */
  lakeReads?: LakeReads;
  reader: StreamReader;
  metrics: BucketSyncMetrics;
  /** The data path's metrics (requests, WAL, compaction, PK restores); none in tests that do not read them. */
  nodeMetrics?: DataNodeMetrics;
  httpPort: number;
  /** Local folder for the KV tablets of PK buckets (a cache of object storage; emptied at process start). */
  tabletsDir: string;
  /** Where PK tablets live and how their snapshots move (LMDB in `tabletsDir` when absent). */
  tablets?: TabletStorage;
  /** A fault test's crash point in the WAL (`crashHookOf`), shared by the incarnations of the process; absent in production. */
  walReached?: (point: WalPoint) => void;
  /** The process's Kafka transaction coordinator, for offsets handed over by another node's group coordinator. */
  transactionOffsets?: (request: TransactionOffsetsRequest) => Promise<{ errorCode: number }>;
  /** The process's Kafka group coordinator, for the groups it coordinates (GET /v1/kafka/groups). */
  kafkaGroups?: (request: KafkaGroupsRequest) => Promise<KafkaGroupsAnswer>;
}

/**
 * One incarnation of a data node: the node epoch it registered and everything that acts under that
 * epoch (sync task, WAL writer, data path). When the view shows the node's epoch moved on — another node
 * took over while this one was paused or cut off — the incarnation is fenced: it owns nothing any more,
 * so it stops without closing anything, and the process registers a fresh incarnation that re-syncs from
 * the view (docs/ownership.md §4.5 ("If the dead node comes back")).
 */
export class Incarnation {
  private constructor(
    readonly nodeEpoch: number,
    private readonly sync: BucketSync,
    private readonly wal: WalWriter,
    private readonly compactor: Compactor,
    private readonly pk: PkBuckets,
    private readonly handler: NodeRequestHandler,
    /** The data path of this incarnation; the Kafka listener serves through it. */
    readonly data: DataPlane,
    private readonly metrics?: DataNodeMetrics,
  ) {}

  static async begin(context: IncarnationContext): Promise<Incarnation> {
    const { member, config, logger } = context;
    const registered = await member.store.proposeOrThrow({
      type: 'RegisterNode',
      nodeId: config.nodeId,
      address: SUBJECTS.nodeAddress(config.nodeId),
      kafka: `${config.advertisedHost}:${config.kafkaPort}`,
      http: `${config.advertisedHost}:${context.httpPort}`,
    });
    const nodeEpoch = registered.epoch!;
    const self = { nodeId: config.nodeId, nodeEpoch };
    logger.info({ nodeEpoch }, 'registered node incarnation');
    await context.heartbeater.setEpoch(nodeEpoch);
    const commits = new CommitWaiters();
    const wal = new WalWriter({
      nodeId: config.nodeId,
      nodeEpoch,
      store: context.objectStore,
      meta: member.store,
      uploadsInFlight: config.walUploadsInFlight,
      onCommitted: (bucketId, slice, payload) => {
        context.reader.cache(bucketId, slice, payload);
        commits.notify(bucketId);
      },
      ...(context.nodeMetrics ? { observer: context.nodeMetrics.wal } : {}),
      ...(context.walReached ? { reached: context.walReached } : {}),
    });
    context.nodeMetrics?.readQueuedBytesFrom(() => wal.queuedByteCount);
    const pk = new PkBuckets({
      nodeId: config.nodeId,
      nodeEpoch,
      meta: member.store,
      objectStore: context.objectStore,
      wal,
      reader: context.reader,
      logger,
      nowMs: Date.now,
      tabletsDir: context.tabletsDir,
      snapshotIntervalMs: config.kvSnapshotIntervalMs,
      ...(context.nodeMetrics ? { observer: context.nodeMetrics.pk } : {}),
      ...(context.tablets ? { tablets: context.tablets } : {}),
    });
    const sync = new BucketSync(member, self, logger, context.metrics, pk);
    const readFence = new ReadFence(
      config.nodeId,
      () => context.heartbeater.leaseHeldSinceMs(),
      () => member.store.catchUp(LIMITS.proposeTimeoutMs),
      (error) => logger.warn({ err: error }, 'could not catch up with the metadata log for reads; retrying on the next read'),
    );
    void readFence.startCatchUp();
    const data = new DataPlane(member, self, sync, wal, context.reader, pk, readFence, commits, Date.now, context.lakeReads ?? null);
    // Background compaction of this incarnation's streams: WAL slices become per-stream objects.
    const compactor = new Compactor({
      nodeId: config.nodeId,
      nodeEpoch,
      store: context.objectStore,
      meta: member.store,
      isLeading: (bucketId) => (sync.isOpen(bucketId) ? { streamEpoch: sync.streamEpochOf(bucketId) } : null),
      clock: { nowMs: () => Date.now() },
      cachedPayloadOf: (bucketId, slice) => context.reader.cachedPayload(bucketId, slice),
      onMoved: (bucketId, moved) => context.reader.moveCached(bucketId, moved),
      logger,
      ...(context.nodeMetrics ? { onCompacted: (bytes: number) => context.nodeMetrics!.compacted(bytes) } : {}),
    });
    const handler = new NodeRequestHandler(config.nodeId, nodeEpoch, sync, data, context.transactionOffsets, context.kafkaGroups);
    const incarnation = new Incarnation(nodeEpoch, sync, wal, compactor, pk, handler, data, context.nodeMetrics);
    // docs/ownership.md §4 ("Failover") step 3: replay the dead node's WAL slices of a taken-over stream into stream objects.
    sync.whenOpenedAfterTakeover((bucketId) => {
      void compactor
        .compactStream(bucketId)
        .then((objects) => logger.info({ bucketId, objects }, 'replayed the WAL of a taken-over stream into stream objects'))
        .catch((error) => logger.warn({ err: error, bucketId }, 'could not replay the WAL of a taken-over stream'));
    });
    sync.start();
    compactor.start(LIMITS.compactionIntervalMs);
    pk.start();
    return incarnation;
  }

  handle(body: unknown): Promise<unknown> {
    return this.metrics ? this.metrics.track(body, () => this.handler.handle(body)) : this.handler.handle(body);
  }

  /** True when the view has registered a newer incarnation of this node than this one. */
  isFenced(member: ClusterMember, nodeId: string): boolean {
    const node = ownRecord(member.view.nodes, nodeId);
    return node !== undefined && node.epoch > this.nodeEpoch;
  }

  /** Fenced: stop acting; appends still queued fail, and commits in flight are refused by the log. */
  async abandon(): Promise<void> {
    await this.compactor.stop();
    this.sync.stop();
    await this.pk.stop();
    await this.wal.close().catch(() => undefined);
  }

  /** Clean shutdown: flush what is queued, then close every open stream so it moves at once. */
  async retire(): Promise<void> {
    await this.compactor.stop();
    await this.wal.close().catch(() => undefined);
    await this.sync.stopAndCloseAll();
    await this.pk.stop();
  }
}

/** Requests that arrive while no incarnation is registered (start-up, re-registration). */
export function notRegistered(nodeId: string): never {
  throw new UnavailableError(`data node ${nodeId} is registering a new incarnation`);
}
