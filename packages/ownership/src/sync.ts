/**
 * The data node's sync decision for one bucket. docs/ownership.md §3 ("Opening a bucket") (stream state in the view →
 * action), for a bucket this node leads:
 *
 *   "Opened by another node that is live — HeldBy. The other node has not yet seen the change. Retry on
 *   the next sync."
 *   "Opened by a node that is dead — Take over: register the dead node at epoch + 1, run s3stream
 *   failover to replay and seal its WAL, close its streams. Then open."
 *   "Closed at the current leader epoch — This node restarted. Propose LeadBucket to get a fresh epoch,
 *   then open."
 *   "Closed at an older epoch — Open at the leader epoch from the view."
 *
 * and the close cases: "When a bucket it should lead appears, or a bucket it leads disappears, the
 * node's sync task opens or closes it." docs/ownership.md §4 ("Failover"): "If the dead node comes back ... the buckets now
 * belong to someone else and it does not open them."
 */
import { bucketId, entriesIn, getIn, isStreamOpenBy, ownRecord, type BucketRecord, type Command, type Outcome, type View } from '@mink/meta';
import { compareBuckets } from './orphans';

/**
 * What the sync task does next for one bucket. Each action is one step: after it the task waits for
 * the view to reflect it and decides again, so a takeover is followed by an `open` (or `relead`) on a
 * later sync rather than performed in one go.
 */
export type SyncDecision =
  /** Not ours and not open by us: nothing to do. */
  | { action: 'none' }
  /** Open by this incarnation at the leader epoch: serve requests. */
  | { action: 'serve' }
  /** Closed at an older epoch: open at the view's leader epoch. */
  | { action: 'open'; leaderEpoch: number }
  /** Closed at the current leader epoch (this node restarted): ask for a fresh epoch, then open. */
  | { action: 'relead'; leaderEpoch: number }
  /** Opened by another live node that has not seen the change yet: retry on the next sync. */
  | { action: 'heldBy'; node: string }
  /**
   * Opened by a dead (or fenced) incarnation: fence it (RegisterNode at nodeEpoch + 1 when
   * registerFirst), fail over its WAL, close its stream at streamEpoch, then open on a later sync.
   */
  | { action: 'takeOver'; node: string; nodeEpoch: number; streamEpoch: number; registerFirst: boolean }
  /** Open by this incarnation but no longer ours (or re-led at a newer epoch): close it at streamEpoch. */
  | { action: 'close'; streamEpoch: number }
  /** The bucket is gone from the view: drop local state. */
  | { action: 'drop' };

/** The incarnation deciding: its node id and the node epoch its RegisterNode returned. */
export interface SyncSelf {
  nodeId: string;
  nodeEpoch: number;
}

/**
 * Decides the next step for `bucketId` on node `self`. `live` holds the ids of nodes whose heartbeat is
 * younger than lease_ttl at their current epoch. A stream epoch above the leader epoch cannot happen
 * (a stream is only opened at its bucket's leader epoch, which only grows), so it throws.
 */
export function decideSync(view: View, self: SyncSelf, live: ReadonlySet<string>, bucketId: string): SyncDecision {
  const record = getIn(view.buckets, bucketId);
  if (record === undefined) return { action: 'drop' };
  const { stream, leaderEpoch } = record;
  if (stream.epoch > leaderEpoch) {
    throw new Error(`invariant broken: bucket ${bucketId} has stream epoch ${stream.epoch} above leader epoch ${leaderEpoch}`);
  }
  const openByThisIncarnation = isStreamOpenBy(stream, self);

  if (record.leader !== self.nodeId) {
    // Another node leads it (or nobody yet); a stream we still hold open must be released so the leader
    // can open it. An older incarnation of ours is left to the leader, which takes it over.
    return openByThisIncarnation ? { action: 'close', streamEpoch: stream.epoch } : { action: 'none' };
  }

  if (stream.state === 'closed') {
    // Opening requires a leader epoch above the stream epoch, so a stream closed at the current leader
    // epoch (by us before a restart, or by our takeover of our previous incarnation) needs a new one.
    return stream.epoch === leaderEpoch ? { action: 'relead', leaderEpoch } : { action: 'open', leaderEpoch };
  }

  if (openByThisIncarnation) {
    return stream.epoch === leaderEpoch ? { action: 'serve' } : { action: 'close', streamEpoch: stream.epoch };
  }

  if (stream.node === null) throw new Error(`invariant broken: bucket ${bucketId} has an open stream without a node`);
  const openerEpochInView = ownRecord(view.nodes, stream.node)?.epoch;
  const openerIsCurrentIncarnation = openerEpochInView === stream.nodeEpoch;
  if (live.has(stream.node) && openerIsCurrentIncarnation) return { action: 'heldBy', node: stream.node };
  // The opener is dead, or its incarnation is already fenced (by its own restart, which covers our
  // previous incarnation, or by another takeover). Only an incarnation still current in the view needs
  // the RegisterNode at epoch + 1 that fences it.
  return {
    action: 'takeOver',
    node: stream.node,
    nodeEpoch: stream.nodeEpoch,
    streamEpoch: stream.epoch,
    registerFirst: openerIsCurrentIncarnation,
  };
}

/**
 * The ids of the buckets `self` must look at on a sync, in `compareBuckets` order: those it leads and
 * those whose stream is open by any incarnation of it. Buckets that disappeared from the view are not
 * here; the sync task adds the ids it holds locally, and `decideSync` answers `drop` for them.
 */
export function bucketsToSync(view: View, self: SyncSelf): string[] {
  const isOurs = (record: BucketRecord): boolean =>
    record.leader === self.nodeId || (record.stream.state === 'open' && record.stream.node === self.nodeId);
  return [...entriesIn(view.buckets)]
    .filter(([, record]) => isOurs(record))
    .sort(([, a], [, b]) => compareBuckets(a, b))
    .map(([id]) => id);
}

/**
 * Which buckets' sync decisions an applied log entry can change: the ids it names, `all` when it can
 * change any (a node's epoch moved, so every stream it opened may now be taken over; partitions came or
 * went), or `none` (storage commits, rejected commands). A dropped table is `all`, since its buckets are
 * gone from the view and only the sync task knows which of them it held. Liveness changes are not log
 * entries: the sync task's periodic full round catches them.
 */
export function bucketsTouchedBy(command: Command, outcome: Outcome): readonly string[] | 'all' | 'none' {
  if (!outcome.ok) return 'none';
  switch (command.type) {
    case 'CreateTable': {
      const { spec, leaders } = command;
      if (spec.partition || outcome.tableId === undefined) return 'none';
      if (leaders === undefined) return 'none';
      return leaders.map((_leader, bucket) => bucketId(outcome.tableId!, null, bucket));
    }
    case 'LeadBucket':
    case 'OpenStream':
    case 'CloseStream':
      return [bucketId(command.tableId, command.partition, command.bucket)];
    case 'LeadBuckets':
      return command.buckets.map((each) => bucketId(each.tableId, each.partition, each.bucket));
    case 'OpenStreams':
    case 'CloseStreams':
      return command.streams.map((each) => bucketId(each.tableId, each.partition, each.bucket));
    case 'RegisterNode':
    case 'DropTable':
    case 'CreatePartition':
    case 'DropPartition':
      return 'all';
    case 'RegisterCoordinator':
    case 'CommitWal':
    case 'CommitStreamObject':
    case 'CommitKvSnapshot':
    case 'ForgetObjects':
    case 'AllocateProducerId':
    case 'StartTieringRound':
    case 'CommitTieringRound':
    case 'TrimStreams':
    case 'DeleteRecords':
    case 'AlterTable':
      return 'none';
  }
}
