/**
 * Re-leading of orphaned buckets. docs/ownership.md §2 ("Assignment"):
 *
 *   "Node stops heartbeating — On the next tick the coordinator finds buckets whose leader is not live
 *   and proposes LeadBucket to the least-loaded live node, lowest id on ties."
 */
import { bucketId, compareNodeIds, valuesIn, type BucketRecord, type View } from '@mink/meta';

/**
 * One planned change of leader, to be proposed as one LeadBucket. `from` is the leader the plan was made
 * against (null for a bucket that never had one); `expectedLeaderEpoch` is the bucket's leader epoch in
 * that view, so a LeadBucket decided on a view that has since moved on is rejected instead of applied.
 */
export interface Move {
  bucketId: string;
  tableId: number;
  table: string;
  partition: string | null;
  bucket: number;
  from: string | null;
  to: string;
  expectedLeaderEpoch: number;
}

/**
 * The order in which planners visit buckets: table id numerically, then partition (an unpartitioned
 * bucket first, then partition names lexically, which is creation order for time-named partitions), then
 * bucket number. Comparing the fields rather than the `bucketId` strings keeps table 10 after table 9.
 */
export function compareBuckets(a: BucketRecord, b: BucketRecord): number {
  if (a.tableId !== b.tableId) return a.tableId - b.tableId;
  if (a.partition !== b.partition) {
    if (a.partition === null) return -1;
    if (b.partition === null) return 1;
    return a.partition < b.partition ? -1 : 1;
  }
  return a.bucket - b.bucket;
}

/** All buckets of the view in `compareBuckets` order. */
export function sortedBuckets(view: View): BucketRecord[] {
  return [...valuesIn(view.buckets)].sort(compareBuckets);
}

/** The move of `record` from `from` to `to`, against the record's current leader epoch. */
export function moveOf(record: BucketRecord, from: string | null, to: string): Move {
  return {
    bucketId: bucketId(record.tableId, record.partition, record.bucket),
    tableId: record.tableId,
    table: record.table,
    partition: record.partition,
    bucket: record.bucket,
    from,
    to,
    expectedLeaderEpoch: record.leaderEpoch,
  };
}

/**
 * The load (number of buckets led) of every live node, as a Map whose insertion order is the
 * `compareNodeIds` order, so a scan that keeps the first extreme it meets breaks ties on the lowest id;
 * and, from the same pass, the orphans: the buckets whose leader is null or not live, in view order.
 */
export function loadsAndOrphans(view: View, live: ReadonlySet<string>): { loads: Map<string, number>; orphans: BucketRecord[] } {
  const loads = new Map<string, number>([...live].sort(compareNodeIds).map((nodeId) => [nodeId, 0]));
  const orphans: BucketRecord[] = [];
  for (const record of valuesIn(view.buckets)) {
    if (record.leader !== null && loads.has(record.leader)) addLoad(loads, record.leader, 1);
    else orphans.push(record);
  }
  return { loads, orphans };
}

/** Adds `delta` to the load of a node that is already in `loads`. */
export function addLoad(loads: Map<string, number>, nodeId: string, delta: number): void {
  const load = loads.get(nodeId);
  if (load === undefined) throw new Error(`invariant broken: node ${nodeId} has no load entry`);
  loads.set(nodeId, load + delta);
}

/** The node with the lowest load, lowest id on ties; undefined when there is no node. */
export function leastLoaded(loads: ReadonlyMap<string, number>): string | undefined {
  let best: string | undefined;
  let bestLoad = 0;
  for (const [nodeId, load] of loads) {
    if (best === undefined || load < bestLoad) {
      best = nodeId;
      bestLoad = load;
    }
  }
  return best;
}

/**
 * Plans one move per bucket whose leader is null or not live, in `compareBuckets` order. Each goes to
 * the least-loaded live node (lowest id on ties), counting the moves already planned, so many orphans
 * of one dead node spread over the survivors instead of all landing on one. No live node gives no plan:
 * there is nowhere to move to, and the next tick tries again.
 */
export function planOrphanReleads(view: View, live: ReadonlySet<string>): Move[] {
  // Only the orphans are sorted: the coordinator plans on every tick, and sorting every bucket of a view of
  // 100 000 took most of its CPU when there was nothing to move.
  const { loads, orphans } = loadsAndOrphans(view, live);
  const moves: Move[] = [];
  for (const record of orphans.sort(compareBuckets)) {
    const target = leastLoaded(loads);
    if (target === undefined) return [];
    moves.push(moveOf(record, record.leader, target));
    addLoad(loads, target, 1);
  }
  return moves;
}

/** What the coordinator lease holder knows when it decides whether to re-lead an orphan now. */
export interface ReleadTiming {
  nowMs: number;
  /** When this replica acquired the lease. */
  acquiredAtMs: number;
  leaseTtlMs: number;
  /** Data nodes this replica has seen live since it acquired the lease. */
  seenLiveSinceAcquired: ReadonlySet<string>;
  /**
   * Data nodes seen joining since the lease was acquired and not live since (their process is up and catching
   * up with the log: a fresh heartbeat at epoch 0, or registered beyond the holder's view), each with when it
   * last made progress (its heartbeats' applied sequence advanced, or it was first seen joining) on
   * `nowMs`'s clock. A late heartbeat (a node parsing a large snapshot) does not take a node out of it.
   */
  joining: ReadonlyMap<string, number>;
  /** How long after acquiring the lease the holder waits for joining nodes, progressing or not. */
  joiningGraceMs: number;
  /** Past the grace, a joining node still applying the log is waited for as long as it progressed within this long… */
  joiningStalledAfterMs: number;
  /** …and up to this long after the lease was acquired. */
  joiningGraceMaxMs: number;
}

/**
 * Whether `move` (an orphan re-lead from `planOrphanReleads`) is proposed now. After a whole-cluster
 * restart no data node has heartbeated for a while, so the new holder would take every bucket from every
 * node at its first tick and give them all to whichever node went live first. It holds back instead:
 * for one lease_ttl after acquiring the lease, the buckets of nodes it has not seen live since (they may
 * simply not have heartbeated yet); for up to `joiningGraceMs` after acquiring it, the buckets of nodes
 * whose process is up and catching up with the log (it heartbeats at epoch 0 until it registers); and
 * beyond that, up to `joiningGraceMaxMs`, those of joining nodes whose applied sequence still advances
 * (progressed within `joiningStalledAfterMs`): `mink up` starts the data nodes once the coordinators are
 * ready, and at 100 000 buckets each then takes 30–60 s to catch up, so a data node can still be joining
 * when a grace fixed from the lease change ends, and would lose every bucket. A bucket without a leader,
 * and the buckets of a node seen live and then gone, are re-led at once.
 */
export function releadsNow(move: Pick<Move, 'from'>, timing: ReleadTiming): boolean {
  if (move.from === null) return true;
  const sinceAcquiredMs = timing.nowMs - timing.acquiredAtMs;
  if (sinceAcquiredMs < timing.leaseTtlMs && !timing.seenLiveSinceAcquired.has(move.from)) return false;
  const progressedAtMs = timing.joining.get(move.from);
  if (progressedAtMs === undefined) return true;
  if (sinceAcquiredMs < timing.joiningGraceMs) return false;
  return !(sinceAcquiredMs < timing.joiningGraceMaxMs && timing.nowMs - progressedAtMs < timing.joiningStalledAfterMs);
}
