import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startS3Server, type S3ServerHandle } from '@mink/devcluster';
import { bucketId, emptyView, type BucketRecord, type DataSlice, type View } from '@mink/meta';
import { MetaStore } from '@mink/metalog';
import { InvalidArgumentError, NotFoundError, UnavailableError } from '@mink/protocol';
import { startLedTable, type LedStream as StreamAddress } from '@mink/testing';
import { InMemoryObjectStore, S3ObjectStore, type ObjectStore } from './object-store';
import { StreamReader, type StreamBatch } from './stream-reader';
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
    // DESIGN §4: a reader finds data through the view and never lists the bucket.
    for (const store of objectStores.splice(0)) expect(store.calls.list).toBe(0);
  });

  /** A stream store with a writer whose commits feed the reader's cache, as a data node wires them. */
  async function setUp(bucketCount: number, options: { flushBytes?: number; cacheBytesMax?: number; readBytesMax?: number } = {}) {
    const { meta, streams } = await startLedTable(bucketCount);
    stores.push(meta);
    const store = new InMemoryObjectStore();
    objectStores.push(store);
    const reader = new StreamReader({ store, meta, cacheBytesMax: options.cacheBytesMax, readBytesMax: options.readBytesMax });
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
    // Proves the binary search over slices and the ranged GETs: every window of the stream comes back as written, with no GET while cached.
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
    expect(store.calls.get - getsBefore).toBe(wanted.reduce((total, batches) => total + batches.length, 0));
  });

  it('keeps the cache within its byte bound, evicting the least recently used batch first', async () => {
    // Proves the LRU bound: only the most recently used batches stay, and an evicted one is fetched from the store.
    const { streams, store, reader, writer } = await setUp(1, { cacheBytesMax: 10 });
    const stream = streams[0]!;
    for (const text of ['aaaa', 'bbbb', 'cccc']) await writer.append(appendRequest(stream, text, 1));
    expect(reader.cacheByteCount).toBe(8);

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
      stream: { state: 'open', epoch: 1, node: NODE, nodeEpoch: 1, startOffset: 15, endOffset: 1_000, slices, writers: {} },
      kvSnapshots: [],
    } satisfies BucketRecord;
    const view: View = { ...emptyView(), buckets: { [id]: record } };
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
    await expect(reader.read(id, 500, 1)).rejects.toBeInstanceOf(UnavailableError);
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
