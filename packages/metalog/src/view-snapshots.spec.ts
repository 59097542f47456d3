import { getIn, recordOf, shardedFrom } from '@mink/meta';
import { gunzipSync, gzipSync } from 'node:zlib';
import type { NatsConnection } from 'nats';
import { LIMITS } from '@mink/config';
import { emptyView, type View } from '@mink/meta';
import { NotFoundError, UnavailableError } from '@mink/protocol';
import { DelegatingObjectStore, type ObjectStore } from '@mink/s3stream';
import { historyView } from './metadata-history.fixture';
import { startSnapshotTestServers, type SnapshotTestServers } from './snapshot-servers.fixture';
import { SNAPSHOT_KEY_PREFIX, ViewSnapshots, openSnapshotBucket, snapshotJson, snapshotLocation } from './view-snapshots';

/** `view` as a snapshot stores it: the buckets, the object registry and the garbage as flat records. */
function storedForm(view: View) {
  const buckets = Object.fromEntries(Object.entries(recordOf(view.buckets)).map(([id, record]) => [id, { ...record, stream: { ...record.stream, writers: recordOf(record.stream.writers) } }]));
  return { ...view, tables: recordOf(view.tables), buckets, objects: recordOf(view.objects), garbage: recordOf(view.garbage) };
}

/** A view at `seq` whose content says which seq it is, for tests that only care about ordering. */
function viewAt(seq: number): View {
  return { ...emptyView(), seq, nodes: { marker: { id: 'marker', epoch: seq, address: `at-${seq}`, kafka: '', http: '' } } };
}

describe('snapshotJson', () => {
  it('writes exactly the text JSON.stringify gives of the stored form, yielding or not', async () => {
    // Proves the shard-by-shard encoder changes no byte of the format (a snapshot of one seq is the same bytes whoever writes it),
    // whether it yields after every shard (0 ms) or never does.
    const view = historyView(777);
    const expected = JSON.stringify({ format: 1, view: storedForm(view) });
    expect(await snapshotJson(view, 0)).toBe(expected);
    expect(await snapshotJson(view, Number.POSITIVE_INFINITY)).toBe(expected);
    expect(await snapshotJson(emptyView(), 0)).toBe(JSON.stringify({ format: 1, view: storedForm(emptyView()) }));
  });

  it('lets other work run while it encodes a view of many buckets', async () => {
    // Proves the event loop turns during the encoding: a timer set before it fires before it ends.
    let view = historyView(777);
    const template = recordOf(view.buckets);
    const many: Record<string, (typeof template)[string]> = {};
    const [id, record] = Object.entries(template)[0]!;
    for (let copy = 0; copy < 20_000; copy++) many[`${id}-${copy}`] = record;
    view = { ...view, buckets: shardedFrom(many) };
    let fired = false;
    setImmediate(() => (fired = true));
    const json = await snapshotJson(view, 0);
    expect(fired).toBe(true);
    expect(Object.keys((JSON.parse(json) as { view: { buckets: object } }).view.buckets)).toHaveLength(20_000);
  });
});

describe('ViewSnapshots on a real nats-server and S3 server', () => {
  let servers: SnapshotTestServers;
  let connection: NatsConnection;
  let store: ObjectStore;
  let testCounter = 0;

  /** Snapshots under a pointer key and prefix of their own, so tests do not see each other's. */
  async function newSnapshots(options: { keptMax?: number; objectStore?: ObjectStore; connection?: NatsConnection } = {}): Promise<ViewSnapshots> {
    testCounter += 1;
    return snapshotsAt(`TEST_${testCounter}`, options);
  }

  async function snapshotsAt(pointerKey: string, options: { keptMax?: number; objectStore?: ObjectStore; connection?: NatsConnection } = {}): Promise<ViewSnapshots> {
    return new ViewSnapshots({
      store: options.objectStore ?? store,
      kv: await openSnapshotBucket(options.connection ?? connection),
      pointerKey,
      keyPrefix: `${SNAPSHOT_KEY_PREFIX}${pointerKey}/`,
      keptMax: options.keptMax,
    });
  }

  beforeAll(async () => {
    servers = await startSnapshotTestServers('view-snapshots');
    connection = await servers.connect();
    store = servers.objectStore();
  }, 30_000);

  afterAll(async () => {
    await servers?.stop();
  });

  it('round-trips a full view through gzipped JSON at meta/snapshots/{seq padded to 16}', async () => {
    // Proves loadNewest returns exactly the view that was written, stored compressed under the documented key.
    const snapshots = await ViewSnapshots.open(connection, store);
    expect(await snapshots.loadNewest()).toBeNull();
    const view = historyView(777);
    expect(Object.keys(recordOf(view.buckets))).toHaveLength(4);

    const written = await snapshots.write(view);
    expect(written).toEqual({ seq: 777, key: 'meta/snapshots/0000000000000777', kept: [{ seq: 777, key: 'meta/snapshots/0000000000000777' }] });
    const loaded = await snapshots.loadNewest();
    expect(loaded).toEqual(view);
    expect(JSON.stringify(loaded)).toBe(JSON.stringify(view));

    const body = await store.get('meta/snapshots/0000000000000777');
    expect([body[0], body[1]]).toEqual([0x1f, 0x8b]);
    const json = gunzipSync(body).toString('utf8');
    expect(body.byteLength).toBeLessThan(json.length / 4);
    // The stored format keeps the tables, the buckets, the object registry and the garbage flat, whatever their sharding in memory.
    expect(JSON.parse(json)).toEqual({ format: 1, view: storedForm(view) });
  });

  it('keeps a stream\'s history and its packed slices through a snapshot', async () => {
    // Proves the two slice lists of a stream and a packed slice's batch count survive the stored form, so a process
    // loading the snapshot reads the stream exactly as the log left it.
    const snapshots = await ViewSnapshots.open(connection, store);
    const base = historyView(120);
    const buckets = recordOf(base.buckets);
    const [id, record] = Object.entries(buckets)[0]!;
    const history = [{ object: 'streams/1-_-0/0-40-1-1', startOffset: 0, endOffset: 40, position: 0, length: 4_096, batches: 12 }];
    // Newer than what earlier tests of this store wrote, so it is the newest snapshot.
    const view: View = { ...base, seq: 1_000_000, buckets: shardedFrom({ ...buckets, [id]: { ...record, stream: { ...record.stream, history } } }) };
    await snapshots.write(view);
    const loaded = (await snapshots.loadNewest())!;
    expect(getIn(loaded.buckets, id)!.stream.history).toEqual(history);
    expect(loaded).toEqual(view);
  });

  it('loads a snapshot written before the maps were sharded, buckets without KV snapshots and no producer ids included', async () => {
    // Proves the stored format did not change: an older body (every map a flat record) loads into the sharded view.
    const snapshots = await newSnapshots();
    const view = historyView(120);
    await snapshots.write(view);
    const buckets = Object.fromEntries(Object.entries(storedForm(view).buckets).map(([id, { kvSnapshots: _dropped, ...record }]) => [id, record]));
    const { nextProducerId: _absent, ...older } = { ...storedForm(view), buckets };
    await store.put(snapshots.keyOf(120), gzipSync(JSON.stringify({ format: 1, view: older })));
    const loaded = await snapshots.loadNewest();
    expect(loaded).toEqual(view);
    expect(getIn(loaded!.buckets, '1//0')).toEqual(getIn(view.buckets, '1//0'));
    expect(loaded!.buckets.size).toBe(4);
  });

  it('keeps the newest K snapshots in the pointer and deletes the objects of older ones', async () => {
    // Proves the pointer is a bounded list, newest first, and the store holds exactly the snapshots it names.
    const snapshots = await newSnapshots({ keptMax: 3 });
    for (const seq of [100, 200, 300, 400, 500, 600]) await snapshots.write(viewAt(seq));
    expect((await snapshots.kept()).map((reference) => reference.seq)).toEqual([600, 500, 400]);
    expect(await snapshots.oldestKeptSeq()).toBe(400);
    expect((await store.list(snapshots.keyPrefix)).map((object) => object.key)).toEqual([snapshots.keyOf(400), snapshots.keyOf(500), snapshots.keyOf(600)]);
    expect((await snapshots.loadNewest())?.nodes.marker?.address).toBe('at-600');
  });

  it('lets the newer sequence win: a stale write changes neither the pointer nor the oldest kept sequence', async () => {
    // Proves a late writer (a deposed coordinator) cannot move the pointer back, so purges based on it stay safe.
    const snapshots = await newSnapshots({ keptMax: 3 });
    for (const seq of [400, 500, 600]) await snapshots.write(viewAt(seq));
    const stale = await snapshots.write(viewAt(300));
    expect(stale.kept.map((reference) => reference.seq)).toEqual([600, 500, 400]);
    expect(await snapshots.oldestKeptSeq()).toBe(400);
    // The stale object was of no use and is gone again.
    expect((await store.list(snapshots.keyPrefix)).map((object) => object.key)).not.toContain(snapshots.keyOf(300));
    // Writing a sequence that is already kept is a no-op.
    expect((await snapshots.write(viewAt(500))).kept.map((reference) => reference.seq)).toEqual([600, 500, 400]);
  });

  it('merges concurrent writers with compare-and-set so none clobbers another', async () => {
    // Proves two processes writing interleaved snapshots at once end with the K newest of all of them, and no stray objects.
    testCounter += 1;
    const pointerKey = `TEST_${testCounter}`;
    const otherConnection = await servers.connect();
    const first = await snapshotsAt(pointerKey, { keptMax: 3 });
    const second = await snapshotsAt(pointerKey, { keptMax: 3, connection: otherConnection, objectStore: servers.objectStore() });
    const seqs = [7, 2, 9, 4, 1, 10, 3, 8, 6, 5];
    await Promise.all(seqs.map((seq, index) => (index % 2 === 0 ? first : second).write(viewAt(seq))));
    expect((await first.kept()).map((reference) => reference.seq)).toEqual([10, 9, 8]);
    expect((await second.kept()).map((reference) => reference.seq)).toEqual([10, 9, 8]);
    expect((await store.list(first.keyPrefix)).map((object) => object.key)).toEqual([first.keyOf(8), first.keyOf(9), first.keyOf(10)]);
  });

  it('reads the pointer again when the snapshot it named was deleted by a newer write in between', async () => {
    // Proves a reader racing a writer gets the newer snapshot instead of NotFound.
    const racing = await newSnapshots({ keptMax: 1 });
    await racing.write(viewAt(10));
    let raced = false;
    const racingStore = DelegatingObjectStore.overriding(store, {
      get: async (key, range) => {
        if (!raced) {
          raced = true;
          // A writer replaces the snapshot after the reader read the pointer and before its GET.
          await racing.write(viewAt(20));
        }
        return store.get(key, range);
      },
    });
    const reader = new ViewSnapshots({ store: racingStore, kv: await openSnapshotBucket(connection), pointerKey: racing.pointerKey, keyPrefix: racing.keyPrefix });
    const loaded = await reader.loadNewest();
    expect(raced).toBe(true);
    expect(loaded?.seq).toBe(20);
    expect(loaded?.nodes.marker?.address).toBe('at-20');
  });

  it('fails with UnavailableError, not a silent null, when the named snapshot stays missing', async () => {
    // Proves a pointer naming a missing object is never mistaken for "no snapshot", which would replay a purged log.
    const snapshots = await newSnapshots();
    await snapshots.write(viewAt(5));
    await store.delete([snapshots.keyOf(5)]);
    await expect(store.get(snapshots.keyOf(5))).rejects.toBeInstanceOf(NotFoundError);
    const failure = snapshots.loadNewest();
    await expect(failure).rejects.toBeInstanceOf(UnavailableError);
    await expect(failure).rejects.toThrow(`${LIMITS.metaSnapshotLoadAttemptsMax} attempts`);
  });

  it('refuses a snapshot object that holds the view at another sequence', async () => {
    // Proves a misplaced or corrupt object is an error rather than a view at the wrong sequence.
    const snapshots = await newSnapshots();
    await snapshots.write(viewAt(8));
    await store.put(snapshots.keyOf(8), gzipSync(JSON.stringify({ format: 1, view: storedForm(viewAt(9)) })));
    await expect(snapshots.loadNewest()).rejects.toThrow('holds the view at entry 9, not 8');
  });

  it('keeps the snapshots of different metadata logs apart', async () => {
    // Proves the default log uses meta/snapshots/{seq} and any other log its own pointer key and prefix.
    expect(snapshotLocation('MINK_META')).toEqual({ pointerKey: 'MINK_META', keyPrefix: 'meta/snapshots/' });
    expect(snapshotLocation('TEST_META_3')).toEqual({ pointerKey: 'TEST_META_3', keyPrefix: 'meta/snapshots/TEST_META_3/' });
    const left = await ViewSnapshots.open(connection, store, 'LEFT_META');
    const right = await ViewSnapshots.open(connection, store, 'RIGHT_META');
    await left.write(viewAt(3));
    expect(await right.loadNewest()).toBeNull();
    await right.write(viewAt(4));
    expect((await left.loadNewest())?.seq).toBe(3);
    expect((await right.loadNewest())?.seq).toBe(4);
  });
});
