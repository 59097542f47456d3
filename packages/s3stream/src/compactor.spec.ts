import { LIMITS } from '@mink/config';
import { getIn as getShardEntry, recordOf, slicesOf } from '@mink/meta';
import { setTimeout as sleep } from 'node:timers/promises';
import { bucketId, type Command, type CommitStreamObject, type ForgetObjects, type Outcome, type View } from '@mink/meta';
import { MetaStore } from '@mink/metalog';
import { UnavailableError } from '@mink/protocol';
import { eventually, InMemoryMetaLog, type LedStream as StreamAddress, type LedTable as Cluster, startLedTable } from '@mink/testing';
import { Compactor, compactsAgain, streamObjectKey, type CompactorOptions } from './compactor';
import { GarbageCollector } from './garbage-collector';
import { DelegatingObjectStore, InMemoryObjectStore, type ObjectStore } from './object-store';
import type { MaintenanceLogger, MetaAccess } from './ports';
import { StreamReader } from './stream-reader';
import { WalWriter } from './wal-writer';

const NODE = '1';
const WAIT_MS = 2_000;
const GRACE_MS = 30_000;
const START_MS = 1_000_000;


const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The text of the `index`-th batch of a stream: distinct per stream and batch, of varying length. */
function batchText(stream: StreamAddress, index: number): string {
  return `stream ${stream.bucket} batch ${index}${'.'.repeat(index % 7)}`;
}

/** Appends `count` batches to each stream, one WAL object per round holding one batch of every stream. */
async function appendRounds(writer: WalWriter, streams: StreamAddress[], firstIndex: number, count: number): Promise<void> {
  for (let index = firstIndex; index < firstIndex + count; index++) {
    await Promise.all(
      streams.map((stream) =>
        writer.append({
          bucketId: stream.id,
          tableId: stream.tableId,
          partition: null,
          bucket: stream.bucket,
          streamEpoch: stream.streamEpoch,
          payload: encoder.encode(batchText(stream, index)),
          recordCount: 1 + (index % 3),
        }),
      ),
    );
  }
}

/** Every batch of a stream as a reader returns it from the store: offsets and decoded text. */
async function readAll(reader: StreamReader, stream: StreamAddress): Promise<[number, number, string][]> {
  const result = await reader.read(stream.id, 0, 1_000_000);
  return result.batches.map((batch) => [batch.startOffset, batch.endOffset, decoder.decode(batch.payload)]);
}

/** The batches `appendRounds` wrote to a stream, as `readAll` should return them. */
function expectedBatches(stream: StreamAddress, count: number): [number, number, string][] {
  const batches: [number, number, string][] = [];
  let offset = 0;
  for (let index = 0; index < count; index++) {
    const records = 1 + (index % 3);
    batches.push([offset, offset + records, batchText(stream, index)]);
    offset += records;
  }
  return batches;
}

function streamOf(view: View, stream: StreamAddress) {
  return getShardEntry(view.buckets, stream.id)!.stream;
}

function commandsOf<Type extends Command['type']>(log: InMemoryMetaLog, type: Type): Extract<Command, { type: Type }>[] {
  return log
    .entries()
    .map((entry) => entry.command)
    .filter((command): command is Extract<Command, { type: Type }> => command.type === type);
}

function walKeys(store: InMemoryObjectStore): string[] {
  return store.keys().filter((key) => key.startsWith('wal/'));
}

/** A clock the test moves by hand. */
class FakeClock {
  constructor(public nowMsValue: number) {}
  nowMs(): number {
    return this.nowMsValue;
  }
}

/** Records warnings, so tests can see what a background component could not do. */
class RecordingLogger implements MaintenanceLogger {
  readonly warnings: { fields: Record<string, unknown>; message: string }[] = [];
  warn(fields: Record<string, unknown>, message: string): void {
    this.warnings.push({ fields, message });
  }
}

/** An object store that runs a hook before each upload of a stream object, for races and fences mid-compaction. */
class HookedObjectStore extends DelegatingObjectStore<InMemoryObjectStore> {
  beforeStreamObjectPut: ((key: string) => Promise<void>) | undefined;

  constructor() {
    super(new InMemoryObjectStore());
  }

  override async put(key: string, body: Uint8Array): Promise<void> {
    if (key.startsWith('streams/') && this.beforeStreamObjectPut) await this.beforeStreamObjectPut(key);
    await this.inner.put(key, body);
  }
}

/** A MetaAccess over a real store that fails the next proposals of one type without proposing them. */
class FlakyMeta implements MetaAccess {
  unknownOutcomesLeft = 0;
  constructor(
    private readonly meta: MetaStore,
    private readonly flakyType: Command['type'],
  ) {}

  get view(): View {
    return this.meta.view;
  }

  async propose(command: Command): Promise<Outcome> {
    if (command.type === this.flakyType && this.unknownOutcomesLeft > 0) {
      this.unknownOutcomesLeft--;
      throw new UnavailableError('injected: the metadata log did not answer');
    }
    return this.meta.propose(command);
  }
}

describe('Compactor', () => {
  const stores: MetaStore[] = [];
  const writers: WalWriter[] = [];
  const compactors: Compactor[] = [];
  afterEach(async () => {
    await Promise.all(compactors.splice(0).map((compactor) => compactor.stop()));
    await Promise.all(writers.splice(0).map((writer) => writer.close()));
    await Promise.all(stores.splice(0).map((store) => store.stop()));
  });

  async function cluster(bucketCount: number): Promise<Cluster> {
    const started = await startLedTable(bucketCount, [NODE]);
    stores.push(started.meta);
    return started;
  }

  function walWriter(meta: MetaAccess, store: ObjectStore): WalWriter {
    const writer = new WalWriter({ nodeId: NODE, nodeEpoch: 1, store, meta, lingerMs: 1 });
    writers.push(writer);
    return writer;
  }

  /** A compactor of node 1 at node epoch 1 that leads the given streams at their stream epochs. */
  function compactor(options: Partial<CompactorOptions> & Pick<CompactorOptions, 'store' | 'meta'>, led: StreamAddress[]): Compactor {
    const created = new Compactor({
      nodeId: NODE,
      nodeEpoch: 1,
      isLeading: (id) => {
        const stream = led.find((candidate) => candidate.id === id);
        return stream ? { streamEpoch: stream.streamEpoch } : null;
      },
      clock: new FakeClock(START_MS),
      minSlices: 8,
      ...options,
    });
    compactors.push(created);
    return created;
  }

  it('rewrites the WAL slices of two streams into one stream object each, frees the WAL objects once neither stream needs them, and the collector deletes them after the grace period', async () => {
    // Proves docs/architecture.md §7's compaction and deletion end to end: reads are byte-identical before and after, a WAL object shared by two streams waits for both, deletion waits for the grace period, and nothing lists the store.
    const { log, meta, streams } = await cluster(2);
    const [first, second] = streams as [StreamAddress, StreamAddress];
    const store = new InMemoryObjectStore();
    const writer = walWriter(meta, store);
    await appendRounds(writer, streams, 0, 25);
    expect(walKeys(store)).toHaveLength(25);
    const reader = new StreamReader({ store, meta });
    const before = [await readAll(reader, first), await readAll(reader, second)];
    expect(before).toEqual([expectedBatches(first, 25), expectedBatches(second, 25)]);

    const clock = new FakeClock(START_MS);
    const led: StreamAddress[] = [first];
    const firstCompactor = compactor({ store, meta, clock }, led);
    expect(await firstCompactor.compactOnce()).toBe(1);

    // Only the first stream moved: every WAL object is still read by the second one.
    const firstObject = streamObjectKey(first.tableId, null, first.bucket, 0, streamOf(meta.view, first).endOffset, 1, first.streamEpoch);
    expect(firstObject).toBe(`streams/${first.tableId}-_-0/0-${streamOf(meta.view, first).endOffset}-1-${first.streamEpoch}`);
    expect(new Set(streamOf(meta.view, first).slices.map((slice) => slice.object))).toEqual(new Set([firstObject]));
    expect(streamOf(meta.view, second).slices.every((slice) => slice.object.startsWith('wal/'))).toBe(true);
    expect(recordOf(meta.view.garbage)).toEqual({});
    // Each object's size in the view is the size of the object stored (every byte of it is in a slice).
    const walSizes = new Map(await Promise.all(walKeys(store).map(async (key) => [key, (await store.get(key)).byteLength] as const)));
    expect(walKeys(store).map((key) => getShardEntry(meta.view.objects, key))).toEqual(walKeys(store).map((key) => ({ references: 1, bytes: walSizes.get(key) })));
    // The 25 batches share one packed slice: one reference to the stream object.
    expect(getShardEntry(meta.view.objects, firstObject)).toEqual({ references: 1, bytes: (await store.get(firstObject)).byteLength });

    clock.nowMsValue = START_MS + 500;
    led.push(second);
    expect(await firstCompactor.compactOnce()).toBe(1);
    const secondObject = streamObjectKey(second.tableId, null, second.bucket, 0, streamOf(meta.view, second).endOffset, 1, second.streamEpoch);
    expect(Object.keys(recordOf(meta.view.objects)).sort()).toEqual([firstObject, secondObject].sort());
    expect(recordOf(meta.view.garbage)).toEqual(Object.fromEntries(walKeys(store).map((key) => [key, { unreferencedAtMs: START_MS + 500, bytes: walSizes.get(key) }])));
    // The batches are packed into one slice: the batches back to back, then per batch its records and bytes.
    const texts = expectedBatches(second, 25).map(([, , text]) => encoder.encode(text));
    const textBytes = texts.reduce((sum, text) => sum + text.byteLength, 0);
    const secondBytes = await store.get(secondObject);
    expect(streamOf(meta.view, second).slices).toEqual([
      { object: secondObject, startOffset: 0, endOffset: streamOf(meta.view, second).endOffset, position: 0, length: textBytes + 25 * 8, batches: 25 },
    ]);
    expect(secondBytes.byteLength).toBe(textBytes + 25 * 8);
    expect(decoder.decode(secondBytes.subarray(0, textBytes))).toBe(texts.map((text) => decoder.decode(text)).join(''));
    const index = new DataView(secondBytes.buffer, secondBytes.byteOffset + textBytes);
    expect(Array.from({ length: 25 }, (_, batch) => [index.getUint32(batch * 8, true), index.getUint32(batch * 8 + 4, true)])).toEqual(
      expectedBatches(second, 25).map(([start, end], batch) => [end - start, texts[batch]!.byteLength]),
    );
    expect(commandsOf(log, 'CommitStreamObject').map((command) => [command.object, command.startOffset, command.endOffset, command.slices.map((slice) => slice.batches)])).toEqual([
      [firstObject, 0, streamOf(meta.view, first).endOffset, [25]],
      [secondObject, 0, streamOf(meta.view, second).endOffset, [25]],
    ]);
    const after = [await readAll(reader, first), await readAll(reader, second)];
    expect(after).toEqual(before);
    // Nothing is left to compact.
    expect(await firstCompactor.compactOnce()).toBe(0);

    const collector = new GarbageCollector({ store, meta, clock, graceMs: GRACE_MS });
    clock.nowMsValue = START_MS + 500 + GRACE_MS - 1;
    expect(await collector.collectOnce()).toBe(0);
    expect(walKeys(store)).toHaveLength(25);
    expect(commandsOf(log, 'ForgetObjects')).toEqual([]);

    clock.nowMsValue = START_MS + 500 + GRACE_MS;
    const doomed = walKeys(store);
    expect(await collector.collectOnce()).toBe(25);
    expect(walKeys(store)).toEqual([]);
    expect(store.keys()).toEqual([firstObject, secondObject].sort());
    expect(commandsOf(log, 'ForgetObjects')).toEqual([{ type: 'ForgetObjects', keys: doomed } satisfies ForgetObjects]);
    expect(recordOf(meta.view.garbage)).toEqual({});
    expect([await readAll(reader, first), await readAll(reader, second)]).toEqual(before);
    expect(store.calls.list).toBe(0);
  });

  it('replays every WAL slice of a taken-over stream into stream objects at once, below minSlices', async () => {
    // Proves the failover replay: compactStream ignores minSlices (3 slices < 8) and leaves no WAL slice in the stream, while compactOnce would have waited.
    const { meta, streams } = await cluster(1);
    const [stream] = streams as [StreamAddress];
    const store = new InMemoryObjectStore();
    await appendRounds(walWriter(meta, store), streams, 0, 3);
    const reader = new StreamReader({ store, meta });
    const before = await readAll(reader, stream);
    const replaying = compactor({ store, meta }, [stream]);
    expect(await replaying.compactOnce()).toBe(0);
    expect(await replaying.compactStream(stream.id)).toBe(1);
    expect(streamOf(meta.view, stream).slices.every((slice) => slice.object.startsWith('streams/'))).toBe(true);
    expect(Object.keys(recordOf(meta.view.garbage))).toHaveLength(3);
    expect(await readAll(reader, stream)).toEqual(before);
    // Nothing is left to replay.
    expect(await replaying.compactStream(stream.id)).toBe(0);
  });

  it('keeps appends that race with a compaction committed and readable, and compacts only what was committed when it planned', async () => {
    // Proves appends never conflict with compaction: batches committed while a stream object is uploading follow it in the stream, and a later round compacts them.
    const { meta, streams } = await cluster(1);
    const stream = streams[0]!;
    const store = new HookedObjectStore();
    const writer = walWriter(meta, store);
    await appendRounds(writer, streams, 0, 10);
    const endBefore = streamOf(meta.view, stream).endOffset;
    store.beforeStreamObjectPut = async () => {
      store.beforeStreamObjectPut = undefined;
      await appendRounds(writer, streams, 10, 10);
    };
    const racing = compactor({ store, meta }, streams);
    expect(await racing.compactOnce()).toBe(1);

    const objectKey = streamObjectKey(stream.tableId, null, stream.bucket, 0, endBefore, 1, stream.streamEpoch);
    const slices = streamOf(meta.view, stream).slices;
    // The ten batches committed when it planned share one packed slice; the ten that raced follow it in the WAL.
    expect(slices.map((slice) => slice.object.startsWith('wal/'))).toEqual([false, ...Array<boolean>(10).fill(true)]);
    expect(slices[0]).toMatchObject({ object: objectKey, startOffset: 0, endOffset: endBefore, batches: 10 });
    const reader = new StreamReader({ store, meta });
    expect(await readAll(reader, stream)).toEqual(expectedBatches(stream, 20));

    expect(await racing.compactOnce()).toBe(1);
    expect(streamOf(meta.view, stream).slices.every((slice) => slice.object.startsWith('streams/'))).toBe(true);
    expect(await readAll(reader, stream)).toEqual(expectedBatches(stream, 20));
    expect(Object.keys(recordOf(meta.view.garbage))).toHaveLength(20);
    expect(store.inner.calls.list).toBe(0);
  });

  it('gets Fenced when its node is registered again during a compaction, deletes the object it uploaded, and tries nothing more', async () => {
    // Proves a fenced incarnation cannot rewrite a stream: its commit is rejected, its upload is deleted, the stream still points at the WAL, and it stops compacting.
    const { log, meta, streams } = await cluster(2);
    const store = new HookedObjectStore();
    const writer = walWriter(meta, store);
    await appendRounds(writer, streams, 0, 10);
    const slicesBefore = streams.map((stream) => streamOf(meta.view, stream).slices);
    const uploaded: string[] = [];
    store.beforeStreamObjectPut = async (key) => {
      uploaded.push(key);
      await meta.proposeOrThrow({ type: 'RegisterNode', nodeId: NODE });
    };
    const logger = new RecordingLogger();
    const zombie = compactor({ store, meta, logger }, streams);

    expect(await zombie.compactOnce()).toBe(0);
    expect(uploaded).toHaveLength(1);
    expect(store.inner.keys().filter((key) => key.startsWith('streams/'))).toEqual([]);
    expect(commandsOf(log, 'CommitStreamObject')).toHaveLength(1);
    expect(logger.warnings).toEqual([
      {
        fields: expect.objectContaining({ object: uploaded[0], code: 'Fenced', reason: 'node 1 epoch 1 is fenced: current is 2' }),
        message: 'a compaction commit was rejected; its uploaded object is deleted',
      },
    ]);
    expect(streams.map((stream) => streamOf(meta.view, stream).slices)).toEqual(slicesBefore);
    expect(recordOf(meta.view.garbage)).toEqual({});

    // The view now shows the node fenced, so later rounds upload nothing.
    const putsBefore = store.inner.calls.put;
    expect(await zombie.compactOnce()).toBe(0);
    expect(store.inner.calls.put).toBe(putsBefore);
  });

  it('keeps the object of a commit whose outcome is unknown, and commits the same range under the same key in a later round', async () => {
    // Proves an unknown outcome never deletes data the log may still point at, and that the retry converges.
    const { log, meta, streams } = await cluster(1);
    const stream = streams[0]!;
    const store = new InMemoryObjectStore();
    await appendRounds(walWriter(meta, store), streams, 0, 8);
    const flaky = new FlakyMeta(meta, 'CommitStreamObject');
    flaky.unknownOutcomesLeft = 1;
    const logger = new RecordingLogger();
    const retrying = compactor({ store, meta: flaky, logger }, streams);
    const key = streamObjectKey(stream.tableId, null, stream.bucket, 0, streamOf(meta.view, stream).endOffset, 1, stream.streamEpoch);

    expect(await retrying.compactOnce()).toBe(0);
    expect(store.keys()).toContain(key);
    expect(logger.warnings.map((warning) => warning.message)).toEqual(['the outcome of a compaction commit is unknown; its object is kept']);
    expect(commandsOf(log, 'CommitStreamObject')).toEqual([]);

    expect(await retrying.compactOnce()).toBe(1);
    expect(commandsOf(log, 'CommitStreamObject').map((command: CommitStreamObject) => command.object)).toEqual([key]);
    expect(await readAll(new StreamReader({ store, meta }), stream)).toEqual(expectedBatches(stream, 8));
  });

  it('leaves streams it does not lead, streams with fewer than minSlices WAL slices, and streams after a failed read alone', async () => {
    // Proves the selection rules and that a store failure is logged rather than thrown, with the stream compacted by the next round.
    const { meta, streams } = await cluster(3);
    const [led, notLed, short] = streams as [StreamAddress, StreamAddress, StreamAddress];
    const store = new InMemoryObjectStore();
    const writer = walWriter(meta, store);
    await appendRounds(writer, [led, notLed], 0, 8);
    await appendRounds(writer, [short], 0, 7);
    const logger = new RecordingLogger();
    const selective = compactor({ store, meta, logger }, [led, short]);

    store.failNext('get', new UnavailableError('injected outage'));
    expect(await selective.compactOnce()).toBe(0);
    expect(logger.warnings).toEqual([
      { fields: expect.objectContaining({ bucketId: led.id, error: 'injected outage' }), message: 'compaction could not read the slices of a stream; it is left for a later round' },
    ]);
    expect(store.keys().filter((key) => key.startsWith('streams/'))).toEqual([]);

    expect(await selective.compactOnce()).toBe(1);
    expect(streamOf(meta.view, led).slices.every((slice) => slice.object.startsWith('streams/'))).toBe(true);
    expect(streamOf(meta.view, notLed).slices.every((slice) => slice.object.startsWith('wal/'))).toBe(true);
    expect(streamOf(meta.view, short).slices.every((slice) => slice.object.startsWith('wal/'))).toBe(true);
  });

  it.each([
    // WAL slices left after an object, minSlices, objects written this round, objects per round at most.
    [7, 8, 1, 8, false],
    [8, 8, 1, 8, true],
    [100, 8, 7, 8, true],
    [100, 8, 8, 8, false],
    [0, 1, 1, 8, false],
    [1, 1, 1, 1, false],
  ])('compactsAgain(%i WAL slices left, minSlices %i, %i objects, at most %i) is %s', (left, minSlices, objects, objectsMax, again) => {
    expect(compactsAgain(left, minSlices, objects, objectsMax)).toBe(again);
  });

  it.each([
    [8, 1],
    [2, 2],
  ])('bounds a stream object by objectBytesMax and writes up to %i objects of a stream per round, the next round going on after the last compacted slice', async (objectsPerStreamRoundMax, expectedRounds) => {
    // Proves the size bound: each object holds whole batches up to the bound, objects follow each other in
    // offset order, and reads stay identical; and the backlog bound: a stream holding three objects' worth of
    // WAL slices gets them all in one round, or in two when a round writes at most two objects of a stream.
    const { meta, streams } = await cluster(1);
    const stream = streams[0]!;
    const store = new InMemoryObjectStore();
    await appendRounds(walWriter(meta, store), streams, 0, 12);
    const lengths = streamOf(meta.view, stream).slices.map((slice) => slice.length);
    const objectBytesMax = lengths.slice(0, 5).reduce((sum, length) => sum + length, 0);
    // Batches are not packed here (one per slice), so the slices show what each object holds.
    const bounded = compactor({ store, meta, objectBytesMax, minSlices: 1, packBatchesMax: 1, objectsPerStreamRoundMax }, streams);

    let rounds = 0;
    while (streamOf(meta.view, stream).slices.some((slice) => slice.object.startsWith('wal/'))) {
      expect(await bounded.compactOnce()).toBe(1);
      rounds++;
    }
    const objects = streamOf(meta.view, stream).slices.map((slice) => slice.object);
    const sizes = [...new Set(objects)].map((object) => objects.filter((candidate) => candidate === object).length);
    expect(sizes[0]).toBe(5);
    expect(sizes.reduce((sum, size) => sum + size, 0)).toBe(12);
    expect(sizes.length).toBe(3);
    expect(rounds).toBe(expectedRounds);
    for (const object of new Set(objects)) {
      const bytes = streamOf(meta.view, stream).slices.filter((slice) => slice.object === object).reduce((sum, slice) => sum + slice.length, 0);
      expect(bytes).toBeLessThanOrEqual(objectBytesMax);
    }
    expect(await readAll(new StreamReader({ store, meta }), stream)).toEqual(expectedBatches(stream, 12));
  });

  it('packs batches into slices of at most packBytesMax, and every read returns the batches it returned before compaction', async () => {
    // Proves packing is invisible to readers: from every offset, with loose bounds a read returns exactly the batches it
    // returned from the WAL; with a tight byte bound a non-empty prefix of them (a packed slice counts whole against the
    // bound, so the read may stop one slice early; the caller reads on). And the stream keeps a slice per pack, not per batch.
    const { meta, streams } = await cluster(1);
    const stream = streams[0]!;
    const store = new InMemoryObjectStore();
    await appendRounds(walWriter(meta, store), streams, 0, 40);
    const end = streamOf(meta.view, stream).endOffset;
    const lengths = streamOf(meta.view, stream).slices.map((slice) => slice.length);
    const readsOf = async (reader: StreamReader, maxRecords: number, bytesMax?: number) => {
      const reads: [number, number, string][][] = [];
      for (let offset = 0; offset < end; offset++) {
        const result = await reader.read(stream.id, offset, maxRecords, bytesMax === undefined ? {} : { bytesMax });
        reads.push(result.batches.map((batch) => [batch.startOffset, batch.endOffset, decoder.decode(batch.payload)]));
      }
      return reads;
    };
    const loose = await readsOf(new StreamReader({ store, meta }), 4);
    const tight = await readsOf(new StreamReader({ store, meta }), 1_000, 60);
    const all = await readsOf(new StreamReader({ store, meta }), 1_000_000);

    const packBytesMax = 150;
    expect(await compactor({ store, meta, minSlices: 1, packBytesMax }, streams).compactOnce()).toBe(1);
    const slices = streamOf(meta.view, stream).slices;
    expect(slices.length).toBeLessThan(lengths.length / 3);
    expect(slices.every((slice) => slice.batches === undefined || (slice.batches >= 2 && slice.length <= packBytesMax))).toBe(true);
    expect(slices.reduce((sum, slice) => sum + (slice.batches ?? 1), 0)).toBe(40);
    expect(slices.reduce((sum, slice) => sum + slice.length - 8 * (slice.batches ?? 0), 0)).toBe(lengths.reduce((sum, length) => sum + length, 0));

    const reader = new StreamReader({ store, meta });
    expect(await readsOf(reader, 4)).toEqual(loose);
    expect(await readsOf(reader, 1_000_000)).toEqual(all);
    const tightAfter = await readsOf(new StreamReader({ store, meta }), 1_000, 60);
    tightAfter.forEach((read, offset) => {
      expect(read.length).toBeGreaterThan(0);
      expect(read).toEqual(tight[offset]!.slice(0, read.length));
    });
    // A packed slice is fetched once: the reads above after the first were served from the read cache.
    expect(reader.stats.gets).toBeLessThanOrEqual(slices.length);
  });

  it('folds the stream-object slices leading a stream into its history once there are many, and reads and appends go on across it', async () => {
    // Proves the fold that keeps a CommitWal's copy short (docs/architecture.md §7): a compaction leaving more than
    // LIMITS.streamSlicesFoldMin stream-object slices in front moves them to the stream's history, appends then copy
    // only the newest slices, and reads from every offset see history and newest slices as one stream.
    const { meta, streams } = await cluster(1);
    const stream = streams[0]!;
    const store = new InMemoryObjectStore();
    const writer = walWriter(meta, store);
    const batches = LIMITS.streamSlicesFoldMin + 20;
    await appendRounds(writer, streams, 0, batches);
    const unpacked = compactor({ store, meta, minSlices: 1, packBatchesMax: 1 }, streams);
    expect(await unpacked.compactOnce()).toBe(1);
    expect(streamOf(meta.view, stream).history).toHaveLength(batches);
    expect(streamOf(meta.view, stream).slices).toEqual([]);

    await appendRounds(writer, streams, batches, 5);
    expect(streamOf(meta.view, stream).history).toHaveLength(batches);
    expect(streamOf(meta.view, stream).slices.map((slice) => slice.object.startsWith('wal/'))).toEqual([true, true, true, true, true]);
    const expected = expectedBatches(stream, batches + 5);
    const reader = new StreamReader({ store, meta });
    expect(await readAll(reader, stream)).toEqual(expected);
    for (const [startOffset] of expected) {
      const read = await reader.read(stream.id, startOffset, 3);
      expect(read.batches.map((batch) => [batch.startOffset, batch.endOffset, decoder.decode(batch.payload)])).toEqual(expected.filter(([start, end]) => end > startOffset && start < startOffset + 3));
    }

    // A compaction below the bound packs the newest slices and leaves the history as it was.
    expect(await compactor({ store, meta, minSlices: 1 }, streams).compactOnce()).toBe(1);
    expect(streamOf(meta.view, stream).history).toHaveLength(batches);
    expect(streamOf(meta.view, stream).slices).toMatchObject([{ batches: 5 }]);
    expect(await readAll(new StreamReader({ store, meta }), stream)).toEqual(expected);
    expect(slicesOf(streamOf(meta.view, stream)).length).toBe(batches + 1);
  });

  /** One stream of ten committed batches, written by a WAL writer whose commits fill a stream reader's tail cache. */
  async function tenCachedBatches() {
    const { meta, streams } = await cluster(1);
    const store = new InMemoryObjectStore();
    const reader = new StreamReader({ store, meta });
    const writer = new WalWriter({ nodeId: NODE, nodeEpoch: 1, store, meta, lingerMs: 1, onCommitted: (id, slice, payload) => reader.cache(id, slice, payload) });
    writers.push(writer);
    await appendRounds(writer, streams, 0, 10);
    return { meta, streams, stream: streams[0]!, store, reader };
  }

  it('reads the batches its node still caches without a GET', async () => {
    // Proves compaction does not read back from S3 what the node just wrote: with the reader's cache of the
    // committed batches it issues no GET, without it one per run of back-to-back slices, and the stream
    // objects are byte-identical either way.
    const { meta, streams, stream, store, reader } = await tenCachedBatches();
    const getsBefore = store.calls.get;
    expect(await compactor({ store, meta, minSlices: 1, cachedPayloadOf: (id, slice) => reader.cachedPayload(id, slice) }, streams).compactOnce()).toBe(1);
    expect(store.calls.get).toBe(getsBefore);
    reader.clearCache();
    expect(await readAll(reader, stream)).toEqual(expectedBatches(stream, 10));
  });

  it('still serves the batches it cached from the WAL after compaction moved them into a stream object', async () => {
    // Proves compaction tells the reader where the batches it cached moved: without it every batch older than a
    // compaction round was fetched again from S3 (a Kafka consumer of records produced a minute before read
    // them all from S3 while the node still held them).
    const { meta, streams, stream, store, reader } = await tenCachedBatches();
    expect(await compactor({ store, meta, minSlices: 1, onMoved: (id, moved) => reader.moveCached(id, moved) }, streams).compactOnce()).toBe(1);
    expect(streamOf(meta.view, stream).slices.every((slice) => slice.object.startsWith('streams/'))).toBe(true);
    const getsBefore = store.calls.get;
    expect(await readAll(reader, stream)).toEqual(expectedBatches(stream, 10));
    expect(store.calls.get).toBe(getsBefore);
    // The ten batches moved into one packed slice, which the tail cache now holds whole.
    expect(streamOf(meta.view, stream).slices).toHaveLength(1);
    expect(reader.stats).toMatchObject({ gets: 0, tailCacheHits: 1 });
  });

  it('compacts in the background after start and does nothing more after stop', async () => {
    // Proves the background schedule runs rounds on its own and that stop ends it.
    const { meta, streams } = await cluster(1);
    const stream = streams[0]!;
    const store = new InMemoryObjectStore();
    const writer = walWriter(meta, store);
    await appendRounds(writer, streams, 0, 8);
    const background = compactor({ store, meta }, streams);
    background.start(2);
    await eventually('the stream is compacted', () => streamOf(meta.view, stream).slices.every((slice) => slice.object.startsWith('streams/')), { timeoutMs: WAIT_MS, intervalMs: 1 });
    await background.stop();

    await appendRounds(writer, streams, 8, 8);
    await sleep(20);
    expect(streamOf(meta.view, stream).slices.filter((slice) => slice.object.startsWith('wal/'))).toHaveLength(8);
  });
});
