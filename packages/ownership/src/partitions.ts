/**
 * The partition lifecycle of partitioned tables (issue 11 item 6; docs/ownership.md §2.1 ("Table or partition created")):
 * which partitions the coordinator lease holder creates ahead of time and which it drops once they are
 * older than the table's `retain`. Pure functions of a table (or the view) and the holder's clock; the
 * coordinator proposes the plan as CreatePartition and DropPartition entries, and the log refuses whatever
 * another round already did.
 */
import { PARTITION_INSTANT_MAX_MS, PARTITION_PRECREATE_DEFAULT, lakeBucketOf, ownRecord, partitionNameAt, partitionStartMs, partitionUnitMs, valuesIn, type TableRecord, type View } from '@mink/meta';

/**
 * Whether the lake holds records of a partition of this name: one dropped after it was tiered, whose lake
 * buckets and lake offsets stay (the lake keeps a dropped partition's data). It is never created again,
 * since its new stream would start at offset 0 below the offsets its lake buckets are tiered up to.
 */
function inLake(table: TableRecord, name: string): boolean {
  const offsets = table.lake?.offsets;
  if (offsets === undefined) return false;
  for (let bucket = 0; bucket < table.buckets; bucket++) {
    const lakeBucket = lakeBucketOf(table, name, bucket);
    if (lakeBucket !== null && (ownRecord(offsets, String(lakeBucket)) ?? 0) > 0) return true;
  }
  return false;
}

/** The partitions of one table to create and to drop now, each list in time order. */
export interface PartitionPlan {
  create: string[];
  drop: string[];
}

/**
 * What one table needs at `nowMs` (the lease holder's clock, epoch ms):
 *
 * - create: the partition holding `nowMs` and the next `partition.precreate` (PARTITION_PRECREATE_DEFAULT
 *   when absent) that do not exist, oldest first, never past the last instant a name can carry;
 * - drop: with `partition.retain` set, every existing partition whose whole time range lies before the
 *   newest `retain` partitions up to now, oldest first. The partition holding `nowMs` and the `retain - 1`
 *   before it are kept, as is every later one (created ahead, or by a clock that was ahead). Without
 *   `retain` nothing is dropped.
 *
 * A partition whose name is not a name of the table's unit (see `partitionStartMs`) is left alone: its
 * time is unknown. A dropped partition the lake holds records of is not created again (see `inLake`). An unpartitioned table needs nothing. `nowMs` must be an instant a partition name can
 * carry (1970 to 9999); anything else is a broken invariant of the caller and throws.
 */
export function planPartitions(table: TableRecord, nowMs: number): PartitionPlan {
  const spec = table.partition;
  if (!spec) return { create: [], drop: [] };
  const unitMs = partitionUnitMs(spec.unit);
  const currentStartMs = partitionStartMs(spec.unit, partitionNameAt(spec.unit, nowMs));
  if (currentStartMs === null) throw new Error(`invariant broken: the partition name of ${nowMs} ms does not read back`);

  const existing = new Set(table.partitions);
  const create: string[] = [];
  const precreate = spec.precreate ?? PARTITION_PRECREATE_DEFAULT;
  for (let ahead = 0; ahead <= precreate; ahead++) {
    const startMs = currentStartMs + ahead * unitMs;
    if (startMs > PARTITION_INSTANT_MAX_MS) break;
    const name = partitionNameAt(spec.unit, startMs);
    if (!existing.has(name) && !inLake(table, name)) create.push(name);
  }

  if (spec.retain === undefined) return { create, drop: [] };
  const keptFromMs = currentStartMs - (spec.retain - 1) * unitMs;
  const drop = table.partitions
    .map((name) => ({ name, startMs: partitionStartMs(spec.unit, name) }))
    .filter((partition): partition is { name: string; startMs: number } => partition.startMs !== null && partition.startMs < keptFromMs)
    .sort((a, b) => a.startMs - b.startMs)
    .map((partition) => partition.name);
  return { create, drop };
}

/** One partition to create or drop, with the table it belongs to. */
export interface PartitionAction {
  action: 'create' | 'drop';
  table: string;
  tableId: number;
  partition: string;
}

/**
 * Every partitioned table's `planPartitions` at `nowMs`, as one list of at most `actionsMax` actions (a
 * round's bound; the rest come again in the next round's plan). Creates come before drops, since a missing
 * partition refuses writes while a partition kept too long only costs storage; within each, partitions go
 * by start time, then table id, so the current partition of every table is created before any table's
 * partitions ahead. The order depends only on the view and `nowMs`.
 */
export function planPartitionActions(view: View, nowMs: number, actionsMax: number): PartitionAction[] {
  if (!Number.isSafeInteger(actionsMax) || actionsMax < 0) throw new Error(`invariant broken: ${actionsMax} actions per round is not a non-negative whole number`);
  const creates: Timed[] = [];
  const drops: Timed[] = [];
  for (const table of valuesIn(view.tables)) {
    if (!table.partition) continue;
    const plan = planPartitions(table, nowMs);
    const unit = table.partition.unit;
    const timed = (action: PartitionAction['action'], partition: string): Timed => ({
      action: { action, table: table.name, tableId: table.id, partition },
      startMs: partitionStartMs(unit, partition)!,
    });
    for (const partition of plan.create) creates.push(timed('create', partition));
    for (const partition of plan.drop) drops.push(timed('drop', partition));
  }
  const byTime = (a: Timed, b: Timed) => a.startMs - b.startMs || a.action.tableId - b.action.tableId;
  return [...creates.sort(byTime), ...drops.sort(byTime)].slice(0, actionsMax).map((timed) => timed.action);
}

interface Timed {
  action: PartitionAction;
  startMs: number;
}
