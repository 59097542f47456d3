import { NO_WRITERS, ShardedMapEditor, bucketId, emptyView, getIn, shardedFrom, type BucketRecord, type View } from '@mink/meta';
import { planOrphanReleads, releadsNow, type ReleadTiming } from './orphans';
import { orphanReleadsDue } from './releads';

/**
 * One table (id 1) of six buckets: bucket 0 led by node 1, buckets 1 and 2 by node 2, bucket 3 by node 3,
 * bucket 4 by nobody yet, bucket 5 by node 4. The holder took the lease at 100 s with a 3 s lease_ttl and
 * a 60 s grace for joining nodes; each row says which nodes are live, seen live since, and joining, and
 * how long after taking the lease the tick runs.
 */
const LEADERS = ['1', '2', '2', '3', null, '4'];
const ACQUIRED_AT_MS = 100_000;

function view(leaders: readonly (string | null)[] = LEADERS): View {
  const records: BucketRecord[] = leaders.map((leader, bucket) => ({
    tableId: 1,
    table: 't1',
    partition: null,
    bucket,
    leader,
    leaderEpoch: leader === null ? 0 : 2,
    stream: { state: 'closed', epoch: 0, node: null, nodeEpoch: 0, startOffset: 0, endOffset: 0, slices: [], writers: NO_WRITERS },
    kvSnapshots: [],
  }));
  return { ...emptyView(), buckets: shardedFrom(Object.fromEntries(records.map((record) => [bucketId(1, null, record.bucket), record]))) };
}

/** Joining nodes last progressed `progressedAgoMs` before now (by default when the lease was acquired). */
function timing(sinceAcquiredMs: number, seen: string[], joining: string[], progressedAgoMs = sinceAcquiredMs): ReleadTiming {
  return {
    nowMs: ACQUIRED_AT_MS + sinceAcquiredMs,
    acquiredAtMs: ACQUIRED_AT_MS,
    leaseTtlMs: 3_000,
    seenLiveSinceAcquired: new Set(seen),
    joining: new Map(joining.map((node) => [node, ACQUIRED_AT_MS + sinceAcquiredMs - progressedAgoMs])),
    joiningGraceMs: 60_000,
    joiningStalledAfterMs: 20_000,
    joiningGraceMaxMs: 300_000,
  };
}

describe('orphanReleadsDue', () => {
  it.each<{
    name: string;
    live: string[];
    seen?: string[];
    joining?: string[];
    progressedAgoMs?: number;
    sinceAcquiredMs: number;
    moves: [number, string | null, string][];
  }>([
    {
      name: 'a whole-cluster restart, only node 1 up so far: only the bucket without a leader is led',
      live: ['1'],
      sinceAcquiredMs: 500,
      moves: [[4, null, '1']],
    },
    {
      name: 'one lease_ttl after taking the lease, leaders never seen live are replaced',
      live: ['1'],
      sinceAcquiredMs: 3_000,
      moves: [
        [1, '2', '1'],
        [2, '2', '1'],
        [3, '3', '1'],
        [4, null, '1'],
        [5, '4', '1'],
      ],
    },
    {
      name: 'a leader seen live since the lease change and then gone is replaced at once',
      live: ['1'],
      seen: ['3'],
      sinceAcquiredMs: 500,
      moves: [
        [3, '3', '1'],
        [4, null, '1'],
      ],
    },
    {
      name: 'after lease_ttl, the buckets of a node still joining wait for it',
      live: ['1'],
      joining: ['2'],
      sinceAcquiredMs: 3_000,
      moves: [
        [3, '3', '1'],
        [4, null, '1'],
        [5, '4', '1'],
      ],
    },
    {
      name: 'past the joining grace, a joining node still applying the log is waited for',
      live: ['1'],
      joining: ['2'],
      progressedAgoMs: 1_000,
      sinceAcquiredMs: 90_000,
      moves: [
        [3, '3', '1'],
        [4, null, '1'],
        [5, '4', '1'],
      ],
    },
    {
      name: 'a node joining without progress for longer than the joining grace is replaced',
      live: ['1'],
      joining: ['2'],
      sinceAcquiredMs: 60_000,
      moves: [
        [1, '2', '1'],
        [2, '2', '1'],
        [3, '3', '1'],
        [4, null, '1'],
        [5, '4', '1'],
      ],
    },
    {
      name: 'every leader live: only the bucket without one is led, to the least-loaded node',
      live: ['1', '2', '3', '4'],
      sinceAcquiredMs: 500,
      moves: [[4, null, '1']],
    },
    { name: 'no live node: nothing moves, whatever the timing', live: [], sinceAcquiredMs: 60_000, moves: [] },
    {
      name: 'held-back buckets count toward the load of the node the plan gives them',
      live: ['1', '4'],
      sinceAcquiredMs: 500,
      // The plan gives buckets 1 and 3 to node 1 and bucket 2 to node 4 (all held back), so bucket 4 goes to node 4.
      moves: [[4, null, '4']],
    },
  ])('$name', ({ live, seen = [], joining = [], progressedAgoMs, sinceAcquiredMs, moves }) => {
    // Proves which orphans the lease holder re-leads on a tick, and to whom, in the grace after a lease change.
    const liveNodes = new Set(live);
    const due = orphanReleadsDue(view(), liveNodes, timing(sinceAcquiredMs, [...live, ...seen], joining, progressedAgoMs));
    expect(due.map((move): [number, string | null, string] => [move.bucket, move.from, move.to])).toEqual(moves);
    for (const move of due) expect(move.expectedLeaderEpoch).toBe(move.from === null ? 0 : 2);
  });
});

describe('orphanReleadsDue on views that change between ticks', () => {
  it('sees a leader that changed in a view sharing every other shard with the one before', () => {
    // Proves the per-shard cache of leaders follows the view: the bucket re-led to a dead node is an orphan at the next tick.
    const live = new Set(['1', '2', '3', '4']);
    const before = view(['1', '2', '2', '3', '1', '4']);
    const settled = timing(60_000, ['1', '2', '3', '4'], []);
    expect(orphanReleadsDue(before, live, settled)).toEqual([]);
    const id = bucketId(1, null, 3);
    const editor = new ShardedMapEditor(before.buckets);
    editor.set(id, { ...getIn(before.buckets, id)!, leader: '5' });
    const after = { ...before, buckets: editor.result() };
    expect(orphanReleadsDue(after, live, settled).map((move) => [move.bucket, move.from])).toEqual([[3, '5']]);
    expect(orphanReleadsDue(before, live, settled)).toEqual([]);
  });
});

describe('orphanReleadsDue while every orphan is held back', () => {
  const HELD = ['1', '2', '2', '3', '3', '4'];

  it.each<[string, string[], string[], string[], number, number]>([
    ['a restart, only node 1 live, the others not seen yet', ['1'], ['1'], [], 500, 0],
    ['after lease_ttl, every other node joining', ['1'], ['1'], ['2', '3', '4'], 3_000, 0],
    ['after lease_ttl, node 4 neither seen nor joining: its bucket moves', ['1'], ['1'], ['2', '3'], 3_000, 1],
    ['past the joining grace: every orphan moves', ['1'], ['1'], ['2', '3', '4'], 60_000, 5],
  ])('%s', (_case, live, seen, joining, sinceAcquiredMs, movesDue) => {
    // Proves the early answer when nothing is due is the one the whole plan gives, and that any due orphan still gets the plan's move.
    const liveNodes = new Set(live);
    const due = orphanReleadsDue(view(HELD), liveNodes, timing(sinceAcquiredMs, seen, joining));
    expect(due).toEqual(planOrphanReleads(view(HELD), liveNodes).filter((move) => releadsNow(move, timing(sinceAcquiredMs, seen, joining))));
    expect(due).toHaveLength(movesDue);
  });
});
