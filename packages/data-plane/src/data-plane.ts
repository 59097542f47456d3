import { LIMITS } from '@mink/config';
import { abortedTransactionsIn, bucketId, decideWriterSequence, lastStableOffsetOf, markerEpochOf, getIn, lakeBucketOf, logFormatOf, ownRecord, type BucketRecord, type ColumnSpec, type TableRecord, type View, type WriterBatch, type WriterSequenceDecision, type WriterSequenceInput, type InFlightBatch, type AbortedTransaction, writerOf } from '@mink/meta';
import {
  InvalidArgumentError,
  MinkError,
  NotFoundError,
  NotLeaderError,
  SUBJECTS,
  UnavailableError,
  type AppendBucketRequest,
  type AppendBucketResult,
  type AppendTableRequest,
  type AppendTableResult,
  type BucketAddress,
  type DeleteBucketRequest,
  type DeleteTableRequest,
  type PutTableRequest,
  type WriteTableResult,
  type LookupBucketRequest,
  type LookupResult,
  type PrefixLookupBucketRequest,
  type PrefixLookupResult,
  type PutBucketRequest,
  type WriteBucketResult,
  type ScanPage,
  type ScanRequest,
  type TableRoute,
  toErrorBody,
} from '@mink/protocol';
import { indexesByTarget, missingPartitionError, missingPartitions, partitionsOfItems, type BucketTarget, type Partitioning } from '@mink/client';
import { bucketOfRow, columnsInTableOrder, decodeBatch, encodeBatch, readRowsStream, type CheckedBatch, encodeScanPage, projectedColumns, rowsToJson, stampBatch, validateRows, type Row, type StampedBatch } from '@mink/records';
import type { StreamBatch, StreamReader, WalAppendRequest, WalWriter } from '@mink/s3stream';
import { RecordBatchConversionError, encodeTransactionMarker, recordBatchOfStoredRows, sameRecords, setBaseOffset, storedRowsOfRecordBatch, type TransactionMarker } from '@mink/kafka';
import { WithBinary, requestJson } from '@mink/transport';
import type { ClusterMember } from '@mink/runtime';
import { routeBucketRequest, routeTablePart, type RouteDecision } from '@mink/ownership';
import type { PkOperation } from '@mink/pk';
import type { BucketSync } from './bucket-sync';
import { CommitWaiters } from './commit-waiters';
import type { LakeReads } from './lake-reads';
import type { PkBucket, PkWriteOutcome, PkWriterSequence } from './pk-bucket';
import type { PkBuckets } from './pk-buckets';

/** An idempotent write in flight on this node: its attempt, the run it covers and, for a writer whose retries are compared, what it holds. */
interface WriteInFlight<T> extends InFlightBatch {
  attempt: Promise<T>;
  payload?: Uint8Array | undefined;
}

const NO_WRITES: ReadonlyMap<number, WriteInFlight<unknown>> = new Map();

/**
 * An idempotent writer's batch: its writer id, the (last) sequence it is known by, the first sequence it
 * covers when it covers several (a Kafka producer's batch), and the newest sequence the writer had
 * acknowledged, -1 for none (undefined for a writer that skips the order check).
 */
export interface IdempotentWriter {
  id: string;
  seq: number;
  firstSeq?: number;
  acked: number | undefined;
}

/**
 * What is said of a sequence that is not written: older than those remembered, not the next, or `reused`:
 * the sequences of a committed batch (at `baseOffset`) or of one in flight (`null`) sent again with other
 * records (see `RetryContent`).
 */
export type RefusedSequence = Extract<WriterSequenceDecision, { kind: 'conflict' | 'outOfOrder' }> | { kind: 'reused'; baseOffset: number | null };

/**
 * For a writer that may number other records with the sequences of a batch whose outcome it never learnt (a
 * kafkajs producer takes back a failed request's sequences, committed or not): the batch's bytes, and whether
 * two batches hold the same records. A duplicate or a joining batch that holds other records than the batch
 * it repeats is `reused` and refused, instead of being answered with offsets of records it does not hold.
 */
export interface RetryContent {
  payload: Uint8Array;
  sameRecords(first: Uint8Array, second: Uint8Array): boolean;
}

/** The error a writer gets for a refused sequence. */
export type RefuseSequence = (writer: IdempotentWriter, decision: RefusedSequence) => Error;

/** A refused sequence of a mink writer: a conflict is the writer's bug; out of order waits for the batch before it. */
function refuseAppendSequence(writer: IdempotentWriter, decision: RefusedSequence): Error {
  if (decision.kind === 'reused') {
    const where = decision.baseOffset === null ? 'is in flight' : `was committed at offset ${decision.baseOffset}`;
    return new MinkError('Conflict', `writer ${writer.id} sequence ${writer.seq} ${where} with other records`);
  }
  if (decision.kind === 'conflict') {
    return new MinkError('Conflict', `writer ${writer.id} sequence ${writer.seq} is older than the batches remembered of it (last committed ${decision.lastCommitted})`);
  }
  return new UnavailableError(`writer ${writer.id} sequence ${writer.seq} arrived before sequence ${decision.expected}: send it again after that one`, 0);
}

/**
 * A request's writer `{id, seq, acked}`, checked. `acked` (the newest sequence the writer had acknowledged,
 * below `seq`) may be absent only when `ackedRequired` is false: an append writer that keeps one request in
 * flight skips the order check; a numbered put or delete always names it.
 */
function checkedWriter(writer: unknown, ackedRequired: boolean): { id: string; seq: number; acked: number | undefined } {
  const { id, seq, acked } = (writer ?? {}) as Partial<Record<'id' | 'seq' | 'acked', unknown>>;
  if (typeof id !== 'string' || id.length === 0 || typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 0) {
    throw new InvalidArgumentError(
      `writer must be {id: a non-empty string, seq: a non-negative integer, ${ackedRequired ? 'acked: an integer from -1 below seq' : 'acked?: an integer from -1'}}`,
    );
  }
  if ((ackedRequired || acked !== undefined) && (typeof acked !== 'number' || !Number.isSafeInteger(acked) || acked < -1 || acked >= seq)) {
    throw new InvalidArgumentError(`writer.acked must be an integer from -1 below the sequence ${seq}, got ${String(acked)}`);
  }
  return { id, seq, acked: acked as number | undefined };
}

/** The writer of a numbered put or delete, checked; undefined for a request without one (planned in arrival order). */
function pkWriterOf(writer: unknown): PkWriterSequence | undefined {
  if (writer === undefined) return undefined;
  const { id, seq, acked } = checkedWriter(writer, true);
  const { newestAcked } = writer as { newestAcked?: unknown };
  if (newestAcked === undefined) return { id, seq, acked: acked! };
  if (typeof newestAcked !== 'number' || !Number.isSafeInteger(newestAcked) || newestAcked < acked!) {
    throw new InvalidArgumentError(`writer.newestAcked must be an integer at least writer.acked (${acked}), got ${String(newestAcked)}`);
  }
  return { id, seq, acked: acked!, newestAcked };
}

/** The `parts` of a put request (see PutBucketRequest.parts): absent, or a list of row counts the bucket checks against its rows. */
function partCountsOf(parts: unknown): number[] | undefined {
  if (parts === undefined) return undefined;
  if (!Array.isArray(parts) || parts.length > LIMITS.pkBatchOperationsMax || !parts.every((count) => typeof count === 'number')) {
    throw new InvalidArgumentError('parts must be a list of row counts');
  }
  return parts as number[];
}

/** The fields of a writer's batch that `decideWriterSequence` decides on (all but what the view holds). */
function sequenceOf(writer: IdempotentWriter): Pick<WriterSequenceInput, 'seq' | 'firstSeq' | 'ackedSeq'> {
  return { seq: writer.seq, firstSeq: writer.firstSeq, ackedSeq: writer.acked };
}

/** What a Kafka fetch reads of a partition: its batches and bounds, and for read_committed the aborted transactions among them. */
export interface RecordBatchesRead {
  batches: Uint8Array[];
  highWatermark: number;
  startOffset: number;
  lastStableOffset: number;
  abortedTransactions: AbortedTransaction[];
}

/** The stream a WAL append of a bucket led here goes to, at the stream epoch the view shows it opened at. */
function walStreamOf(record: BucketRecord): Pick<WalAppendRequest, 'bucketId' | 'tableId' | 'partition' | 'bucket' | 'streamEpoch'> {
  return { bucketId: bucketId(record.tableId, record.partition, record.bucket), tableId: record.tableId, partition: record.partition, bucket: record.bucket, streamEpoch: record.stream.epoch };
}

/** A Kafka record batch to store: its bytes, the offsets it takes, and how to write its base offset into it. */
export interface RecordBatchToStore {
  bytes: Uint8Array;
  offsetCount: number;
  stampBaseOffset: (payload: Uint8Array, baseOffset: number) => void;
}

/**
 * A stored Kafka record batch of a topic as the Arrow batch an append of its records would have stored, so
 * scans serve topics like any table. A batch that does not convert is corrupt storage, not a bad request.
 */
function arrowBatchOfStoredRecordBatch(table: string, batch: StreamBatch): StreamBatch {
  let converted;
  try {
    converted = storedRowsOfRecordBatch(batch.payload);
  } catch (error) {
    if (error instanceof RecordBatchConversionError) throw new MinkError('Internal', `a stored record batch of topic '${table}' at offset ${batch.startOffset} does not read: ${error.message}`);
    throw error;
  }
  if (converted.startOffset !== batch.startOffset || converted.startOffset + converted.recordCount !== batch.endOffset) {
    throw new MinkError('Internal', `a stored record batch of topic '${table}' holds offsets from ${converted.startOffset} (${converted.recordCount}), not [${batch.startOffset}, ${batch.endOffset})`);
  }
  return { startOffset: batch.startOffset, endOffset: batch.endOffset, payload: converted.payload };
}

/** Arrow appends cannot write a table that stores Kafka record batches. */
function refuseKafkaFormat(table: TableRecord, action: string): void {
  if (logFormatOf(table) === 'kafka') {
    throw new InvalidArgumentError(`table '${table.name}' is a Kafka topic (it stores Kafka record batches) and cannot be ${action} over this API: produce with a Kafka client`);
  }
}

/**
 * The data path of a data node (docs/architecture.md §5, docs/ownership.md §6 ("Redirects")): appends and scans of the buckets it
 * leads, redirects for the ones it does not, and table-addressed writes split and forwarded to each
 * bucket's leader. Every request is checked against this node's view: NotLeader with the leader's
 * address when another node leads the bucket, Unavailable while the bucket is still opening.
 */
export class DataPlane {
  /**
   * Idempotent appends in flight here, by bucket/writer and then sequence, with the run and fingerprint of
   * each: a fast retry joins the first attempt, and the sequences are what decideWriterSequence orders the
   * next batch after.
   */
  private readonly writesInFlight = new Map<string, Map<number, WriteInFlight<unknown>>>();
  /** Epochs of transaction markers queued here and not settled, by `bucket id|producer id` (see appendTransactionMarker). */
  private readonly pendingMarkerEpochs = new Map<string, number>();
  private spreadCounter = 0;

  constructor(
    private readonly member: ClusterMember,
    private readonly self: { nodeId: string; nodeEpoch: number },
    private readonly sync: BucketSync,
    private readonly wal: WalWriter,
    private readonly reader: StreamReader,
    private readonly pk: PkBuckets,
    /** When reads may be served from this node's own state (see ReadFence); writes are fenced by storage. */
    private readonly readFence: { check(): void } = { check: () => undefined },
    /** Where scans at the high watermark wait for the next commit; the WAL writer's commit listener notifies it. */
    private readonly commits: CommitWaiters = new CommitWaiters(),
    private readonly nowMs: () => number = Date.now,
    /** The lake side of the union read; absent: scans below a stream's start begin at its start. */
    private readonly lakeReads: LakeReads | null = null,
  ) {}

  /**
   * The route of a table from this node's view: the leader of each bucket of an unpartitioned table, or of
   * each bucket of each live partition (in creation order) of a partitioned one.
   */
  describeTable(name: string): TableRoute {
    const view = this.member.view;
    const table = this.table(view, name);
    const leadersOf = (partition: string | null) =>
      Array.from({ length: table.buckets }, (_, bucket) => {
        const record = getIn(view.buckets, bucketId(table.id, partition, bucket));
        const leader = record?.leader ? ownRecord(view.nodes, record.leader) : undefined;
        return record && leader ? { node: leader.id, address: leader.address, leaderEpoch: record.leaderEpoch, ...(leader.http ? { http: leader.http } : {}) } : null;
      });
    return {
      table: table.name,
      tableId: table.id,
      kind: table.kind,
      columns: table.columns,
      primaryKey: table.primaryKey,
      bucketKey: table.bucketKey,
      buckets: table.buckets,
      leaders: table.partition ? [] : leadersOf(null),
      ...(table.partition ? { partition: table.partition, partitions: table.partitions.map((partition) => ({ name: partition, leaders: leadersOf(partition) })) } : {}),
    };
  }

  async append(request: AppendBucketRequest): Promise<AppendBucketResult> {
    const { table, record } = this.leadOrRedirect(request);
    if (table.kind !== 'log') throw new InvalidArgumentError(`table '${table.name}' is a primary-key table: use put`);
    refuseKafkaFormat(table, 'appended to');
    const batch = this.batchOf(table, request);
    // Only the partition column is decoded: a row of another partition would be stored where no scan of its partition finds it.
    if (table.partition) this.checkPartitionOfEach(table, record, decodeBatch(table.columns, batch.payload, [table.partition.column]).rows, 'row');
    const id = bucketId(record.tableId, record.partition, record.bucket);
    const writer = request.writer;
    if (!writer) return this.write(id, record, batch);
    return this.writeIdempotently(id, record, checkedWriter(writer, false), refuseAppendSequence, (stamped) => this.write(id, record, batch, stamped), (written) => ({
      ...this.resultOf(record, written.baseOffset, written.count),
      duplicate: true,
    }));
  }

  /**
   * An idempotent write of one batch: retries never duplicate records. The committed writer state in the
   * view answers a batch committed before (even by a previous leader) through `duplicateOf`; an attempt
   * still in flight here is joined; any other sequence than the next is refused with `refuse`'s error.
   * `write` writes the batch, recording the writer's sequence with its range. With `content`, a duplicate or
   * joining batch must hold the records of the batch it repeats (the stored one is read back), else it is
   * refused as `reused`.
   */
  private writeIdempotently<T>(
    id: string,
    record: BucketRecord,
    writer: IdempotentWriter,
    refuse: RefuseSequence,
    write: (stamped: { id: string; seq: number }) => Promise<T>,
    duplicateOf: (batch: WriterBatch) => T,
    content?: RetryContent,
  ): Promise<T> {
    const writerKey = `${id}|${writer.id}`;
    const inFlight = (this.writesInFlight.get(writerKey) ?? NO_WRITES) as ReadonlyMap<number, WriteInFlight<T>>;
    // A batch the view shows committed, answered with its offsets once it is known to hold these records.
    const answerDuplicate = async (batch: WriterBatch): Promise<T> => {
      if (content && !(await this.storedBatchHolds(id, batch.baseOffset, content))) throw refuse(writer, { kind: 'reused', baseOffset: batch.baseOffset });
      return duplicateOf(batch);
    };
    const decision = decideWriterSequence({ ...sequenceOf(writer), committed: writerOf(record.stream, writer.id), inFlight, inFlightBatchOf: (seq) => inFlight.get(seq) });
    switch (decision.kind) {
      case 'duplicate':
        return answerDuplicate(decision.batch);
      case 'join': {
        const joined = inFlight.get(writer.seq)!;
        if (content && joined.payload && !content.sameRecords(joined.payload, content.payload)) return Promise.reject(refuse(writer, { kind: 'reused', baseOffset: null }));
        return joined.attempt;
      }
      case 'conflict':
      case 'outOfOrder':
        return Promise.reject(refuse(writer, decision));
      case 'write':
        break;
      default:
        return decision satisfies never;
    }
    const writes = (this.writesInFlight.get(writerKey) ?? new Map<number, WriteInFlight<unknown>>()) as Map<number, WriteInFlight<T>>;
    this.writesInFlight.set(writerKey, writes);
    const attempt = write({ id: writer.id, seq: writer.seq })
      .catch((error: unknown) => {
        // An earlier attempt whose commit's outcome was unknown (a metadata leader failover) may have applied
        // after this one was taken, and then this one is refused for it (by the WAL writer for its sequence,
        // or by the commit for its offsets): the batch is committed, so the writer gets its offsets, as for
        // any duplicate (when it holds these records).
        const committed = this.committedBatchOf(id, writer);
        if (committed === undefined) throw error;
        return answerDuplicate(committed);
      })
      .finally(() => {
        // A failed batch fails the writer's later batches of this stream too (the WAL writer's rule), so
        // none of them stays in flight; a committed one is in the view now.
        writes.delete(writer.seq);
        if (writes.size === 0 && this.writesInFlight.get(writerKey) === writes) this.writesInFlight.delete(writerKey);
      });
    writes.set(writer.seq, { attempt, firstSeq: writer.firstSeq, payload: content?.payload });
    return attempt;
  }

  /**
   * Whether the stored batch at `baseOffset` of stream `id` holds the records of `content`. A batch no longer
   * stored (trimmed by retention) cannot be told apart, and is taken for the same, as Kafka takes any batch
   * with the sequences of one it remembers.
   */
  private async storedBatchHolds(id: string, baseOffset: number, content: RetryContent): Promise<boolean> {
    let read;
    try {
      read = await this.reader.read(id, baseOffset, 1, { bytesMax: 1 });
    } catch (error) {
      if (error instanceof MinkError && error.code === 'NotFound') return true;
      throw error;
    }
    const stored = read.batches.find((batch) => batch.startOffset === baseOffset);
    return stored === undefined || content.sameRecords(stored.payload, content.payload);
  }


  /** The batch the view now shows committed for the writer's sequence on stream `id`, if any. */
  private committedBatchOf(id: string, writer: IdempotentWriter): WriterBatch | undefined {
    const stream = getIn(this.member.view.buckets, id)?.stream;
    const committed = stream === undefined ? undefined : writerOf(stream, writer.id);
    const decision = decideWriterSequence({ ...sequenceOf(writer), committed, inFlight: NO_WRITES });
    return decision.kind === 'duplicate' ? decision.batch : undefined;
  }

  /**
   * Seed: a table-addressed write is split by bucket (of each partition, on a partitioned table) and each
   * part forwarded to its leader. A row of a partition that does not exist fails the whole write, unsent.
   */
  async appendTable(request: AppendTableRequest): Promise<AppendTableResult> {
    const table = this.table(this.member.view, request.table);
    refuseKafkaFormat(table, 'appended to');
    const rows = validateRows(table.columns, request.rows);
    const results = await this.forwardByBucket(
      table,
      this.partsByBucket(table, rows, 'row', this.spreadCounter++),
      (address, bucketRows): AppendBucketRequest => ({ op: 'append', ...address, rows: rowsToJson(table.columns, bucketRows) }),
      (body) => this.append(body),
    );
    return { appended: rows.length, buckets: results };
  }

  /** A table-addressed put or delete of a PK table, split by partition and bucket key and forwarded like appendTable. */
  async writeTable(request: PutTableRequest | DeleteTableRequest): Promise<WriteTableResult> {
    const table = this.table(this.member.view, request.table);
    if (table.kind !== 'pk') throw new InvalidArgumentError(`table '${table.name}' is a log table: use append`);
    if (request.op === 'putTable') {
      const { rows, partialColumns } = this.putRowsOf(table, { rows: request.rows, columns: request.columns });
      const columns = columnsInTableOrder(table.columns, partialColumns);
      const results = await this.forwardByBucket(
        table,
        this.partsByBucket(table, rows, 'row', 0),
        (address, bucketRows): PutBucketRequest => ({
          op: 'put',
          ...address,
          rows: rowsToJson(columns, bucketRows),
          ...(partialColumns ? { columns: partialColumns } : {}),
        }),
        (body) => this.put(body),
      );
      return { written: rows.length, buckets: results };
    }
    const keys = this.keysOf(table, request.keys);
    const keyColumns = columnsInTableOrder(table.columns, table.primaryKey);
    const results = await this.forwardByBucket(
      table,
      this.partsByBucket(table, keys, 'key', 0),
      (address, bucketKeys): DeleteBucketRequest => ({ op: 'delete', ...address, keys: rowsToJson(keyColumns, bucketKeys) }),
      (body) => this.delete(body),
    );
    return { written: keys.length, buckets: results };
  }

  /**
   * The rows (or keys) of a table-addressed write by the bucket they go to, as the client splits them
   * (`indexesByTarget`); refuses the whole write when a row's partition is not among the table's in this
   * node's view.
   */
  private partsByBucket(table: TableRecord, items: Row[], what: 'row' | 'key', spread: number): { target: BucketTarget; part: Row[] }[] {
    const partitions = partitionsOfItems(partitioningOf(table), items, what);
    const missing = missingPartitions(new Set(partitions), table.partitions);
    if (missing.length > 0) throw missingPartitionError(table.name, missing[0]!, table.partitions, { what, index: partitions.indexOf(missing[0]!) });
    return indexesByTarget(items, partitions, table, spread).map(({ target, indexes }) => ({ target, part: indexes.map((index) => items[index]!) }));
  }

  /**
   * Sends each bucket's part to the bucket's leader: served here when this node leads it, else forwarded
   * over NATS. Answers by partition, then bucket. Every part was validated by the caller, so a rejection
   * is about routing (no leader yet, a move in progress) and the caller's client retries the whole write.
   */
  private async forwardByBucket<Part, Body extends BucketAddress, Result extends { partition?: string; bucket: number }>(
    table: TableRecord,
    parts: { target: BucketTarget; part: Part }[],
    bodyOf: (address: BucketAddress, part: Part) => Body,
    serveHere: (body: Body) => Promise<Result>,
  ): Promise<Result[]> {
    const view = this.member.view;
    const results = await Promise.all(
      parts.map(async ({ target, part }) => {
        const body = bodyOf({ table: table.name, tableId: table.id, ...target }, part);
        const route = routeTablePart(view, this.self.nodeId, bucketId(table.id, target.partition, target.bucket));
        switch (route.to) {
          case 'here':
            return serveHere(body);
          case 'leader':
            return requestJson<Result>(this.member.nc, SUBJECTS.nodeRpc(route.leader.address), body);
          case 'noLeader':
            throw new UnavailableError(`${bucketNameOf(table, target)} has no leader yet`);
        }
      }),
    );
    return results.sort((a, b) => (a.partition ?? '').localeCompare(b.partition ?? '') || a.bucket - b.bucket);
  }

  /**
   * One page of a bucket's records from `offset` as an Arrow IPC stream (see `ScanPage`), cut from the
   * stored batches without decoding rows. At the high watermark with `waitMs`, waits for the next commit
   * to the bucket (or the deadline) before answering; leadership and the read fence are checked again after.
   * A page is at most `LIMITS.scanPageBytesMax`; one sent over NATS (`transport`) also at most what one
   * message of this connection holds, while one sent over the internal HTTP route is not cut to a message.
   */
  async scan(request: ScanRequest, transport: 'nats' | 'http' = 'nats'): Promise<WithBinary> {
    this.readFence.check();
    let { table, record } = this.leadOrRedirect(request);
    const offset = request.offset ?? 0;
    const limit = Math.min(request.limit ?? LIMITS.scanRecordsDefault, LIMITS.scanRecordsMax);
    const waitMs = request.waitMs ?? 0;
    if (!Number.isSafeInteger(offset) || offset < 0) throw new InvalidArgumentError(`offset must be a non-negative integer, got ${request.offset}`);
    if (!Number.isSafeInteger(limit) || limit < 1) throw new InvalidArgumentError(`limit must be a positive integer, got ${request.limit}`);
    if (!Number.isSafeInteger(waitMs) || waitMs < 0 || waitMs > LIMITS.scanWaitMsMax) {
      throw new InvalidArgumentError(`wait must be from 0 to ${LIMITS.scanWaitMsMax} ms, got ${String(request.waitMs)}`);
    }
    // No projection, or an empty one, scans every column.
    const columns = request.columns === undefined || (Array.isArray(request.columns) && request.columns.length === 0) ? undefined : this.columnList(table, request.columns, 'columns');
    const id = bucketId(record.tableId, record.partition, record.bucket);
    if (waitMs > 0 && offset >= record.stream.endOffset) {
      const deadline = this.nowMs() + waitMs;
      while (offset >= this.endOffsetOf(id) && this.nowMs() < deadline) await this.commits.wait(id, deadline - this.nowMs());
      this.readFence.check();
      ({ table, record } = this.leadOrRedirect(request));
    }
    const bytesMax =
      transport === 'http' ? LIMITS.scanPageBytesMax : Math.min(LIMITS.scanPageBytesMax, (this.member.nc.info?.max_payload ?? LIMITS.scanPageBytesMax) - LIMITS.scanPageHeaderBytesMax);
    const read = await this.reader.read(id, offset, limit, { bytesMax, sequential: true });
    const layout = { columns: projectedColumns(table.columns, columns), changelog: table.kind === 'pk' };
    let from = Math.max(offset, read.startOffset);
    // A topic's stored Kafka record batches are read as rows of its columns (key, value, headers).
    let batches = logFormatOf(table) === 'kafka' ? read.batches.map((batch) => arrowBatchOfStoredRecordBatch(table.name, batch)) : read.batches;
    // The union read: records below a trimmed stream's start come from the lake, which holds them (retention
    // never trims above the lake offset); this page ends where the stream starts, and the next reads it.
    // (A lake that does not reach the stream's start, e.g. enabled after a trim, cannot bridge: the scan begins at the start.)
    const lakeBucket = lakeBucketOf(table, record.partition, record.bucket);
    if (offset < read.startOffset && this.lakeReads && table.kind === 'log' && lakeBucket !== null && (table.lake?.offsets[String(lakeBucket)] ?? 0) >= read.startOffset) {
      batches = await this.lakeReads.read(table, lakeBucket, offset, read.startOffset, limit);
      from = offset;
    }
    const page = encodeScanPage(layout, batches, from, limit, bytesMax);
    const result: Omit<ScanPage, 'batch'> = { records: page.records, nextOffset: page.nextOffset, highWatermark: read.highWatermark, startOffset: read.startOffset };
    return new WithBinary(result, page.stream);
  }

  /**
   * Kafka produce to a `kafka`-format table: one record batch of one bucket, stored as received (docs/architecture.md §8.4)
   * and taking the offsets it holds; its base offset is written into it once the WAL writer assigns it.
   * Batches are queued in call order, so they commit in that order or fail together with what follows them.
   * Resolves with the batch's base offset once it is committed.
   *
   * A batch of an idempotent producer carries `producer`: its writer (the producer's writer id, the
   * sequences the batch covers) is recorded with its range, so a retry is answered with the original base
   * offset by whichever node leads the bucket then, and a sequence that is not the next is refused with
   * `producer.refuse`'s error; a batch with the sequences of one committed or in flight that holds other
   * records is refused as `reused`. A transactional batch also names its producer's epoch
   * (`producer.transaction`): it opens the producer's transaction on the partition (StreamRecord.transactions).
   */
  appendRecordBatch(
    tableName: string,
    bucket: number,
    batch: RecordBatchToStore,
    producer?: { writer: IdempotentWriter; refuse: RefuseSequence; transaction?: { producerId: number; producerEpoch: number } },
  ): Promise<{ baseOffset: number; startOffset: number }> {
    const { table, record } = this.leadBucketOf(tableName, bucket);
    if (logFormatOf(table) !== 'kafka') throw new InvalidArgumentError(`table '${table.name}' is not a Kafka topic: it stores Arrow batches, write rows to it`);
    const id = bucketId(record.tableId, record.partition, record.bucket);
    const startOffset = record.stream.startOffset;
    const transaction = producer?.transaction;
    const write = async (writer?: { id: string; seq: number }) => {
      const { baseOffset } = await this.wal.append({
        ...walStreamOf(record),
        payload: batch.bytes,
        recordCount: batch.offsetCount,
        stampBaseOffset: batch.stampBaseOffset,
        ...(writer ? { writer } : {}),
        ...(transaction ? { transaction: { producerId: transaction.producerId, producerEpoch: transaction.producerEpoch } } : {}),
      });
      return { baseOffset, startOffset };
    };
    if (!producer) return write();
    // A producer's retry holds the records of the batch it repeats; kafkajs may send other records under its sequences.
    const content: RetryContent = { payload: batch.bytes, sameRecords: (first, second) => sameRecords(first, second, LIMITS.kafkaFrameBytesMax) };
    return this.writeIdempotently(id, record, producer.writer, producer.refuse, write, (written) => ({ baseOffset: written.baseOffset, startOffset }), content);
  }

  /**
   * Writes a transaction marker (a control batch) to a partition led here, for the transaction coordinator:
   * it closes the producer's transaction on the partition (committed, or aborted and remembered as such for
   * read_committed fetches) and fences the producer's older epochs there. From the moment it is queued,
   * transactional batches of an older epoch are refused here (`producerEpochFloorOf`), so none can land
   * after the marker and open a transaction nobody will end. Resolves with the marker's offset once committed.
   */
  async appendTransactionMarker(tableName: string, bucket: number, marker: Omit<TransactionMarker, 'timestamp'>): Promise<{ offset: number }> {
    const { table, record } = this.leadBucketOf(tableName, bucket);
    if (logFormatOf(table) !== 'kafka') throw new InvalidArgumentError(`table '${table.name}' is not a Kafka topic: it takes no transaction markers`);
    const id = bucketId(record.tableId, record.partition, record.bucket);
    const fenceKey = `${id}|${marker.producerId}`;
    this.pendingMarkerEpochs.set(fenceKey, Math.max(this.pendingMarkerEpochs.get(fenceKey) ?? -1, marker.producerEpoch));
    try {
      const { baseOffset } = await this.wal.append({
        ...walStreamOf(record),
        payload: encodeTransactionMarker({ ...marker, timestamp: this.nowMs() }),
        recordCount: 1,
        stampBaseOffset: setBaseOffset,
        transaction: { producerId: marker.producerId, producerEpoch: marker.producerEpoch, marker: marker.commit ? 'commit' : 'abort' },
      });
      return { offset: baseOffset };
    } finally {
      // Committed, the view now holds the epoch; failed, the coordinator writes the marker again.
      if (this.pendingMarkerEpochs.get(fenceKey) === marker.producerEpoch) this.pendingMarkerEpochs.delete(fenceKey);
    }
  }

  /**
   * The oldest epoch of `producerId` a batch to stream `bucketId` may carry: the newest a marker was written
   * with there (committed, or queued here), -1 when none was.
   */
  producerEpochFloorOf(bucketIdOfStream: string, producerId: number): number {
    const stream = getIn(this.member.view.buckets, bucketIdOfStream)?.stream;
    return Math.max(markerEpochOf(stream?.transactions, producerId), this.pendingMarkerEpochs.get(`${bucketIdOfStream}|${producerId}`) ?? -1);
  }

  /**
   * Kafka fetch from a `kafka`-format table: the stored record batches from the one holding `offset`, whole
   * (the first one whatever its size), up to about `bytesMax`. Reads are served under the read fence, as scans are.
   * `readCommitted` (isolation_level 1) stops at the last stable offset (the first offset of the oldest open
   * transaction) and names the aborted transactions among what it returns, for the client to skip.
   */
  async readRecordBatches(tableName: string, bucket: number, offset: number, bytesMax: number, readCommitted = false): Promise<RecordBatchesRead> {
    this.readFence.check();
    const { table, record } = this.leadBucketOf(tableName, bucket);
    const id = bucketId(record.tableId, record.partition, record.bucket);
    const lastStableOffset = lastStableOffsetOf(record.stream);
    const readable = readCommitted ? lastStableOffset - offset : Number.MAX_SAFE_INTEGER;
    const bounds = { highWatermark: record.stream.endOffset, startOffset: record.stream.startOffset, lastStableOffset };
    if (readable <= 0) return { batches: [], ...bounds, abortedTransactions: [] };
    const read = await this.reader.read(id, offset, readable, { bytesMax, sequential: true });
    const stored = readCommitted ? read.batches.filter((batch) => batch.startOffset < lastStableOffset) : read.batches;
    const readBounds = { highWatermark: read.highWatermark, startOffset: read.startOffset, lastStableOffset };
    if (logFormatOf(table) === 'kafka') {
      const end = stored.at(-1)?.endOffset ?? offset;
      const abortedTransactions = readCommitted ? abortedTransactionsIn(record.stream.transactions, offset, end) : [];
      return { batches: stored.map((batch) => batch.payload), ...readBounds, abortedTransactions };
    }
    // Any other table reads as a topic of JSON rows (keys: the primary key; PK changelogs name the change
    // in a header), one uncompressed record batch per stored batch, within about `bytesMax` (the first whole).
    const batches: Uint8Array[] = [];
    let bytes = 0;
    for (const batch of stored) {
      const converted = recordBatchOfStoredRows(table, batch);
      if (batches.length > 0 && bytes + converted.byteLength > bytesMax) break;
      batches.push(converted);
      bytes += converted.byteLength;
    }
    return { batches, ...readBounds, abortedTransactions: [] };
  }

  /** True when this node leads bucket `bucket` of the table and it is open. */
  serves(tableName: string, bucket: number): boolean {
    try {
      this.leadBucketOf(tableName, bucket);
      return true;
    } catch {
      return false;
    }
  }

  /** The committed end, last stable offset (see lastStableOffsetOf) and first retained offset of a bucket this node leads (any format). */
  streamBoundsOf(tableName: string, bucket: number): { endOffset: number; lastStableOffset: number; startOffset: number; bucketId: string } {
    const { record } = this.leadBucketOf(tableName, bucket);
    return {
      endOffset: record.stream.endOffset,
      lastStableOffset: lastStableOffsetOf(record.stream),
      startOffset: record.stream.startOffset,
      bucketId: bucketId(record.tableId, record.partition, record.bucket),
    };
  }

  /** Resolves at the next commit to one of the buckets, or at the deadline. */
  async waitForCommit(bucketIds: readonly string[], deadlineMs: number): Promise<void> {
    const remainingMs = deadlineMs - this.nowMs();
    if (remainingMs <= 0 || bucketIds.length === 0) return;
    await Promise.race(bucketIds.map((id) => this.commits.wait(id, remainingMs)));
  }

  private endOffsetOf(id: string): number {
    return getIn(this.member.view.buckets, id)?.stream.endOffset ?? 0;
  }

  /** Upserts into a PK bucket; a partial put names its columns, which must include the primary key. */
  async put(request: PutBucketRequest): Promise<WriteBucketResult> {
    const { table, record, bucket } = this.pkBucketOf(request);
    const { rows, partialColumns, batches } = this.putRowsOf(table, request);
    this.checkOperationCount(rows.length);
    this.checkPartitionOfEach(table, record, rows, 'row');
    this.checkBucketOfEach(table, record, rows, 'row');
    const operations: PkOperation[] = rows.map((row) => (partialColumns ? { kind: 'put', row, partialColumns } : { kind: 'put', row }));
    // A whole-row put's batches may become its changelog as they are (when all its keys are new).
    return this.writeResultOf(record, await bucket.write(operations, pkWriterOf(request.writer), partialColumns ? undefined : batches, partCountsOf(request.parts)));
  }

  /** Deletes keys from a PK bucket, as its table's delete behaviour allows. */
  async delete(request: DeleteBucketRequest): Promise<WriteBucketResult> {
    const { table, record, bucket } = this.pkBucketOf(request);
    const keys = this.deletedKeysOf(table, request);
    this.checkOperationCount(keys.length);
    this.checkPartitionOfEach(table, record, keys, 'key');
    this.checkBucketOfEach(table, record, keys, 'key');
    return this.writeResultOf(record, await bucket.write(keys.map((key) => ({ kind: 'delete', key })), pkWriterOf(request.writer)));
  }

  lookup(request: LookupBucketRequest): LookupResult {
    this.readFence.check();
    const { table, record, bucket } = this.pkBucketOf(request);
    const projection = request.columns === undefined ? undefined : this.columnList(table, request.columns, 'columns');
    const keys = this.keysOf(table, request.keys);
    if (keys.length > LIMITS.lookupKeysPerRequestMax) {
      throw new InvalidArgumentError(`a lookup holds at most ${LIMITS.lookupKeysPerRequestMax} keys, got ${keys.length}`);
    }
    this.checkPartitionOfEach(table, record, keys, 'key');
    this.checkBucketOfEach(table, record, keys, 'key');
    return { rows: bucket.lookup(keys, projection) };
  }

  prefixLookup(request: PrefixLookupBucketRequest): PrefixLookupResult {
    this.readFence.check();
    const { table, record, bucket } = this.pkBucketOf(request);
    if (table.bucketKey.length >= table.primaryKey.length) {
      throw new InvalidArgumentError(
        `table '${table.name}' has the whole primary key as its bucket key: a prefix lookup needs a bucket key that is a proper prefix of the primary key; use lookup`,
      );
    }
    const projection = request.columns === undefined ? undefined : this.columnList(table, request.columns, 'columns');
    const limit = request.limit ?? LIMITS.prefixLookupRowsMax;
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > LIMITS.prefixLookupRowsMax) {
      throw new InvalidArgumentError(`limit must be an integer from 1 to ${LIMITS.prefixLookupRowsMax}, got ${request.limit}`);
    }
    const prefixes = validateRows(table.columns, request.prefixes, { allowedColumns: table.bucketKey, required: table.bucketKey });
    if (prefixes.length > LIMITS.lookupKeysPerRequestMax) {
      throw new InvalidArgumentError(`a prefix lookup holds at most ${LIMITS.lookupKeysPerRequestMax} prefixes, got ${prefixes.length}`);
    }
    this.checkBucketOfEach(table, record, prefixes, 'prefix');
    const bytesPerPrefix = Math.floor(LIMITS.scanReplyBytesMax / prefixes.length);
    return { results: prefixes.map((prefix) => bucket.prefixLookup(prefix, limit, bytesPerPrefix, projection)) };
  }

  /**
   * A page of the rows of a primary-key bucket led here, in key order after `after` (see PkBucket.rowsAfter):
   * for sweeps of this node's own tables (the Kafka offsets' retention), not served to clients.
   */
  pkRowsAfter(address: BucketAddress, after: Uint8Array | null, limit: number): { rows: Record<string, unknown>[]; lastKey: Uint8Array | null } {
    this.readFence.check();
    return this.pkBucketOf(address).bucket.rowsAfter(after, limit);
  }

  /**
   * Refuses rows or keys that belong to another bucket: a misrouted put would store a key in two buckets,
   * and a misrouted lookup would answer null for a key that exists. Nothing of the request is written.
   */
  private checkBucketOfEach(table: TableRecord, record: BucketRecord, rows: readonly Row[], what: string): void {
    rows.forEach((row, index) => {
      const bucket = bucketOfRow(row, table.bucketKey, table.buckets);
      if (bucket !== record.bucket) {
        throw new InvalidArgumentError(`${what} ${index} belongs to bucket ${bucket} of table '${table.name}', not to bucket ${record.bucket}`);
      }
    });
  }

  /**
   * Refuses rows or keys of a partition's bucket whose partition column names another partition (or none):
   * stored there, a row would be missing from scans of its partition and outlive its partition's retention.
   */
  private checkPartitionOfEach(table: TableRecord, record: BucketRecord, rows: readonly Row[], what: string): void {
    if (!table.partition) return;
    const partitions = partitionsOfItems(partitioningOf(table), rows, what);
    partitions.forEach((partition, index) => {
      if (partition !== record.partition) {
        throw new InvalidArgumentError(`${what} ${index} belongs to partition '${partition}' of table '${table.name}', not to partition '${record.partition}'`);
      }
    });
  }

  private pkBucketOf(address: BucketAddress): { table: TableRecord; record: BucketRecord; bucket: PkBucket } {
    const { table, record } = this.leadOrRedirect(address);
    if (table.kind !== 'pk') throw new InvalidArgumentError(`table '${table.name}' is a log table: use append`);
    const bucket = this.pk.get(bucketId(table.id, record.partition, record.bucket));
    if (!bucket) throw new UnavailableError(`${bucketNameOf(table, record)} is still restoring on node ${this.self.nodeId}`);
    return { table, record, bucket };
  }

  /**
   * The rows of a put, checked against the table: JSON `rows`, or an Arrow `batch` of the put's columns in
   * table order (see PutBucketRequest); a partial put's `columns` must be distinct columns of it.
   */
  private putRowsOf(
    table: TableRecord,
    request: { rows?: unknown; batch?: unknown; columns?: unknown },
  ): { rows: Row[]; partialColumns: string[] | undefined; batches?: CheckedBatch[] } {
    const partialColumns = request.columns === undefined ? undefined : this.columnList(table, request.columns, 'columns');
    if (request.batch !== undefined) {
      return { ...this.rowsOfBatch(columnsInTableOrder(table.columns, partialColumns), request.rows, request.batch, table.primaryKey, 'a put carries rows or a batch, not both'), partialColumns };
    }
    return {
      rows: validateRows(table.columns, request.rows, { required: table.primaryKey, ...(partialColumns ? { allowedColumns: partialColumns } : {}) }),
      partialColumns,
    };
  }

  /** The keys of a delete: JSON `keys`, or an Arrow `batch` of the primary key columns in table order. */
  private deletedKeysOf(table: TableRecord, request: { keys?: unknown; batch?: unknown }): Row[] {
    if (request.batch === undefined) return this.keysOf(table, request.keys);
    return this.rowsOfBatch(columnsInTableOrder(table.columns, table.primaryKey), request.keys, request.batch, table.primaryKey, 'a delete carries keys or a batch, not both').rows;
  }

  /** The rows of a PK write's Arrow batch and its checked record batches (readRowsStream); it comes instead of JSON `json`. */
  private rowsOfBatch(columns: ColumnSpec[], json: unknown, batch: unknown, required: string[], both: string): { rows: Row[]; batches: CheckedBatch[] } {
    if (json !== undefined) throw new InvalidArgumentError(both);
    if (!(batch instanceof Uint8Array)) throw new InvalidArgumentError('batch must be binary Arrow IPC bytes');
    return readRowsStream(columns, batch, { rowCountMax: LIMITS.pkBatchOperationsMax, required });
  }

  /** Keys of a delete or lookup: objects holding exactly the primary key columns. */
  private keysOf(table: TableRecord, keys: unknown): Row[] {
    return validateRows(table.columns, keys, { allowedColumns: table.primaryKey, required: table.primaryKey });
  }

  /** A list of distinct column names of the table, e.g. a projection or the columns of a partial put. */
  private columnList(table: TableRecord, names: unknown, what: string): string[] {
    if (!Array.isArray(names) || names.length === 0 || names.some((name) => typeof name !== 'string')) {
      throw new InvalidArgumentError(`${what} must be a non-empty array of column names`);
    }
    const unknown = names.find((name) => !table.columns.some((column) => column.name === name));
    if (unknown !== undefined) throw new InvalidArgumentError(`${what}: unknown column '${unknown}'`);
    if (new Set(names).size !== names.length) throw new InvalidArgumentError(`${what} names a column twice`);
    return names as string[];
  }

  private checkOperationCount(count: number): void {
    if (count > LIMITS.pkBatchOperationsMax) {
      throw new InvalidArgumentError(`a request writes at most ${LIMITS.pkBatchOperationsMax} rows or keys to one bucket, got ${count}`);
    }
  }

  private writeResultOf(record: BucketRecord, outcome: PkWriteOutcome): WriteBucketResult {
    const { parts, ...whole } = outcome;
    if (parts === undefined) return { ...whereIs(record), ...whole };
    // A part refused on its own travels as its error, for the client to give the call it came from.
    return { ...whereIs(record), ...whole, parts: parts.map((part) => ('error' in part ? toErrorBody(part.error) : part)) };
  }

  /**
   * The batch an append stores, stamped with this node's time: from an Arrow batch (its schema and structure
   * checked against the table, values not converted one by one) or from JSON rows (each value validated).
   */
  private batchOf(table: TableRecord, request: AppendBucketRequest): StampedBatch {
    if (request.batch !== undefined) {
      if (request.rows !== undefined) throw new InvalidArgumentError('an append carries rows or a batch, not both');
      if (!(request.batch instanceof Uint8Array)) throw new InvalidArgumentError('batch must be binary Arrow IPC bytes');
      return stampBatch(table.columns, request.batch, this.nowMs(), LIMITS.appendRowsPerRequestMax);
    }
    const rows = validateRows(table.columns, request.rows);
    if (rows.length > LIMITS.appendRowsPerRequestMax) {
      throw new InvalidArgumentError(`a request appends at most ${LIMITS.appendRowsPerRequestMax} rows to one bucket, got ${rows.length}`);
    }
    return { payload: encodeBatch(table.columns, rows, this.nowMs()), rowCount: rows.length };
  }

  private async write(id: string, record: BucketRecord, batch: StampedBatch, writer?: { id: string; seq: number }): Promise<AppendBucketResult> {
    const { baseOffset, count } = await this.wal.append({
      bucketId: id,
      tableId: record.tableId,
      partition: record.partition,
      bucket: record.bucket,
      streamEpoch: this.sync.streamEpochOf(id),
      payload: batch.payload,
      recordCount: batch.rowCount,
      writer,
    });
    return this.resultOf(record, baseOffset, count);
  }

  private resultOf(record: BucketRecord, baseOffset: number, count: number): AppendBucketResult {
    return { ...whereIs(record), baseOffset, count };
  }

  private table(view: View, name: string): TableRecord {
    const table = typeof name === 'string' ? getIn(view.tables, name) : undefined;
    if (!table) throw new NotFoundError(`table '${name}' does not exist`);
    return table;
  }

  /** `leadOrRedirect` for bucket `bucket` of an unpartitioned table named as it is now (the Kafka paths: a topic has no partitions of its own). */
  private leadBucketOf(tableName: string, bucket: number): { table: TableRecord; record: BucketRecord } {
    const table = this.table(this.member.view, tableName);
    if (table.partition) throw new InvalidArgumentError(`partitioned table '${table.name}' is not readable or writable as a topic`);
    return this.leadOrRedirect({ table: table.name, tableId: table.id, partition: null, bucket });
  }

  /**
   * The redirect table of docs/ownership.md §6 (routeBucketRequest) carried out: the bucket's table and record when this node
   * serves it, else the typed error of the decision: NotLeader with the leader's address, Unavailable while
   * it has no leader or is opening here, NotFound or InvalidArgument for an address the view does not hold.
   */
  private leadOrRedirect(address: BucketAddress): { table: TableRecord; record: BucketRecord } {
    const decision = routeBucketRequest(this.member.view, this.self.nodeId, { has: (id) => this.sync.isOpen(id) }, address);
    if (decision.route === 'serve') return { table: decision.table, record: decision.record };
    throw this.errorOfRoute(decision, address);
  }

  /** The error a request gets for a decision other than `serve`. */
  private errorOfRoute(decision: Exclude<RouteDecision, { route: 'serve' }>, address: BucketAddress): MinkError {
    switch (decision.route) {
      case 'noTable':
        return new NotFoundError(`table '${String(decision.name)}' does not exist`);
      case 'tableRecreated':
        return new NotFoundError(`table '${address.table}' was dropped and re-created: refresh its metadata`);
      case 'badBucket':
        return new InvalidArgumentError(`bucket must be an integer in [0, ${decision.table.buckets}), got ${String(decision.bucket)}`);
      case 'notPartitioned':
        return new InvalidArgumentError(`table '${decision.table.name}' is not partitioned: a request for it names no partition, got ${JSON.stringify(decision.partition)}`);
      case 'partitionRequired':
        return new InvalidArgumentError(`table '${decision.table.name}' is partitioned by '${decision.table.partition!.column}': a request for it names a partition`);
      case 'noPartition':
        return new NotFoundError(`partition '${String(decision.partition)}' of table '${decision.table.name}' does not exist`);
      case 'noBucket':
        return new NotFoundError(`${bucketNameOf(decision.table, decision)} does not exist`);
      case 'noLeader':
        return new UnavailableError(`${bucketNameOf(decision.table, decision.record)} has no leader yet`);
      case 'redirect': {
        const { table, record, leader } = decision;
        return new NotLeaderError(`node ${this.self.nodeId} does not lead ${bucketNameOf(table, record)}`, {
          table: table.name,
          ...(record.partition !== null ? { partition: record.partition } : {}),
          bucket: record.bucket,
          node: record.leader!,
          to: leader?.address ?? SUBJECTS.nodeAddress(record.leader!),
          leaderEpoch: record.leaderEpoch,
          ...(leader?.http ? { http: leader.http } : {}),
        });
      }
      case 'opening':
        return new UnavailableError(`${bucketNameOf(decision.table, decision.record)} is still opening on node ${this.self.nodeId}`);
    }
  }
}

/** A table's partitioning as the routing functions of @mink/client take it. */
function partitioningOf(table: TableRecord): Partitioning {
  return { table: table.name, columns: table.columns, ...(table.partition ? { partition: table.partition } : {}) };
}

/** How messages name a bucket: `bucket 3 of table 'events'`, or `bucket 3 of partition '2026120117' of table 'events'`. */
function bucketNameOf(table: TableRecord, where: { partition: string | null; bucket: number }): string {
  return `bucket ${where.bucket}${where.partition === null ? '' : ` of partition '${where.partition}'`} of table '${table.name}'`;
}

/** The bucket and, for a partitioned table, the partition of a result, as the wire shapes name them. */
function whereIs(record: BucketRecord): { bucket: number; partition?: string } {
  return { bucket: record.bucket, ...(record.partition !== null ? { partition: record.partition } : {}) };
}
