import { randomUUID } from 'node:crypto';
import type { NatsConnection } from 'nats';
import { CLIENT_BACKOFF, LIMITS, backoffDelayMs, sleep } from '@mink/config';
import { bucketRetryOf } from './bucket-retry';
import type { ColumnSpec } from '@mink/meta';
import {
  MinkError,
  NotFoundError,
  SUBJECTS,
  UnavailableError,
  type AppendBucketRequest,
  type AppendBucketResult,
  type AppendTableResult,
  type BucketAddress,
  type BucketLeader,
  type DeleteBucketRequest,
  type LookupBucketRequest,
  type LookupResult,
  type PrefixLookupBucketRequest,
  type TransactionMarkerRequest,
  type TransactionOffsetsRequest,
  type PrefixLookupResult,
  type PutBucketRequest,
  type ScanPage,
  type ScanRequest,
  type ScanResult,
  type TableRoute,
  type WriteBucketResult,
  type WriteTableResult,
} from '@mink/protocol';
import { type RecordBatch, Table, tableFromIPC, tableToIPC } from 'apache-arrow';
import { bucketsOfBatch, checkRowsStream, columnsInTableOrder, encodeRowsOfBatch, fieldOf, rowsToJson, scanJsonText, setField, validateRows, type BucketingOfRows, type Row, type RowsByBucket } from '@mink/records';
import { requestJson } from '@mink/transport';
import { isScanCredentialsRefusal, type HttpScanPages } from './http-scan-pages';
import {
  indexesByBucket,
  indexesByTarget,
  missingPartitionError,
  missingPartitions,
  partitionsOfItems,
  scanPartitionOf,
  targetKeyOf,
  type BucketTarget,
  type TargetIndexes,
} from './partition-routing';
import {
  APPEND_REQUEST_BOUNDS,
  arrowChunksOf,
  boundedEncodings,
  mergedAppends,
  splitAppendResult,
  splitWriteResult,
  LOOKUP_REQUEST_BOUNDS,
  PK_WRITE_REQUEST_BOUNDS,
  byBucketThenOffset,
  chunksOf,
  fillsRequest,
  jsonBytesOf,
  prefixLookupRequestBounds,
  reassemble,
  writeTableResultOf,
  type AnsweredChunk,
  type RequestBounds,
} from './request-planning';
import {
  partialPutColumnsOf,
  prefixColumnsOf,
  prefixLimitOf,
  scanArgumentsOf,
  projectionOf,
  requireItems,
  requireKind,
  requirePrimaryKeyTable,
  requireProperPrefixBucketKey,
} from './table-arguments';

export interface ScanOptions {
  /** The partition to scan: required for a partitioned table, refused for an unpartitioned one. */
  partition?: string;
  bucket: number;
  offset?: number;
  /** Records to return at most, from 1 to LIMITS.scanRecordsMax; LIMITS.scanRecordsDefault when absent. */
  limit?: number;
  columns?: string[];
  /** At the high watermark, how long to wait for records (long-poll), up to LIMITS.scanWaitMsMax; 0 answers at once. */
  waitMs?: number;
}

/** A scan's records as Arrow: the projected columns, `_offset`, `_timestamp`, and `_change` on a PK changelog. */
export interface ScanArrowResult {
  table: Table;
  nextOffset: number;
  highWatermark: number;
}

export interface PutOptions {
  /** A partial put: only these columns are set (they must include the primary key); the others keep their stored values. */
  columns?: string[];
}

export interface LookupOptions {
  /** Projection of the rows returned, in this order; all columns when absent. */
  columns?: string[];
}

export interface PrefixLookupOptions extends LookupOptions {
  /** Rows returned per prefix at most, from 1 to LIMITS.prefixLookupRowsMax (also the default). */
  limit?: number;
}

/** Every request TableClient sends to one bucket's leader, and what each answers. */
type BucketRequest =
  | AppendBucketRequest
  | ScanRequest
  | PutBucketRequest
  | DeleteBucketRequest
  | LookupBucketRequest
  | PrefixLookupBucketRequest
  | TransactionMarkerRequest
  | TransactionOffsetsRequest;

interface BucketAnswers {
  append: AppendBucketResult;
  scan: ScanPage;
  put: WriteBucketResult;
  delete: WriteBucketResult;
  lookup: LookupResult;
  prefixLookup: PrefixLookupResult;
  txnMarker: { offset: number };
  txnOffsets: { errorCode: number };
}

/**
 * One table, as the client sees it: its schema and where each bucket's leader is. Calls are validated
 * here first (a bad row or key fails the whole call before anything is sent), split by partition (on a
 * partitioned table, by the partition column's value) and then by bucket key, and sent to each bucket's
 * leader; `NotLeader` updates the cached leader from the redirect and retries there, and a bucket in
 * hand-off (`Fenced`, `Unavailable`, `Timeout`, `NotLeader` without a redirect) is retried with bounded
 * backoff at the leader a fresh route names (bucketRetryOf). A write with a row of a partition the route does not list asks
 * for the route again once (the partition may have just been created) and fails whole, unsent, when it
 * is still not there.
 *
 * Writes to one bucket (appends, puts and deletes alike) go out in call order, up to
 * `appendsInFlightPerBucket` at once, each with this client's writer id for the bucket and a sequence (a
 * bucket of a partition is a bucket of its own); the leader writes them in sequence order, so a later
 * write of a key never overtakes an earlier one, nor a retry (see pumpWrites). A retried append after a
 * lost reply is answered with the original offsets and never stores the rows twice (the view remembers its
 * writer, across leaders). A retried put or delete is answered from the leader's memory while the same
 * leader remembers it, and by any leader without writing when a later request of its writer was acknowledged
 * (it names `newestAcked`); otherwise at a new leader it is written again, which leaves the table in the same
 * state (its changelog may show the repeat). Lookups are not queued behind writes: a lookup sees every write whose
 * call has resolved.
 */
/**
 * The numbered writes (appends, or puts and deletes) of one bucket: the writer this client uses for it (a
 * fresh id per generation, after a request failed for good), the next sequence, the newest acknowledged
 * one, the requests in flight and those waiting for a place in the window.
 */
/**
 * How a numbered write names its writer: id, sequence, the newest acknowledged sequence below it, and the
 * newest acknowledged at all when that is this sequence or later (a retry after a lost reply).
 */
interface NumberedWriter {
  id: string;
  seq: number;
  acked: number;
  newestAcked?: number;
}

interface BucketWrites {
  generation: number;
  nextSeq: number;
  ackedSeq: number;
  /** Sequences of this generation sent and not settled: the window runs from the oldest of them. */
  unsettled: Set<number>;
  /** Requests of ended generations not settled yet: the next generation starts once they have. */
  olderInFlight: number;
  /** Settles when the request sent last settles: a retry of the one after it waits for it. */
  last: Promise<unknown>;
  waiting: WaitingWrite[];
}

/** A write waiting for a place in its bucket's window. */
interface WaitingWrite {
  /** How messages name the writes of this window: `append`, or `write` for puts and deletes. */
  what: 'append' | 'write';
  requestOf: (writer: NumberedWriter) => AppendBucketRequest | PutBucketRequest | DeleteBucketRequest;
  resolve: (result: unknown) => void;
  reject: (error: unknown) => void;
  /**
   * An append's Arrow stream when the client knows it well formed (encoded from validated rows, or checked
   * like the leader checks it): appends waiting behind each other may then go out as one request (see
   * `takeWrite`), since none of them can make the leader refuse the others. Likewise a whole-row put's
   * stream: puts go out as one request of several parts, which the leader plans and answers one by one.
   */
  mergeable?: Uint8Array;
}

export interface TableClientOptions {
  /** Append, put and delete requests in flight per bucket (default LIMITS.writerRequestsInFlightMax; 1 sends one at a time). */
  appendsInFlightPerBucket?: number;
  /**
   * Bytes of appends (or whole-row puts) waiting for a bucket that go out while another request of the
   * bucket is in flight (default LIMITS.appendRequestBytesPipelined, half an append request); smaller ones
   * wait for the bucket's requests to settle and go out merged (see fillsRequest). 1 sends every append or
   * put as soon as the window has room.
   */
  pipelinedAppendBytesMin?: number;
  random?: () => number;
  /**
   * Where scan pages come from when the bucket's leader has an HTTP address: its internal scan route
   * (shared by the tables of one MinkClient). Without it, or for a leader without one, scans go over NATS.
   */
  httpScans?: HttpScanPages;
}

export class TableClient {
  private route: TableRoute | null = null;
  private describing: Promise<TableRoute> | undefined;
  private readonly writerId = randomUUID();
  /** Write pipelines by `targetKeyOf` their bucket. */
  private readonly writesByBucket = new Map<string, BucketWrites>();
  private readonly writesInFlightMax: number;
  private readonly pipelinedAppendBytesMin: number;
  private readonly random: () => number;
  private readonly httpScans: HttpScanPages | undefined;
  /**
   * Write calls are planned (route, validation, queueing by bucket) one at a time in call order, so
   * they enter the bucket queues in call order even when a slow route lookup delays the first of them.
   */
  private writePlanning: Promise<unknown> = Promise.resolve();
  private spreadCounter = Math.floor(Math.random() * 1024);

  constructor(
    private readonly nc: NatsConnection,
    readonly name: string,
    options: TableClientOptions = {},
  ) {
    this.random = options.random ?? Math.random;
    this.httpScans = options.httpScans;
    this.writesInFlightMax = options.appendsInFlightPerBucket ?? LIMITS.writerRequestsInFlightMax;
    if (!Number.isSafeInteger(this.writesInFlightMax) || this.writesInFlightMax < 1 || this.writesInFlightMax > LIMITS.writerBatchesRemembered) {
      throw new MinkError('InvalidArgument', `appendsInFlightPerBucket must be an integer from 1 to ${LIMITS.writerBatchesRemembered}, got ${this.writesInFlightMax}`);
    }
    this.pipelinedAppendBytesMin = options.pipelinedAppendBytesMin ?? LIMITS.appendRequestBytesPipelined;
    if (!Number.isSafeInteger(this.pipelinedAppendBytesMin) || this.pipelinedAppendBytesMin < 1 || this.pipelinedAppendBytesMin > APPEND_REQUEST_BOUNDS.bytesMax) {
      throw new MinkError('InvalidArgument', `pipelinedAppendBytesMin must be an integer from 1 to ${APPEND_REQUEST_BOUNDS.bytesMax}, got ${this.pipelinedAppendBytesMin}`);
    }
  }

  /** Appends rows to a log table; resolves once every row is durable. */
  append(rows: unknown[]): Promise<AppendTableResult> {
    return this.planWrite(async () => {
      const described = await this.describe();
      requireKind(described, 'log');
      const canonical = validateRows(described.columns as ColumnSpec[], rows);
      const { route, parts } = await this.routeItems(described, canonical, 'row', this.spreadCounter++);
      const queued = parts.map(({ target, indexes }) => this.appendToBucket(route, target, indexes.map((index) => canonical[index]!)));
      return { done: Promise.all(queued).then((results) => ({ appended: canonical.length, buckets: byBucketThenOffset(results.flat()) })) };
    });
  }

  /**
   * Appends the rows of Arrow record batches (a RecordBatch, or every batch of a Table) to a log table; the
   * batches' fields must be the table's columns (names and Arrow types as in docs/http-api.md, in table order;
   * no dictionaries). A batch of a table without bucket key (nor partitions), or whose rows all fall in one
   * bucket, is sent as its IPC stream; a batch spanning several buckets is split by copying each bucket's
   * rows out of its column buffers (no row objects). Resolves once every row is durable.
   */
  appendArrow(data: RecordBatch | Table): Promise<AppendTableResult> {
    return this.planWrite(async () => {
      let route = await this.describe();
      requireKind(route, 'log');
      const columns = route.columns as ColumnSpec[];
      const parts: { target: BucketTarget; chunks: Uint8Array[] }[] = [];
      let appended = 0;
      for (const batch of data instanceof Table ? data.batches : [data]) {
        if (batch.numRows === 0) continue;
        appended += batch.numRows;
        const split = await this.arrowPartsOf(route, columns, batch);
        route = split.route;
        parts.push(...split.parts);
      }
      if (appended === 0) throw new MinkError('InvalidArgument', 'rows must not be empty');
      // Checked as the leader checks them (a producer's buffers may hold anything), so a bad batch fails the
      // call before anything is sent and never fails the appends merged with it (see takeWrite).
      for (const { chunks } of parts) for (const chunk of chunks) checkRowsStream(columns, chunk, LIMITS.appendRowsPerRequestMax);
      // Queued only once every batch is routed, so a batch with a row of a missing partition sends nothing.
      const queued = parts.map(({ target, chunks }) => this.queueAppends(route, target, chunks));
      return { done: Promise.all(queued).then((results) => ({ appended, buckets: byBucketThenOffset(results.flat()) })) };
    });
  }

  /**
   * Appends rows a caller has already laid out by bucket from the table's route (its columns, bucket key
   * and bucket count, and the spread start for a table without bucket key), as `readAppendBody` does for
   * the gateway's JSON bodies; each bucket's rows are cut into requests within APPEND_REQUEST_BOUNDS.
   * `encode` runs in call order with the other writes of this client; when it returns null nothing is
   * appended and the call resolves null (the caller then takes the general path). A partitioned table
   * resolves null without calling `encode`: its rows are routed by partition first, which only the
   * general path does.
   */
  appendEncoded(encode: (bucketing: BucketingOfRows) => RowsByBucket | null): Promise<AppendTableResult | null> {
    return this.planWrite(async () => {
      const route = await this.describe();
      requireKind(route, 'log');
      if (route.partition) return { done: Promise.resolve(null) };
      const encoded = encode({ columns: route.columns as ColumnSpec[], bucketKey: route.bucketKey, buckets: route.buckets, spreadStart: this.spreadCounter });
      if (encoded === null) return { done: Promise.resolve(null) };
      this.spreadCounter++;
      const queued = [...encoded.buckets].map(([bucket, rows]) =>
        this.queueAppends(route, { partition: null, bucket }, boundedEncodings(rows.count, (start, end) => rows.encodeRange(start, end), APPEND_REQUEST_BOUNDS)),
      );
      return { done: Promise.all(queued).then((results) => ({ appended: encoded.rowCount, buckets: byBucketThenOffset(results.flat()) })) };
    });
  }

  /**
   * The IPC batches of one record batch by the bucket (and partition) they go to: the batch as it is when
   * one bucket takes all of it, else each bucket's rows copied out. Only the bucket key and partition
   * columns are read row by row.
   */
  private async arrowPartsOf(
    described: TableRoute,
    columns: ColumnSpec[],
    batch: RecordBatch,
  ): Promise<{ route: TableRoute; parts: { target: BucketTarget; chunks: Uint8Array[] }[] }> {
    const routingColumns = [...new Set([...described.bucketKey, ...(described.partition ? [described.partition.column] : [])])];
    if (routingColumns.length === 0) {
      return { route: described, parts: [{ target: { partition: null, bucket: this.spreadCounter++ % described.buckets }, chunks: arrowSlicesOf(batch) }] };
    }
    const { route, parts } = await this.routeArrowRows(described, columns, batch, routingColumns);
    if (parts.length === 1) return { route, parts: [{ target: parts[0]!.target, chunks: arrowSlicesOf(batch) }] };
    // Each bucket's rows are copied out of the batch column by column, without row objects.
    return {
      route,
      parts: parts.map(({ target, indexes }) => ({
        target,
        chunks: boundedEncodings(indexes.length, (start, end) => encodeRowsOfBatch(columns, batch, indexes.slice(start, end)), APPEND_REQUEST_BOUNDS),
      })),
    };
  }

  /**
   * The rows of a record batch by the bucket (and partition) they go to. Without partitions, and with key
   * columns of the types read from their buffers, no row is built; else the routing columns' values are
   * read into rows and validated.
   */
  private async routeArrowRows(described: TableRoute, columns: ColumnSpec[], batch: RecordBatch, routingColumns: string[]): Promise<{ route: TableRoute; parts: TargetIndexes[] }> {
    const rowBuckets = described.partition ? null : bucketsOfBatch(columns, batch, described.bucketKey, described.buckets);
    if (rowBuckets !== null) {
      this.spreadCounter++;
      return { route: described, parts: indexesByBucket(rowBuckets) };
    }
    const vectors = routingColumns.map((name) => {
      const vector = batch.getChild(name);
      if (vector === null) throw new MinkError('InvalidArgument', `the batch has no column '${name}', a column of the bucket key or the partition column`);
      return [name, vector] as const;
    });
    const keys = validateRows(
      columns,
      Array.from({ length: batch.numRows }, (_, index) => Object.fromEntries(vectors.map(([name, vector]) => [name, vector.get(index)]))),
      { allowedColumns: routingColumns },
    );
    return this.routeItems(described, keys, 'row', this.spreadCounter++);
  }

  /**
   * Upserts rows into a primary-key table; resolves once every change is durable and applied. With
   * `options.columns`, a partial put: the rows hold only those columns (the primary key among them) and
   * the other columns of existing rows keep their values.
   */
  put(rows: unknown[], options: PutOptions = {}): Promise<WriteTableResult> {
    return this.planWrite(async () => {
      const route = requirePrimaryKeyTable(await this.describe());
      const partialColumns = options.columns === undefined ? undefined : partialPutColumnsOf(route, options.columns);
      const canonical = validateRows(
        route.columns as ColumnSpec[],
        rows,
        partialColumns === undefined ? { required: route.primaryKey } : { allowedColumns: partialColumns, required: route.primaryKey },
      );
          // Whole-row puts waiting for a bucket may go out as one request of several parts (see takeWrite).
      const queued = await this.writeByBucket(
        route,
        canonical,
        'row',
        columnsInTableOrder(route.columns as ColumnSpec[], partialColumns),
        (target, batch): PutBucketRequest => ({
          op: 'put',
          ...this.addressOf(route, target),
          batch,
          ...(partialColumns === undefined ? {} : { columns: partialColumns }),
        }),
        partialColumns === undefined,
      );
      return { done: queued.done.then((results) => writeTableResultOf(canonical.length, results)) };
    });
  }

  /** Deletes rows of a primary-key table by key (objects holding exactly the primary key columns). */
  delete(keys: unknown[]): Promise<WriteTableResult> {
    return this.planWrite(async () => {
      const route = requirePrimaryKeyTable(await this.describe());
      const canonical = this.validateKeys(route, keys);
      const queued = await this.writeByBucket(route, canonical, 'key', columnsInTableOrder(route.columns as ColumnSpec[], route.primaryKey), (target, batch): DeleteBucketRequest => ({ op: 'delete', ...this.addressOf(route, target), batch }));
      return { done: queued.done.then((results) => writeTableResultOf(canonical.length, results)) };
    });
  }

  /**
   * The stored row of each key of a primary-key table: `rows[i]` answers `keys[i]`, null when there is none
   * (as for a key of a partition that does not exist).
   */
  /**
   * Writes a Kafka transaction marker to partition `bucket` of this topic at its leader (following redirects
   * and retrying as any bucket request), for a transaction coordinator. Resolves with the marker's offset.
   */
  async transactionMarker(bucket: number, marker: Pick<TransactionMarkerRequest, 'producerId' | 'producerEpoch' | 'commit' | 'coordinatorEpoch'>): Promise<{ offset: number }> {
    const route = await this.describe();
    return this.sendToBucket({ partition: null, bucket }, { op: 'txnMarker', ...this.addressOf(route, { partition: null, bucket }), ...marker });
  }

  /** Hands a transaction's offsets of a group to its coordinator, the leader of `bucket` of this (transaction state) table. */
  async transactionOffsets(bucket: number, request: Omit<TransactionOffsetsRequest, 'op' | keyof BucketAddress>): Promise<{ errorCode: number }> {
    const route = await this.describe();
    return this.sendToBucket({ partition: null, bucket }, { op: 'txnOffsets', ...this.addressOf(route, { partition: null, bucket }), ...request });
  }

  async lookup(keys: unknown[], options: LookupOptions = {}): Promise<LookupResult> {
    const route = requirePrimaryKeyTable(await this.describe());
    const projection = options.columns === undefined ? undefined : projectionOf(route, options.columns);
    const canonical = this.validateKeys(route, keys);
    const rows = await this.readByBucket(route, canonical, 'key', canonical, LOOKUP_REQUEST_BOUNDS, null, async (target, chunk) => {
      const request: LookupBucketRequest = {
        op: 'lookup',
        ...this.addressOf(route, target),
        keys: chunk,
        ...(projection === undefined ? {} : { columns: projection }),
      };
      return (await this.sendToBucket(target, request)).rows;
    });
    return { rows };
  }

  /**
   * Every row of a primary-key table whose bucket-key columns hold the values of each prefix (an object
   * holding exactly the bucket-key columns, and on a partitioned table the partition column too, whose
   * value picks the partition): `results[i]` answers `prefixes[i]`. Only for tables whose bucket key
   * leaves some primary key columns out.
   */
  async prefixLookup(prefixes: unknown[], options: PrefixLookupOptions = {}): Promise<PrefixLookupResult> {
    const route = requirePrimaryKeyTable(await this.describe());
    requireProperPrefixBucketKey(route);
    const projection = options.columns === undefined ? undefined : projectionOf(route, options.columns);
    const limit = prefixLimitOf(options.limit);
    const prefixColumns = prefixColumnsOf(route, requireItems(prefixes, 'prefixes'));
    const canonical = validateRows(route.columns as ColumnSpec[], prefixes, { allowedColumns: prefixColumns, required: prefixColumns });
    // The partition column only picks the partition; the leader looks the bucket-key prefix up in it.
    const sent = canonical.map((prefix) => {
      const bucketKeyPrefix: Row = {};
      for (const name of route.bucketKey) setField(bucketKeyPrefix, name, fieldOf(prefix, name));
      return bucketKeyPrefix;
    });
    const bounds = prefixLookupRequestBounds(limit ?? LIMITS.prefixLookupRowsMax);
    const results = await this.readByBucket(route, canonical, 'prefix', sent, bounds, { rows: [], truncated: false }, async (target, chunk) => {
      const request: PrefixLookupBucketRequest = {
        op: 'prefixLookup',
        ...this.addressOf(route, target),
        prefixes: chunk,
        ...(projection === undefined ? {} : { columns: projection }),
        ...(limit === undefined ? {} : { limit }),
      };
      return (await this.sendToBucket(target, request)).results;
    });
    return { results };
  }

  /** Up to `limit` records of one bucket from `offset`, in offset order, with rows in their JSON form. */
  async scan(options: ScanOptions): Promise<ScanResult> {
    const parts: Buffer[] = [OPEN_BRACKET];
    let last: ScanPage | undefined;
    for await (const page of this.scanPages(options)) {
      last = page;
      const { text, records } = scanJsonText(page.batch, ',');
      if (records === 0) continue;
      if (parts.length > 1) parts.push(COMMA);
      parts.push(text);
    }
    parts.push(CLOSE_BRACKET);
    const records = JSON.parse(Buffer.concat(parts).toString('utf8')) as ScanResult['records'];
    return { records, nextOffset: last!.nextOffset, highWatermark: last!.highWatermark };
  }

  /** `scan` as an Arrow table, built from the stored batches without rows on either side. */
  async scanArrow(options: ScanOptions): Promise<ScanArrowResult> {
    const tables: Table[] = [];
    let last: ScanPage | undefined;
    for await (const page of this.scanPages(options)) {
      tables.push(tableFromIPC(page.batch));
      last = page;
    }
    const withRows = tables.filter((table) => table.numRows > 0);
    const table = withRows.length === 0 ? tables[0]! : new Table(withRows.flatMap((part) => part.batches));
    return { table, nextOffset: last!.nextOffset, highWatermark: last!.highWatermark };
  }

  /**
   * The pages of a scan (each an Arrow IPC stream that fits one message), in order, until `limit` records
   * or the high watermark the first page saw: a scan never waits for records beyond it, except that with
   * `waitMs` the first page waits for the first record. The next page is requested as soon as a page
   * arrives, while the caller handles it. Always yields at least one page (possibly without records).
   * A partitioned table is scanned one bucket of one partition at a time (`options.partition`).
   */
  async *scanPages(options: ScanOptions): AsyncGenerator<ScanPage> {
    const { bucket, offset, limit, waitMs } = scanArgumentsOf(options);
    const route = await this.describe();
    const target: BucketTarget = { partition: scanPartitionOf(route, options.partition), bucket };
    const requestOf = (from: number, records: number, wait: number): ScanRequest => ({
      op: 'scan',
      ...this.addressOf(route, target),
      offset: from,
      limit: records,
      ...(options.columns ? { columns: options.columns } : {}),
      ...(wait > 0 ? { waitMs: wait } : {}),
    });
    const first = await this.sendToBucket(target, requestOf(offset, limit, waitMs));
    const end = scanEndOf(offset, limit, first);
    let page = first;
    for (;;) {
      const more = page.records > 0 && page.nextOffset < end;
      // Ask for the next page before handing this one over, so the node reads while the caller writes.
      const next = more ? this.sendToBucket(target, requestOf(page.nextOffset, end - page.nextOffset, 0)) : undefined;
      next?.catch(() => undefined);
      yield page;
      if (next === undefined) return;
      page = await next;
    }
  }

  /** The table's schema and leaders, from any data node's view; cached until a request proves it stale. */
  async describe(refresh = false): Promise<TableRoute> {
    if (this.route && !refresh) return this.route;
    // Concurrent refreshes share one query; a short timeout, so a paused responder costs a retry, not 10 s.
    this.describing ??= this.retryUnavailable(() =>
      requestJson<TableRoute>(this.nc, SUBJECTS.anyNodeRpc, { op: 'describeTable', table: this.name }, LIMITS.viewQueryTimeoutMs),
    ).finally(() => {
      this.describing = undefined;
    });
    this.route = await this.describing;
    return this.route;
  }

  /**
   * Waits for the answer to a request sent to `sentTo`, the leader of `target`; while it waits, every
   * `LIMITS.clientLeaderCheckMs` it asks any node for the route, and abandons the request (Unavailable, to
   * be sent again) once the route names another leader or a newer leader epoch: the node it went to is dead,
   * paused or moved on, and its answer would only come with the request timeout.
   */
  private async answerOrLeaderChange<T>(target: BucketTarget, sentTo: { node: string; leaderEpoch: number }, answer: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    let settled = false;
    const moved = new Promise<never>((_, reject) => {
      const check = async (): Promise<void> => {
        if (settled) return;
        const route = await this.describe(true).catch(() => undefined);
        const now = route ? leadersOf(route, target.partition)?.[target.bucket] : undefined;
        if (settled) return;
        if (now && (now.node !== sentTo.node || now.leaderEpoch > sentTo.leaderEpoch)) {
          reject(new UnavailableError(`${this.bucketName(target)} moved from node ${sentTo.node} to ${now.node} while a request waited; sending it there`, 0));
          return;
        }
        timer = setTimeout(() => void check(), LIMITS.clientLeaderCheckMs);
      };
      timer = setTimeout(() => void check(), LIMITS.clientLeaderCheckMs);
    });
    try {
      return await Promise.race([answer, moved]);
    } finally {
      settled = true;
      clearTimeout(timer);
      // The losing side settles later; nobody waits for it.
      answer.catch(() => undefined);
      moved.catch(() => undefined);
    }
  }

  private validateKeys(route: TableRoute, keys: unknown): Row[] {
    return validateRows(route.columns as ColumnSpec[], requireItems(keys, 'keys'), { allowedColumns: route.primaryKey, required: route.primaryKey });
  }

  /**
   * The bucket each of `items` (canonical rows, keys or prefixes) goes to, grouped: by partition (the
   * partition column's value, on a partitioned table), then by bucket key (`spread` places every item of
   * a table without bucket key, see `splitByBucket`). Groups come in the order of their first item and
   * hold positions in increasing order. When an item's partition is not in the route, the route is asked
   * for again once (the partition may have just been created); the route returned is the one the groups
   * are for. An item of a partition still missing then fails the call (InvalidArgument naming the
   * partition and the table) unless `absent` is given, when its position is left out of every group and
   * listed there instead.
   */
  private async routeItems(
    described: TableRoute,
    items: readonly Row[],
    what: 'row' | 'key' | 'prefix',
    spread: number,
    absent?: number[],
  ): Promise<{ route: TableRoute; parts: TargetIndexes[] }> {
    let route = described;
    const partitions = partitionsOfItems(route, items, what);
    let missing = missingPartitions(new Set(partitions), partitionNamesOf(route));
    if (missing.length > 0) {
      route = await this.describe(true);
      missing = missingPartitions(missing, partitionNamesOf(route));
    }
    if (missing.length > 0 && absent === undefined) {
      throw missingPartitionError(route.table, missing[0]!, partitionNamesOf(route), { what, index: partitions.indexOf(missing[0]!) });
    }
    if (absent !== undefined) {
      partitions.forEach((partition, index) => {
        if (partition !== null && missing.includes(partition)) absent.push(index);
      });
    }
    return { route, parts: indexesByTarget(items, partitions, route, spread, missing) };
  }

  /**
   * Queues the appends of one bucket's rows: requests within APPEND_REQUEST_BOUNDS, in the bucket's window
   * (see pumpWrites). Everything is queued before this returns, so the caller's planning fixes the order.
   */
  private appendToBucket(route: TableRoute, target: BucketTarget, rows: Row[]): Promise<AppendBucketResult[]> {
    return this.queueAppends(route, target, arrowChunksOf(route.columns as ColumnSpec[], rows, APPEND_REQUEST_BOUNDS));
  }

  /**
   * Queues Arrow batches (IPC streams within APPEND_REQUEST_BOUNDS, each well formed: encoded from
   * validated rows or checked by `checkRowsStream`) for one bucket's window, in order.
   */
  private queueAppends(route: TableRoute, target: BucketTarget, chunks: Uint8Array[]): Promise<AppendBucketResult[]> {
    return this.queueNumbered<AppendBucketRequest>(
      target,
      'append',
      // Appends name committed batches by their writer state in the view; newestAcked is for puts and deletes.
      chunks.map((batch) => (writer) => ({ op: 'append', ...this.addressOf(route, target), batch, writer: { id: writer.id, seq: writer.seq, acked: writer.acked } })),
      chunks,
    );
  }

  /**
   * Queues numbered requests (appends, or puts and deletes) for one bucket's window, in order; `requestOf`
   * builds each request for its writer sequence. Everything is queued before this returns, so the caller's
   * planning fixes the order.
   */
  private queueNumbered<R extends AppendBucketRequest | PutBucketRequest | DeleteBucketRequest>(
    target: BucketTarget,
    what: 'append' | 'write',
    requestsOf: ((writer: NumberedWriter) => R)[],
    mergeable?: readonly Uint8Array[],
  ): Promise<BucketAnswers[R['op']][]> {
    const key = targetKeyOf(target);
    let writes = this.writesByBucket.get(key);
    if (!writes) {
      writes = { generation: 0, nextSeq: 0, ackedSeq: -1, unsettled: new Set(), olderInFlight: 0, last: Promise.resolve(), waiting: [] };
      this.writesByBucket.set(key, writes);
    }
    const state = writes;
    const queued = requestsOf.map(
      (requestOf, index) =>
        new Promise<BucketAnswers[R['op']]>((resolve, reject) =>
          state.waiting.push({ what, requestOf, resolve: resolve as (result: unknown) => void, reject, ...(mergeable ? { mergeable: mergeable[index]! } : {}) }),
        ),
    );
    this.pumpWrites(target, state);
    return Promise.all(queued);
  }

  /**
   * Sends a bucket's waiting writes, each with the next sequence of the bucket's writer and the newest
   * sequence acknowledged so far, so the leader writes them in sequence order (decideWriterSequence for
   * appends, decidePkWriterOrder for puts and deletes). The window is `writesInFlightMax` sequences from
   * the oldest one not settled, not a count of requests in flight: a request whose reply was lost holds
   * the window until its retry is answered, so its batch is still among those the leader remembers
   * (LIMITS.writerBatchesRemembered) and the retry is answered as a duplicate. A request that fails is
   * retried only after the request sent before it has settled, and fails for good if that one did, or if
   * any request of its writer generation failed for good meanwhile: nothing overtakes a retry. A request
   * that failed for good (its outcome may be unknown) ends its writer's generation: the requests sent
   * after it fail too, and later writes start a new writer id at sequence 0 once every request of the
   * ended generation has settled, so none of them can be written after the new generation's first.
   */
  private pumpWrites(target: BucketTarget, state: BucketWrites): void {
    const oldestUnsettled = () => (state.unsettled.size === 0 ? state.nextSeq : Math.min(...state.unsettled));
    while (state.waiting.length > 0 && state.olderInFlight === 0 && state.nextSeq - oldestUnsettled() < this.writesInFlightMax) {
      // While a request of the bucket is in flight, small appends wait to go out merged (see fillsRequest).
      if (state.unsettled.size > 0 && !fillsRequest(state.waiting, this.pipelinedAppendBytesMin, boundsOf(state.waiting[0]!).bytesMax)) return;
      const next = takeWrite(state.waiting);
      const generation = state.generation;
      const writerId = `${this.writerId}.${targetKeyOf(target)}.${generation}`;
      const seq = state.nextSeq++;
      const previous = state.last;
      let previousFailed = false;
      const sent = this.sendToBucket(
        target,
        // The newest acknowledgement so far, below this sequence (a retry may follow a later one's ack).
        () => {
          const newestAcked = state.generation === generation ? state.ackedSeq : -1;
          return next.requestOf({ id: writerId, seq, acked: Math.min(newestAcked, seq - 1), ...(newestAcked >= seq ? { newestAcked } : {}) });
        },
        async () => {
          await previous.catch(() => {
            previousFailed = true;
          });
          if (previousFailed || state.generation !== generation) {
            throw new UnavailableError(`an earlier ${next.what} to ${this.bucketName(target)} failed; this one was not retried so it cannot overtake it`);
          }
        },
      );
      state.unsettled.add(seq);
      state.last = sent;
      let endedGeneration = false;
      sent
        .then(
          (result) => {
            if (state.generation === generation) state.ackedSeq = Math.max(state.ackedSeq, seq);
            next.resolve(result);
          },
          (error: unknown) => {
            if (state.generation === generation) {
              // The generation ends: what is still in flight of it settles before the next one sends.
              state.unsettled.delete(seq);
              state.olderInFlight += state.unsettled.size;
              state.unsettled = new Set();
              state.generation++;
              state.nextSeq = 0;
              state.ackedSeq = -1;
              endedGeneration = true;
            }
            next.reject(error);
          },
        )
        .finally(() => {
          if (!endedGeneration) {
            if (state.generation === generation) state.unsettled.delete(seq);
            else state.olderInFlight--;
          }
          this.pumpWrites(target, state);
        });
    }
  }

  /**
   * Queues puts or deletes of `items` (canonical rows or keys holding `columns`) by bucket: each bucket's
   * share is cut into Arrow batches of `columns` within one PK write batch and sent through the bucket's
   * write queue, buckets in parallel. Everything is queued before the returned promise resolves (an item of
   * a missing partition queues nothing and rejects it), so the caller's planning step fixes the order.
   */
  private async writeByBucket(
    described: TableRoute,
    items: Row[],
    what: 'row' | 'key',
    columns: ColumnSpec[],
    requestOf: (target: BucketTarget, batch: Uint8Array) => PutBucketRequest | DeleteBucketRequest,
    mergeable = false,
  ): Promise<{ done: Promise<WriteBucketResult[]> }> {
    const { parts } = await this.routeItems(described, items, what, 0);
    const queued = parts.map(({ target, indexes }) => {
      const batches = arrowChunksOf(columns, indexes.map((index) => items[index]!), PK_WRITE_REQUEST_BOUNDS);
      return this.queueNumbered(
        target,
        'write',
        batches.map((batch) => (writer) => ({ ...requestOf(target, batch), writer })),
        mergeable ? batches : undefined,
      );
    });
    // Wrapped: awaiting the queueing must not wait for the writes (see planWrite).
    return { done: Promise.all(queued).then((results) => results.flat()) };
  }

  /**
   * Reads `items` (canonical keys or prefixes, sent as `sent[i]`) by bucket and returns one answer per
   * item in the caller's order; an item of a partition that does not exist is answered `absentAnswer`
   * (without asking anyone, unless it was dropped after the route was cached). Buckets are asked in parallel and the requests of one bucket one after another,
   * so at most one request per bucket is in flight.
   */
  private async readByBucket<A>(
    described: TableRoute,
    items: Row[],
    what: 'key' | 'prefix',
    sent: Row[],
    bounds: RequestBounds,
    absentAnswer: A,
    ask: (target: BucketTarget, chunk: Record<string, unknown>[]) => Promise<A[]>,
  ): Promise<A[]> {
    const absent: number[] = [];
    const { route, parts } = await this.routeItems(described, items, what, 0, absent);
    const json = rowsToJson(route.columns as ColumnSpec[], sent);
    const answered = await Promise.all(
      parts.map(async ({ target, indexes }) => {
        const chunks: AnsweredChunk<A>[] = [];
        try {
          for (const chunk of chunksOf(indexes, bounds, (index) => jsonBytesOf(json[index]))) {
            chunks.push({ indexes: chunk, answers: await ask(target, chunk.map((index) => json[index]!)) });
          }
        } catch (error) {
          // Dropped since the route was cached: its keys have no rows, as those of any missing partition.
          if (!(error instanceof PartitionGoneError)) throw error;
          return [{ indexes, answers: indexes.map(() => structuredClone(absentAnswer)) }];
        }
        return chunks;
      }),
    );
    const unasked: AnsweredChunk<A> = { indexes: absent, answers: absent.map(() => structuredClone(absentAnswer)) };
    return reassemble(items.length, [...answered.flat(), unasked]);
  }

  /**
   * Runs `plan` after the planning of every earlier write call has finished, and resolves with what
   * the writes it queued resolve to. `plan` must queue its writes before it returns; it returns them
   * wrapped, so that the next call's planning waits for the queueing only, not for the writes.
   */
  private async planWrite<T>(plan: () => Promise<{ done: Promise<T> }>): Promise<T> {
    const planned = this.writePlanning.then(plan);
    this.writePlanning = planned.catch(() => undefined);
    return (await planned).done;
  }

  private addressOf(route: TableRoute, target: BucketTarget): BucketAddress {
    return { table: this.name, tableId: route.tableId, partition: target.partition, bucket: target.bucket };
  }

  /** How messages name a bucket: `bucket 3 of table 'events'`, or `bucket 3 of partition '2026120117' of table 'events'`. */
  private bucketName(target: BucketTarget): string {
    return `bucket ${target.bucket}${target.partition === null ? '' : ` of partition '${target.partition}'`} of table '${this.name}'`;
  }

  /**
   * Sends a bucket request to its leader, following redirects and retrying what is safe to retry.
   * `request` may be a function, called for every attempt; `beforeRetry` runs before every attempt but the
   * first and may throw to give up. A partition the route does not list is asked for once more, then NotFound.
   */
  private async sendToBucket<R extends BucketRequest>(
    target: BucketTarget,
    request: R | (() => R),
    beforeRetry?: () => Promise<void>,
  ): Promise<BucketAnswers[R['op']]> {
    const { bucket } = target;
    let lastError: unknown;
    let partitionRefreshed = false;
    for (let attempt = 0; attempt < LIMITS.clientAttemptsMax; attempt++) {
      if (attempt > 0 && beforeRetry) await beforeRetry();
      const route = await this.describe();
      if (bucket < 0 || bucket >= route.buckets || !Number.isInteger(bucket)) {
        throw new MinkError('InvalidArgument', `bucket must be an integer in [0, ${route.buckets}), got ${bucket}`);
      }
      const leaders = leadersOf(route, target.partition);
      if (leaders === undefined) {
        if (partitionRefreshed) throw this.partitionGone(target, (typeof request === 'function' ? request() : request).op, route);
        partitionRefreshed = true;
        await this.describe(true);
        continue;
      }
      const leader = leaders[bucket];
      if (!leader) {
        lastError = new UnavailableError(`${this.bucketName(target)} has no leader`);
        await sleep(backoffDelayMs(attempt + 1, CLIENT_BACKOFF, this.random));
        await this.describe(true);
        continue;
      }
      // Ends an HTTP request (only scans go over HTTP) that lost the race against a leader change, so it
      // does not hold its connection; other requests need none (a signal costs microseconds per write).
      let abandon: AbortController | undefined;
      try {
        const body = typeof request === 'function' ? request() : request;
        if (body.op === 'scan') abandon = new AbortController();
        return await this.answerOrLeaderChange(target, leader, this.requestOf<BucketAnswers[R['op']]>(leader, { ...body, tableId: route.tableId }, abandon?.signal));
      } catch (error) {
        abandon?.abort();
        if (!(error instanceof MinkError)) throw error;
        lastError = error;
        const redirect = error.details?.redirect;
        switch (bucketRetryOf({ code: error.code, hasRedirect: redirect !== undefined }, attempt)) {
          case 'redirect':
            // docs/ownership.md §6 ("Redirects"): update the route from the answer and retry at the leader it names.
            leaders[bucket] = { node: redirect!.node, address: redirect!.to, leaderEpoch: redirect!.leaderEpoch, ...(redirect!.http ? { http: redirect!.http } : {}) };
            continue;
          case 'wait-and-refresh':
            await sleep(error.details?.retryAfterMs ?? backoffDelayMs(attempt + 1, CLIENT_BACKOFF, this.random));
            // The bucket may be in hand-off: refresh the route from any node's view.
            await this.describe(true).catch(() => undefined);
            continue;
          case 'refresh-route':
            await this.describe(true);
            partitionRefreshed = true;
            continue;
          case 'fail':
            throw error;
        }
      }
    }
    throw lastError;
  }

  /**
   * The error of a request for a partition the refreshed route does not list: planned on a route that still
   * had it, the partition was dropped since (or the table re-created). A write to it is InvalidArgument, as
   * when the call is planned; a read of it learns it is gone (PartitionGoneError, a NotFound).
   */
  private partitionGone(target: BucketTarget, op: BucketRequest['op'], route: TableRoute): MinkError {
    if (target.partition === null) return new MinkError('InvalidArgument', `table '${this.name}' is partitioned: a request for it names a partition`);
    if (op === 'append' || op === 'put' || op === 'delete') return missingPartitionError(this.name, target.partition, partitionNamesOf(route));
    return new PartitionGoneError(`partition '${target.partition}' of table '${this.name}' does not exist`);
  }

  /**
   * One attempt of a bucket request at `leader`: a scan from the leader's internal HTTP route when it has
   * one, a connection to it is free and it takes this client's credentials; anything else over NATS. Both
   * answer the same (see scan-http.ts in @mink/protocol). A leader that refuses the credentials (it asks
   * for a cluster secret this client does not have) is asked over NATS at once, as one whose connections
   * are busy. An aborted `abandoned` ends an HTTP request still in flight.
   */
  private requestOf<T>(leader: { address: string; http?: string }, body: BucketRequest, abandoned: AbortSignal | undefined): Promise<T> {
    if (body.op === 'scan' && leader.http && this.httpScans && abandoned) {
      const page = this.httpScans.fetch(leader.http, body, timeoutOf(body), abandoned);
      if (page) return page.catch((error: unknown) => (isScanCredentialsRefusal(error) ? this.requestOverNats<T>(leader, body) : Promise.reject(error))) as Promise<T>;
    }
    return this.requestOverNats<T>(leader, body);
  }

  /** One attempt of a bucket request at `leader` over NATS. */
  private requestOverNats<T>(leader: { address: string }, body: BucketRequest): Promise<T> {
    // An append's Arrow batch travels as binary next to the JSON of the request.
    const { batch, ...json } = body as BucketRequest & { batch?: Uint8Array };
    // The writes a call (or several calls at once) sends to one node travel in one message, at most one per
    // bucket, so each request of a bucket keeps its own fate (see pumpWrites). Appends all wait for the node's
    // next WAL object, so none holds up the others' answers; puts and deletes, which also wait for their
    // bucket's tablet, travel apart from appends, so an append never waits for a tablet.
    const writes = body.op === 'append' ? 'append' : body.op === 'put' || body.op === 'delete' ? 'pk-write' : null;
    const coalesce = writes === null ? {} : { coalesce: { key: writes, apart: `${body.tableId}/${body.partition ?? ''}/${body.bucket}` } };
    return requestJson<T>(this.nc, SUBJECTS.nodeRpc(leader.address), json, timeoutOf(json), batch, coalesce);
  }

  private async retryUnavailable<T>(call: () => Promise<T>): Promise<T> {
    let lastError: unknown;
    for (let attempt = 0; attempt < LIMITS.clientAttemptsMax; attempt++) {
      try {
        return await call();
      } catch (error) {
        // A table created a moment ago may not have reached the answering node's view yet.
        const justCreated = error instanceof MinkError && error.code === 'NotFound' && attempt < LIMITS.clientNotFoundAttemptsMax;
        if (!(error instanceof MinkError) || (error.code !== 'Unavailable' && error.code !== 'Timeout' && !justCreated)) throw error;
        lastError = error;
        await sleep(backoffDelayMs(attempt + 1, CLIENT_BACKOFF, this.random));
      }
    }
    throw lastError;
  }
}

/**
 * The next write to send from a bucket's waiting writes (taken off the queue): the first, or, when it and
 * those behind it are mergeable appends, as many of them as `mergedAppends` puts into one request, whose
 * answer is split back into each one's rows (they waited for the window or for the bucket's request in
 * flight, see fillsRequest, so merging adds no wait; fewer, larger requests cost the leader and the store
 * less per row).
 */
function takeWrite(waiting: WaitingWrite[]): WaitingWrite {
  const first = waiting[0]!;
  let run = 0;
  while (run < waiting.length && waiting[run]!.mergeable !== undefined) run++;
  const merged = run >= 2 ? mergedAppends(waiting.slice(0, run).map((write) => write.mergeable!), boundsOf(first)) : null;
  if (merged === null) return waiting.shift()!;
  const group = waiting.splice(0, merged.count);
  const failAll = (error: unknown) => {
    for (const write of group) write.reject(new MinkError('Internal', error instanceof Error ? error.message : String(error)));
  };
  if (first.what === 'write') {
    // Puts: the leader plans each part as a request of its own and answers each (see PutBucketRequest.parts).
    return {
      what: 'write',
      requestOf: (writer) => ({ ...(first.requestOf(writer) as PutBucketRequest), batch: merged.batch, parts: merged.rowCounts }),
      resolve: (result) => {
        let parts: (WriteBucketResult | MinkError)[];
        try {
          parts = splitWriteResult(result as WriteBucketResult, merged.rowCounts);
        } catch (error) {
          failAll(error);
          return;
        }
        group.forEach((write, index) => {
          const part = parts[index]!;
          if (part instanceof MinkError) write.reject(part);
          else write.resolve(part);
        });
      },
      reject: (error) => {
        for (const write of group) write.reject(error);
      },
    };
  }
  return {
    what: 'append',
    requestOf: (writer) => ({ ...first.requestOf(writer), batch: merged.batch }),
    resolve: (result) => {
      let parts: AppendBucketResult[];
      try {
        parts = splitAppendResult(result as AppendBucketResult, merged.rowCounts);
      } catch (error) {
        failAll(error);
        return;
      }
      group.forEach((write, index) => write.resolve(parts[index]));
    },
    reject: (error) => {
      for (const write of group) write.reject(error);
    },
  };
}

/** The bounds of one request of a bucket's writes: an append's, or a put's and delete's. */
function boundsOf(write: Pick<WaitingWrite, 'what'>): RequestBounds {
  return write.what === 'append' ? APPEND_REQUEST_BOUNDS : PK_WRITE_REQUEST_BOUNDS;
}

/** A partition a read was planned for is gone from the table: its keys and prefixes have no rows. */
class PartitionGoneError extends NotFoundError {}

/** The leaders of the buckets of `partition` (of the table itself when null); undefined when the route lists no such partition. */
function leadersOf(route: TableRoute, partition: string | null): (BucketLeader | null)[] | undefined {
  if (partition === null) return route.partition ? undefined : route.leaders;
  return route.partitions?.find((each) => each.name === partition)?.leaders;
}

/** The live partitions of a route, in creation order (none for an unpartitioned table). */
function partitionNamesOf(route: TableRoute): string[] {
  return (route.partitions ?? []).map((partition) => partition.name);
}

/** A record batch as IPC streams within APPEND_REQUEST_BOUNDS (zero-copy slices of the batch). */
function arrowSlicesOf(batch: RecordBatch): Uint8Array[] {
  return boundedEncodings(batch.numRows, (start, end) => tableToIPC(new Table(batch.slice(start, end)), 'stream'), APPEND_REQUEST_BOUNDS);
}

const OPEN_BRACKET = Buffer.from('[');
const COMMA = Buffer.from(',');
const CLOSE_BRACKET = Buffer.from(']');

/** A long-polling scan may wait `waitMs` before it answers: its timeout counts that in. */
function timeoutOf(request: object): number {
  const waitMs = (request as { waitMs?: unknown }).waitMs;
  return LIMITS.requestTimeoutMs + (typeof waitMs === 'number' ? waitMs : 0);
}

/**
 * Where a scan of `limit` records from `offset` ends, given its first page: `limit` records past where the
 * stored data starts, but not beyond the high watermark that page saw. Known before the rest of the records
 * arrive, so a streamed reply can state its next offset up front.
 */
export function scanEndOf(offset: number, limit: number, first: Pick<ScanPage, 'records' | 'nextOffset' | 'startOffset' | 'highWatermark'>): number {
  if (first.records === 0) return first.nextOffset;
  return Math.min(Math.max(offset, first.startOffset) + limit, first.highWatermark);
}
