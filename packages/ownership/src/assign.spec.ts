import { assignBuckets, NoLiveNodesError } from './assign';

/** Counts how many buckets each node leads, for assertions on loads. */
function loadsOf(leaders: readonly string[]): Record<string, number> {
  const loads: Record<string, number> = {};
  for (const leader of leaders) loads[leader] = (loads[leader] ?? 0) + 1;
  return loads;
}

describe('assignBuckets', () => {
  it.each([
    { nowMs: 0, leaders: ['1', '2', '3', '1', '2', '3', '1', '2'], loads: { '1': 3, '2': 3, '3': 2 } },
    { nowMs: 1, leaders: ['2', '3', '1', '2', '3', '1', '2', '3'], loads: { '1': 2, '2': 3, '3': 3 } },
    { nowMs: 2, leaders: ['3', '1', '2', '3', '1', '2', '3', '1'], loads: { '1': 3, '2': 2, '3': 3 } },
    { nowMs: 3, leaders: ['1', '2', '3', '1', '2', '3', '1', '2'], loads: { '1': 3, '2': 3, '3': 2 } },
  ])('spreads 8 buckets over 3 nodes as 3/3/2 starting at node (now % 3) (nowMs $nowMs)', ({ nowMs, leaders, loads }) => {
    // Proves the (i + start) % n rule: consecutive buckets go round the sorted nodes from the start.
    const assigned = assignBuckets(8, ['1', '2', '3'], nowMs);
    expect(assigned).toEqual(leaders);
    expect(loadsOf(assigned)).toEqual(loads);
  });

  it('starts consecutive tables on different nodes as the clock moves', () => {
    // Proves the start is taken from the clock: three creations a millisecond apart begin on three nodes.
    const firstLeaders = [1_700_000_000_000, 1_700_000_000_001, 1_700_000_000_002].map(
      (nowMs) => assignBuckets(1, ['1', '2', '3'], nowMs)[0],
    );
    expect(new Set(firstLeaders).size).toBe(3);
  });

  it.each([
    { ids: ['1', '2', '3'] },
    { ids: ['3', '1', '2'] },
    { ids: ['2', '3', '1', '3'] },
  ])('does not depend on the order of the live ids ($ids)', ({ ids }) => {
    // Proves the ids are sorted (and deduplicated) before use, so every caller computes the same plan.
    expect(assignBuckets(6, ids, 7)).toEqual(['2', '3', '1', '2', '3', '1']);
  });

  it('orders node ids numerically, then others lexically', () => {
    // Proves compareNodeIds is the order: "9" comes before "10", and non-numeric ids come last.
    expect(assignBuckets(3, ['b', '10', '9'], 0)).toEqual(['9', '10', 'b']);
  });

  it.each([
    { bucketCount: 4, ids: ['5'], expected: ['5', '5', '5', '5'] },
    { bucketCount: 0, ids: ['1', '2'], expected: [] },
  ])('handles $bucketCount buckets on $ids', ({ bucketCount, ids, expected }) => {
    // Proves the edges: one node takes everything, and no bucket gives an empty assignment.
    expect(assignBuckets(bucketCount, ids, 12345)).toEqual(expected);
  });

  it('throws Unavailable when no node is live', () => {
    // Proves the expected outcome is a typed error carrying the wire code, not a crash.
    let caught: unknown;
    try {
      assignBuckets(3, [], 0);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(NoLiveNodesError);
    expect(caught).toMatchObject({ name: 'NoLiveNodesError', code: 'Unavailable' });
  });

  it.each([
    { bucketCount: -1, nowMs: 0 },
    { bucketCount: 1.5, nowMs: 0 },
    { bucketCount: Number.NaN, nowMs: 0 },
    { bucketCount: 2, nowMs: -1 },
    { bucketCount: 2, nowMs: 0.5 },
  ])('rejects bucket count $bucketCount at time $nowMs as a broken invariant', ({ bucketCount, nowMs }) => {
    // Proves invalid input is asserted rather than turned into undefined leaders.
    expect(() => assignBuckets(bucketCount, ['1'], nowMs)).toThrow(/invariant broken/);
  });
});
