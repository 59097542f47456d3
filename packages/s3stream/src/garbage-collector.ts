import { LIMITS } from '@mink/config';
import { entriesIn, type ForgetObjects, type Outcome } from '@mink/meta';
import type { ObjectStore } from './object-store';
import { PeriodicRounds } from './periodic-rounds';
import { SILENT_LOGGER, type Clock, type MaintenanceLogger, type MetaAccess } from './ports';

export interface GarbageCollectorOptions {
  store: ObjectStore;
  meta: MetaAccess;
  clock: Clock;
  /** How long an object stays after its last slice was released; `LIMITS.garbageGraceMs` when absent. */
  graceMs?: number;
  logger?: MaintenanceLogger;
  /** Told how many objects each ForgetObjects removed from storage and the view, and their bytes as the view knew them (metrics). */
  onDeleted?: (objects: number, bytes: number) => void;
}

/**
 * Deletes the objects the view lists as garbage (docs/architecture.md §7): WAL objects every stream has compacted away,
 * stream objects replaced or dropped. An object is deleted only once `graceMs` has passed since it lost its
 * last slice, so a reader that found it through an older view can finish its GETs; then the keys are
 * forgotten with `ForgetObjects`.
 *
 * Ordering: keys are deleted from the store before they are forgotten, in batches of
 * `LIMITS.forgetObjectsKeysMax`. If the collector stops between the two, the keys stay in the garbage and
 * the next round deletes them again, which the store allows. The state machine refuses any commit naming an
 * object in the garbage, so nothing deleted here can be referenced again. Several collectors may run at
 * once (a lease changing hands): deletes and forgets are both idempotent.
 *
 * Failures never escape a round: a failed delete or a forget with an unknown outcome is logged and the
 * round stops; the next round starts over from the view.
 */
export class GarbageCollector {
  private readonly store: ObjectStore;
  private readonly meta: MetaAccess;
  private readonly clock: Clock;
  private readonly graceMs: number;
  private readonly logger: MaintenanceLogger;
  private readonly onDeleted: ((objects: number, bytes: number) => void) | undefined;
  private readonly rounds: PeriodicRounds<number>;

  constructor(options: GarbageCollectorOptions) {
    this.store = options.store;
    this.meta = options.meta;
    this.clock = options.clock;
    this.graceMs = options.graceMs ?? LIMITS.garbageGraceMs;
    this.logger = options.logger ?? SILENT_LOGGER;
    this.onDeleted = options.onDeleted;
    if (!(this.graceMs >= 0)) throw new Error(`GarbageCollector needs graceMs >= 0 (got ${this.graceMs})`);
    this.rounds = new PeriodicRounds(
      () => this.runRound(),
      (error) => this.logger.warn({ error: describe(error) }, 'garbage collection round failed'),
    );
  }

  /**
   * Deletes and forgets every object whose grace period is over; resolves with how many were forgotten. A
   * call while a round is in flight joins that round.
   */
  collectOnce(): Promise<number> {
    return this.rounds.runOnce();
  }

  /** Runs a round every `intervalMs` in the background until `stop`. */
  start(intervalMs: number): void {
    this.rounds.start(intervalMs);
  }

  /** Stops the background rounds and resolves once the round in flight has finished. */
  async stop(): Promise<void> {
    await this.rounds.stop();
  }

  private async runRound(): Promise<number> {
    const nowMs = this.clock.nowMs();
    const dueRecords = [...entriesIn(this.meta.view.garbage)].filter(([, record]) => record.unreferencedAtMs + this.graceMs <= nowMs);
    const bytesOf = new Map(dueRecords.map(([key, record]) => [key, record.bytes ?? 0]));
    const due = dueRecords.map(([key]) => key).sort();
    let forgotten = 0;
    for (let start = 0; start < due.length; start += LIMITS.forgetObjectsKeysMax) {
      const keys = due.slice(start, start + LIMITS.forgetObjectsKeysMax);
      try {
        await this.store.delete(keys);
      } catch (error) {
        this.logger.warn({ keys: keys.length, first: keys[0], error: describe(error) }, 'garbage collection could not delete objects; they stay in the garbage');
        break;
      }
      const command: ForgetObjects = { type: 'ForgetObjects', keys };
      let outcome: Outcome;
      try {
        outcome = await this.meta.propose(command);
      } catch (error) {
        // The keys are deleted; if the forget did not apply, the next round deletes them again and forgets them.
        this.logger.warn({ keys: keys.length, first: keys[0], error: describe(error) }, 'the outcome of ForgetObjects is unknown');
        break;
      }
      if (!outcome.ok) {
        // Only a malformed command is rejected, which would be a bug here; the keys stay in the garbage.
        this.logger.warn({ keys: keys.length, code: outcome.rejection.code, reason: outcome.rejection.message }, 'ForgetObjects was rejected');
        break;
      }
      forgotten += keys.length;
      this.onDeleted?.(keys.length, keys.reduce((sum, key) => sum + (bytesOf.get(key) ?? 0), 0));
    }
    return forgotten;
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
