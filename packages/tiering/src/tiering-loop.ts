import { LIMITS } from '@mink/config';
import { bucketId, getIn, streamBucketOfLake, type TableRecord } from '@mink/meta';
import { MinkError, SUBJECTS, type TieringRoundAssignment } from '@mink/protocol';
import type { ClusterMember, Logger } from '@mink/runtime';
import { StreamReader } from '@mink/s3stream';
import { requestJson } from '@mink/transport';
import { LAKE_LIMITS, lakeStoreUri, publishLakeHint } from '@mink/lake';
import { sweepAfterCommit } from './lake-sweep';
import { executeTieringRound, type RoundResult } from './round-executor';

type Round = NonNullable<TieringRoundAssignment['round']>;

/** What a worker's rounds have done, for metrics and logs. */
export interface TieringCounts {
  roundsCommitted: number;
  roundsFenced: number;
  roundsFailed: number;
  rowsTiered: number;
  /** Lake objects the orphan sweeps after this worker's commits deleted. */
  orphansDeleted: number;
}

export interface TieringLoopOptions {
  /** How old an unreferenced lake object must be before a sweep deletes it; LAKE_LIMITS.orphanGraceMs when absent. */
  orphanGraceMs?: number;
}

/**
 * The loop of a tiering worker (docs/architecture.md §9, docs/ownership.md §5 ("Coordinator failover")): asks the coordinator lease holder
 * for a due round, tiers its ranges into the table's Iceberg lake while heartbeating, and commits the round
 * through the metadata log with the coordinator and tiering epochs it was given. A heartbeat refused
 * (another worker has the round now, or another coordinator holds the lease) stops the round before its
 * commit; a commit refused by the log changes nothing, and the round is tiered again by whoever takes it
 * next. The Iceberg metadata a round writes is named by its tiering epoch and becomes current only through
 * its log commit, so a fenced round's files are never read.
 *
 * After a round's log commit (and its version hint) the worker sweeps the table's lake for orphans
 * (lake-sweep.ts): objects no kept snapshot or kept metadata file names, older than the grace period, such
 * as a fenced round's files and the files copy-on-write rounds replaced once their snapshots expired. The
 * sweep is planned on the metadata the round committed, bounded per round, and never fails the round.
 */
export class TieringLoop {
  private running = false;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  readonly counts: TieringCounts = { roundsCommitted: 0, roundsFenced: 0, roundsFailed: 0, rowsTiered: 0, orphansDeleted: 0 };
  private readonly orphanGraceMs: number;
  /** The URI the lake records locations under (`s3://{bucket}/{prefix}`); a bad prefix fails the worker at start. */
  private readonly storeUri: string;
  /** Reads committed batches straight from the object store through this worker's view: the leaders are not involved. */
  private readonly reader: StreamReader;

  constructor(
    private readonly member: ClusterMember,
    private readonly logger: Logger,
    private readonly workerId: string,
    options: TieringLoopOptions = {},
  ) {
    this.orphanGraceMs = options.orphanGraceMs ?? LAKE_LIMITS.orphanGraceMs;
    this.storeUri = lakeStoreUri(member.objectStore.bucket, member.objectStore.prefix);
    this.reader = new StreamReader({ store: member.objectStore, meta: member.store, cacheBytesMax: 0, prefetchWindowsMax: 0 });
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loop;
  }

  private async run(): Promise<void> {
    while (this.running) {
      let round: Round | null = null;
      try {
        const assignment = await requestJson<TieringRoundAssignment>(this.member.nc, SUBJECTS.coordinatorRpc, { op: 'takeTieringRound', worker: this.workerId }, LIMITS.viewQueryTimeoutMs);
        round = assignment.round;
      } catch (error) {
        // No coordinator holds the lease right now, or it is busy: ask again after the pause.
        this.logger.debug({ err: error }, 'no tiering round taken');
      }
      if (round === null) {
        await this.pause(LIMITS.tieringPollMs);
        continue;
      }
      await this.tier(round);
    }
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** Runs one round to its commit, or to the point where it learns the round is no longer its own. */
  private async tier(round: Round): Promise<void> {
    const fields = { table: round.table, tieringEpoch: round.tieringEpoch, coordinatorEpoch: round.coordinatorEpoch };
    this.logger.info({ ...fields, buckets: round.ranges.length }, 'tiering round taken');
    const heartbeat = new RoundHeartbeat(() => requestJson(this.member.nc, SUBJECTS.coordinatorRpc, { op: 'tieringHeartbeat', ...fields }, LIMITS.viewQueryTimeoutMs), this.member.config.leaseTtlMs);
    heartbeat.start();
    let result: RoundResult;
    let table: TableRecord;
    try {
      table = await this.tableOfRound(round);
      result = await executeTieringRound(
        {
          store: this.member.objectStore,
          storeUri: this.storeUri,
          table,
          // A round's buckets are lake buckets: for a partitioned table, one bucket of one partition each.
          read: async (lakeBucket, fromOffset) => {
            // checkTieringRound has refused any bucket that is not a lake bucket of the table.
            const { partition, bucket } = streamBucketOfLake(table, lakeBucket)!;
            return this.reader.read(bucketId(table.id, partition, bucket), fromOffset, Number.MAX_SAFE_INTEGER);
          },
          heartbeat: () => heartbeat.check(),
          log: (message, details) => this.logger.info({ ...fields, ...details }, message),
        },
        { tableId: round.tableId, tableName: round.table, tieringEpoch: round.tieringEpoch, ranges: round.ranges, metadataKey: round.metadataKey },
      );
      await heartbeat.check();
    } catch (error) {
      heartbeat.stop();
      if (isFenced(error)) {
        this.counts.roundsFenced++;
        this.logger.warn({ ...fields, err: error }, 'tiering round fenced before its commit');
      } else {
        this.counts.roundsFailed++;
        this.logger.error({ ...fields, err: error }, 'tiering round failed');
        // A round that fails the same way at once would spin; the coordinator gives it out again after its timeout.
        await this.pause(LIMITS.tieringPollMs);
      }
      return;
    }
    heartbeat.stop();
    const outcome = await this.member.store
      .propose({ type: 'CommitTieringRound', coordinatorEpoch: round.coordinatorEpoch, table: round.table, tableId: round.tableId, tieringEpoch: round.tieringEpoch, metadataKey: result.metadataKey, snapshotId: String(result.snapshotId), atMs: Date.now() })
      .catch((error: unknown) => ({ ok: false as const, rejection: { code: 'Unavailable', message: String(error) } }));
    if (!outcome.ok) {
      // Refused, or unknown: the view says whether it applied; if not, the next round tiers the ranges again.
      this.counts.roundsFenced++;
      this.logger.warn({ ...fields, rejection: outcome.rejection }, 'tiering round not committed');
      return;
    }
    this.counts.roundsCommitted++;
    this.counts.rowsTiered += result.rows;
    // Only now may readers outside mink find the new metadata; a lost hint is written by the next round.
    await publishLakeHint(this.member.objectStore, result.metadataKey).catch((error: unknown) => this.logger.warn({ ...fields, err: error }, 'version hint not written'));
    this.logger.info(
      { ...fields, rows: result.rows, bytes: result.bytes, files: result.files, removedFiles: result.removedFiles, compactedFiles: result.compactedFiles, compactedRows: result.compactedRows, metadataKey: result.metadataKey },
      'tiering round committed',
    );
    const sweep = await sweepAfterCommit(
      { store: this.member.objectStore, storeUri: this.storeUri, logger: this.logger, fields },
      { table, metadataKey: result.metadataKey, nowMs: Date.now(), graceMs: this.orphanGraceMs },
    );
    this.counts.orphansDeleted += sweep?.deleted ?? 0;
  }

  /** The round's table once this worker's view has applied the round's start (and so every commit it tiers). */
  private async tableOfRound(round: Round): Promise<TableRecord> {
    const deadline = Date.now() + LIMITS.proposeTimeoutMs;
    for (;;) {
      const table = getIn(this.member.view.tables, round.table);
      if (!table || table.id !== round.tableId) throw new MinkError('Fenced', `table '${round.table}' with id ${round.tableId} is gone`);
      const current = table.lake?.round?.epoch ?? 0;
      if (current === round.tieringEpoch) return table;
      if (current > round.tieringEpoch || (table.lake?.tieringEpoch ?? 0) > round.tieringEpoch) {
        throw new MinkError('Fenced', `round ${round.tieringEpoch} of '${round.table}' was replaced by round ${table.lake?.tieringEpoch ?? current}`);
      }
      if (Date.now() > deadline) throw new MinkError('Unavailable', `this worker's view has not caught up with round ${round.tieringEpoch} of '${round.table}'`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

/**
 * Heartbeats a round every third of the lease TTL in the background; `check` throws once a heartbeat was
 * refused (the round is fenced) and otherwise returns at once, so the executor can call it as often as it likes.
 */
class RoundHeartbeat {
  private timer: NodeJS.Timeout | null = null;
  private refusal: Error | null = null;

  constructor(
    private readonly send: () => Promise<unknown>,
    private readonly leaseTtlMs: number,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.beat(), Math.max(100, Math.floor(this.leaseTtlMs / 3)));
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  async check(): Promise<void> {
    if (this.refusal) throw this.refusal;
  }

  private async beat(): Promise<void> {
    try {
      await this.send();
    } catch (error) {
      // Only a refusal fences the round; a lost heartbeat is retried on the next beat.
      if (isFenced(error)) this.refusal = error as Error;
    }
  }
}

function isFenced(error: unknown): boolean {
  return error instanceof MinkError && error.code === 'Fenced';
}
