import { sweepOffsetRetention, type SweptGroup } from './offset-retention';

describe('sweepOffsetRetention', () => {
  const HOUR = 3_600_000;
  const NOW = 100 * HOUR;
  const RETENTION = 24 * HOUR;

  it.each<[string, SweptGroup[], Record<string, number>, { expired: string[]; activeMs: Record<string, number> }]>([
    ['a group without members inactive for the retention expires', [{ groupId: 'old', hasMembers: false }], { old: NOW - RETENTION }, { expired: ['old'], activeMs: {} }],
    ['one inactive for less is kept, its time unchanged', [{ groupId: 'recent', hasMembers: false }], { recent: NOW - RETENTION + 1 }, { expired: [], activeMs: { recent: NOW - RETENTION + 1 } }],
    ['a group with members never expires and is active now', [{ groupId: 'busy', hasMembers: true }], { busy: NOW - 10 * RETENTION }, { expired: [], activeMs: { busy: NOW } }],
    ['a group seen for the first time (a coordinator after failover) counts from now', [{ groupId: 'unknown', hasMembers: false }], {}, { expired: [], activeMs: { unknown: NOW } }],
    ['groups not swept are dropped from the times (their offsets are gone)', [], { gone: NOW - HOUR }, { expired: [], activeMs: {} }],
    [
      'each group on its own',
      [
        { groupId: 'a', hasMembers: false },
        { groupId: 'b', hasMembers: true },
        { groupId: 'c', hasMembers: false },
      ],
      { a: 0, b: 0, c: NOW - HOUR },
      { expired: ['a'], activeMs: { b: NOW, c: NOW - HOUR } },
    ],
  ])('%s', (_case, swept, activeMs, expected) => {
    const outcome = sweepOffsetRetention(swept, new Map(Object.entries(activeMs)), NOW, RETENTION);
    expect({ expired: outcome.expired, activeMs: Object.fromEntries(outcome.activeMs) }).toEqual(expected);
  });
});
