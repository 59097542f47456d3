import { setTimeout as sleep } from 'node:timers/promises';
import { bucketId, getIn, recordOf, type Command, type CommitWal, type Outcome, type View } from '@mink/meta';
import { MetaStore } from '@mink/metalog';
import { ConflictError, InvalidArgumentError, MinkError, UnavailableError } from '@mink/protocol';
import { eventually, InMemoryMetaLog, type LedStream as StreamAddress, type LedTable as Cluster, startLedTable } from '@mink/testing';
import { DelegatingObjectStore, InMemoryObjectStore, type ByteRange } from './object-store';
import type { MetaAccess } from './ports';
import { WalWriter, walObjectKey, type WalAppendRequest } from './wal-writer';

const NODE = '1';
const OTHER_NODE = '2';
const WAIT_MS = 2_000;
/** Long enough that only size, close or an explicit wait can make a flush happen in these tests. */
const LINGER_NEVER_MS = 60_000;


const encoder = new TextEncoder();
const decoder = new TextDecoder();

function appendRequest(stream: StreamAddress, text: string, recordCount = 1, writer?: { id: string; seq: number }): WalAppendRequest {
  return {
    bucketId: stream.id,
    tableId: stream.tableId,
    partition: null,
    bucket: stream.bucket,
    streamEpoch: stream.streamEpoch,
    payload: encoder.encode(text),
    recordCount,
    ...(writer ? { writer } : {}),
  };
}

function streamOf(view: View, stream: StreamAddress) {
  return getIn(view.buckets, stream.id)!.stream;
}

/** The CommitWal entries of the log, in order. */
function commits(log: InMemoryMetaLog): CommitWal[] {
  return log
    .entries()
    .map((entry) => entry.command)
    .filter((command): command is CommitWal => command.type === 'CommitWal');
}

/** Settles to 'pending' when the promise has not settled by the time already-queued callbacks have run. */
async function stateOf(promise: Promise<unknown>): Promise<'pending' | 'resolved' | 'rejected'> {
  const marker = Symbol('pending');
  const winner = await Promise.race([promise.then(() => 'resolved' as const, () => 'rejected' as const), sleep(0).then(() => marker)]);
  return winner === marker ? 'pending' : (winner as 'resolved' | 'rejected');
}

async function rejectionOf(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a rejection');
}

/**
 * An object store that can hold uploads until released and that measures how many uploads and commits of
 * one writer overlap: a flush counts from the start of its upload to the end of its commit (see `GatedMeta`).
 */
class GatedObjectStore extends DelegatingObjectStore<InMemoryObjectStore> {
  heldPuts: (() => void)[] = [];
  private holding = false;
  flushesInFlight = 0;
  flushesInFlightMax = 0;

  constructor() {
    super(new InMemoryObjectStore());
  }

  hold(): void {
    this.holding = true;
  }

  release(): void {
    this.holding = false;
    for (const resume of this.heldPuts.splice(0)) resume();
  }

  override async put(key: string, body: Uint8Array): Promise<void> {
    this.flushesInFlight++;
    this.flushesInFlightMax = Math.max(this.flushesInFlightMax, this.flushesInFlight);
    if (this.holding) await new Promise<void>((resume) => this.heldPuts.push(resume));
    try {
      await this.inner.put(key, body);
    } catch (error) {
      this.flushesInFlight--;
      throw error;
    }
  }
}

/** A MetaAccess over a real store that can hold proposals until released, and can show a frozen view. */
class GatedMeta implements MetaAccess {
  heldProposals: (() => void)[] = [];
  private holding = false;
  frozenView: View | undefined;
  commitsInFlight = 0;
  commitsInFlightMax = 0;

  constructor(
    private readonly meta: MetaStore,
    private readonly store?: GatedObjectStore,
  ) {}

  get view(): View {
    return this.frozenView ?? this.meta.view;
  }

  hold(): void {
    this.holding = true;
  }

  release(): void {
    this.holding = false;
    for (const resume of this.heldProposals.splice(0)) resume();
  }

  async propose(command: Command): Promise<Outcome> {
    this.commitsInFlight++;
    this.commitsInFlightMax = Math.max(this.commitsInFlightMax, this.commitsInFlight);
    if (this.holding) await new Promise<void>((resume) => this.heldProposals.push(resume));
    try {
      return await this.meta.propose(command);
    } finally {
      this.commitsInFlight--;
      if (this.store) this.store.flushesInFlight--;
    }
  }
}

describe('WalWriter', () => {
  const stores: MetaStore[] = [];
  const writers: WalWriter[] = [];
  afterEach(async () => {
    await Promise.all(writers.splice(0).map((writer) => writer.close()));
    await Promise.all(stores.splice(0).map((store) => store.stop()));
  });

  async function cluster(bucketCount: number): Promise<Cluster> {
    const started = await startLedTable(bucketCount, [NODE, OTHER_NODE]);
    stores.push(started.meta);
    return started;
  }

  function writer(options: ConstructorParameters<typeof WalWriter>[0]): WalWriter {
    const created = new WalWriter(options);
    writers.push(created);
    return created;
  }

  it('batches appends to three streams into one WAL object committed by one CommitWal', async () => {
    // Proves the batching of docs/architecture.md §5: one upload and one commit for appends of several streams, with each range pointing at its own bytes.
    const { log, meta, streams } = await cluster(3);
    const store = new InMemoryObjectStore();
    const committed: { bucketId: string; text: string; startOffset: number; endOffset: number }[] = [];
    const walWriter = writer({
      nodeId: NODE,
      nodeEpoch: 1,
      store,
      meta,
      lingerMs: 20,
      onCommitted: (id, slice, payload) => committed.push({ bucketId: id, text: decoder.decode(payload), ...slice }),
    });

    const appended = [
      appendRequest(streams[0]!, 'a0', 2),
      appendRequest(streams[1]!, 'b0', 1, { id: 'producer-7', seq: 4 }),
      appendRequest(streams[2]!, 'c0', 3),
      appendRequest(streams[0]!, 'a1', 1),
      appendRequest(streams[2]!, 'c1', 1),
    ];
    const results = await Promise.all(appended.map((request) => walWriter.append(request)));

    expect(results).toEqual([
      { baseOffset: 0, count: 2 },
      { baseOffset: 0, count: 1 },
      { baseOffset: 0, count: 3 },
      { baseOffset: 2, count: 1 },
      { baseOffset: 3, count: 1 },
    ]);
    expect(store.calls.put).toBe(1);
    expect(store.keys()).toEqual([walObjectKey(NODE, 1, 0)]);
    expect(walObjectKey(NODE, 1, 0)).toBe('wal/1/1/000000000000');
    expect(decoder.decode(await store.get('wal/1/1/000000000000'))).toBe('a0b0c0a1c1');
    expect(commits(log)).toHaveLength(1);
    expect(commits(log)[0]!.ranges.map((range) => [range.bucket, range.startOffset, range.endOffset, range.position, range.length])).toEqual([
      [0, 0, 2, 0, 2],
      [1, 0, 1, 2, 2],
      [2, 0, 3, 4, 2],
      [0, 2, 3, 6, 2],
      [2, 3, 4, 8, 2],
    ]);
    expect(streams.map((stream) => streamOf(meta.view, stream).endOffset)).toEqual([3, 1, 4]);
    expect(recordOf(streamOf(meta.view, streams[1]!).writers)).toEqual({ 'producer-7': { seq: 4, baseOffset: 0, count: 1 } });
    expect(committed.map((entry) => [entry.bucketId, entry.text, entry.startOffset, entry.endOffset])).toEqual([
      [streams[0]!.id, 'a0', 0, 2],
      [streams[1]!.id, 'b0', 0, 1],
      [streams[2]!.id, 'c0', 0, 3],
      [streams[0]!.id, 'a1', 2, 3],
      [streams[2]!.id, 'c1', 3, 4],
    ]);
  });

  it('tells a fault test each point of an object\'s life before it happens: nothing stored, stored but not committed, committed but not acknowledged', async () => {
    // Proves the crash points of MINK_TEST_CRASH_AT sit where their names say: a kill there leaves exactly that state behind.
    const { log, meta, streams } = await cluster(1);
    const store = new InMemoryObjectStore();
    const seen: string[] = [];
    let acknowledged = false;
    const walWriter = writer({
      nodeId: NODE,
      nodeEpoch: 1,
      store,
      meta,
      lingerMs: 0,
      reached: (point) => seen.push(`${point}: ${store.keys().length} stored, ${commits(log).length} committed, ${acknowledged ? '' : 'not '}acknowledged`),
    });
    await walWriter.append(appendRequest(streams[0]!, 'a0')).then(() => (acknowledged = true));
    expect(seen).toEqual(['uploading: 0 stored, 0 committed, not acknowledged', 'uploaded: 1 stored, 0 committed, not acknowledged', 'committed: 1 stored, 1 committed, not acknowledged']);
  });

  it('stamps each payload with the offset it was given before the upload, so the stored bytes carry it', async () => {
    // Proves the hook Kafka record batches need: the base offset inside the stored batch is the one the commit assigned.
    const { meta, streams } = await cluster(2);
    const store = new InMemoryObjectStore();
    const walWriter = writer({ nodeId: NODE, nodeEpoch: 1, store, meta, lingerMs: 5 });
    const stamp = (payload: Uint8Array, baseOffset: number) => payload.set(encoder.encode(String(baseOffset).padStart(2, '0')));
    const requests = [
      { ...appendRequest(streams[0]!, '__', 3), stampBaseOffset: stamp },
      { ...appendRequest(streams[1]!, '__', 2), stampBaseOffset: stamp },
      { ...appendRequest(streams[0]!, '__', 4), stampBaseOffset: stamp },
      appendRequest(streams[0]!, 'xy', 1),
    ];
    const results = await Promise.all(requests.map((request) => walWriter.append(request)));
    expect(results.map((result) => result.baseOffset)).toEqual([0, 0, 3, 7]);
    const stored = (await Promise.all(store.keys().map((key) => store.get(key)))).map((bytes) => decoder.decode(bytes)).join('');
    // Objects in key order hold the appends in call order: stream 0 at 0, stream 1 at 0, stream 0 at 3, then an unstamped one.
    expect(stored).toBe('000003xy');
  });

  it('writes a batch that names its expected start offset only there, refusing it unwritten elsewhere', async () => {
    // Proves the guard of writers whose batches depend on the ones before (PK groups in flight).
    const { meta, streams } = await cluster(2);
    const store = new InMemoryObjectStore();
    const walWriter = writer({ nodeId: NODE, nodeEpoch: 1, store, meta, lingerMs: 5 });
    const expecting = (stream: StreamAddress, text: string, count: number, expectedStartOffset: number) => ({ ...appendRequest(stream, text, count), expectedStartOffset });
    const results = await Promise.allSettled([
      walWriter.append(expecting(streams[0]!, 'a0', 2, 0)),
      walWriter.append(expecting(streams[0]!, 'a1', 1, 3)),
      walWriter.append(expecting(streams[1]!, 'b0', 1, 0)),
      walWriter.append(expecting(streams[0]!, 'a2', 1, 2)),
    ]);
    expect(results.map((result) => (result.status === 'fulfilled' ? result.value.baseOffset : (result.reason as MinkError).code))).toEqual([0, 'Unavailable', 0, 2]);
    expect((results[1] as PromiseRejectedResult).reason.message).toMatch(/planned for offset 3 would start at 2: not written/);
    const stored = (await Promise.all(store.keys().map((key) => store.get(key)))).map((bytes) => decoder.decode(bytes)).join('');
    expect(stored).toBe('a0b0a2');
    expect(streams.map((stream) => streamOf(meta.view, stream).endOffset)).toEqual([3, 1]);
    await expect(walWriter.append({ ...appendRequest(streams[0]!, 'x', 1), expectedStartOffset: -1 })).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it('flushes as soon as the queued bytes reach flushBytes, without waiting for the linger', async () => {
    // Proves the size trigger: with a linger that never expires, four 4-byte appends and an 8-byte threshold make exactly two objects.
    const { meta, streams } = await cluster(1);
    const store = new InMemoryObjectStore();
    const walWriter = writer({ nodeId: NODE, nodeEpoch: 1, store, meta, flushBytes: 8, lingerMs: LINGER_NEVER_MS });
    const results = await Promise.all(['aaaa', 'bbbb', 'cccc', 'dddd'].map((text) => walWriter.append(appendRequest(streams[0]!, text))));
    expect(results.map((result) => result.baseOffset)).toEqual([0, 1, 2, 3]);
    expect(store.keys()).toEqual(['wal/1/1/000000000000', 'wal/1/1/000000000001']);
    expect(decoder.decode(await store.get('wal/1/1/000000000001'))).toBe('ccccdddd');
  });

  it('sends what comes to an idle writer at the end of that turn of the event loop, without lingering, and appends of one turn together', async () => {
    // Proves flushWhenIdle: a lone request (a Kafka OffsetCommit) is not held back by a linger with nothing to gather behind it.
    const { meta, streams } = await cluster(2);
    const store = new InMemoryObjectStore();
    const walWriter = writer({ nodeId: NODE, nodeEpoch: 1, store, meta, lingerMs: LINGER_NEVER_MS });
    expect(await Promise.all([walWriter.append(appendRequest(streams[0]!, 'a0')), walWriter.append(appendRequest(streams[1]!, 'b0'))])).toEqual([
      { baseOffset: 0, count: 1 },
      { baseOffset: 0, count: 1 },
    ]);
    expect(await walWriter.append(appendRequest(streams[0]!, 'a1'))).toEqual({ baseOffset: 1, count: 1 });
    expect(store.keys()).toEqual(['wal/1/1/000000000000', 'wal/1/1/000000000001']);
    expect(decoder.decode(await store.get('wal/1/1/000000000000'))).toBe('a0b0');
  });

  it('lingers with nothing in flight when flushWhenIdle is off', async () => {
    // Proves the option turns the idle flush off: the append waits for the linger (here: until close).
    const { meta, streams } = await cluster(1);
    const store = new InMemoryObjectStore();
    const walWriter = writer({ nodeId: NODE, nodeEpoch: 1, store, meta, lingerMs: LINGER_NEVER_MS, flushWhenIdle: false });
    const appended = walWriter.append(appendRequest(streams[0]!, 'a0'));
    for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(store.calls.put).toBe(0);
    await walWriter.close();
    expect(await appended).toEqual({ baseOffset: 0, count: 1 });
    expect(store.calls.put).toBe(1);
  });

  it.each([1, 4])('gives each stream the offsets 0..n-1 exactly once across 2 000 concurrent appends, %i upload(s) in flight, one commit at a time', async (uploadsInFlight) => {
    // Proves offsets are contiguous per stream, in call order, with no gap or repeat, that at most
    // `uploadsInFlight` flushes overlap, and that commits never overlap.
    const { meta, streams } = await cluster(4);
    const store = new GatedObjectStore();
    const gatedMeta = new GatedMeta(meta, store);
    const walWriter = writer({ nodeId: NODE, nodeEpoch: 1, store, meta: gatedMeta, flushBytes: 2_048, lingerMs: 1, uploadsInFlight });
    const appendsTotal = 2_000;
    const calls = Array.from({ length: appendsTotal }, (_unused, index) => {
      const stream = streams[index % streams.length]!;
      const recordCount = 1 + (index % 3);
      return { stream, recordCount, result: walWriter.append(appendRequest(stream, `#${index};`, recordCount)) };
    });
    const results = await Promise.all(calls.map((call) => call.result));

    for (const stream of streams) {
      const mine = calls.map((call, index) => ({ call, result: results[index]! })).filter((entry) => entry.call.stream === stream);
      // In call order, each batch starts where the previous one ended.
      let expectedBase = 0;
      for (const { call, result } of mine) {
        expect(result).toEqual({ baseOffset: expectedBase, count: call.recordCount });
        expectedBase += call.recordCount;
      }
      const record = streamOf(meta.view, stream);
      expect(record.endOffset).toBe(expectedBase);
      expect(record.slices.map((slice) => [slice.startOffset, slice.endOffset])).toEqual(mine.map(({ result }) => [result.baseOffset, result.baseOffset + result.count]));
    }
    expect(store.flushesInFlightMax).toBeLessThanOrEqual(uploadsInFlight);
    expect(gatedMeta.commitsInFlightMax).toBe(1);
    expect(store.inner.calls.put).toBeGreaterThan(1);
    expect(store.inner.calls.put).toBeLessThan(appendsTotal / 10);
  });

  it('with one upload in flight, acknowledges an append only after its commit applied, and starts no second flush meanwhile', async () => {
    // Proves docs/architecture.md §4's acknowledgement rule: uploaded but uncommitted data is not acknowledged, and later appends wait for the next flush.
    const { meta, streams } = await cluster(2);
    const store = new InMemoryObjectStore();
    const gatedMeta = new GatedMeta(meta);
    gatedMeta.hold();
    const walWriter = writer({ nodeId: NODE, nodeEpoch: 1, store, meta: gatedMeta, lingerMs: 1, uploadsInFlight: 1 });

    const first = walWriter.append(appendRequest(streams[0]!, 'first', 2));
    await eventually('the commit is proposed', () => gatedMeta.heldProposals.length === 1, { timeoutMs: WAIT_MS, intervalMs: 1 });
    expect(store.calls.put).toBe(1);
    const second = walWriter.append(appendRequest(streams[0]!, 'second', 1));
    const third = walWriter.append(appendRequest(streams[1]!, 'third', 1));
    await sleep(20);
    expect(await stateOf(first)).toBe('pending');
    expect(await stateOf(second)).toBe('pending');
    expect(store.calls.put).toBe(1);
    expect(streamOf(meta.view, streams[0]!).endOffset).toBe(0);

    gatedMeta.release();
    expect(await first).toEqual({ baseOffset: 0, count: 2 });
    expect(await second).toEqual({ baseOffset: 2, count: 1 });
    expect(await third).toEqual({ baseOffset: 0, count: 1 });
    expect(store.calls.put).toBe(2);
    expect(streamOf(meta.view, streams[0]!).endOffset).toBe(3);
  });

  it('with several uploads in flight, uploads the next full objects while a commit waits, and acknowledges nothing before its own commit, in order', async () => {
    // Proves pipelining keeps the acknowledgement rule and the order: objects 2 and 3 (each append fills
    // one, flushBytes 1) are uploaded while object 1's commit is held, none of their appends is
    // acknowledged, and the offsets follow call order.
    const { meta, streams } = await cluster(2);
    const store = new InMemoryObjectStore();
    const gatedMeta = new GatedMeta(meta);
    gatedMeta.hold();
    const walWriter = writer({ nodeId: NODE, nodeEpoch: 1, store, meta: gatedMeta, flushBytes: 1, lingerMs: 1, uploadsInFlight: 3 });

    const first = walWriter.append(appendRequest(streams[0]!, 'first', 2));
    await eventually('the first commit is proposed', () => gatedMeta.heldProposals.length === 1, { timeoutMs: WAIT_MS, intervalMs: 1 });
    const second = walWriter.append(appendRequest(streams[0]!, 'second', 1));
    await eventually('the second object is uploaded', () => store.calls.put === 2, { timeoutMs: WAIT_MS, intervalMs: 1 });
    const third = walWriter.append(appendRequest(streams[1]!, 'third', 1));
    await eventually('the third object is uploaded', () => store.calls.put === 3, { timeoutMs: WAIT_MS, intervalMs: 1 });
    const fourth = walWriter.append(appendRequest(streams[0]!, 'fourth', 3));
    await sleep(20);
    // The three uploads are done, one commit is proposed and held: nothing is acknowledged, nothing committed.
    expect(gatedMeta.heldProposals).toHaveLength(1);
    expect(await Promise.all([first, second, third, fourth].map(stateOf))).toEqual(['pending', 'pending', 'pending', 'pending']);
    expect(streamOf(meta.view, streams[0]!).endOffset).toBe(0);

    gatedMeta.release();
    expect(await first).toEqual({ baseOffset: 0, count: 2 });
    expect(await second).toEqual({ baseOffset: 2, count: 1 });
    expect(await third).toEqual({ baseOffset: 0, count: 1 });
    expect(await fourth).toEqual({ baseOffset: 3, count: 3 });
    expect(gatedMeta.commitsInFlightMax).toBe(1);
    // The fourth waited for a place (3 in flight), so it went into the fourth object.
    expect(streamOf(meta.view, streams[0]!).slices.map((slice) => [slice.object, slice.startOffset, slice.endOffset])).toEqual([
      ['wal/1/1/000000000000', 0, 2],
      ['wal/1/1/000000000001', 2, 3],
      ['wal/1/1/000000000003', 3, 6],
    ]);
  });

  it('sends a smaller, lingered object only when no object is in flight, so appends gather meanwhile', async () => {
    // Proves the gathering rule: while object 1 waits for its commit, three small appends wait too and then
    // go out together as one object, not one object each.
    const { meta, streams } = await cluster(2);
    const store = new InMemoryObjectStore();
    const gatedMeta = new GatedMeta(meta);
    gatedMeta.hold();
    const walWriter = writer({ nodeId: NODE, nodeEpoch: 1, store, meta: gatedMeta, lingerMs: 1, uploadsInFlight: 4 });
    const first = walWriter.append(appendRequest(streams[0]!, 'first', 1));
    await eventually('the first commit is proposed', () => gatedMeta.heldProposals.length === 1, { timeoutMs: WAIT_MS, intervalMs: 1 });
    const later = [walWriter.append(appendRequest(streams[0]!, 'a', 1)), walWriter.append(appendRequest(streams[1]!, 'b', 1)), walWriter.append(appendRequest(streams[0]!, 'c', 1))];
    await sleep(20);
    expect(store.calls.put).toBe(1);
    gatedMeta.release();
    expect(await first).toEqual({ baseOffset: 0, count: 1 });
    expect(await Promise.all(later)).toEqual([
      { baseOffset: 1, count: 1 },
      { baseOffset: 0, count: 1 },
      { baseOffset: 2, count: 1 },
    ]);
    expect(store.calls.put).toBe(2);
  });

  it('fences a writer whose node epoch is stale: it uploads, but its appends fail with Fenced and nothing commits', async () => {
    // Proves the zombie rule of docs/architecture.md §4: a new incarnation of the node fences the old one's commits.
    const { meta, streams } = await cluster(2);
    const store = new InMemoryObjectStore();
    const walWriter = writer({ nodeId: NODE, nodeEpoch: 1, store, meta, lingerMs: 1 });
    expect(await walWriter.append(appendRequest(streams[0]!, 'before', 1))).toEqual({ baseOffset: 0, count: 1 });

    await meta.proposeOrThrow({ type: 'RegisterNode', nodeId: NODE });
    const outcomes = await Promise.allSettled([walWriter.append(appendRequest(streams[0]!, 'zombie', 1)), walWriter.append(appendRequest(streams[1]!, 'zombie', 1))]);

    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected']);
    for (const outcome of outcomes) {
      const error = (outcome as PromiseRejectedResult).reason as MinkError;
      expect(error).toBeInstanceOf(MinkError);
      expect(error.code).toBe('Fenced');
      expect(error.message).toBe('node 1 epoch 1 is fenced: current is 2');
    }
    expect(store.calls.put).toBe(2);
    expect(store.keys()).toEqual(['wal/1/1/000000000000', 'wal/1/1/000000000001']);
    expect(streams.map((stream) => streamOf(meta.view, stream).endOffset)).toEqual([1, 0]);
    expect(streamOf(meta.view, streams[0]!).slices).toHaveLength(1);
  });

  it('fences appends to a stream another node reopened at a newer stream epoch, without failing the other streams', async () => {
    // Proves the stream-epoch fence: the view's check refuses the moved stream before upload, and a zombie that cannot see the move is refused by the commit.
    const { meta, streams, coordinatorEpoch } = await cluster(2);
    const store = new InMemoryObjectStore();
    const zombieMeta = new GatedMeta(meta);
    zombieMeta.frozenView = meta.view;
    const walWriter = writer({ nodeId: NODE, nodeEpoch: 1, store, meta, lingerMs: 1 });
    const zombie = writer({ nodeId: NODE, nodeEpoch: 1, store, meta: zombieMeta, lingerMs: 1 });
    const moved = streams[0]!;
    const address = { tableId: moved.tableId, partition: null, bucket: moved.bucket };
    await meta.proposeOrThrow({ type: 'CloseStream', nodeId: NODE, nodeEpoch: 1, ...address, streamEpoch: moved.streamEpoch });
    const { leaderEpoch } = await meta.proposeOrThrow({ type: 'LeadBucket', coordinatorEpoch, ...address, leader: OTHER_NODE });
    await meta.proposeOrThrow({ type: 'OpenStream', nodeId: OTHER_NODE, nodeEpoch: 1, ...address, leaderEpoch: leaderEpoch! });
    expect(streamOf(meta.view, moved).epoch).toBe(2);

    const [toMoved, toKept] = await Promise.allSettled([
      walWriter.append(appendRequest(moved, 'late', 1)),
      walWriter.append(appendRequest(streams[1]!, 'kept', 1)),
    ]);
    expect(toMoved.status).toBe('rejected');
    expect(((toMoved as PromiseRejectedResult).reason as MinkError).code).toBe('Fenced');
    expect(toKept).toEqual({ status: 'fulfilled', value: { baseOffset: 0, count: 1 } });
    expect(store.calls.put).toBe(1);
    expect(decoder.decode(await store.get('wal/1/1/000000000000'))).toBe('kept');

    const zombieError = (await rejectionOf(zombie.append(appendRequest(moved, 'zombie', 1)))) as MinkError;
    expect(zombieError.code).toBe('Fenced');
    expect(zombieError.message).toContain('is not open by node 1 at node epoch 1');
    expect(store.calls.put).toBe(2);
    expect(streamOf(meta.view, moved)).toMatchObject({ endOffset: 0, slices: [], node: OTHER_NODE });
  });

  it('fails the appends of a failed upload and those behind them for the same streams (in a later object in flight or queued); other streams and later appends proceed', async () => {
    // Proves docs/architecture.md §5's failure rule: no batch of a stream overtakes a failed one, and the offsets after the failure continue from the committed end.
    const { meta, streams } = await cluster(3);
    const [streamA, streamB, streamC] = streams as [StreamAddress, StreamAddress, StreamAddress];
    const store = new GatedObjectStore();
    const walWriter = writer({ nodeId: NODE, nodeEpoch: 1, store, meta: new GatedMeta(meta, store), lingerMs: 1 });
    expect(await walWriter.append(appendRequest(streamA, 'committed', 2))).toEqual({ baseOffset: 0, count: 2 });

    store.hold();
    store.inner.failNext('put', new UnavailableError('injected outage'));
    const failing = [walWriter.append(appendRequest(streamA, 'lostA', 1)), walWriter.append(appendRequest(streamB, 'lostB', 1))];
    await eventually('the upload started', () => store.heldPuts.length === 1, { timeoutMs: WAIT_MS, intervalMs: 1 });
    const behindA = walWriter.append(appendRequest(streamA, 'behindA', 1));
    const behindC = walWriter.append(appendRequest(streamC, 'behindC', 4));
    store.release();

    for (const error of await Promise.all(failing.map(rejectionOf))) {
      expect(error).toBeInstanceOf(UnavailableError);
      expect(error.message).toContain('injected outage');
    }
    const behindError = await rejectionOf(behindA);
    expect(behindError).toBeInstanceOf(UnavailableError);
    expect(behindError.message).toContain('an earlier batch of bucket');
    expect(await behindC).toEqual({ baseOffset: 0, count: 4 });

    expect(await walWriter.append(appendRequest(streamA, 'retryA', 1))).toEqual({ baseOffset: 2, count: 1 });
    expect(await walWriter.append(appendRequest(streamB, 'retryB', 1))).toEqual({ baseOffset: 0, count: 1 });
    expect(streams.map((stream) => streamOf(meta.view, stream).endOffset)).toEqual([3, 1, 4]);
    const objectOfA = streamOf(meta.view, streamA).slices.map((slice) => slice.object);
    expect(await Promise.all(objectOfA.map((object, index) => store.get(object, sliceRange(meta.view, streamA, index))))).toEqual([
      encoder.encode('committed'),
      encoder.encode('retryA'),
    ]);
  });

  it('reports a commit that does not start at the committed end as Conflict and fails the batches queued behind it', async () => {
    // Proves the Conflict mapping and that a lagging view is covered by the writer's own record of its commits.
    const { meta, streams } = await cluster(1);
    const store = new InMemoryObjectStore();
    const laggingMeta = new GatedMeta(meta);
    laggingMeta.frozenView = meta.view;
    const lagging = writer({ nodeId: NODE, nodeEpoch: 1, store, meta: laggingMeta, lingerMs: 1 });
    // Its view never shows its commits, yet its second batch follows its first.
    expect(await lagging.append(appendRequest(streams[0]!, 'one', 1))).toEqual({ baseOffset: 0, count: 1 });
    expect(await lagging.append(appendRequest(streams[0]!, 'two', 2))).toEqual({ baseOffset: 1, count: 2 });

    // A second writer of the same incarnation whose view is stale proposes offsets that are already taken.
    const stale = writer({ nodeId: NODE, nodeEpoch: 1, store, meta: laggingMeta, lingerMs: 1 });
    laggingMeta.hold();
    const conflicting = stale.append(appendRequest(streams[0]!, 'three', 1));
    await eventually('the commit is proposed', () => laggingMeta.heldProposals.length === 1, { timeoutMs: WAIT_MS, intervalMs: 1 });
    const behind = stale.append(appendRequest(streams[0]!, 'four', 1));
    laggingMeta.release();
    const conflict = await rejectionOf(conflicting);
    expect(conflict).toBeInstanceOf(ConflictError);
    expect(conflict.message).toContain('does not start at the committed end 3');
    expect(await rejectionOf(behind)).toBeInstanceOf(UnavailableError);
    expect(streamOf(meta.view, streams[0]!).endOffset).toBe(3);
  });

  it('refuses a batch whose writer sequence the view shows committed (an earlier attempt applied meanwhile) as Conflict, unwritten, without failing the other streams', async () => {
    // Proves the placement check behind exactly-once: a retry taken before its first attempt's commit (of
    // unknown outcome) applied is not written again at the new end, and the object still carries the rest.
    const { meta, streams } = await cluster(2);
    const store = new InMemoryObjectStore();
    const walWriter = writer({ nodeId: NODE, nodeEpoch: 1, store, meta, lingerMs: 1 });
    expect(await walWriter.append(appendRequest(streams[0]!, 'first', 2, { id: 'w', seq: 0 }))).toEqual({ baseOffset: 0, count: 2 });

    const [again, other] = await Promise.allSettled([
      walWriter.append(appendRequest(streams[0]!, 'again', 2, { id: 'w', seq: 0 })),
      walWriter.append(appendRequest(streams[1]!, 'other', 1, { id: 'w', seq: 0 })),
    ]);
    const refusal = (again as PromiseRejectedResult).reason as Error;
    expect(refusal).toBeInstanceOf(ConflictError);
    expect(refusal.message).toBe(`bucket ${streams[0]!.id}: writer w sequence 0 is already committed (its last committed sequence is 0): not written twice`);
    expect(other).toEqual({ status: 'fulfilled', value: { baseOffset: 0, count: 1 } });
    expect(decoder.decode(await store.get('wal/1/1/000000000001'))).toBe('other');
    expect(streams.map((stream) => streamOf(meta.view, stream).endOffset)).toEqual([2, 1]);
  });

  it('refuses malformed appends, appends beyond the queue bound, and appends after close, which flushes what was queued', async () => {
    // Proves the input checks, the back-pressure bound and the close contract.
    const { meta, streams } = await cluster(1);
    const stream = streams[0]!;
    const store = new GatedObjectStore();
    const walWriter = writer({ nodeId: NODE, nodeEpoch: 1, store, meta: new GatedMeta(meta, store), flushBytes: 16, queuedBytesMax: 16, lingerMs: LINGER_NEVER_MS });

    const malformed: [string, WalAppendRequest][] = [
      ['zero records', { ...appendRequest(stream, 'x'), recordCount: 0 }],
      ['a fractional record count', { ...appendRequest(stream, 'x'), recordCount: 1.5 }],
      ['an empty payload', appendRequest(stream, '')],
      ['a bucket id of another bucket', { ...appendRequest(stream, 'x'), bucketId: bucketId(stream.tableId, null, stream.bucket + 1) }],
      ['a writer without an id', { ...appendRequest(stream, 'x'), writer: { id: '', seq: 1 } }],
      ['a payload larger than the queue', appendRequest(stream, 'x'.repeat(17))],
    ];
    for (const [what, request] of malformed) {
      const error = await rejectionOf(walWriter.append(request));
      expect([what, error]).toEqual([what, expect.any(InvalidArgumentError)]);
    }

    store.hold();
    const first = walWriter.append(appendRequest(stream, 'x'.repeat(16)));
    await eventually('the first upload started', () => store.heldPuts.length === 1, { timeoutMs: WAIT_MS, intervalMs: 1 });
    const second = walWriter.append(appendRequest(stream, 'y'.repeat(10)));
    expect(walWriter.queuedByteCount).toBe(10);
    const refused = await rejectionOf(walWriter.append(appendRequest(stream, 'z'.repeat(7))));
    expect(refused).toBeInstanceOf(UnavailableError);
    expect(refused.message).toContain('10 bytes queued');

    const closed = walWriter.close();
    expect(await rejectionOf(walWriter.append(appendRequest(stream, 'late')))).toBeInstanceOf(UnavailableError);
    store.release();
    await closed;
    expect(await stateOf(second)).toBe('resolved');
    expect(await first).toEqual({ baseOffset: 0, count: 1 });
    expect(await second).toEqual({ baseOffset: 1, count: 1 });
    expect(streamOf(meta.view, stream).endOffset).toBe(2);
    expect(store.inner.keys()).toHaveLength(2);
  });
});

function sliceRange(view: View, stream: StreamAddress, index: number): ByteRange {
  const slice = streamOf(view, stream).slices[index]!;
  return { start: slice.position, endExclusive: slice.position + slice.length };
}
