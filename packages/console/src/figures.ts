/**
 * What the console derives from the gateway's answers, as pure functions of them (no DOM, no clock, no
 * fetch) so that they are tested on their own: per-table figures and rates from two polls of
 * `GET /v1/cluster` taken at known times, the buckets whose leader changed between two polls, and the
 * text forms of counts, rates and sizes.
 */

/** A node as `GET /v1/cluster` reports it. */
export interface NodeStatus {
  id: string;
  epoch: number;
  live: boolean;
  address: string;
  kafka: string;
  http: string;
  /** Buckets this node leads. */
  buckets: number;
}

/** A bucket as `GET /v1/cluster` reports it. */
export interface BucketStatus {
  table: string;
  partition?: string;
  bucket: number;
  leader: string | null;
  leaderEpoch: number;
  streamEpoch: number;
  state: string;
  startOffset: number;
  endOffset: number;
  bytes: number;
  /** Only for a table with a lake. */
  lakeOffset?: number;
}

/** The body of `GET /v1/cluster`. */
export interface ClusterStatus {
  coordinator: { node: string | null; epoch: number };
  nodes: NodeStatus[];
  buckets: BucketStatus[];
}

/** One poll of `GET /v1/cluster` and when its answer arrived (ms on any clock that does not go back). */
export interface ClusterSample {
  atMs: number;
  status: ClusterStatus;
}

/** A table's figures summed over its buckets (of every partition). */
export interface TableFigures {
  table: string;
  buckets: number;
  /** Records ever committed: the sum of the buckets' end offsets. */
  records: number;
  /** Records committed per second between the two polls; null without an earlier poll that knew the table, or when the sum went down (the table was dropped and created again). */
  recordsPerSecond: number | null;
  /** Bytes the stored records take in object storage. */
  bytes: number;
  /** Sum of the buckets' lake offsets, null for a table without a lake. */
  lakeOffset: number | null;
}

/** The identity of a bucket across polls: table, partition (empty for none) and number. */
export function bucketKey(bucket: Pick<BucketStatus, 'table' | 'partition' | 'bucket'>): string {
  return `${bucket.table}/${bucket.partition ?? ''}/${bucket.bucket}`;
}

/** The per-table figures of `current`, in the order the tables first appear, with rates against `earlier` (null for none). */
export function tableFigures(earlier: ClusterSample | null, current: ClusterSample): TableFigures[] {
  const now = sumByTable(current.status.buckets);
  const before = earlier === null ? new Map<string, TableSums>() : sumByTable(earlier.status.buckets);
  const elapsedSeconds = earlier === null ? 0 : (current.atMs - earlier.atMs) / 1000;
  return [...now.values()].map((sums) => {
    const previous = before.get(sums.table);
    const grown = previous === undefined ? -1 : sums.records - previous.records;
    return {
      table: sums.table,
      buckets: sums.buckets,
      records: sums.records,
      recordsPerSecond: elapsedSeconds > 0 && grown >= 0 ? grown / elapsedSeconds : null,
      bytes: sums.bytes,
      lakeOffset: sums.lakeOffset,
    };
  });
}

interface TableSums {
  table: string;
  buckets: number;
  records: number;
  bytes: number;
  lakeOffset: number | null;
}

function sumByTable(buckets: readonly BucketStatus[]): Map<string, TableSums> {
  const sums = new Map<string, TableSums>();
  for (const bucket of buckets) {
    let table = sums.get(bucket.table);
    if (table === undefined) {
      table = { table: bucket.table, buckets: 0, records: 0, bytes: 0, lakeOffset: null };
      sums.set(bucket.table, table);
    }
    table.buckets += 1;
    table.records += bucket.endOffset;
    table.bytes += bucket.bytes;
    if (bucket.lakeOffset !== undefined) table.lakeOffset = (table.lakeOffset ?? 0) + bucket.lakeOffset;
  }
  return sums;
}

/** The keys of the buckets of `current` whose leader is not the one `earlier` reported (a bucket new in `current` has not moved). */
export function movedBuckets(earlier: ClusterStatus | null, current: ClusterStatus): Set<string> {
  const moved = new Set<string>();
  if (earlier === null) return moved;
  const leaders = new Map(earlier.buckets.map((bucket) => [bucketKey(bucket), bucket.leader]));
  for (const bucket of current.buckets) {
    const key = bucketKey(bucket);
    if (leaders.has(key) && leaders.get(key) !== bucket.leader) moved.add(key);
  }
  return moved;
}

/** A whole count in groups of three digits: 1234567 → "1 234 567" (as the `mink` command prints counts). */
export function formatCount(value: number): string {
  return Math.round(value).toLocaleString('en-US').replace(/,/g, ' ');
}

/** A rate per second, or a dash when there is none yet. */
export function formatRate(perSecond: number | null): string {
  if (perSecond === null) return '–';
  return perSecond > 0 && perSecond < 10 ? `${perSecond.toFixed(1)}/s` : `${formatCount(perSecond)}/s`;
}

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'] as const;

/** A size in binary units, three significant figures from KiB up: 0 → "0 B", 1536 → "1.50 KiB". */
export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  if (unit === 0) return `${value} B`;
  const decimals = value < 10 ? 2 : value < 100 ? 1 : 0;
  return `${value.toFixed(decimals)} ${BYTE_UNITS[unit]}`;
}
