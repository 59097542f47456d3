import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import {
  type DataFile,
  IcebergTable,
  LAKE_LIMITS,
  LAKE_OFFSET_COLUMN,
  LakeBucketTooLargeError,
  LakeCommitConflictError,
  type LakeIdSource,
  fieldNamed,
  icebergSchemaOf,
  lakeBatchesOfParquet,
  longOfBound,
  recordBatchBytes,
} from '@mink/lake';
import type { ColumnSpec, TableRecord } from '@mink/meta';
import { InvalidArgumentError } from '@mink/protocol';
import { type ChangeType, type Row, encodeBatch } from '@mink/records';
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
    return (await this.select(store, metadataKey, TABLE, 'id, name, __bucket, __offset')) as never;
  }

  /** `select` (a column list) over every row of `table`'s lake at `metadataKey`, as JSON-friendly values, ordered by bucket and offset. */
  async select(store: ObjectStore, metadataKey: string, of: TableRecord, select: string): Promise<Record<string, unknown>[]> {
    const table = new IcebergTable({ store, tableName: of.name, storeUri: STORE_URI, schema: icebergSchemaOf(of.columns, of.primaryKey) });
    await table.load(metadataKey);
    const paths: string[] = [];
    for (const file of await table.dataFiles()) {
      const key = table.keyOf(file.path);
      const path = join(this.folder, key);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, await store.get(key));
      paths.push(`'${path.replace(/'/g, "''")}'`);
    }
    if (paths.length === 0) return [];
    // The data folders are named `__bucket={b}`; hive partitioning is off so the files' own column is read.
    const sql = `select ${select} from read_parquet([${paths.join(', ')}], hive_partitioning = false) order by __bucket, __offset`;
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
      removedFiles: 0,
      compactedFiles: 0,
      compactedBytes: 0,
      compactionSourceBytes: 0,
      compactedRows: 0,
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
    expect(result).toEqual<RoundResult>({ committed: false, metadataKey: base.metadataKey, snapshotId: base.snapshotId, offsets: { 0: 10, 1: 0 }, rows: 0, bytes: 0, sourceBytes: 0, files: 0, removedFiles: 0, compactedFiles: 0, compactedBytes: 0, compactionSourceBytes: 0, compactedRows: 0 });
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
    ['a primary-key table without a primary key', { kind: 'pk' }, /of kind 'pk' with 0 primary key columns/],
    ['a log table with a primary key', { primaryKey: ['id'] }, /of kind 'log' with 1 primary key columns/],
    ['a Kafka topic', { properties: { 'table.log.format': 'kafka' } }, /stores Kafka record batches/],
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
    ['a bucket the table does not have', [[3, 0, 1]], /bucket 3 is not a lake bucket of 'events' \(3 buckets\)/],
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

// Log tables: small-file compaction, run by the round that tiers a bucket with too many small files.

/** The live data files of the lake at `metadataKey`, per bucket, in offset order. */
async function liveFilesOf(store: ObjectStore, metadataKey: string): Promise<Map<number, DataFile[]>> {
  const schema = icebergSchemaOf(COLUMNS);
  const table = new IcebergTable({ store, tableName: TABLE.name, storeUri: STORE_URI, schema });
  await table.load(metadataKey);
  const offsetField = fieldNamed(schema, LAKE_OFFSET_COLUMN).id;
  const firstOffset = (file: DataFile) => longOfBound(file.lowerBounds.get(offsetField)!);
  const byBucket = new Map<number, DataFile[]>();
  for (const file of (await table.dataFiles()).sort((left, right) => firstOffset(left) - firstOffset(right))) byBucket.set(file.bucket, [...(byBucket.get(file.bucket) ?? []), file]);
  return byBucket;
}

/** Bytes of Arrow data a stored data file decodes to, as compaction measures it against arrowBytesMax. */
async function arrowBytesOf(store: ObjectStore, file: DataFile): Promise<number> {
  const bytes = await store.get(file.path.slice(`${STORE_URI}/`.length));
  return lakeBatchesOfParquet(icebergSchemaOf(COLUMNS), bytes).reduce((total, batch) => total + recordBatchBytes(batch), 0);
}

describe('executeTieringRound: compaction of a log table', () => {
  let duck: LakeReader;
  beforeAll(async () => {
    duck = await LakeReader.open();
  });
  afterAll(() => duck.close());

  it('rewrites a bucket whose small files outnumber smallFilesMax into one file, the new records included unstored; every record stays once', async () => {
    // Proves the compaction rule over nine rounds of two buckets: a bucket never keeps more small files
    // than the bound, the round that compacts replaces the bucket's files in its own snapshot (overwrite),
    // its new records go straight into the rewritten file (no separate object), and DuckDB reads every
    // record exactly once after every round.
    const streams = new FakeStreams(100);
    const { store, deps, lines } = harness(streams, { logCompactionBounds: { smallFilesMax: 3 } });
    let metadataKey: string | null = null;
    const ends = [0, 0];
    for (let round = 1; round <= 9; round++) {
      const ranges: [number, number, number][] = [];
      streams.append(0, 10);
      ranges.push([0, ends[0]!, (ends[0] = ends[0]! + 10)]);
      if (round % 2 === 0) {
        streams.append(1, 5);
        ranges.push([1, ends[1]!, (ends[1] = ends[1]! + 5)]);
      }
      const result = await executeTieringRound(deps, plan(round, metadataKey, ranges));
      metadataKey = result.metadataKey;
      const live = await liveFilesOf(store, metadataKey);
      for (const files of live.values()) expect(files.length).toBeLessThanOrEqual(3);
      expectRecords(await duck.rows(store, metadataKey), ends[1] === 0 ? { 0: [0, ends[0]!] } : { 0: [0, ends[0]!], 1: [0, ends[1]!] });
      // Bucket 0 gets a file every round: the fourth small file makes it compact, the first time 3 old files (30 rows), then 3 again (the last rewritten one and two more).
      const replaced = (round === 4 ? 3 : round === 7 ? 3 : 0) + (round === 8 ? 3 : 0);
      expect(result).toMatchObject({ committed: true, removedFiles: replaced, compactedFiles: replaced > 0 ? 1 : 0, compactedRows: round === 4 ? 30 : round === 7 ? 60 : round === 8 ? 15 : 0 });
      // The round's own records are counted as written once, whether stored alone or taken into the rewritten file.
      expect(result).toMatchObject({ rows: round % 2 === 0 ? 15 : 10, files: round % 2 === 0 ? 2 : 1 });
      if (replaced > 0) expect(result.compactionSourceBytes).toBeGreaterThan(0);
      if (replaced > 0) {
        const table = new IcebergTable({ store, tableName: TABLE.name, storeUri: STORE_URI, schema: icebergSchemaOf(COLUMNS) });
        expect((await table.load(metadataKey)).currentSnapshot?.summary).toMatchObject({ operation: 'overwrite', 'deleted-data-files': String(replaced) });
      }
    }
    // Round 4 stored exactly one object for bucket 0: the rewritten file; its own records never had one of their own.
    expect(store.keys().filter((key) => key.startsWith('lake/events/data/__bucket=0/t7r4-'))).toEqual([expect.stringMatching(/^lake\/events\/data\/__bucket=0\/t7r4-0-39-/)]);
    expect(lines.filter((line) => line.message === 'tiering round compacted log files of a bucket').map((line) => [line.fields.bucket, line.fields.replacedFiles, line.fields.fromOffset, line.fields.endOffset])).toEqual([
      [0, 4, 0, 40],
      [0, 4, 0, 70],
      [1, 4, 0, 20],
    ]);
  });

  it('cuts a run at arrowBytesMax into several files and leaves a file that alone is beyond it as it is', async () => {
    // Proves memory stays within the bound: two small files join while their Arrow data fits, a file
    // whose decoded rows exceed the bound is logged and kept, and the records stay exactly once.
    const streams = new FakeStreams(100);
    const { store, deps, lines } = harness(streams, { logCompactionBounds: { smallFilesMax: 4 } });
    let metadataKey: string | null = null;
    let end = 0;
    for (const [round, count] of [[1, 10], [2, 10], [3, 100], [4, 10]] as const) {
      streams.append(0, count);
      metadataKey = (await executeTieringRound(deps, plan(round, metadataKey, [[0, end, (end += count)]]))).metadataKey;
    }
    const files = (await liveFilesOf(store, metadataKey!)).get(0)!;
    expect(files).toHaveLength(4);
    const sizes = await Promise.all(files.map((file) => arrowBytesOf(store, file)));
    const arrowBytesMax = Math.floor(1.5 * (sizes[0]! + sizes[1]!));
    expect(sizes[2]!).toBeGreaterThan(arrowBytesMax);

    streams.append(0, 10);
    const fifth = await executeTieringRound({ ...deps, logCompactionBounds: { smallFilesMax: 4, arrowBytesMax } }, plan(5, metadataKey, [[0, end, (end += 10)]]));
    expect(fifth).toMatchObject({ removedFiles: 3, compactedFiles: 2, compactedRows: 30 });
    const after = (await liveFilesOf(store, fifth.metadataKey)).get(0)!;
    expect(after.map((file) => file.recordCount).sort((a, b) => a - b)).toEqual([20, 20, 100]);
    expect(lines.filter((line) => line.message.startsWith('tiering round left a log file uncompacted')).map((line) => line.fields)).toEqual([
      expect.objectContaining({ bucket: 0, arrowBytes: sizes[2], arrowBytesMax }),
    ]);
    expectRecords(await duck.rows(store, fifth.metadataKey), { 0: [0, end] });
  });

  it('does not commit the small files a round stored before its last one when it rewrites them', async () => {
    // Proves a round cut into several files by fileSourceBytesMax commits only the rewritten file: the
    // earlier ones, already stored, are left unreferenced (for the orphan sweep), and nothing is counted twice.
    const streams = new FakeStreams(100).append(0, 10, 10, 10);
    const batchBytes = (await streams.read(0, 0)).batches[0]!.payload.byteLength;
    const { store, deps } = harness(streams, { fileSourceBytesMax: Math.floor(batchBytes * 1.5), logCompactionBounds: { smallFilesMax: 2 } });
    const result = await executeTieringRound(deps, plan(1, null, [[0, 0, 30]]));
    expect(result).toMatchObject({ committed: true, rows: 30, files: 3, removedFiles: 0, compactedFiles: 1, compactedRows: 0, compactionSourceBytes: expect.any(Number) });
    expect((await liveFilesOf(store, result.metadataKey)).get(0)!.map((file) => file.recordCount)).toEqual([30]);
    expect(store.keys().filter((key) => key.includes('/data/'))).toHaveLength(3);
    expectRecords(await duck.rows(store, result.metadataKey), { 0: [0, 30] });
  });

  it('stops without committing when a heartbeat fails while it reads old files back', async () => {
    // Proves compaction is part of the fenced round: nothing of it becomes current.
    const streams = new FakeStreams(100);
    let failAt = Number.POSITIVE_INFINITY;
    let beats = 0;
    const { store, deps } = harness(streams, {
      logCompactionBounds: { smallFilesMax: 2 },
      heartbeat: async () => {
        if (++beats === failAt) throw new Error('fenced while compacting');
      },
    });
    let metadataKey: string | null = null;
    for (let round = 1; round <= 2; round++) {
      streams.append(0, 10);
      metadataKey = (await executeTieringRound(deps, plan(round, metadataKey, [[0, (round - 1) * 10, round * 10]]))).metadataKey;
    }
    streams.append(0, 10);
    // Round 3: the live files, the read, then the first old file read back.
    failAt = beats + 3;
    await expect(executeTieringRound(deps, plan(3, metadataKey, [[0, 20, 30]]))).rejects.toThrow('fenced while compacting');
    expect(metadataKeys(store)).toEqual(['lake/events/metadata/v1-t7r1.metadata.json', 'lake/events/metadata/v2-t7r2.metadata.json']);
  });

  it.each<[string, Record<string, number>]>([
    ['more small files kept than LAKE_LIMITS allows', { smallFilesMax: LAKE_LIMITS.logCompactionSmallFilesMax + 1 }],
    ['a larger small-file size', { smallFileBytes: LAKE_LIMITS.logCompactionSmallFileBytes + 1 }],
    ['more memory', { arrowBytesMax: LAKE_LIMITS.logCompactionArrowBytesMax + 1 }],
    ['no memory', { arrowBytesMax: 0 }],
    ['a bound that does not exist', { filesMax: 3 }],
  ])('refuses compaction bounds with %s before touching the store', async (_case, bounds) => {
    // Proves a caller can only tighten the bounds of LAKE_LIMITS, never loosen them.
    const { store, deps } = harness(new FakeStreams().append(0, 1), { logCompactionBounds: bounds });
    await expect(executeTieringRound(deps, plan(1, null, [[0, 0, 1]]))).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(store.calls).toEqual({ put: 0, get: 0, delete: 0, list: 0 });
  });
});

// Primary-key tables: the lake holds each bucket's merged state, one data file per bucket, replaced by every round that changes the bucket.

const PK_COLUMNS: ColumnSpec[] = [
  { name: 'id', type: 'int64' },
  { name: 'name', type: 'string' },
  { name: 'score', type: 'int32' },
];
const PK_TABLE: TableRecord = { ...TABLE, id: 9, name: 'accounts', kind: 'pk', columns: PK_COLUMNS, primaryKey: ['id'], bucketKey: ['id'], buckets: 2 };

/** A put of a whole row, or a delete of a key; `key` is the row's primary key values in column order. */
type PkOperation = { put: Row } | { delete: Row };

/** One record of a changelog as the fake wrote it. */
interface ChangeEntry {
  offset: number;
  changeType: ChangeType;
  row: Row;
  timeMs: number;
}

/**
 * Each bucket's changelog as a last-write-wins bucket writes it (packages/pk `planBatch`): a new key `+I`,
 * a put of a live key `-U` of the old row then `+U` of the new, a delete of a live key `-D` of its row, a
 * delete of a missing key nothing; one stored batch per `write`, all its records at one append time.
 * `expectedAt` is the oracle: the fold of the records below given offsets, written independently of the
 * executor (a plain Map per bucket).
 */
class FakeChangelog {
  private readonly batches = new Map<number, TieringReadBatch[]>();
  private readonly entries = new Map<number, ChangeEntry[]>();
  private readonly live = new Map<number, Map<string, Row>>();
  private clockMs = APPEND_TIME_MS;

  constructor(
    private readonly table: TableRecord,
    private readonly batchesPerRead = 2,
  ) {}

  write(bucket: number, ...operations: PkOperation[]): this {
    const live = this.live.get(bucket) ?? new Map<string, Row>();
    this.live.set(bucket, live);
    const entries = this.entries.get(bucket) ?? [];
    this.entries.set(bucket, entries);
    const startOffset = this.end(bucket);
    const timeMs = (this.clockMs += 1_000);
    const records: { changeType: ChangeType; row: Row }[] = [];
    for (const operation of operations) {
      const key = 'put' in operation ? operation.put : operation.delete;
      const text = this.keyText(key);
      const current = live.get(text);
      if ('put' in operation) {
        if (current === undefined) records.push({ changeType: '+I', row: operation.put });
        else records.push({ changeType: '-U', row: current }, { changeType: '+U', row: operation.put });
        live.set(text, operation.put);
      } else if (current !== undefined) {
        records.push({ changeType: '-D', row: current });
        live.delete(text);
      }
    }
    if (records.length === 0) return this;
    records.forEach((record, index) => entries.push({ offset: startOffset + index, timeMs, ...record }));
    const list = this.batches.get(bucket) ?? [];
    list.push({
      startOffset,
      endOffset: startOffset + records.length,
      payload: encodeBatch(
        this.table.columns,
        records.map((record) => record.row),
        timeMs,
        records.map((record) => record.changeType),
      ),
    });
    this.batches.set(bucket, list);
    return this;
  }

  end(bucket: number): number {
    return this.batches.get(bucket)?.at(-1)?.endOffset ?? 0;
  }

  /** Per bucket, each live key's row after the records below `ends[bucket]`, with the offset and time of its last change, ordered by offset. */
  expectedAt(ends: Record<number, number>): { bucket: number; offset: number; timeMs: number; row: Row }[] {
    const rows: { bucket: number; offset: number; timeMs: number; row: Row }[] = [];
    for (const [bucket, end] of Object.entries(ends).map(([bucket, end]) => [Number(bucket), end] as const)) {
      const state = new Map<string, ChangeEntry>();
      for (const entry of this.entries.get(bucket) ?? []) {
        if (entry.offset >= end) break;
        const text = this.keyText(entry.row);
        if (entry.changeType === '+I' || entry.changeType === '+U') {
          state.delete(text);
          state.set(text, entry);
        } else if (entry.changeType === '-D') state.delete(text);
      }
      for (const entry of state.values()) rows.push({ bucket, offset: entry.offset, timeMs: entry.timeMs, row: entry.row });
    }
    return rows.sort((left, right) => left.bucket - right.bucket || left.offset - right.offset);
  }

  read = async (bucket: number, fromOffset: number): Promise<{ batches: TieringReadBatch[] }> => {
    const list = this.batches.get(bucket) ?? [];
    const first = list.findIndex((batch) => batch.endOffset > fromOffset);
    return { batches: first < 0 ? [] : list.slice(first, first + this.batchesPerRead) };
  };

  private keyText(row: Row): string {
    return JSON.stringify(this.table.primaryKey.map((name) => String(row[name])));
  }
}

function pkPlan(table: TableRecord, tieringEpoch: number, metadataKey: string | null, ranges: [bucket: number, startOffset: number, endOffset: number][]): TieringRoundPlan {
  return { tableId: table.id, tableName: table.name, tieringEpoch, metadataKey, ranges: ranges.map(([bucket, startOffset, endOffset]) => ({ bucket, startOffset, endOffset })) };
}

function pkHarness(changelog: FakeChangelog, table: TableRecord, overrides: Partial<TieringRoundDeps> = {}): Harness {
  return harness(new FakeStreams(), { table, read: changelog.read, ...overrides });
}

function account(id: number, name: string | null, score: number | null): Row {
  return { id: BigInt(id), name, score };
}

const put = (id: number, name: string | null, score: number | null): PkOperation => ({ put: account(id, name, score) });
const remove = (id: number): PkOperation => ({ delete: { id: BigInt(id) } });

/** The live data files of `table`'s lake at `metadataKey`, as store keys. */
async function liveFileKeys(store: InMemoryObjectStore, table: TableRecord, metadataKey: string): Promise<{ bucket: number; key: string; rows: number }[]> {
  const lake = new IcebergTable({ store, tableName: table.name, storeUri: STORE_URI, schema: icebergSchemaOf(table.columns, table.primaryKey) });
  await lake.load(metadataKey);
  return (await lake.dataFiles()).map((file) => ({ bucket: file.bucket, key: lake.keyOf(file.path), rows: file.recordCount })).sort((left, right) => left.bucket - right.bucket);
}

describe('executeTieringRound of a primary-key table (merged state, copy-on-write per bucket)', () => {
  let duck: LakeReader;
  beforeAll(async () => {
    duck = await LakeReader.open();
  });
  afterAll(() => duck.close());

  /** The accounts lake as DuckDB reads it, beside what the changelog says it must hold. */
  async function expectAccounts(store: InMemoryObjectStore, metadataKey: string, changelog: FakeChangelog, ends: Record<number, number>): Promise<void> {
    const rows = await duck.select(store, metadataKey, PK_TABLE, 'id, name, score, __bucket, __offset, epoch_ms(__timestamp) as time_ms');
    const expected = changelog.expectedAt(ends).map(({ bucket, offset, timeMs, row }) => ({
      id: String(row.id),
      name: row.name,
      score: row.score,
      __bucket: bucket,
      __offset: String(offset),
      time_ms: String(timeMs),
    }));
    expect(rows).toEqual(expected);
    // One row per live key.
    expect(new Set(rows.map((row) => row.id)).size).toBe(rows.length);
  }

  it('merges puts, updates, deletes and re-inserts over three rounds: DuckDB sees exactly the final state, replaced files are no longer listed', async () => {
    // Proves the copy-on-write round: per changed bucket ONE new file holding one row per live key with the
    // offset and append time of its last change, replacing the bucket's old file in the same snapshot; an
    // untouched bucket keeps its file; a range that starts or ends inside a stored batch tiers exactly its
    // changes (round 1 stops between the -U/+U of key 2 and the -D of key 3).
    const changelog = new FakeChangelog(PK_TABLE)
      .write(0, put(1, 'a', 10), put(2, 'b', 20), put(3, 'c', 30)) // 0..2
      .write(0, put(2, 'b2', 21), remove(3), put(4, 'd', 40)) // -U 3, +U 4, -D 5, +I 6
      .write(0, put(5, 'e', null), put(6, null, 60)) // 7, 8
      .write(1, put(10, 'x', 1), put(11, 'y', 2)); // 0, 1
    const { store, deps, lines } = pkHarness(changelog, PK_TABLE);

    const first = await executeTieringRound(deps, pkPlan(PK_TABLE, 1, null, [[0, 0, 5], [1, 0, 2]]));
    expect(first).toEqual<RoundResult>({
      committed: true,
      metadataKey: 'lake/accounts/metadata/v1-t9r1.metadata.json',
      snapshotId: expect.any(String),
      offsets: { 0: 5, 1: 2 },
      rows: 5,
      bytes: expect.any(Number),
      sourceBytes: expect.any(Number),
      files: 2,
      removedFiles: 0,
      compactedFiles: 0,
      compactedBytes: 0,
      compactionSourceBytes: 0,
      compactedRows: 0,
    });
    await expectAccounts(store, first.metadataKey, changelog, { 0: 5, 1: 2 });
    const firstFiles = await liveFileKeys(store, PK_TABLE, first.metadataKey);
    expect(firstFiles).toEqual([
      { bucket: 0, key: expect.stringMatching(/^lake\/accounts\/data\/__bucket=0\/t9r1-0-4-/), rows: 3 },
      { bucket: 1, key: expect.stringMatching(/^lake\/accounts\/data\/__bucket=1\/t9r1-0-1-/), rows: 2 },
    ]);

    // Round 2: key 3 is deleted (offset 5) and re-inserted, 1 updated, 4 deleted, 7 new; bucket 1 has nothing new.
    changelog.write(0, put(1, 'a2', 11), remove(4), put(3, 'c2', 31), put(7, 'g', 70));
    const second = await executeTieringRound({ ...deps, ids: countingIds() }, pkPlan(PK_TABLE, 2, first.metadataKey, [[0, 5, changelog.end(0)], [1, 2, 2]]));
    expect(second).toMatchObject({ committed: true, offsets: { 0: changelog.end(0), 1: 2 }, files: 1, removedFiles: 1 });
    await expectAccounts(store, second.metadataKey, changelog, { 0: changelog.end(0), 1: 2 });
    const secondFiles = await liveFileKeys(store, PK_TABLE, second.metadataKey);
    expect(secondFiles.map((file) => file.key)).not.toContain(firstFiles[0]!.key);
    expect(secondFiles[1]).toEqual(firstFiles[1]);
    expect(secondFiles).toHaveLength(2);

    // Round 3: both buckets change; key 5 deleted, 3 and 7 updated again, 10 deleted, 11 updated, 12 new.
    changelog.write(0, remove(5), put(3, 'c3', 32)).write(0, put(7, 'g2', 71)).write(1, remove(10), put(11, 'y2', 3), put(12, 'z', 4));
    const third = await executeTieringRound({ ...deps, ids: countingIds() }, pkPlan(PK_TABLE, 3, second.metadataKey, [[0, second.offsets[0]!, changelog.end(0)], [1, 2, changelog.end(1)]]));
    expect(third).toMatchObject({ committed: true, files: 2, removedFiles: 2 });
    await expectAccounts(store, third.metadataKey, changelog, { 0: changelog.end(0), 1: changelog.end(1) });
    const thirdFiles = await liveFileKeys(store, PK_TABLE, third.metadataKey);
    expect(thirdFiles.map((file) => file.key)).toEqual([expect.stringMatching(/__bucket=0\/t9r3-/), expect.stringMatching(/__bucket=1\/t9r3-/)]);
    const final = changelog.expectedAt({ 0: changelog.end(0), 1: changelog.end(1) });
    expect(final.map(({ row }) => Number(row.id))).toEqual([2, 6, 1, 3, 7, 11, 12]);

    // The snapshot is an overwrite whose totals count the live rows only.
    const lake = new IcebergTable({ store, tableName: PK_TABLE.name, storeUri: STORE_URI, schema: icebergSchemaOf(PK_COLUMNS, ['id']) });
    const loaded = await lake.load(third.metadataKey);
    expect(loaded.currentSnapshot?.summary).toMatchObject({ operation: 'overwrite', 'total-records': String(final.length), 'total-data-files': '2', 'deleted-data-files': '2' });
    expect(lines.map((line) => line.message)).toContain('tiering round merged a bucket');
  });

  it('removes the file of a bucket whose keys are all deleted, and commits a round whose changes cancel out as a snapshot that only moves the offsets', async () => {
    // Proves the two edge cases of copy-on-write: a bucket that empties gets its old file removed and no new
    // one (a `delete` snapshot), and a range whose keys are put and deleted within it still moves the lake's
    // tiered offset, so the next round starts after it.
    const changelog = new FakeChangelog(PK_TABLE).write(0, put(1, 'a', 1), put(2, 'b', 2));
    const { store, deps } = pkHarness(changelog, PK_TABLE);
    const first = await executeTieringRound(deps, pkPlan(PK_TABLE, 1, null, [[0, 0, 2]]));

    changelog.write(0, remove(1), remove(2));
    const second = await executeTieringRound({ ...deps, ids: countingIds() }, pkPlan(PK_TABLE, 2, first.metadataKey, [[0, 2, 4]]));
    expect(second).toMatchObject({ committed: true, offsets: { 0: 4 }, rows: 0, files: 0, removedFiles: 1 });
    expect(await liveFileKeys(store, PK_TABLE, second.metadataKey)).toEqual([]);
    expect(await duck.select(store, second.metadataKey, PK_TABLE, 'id')).toEqual([]);

    changelog.write(0, put(3, 'c', 3)).write(0, put(3, 'c2', 4), remove(3));
    const third = await executeTieringRound({ ...deps, ids: countingIds() }, pkPlan(PK_TABLE, 3, second.metadataKey, [[0, 4, changelog.end(0)]]));
    expect(third).toMatchObject({ committed: true, offsets: { 0: changelog.end(0) }, rows: 0, files: 0, removedFiles: 0 });
    const lake = new IcebergTable({ store, tableName: PK_TABLE.name, storeUri: STORE_URI, schema: icebergSchemaOf(PK_COLUMNS, ['id']) });
    expect((await lake.load(second.metadataKey)).currentSnapshot?.summary).toMatchObject({ operation: 'delete', 'total-records': '0', 'mink.offsets': '{"0":4}' });
    expect((await lake.load(third.metadataKey)).currentSnapshot?.summary).toMatchObject({ operation: 'append', 'added-data-files': '0', 'mink.offsets': `{"0":${changelog.end(0)}}` });

    changelog.write(0, put(4, 'd', 5));
    const fourth = await executeTieringRound({ ...deps, ids: countingIds() }, pkPlan(PK_TABLE, 4, third.metadataKey, [[0, third.offsets[0]!, changelog.end(0)]]));
    await expectAccounts(store, fourth.metadataKey, changelog, { 0: changelog.end(0) });
  });

  /** A table whose primary key spans three types (string, int32, timestamp) and whose other columns take every type. */
  const WIDE_TABLE: TableRecord = {
    ...PK_TABLE,
    id: 11,
    name: 'ledger',
    columns: [
      { name: 'tenant', type: 'string' },
      { name: 'seq', type: 'int32' },
      { name: 'day', type: 'timestamp' },
      { name: 'amount', type: 'float64' },
      { name: 'flag', type: 'boolean' },
      { name: 'blob', type: 'bytes' },
      { name: 'note', type: 'string' },
      { name: 'total', type: 'int64' },
    ],
    primaryKey: ['tenant', 'seq', 'day'],
    bucketKey: ['tenant'],
    buckets: 3,
  };

  /** mulberry32: a small seeded generator, so a failing history replays from its seed. */
  function random(seed: number): () => number {
    let state = seed >>> 0;
    return () => {
      state = (state + 0x6d2b79f5) >>> 0;
      let value = state;
      value = Math.imul(value ^ (value >>> 15), value | 1);
      value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
      return ((value ^ (value >>> 14)) >>> 0) / 4_294_967_296;
    };
  }

  it.each([1, 2, 3, 4, 5, 6])('matches the fold of a seeded random history of every column type over four rounds (seed %i), folding after every batch', async (seed) => {
    // Proves the merge against an independent oracle on composite keys of three types (a timestamp key
    // compared in the lake's microseconds), every column type with nulls, rounds cut at random offsets
    // inside batches, and the fold bound at its smallest (state gathered anew before each held batch).
    const next = random(seed);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
    const keyOf = (): Row => ({ tenant: pick(['a', 'b', 'ü']), seq: pick([1, -2, 300]), day: pick([0, 1_700_000_000_123]) });
    const nullable = <T>(value: T): T | null => (next() < 0.2 ? null : value);
    const changelog = new FakeChangelog(WIDE_TABLE, 1 + Math.floor(next() * 3));
    const { store, deps } = pkHarness(changelog, WIDE_TABLE, { pkMergeBounds: { foldBytes: 1 } });
    let metadataKey: string | null = null;
    const tiered: Record<number, number> = { 0: 0, 1: 0, 2: 0 };
    for (let round = 1; round <= 4; round++) {
      for (let bucket = 0; bucket < 3; bucket++) {
        for (let batch = Math.floor(next() * 4); batch > 0; batch--) {
          const operations = Array.from({ length: 1 + Math.floor(next() * 6) }, (): PkOperation => {
            if (next() < 0.3) return { delete: keyOf() };
            return {
              put: {
                ...keyOf(),
                amount: nullable(Math.floor(next() * 1000) / 8),
                flag: nullable(next() < 0.5),
                blob: nullable(Uint8Array.from([Math.floor(next() * 256), 0, 255])),
                note: nullable(`n${Math.floor(next() * 100)}`),
                total: nullable(BigInt(Math.floor(next() * 1e6)) * 1_000_000_007n),
              },
            };
          });
          changelog.write(bucket, ...operations);
        }
      }
      // Each bucket is tiered up to a random offset between its lake offset and its end (the last round: the end).
      const ranges = [0, 1, 2].map((bucket): [number, number, number] => {
        const end = round === 4 ? changelog.end(bucket) : tiered[bucket]! + Math.floor(next() * (changelog.end(bucket) - tiered[bucket]! + 1));
        return [bucket, tiered[bucket]!, end];
      });
      if (ranges.every(([, start, end]) => start === end) && metadataKey === null) continue;
      const result: RoundResult = await executeTieringRound({ ...deps, ids: countingIds() }, pkPlan(WIDE_TABLE, round, metadataKey, ranges));
      metadataKey = result.metadataKey;
      for (const [bucket, , end] of ranges) tiered[bucket] = end;

      const rows = await duck.select(
        store,
        metadataKey,
        WIDE_TABLE,
        'tenant, seq, epoch_ms("day") as day, amount, flag, hex(blob) as blob, note, total, __bucket, __offset, epoch_ms(__timestamp) as time_ms',
      );
      const expected = changelog.expectedAt(tiered).map(({ bucket, offset, timeMs, row }) => ({
        tenant: row.tenant,
        seq: row.seq,
        day: String(row.day),
        amount: row.amount,
        flag: row.flag,
        blob: row.blob === null ? null : Buffer.from(row.blob as Uint8Array).toString('hex').toUpperCase(),
        note: row.note,
        total: row.total === null ? null : String(row.total),
        __bucket: bucket,
        __offset: String(offset),
        time_ms: String(timeMs),
      }));
      expect({ seed, round, rows }).toEqual({ seed, round, rows: expected });
      const files = await liveFileKeys(store, WIDE_TABLE, metadataKey);
      // At most one file per bucket, and none for a bucket without live keys.
      expect(files.map((file) => file.bucket)).toEqual([...new Set(expected.map((row) => row.__bucket))]);
    }
  });

  it('refuses a bucket beyond the merge bounds with LakeBucketTooLargeError, writing no metadata', async () => {
    // Proves the memory bound is enforced with a clear, typed refusal: too many live keys while merging,
    // an old file with more rows than the bound (refused before it is read), and too many bytes of state.
    const changelog = new FakeChangelog(PK_TABLE).write(0, put(1, 'a', 1), put(2, 'b', 2), put(3, 'c', 3)).write(0, put(4, 'd', 4), remove(1));
    const { store, deps } = pkHarness(changelog, PK_TABLE);
    const keys = await executeTieringRound({ ...deps, pkMergeBounds: { keysMax: 3 } }, pkPlan(PK_TABLE, 1, null, [[0, 0, 5]])).catch((error: unknown) => error);
    expect(keys).toBeInstanceOf(LakeBucketTooLargeError);
    expect(keys).toBeInstanceOf(InvalidArgumentError);
    expect(String(keys)).toMatch(/bucket 0 of 'accounts' holds 4 live keys while tiering, more than the 3 .*pkBucketKeysMax/);
    expect(metadataKeys(store)).toEqual([]);

    const first = await executeTieringRound({ ...deps, ids: countingIds() }, pkPlan(PK_TABLE, 2, null, [[0, 0, 3]]));
    changelog.write(0, put(5, 'e', 5));
    const gets = store.calls.get;
    const old = await executeTieringRound({ ...deps, ids: countingIds(), pkMergeBounds: { keysMax: 2 } }, pkPlan(PK_TABLE, 3, first.metadataKey, [[0, 3, 6]])).catch((error: unknown) => error);
    expect(String(old)).toMatch(/holds 3 live keys/);
    // Only the metadata, the manifest list and the manifest were read: not the data file.
    expect(store.calls.get - gets).toBe(3);

    const bytes = await executeTieringRound({ ...deps, ids: countingIds(), pkMergeBounds: { stateBytesMax: 64 } }, pkPlan(PK_TABLE, 4, first.metadataKey, [[0, 3, 6]])).catch((error: unknown) => error);
    expect(bytes).toBeInstanceOf(LakeBucketTooLargeError);
    expect(String(bytes)).toMatch(/bytes of merged state while tiering, more than the 64 .*pkBucketStateBytesMax/);
    expect(metadataKeys(store)).toEqual([first.metadataKey]);

    await expect(executeTieringRound({ ...deps, pkMergeBounds: { keysMax: LAKE_LIMITS.pkBucketKeysMax + 1 } }, pkPlan(PK_TABLE, 5, first.metadataKey, [[0, 3, 6]]))).rejects.toThrow(
      /keysMax must be a whole number from 1 to/,
    );
  });

  it('stops without committing when the heartbeat before storing the merged file throws', async () => {
    // Proves the fence holds for merged rounds too: the old file is read and merged, but nothing of the round is stored or committed.
    const changelog = new FakeChangelog(PK_TABLE).write(0, put(1, 'a', 1));
    const { deps, store } = pkHarness(changelog, PK_TABLE);
    const first = await executeTieringRound(deps, pkPlan(PK_TABLE, 1, null, [[0, 0, 1]]));
    changelog.write(0, put(1, 'b', 2));
    const puts = store.calls.put;
    let beats = 0;
    const fenced = executeTieringRound(
      {
        ...deps,
        ids: countingIds(),
        heartbeat: async () => {
          // 1: before listing files, 2: before reading the old file, 3: before reading the changelog, 4: before storing.
          if (++beats === 4) throw new Error('round 2 fenced');
        },
      },
      pkPlan(PK_TABLE, 2, first.metadataKey, [[0, 1, 3]]),
    );
    await expect(fenced).rejects.toThrow('round 2 fenced');
    expect(store.calls.put).toBe(puts);
  });
});
