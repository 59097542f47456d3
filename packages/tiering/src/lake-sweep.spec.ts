import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { IcebergTable, LAKE_LIMITS, icebergSchemaOf, reachableLakeKeys } from '@mink/lake';
import type { ColumnSpec, TableRecord } from '@mink/meta';
import { UnavailableError } from '@mink/protocol';
import { type Row, encodeBatch } from '@mink/records';
import { InMemoryObjectStore } from '@mink/s3stream';
import { type SweepLogger, sweepAfterCommit } from './lake-sweep';
import { type TieringReadBatch, executeTieringRound } from './round-executor';

const COLUMNS: ColumnSpec[] = [
  { name: 'id', type: 'int64' },
  { name: 'name', type: 'string' },
];
const STORE_URI = 's3://mink-test';
const TABLE: TableRecord = {
  id: 7,
  name: 'events',
  kind: 'log',
  columns: COLUMNS,
  primaryKey: [],
  bucketKey: [],
  buckets: 2,
  properties: { 'table.datalake.enabled': 'true' },
  createdAtMs: 0,
  partitions: [],
};
const GRACE_MS = 5_000;

/** A log table's buckets on an in-memory store with a clock the test moves, tiered round by round and swept after each commit with `graceMs`. */
function worker(graceMs = GRACE_MS) {
  let clockMs = 1_000_000;
  const store = new InMemoryObjectStore({ nowMs: () => clockMs });
  const batches = new Map<number, TieringReadBatch[]>([
    [0, []],
    [1, []],
  ]);
  const lines: { level: 'info' | 'warn'; message: string; fields: Record<string, unknown> }[] = [];
  const logger: SweepLogger = {
    info: (fields, message) => lines.push({ level: 'info', message, fields: fields as Record<string, unknown> }),
    warn: (fields, message) => lines.push({ level: 'warn', message, fields: fields as Record<string, unknown> }),
  };
  let metadataKey: string | null = null;
  let epoch = 0;
  const ends = () => [0, 1].map((bucket) => batches.get(bucket)!.at(-1)?.endOffset ?? 0);
  const append = (bucket: number, count: number) => {
    const list = batches.get(bucket)!;
    const start = list.at(-1)?.endOffset ?? 0;
    const rows: Row[] = Array.from({ length: count }, (_, index) => ({ id: BigInt(start + index), name: `b${bucket}-o${start + index}` }));
    list.push({ startOffset: start, endOffset: start + count, payload: encodeBatch(COLUMNS, rows, 1_750_000_000_000 + start) });
  };
  return {
    store,
    lines,
    logger,
    ends,
    append,
    advance: (ms: number) => (clockMs += ms),
    now: () => clockMs,
    get metadataKey() {
      return metadataKey!;
    },
    /**
     * One round tiering both buckets up to their ends, committed to the lake; then "the log" takes it and the
     * sweep runs, unless `fenced`: then the log refuses it, and its objects (data files, manifests, metadata)
     * are left unreferenced for the next round to tier again.
     */
    async round(fenced = false): Promise<void> {
      clockMs += 1_000;
      let before = [0, 0];
      if (metadataKey !== null) {
        const table = new IcebergTable({ store, tableName: TABLE.name, storeUri: STORE_URI, schema: icebergSchemaOf(COLUMNS) });
        await table.load(metadataKey);
        const offsets = table.tieredOffsets();
        before = [offsets.get(0) ?? 0, offsets.get(1) ?? 0];
      }
      const end = ends();
      const result = await executeTieringRound(
        {
          store,
          storeUri: STORE_URI,
          table: TABLE,
          read: async (bucket, fromOffset) => ({ batches: batches.get(bucket)!.filter((batch) => batch.endOffset > fromOffset) }),
          heartbeat: async () => undefined,
          logCompactionBounds: { smallFilesMax: 3 },
        },
        { tableId: TABLE.id, tableName: TABLE.name, tieringEpoch: ++epoch, metadataKey, ranges: [0, 1].map((bucket) => ({ bucket, startOffset: before[bucket]!, endOffset: end[bucket]! })) },
      );
      if (fenced) return;
      metadataKey = result.metadataKey;
      await sweepAfterCommit({ store, storeUri: STORE_URI, logger, fields: { tieringEpoch: epoch } }, { table: TABLE, metadataKey, nowMs: clockMs, graceMs });
    },
  };
}

/** Every row of the lake at `metadataKey` as DuckDB (one instance per test file) reads its live files, ordered by bucket and offset. */
async function duckRows(connection: DuckDBConnection, store: InMemoryObjectStore, metadataKey: string): Promise<{ id: string; __bucket: number; __offset: string }[]> {
  const table = new IcebergTable({ store, tableName: TABLE.name, storeUri: STORE_URI, schema: icebergSchemaOf(COLUMNS) });
  await table.load(metadataKey);
  const folder = mkdtempSync(join(tmpdir(), 'mink-sweep-duckdb-'));
  try {
    const paths: string[] = [];
    for (const file of await table.dataFiles()) {
      const key = table.keyOf(file.path);
      const path = join(folder, key);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, await store.get(key));
      paths.push(`'${path}'`);
    }
    return (await connection.runAndReadAll(`select id, __bucket, __offset from read_parquet([${paths.join(', ')}], hive_partitioning = false) order by __bucket, __offset`)).getRowObjectsJson() as never;
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

function expectEveryRecordOnce(rows: { id: string; __bucket: number; __offset: string }[], ends: number[]): void {
  const expected = ends.flatMap((end, bucket) => Array.from({ length: end }, (_, offset) => ({ id: String(offset), __bucket: bucket, __offset: String(offset) })));
  expect(rows).toEqual(expected);
}

/** Two dozen rounds, each read back by DuckDB: a few seconds alone, more beside other suites. */
const MANY_ROUNDS_TIMEOUT_MS = 60_000;

describe('sweepAfterCommit after tiering rounds', () => {
  let instance: DuckDBInstance;
  let connection: DuckDBConnection;
  beforeAll(async () => {
    instance = await DuckDBInstance.create(':memory:');
    connection = await instance.connect();
  });
  afterAll(() => {
    connection.closeSync();
    instance.closeSync();
  });

  it('keeps a compacting log table to what its kept snapshots reach, once objects are past the grace; every record stays readable once', async () => {
    // Proves compaction and orphan removal together over many rounds (one per second of the store's clock)
    // with a fenced round among them: after every committed round DuckDB reads every record once, every
    // kept metadata version still reads whole, the store holds nothing unreachable that is older than the
    // grace, and in the end the replaced files and the fenced round's objects are gone.
    const lake = worker();
    const fencedKeys: string[] = [];
    for (let round = 1; round <= 24; round++) {
      lake.append(0, 10);
      if (round % 3 === 0) lake.append(1, 4);
      if (round === 5) {
        const before = new Set(lake.store.keys());
        await lake.round(true);
        fencedKeys.push(...lake.store.keys().filter((key) => !before.has(key)));
        expect(fencedKeys.length).toBeGreaterThan(0);
      }
      await lake.round();
      expectEveryRecordOnce(await duckRows(connection, lake.store, lake.metadataKey), lake.ends());
      const table = new IcebergTable({ store: lake.store, tableName: TABLE.name, storeUri: STORE_URI, schema: icebergSchemaOf(COLUMNS) });
      const reachable = await reachableLakeKeys(table, lake.metadataKey);
      for (const key of reachable) expect(lake.store.keys()).toContain(key);
      const listed = await lake.store.list('lake/events/');
      for (const object of listed) {
        if (reachable.has(object.key) || object.key.endsWith('version-hint.text')) continue;
        expect(object.lastModifiedMs + GRACE_MS).toBeGreaterThan(lake.now());
      }
    }
    expect(lake.lines.filter((line) => line.level === 'warn')).toEqual([]);
    const deletes = lake.lines.filter((line) => line.message === 'lake orphan sweep deleted unreferenced objects');
    expect(deletes.length).toBeGreaterThan(0);
    for (const key of fencedKeys) expect(lake.store.keys()).not.toContain(key);
    // Compaction kept each bucket to a few files.
    const table = new IcebergTable({ store: lake.store, tableName: TABLE.name, storeUri: STORE_URI, schema: icebergSchemaOf(COLUMNS) });
    await table.load(lake.metadataKey);
    const files = await table.dataFiles();
    for (const bucket of [0, 1]) expect(files.filter((file) => file.bucket === bucket).length).toBeLessThanOrEqual(3);
    expect(lake.store.keys().filter((key) => key.endsWith('.metadata.json'))).toHaveLength(LAKE_LIMITS.snapshotsRetainedMax);
  }, MANY_ROUNDS_TIMEOUT_MS);

  it('logs and swallows a failed listing, and a failed delete, deleting nothing or less', async () => {
    // Proves the round's commit stands whatever the sweep meets: it resolves, logs a warning and the next sweep does the work.
    // Sweeps during the rounds wait an hour, so the expired snapshots' objects are still there afterwards.
    const lake = worker(3_600_000);
    for (let round = 1; round <= LAKE_LIMITS.snapshotsRetainedMax + 4; round++) {
      lake.append(0, 10);
      await lake.round();
    }
    lake.advance(60_000);
    const target = { table: TABLE, metadataKey: lake.metadataKey, nowMs: lake.now(), graceMs: GRACE_MS };
    lake.store.failNext('list', new UnavailableError('injected list failure'));
    const deletes = lake.store.calls.delete;
    await expect(sweepAfterCommit({ store: lake.store, storeUri: STORE_URI, logger: lake.logger }, target)).resolves.toBeNull();
    expect(lake.store.calls.delete).toBe(deletes);
    expect(lake.lines.at(-1)).toMatchObject({ level: 'warn', message: 'lake orphan sweep failed; nothing deleted', fields: { table: 'events', metadataKey: lake.metadataKey } });

    lake.store.failNext('delete', new UnavailableError('injected delete failure'));
    const failed = await sweepAfterCommit({ store: lake.store, storeUri: STORE_URI, logger: lake.logger }, target);
    expect(failed).toMatchObject({ deleted: 0, deleteError: expect.any(UnavailableError) });
    expect(lake.lines.at(-1)).toMatchObject({ level: 'warn', message: expect.stringContaining('a delete failed') });
    expect(failed!.plan.delete.length).toBeGreaterThan(0);

    const retried = await sweepAfterCommit({ store: lake.store, storeUri: STORE_URI, logger: lake.logger }, target);
    expect(retried?.deleted).toBe(failed!.plan.delete.length);
    expect(lake.lines.at(-1)).toMatchObject({ level: 'info', message: 'lake orphan sweep deleted unreferenced objects', fields: { deleted: retried!.deleted } });
  }, MANY_ROUNDS_TIMEOUT_MS);
});
