import { SHARDS, emptyShardedMap, getIn, shardOf, valuesIn, type ShardedMap } from './sharded-map';
/**
 * The metadata view: everything mink knows about ownership and storage, rebuilt by applying the metadata
 * log in order with `apply` (see apply.ts). Every process holds its own copy; all copies agree at each
 * log sequence because `apply` is pure and deterministic.
 *
 * The view is plain JSON (no Maps, no classes) so it can be snapshotted and compared as is. It is
 * treated as immutable: `apply` returns a new view and never mutates its input.
 */
import { ownRecord } from './lookup';
import type { StreamTransactions } from './stream-transactions';

export type ColumnType = 'boolean' | 'int32' | 'int64' | 'float64' | 'string' | 'bytes' | 'timestamp';

export const COLUMN_TYPES: readonly ColumnType[] = ['boolean', 'int32', 'int64', 'float64', 'string', 'bytes', 'timestamp'];

export interface ColumnSpec {
  name: string;
  type: ColumnType;
}

export interface PartitionSpec {
  column: string;
  unit: 'hour' | 'day';
  /** How many partitions to keep; older ones are dropped by the lifecycle loop. */
  retain?: number;
  /** Partitions created ahead of the current one (PARTITION_PRECREATE_DEFAULT when absent). */
  precreate?: number;
}

/** A table as the user declared it (the body of `POST /v1/tables`, validated). */
export interface TableSpec {
  name: string;
  columns: ColumnSpec[];
  primaryKey?: string[];
  bucketKey?: string[];
  buckets: number;
  partition?: PartitionSpec;
  properties?: Record<string, string>;
}

export type TableKind = 'log' | 'pk';

export interface TableRecord {
  /** Unique for the life of the cluster: a dropped and re-created table gets a new id. */
  id: number;
  name: string;
  kind: TableKind;
  columns: ColumnSpec[];
  primaryKey: string[];
  bucketKey: string[];
  buckets: number;
  partition?: PartitionSpec;
  properties: Record<string, string>;
  createdAtMs: number;
  /** Names of the table's live partitions, in creation order. Empty for an unpartitioned table. */
  partitions: string[];
  /** The table's lake once a tiering round has started (absent before). */
  lake?: LakeRecord;
}

/** One bucket's share of a tiering round: the stream offsets [startOffset, endOffset) it tiers. */
export interface TieringRange {
  bucket: number;
  startOffset: number;
  endOffset: number;
}

/** A tiering round in progress: which worker tiers which ranges, under which epochs (docs/architecture.md §9). */
export interface TieringRoundRecord {
  /** The round's tiering epoch: only a commit carrying it is taken. */
  epoch: number;
  worker: string;
  /** The coordinator epoch that started it. */
  coordinatorEpoch: number;
  ranges: TieringRange[];
  startedAtMs: number;
}

/**
 * What the metadata log says a table's Iceberg lake table holds (docs/architecture.md §9). The log is the lake's commit
 * point: a round's Iceberg metadata counts only once its `CommitTieringRound` applied, so a round that a
 * newer one fenced can never make its files current.
 */
export interface LakeRecord {
  /** The Iceberg metadata object of the newest committed round; null before the first. */
  metadataKey: string | null;
  /** That round's Iceberg snapshot id (a long, as decimal text); null before the first. */
  snapshotId: string | null;
  /** Per bucket (by its number as a key), the stream offset below which the lake holds every record. */
  offsets: Record<string, number>;
  /** The epoch of the newest round started (0 before the first). */
  tieringEpoch: number;
  /** The round in progress, or null. */
  round: TieringRoundRecord | null;
  /** When the newest round committed (epoch ms), 0 before the first. */
  tieredAtMs: number;
}

export interface NodeRecord {
  id: string;
  /** Bumped by every RegisterNode, including the takeover that fences a dead incarnation. */
  epoch: number;
  /** NATS subject prefix the node serves bucket requests on, e.g. `mink.node.2`. */
  address: string;
  /** `host:port` of the node's Kafka listener. */
  kafka: string;
  /** `host:port` of the node's HTTP endpoint (health, metrics). */
  http: string;
}

export type StreamState = 'open' | 'closed';

/**
 * The stream that stores one bucket's data. `epoch` is the stream epoch: the leader epoch at which it
 * was last opened. It only grows, and an open at an epoch not greater than it is rejected.
 */
export interface StreamRecord {
  state: StreamState;
  epoch: number;
  /** Node that opened the stream last (kept after close, for the sync decision). */
  node: string | null;
  /** The node epoch of that node when it opened the stream. */
  nodeEpoch: number;
  /** First offset still stored (offsets below it were trimmed). */
  startOffset: number;
  /** The committed end: every offset below it is durable, and the next append starts here. */
  endOffset: number;
  /**
   * Where the committed records live, in offset order and contiguous from `startOffset` to `endOffset`:
   * `history` (when present), then `slices`; read both through `slicesOf`. Each slice is a batch (or a
   * packed slice of batches) at a byte range of a WAL object or a stream object. Readers find data here
   * and never list the object store.
   *
   * `slices` holds the newest slices, every slice still in a WAL object among them, and is what a
   * `CommitWal` copies to append one. Once more than `LIMITS.streamSlicesFoldMin` stream-object slices
   * lead it, a `CommitStreamObject` folds them into `history`, which only compactions (rarely) and trims
   * copy, so the cost of an append does not grow with a stream's history.
   */
  slices: DataSlice[];
  /** The stream's older slices, all in stream objects, before `slices`; absent while there are none. */
  history?: DataSlice[];
  /**
   * Idempotent writers: the last committed batches of each writer id (bounded by
   * `LIMITS.writersPerStreamMax`, oldest evicted first), in a map of WRITER_SHARDS shards, so that a commit
   * copies the shard of its writer rather than every writer of the stream.
   */
  writers: ShardedMap<WriterState>;
  /**
   * Kafka transactions on the stream (a topic partition): the open ones, the aborted ones it still holds,
   * and the newest marker epoch of each producer (see stream-transactions.ts). Absent until a transactional
   * batch is committed to it.
   */
  transactions?: StreamTransactions;
}

/**
 * Shards of a stream's writers. Copying a record of 1 024 writers (the bound) for each range of a
 * `CommitWal` made every process's apply 25 to 35 times slower than with one writer; a shard holds about 32.
 */
export const WRITER_SHARDS = 32;

/** The writers of a stream that has none yet. */
export const NO_WRITERS: ShardedMap<WriterState> = (() => {
  const empty = emptyShardedMap<WriterState>(WRITER_SHARDS);
  return Object.freeze({ size: empty.size, shards: Object.freeze(empty.shards) });
})();

/** What a stream remembers of writer `id`, if anything. */
export function writerOf(stream: Pick<StreamRecord, 'writers'>, id: string): WriterState | undefined {
  return getIn(stream.writers, id);
}

/**
 * Committed records [startOffset, endOffset) of a stream at bytes [position, position+length) of `object`:
 * one batch, as its appender wrote it, or, with `batches`, a packed slice of a stream object.
 */
export interface DataSlice {
  object: string;
  startOffset: number;
  endOffset: number;
  position: number;
  length: number;
  /**
   * Present on a packed slice (docs/architecture.md §7): that many batches (at least 2) back to back, then
   * their index, 8 bytes per batch (s3stream's `packed-slice.ts` reads and writes it). Compaction packs the
   * batches it moves, so a stream keeps a slice per ~1 MiB of history rather than one per append.
   */
  batches?: number;
}

/** A list read by index, like an array (an array is one). */
export interface Indexed<Item> {
  readonly length: number;
  at(index: number): Item | undefined;
}

/** A read-only list of slices, indexed and sliced like an array (an array is one). */
export interface SliceList extends Indexed<DataSlice> {
  slice(start?: number, end?: number): DataSlice[];
}

/** Two arrays read as one list, without copying them. */
class JoinedSlices implements SliceList {
  constructor(
    private readonly first: readonly DataSlice[],
    private readonly second: readonly DataSlice[],
  ) {}

  get length(): number {
    return this.first.length + this.second.length;
  }

  at(index: number): DataSlice | undefined {
    const at = index < 0 ? index + this.length : index;
    return at < this.first.length ? this.first[at] : this.second[at - this.first.length];
  }

  slice(start = 0, end = this.length): DataSlice[] {
    const from = Math.max(0, start < 0 ? start + this.length : start);
    const to = Math.min(this.length, Math.max(0, end < 0 ? end + this.length : end));
    if (to <= from) return [];
    const split = this.first.length;
    if (to <= split) return this.first.slice(from, to);
    if (from >= split) return this.second.slice(from - split, to - split);
    return this.first.slice(from).concat(this.second.slice(0, to - split));
  }
}

/** Every slice of a stream in offset order: its history, then `slices` (the array itself when it has no history). */
export function slicesOf(stream: Pick<StreamRecord, 'slices' | 'history'>): SliceList {
  const history = stream.history;
  return history === undefined || history.length === 0 ? stream.slices : new JoinedSlices(history, stream.slices);
}

/** Index of the first of `slices` (in offset order) that ends beyond `offset` (a binary search); `slices.length` when none does. */
export function firstSliceEndingAfter(slices: Indexed<Pick<DataSlice, 'endOffset'>>, offset: number): number {
  let low = 0;
  let high = slices.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (slices.at(middle)!.endOffset <= offset) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** The first slice of a stream, if it has any. */
export function firstSliceOf(stream: Pick<StreamRecord, 'slices' | 'history'>): DataSlice | undefined {
  return stream.history?.[0] ?? stream.slices[0];
}

/** Bytes a packed slice's index holds per batch: its record count and its byte length, each a little-endian uint32. */
export const PACKED_INDEX_BYTES_PER_BATCH = 8;

/** Keys of WAL objects (`wal/<node>/<node epoch>/<sequence>`) start with this; every other object a slice names is a stream object. */
export const WAL_KEY_PREFIX = 'wal/';

/** Whether a slice still lives in a WAL object (compaction has not moved it into a stream object). */
export function isWalSlice(slice: Pick<DataSlice, 'object'>): boolean {
  return slice.object.startsWith(WAL_KEY_PREFIX);
}

/** One committed batch of an idempotent writer: its sequence and the offsets it was given. */
export interface WriterBatch {
  seq: number;
  baseOffset: number;
  count: number;
}

/**
 * The last batch a writer committed to a stream, and the few before it (`earlier`, newest first, at most
 * `LIMITS.writerBatchesRemembered - 1`). A retry of one of these batches (same writer id and sequence) is
 * answered with its offsets instead of being written again, by whichever node leads the stream then; a
 * writer with several requests in flight may retry an older one after a newer one was acknowledged.
 */
export interface WriterState extends WriterBatch {
  earlier?: WriterBatch[];
}

export interface BucketRecord {
  tableId: number;
  table: string;
  /** Partition name, or null for an unpartitioned table. */
  partition: string | null;
  bucket: number;
  /** Node id of the leader, or null before the first LeadBucket. */
  leader: string | null;
  leaderEpoch: number;
  stream: StreamRecord;
  /**
   * The snapshots of the bucket's KV tablet (PK tables only; always empty for a log table), oldest first,
   * at most `LIMITS.kvSnapshotsKept`. Their `appliedOffset`s never decrease along the list. A leader
   * opening the bucket restores a snapshot and replays the stream from its `appliedOffset`. Committing
   * one more than the bound releases the oldest, whose object then goes to the garbage.
   */
  kvSnapshots: KvSnapshotRecord[];
}

/**
 * One uploaded snapshot of a PK bucket's KV tablet, committed by `CommitKvSnapshot`. The archive is one
 * object, counted in `View.objects` with one reference while the bucket keeps the record.
 */
export interface KvSnapshotRecord {
  /** Object key of the snapshot archive. */
  object: string;
  /** The changelog offset the snapshot includes: replay of the bucket's stream starts here. */
  appliedOffset: number;
  /** Size of the archive in bytes. */
  bytes: number;
  /** Stream (leader) epoch of the leader that took it. */
  streamEpoch: number;
}

export interface CoordinatorRecord {
  /** Id of the coordinator replica that registered last. */
  node: string | null;
  epoch: number;
}

/**
 * An object that committed data points into. `references` is the number of slices, across all streams,
 * that point into it plus the number of KV snapshot records, across all buckets, that name it; it is
 * always positive: the object moves to `View.garbage` when it drops to zero.
 */
export interface ObjectRecord {
  references: number;
  /**
   * The object's size as far as the view knows it: the end of the furthest slice committed into it, or a
   * KV snapshot's archive size. A WAL object may be larger (bytes of appends taken out of it before its
   * commit). Absent in records written before sizes were kept.
   */
  bytes?: number;
}

/**
 * An object no slice points into and no KV snapshot names any more, awaiting physical deletion. Readers
 * that found it through an older view may still be reading it, so it is deleted only once
 * `unreferencedAtMs` plus a grace period has passed; `ForgetObjects` then removes the entry.
 */
export interface GarbageRecord {
  /** When the last slice or KV snapshot pointing into it was released, as the releasing command stated it. */
  unreferencedAtMs: number;
  /** The object's size as its record knew it (`ObjectRecord.bytes`), for the collector's figures; absent when unknown. */
  bytes?: number;
}

export interface View {
  /** Sequence of the last log entry applied; 0 for the empty view. */
  seq: number;
  nodes: Record<string, NodeRecord>;
  coordinator: CoordinatorRecord;
  /**
   * Tables by name. Sharded like the buckets: an entry that creates or changes one table copies one shard,
   * not a record of every table (at 6 250 tables, copying that record on every `CreateTable` took a quarter
   * of each process's CPU). It iterates in no useful order: `tablesInIdOrder` gives a stable one.
   */
  tables: ShardedMap<TableRecord>;
  /**
   * Buckets by `bucketId(tableId, partition, bucket)`. Sharded, so that an entry changing a few buckets
   * copies a few shards rather than the whole map. It iterates in no useful order: `bucketsOfTable` and
   * `bucketsInTableOrder` give a stable one.
   */
  buckets: ShardedMap<BucketRecord>;
  nextTableId: number;
  /** The Kafka producer id `AllocateProducerId` hands out next. */
  nextProducerId: number;
  /**
   * Every object some committed slice points into or some KV snapshot names, by key. The keys of `objects`
   * and `garbage` never overlap, and an object never comes back from `garbage`: commits naming an object
   * in it are refused.
   */
  objects: ShardedMap<ObjectRecord>;
  /** Objects nothing points into any more, by key, until `ForgetObjects` says they were deleted. */
  garbage: ShardedMap<GarbageRecord>;
}

/**
 * The view before the first entry. Its maps have `shards` shards (`SHARDS` when absent); fewer only for
 * tests that walk every shard of every view they make (the simulation), since how many there are changes
 * what an entry costs, never what it does.
 */
export function emptyView(shards: number = SHARDS): View {
  return {
    seq: 0,
    nodes: {},
    coordinator: { node: null, epoch: 0 },
    tables: emptyShardedMap(shards),
    buckets: emptyShardedMap(shards),
    nextTableId: 1,
    nextProducerId: 0,
    objects: emptyShardedMap(shards),
    garbage: emptyShardedMap(shards),
  };
}

/** The key of a bucket (and of its stream) in the view: `{tableId}/{partition or ""}/{bucket}`. */
export function bucketId(tableId: number, partition: string | null, bucket: number): string {
  return `${tableId}/${partition ?? ''}/${bucket}`;
}

/**
 * The shard of the view's bucket map that holds a bucket: a proposer that orders many buckets by it before
 * cutting them into log entries (Batcher's `groupOf`) makes each entry copy a few shards, not all of them.
 */
export function bucketShardOf(address: { tableId: number; partition: string | null; bucket: number }): number {
  return shardOf(bucketId(address.tableId, address.partition, address.bucket));
}

/** The buckets of one table, ordered by partition (creation order) then bucket number. */
export function bucketsOfTable(view: View, tableName: string): BucketRecord[] {
  const table = getIn(view.tables, tableName);
  if (!table) return [];
  const partitions: (string | null)[] = table.partition ? table.partitions : [null];
  const result: BucketRecord[] = [];
  for (const partition of partitions) {
    for (let bucket = 0; bucket < table.buckets; bucket++) {
      const record = getIn(view.buckets, bucketId(table.id, partition, bucket));
      if (record) result.push(record);
    }
  }
  return result;
}

/**
 * Every bucket of the view: tables in id (creation) order, each table's buckets as `bucketsOfTable` orders
 * them. The bucket map iterates in no useful order, so code that visits every bucket in a stable order
 * goes through this.
 */
export function bucketsInTableOrder(view: View): BucketRecord[] {
  return tablesInIdOrder(view).flatMap((table) => bucketsOfTable(view, table.name));
}

/** Every table of the view in id (creation) order; the table map iterates in no useful order. */
export function tablesInIdOrder(view: Pick<View, 'tables'>): TableRecord[] {
  return [...valuesIn(view.tables)].sort((a, b) => a.id - b.id);
}

/** Node ids in a stable order: numeric ids numerically, then others lexically. */
export function compareNodeIds(a: string, b: string): number {
  const numberA = Number(a);
  const numberB = Number(b);
  const aNumeric = a !== '' && Number.isInteger(numberA);
  const bNumeric = b !== '' && Number.isInteger(numberB);
  if (aNumeric && bNumeric) return numberA - numberB;
  if (aNumeric) return -1;
  if (bNumeric) return 1;
  return a < b ? -1 : a > b ? 1 : 0;
}
