import { performance } from 'node:perf_hooks';
import type { KV, KvEntry, NatsConnection } from 'nats';
import { LIMITS } from '@mink/config';
import { isWrongRevision, openLatestValueBucket, translateNatsError, type BucketCreationOptions } from './nats-errors';
import { connectionWatch, type ConnectionWatch } from './nats-connection';
import { ServerClock } from './server-clock';

/** The KV bucket of the coordinator lease, and its key. */
export const LEASE_BUCKET = 'mink_lease';
export const COORDINATOR_LEASE_KEY = 'coordinator';
const CLOCK_PROBE_KEY = 'clock';

/** Who holds the lease now, as stored: the holder's id, the entry's revision and its age by server time. */
export interface LeaseHolder {
  id: string;
  revision: number;
  ageMs: number;
}

interface LeaseValue {
  holder: string;
}

export interface CoordinatorLeaseOptions {
  key?: string;
  clock?: ServerClock;
}

/** Opens (creating if needed) the lease bucket; only the latest entry of each key is kept. */
export function openLeaseBucket(connection: NatsConnection, bucket: string = LEASE_BUCKET, options: BucketCreationOptions = {}): Promise<KV> {
  return openLatestValueBucket(connection, bucket, options);
}

/**
 * The coordinator lease (docs/architecture.md §3, §6): one KV key written with compare-and-set on its revision.
 *
 * - Acquire: create the key if it is absent or deleted; otherwise take it over, with an update at the
 *   revision seen, once the holder's entry is older than `leaseTtlMs` by the server's clock (see
 *   ServerClock: the estimate never runs ahead of the server, so a takeover is never early).
 * - Renew: update at the revision of our last write. A stale revision means somebody took over: lost.
 * - Hold: `isHeld` is true only while the last successful write was *sent* less than `leaseTtlMs` ago by
 *   the local monotonic clock. The server stamped that write no earlier than it was sent, and a contender
 *   takes over only when the stamp is `leaseTtlMs` old, so a holder that is paused, partitioned or slow
 *   stops acting before anybody else can start.
 *
 * `holderId` must be unique per process incarnation: an id found in the store is treated as somebody
 * else's unless this object wrote it.
 */
export class CoordinatorLease {
  readonly key: string;
  private readonly clock: ServerClock;
  /** Revision of our last successful write while we hold the lease; null when we do not. */
  private heldRevision: number | null = null;
  /** Local monotonic time at which our last successful write was sent. */
  private renewedAtMs = Number.NEGATIVE_INFINITY;
  private lastClockProbeAtMs = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly kv: KV,
    readonly holderId: string,
    readonly leaseTtlMs: number,
    options: CoordinatorLeaseOptions = {},
  ) {
    if (!(leaseTtlMs > 0)) throw new Error(`a lease needs a positive ttl, not ${leaseTtlMs}`);
    this.key = options.key ?? COORDINATOR_LEASE_KEY;
    this.clock = options.clock ?? new ServerClock();
  }

  static async open(
    connection: NatsConnection,
    holderId: string,
    leaseTtlMs: number,
    options: CoordinatorLeaseOptions & BucketCreationOptions & { bucket?: string } = {},
  ): Promise<CoordinatorLease> {
    const lease = new CoordinatorLease(await openLeaseBucket(connection, options.bucket, options), holderId, leaseTtlMs, options);
    lease.connection = connectionWatch(connection);
    return lease;
  }

  /** The watch of the connection the lease was opened on (null for a lease built on a bare KV): `runLease` renews right after a reconnect. */
  connection: ConnectionWatch | null = null;

  /** True when this object holds the lease and may act as its holder at local monotonic time `nowMs`. */
  isHeld(nowMs: number = performance.now()): boolean {
    return this.heldRevision !== null && nowMs - this.renewedAtMs < this.leaseTtlMs;
  }

  /** Local monotonic time after which `isHeld` turns false unless the lease is renewed first. */
  heldUntilMs(): number {
    return this.heldRevision === null ? Number.NEGATIVE_INFINITY : this.renewedAtMs + this.leaseTtlMs;
  }

  /** Takes the lease if it is free or expired; renews it when already ours. True when we hold it now. */
  async tryAcquire(): Promise<boolean> {
    if (this.heldRevision !== null) return this.renew();
    try {
      const entry = await this.read();
      const value = this.encode();
      if (entry === null || entry.operation !== 'PUT') {
        const sentAtMs = performance.now();
        return this.held(await this.kv.create(this.key, value), sentAtMs);
      }
      await this.refreshClock();
      if (this.clock.ageMs(entry.created.getTime()) < this.leaseTtlMs) return false;
      const sentAtMs = performance.now();
      return this.held(await this.kv.update(this.key, value, entry.revision), sentAtMs);
    } catch (error) {
      // Somebody else created or took over the key between our read and our write.
      if (isWrongRevision(error)) return false;
      throw translateNatsError(error, `acquire lease ${this.key}`);
    }
  }

  /**
   * Extends the lease. False when it is lost for certain (somebody else holds it); throws
   * `UnavailableError` when the outcome is unknown, in which case `isHeld` keeps counting down from the
   * last renewal that is known to have succeeded.
   */
  async renew(): Promise<boolean> {
    const revision = this.heldRevision;
    if (revision === null) return false;
    try {
      const sentAtMs = performance.now();
      return this.held(await this.kv.update(this.key, this.encode(), revision), sentAtMs);
    } catch (error) {
      if (!isWrongRevision(error)) throw translateNatsError(error, `renew lease ${this.key}`);
    }
    // A renewal whose ack was lost may have applied: then the entry is still ours, at a newer revision.
    try {
      const entry = await this.read();
      if (entry !== null && entry.operation === 'PUT' && holderOf(entry) === this.holderId) {
        const sentAtMs = performance.now();
        return this.held(await this.kv.update(this.key, this.encode(), entry.revision), sentAtMs);
      }
    } catch (error) {
      if (!isWrongRevision(error)) throw translateNatsError(error, `renew lease ${this.key}`);
    }
    this.heldRevision = null;
    return false;
  }

  /** The current holder by the store, or null when nobody holds the key (it is absent or deleted). */
  async holder(): Promise<LeaseHolder | null> {
    try {
      const entry = await this.read();
      if (entry === null || entry.operation !== 'PUT') return null;
      await this.refreshClock();
      return { id: holderOf(entry) ?? '', revision: entry.revision, ageMs: this.clock.ageMs(entry.created.getTime()) };
    } catch (error) {
      throw translateNatsError(error, `read lease ${this.key}`);
    }
  }

  /** Gives the lease up at once (a clean shutdown), so the next holder need not wait for it to expire. */
  async release(): Promise<void> {
    const revision = this.heldRevision;
    this.heldRevision = null;
    if (revision === null) return;
    try {
      // Deleting at our revision only: if somebody took over meanwhile, their entry stays.
      await this.kv.delete(this.key, { previousSeq: revision });
    } catch (error) {
      if (!isWrongRevision(error)) throw translateNatsError(error, `release lease ${this.key}`);
    }
  }

  private held(revision: number, sentAtMs: number): true {
    this.heldRevision = revision;
    this.renewedAtMs = sentAtMs;
    return true;
  }

  private encode(): Uint8Array {
    const value: LeaseValue = { holder: this.holderId };
    return new TextEncoder().encode(JSON.stringify(value));
  }

  private async read(): Promise<KvEntry | null> {
    const entry = await this.kv.get(this.key);
    if (entry !== null) this.clock.observe(entry.created.getTime(), performance.now());
    return entry;
  }

  /** Probes the server clock when there is no estimate yet or the last probe is older than one ttl. */
  private async refreshClock(): Promise<void> {
    const nowMs = performance.now();
    if (this.clock.hasEstimate() && nowMs - this.lastClockProbeAtMs < this.leaseTtlMs) return;
    await this.clock.probe(this.kv, CLOCK_PROBE_KEY);
    this.lastClockProbeAtMs = nowMs;
  }
}

function holderOf(entry: KvEntry): string | null {
  try {
    const value = entry.json<LeaseValue>();
    return typeof value?.holder === 'string' ? value.holder : null;
  } catch {
    return null;
  }
}

export interface LeaseRunnerOptions {
  lease: CoordinatorLease;
  /** Pause between attempts; `lease.leaseTtlMs / LIMITS.heartbeatsPerLeaseTtl` when absent. */
  intervalMs?: number;
  /** Called when the lease is acquired; the holder may act from now on (checking `lease.isHeld()` before each action). */
  onAcquired: () => void | Promise<void>;
  /** Called when the lease is lost (taken over, expired locally, or released by `stop`); act no more. */
  onLost: () => void | Promise<void>;
  /** Called with failures of attempts and callbacks; the loop keeps going. */
  onError?: (error: Error) => void;
  /** Release the lease when stopped (a clean shutdown); true when absent. */
  releaseOnStop?: boolean;
}

export interface LeaseRunner {
  /** Whether the runner currently considers the lease held (`onAcquired` called, `onLost` not yet). */
  isHeld(): boolean;
  /** Stops the loop, waits for an attempt in flight, releases the lease if held and calls `onLost`. */
  stop(): Promise<void>;
}

/**
 * Runs a lease: every `intervalMs` it renews the lease when held and tries to acquire it otherwise, and
 * calls `onAcquired` / `onLost` on each change. A timer also fires `onLost` the moment the lease expires
 * locally, so a renewal stuck in a slow request does not leave the holder acting past its lease.
 * Callbacks never overlap: each transition waits for the previous callback.
 */
export function runLease(options: LeaseRunnerOptions): LeaseRunner {
  const { lease } = options;
  const intervalMs = options.intervalMs ?? lease.leaseTtlMs / LIMITS.heartbeatsPerLeaseTtl;
  const report = (error: unknown): void => options.onError?.(error instanceof Error ? error : new Error(String(error)));
  let heldByRunner = false;
  let stopped = false;
  let nextAttempt: NodeJS.Timeout | undefined;
  let expiry: NodeJS.Timeout | undefined;
  let transitions: Promise<void> = Promise.resolve();
  let attemptInFlight: Promise<void> = Promise.resolve();

  /** Aligns the runner's state with `lease.isHeld()`, calling back on a change. */
  const settle = (): Promise<void> => {
    transitions = transitions.then(async () => {
      const heldNow = !stopped && lease.isHeld();
      clearTimeout(expiry);
      if (heldNow) expiry = setTimeout(() => void settle(), Math.max(0, lease.heldUntilMs() - performance.now()));
      if (heldNow === heldByRunner) return;
      heldByRunner = heldNow;
      try {
        await (heldNow ? options.onAcquired() : options.onLost());
      } catch (error) {
        report(error);
      }
    });
    return transitions;
  };

  const attempt = async (): Promise<void> => {
    try {
      // tryAcquire renews when the lease is ours, including after a local expiry nobody took advantage of.
      await lease.tryAcquire();
    } catch (error) {
      report(error);
    }
    await settle();
  };

  const loop = (): void => {
    if (stopped) return;
    attemptInFlight = attempt().finally(() => {
      if (!stopped) nextAttempt = setTimeout(loop, intervalMs);
    });
  };
  loop();
  // After a reconnect, renew (or acquire) at once rather than at the next interval: the outage has already
  // used up part of the lease, and an attempt in flight when the connection dropped failed.
  let attemptAfterReconnect = false;
  const stopRenewingOnReconnect =
    lease.connection?.onReconnect(() => {
      if (stopped || attemptAfterReconnect) return;
      attemptAfterReconnect = true;
      void attemptInFlight.then(() => {
        attemptAfterReconnect = false;
        if (stopped) return;
        clearTimeout(nextAttempt);
        loop();
      });
    }) ?? (() => undefined);

  return {
    isHeld: () => heldByRunner,
    stop: async () => {
      stopped = true;
      stopRenewingOnReconnect();
      clearTimeout(nextAttempt);
      await attemptInFlight;
      clearTimeout(expiry);
      if (options.releaseOnStop ?? true) {
        await lease.release().catch(report);
      }
      await settle();
    },
  };
}
