/**
 * The coordinator lease holder's re-leads on one tick: the orphan plan (planOrphanReleads, seed "Node
 * stops heartbeating") under the grace rule after a lease change (releadsNow).
 */
import { shardSummariesIn, type BucketRecord, type View } from '@mink/meta';
import { planOrphanReleads, releadsNow, type Move, type ReleadTiming } from './orphans';

/** The leaders named in each shard of a view's bucket map, kept while the shard lives (see shardSummariesIn). */
const LEADERS_OF_SHARD = new WeakMap<object, ReadonlySet<string | null>>();

function leadersOfShard(shard: Readonly<Record<string, BucketRecord>>): ReadonlySet<string | null> {
  const leaders = new Set<string | null>();
  for (const key of Object.keys(shard)) leaders.add(shard[key]!.leader);
  return leaders;
}

/**
 * The moves the holder proposes now, in `compareBuckets` order: every bucket whose leader is null or not
 * in `live`, to the least-loaded live node, except those `releadsNow` holds back (for one lease_ttl after
 * taking the lease, the buckets of nodes not seen live since; for up to joiningGraceMs, those of nodes
 * still joining). Targets are chosen over the whole orphan plan: a held-back bucket counts toward the
 * load of the node the plan gives it, so the moves due now go where that plan puts them.
 */
export function orphanReleadsDue(view: View, live: ReadonlySet<string>, timing: ReleadTiming): Move[] {
  // While every orphan is held back (a restarting cluster, for up to the joining grace), nothing is planned:
  // planning sorts every orphan, 100 000 of them on each tick of a restart at that size. The leaders come
  // per shard of the bucket map, cached while the shard lives: walking every bucket on each tick was a tenth
  // of the lease holder's time during a 100 000-bucket restart at 500 ms ticks.
  const leaders = new Set<string | null>();
  for (const ofShard of shardSummariesIn(view.buckets, LEADERS_OF_SHARD, leadersOfShard)) {
    for (const leader of ofShard) if (leader === null || !live.has(leader)) leaders.add(leader);
  }
  if (![...leaders].some((from) => releadsNow({ from }, timing))) return [];
  return planOrphanReleads(view, live).filter((move) => releadsNow(move, timing));
}
