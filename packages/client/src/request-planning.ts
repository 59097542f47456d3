/**
 * Pure planning of bucket requests: how a table-wide call is split by bucket and cut into requests that
 * stay under the bounds of one request, and how the answers of those requests are put back together in
 * the caller's order. Nothing here does I/O, so TableClient's routing and ordering rules can be tested
 * without a cluster.
 */
import { LIMITS } from '@mink/config';
import type { ColumnSpec } from '@mink/meta';
import { MinkError, fromErrorBody, isErrorBody, type AppendBucketResult, type WriteBucketResult } from '@mink/protocol';
import { concatIpcStreams, encodeRows, type Row } from '@mink/records';

/** What one request may carry: at most `itemsMax` items (rows, keys or prefixes) and `bytesMax` bytes of their JSON. */
export interface RequestBounds {
  itemsMax: number;
  bytesMax: number;
}

/** An append request to one bucket. */
export const APPEND_REQUEST_BOUNDS: RequestBounds = { itemsMax: LIMITS.appendRowsPerRequestMax, bytesMax: LIMITS.appendRequestBytesMax };

/** A put or delete request to one bucket: the data node plans it as one PK write batch. */
export const PK_WRITE_REQUEST_BOUNDS: RequestBounds = { itemsMax: LIMITS.pkBatchOperationsMax, bytesMax: LIMITS.appendRequestBytesMax };

/** A lookup request to one bucket. */
export const LOOKUP_REQUEST_BOUNDS: RequestBounds = { itemsMax: LIMITS.lookupKeysPerRequestMax, bytesMax: LIMITS.appendRequestBytesMax };

/**
 * A prefix lookup request to one bucket. Each prefix may bring back up to `limitPerPrefix` rows, so a
 * request carries only as many prefixes as keep its answer within LIMITS.prefixLookupRowsMax rows (the
 * most one prefix may return), and always at least one; the reply must fit in one NATS message.
 */
export function prefixLookupRequestBounds(limitPerPrefix: number): RequestBounds {
  if (!Number.isSafeInteger(limitPerPrefix) || limitPerPrefix < 1) throw new Error(`limitPerPrefix must be a positive integer, got ${limitPerPrefix}`);
  const prefixesMax = Math.max(1, Math.floor(LIMITS.prefixLookupRowsMax / limitPerPrefix));
  return { itemsMax: Math.min(prefixesMax, LIMITS.lookupKeysPerRequestMax), bytesMax: LIMITS.appendRequestBytesMax };
}

/** UTF-8 bytes of `value` as JSON, plus one for the comma that separates it from the next item of its array. */
export function jsonBytesOf(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value), 'utf8') + 1;
}

/**
 * Cuts `items` into consecutive chunks, in order, each within `bounds`. `bytesOf` measures one item
 * (its JSON by default). An item larger than `bytesMax` on its own gets a chunk of its own: the
 * receiver refuses it if it must, and the client never drops or reorders anything.
 */
export function chunksOf<T>(items: readonly T[], bounds: RequestBounds, bytesOf: (item: T) => number = jsonBytesOf): T[][] {
  if (!Number.isSafeInteger(bounds.itemsMax) || bounds.itemsMax < 1) throw new Error(`itemsMax must be a positive integer, got ${bounds.itemsMax}`);
  const chunks: T[][] = [];
  let current: T[] = [];
  let currentBytes = 0;
  for (const item of items) {
    const bytes = bytesOf(item);
    if (current.length > 0 && (current.length >= bounds.itemsMax || currentBytes + bytes > bounds.bytesMax)) {
      chunks.push(current);
      current = [];
      currentBytes = 0;
    }
    current.push(item);
    currentBytes += bytes;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/**
 * `count` items (rows) encoded as consecutive requests, in order, each within `bounds`: at most `itemsMax`
 * items, and a range that `encodeRange` makes larger than `bytesMax` is halved until it fits (a single item
 * larger than that is sent alone and refused by the receiver if it must).
 */
export function boundedEncodings(count: number, encodeRange: (start: number, end: number) => Uint8Array, bounds: RequestBounds): Uint8Array[] {
  const encoded: Uint8Array[] = [];
  const encode = (start: number, end: number): void => {
    const bytes = encodeRange(start, end);
    if (bytes.byteLength <= bounds.bytesMax || end - start === 1) {
      encoded.push(bytes);
      return;
    }
    const middle = start + Math.ceil((end - start) / 2);
    encode(start, middle);
    encode(middle, end);
  };
  for (let start = 0; start < count; start += bounds.itemsMax) encode(start, Math.min(count, start + bounds.itemsMax));
  return encoded;
}

/** Canonical rows of one bucket as Arrow batches (`encodeRows`) within `bounds`, in order. */
export function arrowChunksOf(columns: ColumnSpec[], rows: readonly Row[], bounds: RequestBounds): Uint8Array[] {
  return boundedEncodings(rows.length, (start, end) => encodeRows(columns, rows.slice(start, end) as Row[]), bounds);
}

/**
 * The positions of `items` grouped by the bucket `bucketOf` gives each, in increasing position within a
 * bucket. The map holds only buckets that get items, in the order of their first item.
 */
export function indexesByBucket<T>(items: readonly T[], bucketOf: (item: T) => number): Map<number, number[]> {
  const split = new Map<number, number[]>();
  items.forEach((item, index) => {
    const bucket = bucketOf(item);
    const indexes = split.get(bucket);
    if (indexes === undefined) split.set(bucket, [index]);
    else indexes.push(index);
  });
  return split;
}

/** The answers of one request: `answers[i]` answers the item at position `indexes[i]` of the caller's call. */
export interface AnsweredChunk<R> {
  indexes: readonly number[];
  answers: readonly R[];
}

/**
 * Puts the answers of every request back in the caller's order: element i of the result answers item i.
 * Each of the `count` positions must be answered exactly once; a request that answered a different number
 * of items than it asked about is a broken server and throws.
 */
export function reassemble<R>(count: number, chunks: readonly AnsweredChunk<R>[]): R[] {
  const result = new Array<R>(count);
  const answered = new Array<boolean>(count).fill(false);
  for (const chunk of chunks) {
    if (chunk.answers.length !== chunk.indexes.length) {
      throw new Error(`a bucket answered ${chunk.answers.length} items of a request for ${chunk.indexes.length}`);
    }
    chunk.indexes.forEach((index, position) => {
      if (!Number.isInteger(index) || index < 0 || index >= count) throw new Error(`answer for position ${index} outside [0, ${count})`);
      if (answered[index]) throw new Error(`position ${index} was answered twice`);
      answered[index] = true;
      result[index] = chunk.answers[position];
    });
  }
  const missing = answered.indexOf(false);
  if (missing !== -1) throw new Error(`position ${missing} of ${count} got no answer`);
  return result;
}

/**
 * Bucket results in the order callers see them: by partition (names sort in time order as text; an
 * unpartitioned table's results have none), then by bucket, then by offset within the bucket.
 */
export function byBucketThenOffset<T extends { partition?: string; bucket: number; baseOffset: number }>(results: T[]): T[] {
  const partitionOrder = (a: T, b: T) => ((a.partition ?? '') < (b.partition ?? '') ? -1 : (a.partition ?? '') > (b.partition ?? '') ? 1 : 0);
  return results.slice().sort((a, b) => partitionOrder(a, b) || a.bucket - b.bucket || a.baseOffset - b.baseOffset);
}

/** The answer to a table-wide put or delete of `written` rows or keys from the results of its bucket requests. */
export function writeTableResultOf(written: number, results: WriteBucketResult[]): { written: number; buckets: WriteBucketResult[] } {
  return { written, buckets: byBucketThenOffset(results) };
}

/**
 * How many of `streams` (the Arrow streams of appends waiting in order for one bucket) go out as one request,
 * and its stream: the longest run from the first that stays within `bounds` (their bytes and rows together)
 * and shares the first one's schema message (see `concatIpcStreams`). Null when fewer than two would: the first then
 * goes alone, as it is. Kafka's producer fills its requests the same way from the batches waiting for a
 * partition; here they waited for a place in the window, or for the bucket's request in flight (see
 * `fillsRequest`), so merging them adds no wait of its own.
 */
export function mergedAppends(streams: readonly Uint8Array[], bounds: RequestBounds): { count: number; batch: Uint8Array; rowCounts: number[] } | null {
  let count = 0;
  let bytes = 0;
  while (count < streams.length && bytes + streams[count]!.byteLength <= bounds.bytesMax) bytes += streams[count++]!.byteLength;
  while (count >= 2) {
    const merged = concatIpcStreams(streams.slice(0, count));
    // The run ends before a stream of another schema message (see `concatIpcStreams`).
    if (merged === null || merged.rowCounts.length < 2) return null;
    let rows = 0;
    let within = 0;
    while (within < merged.rowCounts.length && rows + merged.rowCounts[within]! <= bounds.itemsMax) rows += merged.rowCounts[within++]!;
    if (within === merged.rowCounts.length) return { count: within, batch: merged.bytes, rowCounts: merged.rowCounts };
    count = within;
  }
  return null;
}

/**
 * Whether a bucket's waiting writes (in order; `mergeable` for an append or whole-row put that may merge
 * with its neighbours, see `mergedAppends`) may send their head while another request of the bucket is in
 * flight: a delete or partial put always (they are not merged); appends (or puts) when those waiting in a row hold `bytesMin` bytes
 * (by default half a request), when the request they make can take no more (the next one waiting would
 * carry it past `bytesMax`), or when a write that cannot merge with them follows. In each of those cases
 * waiting would add nothing to the request. Otherwise they wait for the bucket's requests to settle and go
 * out as one. So, as the WAL writer forms its objects, a large request goes out while the window has room
 * and a smaller one when nothing is in flight: under load a bucket sends few large requests instead of many
 * small ones, each of which costs its leader a dispatch, a WAL range and a slice of the stream, and a lone
 * append never waits.
 */
export function fillsRequest(waiting: readonly { mergeable?: Uint8Array }[], bytesMin: number, bytesMax: number): boolean {
  let bytes = 0;
  for (const write of waiting) {
    if (write.mergeable === undefined) return true;
    const size = write.mergeable.byteLength;
    if (bytes > 0 && bytes + size > bytesMax) return true;
    bytes += size;
    if (bytes >= bytesMin) return true;
  }
  return false;
}

/**
 * The answer of each append merged into one request (see `mergedAppends`) from the request's answer: the
 * rows of each, in order, from the request's base offset. An answer that does not count the rows sent
 * is an error (a leader stores a merged request as one batch of all its rows).
 */
export function splitAppendResult(result: AppendBucketResult, rowCounts: readonly number[]): AppendBucketResult[] {
  const total = rowCounts.reduce((sum, rows) => sum + rows, 0);
  if (result.count !== total) throw new Error(`the leader answered ${result.count} rows for a request of ${total}`);
  let offset = result.baseOffset;
  return rowCounts.map((count) => {
    const part = { ...result, baseOffset: offset, count };
    offset += count;
    return part;
  });
}

/**
 * The answer of each put merged into one request of several parts (see `PutBucketRequest.parts`) from the
 * request's answer: each part's outcome with the bucket (and partition) of the request, or the error the
 * leader refused that part alone with. An answer without one outcome per part, or whose part counts
 * other rows than were sent, is an error.
 */
export function splitWriteResult(result: WriteBucketResult, rowCounts: readonly number[]): (WriteBucketResult | MinkError)[] {
  const parts = result.parts;
  if (parts === undefined || parts.length !== rowCounts.length) {
    throw new Error(`the leader answered ${parts === undefined ? 'no parts' : `${parts.length} parts`} for a request of ${rowCounts.length}`);
  }
  const where = { bucket: result.bucket, ...(result.partition === undefined ? {} : { partition: result.partition }) };
  return parts.map((part, index) => {
    if (isErrorBody(part)) return fromErrorBody(part);
    if (part.operations !== rowCounts[index]) throw new Error(`the leader answered ${part.operations} operations for part ${index} of ${rowCounts[index]} rows`);
    return { ...where, ...part };
  });
}
