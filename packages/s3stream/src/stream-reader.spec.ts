import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startS3Server, type S3ServerHandle } from '@mink/devcluster';
import { NO_WRITERS, bucketId, emptyView, shardedFrom, type BucketRecord, type DataSlice, type View } from '@mink/meta';
import { MetaStore } from '@mink/metalog';
import { LIMITS } from '@mink/config';
import { InvalidArgumentError, MinkError, NotFoundError, UnavailableError } from '@mink/protocol';
import { startLedTable, type LedStream as StreamAddress } from '@mink/testing';
import { DelegatingObjectStore, InMemoryObjectStore, S3ObjectStore, type ByteRange, type ObjectStore } from './object-store';
import { packedIndex, type StreamBatch } from './packed-slice';
import { StreamReader } from './stream-reader';
import { WalWriter, type WalAppendRequest } from './wal-writer';

const NODE = '1';


const encoder = new TextEncoder();
const decoder = new TextDecoder();

function appendRequest(stream: StreamAddress, text: string, recordCount: number): WalAppendRequest {
  return { bucketId: stream.id, tableId: stream.tableId, partition: null, bucket: stream.bucket, streamEpoch: stream.streamEpoch, payload: encoder.encode(text), recordCount };
}

/** A batch as a test expects to read it back: its offsets and the text it was appended with. */
interface WrittenBatch {
  startOffset: number;
  endOffset: number;
  text: string;
}

function asWritten(batches: StreamBatch[]): WrittenBatch[] {
  return batches.map((batch) => ({ startOffset: batch.startOffset, endOffset: batch.endOffset, text: decoder.decode(batch.payload) }));
}

/**
 * Appends `count` batches to each stream, interleaved, with record counts 1..4 and distinct texts; returns
 * what each stream should hold, computed from the appends themselves rather than from the view.
 */
async function appendMany(writer: WalWriter, streams: StreamAddress[], count: number): Promise<Map<string, WrittenBatch[]>> {
  const calls: { stream: StreamAddress; text: string; recordCount: number }[] = [];
  for (let index = 0; index < count; index++) {
    for (const stream of streams) calls.push({ stream, text: `${stream.bucket}:${index}:${'#'.repeat(index % 7)}`, recordCount: 1 + (index % 4) });
  }
  const results = await Promise.all(calls.map((call) => writer.append(appendRequest(call.stream, call.text, call.recordCount))));
  const expected = new Map<string, WrittenBatch[]>(streams.map((stream) => [stream.id, []]));
  let nextByStream = new Map<string, number>(streams.map((stream) => [stream.id, 0]));
  calls.forEach((call, index) => {
    const startOffset = nextByStream.get(call.stream.id)!;
    expect(results[index]).toEqual({ baseOffset: startOffset, count: call.recordCount });
    nextByStream = nextByStream.set(call.stream.id, startOffset + call.recordCount);
    expected.get(call.stream.id)!.push({ startOffset, endOffset: startOffset + call.recordCount, text: call.text });
  });
  return expected;
}

/** The batches a read from `fromOffset` for `maxRecords` should return: whole batches, in order, until the records are covered. */
function expectedRead(batches: WrittenBatch[], fromOffset: number, maxRecords: number): WrittenBatch[] {
  const result: WrittenBatch[] = [];
  let covered = 0;
  for (const batch of batches) {
    if (batch.endOffset <= fromOffset) continue;
    result.push(batch);
    covered += batch.endOffset - Math.max(batch.startOffset, fromOffset);
    if (covered >= maxRecords) break;
  }
  return result;
}

describe('StreamReader', () => {
  const stores: MetaStore[] = [];
  const writers: WalWriter[] = [];
  const objectStores: InMemoryObjectStore[] = [];
  afterEach(async () => {
    await Promise.all(writers.splice(0).map((writer) => writer.close()));
    await Promise.all(stores.splice(0).map((store) => store.stop()));
    // docs/architecture.md §6: a reader finds data through the view and never lists the bucket.
    for (const store of objectStores.splice(0)) expect(store.calls.list).toBe(0);
  });

  /** A stream store with a writer whose commits feed the reader's cache, as a data node wires them. */
  async function setUp(bucketCount: number, options: { flushBytes?: number; cacheBytesMax?: number; readBytesMax?: number; prefetchWindowsMax?: number } = {}) {
    const { meta, streams } = await startLedTable(bucketCount);
    stores.push(meta);
    const store = new InMemoryObjectStore();
    objectStores.push(store);
    const reader = new StreamReader({ store, meta, cacheBytesMax: options.cacheBytesMax, readBytesMax: options.readBytesMax, prefetchWindowsMax: options.prefetchWindowsMax });
    const writer = new WalWriter({ nodeId: NODE, nodeEpoch: 1, store, meta, lingerMs: 1, flushBytes: options.flushBytes, onCommitted: (id, slice, payload) => reader.cache(id, slice, payload) });
    writers.push(writer);
    return { meta, streams, store, reader, writer };
  }

  it('returns the whole batch holding the offset asked for, with the high watermark and the start offset', async () => {
    // Proves a read inside one slice returns exactly that slice's committed bytes, starting before the offset when the batch does.
    const { streams, reader, writer } = await setUp(1);
    const stream = streams[0]!;
    await writer.append(appendRequest(stream, 'first', 3));
    await writer.append(appendRequest(stream, 'second', 5));

    const read = await reader.read(stream.id, 4, 1);
    expect({ ...read, batches: asWritten(read.batches) }).toEqual({ batches: [{ startOffset: 3, endOffset: 8, text: 'second' }], highWatermark: 8, startOffset: 0 });
    expect(asWritten((await reader.read(stream.id, 0, 3)).batches)).toEqual([{ startOffset: 0, endOffset: 3, text: 'first' }]);
    expect(asWritten((await reader.read(stream.id, 2, 2)).batches)).toEqual([
      { startOffset: 0, endOffset: 3, text: 'first' },
      { startOffset: 3, endOffset: 8, text: 'second' },
    ]);
  });

  it('reads across many slices in many objects the same bytes from the cache and, once it is cleared, from the store', async () => {
    // Proves the binary search over slices and the ranged GETs: every window of the stream comes back as written, with no GET while
    // cached, at most one GET per slice once the caches are cleared, and none again once the read cache holds what was fetched.
    const { streams, store, reader, writer } = await setUp(3, { flushBytes: 64 });
    const expected = await appendMany(writer, streams, 60);
    expect(store.keys().length).toBeGreaterThan(10);

    const windows: [number, number][] = [[0, 1], [0, 1_000_000], [7, 10], [55, 1], [100, 37], [149, 2]];
    const readWindows = async () => {
      const reads: WrittenBatch[][] = [];
      for (const stream of streams) for (const [fromOffset, maxRecords] of windows) reads.push(asWritten((await reader.read(stream.id, fromOffset, maxRecords)).batches));
      return reads;
    };
    const wanted = streams.flatMap((stream) => windows.map(([fromOffset, maxRecords]) => expectedRead(expected.get(stream.id)!, fromOffset, maxRecords)));
    expect(wanted[1]).toHaveLength(60);

    const getsBefore = store.calls.get;
    expect(await readWindows()).toEqual(wanted);
    expect(store.calls.get).toBe(getsBefore);

    reader.clearCache();
    expect(reader.cacheByteCount).toBe(0);
    expect(await readWindows()).toEqual(wanted);
    await reader.whenIdle();
    const getsFromStore = store.calls.get - getsBefore;
    expect(getsFromStore).toBeGreaterThan(0);
    expect(getsFromStore).toBeLessThanOrEqual(streams.length * 60);
    expect(reader.stats).toMatchObject({ gets: getsFromStore, tailCacheHits: wanted.reduce((total, batches) => total + batches.length, 0) });

    expect(await readWindows()).toEqual(wanted);
    expect(store.calls.get - getsBefore).toBe(getsFromStore);
  });

  it('keeps the cache within its byte bound, evicting the least recently used batch first', async () => {
    // Proves the LRU bound: only the most recently used batches stay, and an evicted one is fetched from the store. Prefetch is
    // off: reading 'bbbb' right after 'aaaa' is a sequential scan, which would fetch the evicted 'cccc' ahead of its read.
    const { streams, store, reader, writer } = await setUp(1, { cacheBytesMax: 10, prefetchWindowsMax: 0 });
    const stream = streams[0]!;
    for (const text of ['aaaa', 'bbbb', 'cccc']) await writer.append(appendRequest(stream, text, 1));
    expect(reader.cacheByteCount).toBe(8);
    expect(reader.cacheSizes.find((size) => size.cache === 'stream_tail')).toEqual({ cache: 'stream_tail', bytes: 8, bytesMax: 10 });

    const getsBefore = store.calls.get;
    expect(asWritten((await reader.read(stream.id, 1, 1)).batches)).toEqual([{ startOffset: 1, endOffset: 2, text: 'bbbb' }]);
    expect(store.calls.get).toBe(getsBefore);
    expect(asWritten((await reader.read(stream.id, 0, 1)).batches)).toEqual([{ startOffset: 0, endOffset: 1, text: 'aaaa' }]);
    expect(store.calls.get).toBe(getsBefore + 1);

    // 'bbbb' was used more recently than 'cccc', so a new batch evicts 'cccc'.
    await writer.append(appendRequest(stream, 'dddd', 1));
    expect(reader.cacheByteCount).toBe(8);
    const getsThen = store.calls.get;
    await reader.read(stream.id, 1, 1);
    await reader.read(stream.id, 3, 1);
    expect(store.calls.get).toBe(getsThen);
    expect(asWritten((await reader.read(stream.id, 2, 1)).batches)).toEqual([{ startOffset: 2, endOffset: 3, text: 'cccc' }]);
    expect(store.calls.get).toBe(getsThen + 1);
  });

  it('stops at the byte bound of a read but always returns at least one batch', async () => {
    // Proves readBytesMax bounds a read even when many records are asked for.
    const { streams, reader, writer } = await setUp(1, { readBytesMax: 10 });
    const stream = streams[0]!;
    for (const text of ['123456', '7890', 'abc', '0123456789012']) await writer.append(appendRequest(stream, text, 1));
    expect(asWritten((await reader.read(stream.id, 0, 100)).batches).map((batch) => batch.text)).toEqual(['123456', '7890']);
    expect(asWritten((await reader.read(stream.id, 2, 100)).batches).map((batch) => batch.text)).toEqual(['abc']);
    expect(asWritten((await reader.read(stream.id, 3, 100)).batches).map((batch) => batch.text)).toEqual(['0123456789012']);
  });

  it('answers the high watermark with no batches, refuses offsets beyond it, unknown buckets and malformed arguments', async () => {
    // Proves the error contract of read: InvalidArgument beyond the high watermark, NotFound for an unknown bucket.
    const { streams, reader, writer } = await setUp(1);
    const stream = streams[0]!;
    await writer.append(appendRequest(stream, 'only', 2));

    expect(await reader.read(stream.id, 2, 10)).toEqual({ batches: [], highWatermark: 2, startOffset: 0 });
    await expect(reader.read(stream.id, 3, 10)).rejects.toEqual(new InvalidArgumentError('offset 3 is beyond the high watermark 2'));
    await expect(reader.read(stream.id, 3, 10)).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(reader.read(bucketId(stream.tableId, null, 9), 0, 10)).rejects.toBeInstanceOf(NotFoundError);
    await expect(reader.read('constructor', 0, 10)).rejects.toBeInstanceOf(NotFoundError);
    await expect(reader.read(stream.id, -1, 10)).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(reader.read(stream.id, 0, 0)).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it('reads trimmed streams from their start, and reports a vanished object as Unavailable', async () => {
    // Proves offsets below the start read from the first stored batch, found by binary search in a view with many slices.
    const store = new InMemoryObjectStore();
    objectStores.push(store);
    const slices: DataSlice[] = [];
    const body: string[] = [];
    let position = 0;
    for (let offset = 10; offset < 1_000; offset += 10) {
      const text = `[${offset}]`;
      slices.push({ object: 'streams/s/10-1000', startOffset: offset, endOffset: offset + 10, position, length: text.length });
      body.push(text);
      position += text.length;
    }
    await store.put('streams/s/10-1000', encoder.encode(body.join('')));
    const id = bucketId(1, null, 0);
    const record = {
      tableId: 1,
      table: 'events',
      partition: null,
      bucket: 0,
      leader: NODE,
      leaderEpoch: 1,
      stream: { state: 'open', epoch: 1, node: NODE, nodeEpoch: 1, startOffset: 15, endOffset: 1_000, slices, writers: NO_WRITERS },
      kvSnapshots: [],
    } satisfies BucketRecord;
    const view: View = { ...emptyView(), buckets: shardedFrom({ [id]: record }) };
    const reader = new StreamReader({ store, meta: { view } });

    const fromStart = await reader.read(id, 0, 6);
    expect({ ...fromStart, batches: asWritten(fromStart.batches) }).toEqual({
      batches: [
        { startOffset: 10, endOffset: 20, text: '[10]' },
        { startOffset: 20, endOffset: 30, text: '[20]' },
      ],
      highWatermark: 1_000,
      startOffset: 15,
    });
    expect(asWritten((await reader.read(id, 999, 1)).batches)).toEqual([{ startOffset: 990, endOffset: 1_000, text: '[990]' }]);
    expect(asWritten((await reader.read(id, 500, 25)).batches).map((batch) => batch.text)).toEqual(['[500]', '[510]', '[520]']);

    await store.delete(['streams/s/10-1000']);
    expect(asWritten((await reader.read(id, 500, 1)).batches).map((batch) => batch.text)).toEqual(['[500]']);
    await expect(reader.read(id, 700, 1)).rejects.toBeInstanceOf(UnavailableError);
  });
});

/** A batch as stored: its offsets and its exact bytes. */
interface StoredBatch {
  startOffset: number;
  endOffset: number;
  payload: Uint8Array;
}

/** A bucket record whose open stream is `slices`, led by this node. */
function bucketRecordOf(bucket: number, slices: DataSlice[]): BucketRecord {
  const endOffset = slices.at(-1)?.endOffset ?? 0;
  return {
    tableId: 1,
    table: 'events',
    partition: null,
    bucket,
    leader: NODE,
    leaderEpoch: 1,
    stream: { state: 'open', epoch: 1, node: NODE, nodeEpoch: 1, startOffset: 0, endOffset, slices, writers: NO_WRITERS },
    kvSnapshots: [],
  };
}

/**
 * Puts `objects` into the store, each a list of batch payloads laid back to back as compaction lays them out,
 * and returns a fixed view with one bucket whose stream is those batches in order, `recordsOf(index)` records each.
 */
async function storeStream(store: ObjectStore, objects: Uint8Array[][], recordsOf: (index: number) => number = () => 1) {
  const slices: DataSlice[] = [];
  const batches: StoredBatch[] = [];
  let offset = 0;
  for (const [objectIndex, payloads] of objects.entries()) {
    const object = `streams/1/${objectIndex}`;
    let position = 0;
    for (const payload of payloads) {
      const endOffset = offset + recordsOf(batches.length);
      slices.push({ object, startOffset: offset, endOffset, position, length: payload.byteLength });
      batches.push({ startOffset: offset, endOffset, payload });
      position += payload.byteLength;
      offset = endOffset;
    }
    const body = new Uint8Array(position);
    let at = 0;
    for (const payload of payloads) {
      body.set(payload, at);
      at += payload.byteLength;
    }
    await store.put(object, body);
  }
  const id = bucketId(1, null, 0);
  const view: View = { ...emptyView(), buckets: shardedFrom({ [id]: bucketRecordOf(0, slices) }) };
  return { id, meta: { view }, slices, batches };
}

/** `count` batches of exactly `length` bytes each, distinct and readable: "b00000007|" and so on. */
function fixedBatches(count: number, length = 10): Uint8Array[] {
  return Array.from({ length: count }, (_, index) => encoder.encode(`b${String(index).padStart(length - 2, '0')}|`));
}

/** Deterministic random numbers (mulberry32), so a failing seeded test replays from its seed. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let mixed = Math.imul(state ^ (state >>> 15), 1 | state);
    mixed = (mixed + Math.imul(mixed ^ (mixed >>> 7), 61 | mixed)) ^ mixed;
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** The batches a read should return: whole batches from the one holding `from`, until the records are covered or the next passes the byte bound. */
function expectedBatches(batches: StoredBatch[], from: number, maxRecords: number, bytesMax: number): StoredBatch[] {
  const result: StoredBatch[] = [];
  let records = 0;
  let bytes = 0;
  for (const batch of batches) {
    if (batch.endOffset <= from) continue;
    if (result.length > 0 && bytes + batch.payload.byteLength > bytesMax) break;
    result.push(batch);
    records += batch.endOffset - Math.max(batch.startOffset, from);
    bytes += batch.payload.byteLength;
    if (records >= maxRecords) break;
  }
  return result;
}

/**
 * An in-memory store that records every GET as [key, start, endExclusive] and answers each only after a turn of
 * the event loop, so that GETs started together are in flight together (it counts how many, and how many bytes
 * they asked for). It can hold the GETs a predicate picks until `release`, fail chosen GETs, and call `observe`
 * whenever a GET starts or ends.
 */
class ProbedObjectStore extends DelegatingObjectStore<InMemoryObjectStore> {
  readonly gets: [string, number, number][] = [];
  getsInFlight = 0;
  getsInFlightMax = 0;
  bytesInFlight = 0;
  observe: (() => void) | undefined;
  private readonly idleWaiters: (() => void)[] = [];
  private holdWhere: ((key: string, range: ByteRange) => boolean) | undefined;
  private readonly held: (() => void)[] = [];
  private readonly heldWaiters: { count: number; resume: () => void }[] = [];
  private readonly failures = new Map<string, Error[]>();

  constructor() {
    super(new InMemoryObjectStore());
  }

  /** Holds every later GET `where` picks until `release`. */
  hold(where: (key: string, range: ByteRange) => boolean): void {
    this.holdWhere = where;
  }

  /** Stops holding and lets the held GETs go on. */
  release(): void {
    this.holdWhere = undefined;
    for (const resume of this.held.splice(0)) resume();
  }

  /** Resolves once `count` GETs are held. */
  untilHeld(count: number): Promise<void> {
    if (this.held.length >= count) return Promise.resolve();
    return new Promise((resume) => this.heldWaiters.push({ count, resume }));
  }

  /** Resolves once no GET is in flight; unlike the reader's `whenIdle` it touches none of the reader's promises. */
  untilNoGetsInFlight(): Promise<void> {
    if (this.getsInFlight === 0) return Promise.resolve();
    return new Promise((resume) => this.idleWaiters.push(resume));
  }

  /** Makes the next GET of `key` starting at `start` fail with `error` (after earlier failures of that GET). */
  failGet(key: string, start: number, error: Error): void {
    const queued = this.failures.get(`${key}@${start}`) ?? [];
    this.failures.set(`${key}@${start}`, [...queued, error]);
  }

  override async get(key: string, range?: ByteRange): Promise<Uint8Array> {
    if (range === undefined) throw new Error('a stream reader only asks for ranges');
    this.gets.push([key, range.start, range.endExclusive]);
    this.getsInFlight++;
    this.getsInFlightMax = Math.max(this.getsInFlightMax, this.getsInFlight);
    this.bytesInFlight += range.endExclusive - range.start;
    this.observe?.();
    try {
      if (this.holdWhere?.(key, range)) await this.held_();
      else await new Promise<void>((resume) => setImmediate(resume));
      const failure = this.failures.get(`${key}@${range.start}`)?.shift();
      if (failure) throw failure;
      return await this.inner.get(key, range);
    } finally {
      this.getsInFlight--;
      this.bytesInFlight -= range.endExclusive - range.start;
      this.observe?.();
      if (this.getsInFlight === 0) for (const resume of this.idleWaiters.splice(0)) resume();
    }
  }

  private held_(): Promise<void> {
    return new Promise((resume) => {
      this.held.push(resume);
      for (const waiter of this.heldWaiters.filter((candidate) => this.held.length >= candidate.count)) {
        this.heldWaiters.splice(this.heldWaiters.indexOf(waiter), 1);
        waiter.resume();
      }
    });
  }
}

/** Lets a rejection nobody handled surface while the test still runs: Jest fails the test that caused it. */
async function surfaceUnhandledRejections(): Promise<void> {
  await new Promise<void>((resume) => setImmediate(resume));
  await new Promise<void>((resume) => setImmediate(resume));
}

describe('StreamReader over stream objects', () => {
  const OBJECT = 'streams/1/0';

  it('fetches the back-to-back batches of one object with one ranged GET, at most streamReadsInFlightMax GETs at a time', async () => {
    // Proves coalescing and its bound: six objects of five batches cost six GETs of whole objects, four of them in flight at once.
    const store = new ProbedObjectStore();
    const objects = Array.from({ length: 6 }, (_, object) => Array.from({ length: 5 }, (_, batch) => encoder.encode(`object ${object}, batch ${batch}${'.'.repeat(batch)};`)));
    const { id, meta, batches } = await storeStream(store, objects);
    const reader = new StreamReader({ store, meta });

    const read = await reader.read(id, 0, 1_000);
    expect(read.batches).toEqual(batches);
    const objectLengths = objects.map((payloads) => payloads.reduce((total, payload) => total + payload.byteLength, 0));
    expect(store.gets).toEqual(objectLengths.map((length, object) => [`streams/1/${object}`, 0, length]));
    expect(store.getsInFlightMax).toBe(LIMITS.streamReadsInFlightMax);
    expect(reader.stats).toEqual({ gets: 6, getBytes: objectLengths.reduce((total, length) => total + length, 0), tailCacheHits: 0, readCacheHits: 0, prefetchGets: 0, prefetchBytes: 0, joinedGets: 0 });
  });

  it('keeps the batches compaction packed under their packed slice when the tail cache holds all of them, and lets a partial set go', async () => {
    // Proves moveCached with packed slices: four WAL batches cached by the writer are served after compaction
    // packed them (one tail cache hit, no GET); when one of them was evicted the rest are let go, and the read
    // fetches the packed slice and cuts it into the same batches.
    const walStore = new ProbedObjectStore();
    const payloads = fixedBatches(4);
    const wal = await storeStream(walStore, [payloads], (index) => index + 1);
    const index = packedIndex(wal.slices);
    const packedBytes = new Uint8Array(40 + index.byteLength);
    payloads.forEach((payload, at) => packedBytes.set(payload, at * 10));
    packedBytes.set(index, 40);
    const packed: DataSlice = { object: 'streams/packed', startOffset: 0, endOffset: 10, position: 0, length: packedBytes.byteLength, batches: 4 };
    await walStore.put(packed.object, packedBytes);
    const compactedView: View = { ...wal.meta.view, buckets: shardedFrom({ [wal.id]: bucketRecordOf(0, [packed]) }) };

    for (const cachedBatches of [4, 3]) {
      const meta = { view: wal.meta.view };
      const reader = new StreamReader({ store: walStore, meta });
      wal.slices.slice(0, cachedBatches).forEach((slice, at) => reader.cache(wal.id, slice, payloads[at]!));
      meta.view = compactedView;
      reader.moveCached(wal.id, [{ from: wal.slices, to: packed }]);
      const getsBefore = walStore.gets.length;
      expect((await reader.read(wal.id, 0, 1_000)).batches).toEqual(wal.batches);
      expect((await reader.read(wal.id, 3, 1)).batches).toEqual(wal.batches.slice(2, 3));
      if (cachedBatches === 4) {
        expect(walStore.gets.length).toBe(getsBefore);
        expect(reader.cacheByteCount).toBe(40);
        expect(reader.stats).toMatchObject({ gets: 0, tailCacheHits: 2 });
      } else {
        expect(walStore.gets.length).toBe(getsBefore + 1);
        expect(reader.cacheByteCount).toBe(0);
        expect(reader.stats).toMatchObject({ gets: 1, tailCacheHits: 0, readCacheHits: 1 });
      }
    }
    expect(() => new StreamReader({ store: walStore, meta: wal.meta }).moveCached(wal.id, [{ from: wal.slices.slice(1), to: packed }])).toThrow('3 batches of 30 bytes cannot move');
  });

  it('counts a GET body whole in the read cache while any of its batches is kept, and frees it with the last one', async () => {
    // Payloads are views of their GET's body (no copy), so the body stays in memory while one of them is
    // cached: a bound of 50 bytes cannot keep two 30-byte bodies, not even one batch of the first beside the second.
    const store = new ProbedObjectStore();
    const { id, meta, batches } = await storeStream(store, [fixedBatches(3), fixedBatches(3)]);
    const reader = new StreamReader({ store, meta, readCacheBytesMax: 50, prefetchWindowsMax: 0 });
    expect((await reader.read(id, 0, 3)).batches).toEqual(batches.slice(0, 3));
    expect(reader.readCacheByteCount).toBe(30);
    expect((await reader.read(id, 3, 3)).batches).toEqual(batches.slice(3, 6));
    expect(reader.readCacheByteCount).toBe(30);
    expect((await reader.read(id, 3, 3)).batches).toEqual(batches.slice(3, 6));
    expect(store.gets).toHaveLength(2);
    // Every batch of the first body went, so reading it again is a GET.
    expect((await reader.read(id, 2, 1)).batches).toEqual(batches.slice(2, 3));
    expect(store.gets).toHaveLength(3);
    expect(reader.readCacheByteCount).toBe(30 + 10);
  });

  it('serves batches held in the read cache or the tail cache without a GET', async () => {
    // Proves a fetched batch is kept and a committed one cached by the writer is used: repeated reads cost no GET.
    const store = new ProbedObjectStore();
    const { id, meta, slices, batches } = await storeStream(store, [fixedBatches(10), fixedBatches(10, 12)]);
    const fetching = new StreamReader({ store, meta });
    expect((await fetching.read(id, 0, 1_000)).batches).toEqual(batches);
    expect(store.gets).toHaveLength(2);
    expect((await fetching.read(id, 5, 10)).batches).toEqual(batches.slice(5, 15));
    expect(store.gets).toHaveLength(2);
    expect(fetching.stats).toMatchObject({ gets: 2, readCacheHits: 10, tailCacheHits: 0 });
    expect(fetching.readCacheByteCount).toBe(10 * 10 + 10 * 12);

    const tailed = new StreamReader({ store, meta });
    slices.forEach((slice, index) => tailed.cache(id, slice, batches[index]!.payload));
    expect((await tailed.read(id, 0, 1_000)).batches).toEqual(batches);
    expect(store.gets).toHaveLength(2);
    expect(tailed.stats).toMatchObject({ gets: 0, tailCacheHits: 20, readCacheHits: 0 });
  });

  it('prefetches the windows after a sequential read and serves the next read from them without a GET', async () => {
    // Proves prefetch: the second read of a scan fetches the two windows after it, the third read costs no GET, and
    // the fourth, finding the next window missing, fetches the two windows after itself.
    const store = new ProbedObjectStore();
    const { id, meta, batches } = await storeStream(store, [fixedBatches(30)]);
    const reader = new StreamReader({ store, meta, readBytesMax: 30, prefetchWindowsMax: 2 });

    expect((await reader.read(id, 0, 100)).batches).toEqual(batches.slice(0, 3));
    await reader.whenIdle();
    expect(store.gets).toEqual([[OBJECT, 0, 30]]);

    expect((await reader.read(id, 3, 100)).batches).toEqual(batches.slice(3, 6));
    await reader.whenIdle();
    expect(store.gets.slice(1)).toEqual([
      [OBJECT, 30, 60],
      [OBJECT, 60, 90],
      [OBJECT, 90, 120],
    ]);
    expect(reader.stats).toMatchObject({ gets: 4, prefetchGets: 2, prefetchBytes: 60 });

    expect((await reader.read(id, 6, 100)).batches).toEqual(batches.slice(6, 9));
    await reader.whenIdle();
    expect(store.gets).toHaveLength(4);
    expect(reader.stats).toMatchObject({ readCacheHits: 3 });

    expect((await reader.read(id, 9, 100)).batches).toEqual(batches.slice(9, 12));
    await reader.whenIdle();
    expect(store.gets.slice(4)).toEqual([
      [OBJECT, 120, 150],
      [OBJECT, 150, 180],
    ]);
    expect(reader.stats).toMatchObject({ gets: 6, readCacheHits: 6, prefetchGets: 4, prefetchBytes: 120, joinedGets: 0 });
  });

  it('prefetches from the first read of a sequential reader when that read is cut short by its bounds, and not when it got all it asked for', async () => {
    // Proves the first page of a scan starts the prefetch: a sequential read of 100 records stopped at 30 bytes fetches the two
    // windows after it at once, so the second read costs no GET; a sequential read that got its 3 records prefetches nothing.
    const store = new ProbedObjectStore();
    const { id, meta, batches } = await storeStream(store, [fixedBatches(30)]);
    const reader = new StreamReader({ store, meta, readBytesMax: 30, prefetchWindowsMax: 2 });
    expect((await reader.read(id, 0, 100, { sequential: true })).batches).toEqual(batches.slice(0, 3));
    await reader.whenIdle();
    expect(store.gets).toEqual([
      [OBJECT, 0, 30],
      [OBJECT, 30, 60],
      [OBJECT, 60, 90],
    ]);
    expect((await reader.read(id, 3, 100, { sequential: true })).batches).toEqual(batches.slice(3, 6));
    expect(reader.stats.readCacheHits).toBe(3);

    const whole = new StreamReader({ store, meta, readBytesMax: 30, prefetchWindowsMax: 2 });
    expect((await whole.read(id, 12, 3, { sequential: true })).batches).toEqual(batches.slice(12, 15));
    await whole.whenIdle();
    expect(whole.stats).toMatchObject({ gets: 1, prefetchGets: 0 });
  });

  it('refills a whole window at once when each read, bounded by its bytesMax, takes less than a window', async () => {
    // Proves prefetch does not dribble: reads of one batch are served from windows of three, fetched three batches at a time.
    const store = new ProbedObjectStore();
    const { id, meta, batches } = await storeStream(store, [fixedBatches(30)]);
    const reader = new StreamReader({ store, meta, readBytesMax: 30, prefetchWindowsMax: 2 });
    for (let offset = 0; offset < 9; offset++) {
      expect((await reader.read(id, offset, 100, { bytesMax: 10 })).batches).toEqual([batches[offset]]);
      await reader.whenIdle();
    }
    expect(store.gets).toEqual([
      [OBJECT, 0, 10],
      [OBJECT, 10, 20],
      [OBJECT, 20, 50],
      [OBJECT, 50, 80],
      [OBJECT, 80, 110],
      [OBJECT, 110, 140],
    ]);
    expect(reader.stats).toMatchObject({ gets: 6, prefetchGets: 4, readCacheHits: 7 });
  });

  it('makes a read that needs a slice whose prefetch is in flight join that GET instead of fetching it again', async () => {
    // Proves no slice is fetched twice at once: the third read of a scan waits for the held prefetch and issues no GET.
    const store = new ProbedObjectStore();
    const { id, meta, batches } = await storeStream(store, [fixedBatches(30)]);
    const reader = new StreamReader({ store, meta, readBytesMax: 30, prefetchWindowsMax: 2 });
    await reader.read(id, 0, 100);
    store.hold((_key, range) => range.start >= 60);
    expect((await reader.read(id, 3, 100)).batches).toEqual(batches.slice(3, 6));
    await store.untilHeld(2);
    expect(reader.prefetchByteCount).toBe(60);

    const joining = reader.read(id, 6, 100);
    store.release();
    expect((await joining).batches).toEqual(batches.slice(6, 9));
    await reader.whenIdle();
    expect(store.gets).toEqual([
      [OBJECT, 0, 30],
      [OBJECT, 30, 60],
      [OBJECT, 60, 90],
      [OBJECT, 90, 120],
    ]);
    expect(reader.stats).toMatchObject({ gets: 4, joinedGets: 1, readCacheHits: 0 });
    expect(reader.prefetchByteCount).toBe(0);
  });

  it.each<[number, boolean]>([
    [50, true],
    [20, false],
  ])('keeps the read cache and the prefetch in flight within readCacheBytesMax %i (prefetching: %s)', async (readCacheBytesMax, prefetching) => {
    // Proves the memory bound under prefetch: at every GET's start and end, and after every read, the read cache and the
    // prefetch GETs in flight hold at most the bound; a bound below one window leaves no room to prefetch at all. With room
    // for one window, reads are served by prefetch (from the read cache, or by joining its GET while it is in flight). After
    // each read, whose own GETs are done by then, the store's count of bytes in flight measures the prefetch independently.
    const store = new ProbedObjectStore();
    const { id, meta, batches } = await storeStream(store, [fixedBatches(60)]);
    const reader = new StreamReader({ store, meta, readBytesMax: 30, readCacheBytesMax, prefetchWindowsMax: 2 });
    const heldBytes: number[] = [];
    store.observe = () => heldBytes.push(reader.readCacheByteCount + reader.prefetchByteCount);
    for (let offset = 0; offset < 60; offset += 3) {
      expect((await reader.read(id, offset, 3)).batches).toEqual(batches.slice(offset, offset + 3));
      heldBytes.push(reader.readCacheByteCount + reader.prefetchByteCount, reader.readCacheByteCount + store.bytesInFlight);
    }
    await reader.whenIdle();
    expect(heldBytes.length).toBeGreaterThan(40);
    expect(Math.max(...heldBytes)).toBeLessThanOrEqual(readCacheBytesMax);
    const { prefetchGets, readCacheHits, joinedGets } = reader.stats;
    expect([prefetchGets > 0, readCacheHits + joinedGets > 0]).toEqual([prefetching, prefetching]);
  });

  it('forgets a failed prefetch: the read that needs its data fetches it itself, and later reads succeed', async () => {
    // Proves a prefetch failure neither fails a read nor sticks: the data is fetched again by the read that needs it, and the
    // rejection of the prefetch is handled (Jest fails a test in which a rejection goes unhandled).
    const store = new ProbedObjectStore();
    const { id, meta, batches } = await storeStream(store, [fixedBatches(30)]);
    const reader = new StreamReader({ store, meta, readBytesMax: 30, prefetchWindowsMax: 2 });
    store.failGet(OBJECT, 60, new UnavailableError('injected: the prefetch failed'));
    await reader.read(id, 0, 100);
    await reader.read(id, 3, 100);
    await store.untilNoGetsInFlight();
    await surfaceUnhandledRejections();
    expect(reader.prefetchByteCount).toBe(0);

    expect((await reader.read(id, 6, 100)).batches).toEqual(batches.slice(6, 9));
    expect((await reader.read(id, 9, 100)).batches).toEqual(batches.slice(9, 12));
    await reader.whenIdle();
    expect(store.gets.slice(0, 5)).toEqual([
      [OBJECT, 0, 30],
      [OBJECT, 30, 60],
      [OBJECT, 60, 90],
      [OBJECT, 90, 120],
      [OBJECT, 60, 90],
    ]);
    expect(store.gets.filter(([, start]) => start === 90)).toHaveLength(1);
    await surfaceUnhandledRejections();
  });

  it('makes a read that joined a failed prefetch fetch the data again, and report the error only when that fails too', async () => {
    // Proves the join path of a failure: the joined GET's error is not the read's; the read's own second attempt decides.
    const store = new ProbedObjectStore();
    const { id, meta, batches } = await storeStream(store, [fixedBatches(30)]);
    const reader = new StreamReader({ store, meta, readBytesMax: 30, prefetchWindowsMax: 2 });
    await reader.read(id, 0, 100);

    store.hold((_key, range) => range.start >= 60);
    await reader.read(id, 3, 100);
    await store.untilHeld(2);
    store.failGet(OBJECT, 60, new UnavailableError('injected: the prefetch failed'));
    const recovering = reader.read(id, 6, 100);
    store.release();
    expect((await recovering).batches).toEqual(batches.slice(6, 9));
    expect(store.gets.filter(([, start]) => start === 60)).toHaveLength(2);

    const failingReader = new StreamReader({ store, meta, readBytesMax: 30, prefetchWindowsMax: 2 });
    await failingReader.read(id, 0, 100);
    store.hold((_key, range) => range.start >= 60);
    await failingReader.read(id, 3, 100);
    await store.untilHeld(2);
    store.failGet(OBJECT, 60, new UnavailableError('injected: the prefetch failed'));
    store.failGet(OBJECT, 60, new UnavailableError('injected: the read failed'));
    const failing = failingReader.read(id, 6, 100);
    store.release();
    await expect(failing).rejects.toEqual(new UnavailableError('injected: the read failed'));
    expect((await failingReader.read(id, 6, 100)).batches).toEqual(batches.slice(6, 9));
    await failingReader.whenIdle();
    await surfaceUnhandledRejections();
  });

  it.each([1, 2, 3, 4])('returns payloads byte-identical to the stored batches, across objects and from a batch starting before the offset (seed %i)', async (seed) => {
    // Proves the bytes whatever serves them: two consumers scan one stream of random batches in random objects with random
    // record counts and byte bounds, jumping now and then, through a small read cache, a partial tail cache and prefetch.
    const random = seededRandom(seed);
    const between = (low: number, high: number) => low + Math.floor(random() * (high - low + 1));
    const store = new ProbedObjectStore();
    const objects = Array.from({ length: between(3, 7) }, () => Array.from({ length: between(2, 12) }, () => Uint8Array.from({ length: between(1, 40) }, () => between(0, 255))));
    const { id, meta, slices, batches } = await storeStream(store, objects, () => between(1, 5));
    const end = batches.at(-1)!.endOffset;
    const reader = new StreamReader({ store, meta, readBytesMax: 64, readCacheBytesMax: 160, prefetchWindowsMax: 2 });
    slices.forEach((slice, index) => {
      if (random() < 0.2) reader.cache(id, slice, batches[index]!.payload);
    });

    const positions = [0, between(0, end)];
    for (let step = 0; step < 150; step++) {
      const reads = positions.map((from) => ({ from, maxRecords: between(1, 12), bytesMax: random() < 0.5 ? undefined : between(1, 64) }));
      const results = await Promise.all(reads.map(({ from, maxRecords, bytesMax }) => reader.read(id, from, maxRecords, { bytesMax })));
      results.forEach((result, consumer) => {
        const { from, maxRecords, bytesMax } = reads[consumer]!;
        expect({ step, consumer, batches: result.batches }).toEqual({ step, consumer, batches: expectedBatches(batches, from, maxRecords, bytesMax ?? 64) });
        const last = result.batches.at(-1);
        const next = last === undefined ? end : Math.min(from + maxRecords, last.endOffset);
        positions[consumer] = next >= end || random() < 0.1 ? between(0, end) : next;
      });
    }
    await reader.whenIdle();
    expect(reader.readCacheByteCount).toBeLessThanOrEqual(160);
    expect(reader.stats.prefetchGets).toBeGreaterThan(0);
    await surfaceUnhandledRejections();
  });

  it('bounds a read by the bytesMax of the call, which may not exceed the reader readBytesMax', async () => {
    // Proves the per-call byte bound: fewer batches under a smaller bound, at least one, and malformed bounds refused.
    const store = new ProbedObjectStore();
    const { id, meta, batches } = await storeStream(store, [fixedBatches(10)]);
    const reader = new StreamReader({ store, meta, readBytesMax: 30 });
    expect((await reader.read(id, 0, 100)).batches).toEqual(batches.slice(0, 3));
    expect((await reader.read(id, 0, 100, { bytesMax: 25 })).batches).toEqual(batches.slice(0, 2));
    expect((await reader.read(id, 0, 100, { bytesMax: 5 })).batches).toEqual(batches.slice(0, 1));
    expect((await reader.read(id, 0, 100, { bytesMax: 30 })).batches).toEqual(batches.slice(0, 3));
    for (const bytesMax of [31, 0, -1, 1.5, Number.NaN]) await expect(reader.read(id, 0, 100, { bytesMax })).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it('reports a GET that returns fewer bytes than the view records as an Error, not as an expected outcome', async () => {
    // Proves a view naming bytes the object does not hold is a broken invariant, not a short payload or Unavailable.
    const store = new ProbedObjectStore();
    await store.put(OBJECT, encoder.encode('0123456789'));
    const id = bucketId(1, null, 0);
    const view: View = { ...emptyView(), buckets: shardedFrom({ [id]: bucketRecordOf(0, [{ object: OBJECT, startOffset: 0, endOffset: 1, position: 5, length: 10 }]) }) };
    const failure = await new StreamReader({ store, meta: { view } }).read(id, 0, 1).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(Error);
    expect(failure).not.toBeInstanceOf(MinkError);
    expect((failure as Error).message).toBe('object streams/1/0 returned 5 bytes at 5 where the view records 10');
  });

  it('remembers where the last read ended for the streamPrefetchBucketsMax most recently read buckets only', async () => {
    // Proves the per-bucket state is bounded: a bucket read before that many others no longer counts as scanning, the
    // most recent one does (its second read prefetches the third batch).
    const store = new ProbedObjectStore();
    await store.put(OBJECT, encoder.encode('abc'));
    const slices: DataSlice[] = [0, 1, 2].map((index) => ({ object: OBJECT, startOffset: index, endOffset: index + 1, position: index, length: 1 }));
    const ids = Array.from({ length: LIMITS.streamPrefetchBucketsMax + 1 }, (_, bucket) => bucketId(1, null, bucket));
    const view: View = { ...emptyView(), buckets: shardedFrom(Object.fromEntries(ids.map((id, bucket) => [id, bucketRecordOf(bucket, slices)]))) };
    const reader = new StreamReader({ store, meta: { view } });
    for (const id of ids) await reader.read(id, 0, 1);
    await reader.whenIdle();

    const getsBefore = store.gets.length;
    expect(decoder.decode((await reader.read(ids[0]!, 1, 1)).batches[0]!.payload)).toBe('b');
    await reader.whenIdle();
    expect(store.gets.slice(getsBefore)).toEqual([[OBJECT, 1, 2]]);

    expect(decoder.decode((await reader.read(ids.at(-1)!, 1, 1)).batches[0]!.payload)).toBe('b');
    await reader.whenIdle();
    expect(store.gets.slice(getsBefore + 1)).toEqual([
      [OBJECT, 1, 2],
      [OBJECT, 2, 3],
    ]);
  });
});

describe('WalWriter and StreamReader on s3rver', () => {
  const bucket = 'mink-s3stream-test';
  let dataDir: string;
  let server: S3ServerHandle | undefined;
  let objectStore: S3ObjectStore | undefined;
  let meta: MetaStore | undefined;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'mink-s3stream-'));
    server = await startS3Server({ dataDir, bucket, logFile: join(dataDir, 's3rver.log') });
  }, 30_000);

  afterAll(async () => {
    await meta?.stop();
    objectStore?.close();
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('writes a few hundred appends through real uploads and reads every batch back by ranged GETs', async () => {
    // Proves the write and read paths against a real S3-compatible server: what was acknowledged is what a cold reader gets.
    objectStore = new S3ObjectStore({ endpoint: server!.endpoint, bucket, region: 'us-east-1', accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER', prefix: 'run/' });
    const started = await startLedTable(3);
    meta = started.meta;
    const writer = new WalWriter({ nodeId: NODE, nodeEpoch: 1, store: objectStore as ObjectStore, meta, flushBytes: 2_048, lingerMs: 2 });
    const expected = await appendMany(writer, started.streams, 100);
    await writer.close();

    const listed = await objectStore.list('wal/');
    expect(listed.length).toBeGreaterThan(1);
    expect(listed.every((object) => object.key.startsWith('wal/1/1/'))).toBe(true);

    const reader = new StreamReader({ store: objectStore, meta });
    for (const stream of started.streams) {
      const read = await reader.read(stream.id, 0, 1_000_000);
      expect(asWritten(read.batches)).toEqual(expected.get(stream.id));
      expect(read.highWatermark).toBe(expected.get(stream.id)!.at(-1)!.endOffset);
      const middle = await reader.read(stream.id, 101, 20);
      expect(asWritten(middle.batches)).toEqual(expectedRead(expected.get(stream.id)!, 101, 20));
    }
  }, 60_000);
});
