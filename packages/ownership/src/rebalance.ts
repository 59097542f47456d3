/**
 * The plan of `mink cluster rebalance`. docs/ownership.md §2 ("Assignment"):
 *
 *   "mink cluster rebalance — Orphans first, then buckets move from nodes above 110% of the mean load to
 *   nodes below 90% of it, one LeadBucket per move."
 *   "Node joins — Nothing moves by itself." (so this planner runs only when an operator asks for it)
 */
import { bucketId, compareNodeIds, type BucketRecord, type View } from '@mink/meta';
import { compareBuckets, moveOf, planOrphanReleads, sortedBuckets, type Move } from './orphans';

/**
 * Plans the orphan re-leads of `planOrphanReleads`, then moves one bucket at a time from the most-loaded
 * live node to the least-loaded one (lowest id on ties for both) while the former is above 110 % of the
 * mean load, the latter below 90 % of it, and the move narrows their gap (they differ by at least two).
 * The moved bucket is one of the table (and partition) whose buckets the source leads most of beyond what
 * the target leads of it (see `bucketToMove`), so the plan is deterministic and spreads each table's
 * buckets over the nodes. The result lists the orphan moves first, then the balancing moves in the order
 * they were decided; no bucket appears twice. No live node, or no bucket, gives an empty plan.
 */
export function planRebalance(view: View, live: ReadonlySet<string>): Move[] {
  const orphanMoves = planOrphanReleads(view, live);
  const buckets = sortedBuckets(view);
  if (live.size === 0 || buckets.length === 0) return [];

  // The buckets each live node leads once the orphan moves are applied, each list in compareBuckets
  // order so that its last element is the bucket to move. Map order is compareNodeIds order.
  const ledBuckets = new Map<string, BucketRecord[]>([...live].sort(compareNodeIds).map((nodeId) => [nodeId, []]));
  const orphanTargets = new Map(orphanMoves.map((move) => [move.bucketId, move.to]));
  for (const record of buckets) {
    const leader = orphanTargets.get(bucketId(record.tableId, record.partition, record.bucket)) ?? record.leader;
    const list = leader === null ? undefined : ledBuckets.get(leader);
    if (list === undefined) throw new Error(`invariant broken: bucket led by ${leader} after re-leading orphans`);
    list.push(record);
  }

  // Loads are compared with the mean in whole numbers (load × nodes × 10 against total × 11 or × 9)
  // because 1.1 × mean in floating point misjudges loads that sit exactly on the threshold.
  const total = buckets.length;
  const nodeCount = ledBuckets.size;
  const isAboveHigh = (load: number): boolean => load * nodeCount * 10 > total * 11;
  const isBelowLow = (load: number): boolean => load * nodeCount * 10 < total * 9;

  const moves = [...orphanMoves];
  const movedBucketIds = new Set(orphanTargets.keys());
  for (let balancingMoves = 0; ; balancingMoves++) {
    const [[source, sourceBuckets], [target, targetBuckets]] = extremes(ledBuckets);
    const sourceLoad = sourceBuckets.length;
    const targetLoad = targetBuckets.length;
    if (!isAboveHigh(sourceLoad) || !isBelowLow(targetLoad) || sourceLoad - targetLoad < 2) break;
    // Every move takes a bucket from the maximum to the minimum, which never increases the maximum nor
    // decreases the minimum, so a node that received a bucket never becomes a source again: each bucket
    // moves at most once and the loop ends within `total` moves.
    if (balancingMoves >= total) throw new Error(`invariant broken: rebalance did not settle within ${total} moves`);
    // The gap of at least two above guarantees the source leads a bucket.
    const [record] = sourceBuckets.splice(bucketToMove(sourceBuckets, targetBuckets), 1);
    const movedBucketId = bucketId(record.tableId, record.partition, record.bucket);
    if (movedBucketIds.has(movedBucketId)) throw new Error(`invariant broken: bucket ${movedBucketId} planned to move twice`);
    movedBucketIds.add(movedBucketId);
    targetBuckets.push(record);
    targetBuckets.sort(compareBuckets);
    moves.push(moveOf(record, source, target));
  }
  return moves;
}

/**
 * The index in `source` (a node's buckets, in `compareBuckets` order) of the bucket a balancing move from it
 * to `target` takes: one of the table and partition with the largest surplus, the buckets of it the source
 * leads minus those the target leads, and the last such in `compareBuckets` order. The rule moves buckets
 * by count alone (docs/ownership.md §2.4) and does not say which; taking them from the table the source
 * holds most of keeps a table from piling up on one node after failovers, where one node's CPU and
 * connections would serve all of its appends and scans. With one table every bucket ties, and the last moves.
 */
function bucketToMove(source: readonly BucketRecord[], target: readonly BucketRecord[]): number {
  const surplus = new Map<string, number>();
  for (const record of source) {
    const group = groupOf(record);
    surplus.set(group, (surplus.get(group) ?? 0) + 1);
  }
  for (const record of target) {
    const group = groupOf(record);
    const count = surplus.get(group);
    if (count !== undefined) surplus.set(group, count - 1);
  }
  let chosen = source.length - 1;
  let chosenSurplus = surplus.get(groupOf(source[chosen]!))!;
  for (let index = source.length - 2; index >= 0; index--) {
    const candidate = surplus.get(groupOf(source[index]!))!;
    if (candidate > chosenSurplus) [chosen, chosenSurplus] = [index, candidate];
  }
  return chosen;
}

/** The table and partition of a bucket, as one key. */
function groupOf(record: BucketRecord): string {
  return record.partition === null ? `${record.tableId}` : `${record.tableId}\n${record.partition}`;
}

type NodeBuckets = [nodeId: string, buckets: BucketRecord[]];

/** The most-loaded and the least-loaded node, each the lowest id among equals (Map order is id order). */
function extremes(ledBuckets: ReadonlyMap<string, BucketRecord[]>): [most: NodeBuckets, least: NodeBuckets] {
  const entries = [...ledBuckets];
  let most = entries[0];
  let least = entries[0];
  for (const entry of entries) {
    if (entry[1].length > most[1].length) most = entry;
    if (entry[1].length < least[1].length) least = entry;
  }
  return [most, least];
}
