import { ERROR_CODES } from '../wire/codes';
import { epochEndOffset, type EpochEndOffset } from './leader-epochs';

describe('epochEndOffset (OffsetForLeaderEpoch)', () => {
  const LEADER = { leaderEpoch: 5, logEndOffset: 120 };

  it.each<[string, { currentLeaderEpoch: number; leaderEpoch: number }, EpochEndOffset]>([
    ['the current epoch ends at the log end', { currentLeaderEpoch: 5, leaderEpoch: 5 }, { errorCode: ERROR_CODES.NONE, leaderEpoch: 5, endOffset: 120 }],
    ['a past epoch: nothing was truncated, so the log end', { currentLeaderEpoch: 5, leaderEpoch: 2 }, { errorCode: ERROR_CODES.NONE, leaderEpoch: 2, endOffset: 120 }],
    ['a client that does not say its epoch (v0-1)', { currentLeaderEpoch: -1, leaderEpoch: 3 }, { errorCode: ERROR_CODES.NONE, leaderEpoch: 3, endOffset: 120 }],
    ['an epoch after the current one: undefined', { currentLeaderEpoch: 5, leaderEpoch: 6 }, { errorCode: ERROR_CODES.NONE, leaderEpoch: -1, endOffset: -1 }],
    ['no epoch (-1): undefined', { currentLeaderEpoch: -1, leaderEpoch: -1 }, { errorCode: ERROR_CODES.NONE, leaderEpoch: -1, endOffset: -1 }],
    ['a client behind the leader epoch is fenced', { currentLeaderEpoch: 4, leaderEpoch: 4 }, { errorCode: ERROR_CODES.FENCED_LEADER_EPOCH, leaderEpoch: -1, endOffset: -1 }],
    ['a client ahead of this leader: unknown epoch', { currentLeaderEpoch: 6, leaderEpoch: 5 }, { errorCode: ERROR_CODES.UNKNOWN_LEADER_EPOCH, leaderEpoch: -1, endOffset: -1 }],
  ])('%s', (_case, asked, expected) => {
    expect(epochEndOffset(asked, LEADER)).toEqual(expected);
  });
});
