/**
 * Routing of rows and keys to the partitions of a partitioned table (docs/architecture.md §8.5): a row belongs to the
 * partition its partition column's value names (`partitionOfValue` of @mink/meta), and within it to the
 * bucket of its bucket key, as in an unpartitioned table. Pure, so the client and the data node's
 * table-addressed writes split calls the same way and tests need no cluster.
 */
import { partitionOfValue, partitionStartMs, partitionUnitMs, type ColumnType, type PartitionSpec } from '@mink/meta';
import { InvalidArgumentError } from '@mink/protocol';
import { bucketOfRow, describeValue, fieldOf, type Row } from '@mink/records';

/** One bucket of a table: bucket `bucket` of partition `partition`, or of the table itself when `partition` is null. */
export interface BucketTarget {
  partition: string | null;
  bucket: number;
}

/** A table's partitioning as routing needs it: its name and columns, and the spec when it is partitioned. */
export interface Partitioning {
  table: string;
  columns: readonly { name: string; type: string }[];
  partition?: PartitionSpec;
}

/** Existing partition names an error message lists at most (the newest), so a table with many stays readable. */
const PARTITIONS_NAMED_MAX = 5;

/** A key for maps of per-bucket state: the bucket number alone for an unpartitioned table, else `partition.bucket`. */
export function targetKeyOf(target: BucketTarget): string {
  return target.partition === null ? String(target.bucket) : `${target.partition}.${target.bucket}`;
}

/**
 * The partition each item belongs to, by position, from its canonical partition column value; null for
 * every item of an unpartitioned table. Throws InvalidArgumentError naming the item (`what` and its index)
 * and why its value names no partition.
 */
export function partitionsOfItems(partitioning: Partitioning, items: readonly Row[], what: string): (string | null)[] {
  const spec = partitioning.partition;
  if (!spec) return items.map(() => null);
  const type = partitioning.columns.find((column) => column.name === spec.column)?.type;
  // The schema keeps the partition column among the columns, so a route without it is broken.
  if (type === undefined) throw new Error(`partition column '${spec.column}' is not a column of table '${partitioning.table}'`);
  // The rows of a call mostly share a few partitions: each is named once. Instants of one UTC hour (day)
  // share their index of unit-long steps from the epoch, as epoch milliseconds count no leap seconds.
  const unitMs = partitionUnitMs(spec.unit);
  const named = new Map<unknown, string>();
  return items.map((item, index) => {
    const value = fieldOf(item, spec.column);
    const memoKey = typeof value === 'number' ? Math.floor(value / unitMs) : value;
    const known = named.get(memoKey);
    if (known !== undefined) return known;
    const found = partitionOfValue(spec, type as ColumnType, value);
    if ('refused' in found) throw new InvalidArgumentError(`${what} ${index} of table '${partitioning.table}': ${found.refused}`);
    named.set(memoKey, found.partition);
    return found.partition;
  });
}

/** One bucket's share of a call: the bucket, and the positions of the items that go to it, in increasing order. */
export interface TargetIndexes {
  target: BucketTarget;
  indexes: number[];
}

/**
 * The positions of `items` grouped by the bucket each goes to: its partition (`partitions[i]`, as
 * `partitionsOfItems` gives them), then its bucket by the bucket key, or, for a table without bucket key,
 * bucket `spread % buckets` for all of them (see `splitByBucket` of @mink/records). Partitions come in
 * the order of their first item, and the buckets of each in the order of their first item in it. Items of
 * a partition in `skipped` are left out.
 */
export function indexesByTarget(
  items: readonly Row[],
  partitions: readonly (string | null)[],
  bucketing: { bucketKey: string[]; buckets: number },
  spread: number,
  skipped: readonly string[] = [],
): TargetIndexes[] {
  const { bucketKey, buckets } = bucketing;
  // The double modulo keeps a negative spread in range.
  const spreadBucket = ((spread % buckets) + buckets) % buckets;
  return groupByTarget(
    items.length,
    (index) => {
      const partition = partitions[index]!;
      return partition !== null && skipped.includes(partition) ? undefined : partition;
    },
    (index) => (bucketKey.length === 0 ? spreadBucket : bucketOfRow(items[index]!, bucketKey, buckets)),
  );
}

/**
 * The rows of a batch of an unpartitioned table grouped by their bucket (`rowBuckets[i]`, as
 * `bucketsOfBatch` of @mink/records gives them), in the order of their first row.
 */
export function indexesByBucket(rowBuckets: ArrayLike<number>): TargetIndexes[] {
  return groupByTarget(
    rowBuckets.length,
    () => null,
    (index) => rowBuckets[index]!,
  );
}

/**
 * Positions 0 … count − 1 grouped by partition (`partitionOf`; undefined leaves a position out), then by
 * bucket (`bucketOf`, asked only for positions kept): partitions in the order of their first position, the
 * buckets of each in the order of their first position in it, positions in increasing order.
 */
function groupByTarget(count: number, partitionOf: (index: number) => string | null | undefined, bucketOf: (index: number) => number): TargetIndexes[] {
  const byPartition = new Map<string | null, Map<number, TargetIndexes>>();
  for (let index = 0; index < count; index++) {
    const partition = partitionOf(index);
    if (partition === undefined) continue;
    let byBucket = byPartition.get(partition);
    if (byBucket === undefined) byPartition.set(partition, (byBucket = new Map()));
    const bucket = bucketOf(index);
    const group = byBucket.get(bucket);
    if (group === undefined) byBucket.set(bucket, { target: { partition, bucket }, indexes: [index] });
    else group.indexes.push(index);
  }
  return [...byPartition.values()].flatMap((byBucket) => [...byBucket.values()]);
}

/** The partitions among `wanted` (null, an unpartitioned table, always exists) that `existing` does not hold, in order. */
export function missingPartitions(wanted: Iterable<string | null>, existing: readonly string[]): string[] {
  const live = new Set(existing);
  return [...wanted].filter((partition): partition is string => partition !== null && !live.has(partition));
}

/**
 * The error of a write with rows (or keys) of a partition that does not exist: not created yet (the lease
 * holder creates partitions ahead of time, `precreate` of them) or dropped after `retain`. Names the
 * partition, the first item of it when known, the table, and the newest partitions the table has.
 */
export function missingPartitionError(table: string, missing: string, existing: readonly string[], item?: { what: string; index: number }): InvalidArgumentError {
  const newest = existing.slice(-PARTITIONS_NAMED_MAX);
  const named = newest.map((name) => `'${name}'`).join(', ');
  let has: string;
  if (existing.length === 0) has = 'it has no partitions yet';
  else if (existing.length === 1) has = `its partition is ${named}`;
  else if (newest.length < existing.length) has = `its newest ${newest.length} of ${existing.length} partitions are ${named}`;
  else has = `its partitions are ${named}`;
  const belongs = item === undefined ? '' : `${item.what} ${item.index} belongs to it; `;
  return new InvalidArgumentError(`partition '${missing}' of table '${table}' does not exist (${belongs}it is not created yet or was dropped): ${has}`);
}

/**
 * The partition a scan names, checked against the table: required for a partitioned table (a partition
 * name of its unit), refused for an unpartitioned one. Null for an unpartitioned table.
 */
export function scanPartitionOf(partitioning: Partitioning, partition: unknown): string | null {
  const spec = partitioning.partition;
  if (!spec) {
    if (partition !== undefined) throw new InvalidArgumentError(`table '${partitioning.table}' is not partitioned: a scan of it names no partition, got ${describeValue(partition)}`);
    return null;
  }
  if (partition === undefined) throw new InvalidArgumentError(`table '${partitioning.table}' is partitioned by '${spec.column}': a scan must name a partition`);
  if (typeof partition !== 'string' || partitionStartMs(spec.unit, partition) === null) {
    throw new InvalidArgumentError(
      `partition must be a partition name of unit '${spec.unit}' (UTC ${spec.unit === 'hour' ? 'yyyyMMddHH' : 'yyyyMMdd'}) of table '${partitioning.table}', got ${describeValue(partition)}`,
    );
  }
  return partition;
}
