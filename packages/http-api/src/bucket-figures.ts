import { bucketId, isWalSlice, lakeBucketOf, type BucketRecord, type TableRecord } from '@mink/meta';
import type { BucketServingState } from '@mink/protocol';

/**
 * What `GET /v1/cluster` tells of one bucket's data, from the metadata log alone (no node is asked):
 * the offsets its stream still stores, the bytes those records take in object storage (the byte ranges
 * of the stream's slices, in WAL or stream objects), how many of its slices still live in WAL objects
 * (compaction moves a stream's once it has `LIMITS.compactionSlicesMin` of them), and, once the table tiers
 * into a lake, the offset
 * below which the lake holds every record of the bucket.
 * A reader derives rates (records per second) from two of these taken at known times.
 */
export interface BucketFigures {
  startOffset: number;
  endOffset: number;
  bytes: number;
  /** Slices of the stream in WAL objects, not yet moved into stream objects by compaction. */
  walSlices: number;
  /** Present only when the table has a lake; 0 until a round commits this bucket's records. */
  lakeOffset?: number;
}

export function bucketFiguresOf(table: Pick<TableRecord, 'partition' | 'buckets' | 'lake'>, bucket: Pick<BucketRecord, 'partition' | 'bucket' | 'stream'>): BucketFigures {
  let bytes = 0;
  let walSlices = 0;
  for (const slice of bucket.stream.history ?? []) bytes += slice.length;
  for (const slice of bucket.stream.slices) {
    bytes += slice.length;
    if (isWalSlice(slice)) walSlices++;
  }
  const figures: BucketFigures = { startOffset: bucket.stream.startOffset, endOffset: bucket.stream.endOffset, bytes, walSlices };
  if (table.lake) {
    const lakeBucket = lakeBucketOf(table, bucket.partition, bucket.bucket);
    figures.lakeOffset = lakeBucket === null ? 0 : (table.lake.offsets[String(lakeBucket)] ?? 0);
  }
  return figures;
}

/**
 * The state `GET /v1/cluster` gives a bucket: `unavailable` when its leader is not live or did not answer
 * the status query, else what the leader reports for it (`states`, by node and bucket id), `opening` when
 * the leader does not list it yet.
 */
export function servingState(leader: string | null, live: ReadonlySet<string>, states: ReadonlyMap<string, ReadonlyMap<string, BucketServingState>>, bucketId: string): BucketServingState {
  if (!leader || !live.has(leader)) return 'unavailable';
  const ofLeader = states.get(leader);
  if (!ofLeader) return 'unavailable';
  return ofLeader.get(bucketId) ?? 'opening';
}

/**
 * What `GET /v1/cluster` tells of one table's data, summed over its buckets (of every partition): what a
 * poller of the summary (`?buckets=false`) needs for the records of each table and their rate, without the
 * per-bucket list. `endOffset` is the sum of the buckets' end offsets (every record the table ever
 * committed), `bytes` what the stored records take, `lakeOffset` (only for a table with a lake) the sum of
 * the buckets' lake offsets and `tieredAt` when its last tiering round committed (null before the first).
 */
export interface TableTotals {
  table: string;
  buckets: number;
  endOffset: number;
  bytes: number;
  lakeOffset?: number;
  tieredAt?: string | null;
}

/**
 * What the summary of `GET /v1/cluster` counts, from one pass over every bucket of the view: the buckets each
 * node leads (`load`), how many buckets are in each serving state (servingState, from the nodes' status
 * answers `states`), and the totals of each of `tables` (in their order; a bucket counts for the table of its
 * `tableId`). One pass, because at 100 000 buckets the summary is polled every few seconds by the console
 * and by anyone waiting for buckets to open; looking each table's buckets up by id took a third of it.
 */
export function clusterSummaryOf(
  tables: readonly Pick<TableRecord, 'id' | 'name' | 'partition' | 'buckets' | 'lake'>[],
  buckets: Iterable<Pick<BucketRecord, 'tableId' | 'partition' | 'bucket' | 'leader' | 'stream'>>,
  live: ReadonlySet<string>,
  states: ReadonlyMap<string, ReadonlyMap<string, BucketServingState>>,
): { load: Map<string, number>; bucketStates: Record<BucketServingState, number>; totals: TableTotals[] } {
  const load = new Map<string, number>();
  const bucketStates: Record<BucketServingState, number> = { open: 0, opening: 0, unavailable: 0 };
  const totals = tables.map(
    (table): TableTotals => ({
      table: table.name,
      buckets: 0,
      endOffset: 0,
      bytes: 0,
      ...(table.lake ? { lakeOffset: 0, tieredAt: table.lake.tieredAtMs > 0 ? new Date(table.lake.tieredAtMs).toISOString() : null } : {}),
    }),
  );
  const byTableId = new Map(tables.map((table, index) => [table.id, { table, totals: totals[index]! }]));
  for (const bucket of buckets) {
    if (bucket.leader) load.set(bucket.leader, (load.get(bucket.leader) ?? 0) + 1);
    bucketStates[servingState(bucket.leader, live, states, bucketId(bucket.tableId, bucket.partition, bucket.bucket))] += 1;
    const of = byTableId.get(bucket.tableId);
    if (!of) continue;
    const figures = bucketFiguresOf(of.table, bucket);
    of.totals.buckets += 1;
    of.totals.endOffset += figures.endOffset;
    of.totals.bytes += figures.bytes;
    if (of.totals.lakeOffset !== undefined) of.totals.lakeOffset += figures.lakeOffset ?? 0;
  }
  return { load, bucketStates, totals };
}
