import { getIn, partitionStartMs, partitionUnitMs, type Command, type CreatePartition, type Outcome, type View } from '@mink/meta';
import { NoLiveNodesError, assignBuckets, planPartitionActions, type PartitionAction } from '@mink/ownership';

/** The few log methods the loop uses (a pino logger has them). */
export interface PartitionLogger {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
  debug(fields: Record<string, unknown>, message: string): void;
}

/** What the partition lifecycle loop needs from the coordinator replica it runs in. */
export interface PartitionLifecyclePorts {
  /** The metadata view as this replica has applied it. */
  view(): View;
  /** The coordinator epoch to propose under, or null while this replica does not hold the lease. */
  actingEpoch(): number | null;
  /** Data nodes live now, to lead the buckets of new partitions. */
  liveNodes(): ReadonlySet<string>;
  /** Appends a command and resolves with its outcome; a refusal is an outcome, not an error. */
  propose(command: Command): Promise<Outcome>;
  /** The clock partitions are planned with: the wall clock moved by MINK_PARTITION_CLOCK_OFFSET_MS. */
  planningNowMs(): number;
  /** The wall clock, stamped on drops: it starts the grace period of the objects they release. */
  wallNowMs(): number;
  /** Called once per partition created or dropped by this loop. */
  changed(action: PartitionAction['action']): void;
  logger: PartitionLogger;
}

/**
 * The coordinator lease holder's partition lifecycle (issue 11 item 6): each round plans with
 * `planPartitionActions` (the current partition and the next `precreate` of every partitioned table
 * created, partitions older than `retain` dropped, at most `actionsPerRoundMax` per round) and proposes one
 * CreatePartition or DropPartition per action, under the coordinator epoch the round started with. The
 * buckets of a new partition are led in the create itself (`leaders`), by the assignment rule (docs/ownership.md §2.1): bucket i on live
 * node (i + start) % n; with no live node they start leaderless and the tick's orphan re-leading leads them.
 *
 * Rounds never overlap. A round asked for while one runs (a table was just created) runs right after it.
 * A round does nothing on a replica that does not hold the lease, and stops at the first action after the
 * lease was lost or its epoch was fenced: every command carries the round's coordinator epoch, so the log
 * refuses what a deposed holder still sends. A refusal because another round already did the same
 * (Conflict: the partition exists; NotFound: it is gone) is normal.
 */
export class PartitionLifecycle {
  private timer: NodeJS.Timeout | null = null;
  private inFlight: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  constructor(
    private readonly ports: PartitionLifecyclePorts,
    private readonly actionsPerRoundMax: number,
  ) {}

  /** Runs a round every `intervalMs` (on the lease holder only: rounds on other replicas do nothing). */
  start(intervalMs: number): void {
    if (!(intervalMs > 0)) throw new Error(`the partition loop needs a positive interval, not ${intervalMs}`);
    if (this.timer !== null) throw new Error('the partition loop is started once');
    this.timer = setInterval(() => void this.requestRound(), intervalMs);
  }

  /** Stops the schedule and waits for the round in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.inFlight;
  }

  /**
   * Runs a round now, or one more right after the round in flight (which may have planned before the
   * change that asked for this one); resolves when that round is done. Never rejects.
   */
  requestRound(): Promise<void> {
    if (this.inFlight !== null) {
      this.again = true;
      return this.inFlight;
    }
    const rounds = async () => {
      do {
        this.again = false;
        await this.round();
      } while (this.again && !this.stopped);
    };
    this.inFlight = rounds().finally(() => {
      this.inFlight = null;
    });
    return this.inFlight;
  }

  private async round(): Promise<void> {
    const epoch = this.ports.actingEpoch();
    if (epoch === null || this.stopped) return;
    const { logger } = this.ports;
    try {
      const nowMs = this.ports.planningNowMs();
      for (const action of planPartitionActions(this.ports.view(), nowMs, this.actionsPerRoundMax)) {
        if (this.ports.actingEpoch() !== epoch || this.stopped) return;
        const command = this.commandOf(action, epoch);
        if (command === null) continue;
        const outcome = await this.ports.propose(command);
        if (outcome.ok) {
          this.ports.changed(action.action);
          const leaders = command.type === 'CreatePartition' ? command.leaders : undefined;
          logger.info({ ...action, coordinatorEpoch: epoch, ...(leaders ? { leaders } : {}) }, action.action === 'create' ? 'partition created' : 'partition dropped');
          continue;
        }
        const { code, message } = outcome.rejection;
        if (code === 'Fenced') {
          logger.warn({ ...action, coordinatorEpoch: epoch, rejection: message }, 'partition round fenced: this replica is no longer the coordinator');
          return;
        }
        // Another round (or a drop of the table) got there first; the next plan starts from the view as it is now.
        const expected = (action.action === 'create' && code === 'Conflict') || code === 'NotFound';
        if (expected) logger.debug({ ...action, rejection: message }, 'partition already as planned');
        else logger.warn({ ...action, code, rejection: message }, 'partition change refused');
      }
    } catch (error) {
      logger.warn({ err: error }, 'partition round failed');
    }
  }

  /** The command for `action`, or null when its table changed since the plan (the next round plans again). */
  private commandOf(action: PartitionAction, coordinatorEpoch: number): Command | null {
    if (action.action === 'drop') {
      return { type: 'DropPartition', coordinatorEpoch, table: action.table, partition: action.partition, atMs: this.ports.wallNowMs() };
    }
    const table = getIn(this.ports.view().tables, action.table);
    if (!table?.partition || table.id !== action.tableId) return null;
    const command: CreatePartition = { type: 'CreatePartition', coordinatorEpoch, table: action.table, partition: action.partition };
    // docs/ownership.md §2.1 ("Table or partition created"): bucket i on live node (i + start) % n. The start counts the
    // partition's time in units, plus the table id, so consecutive partitions of a table, and the partitions
    // of tables created together, begin on different nodes.
    const unit = table.partition.unit;
    const start = Math.floor(partitionStartMs(unit, action.partition)! / partitionUnitMs(unit)) + table.id;
    try {
      command.leaders = assignBuckets(table.buckets, [...this.ports.liveNodes()], start);
    } catch (error) {
      if (!(error instanceof NoLiveNodesError)) throw error;
    }
    return command;
  }
}
