import type { ColumnSpec } from '@mink/meta';
import { UnavailableError } from '@mink/protocol';
import type { Row } from '@mink/records';
import { InMemoryObjectStore } from '@mink/s3stream';
import type { DataFile } from './data-file';
import { type DuckReader, openDuckReader } from './duckdb.fixture';
import { icebergSchemaOf } from './iceberg-schema';
import { IcebergTable } from './iceberg-table';
import { LAKE_LIMITS } from './lake-limits';
import { type LakeOrphanPlan, type ListedLakeObject, planLakeOrphans, reachableLakeKeys, sweepLakeOrphans } from './lake-orphans';
import { contiguousOffsets, countingIds, lakeRows, streamBatch } from './lake.fixture';
import { parquetOfArrow } from './parquet-of-arrow';

const UUID = '00000000-0000-4000-8000-000000000001';
const BASIS = 'lake/events/metadata/v3-t7r3.metadata.json';

/** A listing of table 7's folder 'events' at the times given (ms by the store's clock), with what each key is. */
const LISTED: ListedLakeObject[] = [
  [BASIS, 3_000], // the basis
  ['lake/events/metadata/v2-t7r2.metadata.json', 2_000], // kept: in the basis' metadata log
  ['lake/events/metadata/v1-t7r1.metadata.json', 1_000], // out of the metadata log
  ['lake/events/metadata/v3-t7r4.metadata.json', 2_500], // a fenced round's metadata on the same base
  ['lake/events/metadata/version-hint.text', 3_100], // the hint
  [`lake/events/metadata/snap-11-t7r1-${UUID}.avro`, 900], // an expired snapshot's manifest list
  [`lake/events/metadata/t7r1-${UUID}-m0.avro`, 900], // its manifest
  [`lake/events/metadata/t7r3-${UUID}-m0.avro`, 2_900], // kept
  [`lake/events/data/__bucket=0/t7r1-0-9-${UUID}.parquet`, 800], // replaced, its snapshots expired
  [`lake/events/data/__bucket=0/t7r3-0-19-${UUID}.parquet`, 2_900], // live
  [`lake/events/data/__bucket=0/t4r9-0-9-${UUID}.parquet`, 100], // a dropped table's of the same name
  ['lake/events/data/__bucket=0/r2-0-9-x.parquet', 100], // no table id in its tag
  ['lake/events/notes.txt', 100], // not a name this writer gives
  [`lake/events/data/__bucket=1/t7r5-20-29-${UUID}.parquet`, 3_000], // a later round's, in the basis' second
  [`lake/events/data/__bucket=1/t7r6-30-39-${UUID}.parquet`, 4_000], // a later round's
].map(([key, lastModifiedMs]) => ({ key: key as string, size: 1, lastModifiedMs: lastModifiedMs as number }));

const REACHABLE = new Set([BASIS, 'lake/events/metadata/v2-t7r2.metadata.json', `lake/events/metadata/t7r3-${UUID}-m0.avro`, `lake/events/data/__bucket=0/t7r3-0-19-${UUID}.parquet`]);

const OLD_ORPHANS = [
  `lake/events/data/__bucket=0/t7r1-0-9-${UUID}.parquet`,
  `lake/events/metadata/snap-11-t7r1-${UUID}.avro`,
  `lake/events/metadata/t7r1-${UUID}-m0.avro`,
  'lake/events/metadata/v1-t7r1.metadata.json',
  'lake/events/metadata/v3-t7r4.metadata.json',
];

describe('planLakeOrphans', () => {
  const plan = (overrides: Partial<Parameters<typeof planLakeOrphans>[0]>): LakeOrphanPlan =>
    planLakeOrphans({ tableName: 'events', tableId: 7, basisMetadataKey: BASIS, listed: LISTED, reachable: REACHABLE, nowMs: 10_000, graceMs: 1_000, deleteKeysMax: 100, ...overrides });

  it.each<[string, Partial<Parameters<typeof planLakeOrphans>[0]>, string[], Partial<LakeOrphanPlan['counts']>]>([
    ['every old orphan, in key order, once the grace is over', {}, OLD_ORPHANS, { listed: 15, reachable: 4, foreign: 4, young: 2, deferred: 0 }],
    ['only orphans older than the grace', { nowMs: 3_000 }, OLD_ORPHANS.filter((key) => !key.endsWith('v3-t7r4.metadata.json')), { young: 3 }],
    ['nothing within a long grace', { graceMs: 60_000 }, [], { young: 7 }],
    ['no grace at all, still nothing as new as the basis', { graceMs: 0 }, OLD_ORPHANS, { young: 2 }],
    ['at most deleteKeysMax keys, the rest deferred', { deleteKeysMax: 2 }, OLD_ORPHANS.slice(0, 2), { deferred: 3 }],
    ['as table 4, only the keys of its own rounds', { tableId: 4 }, [`lake/events/data/__bucket=0/t4r9-0-9-${UUID}.parquet`], { foreign: 10, young: 0 }],
  ])('deletes %s', (_case, overrides, expected, counts) => {
    // Proves the rule: a key this writer names with the table's id, not reached, written before the basis and older than the grace.
    const result = plan(overrides);
    expect(result.delete).toEqual(expected);
    expect(result.skipped).toBeNull();
    expect(result.counts).toMatchObject(counts);
  });

  it('keeps the hint, foreign keys, the reachable and the young whatever the time', () => {
    // Proves no setting deletes what must stay: the plan never names a kept key.
    const kept = new Set(LISTED.map((object) => object.key).filter((key) => !OLD_ORPHANS.includes(key)));
    for (const nowMs of [0, 3_000, 1e12]) for (const graceMs of [0, 1_000]) for (const key of plan({ nowMs, graceMs }).delete) expect(kept.has(key)).toBe(false);
  });

  it('plans nothing when the listing does not hold the basis', () => {
    // Proves a listing older than the basis (a store lagging behind its writes) deletes nothing.
    const result = plan({ listed: LISTED.filter((object) => object.key !== BASIS) });
    expect(result).toMatchObject({ delete: [], skipped: expect.stringContaining(BASIS) });
  });

  it('takes a write time that is not a number as young', () => {
    // Proves a store that cannot say when an object was written never gets it deleted.
    const listed = LISTED.map((object) => (object.key === OLD_ORPHANS[0] ? { ...object, lastModifiedMs: Number.NaN } : object));
    expect(plan({ listed }).delete).toEqual(OLD_ORPHANS.slice(1));
  });

  it.each<[string, Partial<Parameters<typeof planLakeOrphans>[0]>, RegExp]>([
    ['a negative grace', { graceMs: -1 }, /grace period of -1/],
    ['a fractional bound', { deleteKeysMax: 1.5 }, /delete bound of 1.5/],
    ['a basis that is not a metadata key', { basisMetadataKey: 'lake/events/metadata/version-hint.text' }, /not a metadata key/],
    ['a basis of another table', { basisMetadataKey: 'lake/other/metadata/v3-t7r3.metadata.json' }, /not a metadata key of lake table 'events'/],
    ['reachable keys without their basis', { reachable: new Set() }, /do not hold their basis/],
    ['no time', { nowMs: Number.NaN }, /the time NaN/],
  ])('refuses %s', (_case, overrides, message) => {
    // Proves the caller's mistakes fail loudly rather than deleting by a wrong rule.
    expect(() => plan(overrides)).toThrow(message);
  });
});

const COLUMNS: ColumnSpec[] = [
  { name: 'id', type: 'int64' },
  { name: 'name', type: 'string' },
];
const STORE_URI = 's3://mink-test';

function rows(from: number, count: number): Row[] {
  return Array.from({ length: count }, (_, index) => ({ id: BigInt(from + index), name: `n${from + index}` }));
}

/**
 * A lake table of id 7 on an in-memory store whose clock the test moves: `round` commits one round on the
 * current metadata (appending `count` records to bucket 0, replacing the bucket's files with one file of
 * all its records when `replace` is set, as a copy-on-write round does), one second after the previous.
 */
function lakeOnAClock() {
  let clockMs = 1_000_000;
  const store = new InMemoryObjectStore({ nowMs: () => clockMs });
  const ids = countingIds();
  const open = () => new IcebergTable({ store, tableName: 'events', storeUri: STORE_URI, schema: icebergSchemaOf(COLUMNS), ids });
  const table = open();
  let metadataKey: string | null = null;
  let end = 0;
  let epoch = 0;
  const write = async (on: IcebergTable, from: number, count: number, tag: string): Promise<DataFile> =>
    on.writeDataFile(parquetOfArrow({ schema: on.schema(), bucket: 0, batches: [streamBatch(COLUMNS, rows(from, count), from)] }), tag);
  return {
    store,
    open,
    get metadataKey() {
      return metadataKey!;
    },
    get end() {
      return end;
    },
    advance(ms: number) {
      clockMs += ms;
    },
    now: () => clockMs,
    async round(count: number, replace = false): Promise<string> {
      clockMs += 1_000;
      const tag = `t7r${++epoch}`;
      await table.load(metadataKey);
      const live = await table.dataFiles();
      const added = replace ? [await write(table, 0, end + count, tag)] : [await write(table, end, count, tag)];
      const result = await table.commit({ added, removed: replace ? live.map((file) => file.path) : [], offsets: new Map([[0, end + count]]), tag });
      metadataKey = result.metadataKey;
      end += count;
      return metadataKey;
    },
    /** A round fenced before its log commit: its data file and metadata on the current base, never current. */
    async fencedRound(count: number): Promise<string[]> {
      clockMs += 1_000;
      const tag = `t7r${++epoch}`;
      const loser = open();
      await loser.load(metadataKey);
      const file = await write(loser, end, count, tag);
      const result = await loser.commit({ added: [file], offsets: new Map([[0, end + count]]), tag });
      return [loser.keyOf(file.path), result.metadataKey];
    },
  };
}

/** A sweep test commits a dozen rounds and reads them back with DuckDB: seconds alone, more beside other suites. */
const ROUNDS_TIMEOUT_MS = 60_000;

describe('sweepLakeOrphans on an in-memory store', () => {
  let duck: DuckReader;
  beforeAll(async () => {
    duck = await openDuckReader();
  });
  afterAll(() => duck.close());

  it('deletes what expired snapshots, replaced files and a fenced round left, once old; every kept version still reads whole', async () => {
    // Proves orphan removal end to end: after rounds that append, replace a bucket's files and lose a race,
    // a sweep after the grace leaves exactly the reachable objects and the hint, the current table reads
    // every record once, and every metadata file still kept (time travel) reads whole too.
    const lake = lakeOnAClock();
    const fencedKeys: string[] = [];
    for (let round = 1; round <= LAKE_LIMITS.snapshotsRetainedMax + 6; round++) {
      if (round === 3) fencedKeys.push(...(await lake.fencedRound(5)));
      await lake.round(10, round % 4 === 0);
    }
    await lake.store.put('lake/events/metadata/version-hint.text', Buffer.from('x'));
    const table = lake.open();
    const reachable = await reachableLakeKeys(table, lake.metadataKey);
    const before = lake.store.keys();
    for (const key of fencedKeys) expect(before).toContain(key);

    // Within the grace nothing goes, though much is unreachable.
    const early = await sweepLakeOrphans(lake.store, { table, tableId: 7, basisMetadataKey: lake.metadataKey, nowMs: lake.now(), graceMs: 60_000 });
    expect(early).toMatchObject({ deleted: 0, deleteError: null });
    expect(early.plan.counts.young).toBeGreaterThan(0);
    expect(lake.store.keys()).toEqual(before);

    lake.advance(120_000);
    const swept = await sweepLakeOrphans(lake.store, { table, tableId: 7, basisMetadataKey: lake.metadataKey, nowMs: lake.now(), graceMs: 60_000, batchKeys: 3 });
    expect(swept.deleteError).toBeNull();
    expect(swept.deleted).toBe(before.length - reachable.size - 1);
    expect(lake.store.keys().sort()).toEqual([...reachable, 'lake/events/metadata/version-hint.text'].sort());
    for (const key of fencedKeys) expect(lake.store.keys()).not.toContain(key);
    // One metadata file per kept snapshot: the current one and its log.
    expect(lake.store.keys().filter((key) => key.endsWith('.metadata.json'))).toHaveLength(LAKE_LIMITS.snapshotsRetainedMax);

    const current = lake.open();
    await current.load(lake.metadataKey);
    const read = await lakeRows(current, lake.store, duck, 'id, name, __bucket, __offset');
    expect(read).toHaveLength(lake.end);
    expect(contiguousOffsets(read)).toEqual(new Map([[0, lake.end]]));
    const metadata = JSON.parse(Buffer.from(await lake.store.get(lake.metadataKey)).toString()) as { 'metadata-log': { 'metadata-file': string }[] };
    for (const { 'metadata-file': location } of metadata['metadata-log']) {
      const older = lake.open();
      await older.load(older.keyOf(location));
      const olderRows = await lakeRows(older, lake.store, duck, '__bucket, __offset');
      expect(contiguousOffsets(olderRows)).toEqual(older.tieredOffsets());
    }

    // A second sweep finds nothing more.
    expect((await sweepLakeOrphans(lake.store, { table, tableId: 7, basisMetadataKey: lake.metadataKey, nowMs: lake.now(), graceMs: 60_000 })).deleted).toBe(0);
  }, ROUNDS_TIMEOUT_MS);

  it('never deletes the objects of rounds after its basis, even when they are old', async () => {
    // Proves a sweeper that stalled after its commit is harmless: later rounds' objects are newer than its basis.
    const lake = lakeOnAClock();
    for (let round = 1; round <= 3; round++) await lake.round(10, round === 3);
    const stale = lake.metadataKey;
    for (let round = 4; round <= LAKE_LIMITS.snapshotsRetainedMax + 8; round++) await lake.round(10, round % 3 === 0);
    lake.advance(3_600_000);
    const table = lake.open();
    const result = await sweepLakeOrphans(lake.store, { table, tableId: 7, basisMetadataKey: stale, nowMs: lake.now(), graceMs: 1_000 });
    expect(result.deleted).toBe(0);
    const current = lake.open();
    await current.load(lake.metadataKey);
    expect(contiguousOffsets(await lakeRows(current, lake.store, duck, '__bucket, __offset'))).toEqual(new Map([[0, lake.end]]));
  }, ROUNDS_TIMEOUT_MS);

  it('stops at a failed delete without throwing, and a later sweep deletes the rest', async () => {
    // Proves failures never escape: the sweep reports the error with what it did delete, and deleting again is fine.
    const lake = lakeOnAClock();
    for (let round = 1; round <= LAKE_LIMITS.snapshotsRetainedMax + 3; round++) await lake.round(5, round % 2 === 0);
    lake.advance(120_000);
    const table = lake.open();
    const failure = new UnavailableError('injected delete failure');
    lake.store.failNext('delete', failure);
    const failed = await sweepLakeOrphans(lake.store, { table, tableId: 7, basisMetadataKey: lake.metadataKey, nowMs: lake.now(), graceMs: 1_000, batchKeys: 2 });
    expect(failed).toMatchObject({ deleted: 0, deleteError: failure });
    expect(failed.plan.delete.length).toBeGreaterThan(2);
    const retried = await sweepLakeOrphans(lake.store, { table, tableId: 7, basisMetadataKey: lake.metadataKey, nowMs: lake.now(), graceMs: 1_000 });
    expect(retried.deleted).toBe(failed.plan.delete.length);
  }, ROUNDS_TIMEOUT_MS);

  it('deletes nothing when a kept manifest cannot be read', async () => {
    // Proves a sweep that cannot see everything the basis reaches throws before any delete.
    const lake = lakeOnAClock();
    for (let round = 1; round <= LAKE_LIMITS.snapshotsRetainedMax + 3; round++) await lake.round(5, round % 2 === 0);
    lake.advance(120_000);
    const manifest = lake.store.keys().find((key) => /\/metadata\/t7r\d+-.*-m\d+\.avro$/.test(key) && key.includes(`t7r${LAKE_LIMITS.snapshotsRetainedMax + 3}-`))!;
    await lake.store.delete([manifest]);
    const deletes = lake.store.calls.delete;
    await expect(sweepLakeOrphans(lake.store, { table: lake.open(), tableId: 7, basisMetadataKey: lake.metadataKey, nowMs: lake.now(), graceMs: 1_000 })).rejects.toThrow();
    expect(lake.store.calls.delete).toBe(deletes);
  }, ROUNDS_TIMEOUT_MS);
});
