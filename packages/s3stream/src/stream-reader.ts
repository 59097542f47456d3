import { LIMITS } from '@mink/config';
import { getIn, slicesOf } from '@mink/meta';
import type { DataSlice, SliceList } from '@mink/meta';
import { InvalidArgumentError, NotFoundError, UnavailableError } from '@mink/protocol';
import { Semaphore, type ObjectStore } from './object-store';
import type { MetaAccess } from './ports';
import { batchesOfSlice, type SliceMove, type StreamBatch } from './packed-slice';
import { boundedBatches, chooseReadSlices, coalesceSliceReads, continuesRead, getCoalescedRead, isCutShort, planPrefetch, readEndOf, type CoalescedRead, type ReadEnd } from './slice-reads';

export interface StreamReadResult {
  /** Whole batches in offset order; the first one may start before the offset asked for. */
  batches: StreamBatch[];
  /** The committed end of the stream when the read began: the next offset to be written. */
  highWatermark: number;
  /** The first offset still stored. */
  startOffset: number;
}

export interface StreamReadOptions {
  /**
   * Payload bytes this read collects, at most the reader's `readBytesMax` (the default): a caller that must
   * fit its reply into one message asks for less. At least one batch is still returned, however large.
   */
  bytesMax?: number;
  /**
   * The caller reads on from where this read ends, as a scan's pages do: a read cut short by its bounds (see
   * `isCutShort`) then starts the prefetch at once, not only at the second read of the scan.
   */
  sequential?: boolean;
}

export interface StreamReaderOptions {
  store: ObjectStore;
  /** Only the view is used: a reader never proposes. */
  meta: Pick<MetaAccess, 'view'>;
  /** Bytes of committed payloads the tail cache keeps; `LIMITS.streamCacheBytesMax` when absent. */
  cacheBytesMax?: number;
  /** Payload bytes one read collects, and one prefetch window holds; `LIMITS.streamReadBytesMax` when absent. */
  readBytesMax?: number;
  /** Bytes of fetched payloads and prefetch GETs in flight the read cache holds; `LIMITS.streamReadCacheBytesMax` when absent. */
  readCacheBytesMax?: number;
  /** Windows a sequential scan fetches ahead; `LIMITS.streamPrefetchWindowsMax` when absent, 0 turns prefetch off. */
  prefetchWindowsMax?: number;
}

/** Cumulative counts of a reader's work, for metrics. */
export interface StreamReaderStats {
  /** Ranged GETs issued, by reads and by prefetch, failed ones included. */
  gets: number;
  /** Bytes those GETs returned. */
  getBytes: number;
  /** Slices reads took from the tail cache. */
  tailCacheHits: number;
  /** Slices reads took from the read cache. */
  readCacheHits: number;
  /** The GETs issued by prefetch (part of `gets`), and the bytes they returned (part of `getBytes`). */
  prefetchGets: number;
  prefetchBytes: number;
  /** GETs already in flight that a read waited for instead of fetching their slices again, once per read. */
  joinedGets: number;
}

/**
 * The body of one GET, whose slices' payloads are views into it: it stays in memory while any of them is
 * cached, so the read cache counts its whole length from the first of its slices kept to the last one let go.
 */
interface FetchedBody {
  byteLength: number;
  /** Slices of this body the read cache holds. */
  cachedSlices: number;
}

/** A slice the tail cache holds: its batches (one, or those of a packed slice) and their payload bytes. */
interface CachedSlice {
  batches: readonly StreamBatch[];
  bytes: number;
}

/** A slice the read cache holds (its batches are views of `body`), and whether prefetch brought it (a read starting there continues a scan). */
interface ReadCacheEntry {
  batches: readonly StreamBatch[];
  body: FetchedBody;
  prefetched: boolean;
}

/** A slice whose GET is in flight: its batches once the GET lands, the GET it belongs to, and who started it. */
interface SliceInFlight {
  batches: Promise<readonly StreamBatch[]>;
  get: CoalescedRead;
  prefetched: boolean;
}

/**
 * The read path of s3stream (docs/architecture.md §6). A read finds the committed batches of a stream through the view's
 * slices (a binary search by offset, never a listing of the object store) and takes their payloads from one of
 * two caches, from a GET already in flight, or by ranged GETs of the objects that hold them.
 *
 * The tail cache is filled by `cache`, which the WAL writer's `onCommitted` calls as batches commit, so the
 * tail of a stream is served from memory. The read cache keeps what GETs fetched, by reads and by prefetch.
 * Both are least-recently-used maps bounded by bytes, and they are apart so that old data fetched for a
 * consumer catching up never pushes the committed tail out. A slice served from either costs no GET.
 *
 * The payloads a read does not hold are fetched with one ranged GET per run of back-to-back slices of one
 * object (a compacted stream object holds many batches back to back), at most `LIMITS.streamReadsInFlightMax`
 * GETs of one read at a time. A slice whose GET is already in flight is not fetched again: the read waits for
 * that GET. If a GET it waited for fails, the read fetches those slices once more itself, and reports that
 * attempt's error (a failed prefetch is not the read's to report).
 *
 * Sequential scans are prefetched. The reader remembers where the last read of each bucket ended (for the
 * `LIMITS.streamPrefetchBucketsMax` most recently read buckets); a read that starts there, or inside the last
 * batch it returned, or at a slice prefetch brought, continues a scan. After choosing its slices such a read
 * starts, in the background, the GETs of the windows after them (a window is what one read takes at most; see
 * `planPrefetch`), coalesced the same way, into the read cache. Bytes of prefetch GETs in flight count against
 * the read cache's bound, so cache and prefetch together never hold more than `readCacheBytesMax`; a prefetch
 * that does not fit is skipped. A failed prefetch is forgotten: the read that needs its data fetches it again.
 *
 * A read sees the view as it was when the read began; it returns only committed data, and prefetch fetches only
 * slices of that view. Objects are never rewritten in place, so a cached payload stays valid for good.
 */
export class StreamReader {
  private readonly store: ObjectStore;
  private readonly meta: Pick<MetaAccess, 'view'>;
  private readonly cacheBytesMax: number;
  private readonly readBytesMax: number;
  /** Bytes one coalesced GET fetches at most (`LIMITS.streamGetBytesMax`, or less with a smaller `readBytesMax`). */
  private readonly getBytesMax: number;
  private readonly readCacheBytesMax: number;
  private readonly prefetchWindowsMax: number;
  /** Slices by `cacheKey`; a Map iterates in insertion order, so the first entry is the least recently used. */
  private readonly tailCache = new Map<string, CachedSlice>();
  private tailCacheBytes = 0;
  /** Payloads fetched from the store, by `cacheKey`, least recently used first. */
  private readonly readCache = new Map<string, ReadCacheEntry>();
  private readCacheBytes = 0;
  /** Bytes of prefetch GETs in flight; with `readCacheBytes` at most `readCacheBytesMax`. */
  private prefetchBytesInFlight = 0;
  /** Slices being fetched, by `cacheKey`: a read needing one waits for its GET instead of issuing another. */
  private readonly inFlight = new Map<string, SliceInFlight>();
  /** Where the last read of each bucket ended, least recently read first. */
  private readonly readEnds = new Map<string, ReadEnd>();
  private readonly counts: StreamReaderStats = { gets: 0, getBytes: 0, tailCacheHits: 0, readCacheHits: 0, prefetchGets: 0, prefetchBytes: 0, joinedGets: 0 };

  constructor(options: StreamReaderOptions) {
    this.store = options.store;
    this.meta = options.meta;
    this.cacheBytesMax = options.cacheBytesMax ?? LIMITS.streamCacheBytesMax;
    this.readBytesMax = options.readBytesMax ?? LIMITS.streamReadBytesMax;
    this.getBytesMax = Math.min(LIMITS.streamGetBytesMax, this.readBytesMax);
    this.readCacheBytesMax = options.readCacheBytesMax ?? LIMITS.streamReadCacheBytesMax;
    this.prefetchWindowsMax = options.prefetchWindowsMax ?? LIMITS.streamPrefetchWindowsMax;
    if (!(this.cacheBytesMax >= 0) || !(this.readBytesMax > 0) || !(this.readCacheBytesMax >= 0)) {
      throw new Error(
        `StreamReader needs cacheBytesMax >= 0, readBytesMax > 0 and readCacheBytesMax >= 0 (got ${this.cacheBytesMax}, ${this.readBytesMax}, ${this.readCacheBytesMax})`,
      );
    }
    if (!Number.isSafeInteger(this.prefetchWindowsMax) || this.prefetchWindowsMax < 0) {
      throw new Error(`StreamReader needs a whole number of prefetch windows (got ${this.prefetchWindowsMax})`);
    }
  }

  /** Bytes of payloads in the tail cache. */
  get cacheByteCount(): number {
    return this.tailCacheBytes;
  }

  /** Bytes of payloads in the read cache. With `prefetchByteCount` at most `readCacheBytesMax`. */
  get readCacheByteCount(): number {
    return this.readCacheBytes;
  }

  /** What the tail cache and the read cache (prefetch in flight included) hold, and their bounds, as the node's cache gauges show them. */
  get cacheSizes(): { cache: 'stream_tail' | 'stream_read'; bytes: number; bytesMax: number }[] {
    return [
      { cache: 'stream_tail', bytes: this.tailCacheBytes, bytesMax: this.cacheBytesMax },
      { cache: 'stream_read', bytes: this.readCacheBytes + this.prefetchBytesInFlight, bytesMax: this.readCacheBytesMax },
    ];
  }

  /** Bytes of prefetch GETs in flight. */
  get prefetchByteCount(): number {
    return this.prefetchBytesInFlight;
  }

  /** Cumulative counts since the reader was made; a copy. */
  get stats(): StreamReaderStats {
    return { ...this.counts };
  }

  /**
   * Keeps a committed batch's payload in the tail cache for later reads, evicting the least recently used
   * batches beyond the bound. A payload larger than the whole cache is not kept. The array itself is kept,
   * not a copy: the caller hands it over and never changes it (as `WalWriter`'s appenders do, whose
   * `onCommitted` this fits).
   */
  cache(bucketId: string, slice: DataSlice, payload: Uint8Array): void {
    if (payload.byteLength !== slice.length) {
      throw new Error(`a cached payload of ${payload.byteLength} bytes does not match its slice of ${slice.length} bytes`);
    }
    if (payload.byteLength > this.cacheBytesMax) return;
    this.keepInTailCache(cacheKey(bucketId, slice), { batches: [{ startOffset: slice.startOffset, endOffset: slice.endOffset, payload }], bytes: payload.byteLength });
  }

  /**
   * Compaction copied these batches of a stream byte for byte into a stream object (`from` their WAL slices
   * `to` the slice that packs them there). The tail cache keeps them under the new slice when it holds all of
   * them, so reads through the view, which now names the stream object, still find them (without it every
   * batch older than a compaction round, 10 s, was fetched again from S3 while the node still held it). The
   * read cache moves a batch that keeps a slice of its own; what either cache holds under the WAL slices is
   * let go, since no view names them any more.
   */
  moveCached(bucketId: string, moved: readonly SliceMove[]): void {
    for (const { from, to } of moved) {
      const bytes = from.reduce((total, slice) => total + slice.length, 0);
      if (to.batches === undefined ? from.length !== 1 || bytes !== to.length : from.length !== to.batches || bytes >= to.length) {
        throw new Error(`${from.length} batches of ${bytes} bytes cannot move to a slice of ${to.batches ?? 1} batches and ${to.length} bytes`);
      }
      const toKey = cacheKey(bucketId, to);
      const fromKeys = from.map((slice) => cacheKey(bucketId, slice));
      const tails = fromKeys.map((key) => this.tailCache.get(key));
      fromKeys.forEach((key) => this.forgetTail(key));
      if (tails.every((tail) => tail !== undefined)) {
        this.keepInTailCache(toKey, { batches: tails.flatMap((tail) => tail.batches), bytes });
      }
      const read = from.length === 1 && to.batches === undefined ? this.readCache.get(fromKeys[0]!) : undefined;
      if (read !== undefined) {
        this.readCache.delete(fromKeys[0]!);
        if (this.readCache.has(toKey)) this.forgetRead(toKey);
        this.readCache.set(toKey, read);
      } else fromKeys.forEach((key) => this.forgetRead(key));
    }
  }

  /** The payload of a slice holding one batch (a WAL slice) if either cache of this reader still holds it; does not count as a use. */
  cachedPayload(bucketId: string, slice: DataSlice): Uint8Array | undefined {
    const key = cacheKey(bucketId, slice);
    const batches = this.tailCache.get(key)?.batches ?? this.readCache.get(key)?.batches;
    return batches?.length === 1 ? batches[0]!.payload : undefined;
  }

  /** Empties both caches, so later reads go to the store (GETs still in flight keep what they bring). */
  clearCache(): void {
    this.tailCache.clear();
    this.tailCacheBytes = 0;
    this.readCache.clear();
    this.readCacheBytes = 0;
  }

  /** Resolves once no GET of this reader is in flight, prefetches included; never rejects. */
  async whenIdle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight.values()].map((slice) => slice.batches));
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
  async read(bucketId: string, fromOffset: number, maxRecords: number, options: StreamReadOptions = {}): Promise<StreamReadResult> {
    if (!Number.isSafeInteger(fromOffset) || fromOffset < 0) throw new InvalidArgumentError(`offset must be a non-negative integer, not ${fromOffset}`);
    if (!Number.isSafeInteger(maxRecords) || maxRecords < 1) throw new InvalidArgumentError(`maxRecords must be a positive integer, not ${maxRecords}`);
    const bytesMax = options.bytesMax ?? this.readBytesMax;
    if (!Number.isSafeInteger(bytesMax) || bytesMax < 1 || bytesMax > this.readBytesMax) {
      throw new InvalidArgumentError(`bytesMax must be a positive integer of at most ${this.readBytesMax}, not ${options.bytesMax}`);
    }
    const record = getIn(this.meta.view.buckets, bucketId);
    if (!record) throw new NotFoundError(`bucket ${bucketId} does not exist`);
    const stream = record.stream;
    if (fromOffset > stream.endOffset) throw new InvalidArgumentError(`offset ${fromOffset} is beyond the high watermark ${stream.endOffset}`);

    const start = Math.max(fromOffset, stream.startOffset);
    const bounds = { bytesMax, batchesMax: LIMITS.streamReadBatchesMax };
    const slices = slicesOf(stream);
    const range = chooseReadSlices(slices, start, maxRecords, bounds);
    const chosen = slices.slice(range.first, range.endExclusive);
    if (start < stream.endOffset && !(chosen.length > 0 && chosen[0]!.startOffset <= start)) {
      throw new Error(`the slices of bucket ${bucketId} do not cover committed offset ${start} (committed end ${stream.endOffset})`);
    }
    const end = readEndOf(chosen, start);
    const scanning = (options.sequential === true && this.prefetchWindowsMax > 0 && isCutShort(range, slices.length, end, start, maxRecords)) || this.continuesScan(bucketId, start, chosen);
    this.rememberReadEnd(bucketId, end);
    // This read's own GETs start before the prefetch's, so they get the first slots of the store.
    const batchesOfChosen = this.batchesOf(bucketId, chosen);
    if (scanning) this.prefetchAfter(bucketId, slices, range.endExclusive);
    const fetched = await batchesOfChosen;
    return {
      batches: chosen.some((slice) => slice.batches !== undefined) ? boundedBatches(fetched.flat(), start, maxRecords, bounds) : fetched.map((batches) => batches[0]!),
      highWatermark: stream.endOffset,
      startOffset: stream.startOffset,
    };
  }

  /** Whether a read from `start` taking `chosen` continues a sequential scan of its bucket. */
  private continuesScan(bucketId: string, start: number, chosen: readonly DataSlice[]): boolean {
    if (this.prefetchWindowsMax === 0) return false;
    if (continuesRead(this.readEnds.get(bucketId), start)) return true;
    const first = chosen[0];
    if (first === undefined) return false;
    const key = cacheKey(bucketId, first);
    return this.readCache.get(key)?.prefetched === true || this.inFlight.get(key)?.prefetched === true;
  }

  private rememberReadEnd(bucketId: string, end: ReadEnd): void {
    this.readEnds.delete(bucketId);
    this.readEnds.set(bucketId, end);
    for (const [oldest] of this.readEnds) {
      if (this.readEnds.size <= LIMITS.streamPrefetchBucketsMax) break;
      this.readEnds.delete(oldest);
    }
  }

  /**
   * The batches of a read's slices, in order. A slice whose joined GET failed is fetched once more (that GET
   * may have been a prefetch, whose failure is not this read's); the error of that second attempt is the read's.
   */
  private async batchesOf(bucketId: string, slices: readonly DataSlice[]): Promise<(readonly StreamBatch[])[]> {
    const sources = this.batchSources(bucketId, slices);
    const outcomes = await Promise.allSettled(sources.map((source) => source.batches));
    const ownFailure = outcomes.find((outcome, index) => outcome.status === 'rejected' && !sources[index]!.joined);
    if (ownFailure?.status === 'rejected') throw ownFailure.reason;

    const batches = outcomes.map((outcome) => (outcome.status === 'fulfilled' ? outcome.value : undefined));
    const retry = batches.flatMap((held, index) => (held === undefined ? [index] : []));
    if (retry.length === 0) return batches as (readonly StreamBatch[])[];
    const again = await Promise.all(
      this.batchSources(
        bucketId,
        retry.map((index) => slices[index]!),
      ).map((source) => source.batches),
    );
    retry.forEach((index, position) => (batches[index] = again[position]));
    return batches as (readonly StreamBatch[])[];
  }

  /**
   * Where each slice's batches come from: a cache (counted as a hit), a GET in flight (joined), or a GET of this
   * read, started here with the slices it lacks coalesced.
   */
  private batchSources(bucketId: string, slices: readonly DataSlice[]): { batches: Promise<readonly StreamBatch[]>; joined: boolean }[] {
    const sources = new Array<{ batches: Promise<readonly StreamBatch[]>; joined: boolean }>(slices.length);
    const joinedGets = new Set<CoalescedRead>();
    const missing: number[] = [];
    slices.forEach((slice, index) => {
      const held = this.takeCached(bucketId, slice);
      const inFlight = held === undefined ? this.inFlight.get(cacheKey(bucketId, slice)) : undefined;
      if (held !== undefined) sources[index] = { batches: Promise.resolve(held), joined: false };
      else if (inFlight !== undefined) {
        joinedGets.add(inFlight.get);
        sources[index] = { batches: inFlight.batches, joined: true };
      } else missing.push(index);
    });
    this.counts.joinedGets += joinedGets.size;
    const wanted = missing.map((index) => slices[index]!);
    const fetched = this.startGets(bucketId, wanted, coalesceSliceReads(wanted, this.getBytesMax), false);
    missing.forEach((index, position) => (sources[index] = { batches: fetched[position]!, joined: false }));
    return sources;
  }

  /**
   * Starts the prefetch of a scan after a read that took the slices before index `after` of `slices` (the
   * read's view): the slices `planPrefetch` picks, coalesced, as many of their GETs as the read cache's bound
   * leaves room for, nearest first.
   */
  private prefetchAfter(bucketId: string, slices: SliceList, after: number): void {
    const bounds = { bytesMax: this.readBytesMax, batchesMax: LIMITS.streamReadBatchesMax, windowsMax: this.prefetchWindowsMax };
    const wanted = planPrefetch(slices, after, (index) => this.holds(bucketId, slices.at(index)!), bounds).map((index) => slices.at(index)!);
    const reads = this.affordablePrefetch(coalesceSliceReads(wanted, this.getBytesMax));
    if (reads.length > 0) this.startGets(bucketId, wanted, reads, true);
  }

  /** The leading prefetch GETs whose bytes, with those already in flight, fit within the read cache's bound. */
  private affordablePrefetch(reads: readonly CoalescedRead[]): CoalescedRead[] {
    let bytes = this.prefetchBytesInFlight;
    const affordable: CoalescedRead[] = [];
    for (const read of reads) {
      bytes += read.endExclusive - read.start;
      if (bytes > this.readCacheBytesMax) break;
      affordable.push(read);
    }
    return affordable;
  }

  /**
   * Starts the GETs `reads` of `slices` (none of them cached or in flight; each read's members index
   * `slices`), at most `LIMITS.streamReadsInFlightMax` at a time, and returns each slice's batches (undefined
   * for slices of no read). Each slice is registered as in flight until its GET settles; what arrives goes into
   * the read cache. A GET that has not started when another of the same call fails fails the same way, so a
   * failing read ends fast. A prefetch reserves its bytes in the read cache's bound until its GET settles.
   */
  private startGets(bucketId: string, slices: readonly DataSlice[], reads: readonly CoalescedRead[], prefetched: boolean): Promise<readonly StreamBatch[]>[] {
    const fetched = new Array<Promise<readonly StreamBatch[]>>(slices.length);
    const slots = new Semaphore(LIMITS.streamReadsInFlightMax, reads.length);
    let firstFailure: { error: unknown } | undefined;
    for (const read of reads) {
      const members = read.members.map((member) => slices[member]!);
      const bytes = read.endExclusive - read.start;
      if (prefetched) this.reservePrefetch(bytes);
      const get = slots.run(async () => {
        if (firstFailure) throw firstFailure.error;
        return this.getBatches(bucketId, read, members, prefetched);
      });
      const entries = members.map((slice, position): SliceInFlight => {
        const batches = get.then(({ parts }) => parts[position]!);
        // Nobody may wait for a prefetched slice; its failure must not surface as an unhandled rejection.
        batches.catch(() => undefined);
        const key = cacheKey(bucketId, slice);
        if (this.inFlight.has(key)) throw new Error(`slice ${key.replaceAll('\n', ' ')} was about to be fetched twice at once`);
        const entry = { batches, get: read, prefetched };
        this.inFlight.set(key, entry);
        fetched[read.members[position]!] = batches;
        return entry;
      });
      const settle = (): void => {
        if (prefetched) this.prefetchBytesInFlight -= bytes;
        members.forEach((slice, position) => {
          const key = cacheKey(bucketId, slice);
          if (this.inFlight.get(key) === entries[position]) this.inFlight.delete(key);
        });
      };
      get.then(
        ({ parts, body }) => {
          settle();
          members.forEach((slice, position) => this.keepInReadCache(cacheKey(bucketId, slice), parts[position]!, body, prefetched));
        },
        (error: unknown) => {
          settle();
          firstFailure ??= { error };
        },
      );
    }
    return fetched;
  }

  /**
   * One coalesced GET, cut into the batches of its slices: views of its body, not copies (copying every
   * fetched byte once more was a large share of a cold scan's CPU). The read cache counts the body whole
   * while it holds any of them (see `FetchedBody`).
   */
  private async getBatches(bucketId: string, read: CoalescedRead, slices: readonly DataSlice[], prefetched: boolean): Promise<{ parts: (readonly StreamBatch[])[]; body: FetchedBody }> {
    this.counts.gets++;
    if (prefetched) this.counts.prefetchGets++;
    let bodies: Uint8Array[];
    try {
      bodies = await getCoalescedRead(this.store, read, slices);
    } catch (error) {
      // A committed object can disappear only when compaction replaced it and the grace period ran out under
      // a slow read; a new read finds the replacement through the view.
      if (error instanceof NotFoundError) throw new UnavailableError(`object ${read.object} named by the view of bucket ${bucketId} is gone; read again`);
      throw error;
    }
    const bytes = read.endExclusive - read.start;
    this.counts.getBytes += bytes;
    if (prefetched) this.counts.prefetchBytes += bytes;
    const parts = slices.map((slice, index) => batchesOfSlice(slice, bodies[index]!));
    return { parts, body: { byteLength: bytes, cachedSlices: 0 } };
  }

  /** A slice's batches from either cache, counted as a hit and moved to the most recently used end of its cache. */
  private takeCached(bucketId: string, slice: DataSlice): readonly StreamBatch[] | undefined {
    const key = cacheKey(bucketId, slice);
    const tail = this.tailCache.get(key);
    if (tail !== undefined) {
      // Re-inserting moves the entry to the most recently used end.
      this.tailCache.delete(key);
      this.tailCache.set(key, tail);
      this.counts.tailCacheHits++;
      return tail.batches;
    }
    const entry = this.readCache.get(key);
    if (entry === undefined) return undefined;
    this.readCache.delete(key);
    this.readCache.set(key, entry);
    this.counts.readCacheHits++;
    return entry.batches;
  }

  /** Whether a slice is cached or being fetched; not a use. */
  private holds(bucketId: string, slice: DataSlice): boolean {
    const key = cacheKey(bucketId, slice);
    return this.tailCache.has(key) || this.readCache.has(key) || this.inFlight.has(key);
  }

  /** Counts a prefetch GET's bytes against the read cache's bound, evicting what no longer fits. */
  private reservePrefetch(bytes: number): void {
    this.prefetchBytesInFlight += bytes;
    this.evictReadCacheBeyondBound();
  }

  /** Keeps a slice in the tail cache, evicting the least recently used slices beyond the bound. */
  private keepInTailCache(key: string, slice: CachedSlice): void {
    this.forgetTail(key);
    this.tailCache.set(key, slice);
    this.tailCacheBytes += slice.bytes;
    for (const [oldestKey] of this.tailCache) {
      if (this.tailCacheBytes <= this.cacheBytesMax) break;
      this.forgetTail(oldestKey);
    }
  }

  /** Keeps a fetched slice (its batches are views of `body`) unless its body does not fit beside the prefetch GETs in flight. */
  private keepInReadCache(key: string, batches: readonly StreamBatch[], body: FetchedBody, prefetched: boolean): void {
    if (this.prefetchBytesInFlight + body.byteLength > this.readCacheBytesMax) return;
    this.forgetRead(key);
    this.readCache.set(key, { batches, body, prefetched });
    if (body.cachedSlices++ === 0) this.readCacheBytes += body.byteLength;
    this.evictReadCacheBeyondBound();
  }

  private evictReadCacheBeyondBound(): void {
    for (const [oldestKey] of this.readCache) {
      if (this.readCacheBytes + this.prefetchBytesInFlight <= this.readCacheBytesMax) break;
      this.forgetRead(oldestKey);
    }
  }

  private forgetTail(key: string): void {
    const slice = this.tailCache.get(key);
    if (slice === undefined) return;
    this.tailCache.delete(key);
    this.tailCacheBytes -= slice.bytes;
  }

  private forgetRead(key: string): void {
    const entry = this.readCache.get(key);
    if (entry === undefined) return;
    this.readCache.delete(key);
    if (--entry.body.cachedSlices === 0) this.readCacheBytes -= entry.body.byteLength;
  }
}

/**
 * Objects are never rewritten in place, so an object and a position name one batch for good. (A bucket's
 * offsets do not: a partition dropped and created again starts its stream at offset 0 anew. Compaction
 * tells the reader where it moved the batches it cached, `moveCached`.)
 */
function cacheKey(bucketId: string, slice: DataSlice): string {
  return `${bucketId}\n${slice.object}\n${slice.position}`;
}
