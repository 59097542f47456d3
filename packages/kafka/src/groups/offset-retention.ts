/**
 * When a consumer group's committed offsets expire (Kafka's `offsets.retention.minutes`, KIP-211): once the
 * group has had no members for the retention, counted from the later of its last commit, the last time it
 * had members, and the moment this coordinator first saw it. The coordinator keeps these times in memory,
 * so one that took a bucket over after a failover starts counting anew: offsets may be kept longer than
 * the retention, never shorter. Pure.
 */

/** A group found in a sweep of an offsets bucket: its id and whether it has members now. */
export interface SweptGroup {
  groupId: string;
  hasMembers: boolean;
}

/** The groups of one bucket's sweep whose offsets expire, and when each group still kept was last active. */
export interface OffsetRetentionOutcome {
  expired: string[];
  /** Last activity (ms) of every swept group that keeps its offsets; groups not swept are left out. */
  activeMs: Map<string, number>;
}

/**
 * The outcome of sweeping `swept` (the groups with offsets in one bucket) at `nowMs`, given when each was
 * last active (`activeMs`, from commits and earlier sweeps): a group with members is active now; a group
 * seen for the first time counts from now; a member-less group inactive for `retentionMs` or more expires.
 */
export function sweepOffsetRetention(swept: readonly SweptGroup[], activeMs: ReadonlyMap<string, number>, nowMs: number, retentionMs: number): OffsetRetentionOutcome {
  const expired: string[] = [];
  const kept = new Map<string, number>();
  for (const { groupId, hasMembers } of swept) {
    const lastActiveMs = hasMembers ? nowMs : (activeMs.get(groupId) ?? nowMs);
    if (!hasMembers && nowMs - lastActiveMs >= retentionMs) expired.push(groupId);
    else kept.set(groupId, lastActiveMs);
  }
  return { expired, activeMs: kept };
}
