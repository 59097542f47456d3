import type { TableSpec, TieringRange } from './view';
import type { WalTransaction } from './stream-transactions';

/**
 * Commands of the metadata log. A command is a proposal: it is validated when it is applied, and a
 * command carrying a stale epoch (or otherwise invalid against the view at that sequence) is applied as
 * a rejection that changes nothing. Every command is plain JSON.
 */
export type Command =
  | RegisterNode
  | RegisterCoordinator
  | CreateTable
  | DropTable
  | CreatePartition
  | DropPartition
  | LeadBucket
  | LeadBuckets
  | OpenStream
  | OpenStreams
  | CloseStream
  | CloseStreams
  | CommitWal
  | CommitStreamObject
  | CommitKvSnapshot
  | ForgetObjects
  | AllocateProducerId
  | StartTieringRound
  | CommitTieringRound
  | TrimStreams
  | DeleteRecords
  | AlterTable;

/**
 * Registers a node incarnation. Without `expectedEpoch` (a process starting) the node gets
 * `current + 1`. With `expectedEpoch` (a takeover fencing a dead incarnation) it is rejected unless the
 * node's epoch is still `expectedEpoch`, so two nodes taking over the same dead node bump it once.
 * A takeover keeps the dead node's addresses; a starting node sets its own.
 * Outcome: `{ epoch }`.
 */
export interface RegisterNode {
  type: 'RegisterNode';
  nodeId: string;
  expectedEpoch?: number;
  address?: string;
  kafka?: string;
  http?: string;
}

/** Registers the lease holder as coordinator with epoch `current + 1`. Outcome: `{ epoch }`. */
export interface RegisterCoordinator {
  type: 'RegisterCoordinator';
  coordinatorId: string;
}

/**
 * Creates a table. Rejected on a stale coordinator epoch, an invalid spec or an existing name
 * (`Conflict`). An unpartitioned table gets its buckets at once: without `leaders` they have no leader
 * (a LeadBucket per bucket follows); with `leaders`, bucket i is led by `leaders[i]` at leader epoch 1,
 * as if a LeadBucket for each had applied right after the create, so the assignment of a whole table
 * costs one log entry instead of one per bucket. `leaders` is rejected (`InvalidArgument`) on a
 * partitioned table or when its length is not the bucket count, and (`NotFound`) when it names a node
 * that is not registered. Outcome: `{ tableId }`.
 */
export interface CreateTable {
  type: 'CreateTable';
  coordinatorEpoch: number;
  spec: TableSpec;
  createdAtMs: number;
  leaders?: string[];
}

/**
 * Drops a table and all its buckets. The slices of their streams and their KV snapshots are released: an
 * object nothing points into any more moves to the garbage, stamped `atMs` (0 when absent), from where it
 * is deleted after a grace period. Outcome: `{ tableId }`.
 */
export interface DropTable {
  type: 'DropTable';
  coordinatorEpoch: number;
  name: string;
  /** The proposer's wall-clock time, which starts the grace period of the objects this drop releases. */
  atMs?: number;
}

/**
 * Adds a partition, with the table's number of buckets, to a partitioned table. Rejected on a stale
 * coordinator epoch (`Fenced`), a missing table (`NotFound`), an unpartitioned one (`InvalidArgument`) or a
 * partition that exists (`Conflict`). The partition is added after the table's others. Its buckets start at
 * epochs above every epoch an earlier log entry can have given any bucket (see `applyCreatePartition`), so a
 * partition dropped and created again never reuses an epoch of its earlier incarnation: without `leaders` they
 * have no leader (a LeadBucket per bucket follows); with `leaders`, bucket i is led by `leaders[i]` as if a
 * LeadBucket for each had applied right after the create, as `CreateTable.leaders` does. `leaders` is rejected
 * (`InvalidArgument`) when its length is not the bucket count, and (`NotFound`) when it names a node that is
 * not registered. Outcome: `{}`.
 */
export interface CreatePartition {
  type: 'CreatePartition';
  coordinatorEpoch: number;
  table: string;
  partition: string;
  leaders?: string[];
}

/** Removes a partition and its buckets, releasing their slices and KV snapshots as `DropTable` does. Outcome: `{}`. */
export interface DropPartition {
  type: 'DropPartition';
  coordinatorEpoch: number;
  table: string;
  partition: string;
  /** The proposer's wall-clock time, which starts the grace period of the objects this drop releases. */
  atMs?: number;
}

/**
 * Makes `leader` the leader of a bucket at leader epoch `current + 1`. Rejected on a stale coordinator
 * epoch, an unknown bucket or an unregistered leader. When `expectedLeaderEpoch` is given it is also
 * rejected unless the bucket is still at that epoch (a re-lead decided on an older view does nothing).
 * Outcome: `{ leaderEpoch }`.
 */
export interface LeadBucket {
  type: 'LeadBucket';
  coordinatorEpoch: number;
  tableId: number;
  partition: string | null;
  bucket: number;
  leader: string;
  expectedLeaderEpoch?: number;
}

/** One bucket of a `LeadBuckets` command: the fields of a LeadBucket without the coordinator epoch. */
export interface BucketToLead {
  tableId: number;
  partition: string | null;
  bucket: number;
  leader: string;
  expectedLeaderEpoch?: number;
}

/**
 * Many LeadBuckets in one log entry (re-leading the buckets of a dead node, a rebalance, the re-leads a
 * restarted node asks for). Rejected as a whole on a stale coordinator epoch (`Fenced`), or when malformed,
 * empty, longer than `LIMITS.leadBucketsPerCommandMax` or naming one bucket twice (`InvalidArgument`).
 * Otherwise each bucket is led exactly as a LeadBucket with the same fields would be, in list order, and
 * succeeds or fails on its own: the outcome's `led` holds, per bucket and in order, `{ ok: true,
 * leaderEpoch }` or `{ ok: false, rejection }`. Outcome: `{ led }`.
 */
export interface LeadBuckets {
  type: 'LeadBuckets';
  coordinatorEpoch: number;
  buckets: BucketToLead[];
}

/** The outcome of one bucket of a `LeadBuckets` command. */
export type BucketLeadOutcome = { ok: true; leaderEpoch: number } | { ok: false; rejection: Rejection };

/**
 * Opens a bucket's stream at the bucket's leader epoch; this is the fence. Accepted only when the
 * proposer is the leader, at its current node epoch, `leaderEpoch` is the bucket's current leader epoch
 * and greater than the stream epoch, and the stream is closed. Outcome: `{ streamEpoch }`.
 */
export interface OpenStream {
  type: 'OpenStream';
  nodeId: string;
  nodeEpoch: number;
  tableId: number;
  partition: string | null;
  bucket: number;
  leaderEpoch: number;
}

/** One stream of an `OpenStreams` command: the bucket and the leader epoch to open its stream at. */
export interface StreamToOpen {
  tableId: number;
  partition: string | null;
  bucket: number;
  leaderEpoch: number;
}

/**
 * Opens the streams of several buckets for one node in one log entry (a node that must open many
 * buckets at once, e.g. after a table was created, proposes one of these instead of one OpenStream each).
 * Each stream is opened exactly as an `OpenStream` with the same fields would be, in list order against
 * the view the earlier ones left, and succeeds or fails on its own: the outcome's `opened` holds, per
 * stream and in order, `{ ok: true, streamEpoch }` or `{ ok: false, rejection }`. The command as a
 * whole is rejected only when malformed, empty, longer than `LIMITS.openStreamsPerCommandMax` or naming
 * one bucket twice (`InvalidArgument`). Outcome: `{ opened }`.
 */
export interface OpenStreams {
  type: 'OpenStreams';
  nodeId: string;
  nodeEpoch: number;
  streams: StreamToOpen[];
}

/** The outcome of one stream of an `OpenStreams` command. */
export type StreamOpenOutcome = { ok: true; streamEpoch: number } | { ok: false; rejection: Rejection };

/**
 * Closes an open stream. Accepted from the node that opened it, at the node epoch it opened it with;
 * or from any registered node at its current epoch when the opener's incarnation has been fenced (its
 * node epoch in the view is greater than the one it opened with): that is the takeover of a dead node.
 * `streamEpoch` must be the stream's epoch. Outcome: `{}`.
 */
export interface CloseStream {
  type: 'CloseStream';
  nodeId: string;
  nodeEpoch: number;
  tableId: number;
  partition: string | null;
  bucket: number;
  streamEpoch: number;
}

/** One stream of a `CloseStreams` command: the bucket and the stream epoch it must be open at. */
export interface StreamToClose {
  tableId: number;
  partition: string | null;
  bucket: number;
  streamEpoch: number;
}

/**
 * Closes the streams of several buckets for one node in one log entry (a clean shutdown closing everything
 * the node leads, a takeover closing every stream of a dead node). Each stream is closed exactly as a
 * `CloseStream` with the same fields would be, in list order, and succeeds or fails on its own: the
 * outcome's `closed` holds, per stream and in order, `{ ok: true }` or `{ ok: false, rejection }`. The
 * command as a whole is rejected only when malformed, empty, longer than `LIMITS.closeStreamsPerCommandMax`
 * or naming one bucket twice (`InvalidArgument`). Outcome: `{ closed }`.
 */
export interface CloseStreams {
  type: 'CloseStreams';
  nodeId: string;
  nodeEpoch: number;
  streams: StreamToClose[];
}

/** The outcome of one stream of a `CloseStreams` command. */
export type StreamCloseOutcome = { ok: true } | { ok: false; rejection: Rejection };

/**
 * Commits one uploaded WAL object: each range names the stream (bucket) it extends, the stream epoch
 * the leader opened it at, the offsets it adds and where the batch sits in the object. All or nothing:
 * accepted only when the proposer is at its current node epoch and, for every range, the stream is open
 * by that node at that node epoch and at `streamEpoch`, and the range starts exactly at the stream's
 * committed end (ranges of one stream follow each other in the list). This is the fence of docs/architecture.md §4:
 * a zombie can upload objects, but never get them committed, so it never acknowledges.
 * Outcome: `{}`.
 */
export interface CommitWal {
  type: 'CommitWal';
  nodeId: string;
  nodeEpoch: number;
  object: string;
  ranges: WalRange[];
}

export interface WalRange {
  tableId: number;
  partition: string | null;
  bucket: number;
  streamEpoch: number;
  startOffset: number;
  endOffset: number;
  position: number;
  length: number;
  /** Present for idempotent writes: recorded as the writer's last batch. */
  writer?: { id: string; seq: number };
  /** Present for a Kafka transaction's batch or marker: opens or closes its producer's transaction (StreamRecord.transactions). */
  transaction?: WalTransaction;
}

/**
 * Replaces committed slices of one stream by slices of one newly uploaded stream object (compaction,
 * docs/architecture.md §5). The slices of the stream that cover exactly [startOffset, endOffset) are replaced by `slices`,
 * which all point into `object`; offsets, the committed end and the remembered writers do not change.
 *
 * Accepted only when the proposer is at its current node epoch, the stream is open by it at that node epoch
 * and at `streamEpoch` (else `Fenced`: only the stream's leader rewrites it), [startOffset, endOffset) is
 * not empty and lies below the committed end (else `InvalidArgument`), starts at or above the stream's start
 * and has both ends on boundaries of existing slices (else `Conflict`: the stream changed under the
 * proposer), `slices` run contiguously from `startOffset` to `endOffset` without an empty slice (else
 * `InvalidArgument`), and `object` is not awaiting deletion (else `Conflict`).
 *
 * On acceptance `object` gains one reference per new slice and every object of a replaced slice loses one;
 * an object left without references moves to the garbage, stamped `atMs`. Appends never conflict with a
 * compaction: they add slices after the committed end, and a compaction only covers committed slices.
 * Outcome: `{}`.
 */
export interface CommitStreamObject {
  type: 'CommitStreamObject';
  nodeId: string;
  nodeEpoch: number;
  tableId: number;
  partition: string | null;
  bucket: number;
  streamEpoch: number;
  object: string;
  startOffset: number;
  endOffset: number;
  slices: StreamObjectSlice[];
  /** The proposer's wall-clock time, which starts the grace period of the objects this commit releases. */
  atMs: number;
}

/** One slice of a stream object: records [startOffset, endOffset) at bytes [position, position+length); `batches` as on `DataSlice`. */
export interface StreamObjectSlice {
  startOffset: number;
  endOffset: number;
  position: number;
  length: number;
  batches?: number;
}

/**
 * Records one uploaded snapshot of a PK bucket's KV tablet (docs/architecture.md §5): `object` holds the tablet with
 * every change of the bucket's stream below `appliedOffset` applied, so a leader restoring it replays the
 * stream from `appliedOffset` on.
 *
 * Accepted only when the proposer is at its current node epoch and the stream is open by it at that node
 * epoch and at `streamEpoch` (else `Fenced`: only the bucket's leader, at the leader epoch it opened the
 * stream with, snapshots its tablet), the bucket exists (else `NotFound`), its table is a PK table and
 * `appliedOffset` is at most the committed end (else `InvalidArgument`), `appliedOffset` is at least that
 * of the newest snapshot kept (else `Conflict`: a newer snapshot was committed meanwhile), and `object` is
 * neither awaiting deletion nor already registered, as a snapshot or as anything else (else `Conflict`:
 * the archive must be an object of its own, released with the snapshot).
 *
 * On acceptance the snapshot is appended to the bucket's `kvSnapshots` and `object` gets one reference;
 * beyond `LIMITS.kvSnapshotsKept` the oldest snapshots are dropped, and their objects move to the garbage
 * stamped `atMs`. Outcome: `{}`.
 */
export interface CommitKvSnapshot {
  type: 'CommitKvSnapshot';
  nodeId: string;
  nodeEpoch: number;
  tableId: number;
  partition: string | null;
  bucket: number;
  streamEpoch: number;
  object: string;
  appliedOffset: number;
  bytes: number;
  /** The proposer's wall-clock time, which starts the grace period of the snapshot objects this commit releases. */
  atMs: number;
}

/**
 * Removes keys from the garbage once they were deleted from the object store. Keys that are not in the
 * garbage are ignored, so a retried ForgetObjects is harmless; it is never rejected for its keys, only when
 * malformed. Outcome: `{}`.
 */
export interface ForgetObjects {
  type: 'ForgetObjects';
  keys: string[];
}

/**
 * Hands out the next Kafka producer id (InitProducerId of an idempotent producer, docs/architecture.md §8.4): ids are
 * unique for the cluster's life because the log orders the allocations. Anybody may allocate; the id only
 * names a producer's batches in the writer state of the streams it writes. Outcome: `{ producerId }`.
 */
export interface AllocateProducerId {
  type: 'AllocateProducerId';
}

/**
 * Starts a tiering round of a table with the lake enabled (docs/architecture.md §9), proposed by the coordinator lease
 * holder when a worker takes a due round. Each range must start at its bucket's lake offset (`Conflict`
 * otherwise: no gap, no overlap) and end at or below the stream's committed end; a bucket appears at most
 * once. The round gets tiering epoch `lake.tieringEpoch + 1` and replaces any round in progress, whose
 * commit is then refused: a worker that stalled or a coordinator that was deposed cannot commit. Rejected on
 * a stale coordinator epoch (`Fenced`), an unknown table or id (`NotFound`), a table without the lake or a
 * lake bucket that is not one of a live partition of a partitioned table (`InvalidArgument`). Outcome: `{ tieringEpoch }`.
 */
export interface StartTieringRound {
  type: 'StartTieringRound';
  coordinatorEpoch: number;
  table: string;
  tableId: number;
  worker: string;
  ranges: TieringRange[];
  atMs: number;
}

/**
 * Commits a tiering round: the Iceberg metadata object `metadataKey` (written by the worker, holding every
 * record of the round's ranges) becomes the table's lake, and each range's end its bucket's lake offset.
 * Accepted only at the current coordinator epoch and for the round in progress at `tieringEpoch`
 * (`Fenced` otherwise); `NotFound` for a table that is gone. Outcome: `{}`.
 */
export interface CommitTieringRound {
  type: 'CommitTieringRound';
  coordinatorEpoch: number;
  table: string;
  tableId: number;
  tieringEpoch: number;
  metadataKey: string;
  snapshotId: string;
  atMs: number;
}

/**
 * Retention (docs/architecture.md §9): moves the start of streams up, releasing the slices wholly below the new start
 * (objects nothing else points into go to the garbage). Proposed by the coordinator lease holder's
 * lifecycle loop; each stream's `startOffset` is what the loop asks for, and the log itself keeps the
 * rules: the start never moves above the lake offset of a table with the lake enabled, nor above the
 * offset the newest KV snapshot of a primary-key bucket includes (its restore replays from there), and it
 * lands on a slice boundary (the start of the first slice kept, or the committed end when none is). A
 * stream that is gone, or whose start is already there, is left as it is. Rejected only on a stale
 * coordinator epoch (`Fenced`) or a malformed list (`InvalidArgument`). Outcome: `{}`.
 */
export interface TrimStreams {
  type: 'TrimStreams';
  coordinatorEpoch: number;
  streams: StreamTrim[];
  atMs: number;
}

export interface StreamTrim {
  tableId: number;
  partition: string | null;
  bucket: number;
  /** The offset the stream should start at (the records below it are older than the table's TTL). */
  startOffset: number;
}

/**
 * Kafka's DeleteRecords on one bucket of a log table: from now on its stream starts at exactly
 * `startOffset` (Kafka's log start offset); a slice partly below the new start is kept until a later trim
 * drops it whole, and readers skip its records below the start. An offset at or below the stream's start
 * changes nothing. Rejected on a stale coordinator epoch (`Fenced`), an unknown bucket (`NotFound`), and
 * (`InvalidArgument`) on a primary-key table (its KV snapshots replay the changelog), an offset beyond the
 * committed end, or one beyond what the lake holds of a table tiered to it (the lake must hold what the
 * stream no longer does). Outcome: `{}`.
 */
export interface DeleteRecords {
  type: 'DeleteRecords';
  coordinatorEpoch: number;
  tableId: number;
  partition: string | null;
  bucket: number;
  startOffset: number;
  atMs: number;
}

/**
 * Changes the properties of a table that may change after its creation (`ALTERABLE_PROPERTIES`: the
 * lake switch, its freshness and the retention TTL): a string sets one, null removes it (back to its
 * default). Rejected on a stale coordinator epoch (`Fenced`), an unknown table (`NotFound`), any other
 * property or a value the table could not have been created with (`InvalidArgument`). Outcome: `{}`.
 */
export interface AlterTable {
  type: 'AlterTable';
  coordinatorEpoch: number;
  name: string;
  properties: Record<string, string | null>;
}

/** Why a command was rejected; the code is the wire code the proposer reports. */
export interface Rejection {
  code: 'Fenced' | 'Conflict' | 'NotFound' | 'InvalidArgument';
  message: string;
}

export type Outcome =
  | { ok: true; epoch?: number; tableId?: number; leaderEpoch?: number; streamEpoch?: number; opened?: StreamOpenOutcome[]; led?: BucketLeadOutcome[]; closed?: StreamCloseOutcome[]; producerId?: number; tieringEpoch?: number }
  | { ok: false; rejection: Rejection };
