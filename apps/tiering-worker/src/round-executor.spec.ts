import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { IcebergTable, LAKE_LIMITS, LakeCommitConflictError, type LakeIdSource, icebergSchemaOf } from '@mink/lake';
import type { ColumnSpec, TableRecord } from '@mink/meta';
import { InvalidArgumentError } from '@mink/protocol';
import { type Row, encodeBatch } from '@mink/records';
import { InMemoryObjectStore, type ObjectStore } from '@mink/s3stream';
import { type RoundResult, type TieringReadBatch, type TieringRoundDeps, type TieringRoundPlan, executeTieringRound } from './round-executor';

const COLUMNS: ColumnSpec[] = [
  { name: 'id', type: 'int64' },
  { name: 'name', type: 'string' },
];
const STORE_URI = 's3://mink-test';
const APPEND_TIME_MS = 1_750_000_000_000;

const TABLE: TableRecord = {
  id: 7,
  name: 'events',
  kind: 'log',
  columns: COLUMNS,
  primaryKey: [],
  bucketKey: [],
  buckets: 3,
  properties: { 'table.datalake.enabled': 'true' },
  createdAtMs: 0,
  partitions: [],
};

/** The value of `name` of the record at `offset` of `bucket`: every row says where it was stored. */
function nameOf(bucket: number, offset: number): string {
  return `b${bucket}-o${offset}`;
}

/**
 * The committed batches of each bucket, as a stream reader would return them: `read` gives the batch
 * holding `fromOffset` (it may start before it) and at most `batchesPerRead` batches, so long ranges take
 * several reads. Every call is recorded.
 */
class FakeStreams {
  private readonly batches = new Map<number, TieringReadBatch[]>();
  readonly reads: { bucket: number; fromOffset: number }[] = [];

  constructor(private readonly batchesPerRead = 2) {}

  /** Appends batches of the given record counts to `bucket`. */
  append(bucket: number, ...counts: number[]): this {
    const list = this.batches.get(bucket) ?? [];
    for (const count of counts) {
      const startOffset = list.at(-1)?.endOffset ?? 0;
      const rows: Row[] = Array.from({ length: count }, (_, index) => ({ id: BigInt(startOffset + index), name: nameOf(bucket, startOffset + index) }));
      list.push({ startOffset, endOffset: startOffset + count, payload: encodeBatch(COLUMNS, rows, APPEND_TIME_MS + startOffset) });
    }
    this.batches.set(bucket, list);
    return this;
  }

  read = async (bucket: number, fromOffset: number): Promise<{ batches: TieringReadBatch[] }> => {
    this.reads.push({ bucket, fromOffset });
    const list = this.batches.get(bucket) ?? [];
    const first = list.findIndex((batch) => batch.endOffset > fromOffset);
    return { batches: first < 0 ? [] : list.slice(first, first + this.batchesPerRead) };
  };
}

/** Ids and time that count up, so object names are the same in every run. */
function countingIds(): LakeIdSource {
  let uuids = 0;
  let snapshots = 1_000;
  let nowMs = 1_800_000_000_000;
  return {
    uuid: () => `00000000-0000-4000-8000-${String(++uuids).padStart(12, '0')}`,
    snapshotId: () => ++snapshots,
    nowMs: () => (nowMs += 1_000),
  };
}

interface Harness {
  store: InMemoryObjectStore;
  streams: FakeStreams;
  heartbeats: number;
  lines: { message: string; fields: Record<string, unknown> }[];
  deps: TieringRoundDeps;
}

function harness(streams: FakeStreams, overrides: Partial<TieringRoundDeps> = {}): Harness {
  const store = new InMemoryObjectStore();
  const state: Harness = {
    store,
    streams,
    heartbeats: 0,
    lines: [],
    deps: {
      store,
      storeUri: STORE_URI,
      table: TABLE,
      read: streams.read,
      heartbeat: async () => {
        state.heartbeats++;
      },
      log: (message, fields) => state.lines.push({ message, fields: fields as Record<string, unknown> }),
      ids: countingIds(),
      ...overrides,
    },
  };
  return state;
}

function plan(tieringEpoch: number, metadataKey: string | null, ranges: [bucket: number, startOffset: number, endOffset: number][]): TieringRoundPlan {
  return { tableId: TABLE.id, tableName: TABLE.name, tieringEpoch, metadataKey, ranges: ranges.map(([bucket, startOffset, endOffset]) => ({ bucket, startOffset, endOffset })) };
}

function metadataKeys(store: InMemoryObjectStore): string[] {
  return store.keys().filter((key) => key.endsWith('.metadata.json'));
}

/** DuckDB over local copies of the lake's live data files, found by walking metadata → manifest list → manifests. */
class LakeReader {
  private constructor(
    private readonly instance: DuckDBInstance,
    private readonly connection: DuckDBConnection,
    private readonly folder: string,
  ) {}

  static async open(): Promise<LakeReader> {
    const instance = await DuckDBInstance.create(':memory:');
    return new LakeReader(instance, await instance.connect(), mkdtempSync(join(tmpdir(), 'mink-tiering-duckdb-')));
  }

  /** Every row of the table at `metadataKey`, ordered by bucket and offset. */
  async rows(store: ObjectStore, metadataKey: string): Promise<{ id: string; name: string; __bucket: number; __offset: string }[]> {
    const table = new IcebergTable({ store, tableName: TABLE.name, storeUri: STORE_URI, schema: icebergSchemaOf(COLUMNS) });
    await table.load(metadataKey);
    const paths: string[] = [];
    for (const file of await table.dataFiles()) {
      const key = table.keyOf(file.path);
      const path = join(this.folder, key);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, await store.get(key));
      paths.push(`'${path.replace(/'/g, "''")}'`);
    }
    // The data folders are named `__bucket={b}`; hive partitioning is off so the files' own column is read.
    const sql = `select id, name, __bucket, __offset from read_parquet([${paths.join(', ')}], hive_partitioning = false) order by __bucket, __offset`;
    return (await this.connection.runAndReadAll(sql)).getRowObjectsJson() as never;
  }

  close(): void {
    this.connection.closeSync();
    this.instance.closeSync();
    rmSync(this.folder, { recursive: true, force: true });
  }
}

/** Checks each bucket's rows are its records [from, to) once each, in order, and names them by bucket and offset. */
function expectRecords(rows: Awaited<ReturnType<LakeReader['rows']>>, ranges: Record<number, [from: number, to: number]>): void {
  const expected = Object.entries(ranges).flatMap(([bucket, [from, to]]) =>
    Array.from({ length: to - from }, (_, index) => ({ id: String(from + index), name: nameOf(Number(bucket), from + index), __bucket: Number(bucket), __offset: String(from + index) })),
  );
  expect(rows).toEqual(expected);
}

describe('executeTieringRound', () => {
  let duck: LakeReader;
  beforeAll(async () => {
    duck = await LakeReader.open();
  });
  afterAll(() => duck.close());

  it('tiers two buckets over two rounds; DuckDB reads every record once, offsets contiguous per bucket', async () => {
    // Proves the round end to end: per bucket one data file named after the round, one append snapshot on
    // top of the plan's metadata, offsets merged over both rounds in the result and the snapshot summary,
    // no version hint, a heartbeat before every read, file and commit.
    const streams = new FakeStreams().append(0, 10, 10, 10, 10, 10, 5).append(1, 5, 20, 7);
    const state = harness(streams);
    const { store, deps } = state;

    const first = await executeTieringRound(deps, plan(1, null, [[0, 0, 30], [1, 0, 25]]));
    expect(first).toEqual<RoundResult>({
      committed: true,
      metadataKey: 'lake/events/metadata/v1-t7r1.metadata.json',
      snapshotId: '1001',
      offsets: { 0: 30, 1: 25 },
      rows: 55,
      bytes: expect.any(Number),
      sourceBytes: expect.any(Number),
      files: 2,
    });
    expect(store.keys().filter((key) => key.includes('/data/'))).toEqual([
      'lake/events/data/__bucket=0/t7r1-0-29-00000000-0000-4000-8000-000000000001.parquet',
      'lake/events/data/__bucket=1/t7r1-0-24-00000000-0000-4000-8000-000000000002.parquet',
    ]);
    expectRecords(await duck.rows(store, first.metadataKey), { 0: [0, 30], 1: [0, 25] });
    // Bucket 0: reads from 0 and 20 (two batches each); bucket 1: one read; then two files and the commit.
    expect(streams.reads).toEqual([{ bucket: 0, fromOffset: 0 }, { bucket: 0, fromOffset: 20 }, { bucket: 1, fromOffset: 0 }]);
    expect(state.heartbeats).toBe(3 + 2 + 1);

    const second = await executeTieringRound({ ...deps, ids: countingIds() }, plan(2, first.metadataKey, [[0, 30, 55], [1, 25, 25], [2, 0, 0]]));
    expect(second).toMatchObject({ committed: true, metadataKey: 'lake/events/metadata/v2-t7r2.metadata.json', offsets: { 0: 55, 1: 25, 2: 0 }, rows: 25, files: 1 });
    expectRecords(await duck.rows(store, second.metadataKey), { 0: [0, 55], 1: [0, 25] });
    const table = new IcebergTable({ store, tableName: 'events', storeUri: STORE_URI, schema: icebergSchemaOf(COLUMNS) });
    const loaded = await table.load(second.metadataKey);
    expect(loaded.currentSnapshot?.summary).toMatchObject({ operation: 'append', 'mink.offsets': '{"0":55,"1":25,"2":0}', 'mink.tiering-epoch': '2', 'mink.table-id': '7' });
    expect(String(loaded.currentSnapshot?.['snapshot-id'])).toBe(second.snapshotId);
    expect(store.keys().filter((key) => key.includes('version-hint'))).toEqual([]);
    expect(state.lines.map((line) => line.message)).toContain('tiering round stored a data file');
  });

  it('cuts a bucket range into files of at most fileSourceBytesMax and slices batches a range starts or ends in', async () => {
    // Proves memory stays bounded by the file cap (several files for one bucket, each within it) and that
    // ranges off batch boundaries tier exactly their records: the first batch read starts before the
    // range, the last one ends after it.
    const streams = new FakeStreams(3).append(0, 10, 10, 10, 10, 10, 10, 10, 10);
    const batchBytes = (await streams.read(0, 0)).batches[0]!.payload.byteLength;
    streams.reads.length = 0;
    const { store, deps, lines } = harness(streams, { fileSourceBytesMax: Math.floor(batchBytes * 2.5) });

    const result = await executeTieringRound(deps, plan(3, null, [[0, 5, 67]]));
    expect(result).toMatchObject({ committed: true, offsets: { 0: 67 }, rows: 62, files: 4 });
    expectRecords(await duck.rows(store, result.metadataKey), { 0: [5, 67] });
    const fileLines = lines.filter((line) => line.message === 'tiering round stored a data file').map((line) => [line.fields.fromOffset, line.fields.endOffset]);
    expect(fileLines).toEqual([[5, 20], [20, 40], [40, 60], [60, 67]]);
    expect(lines.at(-1)?.fields).toMatchObject({ rows: 62, files: 4 });
    const next = await executeTieringRound({ ...deps, ids: countingIds() }, plan(4, result.metadataKey, [[0, 67, 80]]));
    expectRecords(await duck.rows(store, next.metadataKey), { 0: [5, 80] });
  });

  it('stops at once when a heartbeat throws: the error propagates, nothing more is read or written, no metadata exists', async () => {
    // Proves a fenced round cannot commit: the heartbeat before the second bucket's read fails, and the
    // executor neither reads on nor stores another object; only the first bucket's data file, under the
    // round's own name, is left for garbage collection.
    const streams = new FakeStreams().append(0, 10).append(1, 10);
    const fenced = new Error('round 5 was fenced');
    let beats = 0;
    const { store, deps } = harness(streams, {
      heartbeat: async () => {
        if (++beats === 3) throw fenced;
      },
    });

    await expect(executeTieringRound(deps, plan(5, null, [[0, 0, 10], [1, 0, 10]]))).rejects.toBe(fenced);
    expect(beats).toBe(3);
    expect(streams.reads).toEqual([{ bucket: 0, fromOffset: 0 }]);
    expect(metadataKeys(store)).toEqual([]);
    expect(store.keys()).toEqual([expect.stringMatching(/^lake\/events\/data\/__bucket=0\/t7r5-0-9-.*\.parquet$/)]);
  });

  it('does not commit when the heartbeat before the commit throws', async () => {
    // Proves the last check: every file is stored, but a round fenced right before its Iceberg commit writes no metadata.
    const streams = new FakeStreams().append(0, 10);
    let beats = 0;
    const { store, deps } = harness(streams, {
      heartbeat: async () => {
        if (++beats === 3) throw new Error('fenced before the commit');
      },
    });
    await expect(executeTieringRound(deps, plan(6, null, [[0, 0, 10]]))).rejects.toThrow('fenced before the commit');
    expect(metadataKeys(store)).toEqual([]);
    expect(store.keys()).toHaveLength(1);
  });

  it('treats an empty round as a no-op: nothing read or written, the base metadata and snapshot returned', async () => {
    // Proves the documented choice for a round whose ranges are all empty: no object is written and no
    // batch read, and the result names the plan's metadata and snapshot (committed: false) so the caller can
    // still close the round in the log; the offsets are the base's with the empty ranges' ends, as the log
    // records them.
    const streams = new FakeStreams().append(0, 10);
    const { store, deps } = harness(streams);
    const base = await executeTieringRound(deps, plan(1, null, [[0, 0, 10]]));
    const calls = store.calls;
    streams.reads.length = 0;

    const result = await executeTieringRound({ ...deps, ids: countingIds() }, plan(2, base.metadataKey, [[0, 10, 10], [1, 0, 0]]));
    expect(result).toEqual<RoundResult>({ committed: false, metadataKey: base.metadataKey, snapshotId: base.snapshotId, offsets: { 0: 10, 1: 0 }, rows: 0, bytes: 0, sourceBytes: 0, files: 0 });
    expect(store.calls.put).toBe(calls.put);
    expect(streams.reads).toEqual([]);
  });

  it('refuses an empty round of a table with no lake metadata yet, writing nothing', async () => {
    // Proves there is never a result without a metadata key to record: such a round has nothing to commit.
    const { store, deps } = harness(new FakeStreams());
    await expect(executeTieringRound(deps, plan(1, null, [[0, 0, 0]]))).rejects.toThrow(InvalidArgumentError);
    await expect(executeTieringRound(deps, plan(1, null, []))).rejects.toThrow('tiers no record and the lake has no snapshot yet');
    expect(store.calls.put).toBe(0);
  });

  it.each<[string, Partial<TableRecord>, RegExp]>([
    ['a primary-key table', { kind: 'pk', primaryKey: ['id'] }, /has a primary key: tiering primary-key tables .* is not built yet/],
    ['a Kafka topic', { properties: { 'table.log.format': 'kafka' } }, /stores Kafka record batches/],
    ['a partitioned table', { partition: { column: 'at', unit: 'day' } }, /is partitioned/],
    ['a table dropped and created again under the name', { id: 8 }, /with id 7, not of 'events' with id 8/],
  ])('refuses %s before touching the store', async (_case, table, message) => {
    // Proves the tables the executor cannot tier are refused as InvalidArgumentError with a clear reason.
    const { store, deps } = harness(new FakeStreams().append(0, 10), { table: { ...TABLE, ...table } });
    const error = await executeTieringRound(deps, plan(1, null, [[0, 0, 10]])).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(String(error)).toMatch(message);
    expect(store.calls).toEqual({ put: 0, get: 0, delete: 0, list: 0 });
  });

  it.each<[string, [number, number, number][], RegExp]>([
    ['a bucket the table does not have', [[3, 0, 1]], /bucket 3 is not a bucket of 'events' \(3 buckets\)/],
    ['a bucket twice', [[0, 0, 5], [0, 5, 10]], /bucket 0 twice/],
    ['a range ending before it starts', [[0, 5, 4]], /\[5, 4\) of bucket 0/],
    ['a fractional offset', [[0, 0, 4.5]], /\[0, 4.5\) of bucket 0/],
  ])('refuses a plan with %s', async (_case, ranges, message) => {
    // Proves malformed plans fail as InvalidArgumentError before anything is read.
    const { deps, streams } = harness(new FakeStreams().append(0, 10));
    const error = await executeTieringRound(deps, plan(1, null, ranges)).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(String(error)).toMatch(message);
    expect(streams.reads).toEqual([]);
  });

  it.each<[string, (streams: FakeStreams) => TieringRoundDeps['read'], number, RegExp]>([
    ['a gap', (streams) => async (bucket, from) => ({ batches: (await streams.read(bucket, from)).batches.filter((batch) => batch.startOffset !== 10) }), 30, /from offset 10 gave the batch \[20, 30\): a gap/],
    ['nothing though the range goes on', () => async () => ({ batches: [] }), 30, /gave no batch holding it, though round 1 tiers it up to 30/],
    [
      'a batch holding fewer records than its offsets say',
      (streams) => async (bucket, from) => ({ batches: (await streams.read(bucket, from)).batches.slice(0, 1).map((batch) => ({ ...batch, endOffset: 12 })) }),
      12,
      /for offsets \[0, 12\) hold 10 records at offsets 0..9/,
    ],
    [
      'a batch holding more records than its offsets say',
      (streams) => async (bucket, from) => ({ batches: (await streams.read(bucket, from)).batches.slice(0, 1).map((batch) => ({ ...batch, endOffset: 8 })) }),
      8,
      /for offsets \[0, 8\) hold 10 records at offsets 0..9/,
    ],
  ])('fails on a read that gives %s, without committing', async (_case, read, endOffset, message) => {
    // Proves a stream that breaks its contract fails the round loudly instead of tiering wrong offsets.
    const streams = new FakeStreams().append(0, 10, 10, 10);
    const { store, deps } = harness(streams);
    await expect(executeTieringRound({ ...deps, read: read(streams) }, plan(1, null, [[0, 0, endOffset]]))).rejects.toThrow(message);
    expect(metadataKeys(store)).toEqual([]);
  });

  it("fails when the plan does not start a bucket where the lake's metadata has it tiered to", async () => {
    // Proves the plan and the lake are checked against each other (a broken invariant: the view records both).
    const streams = new FakeStreams().append(0, 10, 10);
    const { deps } = harness(streams);
    const first = await executeTieringRound(deps, plan(1, null, [[0, 0, 10]]));
    await expect(executeTieringRound({ ...deps, ids: countingIds() }, plan(2, first.metadataKey, [[0, 5, 20]]))).rejects.toThrow(
      "bucket 0 of 'events' is tiered up to 10 in lake/events/metadata/v1-t7r1.metadata.json, but round 2 starts it at 5",
    );
  });

  it('refuses to commit one epoch twice on one base, and lets the next epoch commit beside it', async () => {
    // Proves a retried round must come with a new tiering epoch: the same tag meets the metadata it wrote
    // before (LakeCommitConflictError), a new one writes its own v{N}-r{epoch} next to it.
    const streams = new FakeStreams().append(0, 10);
    const { store, deps } = harness(streams);
    await executeTieringRound(deps, plan(1, null, [[0, 0, 10]]));
    await expect(executeTieringRound({ ...deps, ids: countingIds() }, plan(1, null, [[0, 0, 10]]))).rejects.toBeInstanceOf(LakeCommitConflictError);
    const retried = await executeTieringRound({ ...deps, ids: countingIds() }, plan(2, null, [[0, 0, 10]]));
    expect(metadataKeys(store)).toEqual(['lake/events/metadata/v1-t7r1.metadata.json', 'lake/events/metadata/v1-t7r2.metadata.json']);
    expectRecords(await duck.rows(store, retried.metadataKey), { 0: [0, 10] });
  });

  it("takes the store URI from an S3ObjectStore's bucket and prefix, and refuses a store with neither", async () => {
    // Proves the worker can pass its cluster object store as it is: locations are recorded under s3://{bucket}/{prefix}.
    const streams = new FakeStreams().append(0, 3);
    const { store, deps } = harness(streams, { storeUri: undefined });
    const s3Like = Object.assign(Object.create(store) as InMemoryObjectStore, { bucket: 'mink', prefix: 'cluster-a/' });
    const result = await executeTieringRound({ ...deps, store: s3Like }, plan(1, null, [[0, 0, 3]]));
    const metadata = JSON.parse(Buffer.from(await store.get(result.metadataKey)).toString()) as { location: string };
    expect(metadata.location).toBe('s3://mink/cluster-a/lake/events');
    await expect(executeTieringRound(deps, plan(2, result.metadataKey, [[0, 3, 3]]))).rejects.toThrow('pass storeUri');
  });

  it('refuses a file cap above the lake writer’s own', async () => {
    // Proves the memory bound cannot be raised past LAKE_LIMITS.parquetSourceBytesMax by a caller.
    const { deps } = harness(new FakeStreams().append(0, 1), { fileSourceBytesMax: LAKE_LIMITS.parquetSourceBytesMax + 1 });
    await expect(executeTieringRound(deps, plan(1, null, [[0, 0, 1]]))).rejects.toBeInstanceOf(InvalidArgumentError);
  });
});
