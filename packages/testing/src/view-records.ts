import { NO_WRITERS, type BucketRecord, type TableRecord } from '@mink/meta';

/**
 * Records of a metadata view for table tests of the rules that read one (routing, assignment, …): a log
 * table with a `ts` timestamp column, hourly partitioned with `partitions` live when asked, and a bucket
 * record whose stream is closed. Only what the tests vary is a parameter.
 */
export function logTableRecord(id: number, name: string, buckets: number, options: { partitions?: string[] } = {}): TableRecord {
  const partitioned = options.partitions !== undefined;
  return {
    id,
    name,
    kind: 'log',
    columns: [{ name: 'ts', type: 'timestamp' }],
    primaryKey: [],
    bucketKey: [],
    buckets,
    ...(partitioned ? { partition: { column: 'ts', unit: 'hour' as const } } : {}),
    properties: {},
    createdAtMs: 0,
    partitions: options.partitions ?? [],
  };
}

/** The record of bucket `bucket` (of `partition`) of `table`, led by `leader` at `leaderEpoch` (0 when nobody leads it), its stream closed. */
export function bucketRecordOf(table: TableRecord, partition: string | null, bucket: number, leader: string | null, leaderEpoch: number): BucketRecord {
  return {
    tableId: table.id,
    table: table.name,
    partition,
    bucket,
    leader,
    leaderEpoch: leader === null ? 0 : leaderEpoch,
    stream: { state: 'closed', epoch: 0, node: null, nodeEpoch: 0, startOffset: 0, endOffset: 0, slices: [], writers: NO_WRITERS },
    kvSnapshots: [],
  };
}
