import type { MemberProgress } from './liveness';

export interface PurgePointInput {
  /** Sequence of the oldest kept snapshot of the view: the snapshot rule purges every entry below it + 1. */
  oldestKeptSnapshotSeq: number;
  /** How far each live data node has applied the log, and since when it has been there. */
  members: readonly MemberProgress[];
  /** Local monotonic time now, on the clock of `MemberProgress.sinceMs`. */
  nowMs: number;
  /** A member whose applied sequence has not moved for this long is stalled and holds nothing back. */
  stalledAfterMs: number;
  /** The most entries below the snapshot rule's point that members may hold back. */
  marginEntriesMax: number;
}

/**
 * The sequence below which the log may be purged: the snapshot rule's `oldestKeptSnapshotSeq + 1`, moved
 * down to the first entry a live data node that is still making progress has not applied yet, so a node
 * that is merely slow (applying a burst) keeps tailing instead of reloading a snapshot; but never more than
 * `marginEntriesMax` entries below the rule's point, so one slow node cannot make the log grow without bound,
 * and a stalled node (paused, wedged) holds nothing back: it reloads the newest snapshot when it resumes.
 * The result is at least 1 and never above the rule's point.
 */
export function purgeBeforeSeq(input: PurgePointInput): number {
  const rulePoint = input.oldestKeptSnapshotSeq + 1;
  let point = rulePoint;
  for (const member of input.members) {
    if (input.nowMs - member.sinceMs >= input.stalledAfterMs) continue;
    point = Math.min(point, member.appliedSeq + 1);
  }
  return Math.max(1, point, rulePoint - input.marginEntriesMax);
}
