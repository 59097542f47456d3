import { performance } from 'node:perf_hooks';
import { LIMITS } from '@mink/config';
import type { View } from '@mink/meta';
import type { PurgeableMetaLog } from './meta-log';
import type { MetaStore } from './meta-store';
import type { SnapshotWriteResult, ViewSnapshots } from './view-snapshots';

/** One finished round: the snapshot written and the sequence below which the log was purged. */
export interface SnapshotRound extends SnapshotWriteResult {
  /** Entries below this sequence are gone from the log; every entry at or above it is kept. */
  purgedBeforeSeq: number;
  /** How long the round took: encoding and uploading the snapshot, moving the pointer, purging. */
  durationMs: number;
}

export interface SnapshotSchedulerOptions {
  store: MetaStore;
  log: PurgeableMetaLog;
  snapshots: ViewSnapshots;
  /** A snapshot is written once the view is this many entries past the newest snapshot (at least 1). */
  everyCommands: number;
  /**
   * The sequence below which the log may be purged, given the snapshot rule's point (the oldest kept
   * snapshot's sequence + 1); at most that point. The rule's point itself when absent. The coordinator
   * passes `purgeBeforeSeq` over the progress of the live data nodes.
   */
  purgePoint?: (oldestKeptSnapshotSeq: number) => number;
  /** Called after each finished round (tests and logs). */
  onSnapshot?: (round: SnapshotRound) => void;
  /** Called when a round fails; the next round is tried `retryDelayMs` later. */
  onError?: (error: Error) => void;
  /** How long after a failed round the next is tried, whether or not entries arrive meanwhile; `LIMITS.metaSnapshotRetryDelayMs` when absent. */
  retryDelayMs?: number;
}

/**
 * Keeps the metadata log short (docs/architecture.md §3): whenever the local view is `everyCommands` entries past the
 * newest snapshot, it writes a snapshot of the view and then purges the log below the oldest kept
 * snapshot's sequence + 1, so every kept snapshot can still be started from, or below a lower point that
 * `purgePoint` chooses (to keep entries that slow members still need).
 *
 * The coordinator lease holder runs one while it holds the lease, so one process does the work. That is
 * an economy, not a safety rule: snapshots of one sequence are identical whoever writes them, the pointer
 * only moves forward, and the oldest kept sequence only grows, so a deposed holder that still runs a round
 * never purges an entry that a kept snapshot needs.
 *
 * Rounds never overlap. They are started by applied entries, and once more after each round, so a round
 * that took long is followed by one for the view it fell behind on. A failed round is tried again after
 * `retryDelayMs` by a timer, not by the next entry: a quiet log would otherwise keep its due snapshot (and
 * its purge) until something else is written.
 */
export class SnapshotScheduler {
  private readonly store: MetaStore;
  private readonly log: PurgeableMetaLog;
  private readonly snapshots: ViewSnapshots;
  private readonly everyCommands: number;
  private newestSnapshotSeq = 0;
  private round: Promise<void> | null = null;
  private retryNotBeforeMs = Number.NEGATIVE_INFINITY;
  private retryTimer: NodeJS.Timeout | undefined;
  /** The newest snapshot written whose purge has not been done yet (it failed, or is under way). */
  private owedPurge: SnapshotWriteResult | null = null;
  private unsubscribe: (() => void) | null = null;
  private stopped = false;

  constructor(private readonly options: SnapshotSchedulerOptions) {
    if (!Number.isSafeInteger(options.everyCommands) || options.everyCommands < 1) {
      throw new Error(`snapshots are written every 1 or more commands, not ${options.everyCommands}`);
    }
    this.store = options.store;
    this.log = options.log;
    this.snapshots = options.snapshots;
    this.everyCommands = options.everyCommands;
  }

  /** The sequence of the newest snapshot this scheduler knows of (written by it or found in the pointer). */
  get lastSnapshotSeq(): number {
    return this.newestSnapshotSeq;
  }

  /**
   * Reads the pointer, then writes at once if the view is already due and after every due entry from now
   * on. A failure to read the pointer is reported, not thrown: the scheduler then counts from 0, and its
   * first round, which reads the pointer again, merges into whatever is there.
   */
  async start(): Promise<void> {
    if (this.unsubscribe || this.stopped) throw new Error('a snapshot scheduler is started once');
    try {
      const newest = (await this.snapshots.kept())[0];
      this.newestSnapshotSeq = Math.max(this.newestSnapshotSeq, newest?.seq ?? 0);
    } catch (error) {
      this.report(error);
    }
    if (this.stopped) return;
    this.unsubscribe = this.store.onApplied((view) => this.maybeStartRound(view));
    this.maybeStartRound(this.store.view);
  }

  /** Stops starting rounds and waits for the one in flight, if any. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.unsubscribe?.();
    this.unsubscribe = null;
    await this.round;
  }

  /**
   * Stops like `stop`, then writes one last snapshot of the view if it is past the newest one, and purges
   * behind it: the lease holder's clean stop, so that processes started next load the view as it is now
   * instead of replaying what came since the last snapshot (at 100 000 buckets, the closes and reopens of
   * a restart: seconds of every process's start). A failure is reported, never thrown.
   */
  async stopWithSnapshot(): Promise<void> {
    await this.stop();
    const view = this.store.view;
    if (view.seq <= this.newestSnapshotSeq) return;
    await this.runRound(view, true);
  }

  /** Resolves when no round is in flight (a round started meanwhile is waited for too). */
  async idle(): Promise<void> {
    while (this.round) await this.round;
  }

  private maybeStartRound(view: View): void {
    if (this.stopped || this.round) return;
    if (!this.isSnapshotDue(view) && this.owedPurge === null) return;
    if (performance.now() < this.retryNotBeforeMs) return;
    this.round = this.runRound(view).finally(() => {
      this.round = null;
      // Entries applied during the round did not start one; look at the view they left.
      this.maybeStartRound(this.store.view);
    });
  }

  private isSnapshotDue(view: View): boolean {
    return view.seq >= this.newestSnapshotSeq + this.everyCommands;
  }

  /**
   * Writes a snapshot of `view` when one is due (or, `final`, whenever the view is past the newest), then
   * purges behind the newest snapshot written (also one whose purge failed before).
   */
  private async runRound(view: View, final = false): Promise<void> {
    let round: SnapshotRound;
    const startedAtMs = performance.now();
    try {
      if (this.isSnapshotDue(view) || (final && view.seq > this.newestSnapshotSeq)) {
        const written = await this.snapshots.write(view);
        this.newestSnapshotSeq = Math.max(this.newestSnapshotSeq, written.kept[0]?.seq ?? written.seq);
        this.owedPurge = written;
      }
      const written = this.owedPurge!;
      // `kept` is never empty after a write: it holds the written snapshot or newer ones.
      const oldestKeptSeq = written.kept[written.kept.length - 1]!.seq;
      const rulePoint = oldestKeptSeq + 1;
      const purgedBeforeSeq = Math.min(rulePoint, this.options.purgePoint?.(oldestKeptSeq) ?? rulePoint);
      await this.log.purgeBefore(purgedBeforeSeq);
      this.owedPurge = null;
      round = { ...written, purgedBeforeSeq, durationMs: Math.round(performance.now() - startedAtMs) };
    } catch (error) {
      this.scheduleRetry();
      this.report(error);
      return;
    }
    try {
      this.options.onSnapshot?.(round);
    } catch (error) {
      this.report(error);
    }
  }

  /** Holds rounds back for the retry delay, then tries the view of that moment. */
  private scheduleRetry(): void {
    if (this.stopped) return;
    const delayMs = this.options.retryDelayMs ?? LIMITS.metaSnapshotRetryDelayMs;
    this.retryNotBeforeMs = performance.now() + delayMs;
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.retryNotBeforeMs = Number.NEGATIVE_INFINITY;
      this.maybeStartRound(this.store.view);
    }, delayMs);
    // A retry alone never keeps the process alive.
    this.retryTimer.unref();
  }

  private report(error: unknown): void {
    this.options.onError?.(error instanceof Error ? error : new Error(String(error)));
  }
}
