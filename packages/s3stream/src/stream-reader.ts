import { LIMITS } from '@mink/config';
import { ownRecord } from '@mink/meta';
import type { DataSlice } from '@mink/meta';
import { InvalidArgumentError, NotFoundError, UnavailableError } from '@mink/protocol';
import type { ObjectStore } from './object-store';
import type { MetaAccess } from './ports';

/** One committed batch: the records [startOffset, endOffset), encoded as the appender wrote them. */
export interface StreamBatch {
  startOffset: number;
  endOffset: number;
  /** Shared with the reader's cache when it came from there: treat it as read-only. */
  payload: Uint8Array;
}

export interface StreamReadResult {
  /** Whole batches in offset order; the first one may start before the offset asked for. */
  batches: StreamBatch[];
  /** The committed end of the stream when the read began: the next offset to be written. */
  highWatermark: number;
  /** The first offset still stored. */
  startOffset: number;
}

export interface StreamReaderOptions {
  store: ObjectStore;
  /** Only the view is used: a reader never proposes. */
  meta: Pick<MetaAccess, 'view'>;
  /** Bytes of payloads the cache keeps; `LIMITS.streamCacheBytesMax` when absent. */
  cacheBytesMax?: number;
  /** Payload bytes one read collects; `LIMITS.streamReadBytesMax` when absent. */
  readBytesMax?: number;
}

/**
 * The read path of s3stream (DESIGN §4). A read finds the committed batches of a stream through the view's
 * slices (a binary search by offset, never a listing of the object store) and takes their payloads from a
 * cache of recent batches or by ranged GETs of the objects that hold them.
 *
 * The cache is a least-recently-used map bounded by bytes. It is filled by `cache`, which the WAL writer's
 * `onCommitted` calls as batches commit, so the tail of a stream is served from memory. Batches fetched
 * from the store are not cached: they are older data, mostly read once by a consumer catching up, and would
 * push the tail out.
 *
 * A read sees the view as it was when the read began; it returns only committed data.
 */
export class StreamReader {
  private readonly store: ObjectStore;
  private readonly meta: Pick<MetaAccess, 'view'>;
  private readonly cacheBytesMax: number;
  private readonly readBytesMax: number;
  /** Payloads by `cacheKey`; a Map iterates in insertion order, so the first entry is the least recently used. */
  private readonly cached = new Map<string, Uint8Array>();
  private cachedBytes = 0;

  constructor(options: StreamReaderOptions) {
    this.store = options.store;
    this.meta = options.meta;
    this.cacheBytesMax = options.cacheBytesMax ?? LIMITS.streamCacheBytesMax;
    this.readBytesMax = options.readBytesMax ?? LIMITS.streamReadBytesMax;
    if (!(this.cacheBytesMax >= 0) || !(this.readBytesMax > 0)) {
      throw new Error(`StreamReader needs cacheBytesMax >= 0 and readBytesMax > 0 (got ${this.cacheBytesMax}, ${this.readBytesMax})`);
    }
  }

  /** Bytes of payloads in the cache. */
  get cacheByteCount(): number {
    return this.cachedBytes;
  }

  /**
   * Keeps a copy of a committed batch's payload for later reads, evicting the least recently used batches
   * beyond the bound. A payload larger than the whole cache is not kept. Fits `WalWriter`'s `onCommitted`.
   */
  cache(bucketId: string, slice: DataSlice, payload: Uint8Array): void {
    if (payload.byteLength !== slice.length) {
      throw new Error(`a cached payload of ${payload.byteLength} bytes does not match its slice of ${slice.length} bytes`);
    }
    if (payload.byteLength > this.cacheBytesMax) return;
    const key = cacheKey(bucketId, slice);
    this.forget(key);
    this.cached.set(key, payload.slice());
    this.cachedBytes += payload.byteLength;
    for (const [oldestKey] of this.cached) {
      if (this.cachedBytes <= this.cacheBytesMax) break;
      this.forget(oldestKey);
    }
  }

  /** The cached payload of a slice, if this reader still holds it; does not count as a use. */
  cachedPayload(bucketId: string, slice: DataSlice): Uint8Array | undefined {
    return this.cached.get(cacheKey(bucketId, slice));
  }

  /** Empties the cache, so every later read goes to the store. */
  clearCache(): void {
    this.cached.clear();
    this.cachedBytes = 0;
  }

  /**
   * The committed batches of a bucket's stream from `fromOffset` on, in offset order, until they cover at
   * least `maxRecords` records from `fromOffset` or reach the byte bound (at least one batch is returned when
   * there is data). An offset below the stream's start reads from the start (the data was trimmed); the
   * high watermark itself returns no batches. The caller decodes the payloads and drops records before
   * `fromOffset`.
   *
   * Throws `NotFoundError` for an unknown bucket, `InvalidArgumentError` for an offset beyond the high
   * watermark or malformed arguments, and `UnavailableError` when the store cannot serve an object.
   */
  async read(bucketId: string, fromOffset: number, maxRecords: number): Promise<StreamReadResult> {
    if (!Number.isSafeInteger(fromOffset) || fromOffset < 0) throw new InvalidArgumentError(`offset must be a non-negative integer, not ${fromOffset}`);
    if (!Number.isSafeInteger(maxRecords) || maxRecords < 1) throw new InvalidArgumentError(`maxRecords must be a positive integer, not ${maxRecords}`);
    const record = ownRecord(this.meta.view.buckets, bucketId);
    if (!record) throw new NotFoundError(`bucket ${bucketId} does not exist`);
    const stream = record.stream;
    if (fromOffset > stream.endOffset) throw new InvalidArgumentError(`offset ${fromOffset} is beyond the high watermark ${stream.endOffset}`);

    const start = Math.max(fromOffset, stream.startOffset);
    const chosen: DataSlice[] = [];
    let records = 0;
    let bytes = 0;
    for (let index = firstSliceEndingAfter(stream.slices, start); index < stream.slices.length; index++) {
      const slice = stream.slices[index]!;
      if (chosen.length > 0 && (bytes + slice.length > this.readBytesMax || chosen.length >= LIMITS.streamReadBatchesMax)) break;
      chosen.push(slice);
      records += slice.endOffset - Math.max(slice.startOffset, start);
      bytes += slice.length;
      if (records >= maxRecords) break;
    }
    if (start < stream.endOffset && !(chosen.length > 0 && chosen[0]!.startOffset <= start)) {
      throw new Error(`the slices of bucket ${bucketId} do not cover committed offset ${start} (committed end ${stream.endOffset})`);
    }
    const payloads = await Promise.all(chosen.map((slice) => this.payloadOf(bucketId, slice)));
    return {
      batches: chosen.map((slice, index) => ({ startOffset: slice.startOffset, endOffset: slice.endOffset, payload: payloads[index]! })),
      highWatermark: stream.endOffset,
      startOffset: stream.startOffset,
    };
  }

  private async payloadOf(bucketId: string, slice: DataSlice): Promise<Uint8Array> {
    const key = cacheKey(bucketId, slice);
    const hit = this.cached.get(key);
    if (hit !== undefined) {
      // Re-inserting moves the entry to the most recently used end.
      this.cached.delete(key);
      this.cached.set(key, hit);
      return hit;
    }
    let payload: Uint8Array;
    try {
      payload = await this.store.get(slice.object, { start: slice.position, endExclusive: slice.position + slice.length });
    } catch (error) {
      // A committed object can disappear only when compaction replaced it and the grace period ran out under
      // a slow read; a new read finds the replacement through the view.
      if (error instanceof NotFoundError) throw new UnavailableError(`object ${slice.object} named by the view of bucket ${bucketId} is gone; read again`);
      throw error;
    }
    if (payload.byteLength !== slice.length) {
      throw new Error(`object ${slice.object} returned ${payload.byteLength} bytes at ${slice.position} where the view records a batch of ${slice.length}`);
    }
    return payload;
  }

  private forget(key: string): void {
    const payload = this.cached.get(key);
    if (payload === undefined) return;
    this.cached.delete(key);
    this.cachedBytes -= payload.byteLength;
  }
}

/** Objects are never rewritten in place, so an object and a position name one batch for good. */
function cacheKey(bucketId: string, slice: DataSlice): string {
  return `${bucketId}\n${slice.object}\n${slice.position}`;
}

/** Index of the first slice whose end lies beyond `offset`; the slices are in offset order. */
function firstSliceEndingAfter(slices: readonly DataSlice[], offset: number): number {
  let low = 0;
  let high = slices.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (slices[middle]!.endOffset <= offset) low = middle + 1;
    else high = middle;
  }
  return low;
}
