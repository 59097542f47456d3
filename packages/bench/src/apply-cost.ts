import { performance } from 'node:perf_hooks';
import { LIMITS } from '@mink/config';
import { NO_WRITERS, WRITER_SHARDS, apply, emptyView, shardedFrom, type BucketRecord, type CommitWal, type DataSlice, type View } from '@mink/meta';

/** What one apply-cost measurement found: the mean time one process spends applying one `CommitWal`. */
export interface ApplyCostResult {
  buckets: number;
  liveObjects: number;
  /** Slices each stream held before the timed commits (stream-object slices; each commit adds one to the streams it extends). */
  slicesPerStream: number;
  rangesPerCommit: number;
  /** Idempotent writers each stream remembered before the timed commits. */
  writersPerStream: number;
  commits: number;
  msPerCommitWal: number;
}

/**
 * The cost every process pays per `CommitWal` at a given size of the view (write-path issue, item 4): a
 * view of `buckets` open streams of one node whose streams hold `liveObjects` stream-object slices in
 * all, built directly, then `commits` CommitWals of `rangesPerCommit` ranges applied one after another
 * (each is its own batch, as a steady stream of commits is) with the real `apply`. Pure computation on
 * this process; the first tenth of the commits warms up and is not timed. With `writersPerStream`, each
 * stream starts remembering that many idempotent writers (as a stream written by many short-lived clients
 * does), older than the writers of the timed commits.
 */
export function measureApplyCost(buckets: number, liveObjects: number, commits = 300, rangesPerCommit = 8, writersPerStream = 0): ApplyCostResult {
  const slicesPerStream = Math.max(1, Math.floor(liveObjects / buckets));
  // Writers whose last batches are at offset 0, one map shared by every stream (the view is immutable).
  const remembered =
    writersPerStream === 0
      ? NO_WRITERS
      : shardedFrom(Object.fromEntries(Array.from({ length: writersPerStream }, (_, index) => [`earlier-writer-${index}`, { seq: 0, baseOffset: 0, count: 1 }])), WRITER_SHARDS);
  const objects: Record<string, { references: number }> = {};
  const bucketRecords: Record<string, BucketRecord> = {};
  for (let bucket = 0; bucket < buckets; bucket++) {
    const slices: DataSlice[] = Array.from({ length: slicesPerStream }, (_, index) => ({
      object: `streams/1-_-${bucket}/${index}-${index + 1}-1`,
      startOffset: index,
      endOffset: index + 1,
      position: 0,
      length: 100,
    }));
    for (const slice of slices) objects[slice.object] = { references: 1 };
    bucketRecords[`1//${bucket}`] = {
      tableId: 1,
      table: 'bench',
      partition: null,
      bucket,
      leader: '1',
      leaderEpoch: 1,
      kvSnapshots: [],
      // As compaction leaves a stream (apply.ts): more stream-object slices than the fold bound are its history.
      stream: { state: 'open', epoch: 1, node: '1', nodeEpoch: 1, startOffset: 0, endOffset: slicesPerStream, ...(slices.length > LIMITS.streamSlicesFoldMin ? { history: slices, slices: [] } : { slices }), writers: remembered },
    };
  }
  let view: View = {
    ...emptyView(),
    seq: 1,
    nodes: { '1': { id: '1', epoch: 1, address: 'mink.node.1', kafka: '', http: '' } },
    tables: shardedFrom({ bench: { id: 1, name: 'bench', kind: 'log', columns: [{ name: 'id', type: 'int64' }], primaryKey: [], bucketKey: [], buckets, properties: {}, createdAtMs: 0, partitions: [] } }),
    buckets: shardedFrom(bucketRecords),
    nextTableId: 2,
    objects: shardedFrom(objects),
  };
  const ends = new Map<number, number>();
  const commitOf = (index: number): CommitWal => ({
    type: 'CommitWal',
    nodeId: '1',
    nodeEpoch: 1,
    object: `wal/1/1/${String(index).padStart(12, '0')}`,
    ranges: Array.from({ length: rangesPerCommit }, (_, range) => {
      const bucket = (index * rangesPerCommit + range) % buckets;
      const start = ends.get(bucket) ?? slicesPerStream;
      ends.set(bucket, start + 1);
      return { tableId: 1, partition: null, bucket, streamEpoch: 1, startOffset: start, endOffset: start + 1, position: range * 100, length: 100, writer: { id: `w${range}`, seq: index } };
    }),
  });
  const warmup = Math.ceil(commits / 10);
  let startedMs = 0;
  for (let index = 0; index < warmup + commits; index++) {
    if (index === warmup) startedMs = performance.now();
    const applied = apply(view, view.seq + 1, commitOf(index));
    if (!applied.outcome.ok) throw new Error(`the apply-cost view refused CommitWal ${index}: ${applied.outcome.rejection.message}`);
    view = applied.view;
  }
  return { buckets, liveObjects: view.objects.size, slicesPerStream, rangesPerCommit, writersPerStream, commits, msPerCommitWal: (performance.now() - startedMs) / commits };
}
