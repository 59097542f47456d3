import { purgeBeforeSeq, type PurgePointInput } from './purge-point';

const BASE: PurgePointInput = { oldestKeptSnapshotSeq: 10_000, members: [], nowMs: 100_000, stalledAfterMs: 60_000, marginEntriesMax: 5_000 };
const member = (nodeId: string, appliedSeq: number, sinceMs: number) => ({ nodeId, appliedSeq, sinceMs });

describe('purgeBeforeSeq keeps what slow but progressing nodes still need, within a bound', () => {
  const cases: [description: string, input: Partial<PurgePointInput>, expected: number][] = [
    ['no members: the snapshot rule alone', {}, 10_001],
    ['every member past the snapshot: the snapshot rule', { members: [member('1', 12_000, 99_000), member('2', 10_500, 99_000)] }, 10_001],
    ['a member behind the snapshot that is progressing holds the purge at its next entry', { members: [member('1', 12_000, 99_000), member('2', 8_000, 99_000)] }, 8_001],
    ['the slowest of several progressing members wins', { members: [member('1', 9_000, 90_000), member('2', 7_000, 95_000)] }, 7_001],
    ['a member stalled for stalledAfterMs holds nothing back', { members: [member('1', 2_000, 40_000)] }, 10_001],
    ['a member just short of stalled still holds the purge', { members: [member('1', 9_500, 40_001)] }, 9_501],
    ['a member far behind holds at most marginEntriesMax entries', { members: [member('1', 100, 99_000)] }, 5_001],
    ['a member that applied nothing yet, early in the log', { oldestKeptSnapshotSeq: 3, members: [member('1', 0, 99_000)] }, 1],
    ['the margin never takes the point below 1', { oldestKeptSnapshotSeq: 10, marginEntriesMax: 100, members: [member('1', 0, 99_000)] }, 1],
  ];

  it.each(cases)('%s', (_description, input, expected) => {
    expect(purgeBeforeSeq({ ...BASE, ...input })).toBe(expected);
  });
});
