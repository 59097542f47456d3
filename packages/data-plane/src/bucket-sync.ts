import { performance } from 'node:perf_hooks';
import { LIMITS } from '@mink/config';
import { bucketShardOf, getIn, isStreamOpenBy, type BucketRecord, type StreamCloseOutcome, type StreamOpenOutcome, type StreamToClose, type StreamToOpen } from '@mink/meta';
import { Batcher, rejectionError } from '@mink/metalog';
import { bucketsToSync, bucketsTouchedBy, decideSync, type SyncDecision } from '@mink/ownership';
import { MinkError, SUBJECTS, UnavailableError, type BucketServingState, type ReleadBucketsResult } from '@mink/protocol';
import { requestJson } from '@mink/transport';
import type { ClusterMember, Logger, ServiceState } from '@mink/runtime';
import { Counter, Gauge } from 'prom-client';
import { BucketEventsLog } from './bucket-events-log';

/** Metrics of the sync task, created once per process and shared by its incarnations. */
export class BucketSyncMetrics {
  readonly openGauge: Gauge;
  readonly actions: Counter;

  constructor(state: ServiceState) {
    this.openGauge = new Gauge({ name: 'mink_buckets_open', help: 'Buckets this node serves', registers: [state.registry] });
    this.actions = new Counter({ name: 'mink_sync_actions_total', help: 'Sync actions by kind', labelNames: ['action'], registers: [state.registry] });
  }
}

/**
 * What a bucket needs besides its stream when it opens and closes here. Primary-key buckets restore their
 * KV tablet before they serve and snapshot it when they close cleanly (see PkBuckets); log buckets need
 * nothing, which is what NO_LIFECYCLE does.
 */
export interface BucketLifecycle {
  /** After the stream opened here at `streamEpoch` and before the bucket serves; may take a while. */
  opened(bucketId: string, record: BucketRecord, streamEpoch: number): Promise<void>;
  /** Whether the bucket, whose stream the view shows open here at `streamEpoch`, can serve now. */
  isReady(bucketId: string, streamEpoch: number): boolean;
  /** Before a clean close of the stream (its last chance to write). */
  closing(bucketId: string): Promise<void>;
  /** The bucket stopped being served here without a clean close (moved, dropped, fenced). */
  released(bucketId: string): void;
}

export const NO_LIFECYCLE: BucketLifecycle = {
  opened: async () => undefined,
  isReady: () => true,
  closing: async () => undefined,
  released: () => undefined,
};

interface LocalBucket {
  state: BucketServingState;
  streamEpoch: number;
}

/** One bucket a restarted node asks the coordinator to re-lead to it. */
interface ReleadRequest {
  tableId: number;
  partition: string | null;
  bucket: number;
  expectedLeaderEpoch: number;
}

/**
 * The sync task of a data node (docs/ownership.md §3 ("Opening a bucket")). After changes of the view it asks
 * the pure `decideSync` what to do with each bucket the applied entries touched, and carries that out. At most
 * one action per bucket runs at a time. What no log entry shows is decided again every
 * `LIMITS.syncIntervalMs`: a bucket held by another node (HeldBy: "Retry on the next sync", until that node
 * is seen dead and the bucket is taken over) and a bucket whose action failed, from the view as it is then.
 * Every `LIMITS.syncFullRoundIntervalMs` a full round looks at every bucket this node leads or holds.
 *
 * Rounds cost a pass over the buckets of the view, so changes do not each start one: a change asks for a
 * round, and the rounds asked for during a burst of entries run as one, at most one per
 * `LIMITS.syncRoundSpacingMs`. Opens and re-leads asked for in one round travel together: one OpenStreams
 * entry for all the streams to open, one request to the coordinator for all the re-leads.
 */
export class BucketSync {
  private readonly local = new Map<string, LocalBucket>();
  private readonly inFlight = new Set<string>();
  /** Buckets this incarnation took over from a dead one and has not opened yet. */
  private readonly takenOver = new Set<string>();
  private onOpenedAfterTakeover: (bucketId: string) => void = () => undefined;
  private timer: NodeJS.Timeout | null = null;
  private fullRoundTimer: NodeJS.Timeout | null = null;
  /** Buckets to decide again on the next periodic round: held by another node, or their last action failed. */
  private readonly retry = new Set<string>();
  private unsubscribe: (() => void) | null = null;
  private unsubscribeReloaded: (() => void) | null = null;
  private stopped = false;
  private roundScheduled = false;
  /** What the next round looks at: every bucket, or only those touched by entries applied since the last round. */
  private pending: Set<string> | 'all' = 'all';
  private lastRoundStartedAtMs = Number.NEGATIVE_INFINITY;
  private readonly opener: Batcher<StreamToOpen, StreamOpenOutcome>;
  private readonly releader: Batcher<ReleadRequest, { ok: boolean }>;
  private readonly closer: Batcher<StreamToClose, StreamCloseOutcome>;
  /** RegisterNode fences of dead incarnations in flight, by `node@epoch`: one entry fences all their buckets. */
  private readonly fencing = new Map<string, Promise<void>>();
  private readonly openGauge: Gauge;
  private readonly actions: Counter;
  /** The buckets opened and closed here, logged a line per second rather than a line each. */
  private readonly events: BucketEventsLog;

  constructor(
    private readonly member: ClusterMember,
    private readonly self: { nodeId: string; nodeEpoch: number },
    private readonly logger: Logger,
    metrics: BucketSyncMetrics,
    private readonly lifecycle: BucketLifecycle = NO_LIFECYCLE,
  ) {
    this.openGauge = metrics.openGauge;
    this.actions = metrics.actions;
    this.events = new BucketEventsLog(logger, LIMITS.bucketEventsLogIntervalMs);
    // A burst (a node taking over or giving up thousands of buckets) is cut into entries by shard of the bucket map.
    this.opener = new Batcher<StreamToOpen, StreamOpenOutcome>((streams) => this.openStreams(streams), LIMITS.openStreamsPerCommandMax, 1, bucketShardOf);
    this.releader = new Batcher<ReleadRequest, { ok: boolean }>((buckets) => this.requestReleads(buckets), LIMITS.leadBucketsPerCommandMax, 1, bucketShardOf);
    this.closer = new Batcher<StreamToClose, StreamCloseOutcome>((streams) => this.closeStreams(streams), LIMITS.closeStreamsPerCommandMax, 1, bucketShardOf);
  }

  start(): void {
    this.unsubscribe = this.member.store.onApplied((_view, _seq, command, outcome) => this.requestRound(bucketsTouchedBy(command, outcome)));
    this.unsubscribeReloaded = this.member.store.onReloaded(() => this.requestRound('all'));
    // What no log entry shows (a node that stopped heartbeating holds a bucket; an action failed) is decided
    // again on the short period; every bucket on the long one.
    this.timer = setInterval(() => {
      if (this.retry.size > 0) this.requestRound([...this.retry]);
      this.openGauge.set(this.openCount());
    }, LIMITS.syncIntervalMs);
    this.fullRoundTimer = setInterval(() => this.requestRound('all'), LIMITS.syncFullRoundIntervalMs);
    this.round();
  }

  /**
   * Runs a round over `touched` (merged with what earlier requests asked for) soon: after the current
   * turn, and no sooner than `syncRoundSpacingMs` after the last one.
   */
  private requestRound(touched: readonly string[] | 'all' | 'none'): void {
    if (this.stopped || touched === 'none') return;
    if (touched === 'all') this.pending = 'all';
    else if (this.pending !== 'all') for (const bucketId of touched) this.pending.add(bucketId);
    if (this.roundScheduled) return;
    this.roundScheduled = true;
    const run = (): void => {
      this.roundScheduled = false;
      this.round();
    };
    const waitMs = this.lastRoundStartedAtMs + LIMITS.syncRoundSpacingMs - performance.now();
    if (waitMs > 0) setTimeout(run, waitMs);
    else setImmediate(run);
  }

  /** Called once a bucket taken over from a dead incarnation is open here (to replay that node's WAL). */
  whenOpenedAfterTakeover(listener: (bucketId: string) => void): void {
    this.onOpenedAfterTakeover = listener;
  }

  /** The ids of the buckets this node holds, by the state it holds each in (what GET /v1/cluster shows for them). */
  localBuckets(): Record<BucketServingState, string[]> {
    const byState: Record<BucketServingState, string[]> = { open: [], opening: [], unavailable: [] };
    for (const [bucketId, bucket] of this.local) byState[bucket.state].push(bucketId);
    return byState;
  }

  /** Whether a request for the bucket can be served now (used by the data path). */
  isOpen(bucketId: string): boolean {
    return this.local.get(bucketId)?.state === 'open';
  }

  /** The stream epoch this node opened the bucket at; appends are tagged with it (the fence). */
  streamEpochOf(bucketId: string): number {
    const bucket = this.local.get(bucketId);
    if (!bucket || bucket.state !== 'open') throw new UnavailableError(`bucket ${bucketId} is not open on this node`);
    return bucket.streamEpoch;
  }

  private round(): void {
    if (this.stopped) return;
    this.lastRoundStartedAtMs = performance.now();
    const view = this.member.view;
    const pending = this.pending;
    this.pending = new Set();
    // A full round looks at every bucket this node leads or holds; a partial one at the touched buckets,
    // which decideSync answers `none` for when they are not ours.
    const ids = pending === 'all' ? new Set([...bucketsToSync(view, this.self), ...this.local.keys()]) : pending;
    const live = this.member.liveNodes();
    for (const bucketId of ids) {
      if (this.inFlight.has(bucketId)) continue;
      let decision: SyncDecision;
      try {
        decision = decideSync(view, this.self, live, bucketId);
      } catch (error) {
        // A broken invariant in the view: nothing sane can be done with this process.
        this.logger.fatal({ err: error, bucketId }, 'sync decision hit a broken invariant');
        throw error;
      }
      const record = getIn(view.buckets, bucketId);
      // HeldBy waits on the other node's liveness, which no entry shows: decided again on the next periodic round.
      if (decision.action === 'heldBy') this.retry.add(bucketId);
      else this.retry.delete(bucketId);
      if (decision.action === 'serve' && record && !this.isOpen(bucketId) && !this.lifecycle.isReady(bucketId, record.stream.epoch)) {
        // Open in the view but not ready here (its restore failed, say): prepare it again before serving.
        this.inFlight.add(bucketId);
        void this.prepare(bucketId, record, record.stream.epoch)
          .catch((error) => {
            this.retry.add(bucketId);
            this.logger.warn({ err: error, bucketId }, 'could not prepare an open bucket; retrying on the next round');
          })
          .finally(() => this.inFlight.delete(bucketId));
        continue;
      }
      if (decision.action === 'serve' || decision.action === 'none') {
        this.settle(bucketId, decision.action, record);
        continue;
      }
      this.inFlight.add(bucketId);
      void this.carryOut(bucketId, decision, record).then(
        () => {
          this.inFlight.delete(bucketId);
          // Entries about this bucket that applied meanwhile found it busy; decide again now. A node that
          // holds it (heldBy) is waited for on the periodic round instead of in a tight loop.
          if (decision.action !== 'heldBy') this.requestRound([bucketId]);
        },
        (error) => {
          this.inFlight.delete(bucketId);
          this.retry.add(bucketId);
          this.logger.warn({ err: error, bucketId, decision }, 'sync action failed; retrying on the next round');
        },
      );
    }
    if (pending === 'all') this.openGauge.set(this.openCount());
  }

  private openCount(): number {
    let open = 0;
    for (const bucket of this.local.values()) if (bucket.state === 'open') open += 1;
    return open;
  }

  private settle(bucketId: string, action: 'serve' | 'none', record: BucketRecord | undefined): void {
    if (action === 'none') {
      if (this.local.delete(bucketId)) this.lifecycle.released(bucketId);
      return;
    }
    const current = this.local.get(bucketId);
    if (record && (!current || current.state !== 'open')) this.local.set(bucketId, { state: 'open', streamEpoch: record.stream.epoch });
  }

  private async carryOut(bucketId: string, decision: SyncDecision, record: BucketRecord | undefined): Promise<void> {
    this.actions.inc({ action: decision.action });
    const store = this.member.store;
    switch (decision.action) {
      case 'drop':
        this.local.delete(bucketId);
        this.lifecycle.released(bucketId);
        return;
      case 'heldBy':
        this.markOpening(bucketId);
        return;
      case 'open': {
        this.markOpening(bucketId);
        const opened = await this.opener.submit({ tableId: record!.tableId, partition: record!.partition, bucket: record!.bucket, leaderEpoch: decision.leaderEpoch });
        if (!opened.ok) throw rejectionError(opened.rejection);
        await this.prepare(bucketId, record!, opened.streamEpoch);
        this.events.note('opened', { table: record!.table, partition: record!.partition, bucket: record!.bucket, epoch: decision.leaderEpoch });
        return;
      }
      case 'relead': {
        // This node restarted: ask the coordinator for a fresh leader epoch, so the new open fences
        // anything the previous incarnation may still have in flight.
        this.markOpening(bucketId);
        await this.releader.submit({ tableId: record!.tableId, partition: record!.partition, bucket: record!.bucket, expectedLeaderEpoch: decision.leaderEpoch });
        return;
      }
      case 'takeOver': {
        this.markOpening(bucketId);
        if (decision.registerFirst) {
          // Fence the dead incarnation: its node epoch moves on, so nothing it still sends can commit.
          await this.fence(decision.node, decision.nodeEpoch);
        }
        // The dead node's committed WAL slices stay readable where they are; once the bucket is open
        // here they are replayed into stream objects (see whenOpenedAfterTakeover).
        await this.close(record!, decision.streamEpoch);
        this.takenOver.add(bucketId);
        this.events.note('taken over', {
          table: record!.table,
          partition: record!.partition,
          bucket: record!.bucket,
          epoch: decision.streamEpoch,
          from: { node: decision.node, nodeEpoch: decision.nodeEpoch },
        });
        return;
      }
      case 'close':
        await this.closeStream(bucketId, record!, decision.streamEpoch);
        return;
      default:
        return;
    }
  }

  /** docs/ownership.md §3 ("Opening a bucket"): the stream is open here; the bucket serves once its lifecycle is ready. */
  private async prepare(bucketId: string, record: BucketRecord, streamEpoch: number): Promise<void> {
    this.markOpening(bucketId);
    await this.lifecycle.opened(bucketId, record, streamEpoch);
    if (this.stopped) return;
    this.local.set(bucketId, { state: 'open', streamEpoch });
    if (this.takenOver.delete(bucketId)) this.onOpenedAfterTakeover(bucketId);
  }

  private markOpening(bucketId: string): void {
    const current = this.local.get(bucketId);
    if (!current || current.state !== 'open') this.local.set(bucketId, { state: 'opening', streamEpoch: current?.streamEpoch ?? 0 });
  }

  private async closeStream(bucketId: string, record: BucketRecord, streamEpoch: number): Promise<void> {
    this.local.set(bucketId, { state: 'unavailable', streamEpoch });
    await this.lifecycle.closing(bucketId);
    await this.close(record, streamEpoch);
    this.local.delete(bucketId);
    this.events.note('closed', { table: record.table, partition: record.partition, bucket: record.bucket, epoch: streamEpoch });
  }

  /**
   * One OpenStreams entry for every stream this round opens. Once appended, the entry applies when the view
   * gets there, so the wait is long: giving up early would only make the next round propose it again.
   */
  private async openStreams(streams: StreamToOpen[]): Promise<StreamOpenOutcome[]> {
    const outcome = await this.member.store.proposeOrThrow(
      { type: 'OpenStreams', nodeId: this.self.nodeId, nodeEpoch: this.self.nodeEpoch, streams },
      { timeoutMs: LIMITS.syncProposeTimeoutMs },
    );
    return outcome.opened!;
  }

  /** Closes one stream through the batcher (one CloseStreams entry per turn); a refusal is thrown as its typed error. */
  private async close(record: BucketRecord, streamEpoch: number): Promise<void> {
    const closed = await this.closer.submit({ tableId: record.tableId, partition: record.partition, bucket: record.bucket, streamEpoch });
    if (!closed.ok) throw rejectionError(closed.rejection);
  }

  private async closeStreams(streams: StreamToClose[]): Promise<StreamCloseOutcome[]> {
    const outcome = await this.member.store.proposeOrThrow(
      { type: 'CloseStreams', nodeId: this.self.nodeId, nodeEpoch: this.self.nodeEpoch, streams },
      { timeoutMs: LIMITS.syncProposeTimeoutMs },
    );
    return outcome.closed!;
  }

  /** One RegisterNode at `nodeEpoch` + 1 for a dead incarnation, shared by every bucket taken over from it. */
  private fence(node: string, nodeEpoch: number): Promise<void> {
    const key = `${node}@${nodeEpoch}`;
    let fencing = this.fencing.get(key);
    if (!fencing) {
      fencing = this.proposeIgnoringFence({ type: 'RegisterNode', nodeId: node, expectedEpoch: nodeEpoch }).finally(() => this.fencing.delete(key));
      this.fencing.set(key, fencing);
    }
    return fencing;
  }

  /** One request to the coordinator for every bucket this round must get a fresh leader epoch for. */
  private async requestReleads(buckets: ReleadRequest[]): Promise<{ ok: boolean }[]> {
    const result = await requestJson<ReleadBucketsResult>(
      this.member.nc,
      SUBJECTS.coordinatorRpc,
      { op: 'releadBuckets', to: this.self.nodeId, buckets },
      LIMITS.syncProposeTimeoutMs,
    );
    return result.led.map((led) => ({ ok: led.ok }));
  }

  /** A RegisterNode that lost the race to another taker (epoch already bumped) is fine: the fence holds. */
  private async proposeIgnoringFence(command: Parameters<ClusterMember['store']['propose']>[0]): Promise<void> {
    try {
      await this.member.store.proposeOrThrow(command);
    } catch (error) {
      if (!(error instanceof MinkError && error.code === 'Fenced')) throw error;
    }
  }

  /** Stops deciding, without touching the streams (an incarnation that was fenced owns nothing). */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.fullRoundTimer) clearInterval(this.fullRoundTimer);
    this.unsubscribe?.();
    this.unsubscribeReloaded?.();
    for (const bucketId of this.local.keys()) this.lifecycle.released(bucketId);
    this.local.clear();
    this.events.flush();
  }

  /** Clean shutdown: close every open stream so the next leader can open at once. */
  async stopAndCloseAll(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.fullRoundTimer) clearInterval(this.fullRoundTimer);
    this.unsubscribe?.();
    this.unsubscribeReloaded?.();
    const view = this.member.view;
    await Promise.all(
      [...this.local.keys()].map(async (bucketId) => {
        const record = getIn(view.buckets, bucketId);
        if (!record || !isStreamOpenBy(record.stream, this.self)) return;
        await this.closeStream(bucketId, record, record.stream.epoch).catch((error) => this.logger.warn({ err: error, bucketId }, 'could not close bucket'));
      }),
    );
    this.events.flush();
  }
}
