import { getIn as getShardEntry } from '@mink/meta';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ColumnSpec, TableSpec } from '@mink/meta';
import type { MetaStore } from '@mink/metalog';
import { InvalidArgumentError, MinkError, TimeoutError } from '@mink/protocol';
import { decodeBatch, validateRows } from '@mink/records';
import { InMemoryObjectStore, StreamReader, WalWriter, type WalAppendRequest, type WalAppendResult } from '@mink/s3stream';
import { startLedTable, type LedStream, type LedTable } from '@mink/testing';
import { PkBucket, type PkBucketDeps } from './pk-bucket';
import type { PkOperation } from '@mink/pk';

const COLUMNS: ColumnSpec[] = [
  { name: 'tenant', type: 'string' },
  { name: 'id', type: 'int64' },
  { name: 'name', type: 'string' },
  { name: 'score', type: 'int32' },
];
const TABLE: Omit<TableSpec, 'buckets'> = { name: 'users', columns: COLUMNS, primaryKey: ['tenant', 'id'], bucketKey: ['tenant'] };
const SILENT = { info: () => undefined, warn: () => undefined };

interface Fixture {
  led: LedTable;
  stream: LedStream;
  store: InMemoryObjectStore;
  reader: StreamReader;
  folder: string;
  wal: WalWriter;
  deps(overrides?: Partial<PkBucketDeps>): PkBucketDeps;
}

async function fixture(table: Omit<TableSpec, 'buckets'> = TABLE): Promise<Fixture> {
  const led = await startLedTable(1, ['1', '2'], table);
  const store = new InMemoryObjectStore();
  const reader = new StreamReader({ store, meta: led.meta });
  const folder = await mkdtemp(join(tmpdir(), 'mink-pk-bucket-'));
  const wal = new WalWriter({ nodeId: '1', nodeEpoch: 1, store, meta: led.meta, lingerMs: 1 });
  let tablets = 0;
  return {
    led,
    stream: led.streams[0]!,
    store,
    reader,
    folder,
    wal,
    deps: (overrides = {}) => ({
      nodeId: '1',
      nodeEpoch: 1,
      meta: led.meta,
      objectStore: store,
      wal,
      reader,
      directory: join(folder, `tablet-${tablets++}`),
      logger: SILENT,
      nowMs: () => 1_000,
      ...overrides,
    }),
  };
}

function rows(json: Record<string, unknown>[]) {
  return validateRows(COLUMNS, json);
}

function keys(json: Record<string, unknown>[]) {
  return validateRows(COLUMNS, json, { allowedColumns: ['tenant', 'id'], required: ['tenant', 'id'] });
}

/** The whole changelog of the fixture's bucket as [changeType, id, name]. */
async function changelog(f: Fixture): Promise<[string, string, unknown][]> {
  const read = await f.reader.read(f.stream.id, 0, 100_000);
  return read.batches.flatMap((batch) => {
    const decoded = decodeBatch(COLUMNS, batch.payload);
    return decoded.rows.map((row, index): [string, string, unknown] => [decoded.changeTypes![index]!, String(row.id), row.name]);
  });
}

/** A WAL that holds every append until the test releases it (`held`), and fails the first one it releases as an upload would. */
/** Group commit that starts a group for every request while fewer than the most are in flight, so tests of pipelining can use requests of one operation. */
const PIPELINE_EVERY_REQUEST = { groupOperationsPipelined: 1 };

function heldWal(f: Fixture, held: (() => void)[]): PkBucketDeps['wal'] {
  let failNext = true;
  return {
    append: async (request: WalAppendRequest): Promise<WalAppendResult> => {
      await new Promise<void>((release) => held.push(release));
      if (failNext) {
        failNext = false;
        throw new MinkError('Unavailable', 'the upload failed');
      }
      return f.wal.append(request);
    },
  };
}

/** Leads the bucket again at a higher epoch and opens its stream there for `nodeId` (a failover in the view). */
async function relead(meta: MetaStore, led: LedTable, stream: LedStream, nodeId: string, nodeEpoch: number): Promise<number> {
  const address = { tableId: stream.tableId, partition: null, bucket: stream.bucket };
  const { leaderEpoch } = await meta.proposeOrThrow({ type: 'LeadBucket', coordinatorEpoch: led.coordinatorEpoch, ...address, leader: nodeId });
  const current = getShardEntry(meta.view.buckets, stream.id)!.stream;
  if (current.state === 'open') {
    await meta.proposeOrThrow({ type: 'CloseStream', nodeId: current.node!, nodeEpoch: current.nodeEpoch, ...address, streamEpoch: current.epoch });
  }
  const { streamEpoch } = await meta.proposeOrThrow({ type: 'OpenStream', nodeId, nodeEpoch, ...address, leaderEpoch: leaderEpoch! });
  return streamEpoch!;
}

describe('PkBucket', () => {
  let f: Fixture;
  const opened: PkBucket[] = [];

  async function open(overrides: Partial<PkBucketDeps> = {}, streamEpoch = f.stream.streamEpoch): Promise<PkBucket> {
    const bucket = await PkBucket.open(f.deps(overrides), { tableId: f.stream.tableId, partition: null, bucket: 0 }, streamEpoch);
    opened.push(bucket);
    return bucket;
  }

  beforeEach(async () => {
    f = await fixture();
  });

  afterEach(async () => {
    await Promise.all(opened.splice(0).map((bucket) => bucket.close({ finalSnapshot: false })));
    await f.wal.close();
    await rm(f.folder, { recursive: true, force: true });
  });

  it('writes change records first and answers lookups with every acknowledged write', async () => {
    const bucket = await open();
    const first = await bucket.write(rows([{ tenant: 'a', id: 1, name: 'one', score: 1 }, { tenant: 'a', id: 2, name: 'two', score: 2 }]).map((row) => ({ kind: 'put', row })));
    expect(first).toEqual({ operations: 2, baseOffset: 0, count: 2 });
    const update = await bucket.write(rows([{ tenant: 'a', id: 1, name: 'uno', score: 1 }]).map((row) => ({ kind: 'put', row })));
    expect(update).toEqual({ operations: 1, baseOffset: 2, count: 2 });
    const removal = await bucket.write(keys([{ tenant: 'a', id: 2 }]).map((key) => ({ kind: 'delete', key })));
    expect(removal).toEqual({ operations: 1, baseOffset: 4, count: 1 });
    // Deleting a missing key changes nothing and writes nothing.
    expect(await bucket.write(keys([{ tenant: 'a', id: 9 }]).map((key) => ({ kind: 'delete', key })))).toEqual({ operations: 1, baseOffset: 5, count: 0 });

    expect(await changelog(f)).toEqual([
      ['+I', '1', 'one'],
      ['+I', '2', 'two'],
      ['-U', '1', 'one'],
      ['+U', '1', 'uno'],
      ['-D', '2', 'two'],
    ]);
    expect(bucket.lookup(keys([{ tenant: 'a', id: 1 }, { tenant: 'a', id: 2 }, { tenant: 'b', id: 1 }]))).toEqual([
      { tenant: 'a', id: '1', name: 'uno', score: 1 },
      null,
      null,
    ]);
    expect(bucket.lookup(keys([{ tenant: 'a', id: 1 }]), ['score', 'name'])).toEqual([{ score: 1, name: 'uno' }]);
    expect(bucket.appliedOffset).toBe(5);
  });

  it('plans requests queued together in order, refusing a bad one alone and writing nothing of it', async () => {
    const bucket = await open();
    const put = (json: Record<string, unknown>, partialColumns?: string[]) =>
      bucket.write([{ kind: 'put', row: validateRows(COLUMNS, [json], partialColumns ? { allowedColumns: partialColumns } : {})[0]!, ...(partialColumns ? { partialColumns } : {}) }]);
    const results = await Promise.allSettled([
      put({ tenant: 'a', id: 1, name: 'one', score: 1 }),
      put({ tenant: 'a', id: 1, score: 5 }, ['tenant', 'id', 'score']),
      // Not allowed: a partial put must name every primary key column.
      put({ id: 1, score: 7 }, ['id', 'score']),
      put({ tenant: 'a', id: 2, name: 'two', score: 2 }),
    ]);
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect((results[2] as PromiseRejectedResult).reason).toBeInstanceOf(InvalidArgumentError);
    // The partial put merged with the put queued before it, although neither was applied when it was planned.
    expect(bucket.lookup(keys([{ tenant: 'a', id: 1 }]))).toEqual([{ tenant: 'a', id: '1', name: 'one', score: 5 }]);
    expect((await changelog(f)).map(([type, id]) => `${type}${id}`)).toEqual(['+I1', '-U1', '+U1', '+I2']);
  });

  it('plans each part of a request of several as a request of its own and answers each part, a bad one alone refused', async () => {
    // Proves merged puts keep each call's fate and offsets: the parts follow each other in the changelog,
    // the refused part writes nothing and carries its error, and a retry of the request gets the same parts.
    const bucket = await open();
    const put = (json: Record<string, unknown>): PkOperation => ({ kind: 'put', row: validateRows(COLUMNS, [json])[0]! });
    // A part's planning refuses a partial put without the whole key (here the second part, alone).
    const partial: PkOperation = { kind: 'put', row: validateRows(COLUMNS, [{ id: 1, score: 7 }], { allowedColumns: ['id', 'score'] })[0]!, partialColumns: ['id', 'score'] };
    const operations = [put({ tenant: 'a', id: 1, name: 'one', score: 1 }), put({ tenant: 'a', id: 2, name: 'two', score: 2 }), partial, put({ tenant: 'a', id: 1, name: 'uno', score: 1 })];
    const writer = { id: 'w', seq: 0, acked: -1 };
    const outcome = await bucket.write(operations, writer, undefined, [2, 1, 1]);
    expect(outcome).toEqual({
      operations: 4,
      baseOffset: 0,
      count: 4,
      parts: [{ operations: 2, baseOffset: 0, count: 2 }, { error: expect.any(InvalidArgumentError) }, { operations: 1, baseOffset: 2, count: 2 }],
    });
    expect((await changelog(f)).map(([type, id, name]) => `${type}${id}${name}`)).toEqual(['+I1one', '+I2two', '-U1one', '+U1uno']);
    expect(bucket.lookup(keys([{ tenant: 'a', id: 1 }]))).toEqual([{ tenant: 'a', id: '1', name: 'uno', score: 1 }]);
    // A retry of the same sequence is answered what the request did, part by part, and writes nothing again.
    expect(await bucket.write(operations, writer, undefined, [2, 1, 1])).toEqual(outcome);
    expect(bucket.appliedOffset).toBe(4);
    // Parts that do not add up to the operations are refused as a whole.
    await expect(bucket.write(operations, { id: 'w', seq: 1, acked: 0 }, undefined, [2, 1])).rejects.toThrow(new InvalidArgumentError('parts add up to 3 operations, the request holds 4'));
  });

  it('answers a retry of a request of several parts that its writer says was written, part by part, as duplicates', async () => {
    // A leader that does not know the writer (a new one) takes the writer's word that a later sequence was acknowledged.
    const bucket = await open();
    const put = (id: number): PkOperation => ({ kind: 'put', row: validateRows(COLUMNS, [{ tenant: 'a', id, name: `n${id}`, score: id }])[0]! });
    expect(await bucket.write([put(1), put(2), put(3)], { id: 'w', seq: 0, acked: -1, newestAcked: 1 }, undefined, [1, 2])).toEqual({
      operations: 3,
      baseOffset: -1,
      count: 0,
      duplicate: true,
      parts: [
        { operations: 1, baseOffset: -1, count: 0, duplicate: true },
        { operations: 2, baseOffset: -1, count: 0, duplicate: true },
      ],
    });
    expect(bucket.appliedOffset).toBe(0);
  });

  it('looks up by bucket-key prefix, bounded by the limit', async () => {
    const bucket = await open();
    await bucket.write(
      rows([
        { tenant: 'a', id: 1, name: 'a1' },
        { tenant: 'a', id: 2, name: 'a2' },
        { tenant: 'ab', id: 3, name: 'ab3' },
        { tenant: 'b', id: 1, name: 'b1' },
      ]).map((row) => ({ kind: 'put', row })),
    );
    const prefix = (tenant: string) => validateRows(COLUMNS, [{ tenant }], { allowedColumns: ['tenant'] })[0]!;
    const a = bucket.prefixLookup(prefix('a'), 10, 1_000_000, ['name']);
    expect(a.rows.map((row) => row.name).sort()).toEqual(['a1', 'a2']);
    expect(a.truncated).toBe(false);
    const limited = bucket.prefixLookup(prefix('a'), 1, 1_000_000);
    expect(limited.rows).toHaveLength(1);
    expect(limited.truncated).toBe(true);
    expect(bucket.prefixLookup(prefix('a'), 10, 10).rows).toHaveLength(1);
    expect(bucket.prefixLookup(prefix('a'), 10, 10).truncated).toBe(true);
    expect(bucket.prefixLookup(prefix('zz'), 10, 1_000_000)).toEqual({ rows: [], truncated: false });
  });

  it('restores from the newest snapshot plus the changelog after it, on a new leader', async () => {
    const bucket = await open();
    const batch = (from: number, count: number, name: string) =>
      rows(Array.from({ length: count }, (_, index) => ({ tenant: `t${(from + index) % 7}`, id: from + index, name, score: from + index }))).map((row) => ({ kind: 'put' as const, row }));
    await bucket.write(batch(0, 500, 'v1'));
    const snapshot = await bucket.snapshot();
    expect(snapshot).toMatchObject({ appliedOffset: 500, streamEpoch: f.stream.streamEpoch });
    expect(getShardEntry(f.led.meta.view.buckets, f.stream.id)!.kvSnapshots.map((each) => each.object)).toEqual([snapshot!.object]);
    expect(await bucket.snapshot()).toBeNull(); // nothing changed since
    await bucket.write(batch(250, 500, 'v2'));
    await bucket.write(keys([{ tenant: 't0', id: 0 }]).map((key) => ({ kind: 'delete', key })));
    const expected = bucket.lookup(keys(Array.from({ length: 750 }, (_, id) => ({ tenant: `t${id % 7}`, id }))));
    await bucket.close({ finalSnapshot: false });

    const streamEpoch = await relead(f.led.meta, f.led, f.stream, '2', 1);
    const wal2 = new WalWriter({ nodeId: '2', nodeEpoch: 1, store: f.store, meta: f.led.meta, lingerMs: 1 });
    // The new leader is a fresh process: not even the parent of its tablet folders exists yet.
    const restored = await open({ nodeId: '2', wal: wal2, directory: join(f.folder, 'fresh-process', 'kv', 'tablet') }, streamEpoch);
    expect(restored.appliedOffset).toBe(500 + 750 + 1);
    expect(restored.lookup(keys(Array.from({ length: 750 }, (_, id) => ({ tenant: `t${id % 7}`, id }))))).toEqual(expected);
    expect(expected[0]).toBeNull();
    expect(expected[300]).toMatchObject({ name: 'v2' });
    expect(expected[100]).toMatchObject({ name: 'v1' });
    // The new leader writes on from the end of the changelog.
    expect(await restored.write(batch(900, 1, 'v3'))).toEqual({ operations: 1, baseOffset: 1251, count: 1 });
    await wal2.close();
  });

  it('keeps the newest two snapshots and refuses one from a deposed leader, deleting its upload', async () => {
    const bucket = await open();
    const objects: string[] = [];
    for (let round = 0; round < 3; round++) {
      await bucket.write(rows([{ tenant: 'a', id: round, name: `r${round}` }]).map((row) => ({ kind: 'put', row })));
      objects.push((await bucket.snapshot())!.object);
    }
    const view = f.led.meta.view;
    expect(getShardEntry(view.buckets, f.stream.id)!.kvSnapshots.map((each) => each.object)).toEqual(objects.slice(1));
    expect(getShardEntry(view.garbage, objects[0]!)).toBeDefined();

    await bucket.write(rows([{ tenant: 'a', id: 9, name: 'late' }]).map((row) => ({ kind: 'put', row })));
    await relead(f.led.meta, f.led, f.stream, '2', 1);
    const before = (await f.store.list('kv/')).length;
    const refused = await bucket.snapshot().catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(MinkError);
    expect((refused as MinkError).code).toBe('Fenced');
    expect((await f.store.list('kv/')).length).toBe(before);
  });

  it('folds in a commit whose acknowledgement was lost before it writes on', async () => {
    let loseNextReply = true;
    const lossy = {
      append: async (request: WalAppendRequest): Promise<WalAppendResult> => {
        const result = await f.wal.append(request);
        if (loseNextReply) {
          loseNextReply = false;
          throw new TimeoutError('the commit outcome was lost');
        }
        return result;
      },
    };
    const bucket = await open({ wal: lossy });
    await expect(bucket.write(rows([{ tenant: 'a', id: 1, name: 'committed' }]).map((row) => ({ kind: 'put', row })))).rejects.toBeInstanceOf(TimeoutError);
    // The record is in the changelog although the write failed; the next write replays it first.
    const next = await bucket.write(rows([{ tenant: 'a', id: 2, name: 'next' }]).map((row) => ({ kind: 'put', row })));
    expect(next).toEqual({ operations: 1, baseOffset: 1, count: 1 });
    expect(bucket.lookup(keys([{ tenant: 'a', id: 1 }, { tenant: 'a', id: 2 }])).map((row) => row?.name)).toEqual(['committed', 'next']);
  });

  it('pipelines groups: a write is planned on one still in the WAL, and both are in flight at once', async () => {
    const held: (() => void)[] = [];
    const gated = {
      append: async (request: WalAppendRequest): Promise<WalAppendResult> => {
        await new Promise<void>((release) => held.push(release));
        return f.wal.append(request);
      },
    };
    const bucket = await open({ wal: gated, groupCommit: PIPELINE_EVERY_REQUEST });
    const first = bucket.write(rows([{ tenant: 'a', id: 1, name: 'one', score: 1 }]).map((row) => ({ kind: 'put', row })));
    const partialColumns = ['tenant', 'id', 'score'];
    const second = bucket.write([{ kind: 'put', row: validateRows(COLUMNS, [{ tenant: 'a', id: 1, score: 5 }], { allowedColumns: partialColumns })[0]!, partialColumns }]);
    const third = bucket.write(keys([{ tenant: 'a', id: 1 }]).map((key) => ({ kind: 'delete', key })));
    await new Promise((resolve) => setImmediate(resolve));
    // All three groups went to the WAL before the first was committed; nothing is visible yet.
    expect(held).toHaveLength(3);
    expect(bucket.lookup(keys([{ tenant: 'a', id: 1 }]))).toEqual([null]);
    for (const release of held) release();
    expect(await Promise.all([first, second, third])).toEqual([
      { operations: 1, baseOffset: 0, count: 1 },
      { operations: 1, baseOffset: 1, count: 2 },
      { operations: 1, baseOffset: 3, count: 1 },
    ]);
    expect(bucket.lookup(keys([{ tenant: 'a', id: 1 }]))).toEqual([null]);
    // The partial put merged with the put before it, and the delete removed the merged row.
    expect(await changelog(f)).toEqual([
      ['+I', '1', 'one'],
      ['-U', '1', 'one'],
      ['+U', '1', 'one'],
      ['-D', '1', 'one'],
    ]);
  });

  it('sends small requests that arrive while a group is in flight together, as one group after it', async () => {
    // Proves the pipelining rule (LIMITS.pkGroupOperationsPipelined): requests of a few operations do not each
    // become a group and a WAL batch of their own while one is in flight; they wait, go as one batch, and each
    // is still answered with its own offsets.
    const held: (() => void)[] = [];
    const batches: number[] = [];
    const gated = {
      append: async (request: WalAppendRequest): Promise<WalAppendResult> => {
        batches.push(request.recordCount);
        await new Promise<void>((release) => held.push(release));
        return f.wal.append(request);
      },
    };
    const groups: [number, number][] = [];
    const observer = { restored: () => undefined, snapshotCommitted: () => undefined, groupStarted: (requests: number, operations: number) => groups.push([requests, operations]) };
    const bucket = await open({ wal: gated, observer });
    const put = (id: number) => bucket.write(rows([{ tenant: 'a', id, name: `n${id}` }]).map((row) => ({ kind: 'put', row })));
    const first = put(1);
    await new Promise((resolve) => setImmediate(resolve));
    const waiting = [put(2), put(3), put(4)];
    await new Promise((resolve) => setImmediate(resolve));
    expect(batches).toEqual([1]);
    held.shift()!();
    while (batches.length < 2) await new Promise((resolve) => setImmediate(resolve));
    expect(batches).toEqual([1, 3]);
    held.shift()!();
    expect(await Promise.all([first, ...waiting])).toEqual([
      { operations: 1, baseOffset: 0, count: 1 },
      { operations: 1, baseOffset: 1, count: 1 },
      { operations: 1, baseOffset: 2, count: 1 },
      { operations: 1, baseOffset: 3, count: 1 },
    ]);
    expect((await changelog(f)).map(([, id]) => id)).toEqual(['1', '2', '3', '4']);
    // The node's metrics see the same: a group of one request, then one of three.
    expect(groups).toEqual([
      [1, 1],
      [3, 3],
    ]);
  });

  it('refuses a group planned on one that failed, unwritten, and plans the next from the committed state', async () => {
    const held: (() => void)[] = [];
    const bucket = await open({ wal: heldWal(f, held), groupCommit: PIPELINE_EVERY_REQUEST });
    const lost = bucket.write(rows([{ tenant: 'a', id: 1, name: 'lost', score: 1 }]).map((row) => ({ kind: 'put', row })));
    const partialColumns = ['tenant', 'id', 'score'];
    const onLost = bucket.write([{ kind: 'put', row: validateRows(COLUMNS, [{ tenant: 'a', id: 1, score: 5 }], { allowedColumns: partialColumns })[0]!, partialColumns }]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(held).toHaveLength(2);
    for (const release of held.splice(0)) release();
    // The second was planned as an update of a row that never landed: the WAL writer refuses it at its offset.
    const results = await Promise.allSettled([lost, onLost]);
    expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected']);
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ code: 'Unavailable' });
    const next = bucket.write([{ kind: 'put', row: validateRows(COLUMNS, [{ tenant: 'a', id: 1, score: 9 }], { allowedColumns: partialColumns })[0]!, partialColumns }]);
    await new Promise((resolve) => setImmediate(resolve));
    for (const release of held.splice(0)) release();
    expect(await next).toEqual({ operations: 1, baseOffset: 0, count: 1 });
    expect(bucket.lookup(keys([{ tenant: 'a', id: 1 }]))).toEqual([{ tenant: 'a', id: '1', name: null, score: 9 }]);
    expect(await changelog(f)).toEqual([['+I', '1', null]]);
  });

  describe('numbered writes (several in flight per writer)', () => {
    const putName = (name: string) => rows([{ tenant: 'a', id: 1, name, score: 1 }]).map((row) => ({ kind: 'put' as const, row }));
    const writer = (seq: number, acked = -1) => ({ id: 'w', seq, acked });

    it('plans a writer in sequence order: one ahead of its predecessor is refused unwritten, a retry is answered from memory', async () => {
      const bucket = await open();
      await expect(bucket.write(putName('early'), writer(1))).rejects.toMatchObject({ code: 'Unavailable', details: { retryAfterMs: 0 } });
      const first = bucket.write(putName('v0'), writer(0));
      const second = bucket.write(putName('v1'), writer(1));
      // A retry of one still in flight gets the same outcome.
      const secondAgain = bucket.write(putName('v1'), writer(1));
      const outcomes = await Promise.all([first, second, secondAgain]);
      expect(outcomes).toEqual([
        { operations: 1, baseOffset: 0, count: 1 },
        { operations: 1, baseOffset: 1, count: 2 },
        { operations: 1, baseOffset: 1, count: 2 },
      ]);
      // A retry after a lost reply is answered, not written again.
      expect(await bucket.write(putName('v1'), writer(1, 0))).toEqual(outcomes[1]);
      expect(await changelog(f)).toEqual([
        ['+I', '1', 'v0'],
        ['-U', '1', 'v0'],
        ['+U', '1', 'v1'],
      ]);
      // A sequence older than what is remembered is the writer's bug.
      for (let seq = 2; seq < 8; seq++) await bucket.write(putName(`v${seq}`), writer(seq, seq - 1));
      await expect(bucket.write(putName('v0'), writer(0))).rejects.toMatchObject({ code: 'Conflict' });
      // Another writer has an order of its own.
      expect(await bucket.write(putName('other'), { id: 'x', seq: 0, acked: -1 })).toMatchObject({ count: 2 });
    });

    it('after a failure refuses the later requests still waiting and takes the failed one again first, so no retry is overtaken', async () => {
      const held: (() => void)[] = [];
      const bucket = await open({ wal: heldWal(f, held), groupCommit: PIPELINE_EVERY_REQUEST });
      // Four groups go to the WAL at once (LIMITS.pkGroupsInFlightMax); the fifth request waits to be planned.
      const sent = [0, 1, 2, 3, 4].map((seq) => bucket.write(putName(`v${seq}`), writer(seq)));
      await new Promise((resolve) => setImmediate(resolve));
      expect(held).toHaveLength(4);
      for (const release of held.splice(0)) release();
      const results = await Promise.allSettled(sent);
      expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected', 'rejected']);
      expect((results[4] as PromiseRejectedResult).reason).toMatchObject({ code: 'Unavailable', message: expect.stringContaining('sequence 0 of writer w failed') });
      expect(held).toHaveLength(0);
      // A later sequence waits for the failed one, even one that was never sent before.
      await expect(bucket.write(putName('v2'), writer(2))).rejects.toMatchObject({ code: 'Unavailable', details: { retryAfterMs: 0 } });
      await expect(bucket.write(putName('v5'), writer(5))).rejects.toMatchObject({ code: 'Unavailable' });
      // The client sends them again in order, from the failed one.
      const again = Promise.all([0, 1, 2, 3, 4].map((seq) => bucket.write(putName(`v${seq}`), writer(seq))));
      let done = false;
      void again.finally(() => (done = true));
      while (!done) {
        await new Promise((resolve) => setImmediate(resolve));
        for (const release of held.splice(0)) release();
      }
      expect((await again).map((outcome) => outcome.operations)).toEqual([1, 1, 1, 1, 1]);
      expect(bucket.lookup(keys([{ tenant: 'a', id: 1 }]))[0]).toMatchObject({ name: 'v4' });
      expect((await changelog(f)).filter(([type]) => type !== '-U').map(([, , name]) => name)).toEqual(['v0', 'v1', 'v2', 'v3', 'v4']);
    });
  });

  it('applies the merge engine of the table: a versioned put with a lower version changes nothing', async () => {
    await f.wal.close();
    await rm(f.folder, { recursive: true, force: true });
    f = await fixture({ ...TABLE, properties: { 'merge-engine': 'versioned', 'version-column': 'score' } });
    const bucket = await open();
    const put = (score: number, name: string) => bucket.write(rows([{ tenant: 'a', id: 1, name, score }]).map((row) => ({ kind: 'put', row })));
    await put(5, 'five');
    expect(await put(3, 'three')).toMatchObject({ count: 0 });
    await put(7, 'seven');
    expect(bucket.lookup(keys([{ tenant: 'a', id: 1 }]))[0]).toMatchObject({ name: 'seven', score: 7 });
    // Deletes are ignored by default for a versioned table.
    expect(await bucket.write(keys([{ tenant: 'a', id: 1 }]).map((key) => ({ kind: 'delete', key })))).toMatchObject({ count: 0 });
    expect(bucket.lookup(keys([{ tenant: 'a', id: 1 }]))[0]).toMatchObject({ name: 'seven' });
  });

  it('removes its tablet folder when it closes', async () => {
    const bucket = await open();
    await bucket.write(rows([{ tenant: 'a', id: 1, name: 'x' }]).map((row) => ({ kind: 'put', row })));
    await bucket.close({ finalSnapshot: true });
    expect(getShardEntry(f.led.meta.view.buckets, f.stream.id)!.kvSnapshots).toHaveLength(1);
    expect(await readdir(f.folder)).toEqual([]);
    await expect(bucket.write([])).rejects.toMatchObject({ code: 'Unavailable' });
  });
});
