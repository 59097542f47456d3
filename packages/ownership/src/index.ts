/**
 * The ownership rules of docs/ownership.md as pure functions of the view (one module per rule table): assignment of
 * new buckets, re-leading of orphans, the rebalance planner and the data node's sync decision. Nothing
 * here does I/O or reads the clock; the coordinator and the data node carry out the plans.
 */
export { assignBuckets, NoLiveNodesError } from './assign';
export { compareBuckets, planOrphanReleads, releadsNow, type Move, type ReleadTiming } from './orphans';
export { planRebalance } from './rebalance';
export { bucketsToSync, bucketsTouchedBy, decideSync, type SyncDecision, type SyncSelf } from './sync';
export * from './admission';
export { planTieringRound, tieringStateOf, type PlannedRound, type TieringState, type TieringTiming } from './tiering';
export { planStreamTrims, retentionPace, withEndSample, type EndSample } from './retention';
export { planPartitionActions, planPartitions, type PartitionAction, type PartitionPlan } from './partitions';
export { routeBucketRequest, routeTablePart, type PartRoute, type RouteDecision, type RouteRequest } from './routing';
export { orphanReleadsDue } from './releads';
