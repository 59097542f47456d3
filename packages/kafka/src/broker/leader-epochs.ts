/**
 * OffsetForLeaderEpoch's answer for one partition (KIP-101, KIP-320), from what the leader knows: its
 * current leader epoch and its log end. Pure.
 *
 * A client asks for the end offset of the epoch it last read under, to learn whether the log it read was
 * truncated. mink's log is one copy in S3 that a leader change never truncates (the new leader continues
 * at the committed end), so every epoch up to the current one ends, as far as a client can tell, at the
 * log end: the answer never reports a truncation, which is the truth. The exact end of a past epoch is
 * not kept.
 */
import { ERROR_CODES } from '../wire/codes';

/** The epoch and end offset answered, with the partition's error code. */
export interface EpochEndOffset {
  errorCode: number;
  leaderEpoch: number;
  endOffset: number;
}

/**
 * The answer for a client that believes the leader epoch is `asked.currentLeaderEpoch` (-1: it does not
 * say) and asks for the end of `asked.leaderEpoch`, from a leader at `leader.leaderEpoch` whose log ends at
 * `leader.logEndOffset`: FENCED_LEADER_EPOCH when the client's epoch is older (it refreshes metadata),
 * UNKNOWN_LEADER_EPOCH when newer (this node has not seen it yet), an undefined epoch and offset (-1, -1)
 * for an epoch after the current one, else the epoch asked and the log end.
 */
export function epochEndOffset(asked: { currentLeaderEpoch: number; leaderEpoch: number }, leader: { leaderEpoch: number; logEndOffset: number }): EpochEndOffset {
  const unknown = (errorCode: number): EpochEndOffset => ({ errorCode, leaderEpoch: -1, endOffset: -1 });
  if (asked.currentLeaderEpoch !== -1 && asked.currentLeaderEpoch < leader.leaderEpoch) return unknown(ERROR_CODES.FENCED_LEADER_EPOCH);
  if (asked.currentLeaderEpoch > leader.leaderEpoch) return unknown(ERROR_CODES.UNKNOWN_LEADER_EPOCH);
  if (asked.leaderEpoch > leader.leaderEpoch || asked.leaderEpoch < 0) return unknown(ERROR_CODES.NONE);
  return { errorCode: ERROR_CODES.NONE, leaderEpoch: asked.leaderEpoch, endOffset: leader.logEndOffset };
}
