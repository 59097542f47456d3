import type { Move } from '@mink/ownership';
import { MOVES_LOGGED_EACH_MAX, moveLogLines, type MoveResult } from './move-log';

function move(bucket: number, from: string | null, to: string, partition: string | null = null): Move {
  return { bucketId: `1/${partition ?? ''}/${bucket}`, tableId: 1, table: 'events', partition, bucket, from, to, expectedLeaderEpoch: 1 };
}

const led = (each: Move, leaderEpoch = 2): MoveResult => ({ move: each, outcome: { ok: true, leaderEpoch } });

describe('moveLogLines', () => {
  it('logs a few re-led buckets one line each, as before', () => {
    // Proves a small failover keeps the per-bucket lines operators grep for.
    expect(moveLogLines([led(move(0, '2', '1')), led(move(1, null, '3'), 1)])).toEqual([
      { level: 'info', fields: { table: 'events', bucket: 0, from: '2', to: '1', leaderEpoch: 2 }, msg: 'bucket re-led' },
      { level: 'info', fields: { table: 'events', bucket: 1, from: null, to: '3', leaderEpoch: 1 }, msg: 'bucket re-led' },
    ]);
  });

  it('logs many re-led buckets as one line with the count per route', () => {
    // Proves 10 000 moves make one line, whose counts add up to every move.
    const results = Array.from({ length: 10_000 }, (_unused, index) => led(move(index, index % 4 === 0 ? null : '2', index % 2 === 0 ? '1' : '3')));
    const lines = moveLogLines(results);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toEqual({
      level: 'info',
      fields: { count: 10_000, routes: { 'none->1': 2_500, '2->3': 5_000, '2->1': 2_500 }, first: ['events/0 none->1', 'events/1 2->3', 'events/2 2->1', 'events/3 2->3', 'events/4 none->1'] },
      msg: 'buckets re-led',
    });
  });

  it('switches to counts just above the per-line bound', () => {
    // Proves the bound: MOVES_LOGGED_EACH_MAX moves are lines each, one more is one line.
    const results = (count: number) => Array.from({ length: count }, (_unused, index) => led(move(index, '2', '1')));
    expect(moveLogLines(results(MOVES_LOGGED_EACH_MAX))).toHaveLength(MOVES_LOGGED_EACH_MAX);
    expect(moveLogLines(results(MOVES_LOGGED_EACH_MAX + 1))).toHaveLength(1);
  });

  it('logs failures once per distinct error, with the count and the first buckets, before the successes', () => {
    // Proves a lost lease under a 70 000-bucket plan is two lines, not 70 000 stacks, and that different errors stay apart.
    const lost = new Error('this replica no longer holds the coordinator lease');
    const results: MoveResult[] = [
      ...Array.from({ length: 7 }, (_unused, index): MoveResult => ({ move: move(index, '2', '1', 'p1'), error: lost })),
      { move: move(9, '3', '1'), error: new Error('timed out') },
      { move: move(10, '3', '1'), outcome: { ok: false, rejection: { code: 'Conflict', message: 'leader epoch moved' } } },
      { move: move(11, '3', '1'), outcome: { ok: false, rejection: { code: 'Conflict', message: 'leader epoch moved' } } },
      led(move(12, '3', '1')),
    ];
    expect(moveLogLines(results)).toEqual([
      { level: 'warn', fields: { count: 7, moves: ['events/p1/0 2->1', 'events/p1/1 2->1', 'events/p1/2 2->1', 'events/p1/3 2->1', 'events/p1/4 2->1'], err: lost }, msg: 'LeadBucket not carried out' },
      { level: 'warn', fields: { count: 1, moves: ['events/9 3->1'], err: expect.objectContaining({ message: 'timed out' }) }, msg: 'LeadBucket not carried out' },
      { level: 'warn', fields: { count: 2, moves: ['events/10 3->1', 'events/11 3->1'], rejection: { code: 'Conflict', message: 'leader epoch moved' } }, msg: 'LeadBucket refused' },
      { level: 'info', fields: { table: 'events', bucket: 12, from: '3', to: '1', leaderEpoch: 2 }, msg: 'bucket re-led' },
    ]);
  });

  it('logs nothing when nothing moved', () => {
    expect(moveLogLines([])).toEqual([]);
  });
});
