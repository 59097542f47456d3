import type { ErrorBody } from './errors';

/** Coordinator actions (docs/architecture.md §1): sent to SUBJECTS.coordinatorRpc and carried out by the lease holder. */
export type CoordinatorRequest =
  | { op: 'createTable'; spec: unknown }
  | { op: 'dropTable'; name: string }
  | {
      /** A data node asks for a fresh leader epoch of a bucket it leads (docs/ownership.md §3.4 ("closed at the current leader epoch")). */
      op: 'releadBucket';
      tableId: number;
      partition: string | null;
      bucket: number;
      to: string;
      expectedLeaderEpoch: number;
    }
  | {
      /**
       * A restarted data node asks for fresh leader epochs of many buckets it leads at once; the lease
       * holder answers with one LeadBuckets entry (per `LIMITS.leadBucketsPerCommandMax` buckets).
       */
      op: 'releadBuckets';
      to: string;
      buckets: { tableId: number; partition: string | null; bucket: number; expectedLeaderEpoch: number }[];
    }
  | { op: 'rebalance'; dryRun: boolean }
  | { op: 'whoHolds' }
  /** Changes the alterable properties of a table (a string sets one, null removes it). */
  | { op: 'alterTable'; name: string; properties: Record<string, string | null> }
  /**
   * Kafka's DeleteRecords on one bucket of an unpartitioned log table: its stream starts at `offset` from
   * now on (at the high watermark for -1); the answer is the stream's start after it.
   */
  | { op: 'deleteRecords'; table: string; bucket: number; offset: number }
  /** A tiering worker asks for a due round (docs/architecture.md §9); the answer is a `TieringRoundAssignment`. */
  | { op: 'takeTieringRound'; worker: string }
  /**
   * The worker of a round says it is alive; refused (`Fenced`) when the epochs are no longer current, and
   * the worker then abandons the round.
   */
  | { op: 'tieringHeartbeat'; table: string; tieringEpoch: number; coordinatorEpoch: number };

/** A tiering round given to a worker, or null when none is due. */
export interface TieringRoundAssignment {
  round: {
    table: string;
    tableId: number;
    tieringEpoch: number;
    /** The epoch of the coordinator that started it: the worker's heartbeats and commit carry it. */
    coordinatorEpoch: number;
    ranges: { bucket: number; startOffset: number; endOffset: number }[];
    /** The lake's current Iceberg metadata object, which the round's snapshot follows; null before the first round. */
    metadataKey: string | null;
  } | null;
}

/** Per bucket of a `releadBuckets` request, in order: its new leader epoch, or why it was not re-led. */
export interface ReleadBucketsResult {
  led: ({ ok: true; leaderEpoch: number } | { ok: false; code: string; message: string })[];
  metaSeq: number;
}

export interface CreateTableResult {
  tableId: number;
  name: string;
  leaders: { bucket: number; partition: string | null; leader: string; leaderEpoch: number }[];
}

export interface RebalanceMove {
  table: string;
  partition?: string;
  bucket: number;
  from: string | null;
  to: string;
}

export interface RebalanceResult {
  moves: RebalanceMove[];
  dryRun: boolean;
}

export interface HolderResult {
  coordinatorId: string;
  epoch: number;
}

/** State of a bucket as its leader reports it (GET /v1/cluster). */
export type BucketServingState = 'opening' | 'open' | 'unavailable';

/** Requests served by a data node on SUBJECTS.nodeRpc(address). */
export type NodeRequest =
  | { op: 'status' }
  | AppendBucketRequest
  | AppendTableRequest
  | ScanRequest
  | DescribeTableRequest
  | PutBucketRequest
  | DeleteBucketRequest
  | PutTableRequest
  | DeleteTableRequest
  | LookupBucketRequest
  | PrefixLookupBucketRequest
  | TransactionMarkerRequest
  | TransactionOffsetsRequest
  | KafkaGroupsRequest;

/**
 * The primary-key table of Kafka consumer groups' committed offsets (README "Kafka clients"): one row per
 * group, topic and partition, bucketed by group, so a group's offsets and its coordinator live in one bucket.
 */
export const KAFKA_OFFSETS_TABLE = '__consumer_offsets';
export const KAFKA_OFFSETS_BUCKET_KEY: readonly string[] = ['group'];

/**
 * The Kafka consumer groups a data node coordinates in `buckets` of `__consumer_offsets` (the buckets the
 * asker's view says it leads; GET /v1/kafka/groups): each group with offsets committed there or members held
 * here, with the committed offset of each of its partitions. Answer: KafkaGroupsAnswer.
 */
export interface KafkaGroupsRequest {
  op: 'kafkaGroups';
  buckets: number[];
  /** Only this group (it lives in one of `buckets`). */
  group?: string;
}

/** A consumer group as its coordinator knows it: membership from its memory, committed offsets from `__consumer_offsets`. */
export interface CoordinatedGroup {
  group: string;
  /** Kafka's group state (`Empty`, `PreparingRebalance`, `CompletingRebalance`, `Stable`); `Empty` for a group with offsets and no members. */
  state: string;
  members: number;
  /** Committed offsets, by topic and partition in that order. */
  offsets: { topic: string; partition: number; offset: number }[];
}

export interface KafkaGroupsAnswer {
  groups: CoordinatedGroup[];
  /** Buckets asked for that this node does not serve now (moved, opening): their groups are missing. */
  unserved: number[];
  /** True when the node stopped reading committed offsets at `LIMITS.kafkaGroupsOffsetsListedMax`. */
  truncated: boolean;
}

/**
 * Writes a Kafka transaction marker to a topic partition (a bucket of a `kafka`-format table) at its
 * leader, for the transaction coordinator (docs: docs/kafka.md "Transactions"). Answer: `{ offset }` of the marker.
 */
export interface TransactionMarkerRequest extends BucketAddress {
  op: 'txnMarker';
  producerId: number;
  producerEpoch: number;
  commit: boolean;
  /** The coordinator's epoch, stored in the marker. */
  coordinatorEpoch: number;
}

/**
 * Offsets a Kafka transaction commits for a consumer group (TxnOffsetCommit, which the group's coordinator
 * received), handed to the transactional id's coordinator: the leader of its bucket of `__transaction_state`.
 * Answer: `{ errorCode }`, a Kafka error code (0 when taken).
 */
export interface TransactionOffsetsRequest extends BucketAddress {
  op: 'txnOffsets';
  transactionalId: string;
  producerId: number;
  producerEpoch: number;
  group: string;
  offsets: { topic: string; partition: number; offset: number; leaderEpoch: number; metadata: string | null }[];
}

/** Identifies one bucket of a table; `tableId` guards against a table dropped and re-created meanwhile. */
export interface BucketAddress {
  table: string;
  tableId: number;
  partition: string | null;
  bucket: number;
}

/**
 * Appends rows (JSON, as in the HTTP API) to one bucket on its leader. With `writer`, the write is
 * idempotent: a retry with the same writer id and sequence is answered with the original offsets. With
 * `writer.acked` (the newest sequence of this writer the sender had acknowledged, -1 for none), the writer
 * may keep several requests in flight: the leader writes sequence n only after n - 1 and answers a request
 * that arrives ahead of its predecessor `Unavailable` (see `decideWriterSequence`).
 */
export interface AppendBucketRequest extends BucketAddress {
  op: 'append';
  /** The rows as JSON (as in the HTTP API); or, instead, `batch`. */
  rows?: unknown[];
  /**
   * The rows as an Arrow IPC stream of the table's columns (see `encodeRows` in @mink/records), carried as
   * binary next to the JSON of the request (`requestJson`'s `binary`); the leader checks its schema and
   * structure and stores it with the append times added.
   */
  batch?: Uint8Array;
  writer?: { id: string; seq: number; acked?: number };
}

export interface AppendBucketResult {
  bucket: number;
  partition?: string;
  baseOffset: number;
  count: number;
  /** True when the batch had been committed before and this answer repeats its offsets. */
  duplicate?: boolean;
}

/** A table-addressed write: the receiving node splits it by bucket and forwards each part to its leader. */
export interface AppendTableRequest {
  op: 'appendTable';
  table: string;
  rows: unknown[];
}

export interface AppendTableResult {
  appended: number;
  buckets: AppendBucketResult[];
}

export interface ScanRequest extends BucketAddress {
  op: 'scan';
  offset: number;
  limit: number;
  columns?: string[];
  /** At the high watermark, how long to wait for records (long-poll); 0 or absent answers at once. */
  waitMs?: number;
}

/**
 * A data node's answer to a scan: one page of records as an Arrow IPC stream (`batch`: the projected
 * columns, `_offset`, `_timestamp`, and `_change` on a changelog), which may hold fewer records than the
 * limit asked for (a page fits one NATS message); `nextOffset` is where the next page starts.
 */
export interface ScanPage {
  records: number;
  nextOffset: number;
  highWatermark: number;
  /** The first offset still stored; a scan from below it starts there. */
  startOffset: number;
  batch: Uint8Array;
}

export interface ScannedRecord {
  offset: number;
  timestamp: number;
  /** For a primary-key table's changelog: `+I`, `-U`, `+U` or `-D`. Absent for log tables. */
  changeType?: '+I' | '-U' | '+U' | '-D';
  row: Record<string, unknown>;
}

export interface ScanResult {
  records: ScannedRecord[];
  nextOffset: number;
  highWatermark: number;
}

/** Any node answers from its view: the table and where each bucket's leader can be reached. */
export interface DescribeTableRequest {
  op: 'describeTable';
  table: string;
}

/**
 * Where a bucket's leader can be reached: its node, the NATS subject prefix it serves on, and the leader
 * epoch it leads at. `http` is the leader's HTTP `host:port`, where it serves scan pages (see
 * scan-http.ts); absent when it has none.
 */
export interface BucketLeader {
  node: string;
  address: string;
  leaderEpoch: number;
  http?: string;
}

/**
 * A table's schema and where each bucket's leader is, as any data node's view has it. An unpartitioned
 * table has `leaders` and neither `partition` nor `partitions`. A partitioned table has its partition
 * spec, its live partitions in creation order (names in UTC, `yyyyMMddHH` for unit hour, `yyyyMMdd` for
 * day; see partitions.ts of @mink/meta) each with its own `buckets` leaders, and an empty `leaders`.
 */
export interface TableRoute {
  table: string;
  tableId: number;
  kind: 'log' | 'pk';
  columns: { name: string; type: string }[];
  primaryKey: string[];
  bucketKey: string[];
  /** Buckets of the table, or of each partition of a partitioned table. */
  buckets: number;
  /** Leader of each bucket of an unpartitioned table, by bucket number; null while it has none. */
  leaders: (BucketLeader | null)[];
  /** The partition spec of a partitioned table (`PartitionSpec` of @mink/meta). */
  partition?: { column: string; unit: 'hour' | 'day'; retain?: number; precreate?: number };
  /** The live partitions of a partitioned table, in creation order, each with the leader of each of its buckets. */
  partitions?: { name: string; leaders: (BucketLeader | null)[] }[];
}

/**
 * A data node's answer to `{op: 'status'}`: the ids (`bucketId` of @mink/meta) of the buckets it holds, by
 * the state it holds each in. Lists of ids rather than an object per bucket: the gateway asks every node
 * on each GET /v1/cluster, and at 100 000 buckets decoding objects took a fifth of that request's CPU.
 */
export interface NodeStatus {
  nodeId: string;
  epoch: number;
  buckets: Record<BucketServingState, string[]>;
}

/**
 * Upserts rows (JSON, as in the HTTP API) into one bucket of a primary-key table on its leader. With
 * `columns`, a partial put: only those columns are set (they must include the primary key) and the
 * others keep their stored values. Answered once the change records are durable and applied.
 */
export interface PutBucketRequest extends BucketAddress {
  op: 'put';
  /** The rows as JSON (as in the HTTP API); or, instead, `batch`. */
  rows?: unknown[];
  /**
   * The rows as an Arrow IPC stream of the put's columns in table order (every column, or those `columns`
   * names; see `encodeRows` in @mink/records), carried as binary next to the JSON of the request; the leader
   * checks its schema and structure and reads the rows from its columns (`decodeRowsStream`).
   */
  batch?: Uint8Array;
  columns?: string[];
  writer?: PkWriterField;
  /**
   * The rows of each put a client merged into this request, in order (they add up to its rows): the leader
   * plans each part as a request of its own (a bad part is refused alone) and answers each one's outcome in
   * `WriteBucketResult.parts`. Absent: the request is one part.
   */
  parts?: number[];
}

/** Deletes keys (objects holding the primary key columns) from one bucket of a primary-key table. */
export interface DeleteBucketRequest extends BucketAddress {
  op: 'delete';
  /** The keys as JSON objects; or, instead, `batch`. */
  keys?: unknown[];
  /** The keys as an Arrow IPC stream of the primary key columns in table order, carried as `PutBucketRequest.batch` is. */
  batch?: Uint8Array;
  writer?: PkWriterField;
}

/**
 * A put or delete numbered by its writer, so a client may keep several in flight per bucket: the writer
 * id, the request's sequence and the newest sequence the writer had acknowledged (-1 for none). The
 * leader plans a writer's requests in sequence order (decidePkWriterOrder in @mink/pk).
 */
export interface PkWriterField {
  id: string;
  seq: number;
  acked: number;
  /**
   * The newest sequence the writer had acknowledged, even above `seq` (a retry after a lost reply, sent
   * after a later request's answer): a request at or below it was written before, since a later one of its
   * writer is only written after it, and a leader that no longer remembers it answers without writing it again.
   */
  newestAcked?: number;
}

/**
 * What a put or delete did to its bucket: `operations` were accepted and produced `count` change records
 * at offsets [baseOffset, baseOffset + count) of the bucket's changelog (count 0 when nothing changed,
 * e.g. a `first_row` put of an existing key; baseOffset is then the changelog's end).
 */
export interface WriteBucketResult {
  bucket: number;
  partition?: string;
  operations: number;
  /** Where its change records went; -1 (and `count` 0) for a retry of a request written before whose outcome this leader no longer knows (`duplicate`). */
  baseOffset: number;
  count: number;
  /** A retry of a request already written (a later one of its writer was acknowledged); nothing was written again. */
  duplicate?: true;
  /** For a request of several `parts` (see PutBucketRequest.parts): what each did, in order, or why it was refused. */
  parts?: WritePartResult[];
}

/** What one part of a put of several parts did (its operations, change records and their offsets, as a whole request's), or its error. */
export type WritePartResult = { operations: number; baseOffset: number; count: number; duplicate?: true } | ErrorBody;

/** A table-addressed put: the receiving node splits it by bucket and forwards each part to its leader. */
export interface PutTableRequest {
  op: 'putTable';
  table: string;
  rows: unknown[];
  columns?: string[];
}

/** A table-addressed delete, split and forwarded like PutTableRequest. */
export interface DeleteTableRequest {
  op: 'deleteTable';
  table: string;
  keys: unknown[];
}

/** The answer to a table-wide put or delete (HTTP, client, and the table-addressed node requests). */
export interface WriteTableResult {
  /** Rows put or keys deleted. */
  written: number;
  buckets: WriteBucketResult[];
}

/** Looks keys up in one bucket of a primary-key table; `columns` projects the rows returned. */
export interface LookupBucketRequest extends BucketAddress {
  op: 'lookup';
  keys: unknown[];
  columns?: string[];
}

/** The stored row of each key, in key order; null where the key has no row. */
export interface LookupResult {
  rows: (Record<string, unknown> | null)[];
}

/**
 * Looks up every row whose bucket-key columns hold the values of each prefix (an object holding exactly the
 * bucket-key columns). Only for tables whose bucket key is a proper prefix of the primary key columns.
 */
export interface PrefixLookupBucketRequest extends BucketAddress {
  op: 'prefixLookup';
  prefixes: unknown[];
  columns?: string[];
  /** Rows returned per prefix at most; LIMITS.prefixLookupRowsMax when absent. */
  limit?: number;
}

/** For each prefix, in request order, the rows that have it; `truncated` when the limit cut them. */
export interface PrefixLookupResult {
  results: { rows: Record<string, unknown>[]; truncated: boolean }[];
}
