import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { LIMITS, PROPOSE_BACKOFF, backoffDelayMs, sleep } from '@mink/config';
import { MinkError, TimeoutError, UnavailableError, errorOfCode } from '@mink/protocol';
import { applyBatch, type LogEntry } from '@mink/meta';
import type { Command, Outcome, Rejection } from '@mink/meta';
import type { AppendResult, MetaLog, TailSubscription } from '@mink/meta';
import { emptyView, type View } from '@mink/meta';
import { LogPurgedError } from './meta-log';

/** Where a process gets the newest snapshot of the view; `ViewSnapshots` in production. */
export interface SnapshotSource {
  loadNewest(): Promise<View | null>;
}

/** Called when the view jumped to a loaded snapshot instead of applying entries one by one. */
export type ReloadedListener = (view: View, skippedFromSeq: number) => void;

/** The outcome of a command that applied without rejection. */
export type AcceptedOutcome = Extract<Outcome, { ok: true }>;

/** Called after each entry is applied, with the view after it. Listeners run in sequence order, synchronously. */
export type AppliedListener = (view: View, seq: number, command: Command, outcome: Outcome) => void;

export interface MetaStoreOptions {
  /** The view to start from, e.g. a loaded snapshot; the empty view when absent. Tailing starts after its `seq`. */
  initialView?: View;
  /** How long `propose` waits for its entry to apply locally; `LIMITS.proposeTimeoutMs` when absent. */
  proposeTimeoutMs?: number;
  /** Appends tried per proposal; `LIMITS.proposeAttemptsMax` when absent. */
  proposeAttemptsMax?: number;
  /** Outcomes kept for proposers that start waiting late; `LIMITS.recentOutcomesMax` when absent. */
  recentOutcomesMax?: number;
  /** Message ids of proposals; random UUIDs when absent (simulations inject a seeded source). */
  newMessageId?: () => string;
  /**
   * Called once when the store cannot follow the log any more: a broken invariant while applying (a gap
   * in sequences) or a tail that ended for good. Every waiting proposer is rejected first. When absent the
   * error is rethrown outside any promise so the process crashes (STYLE: a broken invariant crashes the process).
   */
  onFatal?: (error: Error) => void;
  /** Called with an error thrown by an `onApplied` listener; rethrown outside any promise when absent. */
  onListenerError?: (error: Error) => void;
  /**
   * Where to reload the view from when the tail finds that entries it still needs were purged (the process
   * fell behind the oldest kept snapshot). Without it, that is fatal like any other end of the tail.
   */
  snapshots?: SnapshotSource;
}

export interface ProposeOptions {
  /**
   * How long to wait for the entry to apply locally, from the call; `proposeTimeoutMs` of the store when
   * absent. Proposers that would otherwise retry (and so append the same change again) while the view
   * lags behind a burst wait longer: once appended, the entry applies as soon as the view gets there.
   */
  timeoutMs?: number;
}

interface Waiter {
  resolve: () => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

/**
 * One process's copy of the metadata view (docs/architecture.md §3). It tails the log from `view.seq + 1` and applies
 * every entry with the pure `apply`, strictly in sequence; a gap is a broken invariant that stops the store.
 *
 * A proposer appends its command under a fresh message id (retrying transient failures with the same id,
 * so the log keeps one entry), takes the sequence from the ack, waits until this copy has applied that
 * sequence and returns the outcome computed here. Outcomes are not part of the view: the store keeps the
 * last `recentOutcomesMax` of them by sequence, so a proposer whose entry applied before it began to wait
 * (or whose retry was acked as a duplicate, which carries the original sequence) still finds its outcome.
 */
export class MetaStore {
  private currentView: View;
  private readonly recentOutcomes = new Map<number, Outcome>();
  private readonly waitersBySeq = new Map<number, Set<Waiter>>();
  private readonly listeners = new Set<AppliedListener>();
  private readonly reloadedListeners = new Set<ReloadedListener>();
  /** Entries delivered by the tail and not applied yet (see applyEntry). */
  private pending: LogEntry[] = [];
  private applyScheduled = false;
  private lastBatchStartedAtMs = Number.NEGATIVE_INFINITY;
  /** Reloads since the last entry applied by tailing; bounded by `LIMITS.metaReloadAttemptsMax`. */
  private reloadsInARow = 0;
  private subscription: TailSubscription | undefined;
  private failure: Error | undefined;
  private stopped = false;
  private readonly proposeTimeoutMs: number;
  private readonly proposeAttemptsMax: number;
  private readonly recentOutcomesMax: number;
  private readonly newMessageId: () => string;

  private constructor(
    private readonly log: MetaLog,
    private readonly options: MetaStoreOptions,
  ) {
    this.currentView = options.initialView ?? emptyView();
    this.proposeTimeoutMs = options.proposeTimeoutMs ?? LIMITS.proposeTimeoutMs;
    this.proposeAttemptsMax = options.proposeAttemptsMax ?? LIMITS.proposeAttemptsMax;
    this.recentOutcomesMax = options.recentOutcomesMax ?? LIMITS.recentOutcomesMax;
    this.newMessageId = options.newMessageId ?? randomUUID;
  }

  /** A store over `log`, not yet following it: register listeners, then `start()`. */
  static async open(log: MetaLog, options: MetaStoreOptions = {}): Promise<MetaStore> {
    return new MetaStore(log, options);
  }

  /** The view after the last applied entry. Treat it as immutable: `apply` never mutates a view. */
  get view(): View {
    return this.currentView;
  }

  /** Starts tailing the log after the current view. Resolves at once; use `catchUp` to wait for the past. */
  async start(): Promise<void> {
    if (this.subscription || this.stopped) throw new Error('a metadata store is started once');
    this.startTail();
  }

  private startTail(): void {
    this.subscription = this.log.tail(
      this.currentView.seq + 1,
      (seq, command) => this.applyEntry(seq, command),
      (error) => this.tailEnded(error),
    );
  }

  private tailEnded(error: Error): void {
    // What the tail delivered before it ended is valid: apply it before anything else.
    this.applyPending();
    if (error instanceof LogPurgedError && this.options.snapshots && !this.failure && !this.stopped) {
      void this.reload(error, this.options.snapshots);
      return;
    }
    this.fail(error);
  }

  /**
   * The entries after the view were purged: load the newest snapshot, which covers them because the log is
   * purged only below a kept snapshot, jump to it, and tail after it. A snapshot that does not cover them
   * yet (read from a lagging pointer) is loaded again after a pause; an older one is never applied.
   */
  private async reload(purged: LogPurgedError, snapshots: SnapshotSource): Promise<void> {
    const previousSubscription = this.subscription;
    this.subscription = undefined;
    await previousSubscription?.stop().catch(() => undefined);
    while (!this.stopped && !this.failure) {
      this.reloadsInARow += 1;
      if (this.reloadsInARow > LIMITS.metaReloadAttemptsMax) {
        this.fail(purged);
        return;
      }
      let loaded: View | null;
      try {
        loaded = await snapshots.loadNewest();
      } catch (error) {
        loaded = null;
        this.report(error instanceof Error ? error : new Error(String(error)), this.options.onListenerError);
      }
      if (this.stopped || this.failure) return;
      if (loaded && loaded.seq >= purged.firstSeq - 1 && loaded.seq > this.currentView.seq) {
        this.jumpTo(loaded);
        this.startTail();
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, LIMITS.metaReloadRetryDelayMs));
    }
  }

  private jumpTo(view: View): void {
    const skippedFromSeq = this.currentView.seq + 1;
    this.currentView = view;
    for (const listener of this.reloadedListeners) {
      try {
        listener(view, skippedFromSeq);
      } catch (error) {
        this.report(error instanceof Error ? error : new Error(String(error)), this.options.onListenerError);
      }
    }
    // Proposers waiting on skipped entries wake up; their outcome is unknown here, so propose reports a
    // timeout, which callers treat as "may have applied" as with any other timeout.
    for (const [seq, waiters] of [...this.waitersBySeq.entries()]) {
      if (seq > view.seq) continue;
      this.waitersBySeq.delete(seq);
      for (const waiter of waiters) {
        clearTimeout(waiter.timer);
        waiter.resolve();
      }
    }
  }

  /** Waits until the view has applied everything the log held when this was called. */
  async catchUp(timeoutMs: number): Promise<View> {
    await this.waitForSeq(await this.log.lastSeq(), timeoutMs);
    return this.currentView;
  }

  /** Calls `listener` after each applied entry; returns the function that unsubscribes it. */
  onApplied(listener: AppliedListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /**
   * Calls `listener` when the view jumps to a loaded snapshot because the entries after it were purged.
   * Entries in between are never passed to `onApplied` listeners: whatever a listener derives from the
   * view must be derived again from the new one (own fences, buckets to open or close).
   */
  onReloaded(listener: ReloadedListener): () => void {
    this.reloadedListeners.add(listener);
    return () => {
      this.reloadedListeners.delete(listener);
    };
  }

  /** Resolves once the view has applied `seq`; rejects with `TimeoutError` after `timeoutMs`. */
  waitForSeq(seq: number, timeoutMs: number): Promise<void> {
    if (this.currentView.seq >= seq) return Promise.resolve();
    if (this.failure) return Promise.reject(this.failure);
    if (this.stopped) return Promise.reject(new UnavailableError('the metadata store is stopped'));
    return new Promise<void>((resolve, reject) => {
      const waiters = this.waitersBySeq.get(seq) ?? new Set<Waiter>();
      this.waitersBySeq.set(seq, waiters);
      const waiter: Waiter = {
        resolve,
        reject,
        timer: setTimeout(() => {
          waiters.delete(waiter);
          if (waiters.size === 0) this.waitersBySeq.delete(seq);
          reject(new TimeoutError(`the metadata view did not reach entry ${seq} within ${timeoutMs} ms (it is at ${this.currentView.seq})`));
        }, timeoutMs),
      };
      waiters.add(waiter);
      // A paced tail (see JetStreamMetaLogOptions.tailPaceMs) asks for the entry now rather than at its next poll.
      this.subscription?.catchUp?.(seq);
    });
  }

  /**
   * Appends `command` and returns the outcome this copy of the view computed for it: `{ ok: false }`
   * for a rejection. Throws `UnavailableError` when the log could not take the append and `TimeoutError`
   * when the entry did not apply locally within `proposeTimeoutMs`; in both cases the command may still
   * apply later, so proposals must be safe to repeat (they carry the epochs that make them so).
   */
  async propose(command: Command, options: ProposeOptions = {}): Promise<Outcome> {
    const startedAtMs = performance.now();
    const ack = await this.appendWithRetries(command, this.newMessageId());
    const remainingMs = Math.max(0, (options.timeoutMs ?? this.proposeTimeoutMs) - (performance.now() - startedAtMs));
    await this.waitForSeq(ack.seq, remainingMs);
    const outcome = this.recentOutcomes.get(ack.seq);
    if (outcome === undefined) {
      throw new TimeoutError(
        `the outcome of entry ${ack.seq} is unknown: more than ${this.recentOutcomesMax} entries applied before its proposer looked`,
      );
    }
    return outcome;
  }

  /** Like `propose`, but a rejection is thrown as the matching typed error and an accepted outcome is returned. */
  async proposeOrThrow(command: Command, options: ProposeOptions = {}): Promise<AcceptedOutcome> {
    const outcome = await this.propose(command, options);
    if (!outcome.ok) throw rejectionError(outcome.rejection);
    return outcome;
  }

  /** Stops tailing; waiting proposers are rejected with `UnavailableError`. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.rejectAllWaiters(new UnavailableError('the metadata store is stopped'));
    await this.subscription?.stop();
  }

  private async appendWithRetries(command: Command, messageId: string): Promise<AppendResult> {
    for (let attempt = 1; ; attempt++) {
      if (this.failure) throw this.failure;
      if (this.stopped) throw new UnavailableError('the metadata store is stopped');
      try {
        return await this.log.append(command, messageId);
      } catch (error) {
        if (!isTransient(error) || attempt >= this.proposeAttemptsMax) throw error;
      }
      await sleep(backoffDelayMs(attempt, PROPOSE_BACKOFF, Math.random));
    }
  }

  /**
   * Entries are applied in batches: those the tail delivers within one turn of the event loop, or within
   * `LIMITS.metaApplyIntervalMinMs` of the previous batch (at most `LIMITS.metaApplyBatchEntriesMax`), go
   * through one `applyBatch` and one notification of the view's listeners. The big maps of the view are
   * sharded, so each entry copies only the shards it touches; an entry that arrives alone waits only until
   * the end of the turn.
   */
  private applyEntry(seq: number, command: Command): void {
    if (this.failure || this.stopped) return;
    this.pending.push({ seq, command });
    if (this.pending.length >= LIMITS.metaApplyBatchEntriesMax) {
      this.applyPending();
      return;
    }
    if (this.applyScheduled) return;
    this.applyScheduled = true;
    const run = (): void => {
      this.applyScheduled = false;
      this.applyPending();
    };
    // Batches start at most every `metaApplyIntervalMinMs`: entries that arrive closer together than that
    // (a burst) wait a moment and are applied and announced together, which bounds the CPU a burst costs every process.
    const waitMs = this.lastBatchStartedAtMs + LIMITS.metaApplyIntervalMinMs - performance.now();
    if (waitMs > 0) setTimeout(run, waitMs);
    else setImmediate(run);
  }

  private applyPending(): void {
    const entries = this.pending;
    this.pending = [];
    if (entries.length === 0 || this.failure || this.stopped) return;
    this.lastBatchStartedAtMs = performance.now();
    let view: View;
    let outcomes: Outcome[];
    try {
      ({ view, outcomes } = applyBatch(this.currentView, entries));
    } catch (error) {
      // A broken invariant in the batch: apply the entries before it one by one, so the view stops at the
      // last good entry, as it would have without batching, then stop.
      const broken = error instanceof Error ? error : new Error(String(error));
      for (const entry of entries) {
        try {
          this.publish([entry], applyBatch(this.currentView, [entry]));
        } catch {
          break;
        }
      }
      this.fail(broken);
      return;
    }
    this.publish(entries, { view, outcomes });
  }

  /** Makes `applied` (the result of applying `entries`) the current view and tells listeners and waiters. */
  private publish(entries: readonly LogEntry[], applied: { view: View; outcomes: Outcome[] }): void {
    const { view, outcomes } = applied;
    this.currentView = view;
    this.reloadsInARow = 0;
    entries.forEach(({ seq, command }, index) => {
      const outcome = outcomes[index]!;
      this.recentOutcomes.set(seq, outcome);
      if (this.recentOutcomes.size > this.recentOutcomesMax) {
        // Maps iterate in insertion order and sequences are inserted in order, so the first key is the oldest.
        this.recentOutcomes.delete(this.recentOutcomes.keys().next().value as number);
      }
      // Listeners get the view after the whole batch: it includes this entry and is the one they would read.
      for (const listener of this.listeners) {
        try {
          listener(view, seq, command, outcome);
        } catch (error) {
          this.report(error instanceof Error ? error : new Error(String(error)), this.options.onListenerError);
        }
      }
      const waiters = this.waitersBySeq.get(seq);
      if (waiters) {
        this.waitersBySeq.delete(seq);
        for (const waiter of waiters) {
          clearTimeout(waiter.timer);
          waiter.resolve();
        }
      }
    });
  }

  private fail(error: Error): void {
    if (this.failure || this.stopped) return;
    this.failure = error;
    this.rejectAllWaiters(error);
    void this.subscription?.stop();
    this.report(error, this.options.onFatal);
  }

  private rejectAllWaiters(error: Error): void {
    for (const waiters of this.waitersBySeq.values()) {
      for (const waiter of waiters) {
        clearTimeout(waiter.timer);
        waiter.reject(error);
      }
    }
    this.waitersBySeq.clear();
  }

  private report(error: Error, handler: ((error: Error) => void) | undefined): void {
    if (handler) {
      handler(error);
      return;
    }
    setImmediate(() => {
      throw error;
    });
  }
}

/** True for failures after which the same append may succeed: the log was unreachable or slow. */
function isTransient(error: unknown): boolean {
  return error instanceof MinkError && (error.code === 'Unavailable' || error.code === 'Timeout');
}

/** The typed error a proposer throws for a rejected command; its code is the rejection's wire code. */
export function rejectionError(rejection: Rejection): MinkError {
  return errorOfCode(rejection.code, rejection.message);
}
