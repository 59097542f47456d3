import { emptyView, shardedFrom, type BucketRecord, type View } from '@mink/meta';
import { bucketsByState } from './cluster-figures';

function bucket(bucket: number, leader: string | null, state: 'open' | 'closed'): BucketRecord {
  return {
    tableId: 1,
    table: 'events',
    partition: null,
    bucket,
    leader,
    leaderEpoch: leader === null ? 0 : 1,
    stream: { state, epoch: 1, node: leader, nodeEpoch: 1, startOffset: 0, endOffset: 0, slices: [] },
    kvSnapshots: [],
  } as unknown as BucketRecord;
}

function viewOf(records: BucketRecord[]): View {
  return { ...emptyView(), buckets: shardedFrom(Object.fromEntries(records.map((record) => [`1/${record.bucket}`, record]))) };
}

describe('bucketsByState', () => {
  it('counts open, closed, unled buckets and those led by a node not seen live', () => {
    const view = viewOf([bucket(0, 'a', 'open'), bucket(1, 'a', 'closed'), bucket(2, null, 'closed'), bucket(3, 'b', 'open'), bucket(4, 'b', 'closed'), bucket(5, 'a', 'open')]);
    expect(bucketsByState(view, new Set(['a']))).toEqual({ open: 2, closed: 1, unled: 1, leader_dead: 2 });
  });

  it('is all zeros for an empty view', () => {
    expect(bucketsByState(emptyView(), new Set())).toEqual({ open: 0, closed: 0, unled: 0, leader_dead: 0 });
  });
});
