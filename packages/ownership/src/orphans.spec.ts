import { NO_WRITERS, bucketId, emptyView, shardedFrom, type BucketRecord, type View } from '@mink/meta';
import { compareBuckets, planOrphanReleads } from './orphans';
import { releadsNow, type ReleadTiming } from './orphans';

/** A bucket of table `tableId` led by `leader` at leader epoch 2, with a closed stream. */
function bucket(tableId: number, partition: string | null, number: number, leader: string | null): BucketRecord {
  return {
    tableId,
    table: `t${tableId}`,
    partition,
    bucket: number,
    leader,
    leaderEpoch: leader === null ? 0 : 2,
    stream: { state: 'closed', epoch: 0, node: null, nodeEpoch: 0, startOffset: 0, endOffset: 0, slices: [], writers: NO_WRITERS },
    kvSnapshots: [],
  };
}

/** A view whose only table (id 1) has one bucket per entry of `leaders`, bucket i led by leaders[i]. */
function viewOf(leaders: readonly (string | null)[]): View {
  return viewWith(leaders.map((leader, number) => bucket(1, null, number, leader)));
}

function viewWith(records: readonly BucketRecord[]): View {
  return { ...emptyView(), buckets: shardedFrom(Object.fromEntries(records.map((record) => [bucketId(record.tableId, record.partition, record.bucket), record]))) };
}

describe('planOrphanReleads', () => {
  it.each([
    {
      name: 'no orphan: nothing moves',
      leaders: ['1', '2', '1'],
      live: ['1', '2'],
      moves: [],
    },
    {
      name: "a dead node's buckets spread over the survivors, lowest id on ties",
      leaders: ['1', '2', '3', '3', '3'],
      live: ['1', '2'],
      moves: [
        { bucket: 2, from: '3', to: '1' },
        { bucket: 3, from: '3', to: '2' },
        { bucket: 4, from: '3', to: '1' },
      ],
    },
    {
      name: 'orphans fill the least-loaded node first, counting moves already planned',
      leaders: ['1', '1', '1', '9', '9', '9', '9'],
      live: ['1', '2'],
      moves: [
        { bucket: 3, from: '9', to: '2' },
        { bucket: 4, from: '9', to: '2' },
        { bucket: 5, from: '9', to: '2' },
        { bucket: 6, from: '9', to: '1' },
      ],
    },
    {
      name: 'buckets without a leader (a new table) are orphans too',
      leaders: [null, null, '2'],
      live: ['2', '10'],
      moves: [
        { bucket: 0, from: null, to: '10' },
        { bucket: 1, from: null, to: '2' },
      ],
    },
    {
      name: 'a live node that leads nothing is the first target',
      leaders: ['1', '1', '3'],
      live: ['1', '2'],
      moves: [{ bucket: 2, from: '3', to: '2' }],
    },
    {
      name: 'no live node: no plan',
      leaders: ['1', '2'],
      live: [],
      moves: [],
    },
  ])('$name', ({ leaders, live, moves }) => {
    // Proves the rule (docs/ownership.md §2.2): buckets whose leader is not live go to the least-loaded live node, lowest id on ties.
    const planned = planOrphanReleads(viewOf(leaders), new Set(live));
    expect(planned.map(({ bucket, from, to }) => ({ bucket, from, to }))).toEqual(moves);
  });

  it('fills every field of a move from the bucket record', () => {
    // Proves a move names the bucket fully and carries the leader epoch the plan was made against.
    const record = { ...bucket(4, '2024-05-01', 3, '7'), leaderEpoch: 9 };
    expect(planOrphanReleads(viewWith([record]), new Set(['1']))).toEqual([
      { bucketId: '4/2024-05-01/3', tableId: 4, table: 't4', partition: '2024-05-01', bucket: 3, from: '7', to: '1', expectedLeaderEpoch: 9 },
    ]);
  });

  it('visits orphans by table id numerically, then partition, then bucket number', () => {
    // Proves the deterministic order: "10/..." after "9/...", the unpartitioned bucket first, bucket 10 after bucket 2.
    const records = [
      bucket(10, null, 0, null),
      bucket(9, 'b', 10, null),
      bucket(9, 'b', 2, null),
      bucket(9, 'a', 5, null),
      bucket(9, null, 1, null),
    ];
    const planned = planOrphanReleads(viewWith(records), new Set(['1']));
    expect(planned.map((move) => move.bucketId)).toEqual(['9//1', '9/a/5', '9/b/2', '9/b/10', '10//0']);
    expect([...records].sort(compareBuckets).map((record) => record.bucket)).toEqual([1, 5, 2, 10, 0]);
  });
});

describe('releadsNow holds re-leads back while a restarting cluster comes up', () => {
  const move = { bucketId: '1//0', tableId: 1, table: 't', partition: null, bucket: 0, from: '2', to: '1', expectedLeaderEpoch: 3 };
  const timing: ReleadTiming = {
    nowMs: 100_000,
    acquiredAtMs: 99_000,
    leaseTtlMs: 3_000,
    seenLiveSinceAcquired: new Set(),
    joining: new Map(),
    joiningGraceMs: 60_000,
    joiningStalledAfterMs: 20_000,
    joiningGraceMaxMs: 300_000,
  };
  /** Node 2 joining, last seen progressing at `progressedAtMs`. */
  const joining = (progressedAtMs: number) => new Map([['2', progressedAtMs]]);
  it.each<[string, Partial<ReleadTiming> & { from?: string | null }, boolean]>([
    ['a bucket that never had a leader is led at once', { from: null }, true],
    ['within lease_ttl of acquiring, a leader not seen live since is waited for', {}, false],
    ['within lease_ttl of acquiring, a leader seen live and then gone is replaced', { seenLiveSinceAcquired: new Set(['2']) }, true],
    ['after lease_ttl, a leader never seen live is replaced', { nowMs: 102_000 }, true],
    ['after lease_ttl, a leader still joining (catching up) is waited for', { nowMs: 102_000, joining: joining(90_000) }, false],
    ['a joining leader seen live before is still waited for while it joins', { nowMs: 102_000, joining: joining(90_000), seenLiveSinceAcquired: new Set(['2']) }, false],
    ['within joiningGraceMs, a joining leader is waited for even without progress', { nowMs: 158_000, joining: joining(99_000) }, false],
    ['past joiningGraceMs, a joining leader that has not progressed for joiningStalledAfterMs is replaced', { nowMs: 159_000, joining: joining(139_000) }, true],
    ['past joiningGraceMs, a joining leader that progressed within joiningStalledAfterMs is waited for', { nowMs: 159_000, joining: joining(139_001) }, false],
    ['long past joiningGraceMs, a joining leader still progressing is waited for', { nowMs: 398_000, joining: joining(397_000) }, false],
    ['joiningGraceMaxMs after acquiring, a joining leader is replaced even while it progresses', { nowMs: 399_000, joining: joining(398_900) }, true],
    ['another node joining does not hold this leader back', { nowMs: 102_000, joining: new Map([['3', 101_000]]) }, true],
  ])('%s', (_name, change, expected) => {
    const { from, ...rest } = change;
    expect(releadsNow({ ...move, from: from === undefined ? move.from : from }, { ...timing, ...rest })).toBe(expected);
  });
});
