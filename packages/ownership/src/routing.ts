/**
 * Where a data node sends a bucket request. docs/ownership.md §6 ("Redirects"): a node serves the buckets it leads and has
 * open, answers NotLeader with the leader's address for a bucket another node leads, and Unavailable
 * while a bucket has no leader or is still opening here. A request naming a table, partition or bucket
 * the view does not hold is NotFound (or InvalidArgument when it could never exist).
 *
 * These functions only decide: the data node performs the effect (serves, throws the typed error, or
 * forwards over NATS) and words the message.
 */
import { bucketId, getIn, ownRecord, type BucketRecord, type NodeRecord, type TableRecord, type View } from '@mink/meta';

/**
 * A bucket request's address as it arrives over the wire (see `BucketAddress` in @mink/protocol). Every
 * field is checked here, so a request of the wrong shape gets a decision rather than a crash.
 */
export interface RouteRequest {
  /** The table's name. */
  table: unknown;
  /** The table id the sender resolved the name to; a different id means the table was dropped and re-created. */
  tableId?: unknown;
  /** The partition: a live partition's name for a partitioned table, null or absent otherwise. */
  partition?: unknown;
  bucket: unknown;
}

/**
 * What the node does with a bucket request, in the order the checks are made: the table, its id, the
 * bucket number, the partition, the bucket record, its leader, and whether it is open here.
 */
export type RouteDecision =
  /** This node leads the bucket and has it open: serve the request. */
  | { route: 'serve'; table: TableRecord; record: BucketRecord }
  /** Another node leads the bucket: NotLeader with a redirect to it (`leader` is its record, undefined if the view lacks one). */
  | { route: 'redirect'; table: TableRecord; record: BucketRecord; leader: NodeRecord | undefined }
  /** This node leads the bucket but has not opened it yet (its sync is taking it over or restoring it): Unavailable. */
  | { route: 'opening'; table: TableRecord; record: BucketRecord }
  /** No node leads the bucket yet: Unavailable. */
  | { route: 'noLeader'; table: TableRecord; record: BucketRecord }
  /** No table of that name (or the name is not a string): NotFound. */
  | { route: 'noTable'; name: unknown }
  /** The request's table id is not the table's: the table was dropped and re-created since the sender looked. NotFound. */
  | { route: 'tableRecreated'; table: TableRecord }
  /** The bucket number is not an integer in [0, table.buckets): InvalidArgument. */
  | { route: 'badBucket'; table: TableRecord; bucket: unknown }
  /** A partition named for an unpartitioned table: InvalidArgument. */
  | { route: 'notPartitioned'; table: TableRecord; partition: unknown }
  /** No partition named for a partitioned table: InvalidArgument. */
  | { route: 'partitionRequired'; table: TableRecord }
  /** A partition that is not one of the table's live partitions (e.g. dropped past retain): NotFound. */
  | { route: 'noPartition'; table: TableRecord; partition: unknown }
  /** The view holds no record of the bucket: NotFound. */
  | { route: 'noBucket'; table: TableRecord; partition: string | null; bucket: number };

/**
 * Decides the request `request` on node `nodeId`, whose open buckets (by bucket id) are `openHere`. The
 * view is the node's own; nothing here waits for a newer one.
 */
export function routeBucketRequest(view: View, nodeId: string, openHere: Pick<ReadonlySet<string>, 'has'>, request: RouteRequest): RouteDecision {
  const table = typeof request.table === 'string' ? getIn(view.tables, request.table) : undefined;
  if (!table) return { route: 'noTable', name: request.table };
  if (typeof request.tableId === 'number' && request.tableId !== table.id) return { route: 'tableRecreated', table };
  const bucket = request.bucket;
  if (typeof bucket !== 'number' || !Number.isSafeInteger(bucket) || bucket < 0 || bucket >= table.buckets) return { route: 'badBucket', table, bucket };
  const partition = request.partition;
  if (!table.partition) {
    if (partition !== null && partition !== undefined) return { route: 'notPartitioned', table, partition };
  } else {
    if (partition === null || partition === undefined) return { route: 'partitionRequired', table };
    if (typeof partition !== 'string' || !table.partitions.includes(partition)) return { route: 'noPartition', table, partition };
  }
  const partitionName = table.partition ? (partition as string) : null;
  const record = getIn(view.buckets, bucketId(table.id, partitionName, bucket));
  if (!record) return { route: 'noBucket', table, partition: partitionName, bucket };
  if (record.leader === null) return { route: 'noLeader', table, record };
  if (record.leader !== nodeId) return { route: 'redirect', table, record, leader: ownRecord(view.nodes, record.leader) };
  if (!openHere.has(bucketId(table.id, record.partition, record.bucket))) return { route: 'opening', table, record };
  return { route: 'serve', table, record };
}

/** Where one bucket's part of a table-addressed write goes: served here, sent to the leader's node, or nowhere yet. */
export type PartRoute = { to: 'here' } | { to: 'leader'; leader: NodeRecord } | { to: 'noLeader' };

/**
 * Where a node sends one bucket's part of a table-addressed write it split (seed: "split by bucket and
 * each part forwarded to its leader"): `here` when `nodeId` leads the bucket, else the leader's node;
 * `noLeader` when the bucket has no record, no leader, or a leader the view holds no node record of.
 * Unlike `routeBucketRequest`, a bucket led here is `here` even if not open yet: serving it decides again.
 */
export function routeTablePart(view: View, nodeId: string, bucketIdOfPart: string): PartRoute {
  const record = getIn(view.buckets, bucketIdOfPart);
  if (record?.leader === nodeId) return { to: 'here' };
  const leader = record?.leader ? ownRecord(view.nodes, record.leader) : undefined;
  return leader ? { to: 'leader', leader } : { to: 'noLeader' };
}
