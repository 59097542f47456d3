/**
 * Assignment of the buckets of a new table or partition. docs/ownership.md §2 ("Assignment"):
 *
 *   "Table or partition created — The coordinator assigns bucket i to live node (i + start) % n, start
 *   derived from the clock so consecutive tables begin on different nodes, and proposes LeadBucket for
 *   each."
 */
import { compareNodeIds } from '@mink/meta';

/**
 * An expected outcome: nothing can lead a bucket because no node is live. The stable wire code is
 * `Unavailable`, so a client retries once a node has registered and heartbeated.
 */
export class NoLiveNodesError extends Error {
  override readonly name = 'NoLiveNodesError';
  readonly code = 'Unavailable' as const;

  constructor(message = 'no live node can lead a bucket') {
    super(message);
  }
}

/**
 * Returns the leader of each bucket of a new table or partition: element i is the node id that leads
 * bucket i. The live ids are sorted with `compareNodeIds` (and deduplicated) first, so the result depends
 * only on the set of live nodes and on `nowMs`, never on the order the caller listed them in.
 * Throws `NoLiveNodesError` when no node is live; a count or time that is not a non-negative whole
 * number is a broken invariant of the caller and throws a plain Error.
 */
export function assignBuckets(bucketCount: number, liveNodeIds: readonly string[], nowMs: number): string[] {
  if (!Number.isSafeInteger(bucketCount) || bucketCount < 0) {
    throw new Error(`invariant broken: bucket count ${bucketCount} is not a non-negative whole number`);
  }
  if (!Number.isSafeInteger(nowMs) || nowMs < 0) {
    throw new Error(`invariant broken: time ${nowMs} ms is not a non-negative whole number`);
  }
  const nodeIds = [...new Set(liveNodeIds)].sort(compareNodeIds);
  if (nodeIds.length === 0) throw new NoLiveNodesError();
  // The start comes from the clock rather than from a counter in the view so that tables created one
  // after another (whose creation times differ) start on different nodes without any shared state.
  const start = nowMs % nodeIds.length;
  return Array.from({ length: bucketCount }, (_, bucket) => nodeIds[(bucket + start) % nodeIds.length]);
}
