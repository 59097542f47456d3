import type { ColumnSpec } from '@mink/meta';
import { InvalidArgumentError } from '@mink/protocol';
import type { Row } from '@mink/records';
import { InMemoryObjectStore } from '@mink/s3stream';
import { ENTRY_STATUS } from './avro-manifests';
import type { DataFile } from './data-file';
import { type DuckReader, openDuckReader } from './duckdb.fixture';
import { LakeCommitConflictError } from './errors';
import { icebergSchemaOf } from './iceberg-schema';
import { IcebergTable } from './iceberg-table';
import { LAKE_LIMITS } from './lake-limits';
import type { LakeObjectStore } from './lake-store';
import { contiguousOffsets, countingIds, lakeRows, streamBatch } from './lake.fixture';
import { parquetOfArrow } from './parquet-of-arrow';
import type { TableMetadata } from './table-metadata';

const COLUMNS: ColumnSpec[] = [
  { name: 'id', type: 'int64' },
  { name: 'name', type: 'string' },
];
const STORE_URI = 's3://mink-test';

function rows(from: number, count: number, tag = 'v1'): Row[] {
  return Array.from({ length: count }, (_, index) => ({ id: BigInt(from + index), name: `${tag}-${from + index}` }));
}

function openTable(store: LakeObjectStore, name = 'events', primaryKey: string[] = []): IcebergTable {
  return new IcebergTable({ store, tableName: name, storeUri: STORE_URI, schema: icebergSchemaOf(COLUMNS, primaryKey), ids: countingIds() });
}

/** Writes one data file of `count` rows of `bucket` from `startOffset` into the table and returns it. */
async function tier(table: IcebergTable, bucket: number, startOffset: number, count: number, tag = 'v1') {
  const file = parquetOfArrow({ schema: table.schema(), bucket, batches: [streamBatch(COLUMNS, rows(startOffset, count, tag), startOffset)] });
  return table.writeDataFile(file);
}

async function metadataOf(store: LakeObjectStore, key: string): Promise<TableMetadata> {
  return JSON.parse(Buffer.from(await store.get(key)).toString('utf8')) as TableMetadata;
}

describe('IcebergTable on an in-memory store', () => {
  let duck: DuckReader;
  beforeAll(async () => {
    duck = await openDuckReader();
  });
  afterAll(() => duck.close());

  it('loads a table that does not exist yet as version 0 with nothing tiered', async () => {
    // Proves a first round starts from offset 0 of every bucket and an empty lake.
    const table = openTable(new InMemoryObjectStore());
    expect(await table.load()).toEqual({ version: 0, metadata: null, currentSnapshot: null });
    expect(table.tieredOffsets()).toEqual(new Map());
    expect(await table.dataFiles()).toEqual([]);
  });

  it('creates the table with its first commit in the Iceberg file-system layout', async () => {
    // Proves the layout of the issue: v1.metadata.json, version-hint.text, a manifest list and a manifest
    // under metadata/, the data files under data/, and metadata any v2 reader accepts.
    const store = new InMemoryObjectStore();
    const table = openTable(store);
    await table.load();
    const files = [await tier(table, 0, 0, 30), await tier(table, 1, 0, 20)];
    const snapshot = await table.commit({ added: files, offsets: new Map([[0, 30], [1, 20]]) });

    const keys = (await store.list('lake/events/')).map((entry) => entry.key);
    expect(keys).toEqual([
      'lake/events/data/__bucket=0/0-29-00000000-0000-4000-8000-000000000001.parquet',
      'lake/events/data/__bucket=1/0-19-00000000-0000-4000-8000-000000000002.parquet',
      'lake/events/metadata/00000000-0000-4000-8000-000000000004-m0.avro',
      `lake/events/metadata/snap-${snapshot['snapshot-id']}-1-00000000-0000-4000-8000-000000000005.avro`,
      'lake/events/metadata/v1.metadata.json',
      'lake/events/metadata/version-hint.text',
    ]);
    expect(Buffer.from(await store.get('lake/events/metadata/version-hint.text')).toString()).toBe('1');
    const metadata = await metadataOf(store, 'lake/events/metadata/v1.metadata.json');
    expect(metadata).toMatchObject({
      'format-version': 2,
      location: `${STORE_URI}/lake/events`,
      'last-sequence-number': 1,
      'current-snapshot-id': snapshot['snapshot-id'],
      refs: { main: { 'snapshot-id': snapshot['snapshot-id'], type: 'branch' } },
      schemas: [icebergSchemaOf(COLUMNS)],
    });
    expect(snapshot).toMatchObject({ 'sequence-number': 1, summary: { operation: 'append', 'added-records': '50', 'total-records': '50', 'mink.offsets': '{"0":30,"1":20}' } });
    expect(snapshot['parent-snapshot-id']).toBeUndefined();
  });

  it('appends a second snapshot; DuckDB reads every tiered row exactly once with contiguous offsets per bucket', async () => {
    // Proves the append path end to end: two rounds, the second on top of the first, read back through
    // the manifests by an independent reader, and the tiered offsets merged over both rounds.
    const store = new InMemoryObjectStore();
    const table = openTable(store);
    await table.load();
    const first = await table.commit({ added: [await tier(table, 0, 0, 30), await tier(table, 1, 0, 20)], offsets: new Map([[0, 30], [1, 20]]) });
    const second = await table.commit({ added: [await tier(table, 0, 30, 15), await tier(table, 2, 0, 5)], offsets: new Map([[0, 45], [2, 5]]) });

    expect(second).toMatchObject({ 'parent-snapshot-id': first['snapshot-id'], 'sequence-number': 2, summary: { operation: 'append', 'total-records': '70', 'total-data-files': '4' } });
    const reloaded = openTable(store);
    expect((await reloaded.load()).version).toBe(2);
    expect(reloaded.tieredOffsets()).toEqual(new Map([[0, 45], [1, 20], [2, 5]]));
    expect(await reloaded.dataFiles()).toHaveLength(4);

    const read = await lakeRows(reloaded, store, duck, 'id, name, __bucket, __offset');
    expect(read).toHaveLength(70);
    expect(contiguousOffsets(read)).toEqual(reloaded.tieredOffsets());
    for (const row of read) expect(row.name).toBe(`v1-${row.id}`);
    // The second snapshot's manifest list names the first round's manifest as it was, plus one new manifest.
    const manifests = await reloaded.readManifestList(second['manifest-list']);
    expect(manifests.map((manifest) => [manifest.addedSnapshotId, manifest.sequenceNumber, manifest.addedFilesCount])).toEqual([
      [second['snapshot-id'], 2, 2],
      [first['snapshot-id'], 1, 2],
    ]);
    expect(manifests.map((manifest) => manifest.partitions[0]!.lowerBound![0])).toEqual([0, 0]);
    expect(manifests.map((manifest) => manifest.partitions[0]!.upperBound![0])).toEqual([2, 1]);
  });

  it("replaces a bucket's file copy-on-write, leaving exactly the new rows of that bucket", async () => {
    // Proves the PK path: the new merged file replaces the bucket's old one in an overwrite snapshot, the
    // old file is marked deleted (not read), and the other bucket's file is untouched.
    const store = new InMemoryObjectStore();
    const table = openTable(store, 'users', ['id']);
    await table.load();
    const oldFile = await tier(table, 0, 0, 10, 'old');
    await table.commit({ added: [oldFile, await tier(table, 1, 0, 4, 'old')], offsets: new Map([[0, 10], [1, 4]]) });
    const newFile = await tier(table, 0, 0, 12, 'new');
    const overwrite = await table.commit({ added: [newFile], removed: [oldFile.path], offsets: new Map([[0, 12]]) });

    expect(overwrite.summary).toMatchObject({ operation: 'overwrite', 'deleted-data-files': '1', 'deleted-records': '10', 'added-records': '12', 'total-records': '16', 'total-data-files': '2' });
    expect((await table.dataFiles()).map((file) => file.path).sort()).toEqual([newFile.path, (await table.dataFiles()).find((file) => file.bucket === 1)!.path].sort());
    const read = await lakeRows(table, store, duck, 'id, name, __bucket, __offset');
    expect(read.filter((row) => row.__bucket === 0).map((row) => row.name)).toEqual(rows(0, 12, 'new').map((row) => row.name));
    expect(read.filter((row) => row.__bucket === 1).map((row) => row.name)).toEqual(rows(0, 4, 'old').map((row) => row.name));
    // The rewritten manifest records the old file as deleted by this snapshot and the other as existing.
    const entries = (await Promise.all((await table.readManifestList(overwrite['manifest-list'])).map((manifest) => table.readManifest(manifest.path)))).flat();
    expect(entries.map((entry) => [entry.status, entry.dataFile.bucket, entry.dataFile.path === oldFile.path])).toEqual([
      [ENTRY_STATUS.added, 0, false],
      [ENTRY_STATUS.deleted, 0, true],
      [ENTRY_STATUS.existing, 1, false],
    ]);
    expect(entries[1]).toMatchObject({ snapshotId: overwrite['snapshot-id'], sequenceNumber: 1, fileSequenceNumber: 1 });

    // A third round replaces bucket 0 again: the manifest of deletes from round two is not carried on.
    const newerFile = await tier(table, 0, 0, 13, 'newer');
    const third = await table.commit({ added: [newerFile], removed: [newFile.path], offsets: new Map([[0, 13]]) });
    const thirdManifests = await table.readManifestList(third['manifest-list']);
    expect(thirdManifests.reduce((total, manifest) => total + manifest.addedFilesCount + manifest.existingFilesCount, 0)).toBe(2);
    expect((await lakeRows(table, store, duck, 'name')).map((row) => row.name)).toEqual([...rows(0, 13, 'newer'), ...rows(0, 4, 'old')].map((row) => row.name));
  });

  it('refuses to write a version another writer wrote first, and the loser adopts its offsets after loading', async () => {
    // Proves "not written twice": two writers on the same base; the second's commit fails with
    // LakeCommitConflictError without touching v2, and a reload shows the winner's tiered offsets.
    const store = new InMemoryObjectStore();
    const setup = openTable(store);
    await setup.load();
    await setup.commit({ added: [await tier(setup, 0, 0, 10)], offsets: new Map([[0, 10]]) });
    const winner = openTable(store);
    const loser = new IcebergTable({ store, tableName: 'events', storeUri: STORE_URI, schema: icebergSchemaOf(COLUMNS), ids: countingIds(5_000) });
    await winner.load();
    await loser.load();
    const winning = await winner.commit({ added: [await tier(winner, 0, 10, 5)], offsets: new Map([[0, 15]]) });
    const losingFile = await tier(loser, 0, 10, 5);
    const before = Buffer.from(await store.get('lake/events/metadata/v2.metadata.json')).toString();

    const error = await loser.commit({ added: [losingFile], offsets: new Map([[0, 15]]) }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(LakeCommitConflictError);
    expect(error).toMatchObject({ code: 'Conflict', metadataVersion: 2, tableName: 'events' });
    expect(Buffer.from(await store.get('lake/events/metadata/v2.metadata.json')).toString()).toBe(before);
    expect((await loser.load()).currentSnapshot?.['snapshot-id']).toBe(winning['snapshot-id']);
    expect(loser.tieredOffsets()).toEqual(new Map([[0, 15]]));
    expect(contiguousOffsets(await lakeRows(loser, store, duck))).toEqual(new Map([[0, 15]]));
  });

  it('finds a commit whose hint was never written and refuses to commit over it', async () => {
    // Proves a writer that stopped after v{N+1}.metadata.json but before version-hint.text is recognised:
    // load reads past the hint, the round's offsets are adopted, and a retry on the stale base is refused.
    const store = new InMemoryObjectStore();
    const failingHint: LakeObjectStore = {
      get: (key) => store.get(key),
      list: (prefix) => store.list(prefix),
      put: async (key, body) => {
        if (key.endsWith('version-hint.text') && Buffer.from(body).toString() === '2') throw new Error('the writer stopped here');
        return store.put(key, body);
      },
    };
    const table = openTable(failingHint);
    await table.load();
    await table.commit({ added: [await tier(table, 0, 0, 10)], offsets: new Map([[0, 10]]) });
    const round = { added: [await tier(table, 0, 10, 10)], offsets: new Map([[0, 20]]) };
    await expect(table.commit(round)).rejects.toThrow('the writer stopped here');
    expect(Buffer.from(await store.get('lake/events/metadata/version-hint.text')).toString()).toBe('1');

    await expect(table.commit(round)).rejects.toBeInstanceOf(LakeCommitConflictError);
    const reader = openTable(store);
    expect((await reader.load()).version).toBe(2);
    expect(reader.tieredOffsets()).toEqual(new Map([[0, 20]]));
    expect(contiguousOffsets(await lakeRows(reader, store, duck))).toEqual(new Map([[0, 20]]));
  });

  it.each<[string, (table: IcebergTable, live: DataFile[]) => Promise<unknown>, RegExp]>([
    ['a commit with nothing in it', (table) => table.commit({ added: [], offsets: new Map() }), /add or remove/],
    ['removing a file that is not live', (table) => table.commit({ added: [], removed: [`${STORE_URI}/lake/events/data/nope.parquet`], offsets: new Map() }), /not live/],
    ['adding a file that is already live', (table, live) => table.commit({ added: [live[0]!], removed: [live[1]!.path], offsets: new Map() }), /already live/],
    ['adding and removing one file', (table, live) => table.commit({ added: [live[0]!], removed: [live[0]!.path], offsets: new Map() }), /both added and removed/],
    [
      'adding a file twice',
      async (table) => {
        const file = await tier(table, 0, 10, 1);
        return table.commit({ added: [file, file], offsets: new Map() });
      },
      /added twice/,
    ],
  ])('refuses %s as InvalidArgumentError and writes no metadata', async (_case, commit, message) => {
    // Proves a malformed round is refused before any metadata version is written.
    const store = new InMemoryObjectStore();
    const table = openTable(store);
    await table.load();
    const live = [await tier(table, 0, 0, 10), await tier(table, 1, 0, 10)];
    await table.commit({ added: live, offsets: new Map([[0, 10], [1, 10]]) });
    const error = await commit(table, live).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(String(error)).toMatch(message);
    const versions = (await store.list('lake/events/metadata/')).map((entry) => entry.key).filter((key) => key.endsWith('.metadata.json'));
    expect(versions).toEqual(['lake/events/metadata/v1.metadata.json']);
  });

  it(`merges the manifests once a snapshot would carry ${LAKE_LIMITS.manifestsPerSnapshotMax}`, async () => {
    // Proves a log table's manifest list stays bounded over many appends, and the merged manifest still
    // lists every file once (as existing, with the sequence number it was added at).
    const store = new InMemoryObjectStore();
    const table = openTable(store);
    await table.load();
    const rounds = LAKE_LIMITS.manifestsPerSnapshotMax + 3;
    let snapshot;
    for (let round = 0; round < rounds; round++) {
      snapshot = await table.commit({ added: [await tier(table, round % 4, Math.floor(round / 4), 1)], offsets: new Map([[round % 4, Math.floor(round / 4) + 1]]) });
      const manifests = await table.readManifestList(snapshot['manifest-list']);
      expect(manifests.length).toBeLessThanOrEqual(LAKE_LIMITS.manifestsPerSnapshotMax);
    }
    const manifests = await table.readManifestList(snapshot!['manifest-list']);
    expect(manifests.length).toBeLessThan(5);
    const entries = (await Promise.all(manifests.map((manifest) => table.readManifest(manifest.path)))).flat();
    const merged = entries.filter((entry) => entry.status === ENTRY_STATUS.existing);
    expect(merged.length).toBeGreaterThan(LAKE_LIMITS.manifestsPerSnapshotMax - 2);
    expect(new Set(merged.map((entry) => entry.sequenceNumber)).size).toBe(merged.length);
    const read = await lakeRows(table, store, duck, '__bucket, __offset');
    expect(read).toHaveLength(rounds);
    expect(contiguousOffsets(read)).toEqual(table.tieredOffsets());
  });

  it('refuses offsets going back, a file beyond its tiered offset and a commit before load', async () => {
    // Proves the programming errors a tiering worker could make fail loudly (assertions).
    const store = new InMemoryObjectStore();
    const table = openTable(store);
    await expect(table.commit({ added: [], offsets: new Map() })).rejects.toThrow('load() it first');
    await table.load();
    await table.commit({ added: [await tier(table, 0, 0, 10)], offsets: new Map([[0, 10]]) });
    await expect(table.commit({ added: [await tier(table, 0, 10, 1)], offsets: new Map([[0, 9]]) })).rejects.toThrow('go back from 10 to 9');
    await expect(table.commit({ added: [await tier(table, 0, 10, 5)], offsets: new Map([[0, 12]]) })).rejects.toThrow('holds offset 14 of bucket 0, which is tiered only up to 12');
    await expect(table.commit({ added: [await tier(table, 1, 0, 5)], offsets: new Map() })).rejects.toThrow('tiered only up to 0');
  });

  it('refuses metadata of a table at another location', async () => {
    // Proves a misconfigured store URI fails at load instead of resolving data files to wrong keys.
    const store = new InMemoryObjectStore();
    const table = openTable(store);
    await table.load();
    await table.commit({ added: [await tier(table, 0, 0, 1)], offsets: new Map([[0, 1]]) });
    const elsewhere = new IcebergTable({ store, tableName: 'events', storeUri: 's3://other-bucket', schema: icebergSchemaOf(COLUMNS), ids: countingIds() });
    await expect(elsewhere.load()).rejects.toThrow('not s3://other-bucket/lake/events');
  });

  it('keeps the stored schema when the table already exists', async () => {
    // Proves field ids come from the lake table's metadata, never from a recomputation.
    const store = new InMemoryObjectStore();
    const table = openTable(store);
    await table.load();
    await table.commit({ added: [await tier(table, 0, 0, 1)], offsets: new Map([[0, 1]]) });
    const other = new IcebergTable({ store, tableName: 'events', storeUri: STORE_URI, schema: icebergSchemaOf([{ name: 'x', type: 'int32' }]), ids: countingIds() });
    await other.load();
    expect(other.schema()).toEqual(icebergSchemaOf(COLUMNS));
  });
});
