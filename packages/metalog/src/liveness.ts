import { performance } from 'node:perf_hooks';
import { ErrorCode, NatsError, type KV, type KvEntry, type NatsConnection, type QueuedIterator } from 'nats';
import { LIMITS, NODE_ID_PATTERN } from '@mink/config';
import { UnavailableError } from '@mink/protocol';
import { ownRecord, type View } from '@mink/meta';
import { openLatestValueBucket, translateNatsError, type BucketCreationOptions } from './nats-errors';
import { connectionWatch } from './nats-connection';
import { ServerClock } from './server-clock';

/** The KV bucket that holds one heartbeat key per process. */
export const HEARTBEAT_BUCKET = 'mink_heartbeats';

/** Key written by clock probes; heartbeat keys live under `hb.` so watchers never see it. */
const CLOCK_PROBE_KEY = 'clock';
const HEARTBEAT_KEY_PREFIX = 'hb';

export const HEARTBEAT_ROLES = ['data-node', 'coordinator', 'gateway', 'tiering-worker'] as const;
export type HeartbeatRole = (typeof HEARTBEAT_ROLES)[number];

/** What a heartbeat says: who is alive, in which role, at which incarnation (node epoch). */
export interface HeartbeatValue {
  nodeId: string;
  role: HeartbeatRole;
  epoch: number;
  /** The sequence of the last metadata log entry the process had applied when it wrote the beat, if it tells. */
  appliedSeq?: number;
}

/** A heartbeat as last seen in the bucket, with the time the NATS server stamped on it. */
export interface Heartbeat extends HeartbeatValue {
  revision: number;
  /** Server wall clock (epoch ms) when the entry was written. */
  createdAtMs: number;
  /** Local monotonic time when a beat of this key first showed its current `appliedSeq` (when the process last made progress). */
  progressSeenAtMs: number;
}

/** How far a live data node has applied the metadata log, and since when it has been at that entry. */
export interface MemberProgress {
  nodeId: string;
  appliedSeq: number;
  /** Local monotonic time since which its heartbeats have shown `appliedSeq`. */
  sinceMs: number;
}

/**
 * Whether a data node whose fresh heartbeat carries `heartbeatEpoch` is joining, as a coordinator whose view
 * has the node at `viewEpoch` (undefined: not registered in that view) sees it: epoch 0, it is up and
 * catching up with the log before its first registration; an epoch above the view's, it has registered and
 * the reader's view has not applied that yet (a lease holder's paced tail can be seconds behind). Either way
 * it is alive, and neither `liveNodes` (which wants the view's epoch) nor a dead node's buckets describe it.
 */
export function isJoiningHeartbeat(heartbeatEpoch: number, viewEpoch: number | undefined): boolean {
  return heartbeatEpoch === 0 || heartbeatEpoch > (viewEpoch ?? 0);
}

export function heartbeatKey(role: HeartbeatRole, nodeId: string): string {
  if (!NODE_ID_PATTERN.test(nodeId)) throw new Error(`node id '${nodeId}' must match ${NODE_ID_PATTERN}`);
  return `${HEARTBEAT_KEY_PREFIX}.${role}.${nodeId}`;
}

/** Opens (creating if needed) the heartbeat bucket; only the latest heartbeat of each key is kept. */
export function openHeartbeatBucket(connection: NatsConnection, bucket: string = HEARTBEAT_BUCKET, options: BucketCreationOptions = {}): Promise<KV> {
  return openLatestValueBucket(connection, bucket, options);
}

/** Deletes a heartbeat key: a clean leave, so the process stops counting as live at once, not after lease_ttl. */
export async function leave(kv: KV, role: HeartbeatRole, nodeId: string): Promise<void> {
  try {
    await kv.delete(heartbeatKey(role, nodeId));
  } catch (error) {
    throw translateNatsError(error, `delete the heartbeat of ${role} ${nodeId}`);
  }
}

/**
 * Refreshes one process's heartbeat key every `intervalMs` (lease_ttl / `LIMITS.heartbeatsPerLeaseTtl`
 * in production). A failed refresh is reported to `onError` and retried at the next interval; one missed
 * beat does not make the process dead because several beats fit in a lease_ttl.
 */
export class Heartbeater {
  private identity: HeartbeatValue | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** The write in flight, if any; writes are chained so the last one written carries the latest epoch. */
  private pendingBeat: Promise<void> | null = null;
  /** When (monotonic ms) the last successful write was sent; null before the first. */
  private lastRenewalSentAtMs: number | null = null;
  /** When the first write of the current unbroken chain of renewals was sent (see leaseHeldSinceMs). */
  private chainStartSentAtMs: number | null = null;
  /** Renewals further apart than this break the chain; set by trackLease, Infinity until then. */
  private leaseWindowMs = Number.POSITIVE_INFINITY;
  private intervalMs = 0;
  /** When (monotonic ms) the last periodic beat was due to start; null before the first. */
  private lastTickAtMs: number | null = null;
  private longestTickDelayMs = 0;
  private appliedSeq: () => number | undefined = () => undefined;

  constructor(
    private readonly kv: KV,
    private readonly onError: (error: Error) => void = () => undefined,
    private readonly monotonicMs: () => number = () => performance.now(),
  ) {}

  static async create(connection: NatsConnection, options: BucketCreationOptions & { bucket?: string; onError?: (error: Error) => void } = {}): Promise<Heartbeater> {
    const heartbeater = new Heartbeater(await openHeartbeatBucket(connection, options.bucket, options), options.onError);
    // A beat at once after a reconnect, not at the next interval: the outage may already have aged the last
    // one close to lease_ttl, and a beat in flight when the connection dropped failed (see failRequestsFastAcrossReconnects).
    heartbeater.stopBeatingOnReconnect = connectionWatch(connection)?.onReconnect(() => heartbeater.beatAfterReconnect()) ?? (() => undefined);
    return heartbeater;
  }

  private stopBeatingOnReconnect: () => void = () => undefined;

  private beatAfterReconnect(): void {
    if (!this.identity || !this.timer || this.pendingBeat) return;
    this.beat().catch((error: unknown) => this.onError(error instanceof Error ? error : new Error(String(error))));
  }

  /** Every beat from now on tells how far this process has applied the metadata log (the purge margin and admission read it). */
  reportAppliedSeq(appliedSeq: () => number): void {
    this.appliedSeq = appliedSeq;
  }

  /**
   * The longest delay, since the last call, of a periodic beat past its schedule: how long the event loop
   * kept the beat from starting (a long synchronous apply, say). Resets to 0.
   */
  takeLongestDelayMs(): number {
    const longest = this.longestTickDelayMs;
    this.longestTickDelayMs = 0;
    return longest;
  }

  /** Writes the first heartbeat (awaited, so the caller is live when this resolves) and keeps refreshing it. */
  async start(nodeId: string, role: HeartbeatRole, epoch: number, intervalMs: number): Promise<void> {
    if (this.identity) throw new Error('a heartbeater is started once');
    heartbeatKey(role, nodeId);
    this.identity = { nodeId, role, epoch };
    this.intervalMs = intervalMs;
    await this.beat();
    this.lastTickAtMs = this.monotonicMs();
    this.timer = setInterval(() => {
      const nowMs = this.monotonicMs();
      if (this.lastTickAtMs !== null) this.longestTickDelayMs = Math.max(this.longestTickDelayMs, nowMs - this.lastTickAtMs - this.intervalMs);
      this.lastTickAtMs = nowMs;
      // A periodic beat is skipped while one is in flight: a slow server must not pile writes up.
      if (this.pendingBeat) return;
      this.beat().catch((error: unknown) => this.onError(error instanceof Error ? error : new Error(String(error))));
    }, intervalMs);
  }

  /** Announces a new incarnation (after RegisterNode) at once rather than at the next interval. */
  async setEpoch(epoch: number): Promise<void> {
    if (!this.identity) throw new Error('setEpoch before start');
    this.identity = { ...this.identity, epoch };
    await this.beat();
  }

  /** Writes the heartbeat now, after any write in flight, so it carries the identity as it is at this call. */
  async beat(): Promise<void> {
    const previous = this.pendingBeat ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(() => this.write());
    this.pendingBeat = next;
    try {
      await next;
    } finally {
      if (this.pendingBeat === next) this.pendingBeat = null;
    }
  }

  private async write(): Promise<void> {
    const identity = this.identity;
    if (!identity) return;
    const sentAtMs = this.monotonicMs();
    const appliedSeq = this.appliedSeq();
    const value: HeartbeatValue = appliedSeq === undefined ? identity : { ...identity, appliedSeq };
    try {
      await this.kv.put(heartbeatKey(identity.role, identity.nodeId), new TextEncoder().encode(JSON.stringify(value)));
      this.recordRenewal(sentAtMs);
    } catch (error) {
      throw translateNatsError(error, `heartbeat of ${identity.role} ${identity.nodeId}`);
    }
  }

  /** Sets the window of the lease this process reads under: renewals further apart break its chain. */
  trackLease(windowMs: number): void {
    if (!(windowMs > 0)) throw new Error(`a lease window must be positive, not ${windowMs}`);
    this.leaseWindowMs = windowMs;
  }

  /**
   * While the lease holds (a renewal sent within the window was stored), the send time of the first
   * renewal of the unbroken chain it belongs to: every two consecutive stored renewals since were sent less
   * than the window apart, so nobody can have judged this process dead since then. Null when the lease
   * does not hold. A reader that caught up with the metadata log after this time has seen every takeover
   * of its buckets (see ReadFence in the data node).
   */
  leaseHeldSinceMs(): number | null {
    if (this.lastRenewalSentAtMs === null || this.chainStartSentAtMs === null) return null;
    return this.monotonicMs() - this.lastRenewalSentAtMs < this.leaseWindowMs ? this.chainStartSentAtMs : null;
  }

  private recordRenewal(sentAtMs: number): void {
    const last = this.lastRenewalSentAtMs;
    // Writes are chained, so renewals are recorded in send order; a gap as long as the window breaks the chain.
    if (last === null || sentAtMs - last >= this.leaseWindowMs) this.chainStartSentAtMs = sentAtMs;
    this.lastRenewalSentAtMs = Math.max(last ?? sentAtMs, sentAtMs);
  }

  /** Stops refreshing but leaves the key to age out: what a crash or a pause looks like to the others. */
  halt(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.stopBeatingOnReconnect();
  }

  /** Stops refreshing and deletes the key, so the process leaves the live set at once. */
  async stop(): Promise<void> {
    this.halt();
    const identity = this.identity;
    this.identity = undefined;
    // A beat in flight would otherwise land after the delete and bring the key back.
    await this.pendingBeat?.catch(() => undefined);
    if (identity) await leave(this.kv, identity.role, identity.nodeId);
  }
}

/** Called when a heartbeat is written (`heartbeat`) or deleted (`null`). */
export type HeartbeatListener = (role: HeartbeatRole, nodeId: string, heartbeat: Heartbeat | null) => void;

/**
 * Watches the heartbeat bucket and answers which data nodes are live (docs/architecture.md §3).
 *
 * A node is live when its last heartbeat is younger than lease_ttl by the NATS server's clock and carries
 * the node's current epoch in the view: a heartbeat from an older incarnation (a zombie that was fenced by
 * a takeover) does not make the new incarnation live. Ages use the server stamps of the entries and a
 * `ServerClock` estimate of the server's current time; see ServerClock for how it is built and why it
 * never declares a node dead early. `start` probes the clock once so the estimate is tight even when every
 * heartbeat in the bucket is old.
 *
 * The tracker can only judge what it sees. While it may be missing beats it is *blind*, and the time it was
 * blind does not count in any heartbeat's age: a node gets lease_ttl of time the tracker could see before it
 * is judged dead, rather than every node looking dead because NATS was away. It is blind
 * - while its connection is down, and until a watch opened after the reconnect has loaded the bucket;
 * - while its watch is opened again: after an error, or when the bucket has held an entry for
 *   `LIMITS.livenessWatchStallMs` that the watch did not deliver (the server holding its consumer went away
 *   while this process stayed connected), counted from the last entry the watch delivered;
 * - while the bucket takes no writes (no stream leader: a JetStream election), which it finds out by
 *   writing a probe key every `LIMITS.livenessProbeIntervalMs` and waiting for its watch to deliver it,
 *   counted from the last probe that came through. It probes only while somebody asks who is live.
 * Ages are taken as of the last probe that came through, so a heartbeat delivered but not read yet (an
 * event loop held up) never makes a node look dead; a death is seen up to one probe interval later.
 */
export class LivenessTracker {
  private readonly heartbeats = new Map<string, Heartbeat>();
  private readonly listeners = new Set<HeartbeatListener>();
  private watch: OpenWatch | null = null;
  private watching: Promise<void> = Promise.resolve();
  private stopped = false;
  private readonly stopWatchingConnection: (() => void)[] = [];
  /** Watches opened so far (the first included): each reopening after a reconnect, a failure or a stall adds one. */
  private watchesOpened = 0;
  /** Recent periods (local monotonic ms) during which the tracker may have missed beats; the last may still be open. */
  private readonly blindPeriods: { fromMs: number; toMs: number | null }[] = [];
  /** When somebody last asked who is live: probes run while this is recent. */
  private askedAtMs = Number.NEGATIVE_INFINITY;
  private probing = false;
  /** As the connection's status events tell; a tracker built without a watchable connection assumes it is up. */
  private connected = true;
  /** When the last probe that came through (written and delivered) was sent. */
  private lastConfirmedProbeAtMs: number | null = null;
  private readonly revisionWaiters = new Set<{ revision: number; resolve: () => void }>();
  /** The highest revision (stream sequence) of the bucket the current watch delivered. */
  private deliveredRevision = 0;
  private lastDeliveryAtMs = performance.now();
  private readonly stallCheck: NodeJS.Timeout;
  private stallChecking = false;
  private heldSince: { revision: number; atMs: number } | null = null;

  private constructor(
    private readonly kv: KV,
    readonly clock: ServerClock,
  ) {
    this.stallCheck = setInterval(() => void this.checkForStall(), LIMITS.livenessWatchCheckIntervalMs);
  }

  /** Opens the bucket, loads every heartbeat in it, probes the server clock, then follows changes. */
  static async start(connection: NatsConnection, options: BucketCreationOptions & { bucket?: string } = {}): Promise<LivenessTracker> {
    // A short timeout on the watch's requests: one lost while JetStream elects a leader is retried soon.
    const kv = await openHeartbeatBucket(connection, options.bucket, { requestTimeoutMs: LIMITS.jetStreamFollowRequestTimeoutMs, ...options });
    const tracker = await LivenessTracker.over(kv);
    const watch = connectionWatch(connection);
    if (watch) {
      tracker.stopWatchingConnection.push(
        watch.onDisconnect(() => {
          tracker.connected = false;
          tracker.becomeBlind();
        }),
        watch.onReconnect(() => {
          tracker.connected = true;
          tracker.reopenWatch();
        }),
      );
    }
    return tracker;
  }

  /**
   * A tracker of an open heartbeat bucket: loads every heartbeat in it, probes the server clock, then follows
   * changes. Without a connection to watch, it assumes the connection stays up (the cluster simulation gives
   * it an in-memory bucket).
   */
  static async over(kv: KV, clock: ServerClock = new ServerClock()): Promise<LivenessTracker> {
    const tracker = new LivenessTracker(kv, clock);
    try {
      const first = await tracker.openWatch();
      tracker.watching = tracker.follow(first);
      await withTimeout(first.initialized, LIMITS.requestTimeoutMs, 'loading the heartbeat bucket');
      await tracker.clock.probe(kv, CLOCK_PROBE_KEY);
    } catch (error) {
      await tracker.stop();
      throw translateNatsError(error, 'start the liveness tracker');
    }
    return tracker;
  }

  /** How many times the watch of the bucket was opened (1 until a reconnect, a failure or a stall made it open another). */
  get watchCount(): number {
    return this.watchesOpened;
  }

  /** True while the tracker may be missing heartbeats (see the class comment). */
  isBlind(): boolean {
    return this.blindPeriods.at(-1)?.toMs === null;
  }

  /** Starts a blind period at `sinceMs` (now by default); extends the last one if it overlaps. */
  private becomeBlind(sinceMs: number = performance.now()): void {
    const last = this.blindPeriods.at(-1);
    if (last && (last.toMs === null || last.toMs >= sinceMs)) {
      last.toMs = null;
      return;
    }
    this.blindPeriods.push({ fromMs: sinceMs, toMs: null });
    if (this.blindPeriods.length > LIMITS.livenessBlindPeriodsKept) this.blindPeriods.shift();
  }

  private regainSight(): void {
    const last = this.blindPeriods.at(-1);
    if (last && last.toMs === null) last.toMs = performance.now();
  }

  /** Time (ms) between `fromMs` and `toMs` (local monotonic) during which the tracker was blind. */
  private blindMsBetween(fromMs: number, toMs: number): number {
    let blindMs = 0;
    for (const period of this.blindPeriods) {
      const end = Math.min(toMs, period.toMs ?? toMs);
      const start = Math.max(fromMs, period.fromMs);
      if (end > start) blindMs += end - start;
    }
    return blindMs;
  }

  /**
   * The age, by server time, of an entry stamped `createdAtMs`, less the time the tracker was blind since,
   * as of the send time of the last probe that came through (while probes run): every beat written before
   * then has been delivered, so no beat can be missing from that age. Counted to `localNowMs` instead, a
   * beat still unread in the socket counted as missing: after its event loop was held up for two seconds at
   * 100 000 buckets, the lease holder's tick ran before the beats that had arrived meanwhile were read, found
   * a node that was beating every 0.6 s dead with lease_ttl 3 s, and re-led its 30 000 buckets.
   */
  private seenAgeMs(createdAtMs: number, localNowMs: number): number {
    const asOfMs = this.lastConfirmedProbeAtMs === null ? localNowMs : Math.min(localNowMs, this.lastConfirmedProbeAtMs);
    const ageMs = this.clock.ageMs(createdAtMs, asOfMs);
    return ageMs - this.blindMsBetween(asOfMs - ageMs, asOfMs);
  }

  /** Somebody asks who is live: keep probing the bucket while they do. */
  private asked(localNowMs: number): void {
    this.askedAtMs = localNowMs;
    if (this.probing || this.stopped) return;
    this.probing = true;
    void this.probeWhileAsked();
  }

  private async probeWhileAsked(): Promise<void> {
    try {
      while (!this.stopped && performance.now() - this.askedAtMs < LIMITS.livenessProbeIdleMs) {
        await this.probe();
        await sleepMs(LIMITS.livenessProbeIntervalMs);
      }
    } finally {
      this.probing = false;
    }
  }

  /** Writes the probe key and waits for the watch to deliver it: proof that beats written until now are seen. */
  private async probe(): Promise<void> {
    const sentAtMs = performance.now();
    let confirmed = false;
    try {
      const revision = await this.kv.put(CLOCK_PROBE_KEY, new Uint8Array(0));
      confirmed = await this.delivered(revision, LIMITS.livenessProbeTimeoutMs);
    } catch {
      confirmed = false;
    }
    if (this.stopped) return;
    if (confirmed) {
      this.lastConfirmedProbeAtMs = sentAtMs;
      if (this.watch?.loading === false) this.regainSight();
    } else {
      this.becomeBlind(this.lastConfirmedProbeAtMs ?? sentAtMs);
    }
  }

  /** True once the watch has delivered `revision`, false after `timeoutMs`. */
  private delivered(revision: number, timeoutMs: number): Promise<boolean> {
    if (this.deliveredRevision >= revision) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter = {
        revision,
        resolve: () => {
          clearTimeout(timer);
          this.revisionWaiters.delete(waiter);
          resolve(true);
        },
      };
      const timer = setTimeout(() => {
        this.revisionWaiters.delete(waiter);
        resolve(false);
      }, timeoutMs);
      this.revisionWaiters.add(waiter);
    });
  }

  /** Ends the current watch; `follow` opens a new one, which delivers the latest heartbeat of every key again. */
  private reopenWatch(): void {
    this.becomeBlind();
    this.watch?.watcher.stop();
  }

  /**
   * Reopens the watch when the bucket holds an entry the watch has not delivered, twice in a row at least
   * `LIMITS.livenessWatchStallMs` apart, while nothing arrived in between.
   */
  private async checkForStall(): Promise<void> {
    if (this.stopped || this.stallChecking) return;
    if (this.watch?.loading && performance.now() - this.watch.openedAtMs >= LIMITS.requestTimeoutMs) {
      // A watch that never finishes loading would leave the tracker blind for good: open another.
      this.reopenWatch();
      return;
    }
    // Checked while blind too (a probe may be failing because the watch is the part that is broken), but not
    // while the connection is down or a watch is loading: those end by themselves.
    if (!this.connected || this.watch?.loading !== false) return;
    if (performance.now() - this.lastDeliveryAtMs < LIMITS.livenessWatchStallMs) {
      this.heldSince = null;
      return;
    }
    this.stallChecking = true;
    try {
      const lastRevision = (await this.kv.status()).streamInfo.state.last_seq;
      if (lastRevision <= this.deliveredRevision) {
        this.heldSince = null;
      } else if (this.heldSince === null || this.heldSince.revision !== lastRevision) {
        this.heldSince = { revision: lastRevision, atMs: performance.now() };
      } else if (performance.now() - this.heldSince.atMs >= LIMITS.livenessWatchStallMs && this.deliveredRevision < lastRevision) {
        this.heldSince = null;
        // Nothing was delivered since the last entry: the tracker has been blind since then.
        this.becomeBlind(this.lastDeliveryAtMs);
        this.reopenWatch();
      }
    } catch {
      // The bucket cannot be asked now; the next check tries again.
    } finally {
      this.stallChecking = false;
    }
  }

  private async openWatch(): Promise<OpenWatch> {
    let markInitialized: () => void = () => undefined;
    const initialized = new Promise<void>((resolve) => {
      markInitialized = resolve;
    });
    const seen = new Set<string>();
    const isReopening = this.watchesOpened > 0;
    const opened: OpenWatch = { watcher: undefined as unknown as QueuedIterator<KvEntry>, initialized, seen, loading: true, openedAtMs: performance.now() };
    this.deliveredRevision = 0;
    opened.watcher = await this.kv.watch({
      // Every key, the clock probes included, so that the last revision of the bucket is one the watch delivers.
      key: '>',
      initializedFn: () => {
        opened.loading = false;
        // A key the new watch did not deliver while loading is gone from the bucket.
        if (isReopening) for (const key of [...this.heartbeats.keys()]) if (!seen.has(key)) this.forget(key);
        this.regainSight();
        this.lastDeliveryAtMs = performance.now();
        markInitialized();
      },
    });
    this.watchesOpened += 1;
    this.watch = opened;
    return opened;
  }

  /** Consumes watch after watch until stopped; a failed open is retried after a short, growing pause. */
  private async follow(first: OpenWatch): Promise<void> {
    let current: OpenWatch | null = first;
    let failures = 0;
    while (!this.stopped) {
      if (current === null) {
        try {
          current = await this.openWatch();
          failures = 0;
        } catch (error) {
          if (error instanceof NatsError && error.code === ErrorCode.ConnectionClosed) return;
          failures += 1;
          await sleepMs(Math.min(LIMITS.livenessWatchRetryMaxMs, LIMITS.livenessWatchRetryInitialMs * failures));
          continue;
        }
      }
      try {
        for await (const entry of current.watcher) this.receive(entry, current);
      } catch {
        // The watch failed (its consumer could not be re-created, the connection closed): open another.
      }
      if (!this.stopped) this.becomeBlind();
      current = null;
    }
  }

  /** Ids of the data nodes of `view` whose heartbeat is younger than `leaseTtlMs` and carries their current epoch. */
  liveNodes(view: View, leaseTtlMs: number, localNowMs: number = performance.now()): Set<string> {
    this.asked(localNowMs);
    const live = new Set<string>();
    for (const node of Object.values(view.nodes)) {
      const heartbeat = this.heartbeats.get(heartbeatKey('data-node', node.id));
      if (heartbeat && heartbeat.epoch === node.epoch && this.seenAgeMs(heartbeat.createdAtMs, localNowMs) < leaseTtlMs) live.add(node.id);
    }
    return live;
  }

  /**
   * Data nodes whose process is up and which `view` does not show registered at the epoch they heartbeat at
   * (isJoiningHeartbeat): a heartbeat younger than `leaseTtlMs` at epoch 0, which a data node writes from the
   * moment it connects until its first incarnation registers (it is catching up with the metadata log
   * meanwhile), or at an epoch above the view's, once it registered in entries `view` has not applied yet.
   * A whole-cluster restart of 100 000 buckets handed every bucket of a node that had just registered to
   * another, because the lease holder's view did not have the registration yet. Each with how long ago
   * (ms, local) its heartbeats last showed progress: a new applied sequence, or the first beat seen.
   */
  joiningNodes(view: View, leaseTtlMs: number, localNowMs: number = performance.now()): Map<string, number> {
    this.asked(localNowMs);
    const joining = new Map<string, number>();
    for (const heartbeat of this.heartbeats.values()) {
      if (heartbeat.role !== 'data-node' || this.seenAgeMs(heartbeat.createdAtMs, localNowMs) >= leaseTtlMs) continue;
      if (isJoiningHeartbeat(heartbeat.epoch, ownRecord(view.nodes, heartbeat.nodeId)?.epoch)) {
        joining.set(heartbeat.nodeId, Math.max(0, localNowMs - heartbeat.progressSeenAtMs));
      }
    }
    return joining;
  }

  /**
   * How far each live data node of `view` (as `liveNodes` judges) has applied the metadata log, for those
   * whose heartbeats tell it.
   */
  progressOfLiveNodes(view: View, leaseTtlMs: number, localNowMs: number = performance.now()): MemberProgress[] {
    const progress: MemberProgress[] = [];
    for (const nodeId of this.liveNodes(view, leaseTtlMs, localNowMs)) {
      const heartbeat = this.heartbeats.get(heartbeatKey('data-node', nodeId));
      if (heartbeat?.appliedSeq !== undefined) progress.push({ nodeId, appliedSeq: heartbeat.appliedSeq, sinceMs: heartbeat.progressSeenAtMs });
    }
    return progress;
  }

  /** The last heartbeat of a process with its age by server time, for diagnostics; null when absent or deleted. */
  heartbeatOf(nodeId: string, role: HeartbeatRole = 'data-node', localNowMs: number = performance.now()): (Heartbeat & { ageMs: number }) | null {
    const heartbeat = this.heartbeats.get(heartbeatKey(role, nodeId));
    if (!heartbeat) return null;
    return { ...heartbeat, ageMs: this.clock.ageMs(heartbeat.createdAtMs, localNowMs) };
  }

  /** Calls `listener` on every heartbeat written or deleted after this call; returns the unsubscribe function. */
  onChange(listener: HeartbeatListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.stallCheck);
    for (const waiter of [...this.revisionWaiters]) waiter.resolve();
    for (const stopWatching of this.stopWatchingConnection.splice(0)) stopWatching();
    this.watch?.watcher.stop();
    await this.watching;
  }

  private forget(key: string): void {
    const parsed = parseHeartbeatKey(key);
    this.heartbeats.delete(key);
    if (parsed) this.tell(parsed.role, parsed.nodeId, null);
  }

  private receive(entry: KvEntry, watch: OpenWatch): void {
    if (watch.loading) watch.seen.add(entry.key);
    const receivedAtMs = performance.now();
    this.lastDeliveryAtMs = receivedAtMs;
    this.deliveredRevision = Math.max(this.deliveredRevision, entry.revision);
    for (const waiter of [...this.revisionWaiters]) if (waiter.revision <= this.deliveredRevision) waiter.resolve();
    this.clock.observe(entry.created.getTime(), receivedAtMs);
    const parsed = parseHeartbeatKey(entry.key);
    if (!parsed) return;
    const { role, nodeId } = parsed;
    let heartbeat: Heartbeat | null = null;
    if (entry.operation === 'PUT') {
      const value = parseHeartbeatValue(entry);
      // A value that does not match its key is not trusted; it counts as no heartbeat.
      if (value && value.nodeId === nodeId && value.role === role) {
        const previous = this.heartbeats.get(entry.key);
        const sameProgress = previous !== undefined && previous.epoch === value.epoch && previous.appliedSeq === value.appliedSeq;
        heartbeat = { ...value, revision: entry.revision, createdAtMs: entry.created.getTime(), progressSeenAtMs: sameProgress ? previous.progressSeenAtMs : receivedAtMs };
      }
    }
    if (heartbeat) this.heartbeats.set(entry.key, heartbeat);
    else this.heartbeats.delete(entry.key);
    this.tell(role, nodeId, heartbeat);
  }

  private tell(role: HeartbeatRole, nodeId: string, heartbeat: Heartbeat | null): void {
    for (const listener of this.listeners) {
      try {
        listener(role, nodeId, heartbeat);
      } catch (error) {
        // A failing listener is a bug in the caller; it must not silently end the watch of every other one.
        setImmediate(() => {
          throw error;
        });
      }
    }
  }
}

/** One watch of the heartbeat bucket: the keys it delivered while loading the bucket, and whether it still is. */
interface OpenWatch {
  watcher: QueuedIterator<KvEntry>;
  initialized: Promise<void>;
  seen: Set<string>;
  loading: boolean;
  openedAtMs: number;
}

function sleepMs(durationMs: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, durationMs));
}

function parseHeartbeatKey(key: string): { role: HeartbeatRole; nodeId: string } | null {
  const [prefix, role, nodeId, ...rest] = key.split('.');
  if (prefix !== HEARTBEAT_KEY_PREFIX || rest.length > 0 || nodeId === undefined) return null;
  if (!(HEARTBEAT_ROLES as readonly string[]).includes(role ?? '')) return null;
  return { role: role as HeartbeatRole, nodeId };
}

function parseHeartbeatValue(entry: KvEntry): HeartbeatValue | null {
  try {
    const value = entry.json<HeartbeatValue>();
    if (!(typeof value?.nodeId === 'string' && typeof value.role === 'string' && Number.isSafeInteger(value.epoch))) return null;
    const { nodeId, role, epoch, appliedSeq } = value;
    return Number.isSafeInteger(appliedSeq) ? { nodeId, role, epoch, appliedSeq } : { nodeId, role, epoch };
  } catch {
    return null;
  }
}

async function withTimeout<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new UnavailableError(`${what} took longer than ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, timedOut]);
  } finally {
    clearTimeout(timer);
  }
}
