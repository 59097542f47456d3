import { UnavailableError } from '@mink/protocol';

/**
 * When a data node may answer reads (scans, lookups) from its own state: a lease read with a catch-up.
 *
 * Writes need nothing like this: storage fences them. A read does not touch the metadata log, so a node
 * that was paused or cut off while another node took its buckets over could answer from a tablet or stream
 * it no longer leads. Reads are therefore served only while
 * 1. the node's liveness lease holds (a heartbeat sent within most of lease_ttl was stored), and
 * 2. its view has caught up with everything the metadata log held at some moment after the lease's current
 *    unbroken chain of renewals began.
 * A takeover needs the node's heartbeat to age past lease_ttl, which breaks the chain; the chain that starts
 * after it forces a fresh catch-up, and the catch-up brings the entries of the takeover into the view, after
 * which the data path answers NotLeader. Until then reads get Unavailable, which clients retry.
 */
export class ReadFence {
  /** Monotonic time at which the last completed catch-up started (what the view is known to include). */
  private caughtUpAtMs: number | null = null;
  private catchingUp: Promise<void> | null = null;

  constructor(
    private readonly nodeId: string,
    /** Heartbeater.leaseHeldSinceMs: the start of the current chain of renewals, null without a lease. */
    private readonly leaseHeldSinceMs: () => number | null,
    /** Waits until the view has applied everything the metadata log holds when called. */
    private readonly catchUp: () => Promise<unknown>,
    private readonly onError: (error: unknown) => void = () => undefined,
    private readonly monotonicMs: () => number = () => performance.now(),
  ) {}

  /** Throws Unavailable unless a read may be served now; starts the catch-up a read is waiting for. */
  check(): void {
    const since = this.leaseHeldSinceMs();
    if (since === null) {
      throw new UnavailableError(`node ${this.nodeId} has not renewed its liveness lately and may have lost its buckets; ask again`);
    }
    if (this.caughtUpAtMs !== null && this.caughtUpAtMs >= since) return;
    this.startCatchUp();
    throw new UnavailableError(`node ${this.nodeId} is catching up with the metadata log before it serves reads; ask again`);
  }

  /** Catches up now (at start, so the first reads need not wait); joins a catch-up in flight. */
  startCatchUp(): Promise<void> {
    this.catchingUp ??= (async () => {
      const startedAtMs = this.monotonicMs();
      try {
        await this.catchUp();
        this.caughtUpAtMs = Math.max(this.caughtUpAtMs ?? startedAtMs, startedAtMs);
      } catch (error) {
        this.onError(error);
      } finally {
        this.catchingUp = null;
      }
    })();
    return this.catchingUp;
  }
}
