import type { ColumnSpec } from '@mink/meta';
import { InvalidArgumentError, NotFoundError } from '@mink/protocol';
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

/** Writes one data file of `count` rows of `bucket` from `startOffset` (values tagged `tag`) for the round `round` and returns it. */
async function tier(table: IcebergTable, bucket: number, startOffset: number, count: number, tag = 'v1', round = 'r1') {
  const file = parquetOfArrow({ schema: table.schema(), bucket, batches: [streamBatch(COLUMNS, rows(startOffset, count, tag), startOffset)] });
  return table.writeDataFile(file, round);
}

/** Keys of the table's metadata objects (`*.metadata.json`). */
async function metadataKeys(store: LakeObjectStore, table = 'events'): Promise<string[]> {
  return (await store.list(`lake/${table}/metadata/`)).map((entry) => entry.key).filter((key) => key.endsWith('.metadata.json'));
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

  it('loads a table with no metadata key as version 0 with nothing tiered, without reading the store', async () => {
    // Proves a first round starts from offset 0 of every bucket and an empty lake, whatever the folder holds.
    const store = new InMemoryObjectStore();
    const table = openTable(store);
    expect(await table.load(null)).toEqual({ metadataKey: null, version: 0, metadata: null, currentSnapshot: null });
    expect(table.tieredOffsets()).toEqual(new Map());
    expect(await table.dataFiles()).toEqual([]);
    expect(store.calls).toEqual({ put: 0, get: 0, delete: 0, list: 0 });
  });

  it('creates the table with its first commit in the Iceberg file-system layout, the hint left to publishHint', async () => {
    // Proves the layout: v1-{tag}.metadata.json, a manifest list and a manifest under metadata/, data files
    // named after the round under data/, metadata any v2 reader accepts, and no hint until it is published.
    const store = new InMemoryObjectStore();
    const table = openTable(store);
    await table.load(null);
    const files = [await tier(table, 0, 0, 30), await tier(table, 1, 0, 20)];
    const { snapshot, metadataKey } = await table.commit({ added: files, offsets: new Map([[0, 30], [1, 20]]), tag: 'r1' });

    expect(metadataKey).toBe('lake/events/metadata/v1-r1.metadata.json');
    const keys = (await store.list('lake/events/')).map((entry) => entry.key);
    expect(keys).toEqual([
      'lake/events/data/__bucket=0/r1-0-29-00000000-0000-4000-8000-000000000001.parquet',
      'lake/events/data/__bucket=1/r1-0-19-00000000-0000-4000-8000-000000000002.parquet',
      'lake/events/metadata/r1-00000000-0000-4000-8000-000000000004-m0.avro',
      `lake/events/metadata/snap-${snapshot['snapshot-id']}-r1-00000000-0000-4000-8000-000000000005.avro`,
      'lake/events/metadata/v1-r1.metadata.json',
    ]);
    expect(await table.publishHint(metadataKey)).toBe(true);
    expect(Buffer.from(await store.get('lake/events/metadata/version-hint.text')).toString()).toBe('1-r1');
    const metadata = await metadataOf(store, metadataKey);
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
    expect(metadata['metadata-log']).toEqual([]);
  });

  it('appends a second snapshot; DuckDB reads every tiered row exactly once with contiguous offsets per bucket', async () => {
    // Proves the append path end to end: two rounds, the second on top of the first, read back through
    // the manifests by an independent reader, and the tiered offsets merged over both rounds.
    const store = new InMemoryObjectStore();
    const table = openTable(store);
    await table.load(null);
    const { snapshot: first, metadataKey: firstKey } = await table.commit({
      added: [await tier(table, 0, 0, 30), await tier(table, 1, 0, 20)],
      offsets: new Map([[0, 30], [1, 20]]),
      tag: 'r1',
    });
    const { snapshot: second, metadataKey } = await table.commit({
      added: [await tier(table, 0, 30, 15, 'v1', 'r2'), await tier(table, 2, 0, 5, 'v1', 'r2')],
      offsets: new Map([[0, 45], [2, 5]]),
      tag: 'r2',
    });

    expect(metadataKey).toBe('lake/events/metadata/v2-r2.metadata.json');
    expect(second).toMatchObject({ 'parent-snapshot-id': first['snapshot-id'], 'sequence-number': 2, summary: { operation: 'append', 'total-records': '70', 'total-data-files': '4' } });
    expect((await metadataOf(store, metadataKey))['metadata-log']).toEqual([{ 'timestamp-ms': expect.any(Number), 'metadata-file': `${STORE_URI}/${firstKey}` }]);
    const reloaded = openTable(store);
    expect((await reloaded.load(metadataKey)).version).toBe(2);
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
    await table.load(null);
    const oldFile = await tier(table, 0, 0, 10, 'old');
    await table.commit({ added: [oldFile, await tier(table, 1, 0, 4, 'old')], offsets: new Map([[0, 10], [1, 4]]), tag: 'r1' });
    const newFile = await tier(table, 0, 0, 12, 'new', 'r2');
    const { snapshot: overwrite } = await table.commit({ added: [newFile], removed: [oldFile.path], offsets: new Map([[0, 12]]), tag: 'r2' });

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
    const newerFile = await tier(table, 0, 0, 13, 'newer', 'r3');
    const { snapshot: third } = await table.commit({ added: [newerFile], removed: [newFile.path], offsets: new Map([[0, 13]]), tag: 'r3' });
    const thirdManifests = await table.readManifestList(third['manifest-list']);
    expect(thirdManifests.reduce((total, manifest) => total + manifest.addedFilesCount + manifest.existingFilesCount, 0)).toBe(2);
    expect((await lakeRows(table, store, duck, 'name')).map((row) => row.name)).toEqual([...rows(0, 13, 'newer'), ...rows(0, 4, 'old')].map((row) => row.name));
  });

  it('commits a removal without a new file as a delete snapshot, and a snapshot of no change that only moves the tiered offsets', async () => {
    // Proves the two commits a primary-key round makes when its changes empty a bucket or cancel out: the
    // bucket's file is gone from the next snapshot (operation delete), and a later snapshot with the same
    // files records more tiered, so the next round starts after it.
    const store = new InMemoryObjectStore();
    const table = openTable(store, 'users', ['id']);
    await table.load(null);
    const bucketZero = await tier(table, 0, 0, 5);
    const bucketOne = await tier(table, 1, 0, 3);
    await table.commit({ added: [bucketZero, bucketOne], offsets: new Map([[0, 5], [1, 3]]), tag: 'r1' });
    const { snapshot: removal } = await table.commit({ added: [], removed: [bucketZero.path], offsets: new Map([[0, 9]]), tag: 'r2' });
    expect(removal.summary).toMatchObject({ operation: 'delete', 'deleted-data-files': '1', 'total-records': '3', 'total-data-files': '1', 'mink.offsets': '{"0":9,"1":3}' });
    expect((await table.dataFiles()).map((file) => file.path)).toEqual([bucketOne.path]);
    const { snapshot: offsetsOnly, metadataKey } = await table.commit({ added: [], offsets: new Map([[1, 7]]), tag: 'r3' });
    expect(offsetsOnly.summary).toMatchObject({ operation: 'append', 'added-data-files': '0', 'total-records': '3', 'mink.offsets': '{"0":9,"1":7}' });
    await table.load(metadataKey);
    expect((await table.dataFiles()).map((file) => file.path)).toEqual([bucketOne.path]);
    expect(await lakeRows(table, store, duck, '__bucket, __offset')).toEqual([0, 1, 2].map((offset) => ({ __bucket: 1, __offset: String(offset) })));
  });

  it('lets two rounds racing from the same base write their files side by side; each metadata key reads as its own round', async () => {
    // Proves a fenced round cannot clobber its successor (or the other way round): both commit on v1 with
    // different tags, nothing of one overwrites the other's, and a reader given either key (as the metadata
    // log would record one of them) sees exactly that round's rows and offsets on top of the base.
    const store = new InMemoryObjectStore();
    const setup = openTable(store);
    await setup.load(null);
    const { metadataKey: base } = await setup.commit({ added: [await tier(setup, 0, 0, 10)], offsets: new Map([[0, 10]]), tag: 'r1' });
    // Both writers draw the same uuids and snapshot ids: only the tag keeps their objects apart.
    const zombie = openTable(store);
    const successor = openTable(store);
    await zombie.load(base);
    await successor.load(base);
    const zombieFile = await tier(zombie, 0, 10, 5, 'zombie', 'r2');
    const zombieCommit = await zombie.commit({ added: [zombieFile], offsets: new Map([[0, 15]]), tag: 'r2' });
    const contents = async () => new Map(await Promise.all(store.keys().map(async (key) => [key, Buffer.from(await store.get(key)).toString('base64')] as const)));
    const zombieObjects = await contents();
    const successorFile = await tier(successor, 0, 10, 8, 'successor', 'r3');
    expect(zombieFile.path).not.toBe(successorFile.path);
    const successorCommit = await successor.commit({ added: [successorFile], offsets: new Map([[0, 18]]), tag: 'r3' });

    expect([zombieCommit.metadataKey, successorCommit.metadataKey]).toEqual(['lake/events/metadata/v2-r2.metadata.json', 'lake/events/metadata/v2-r3.metadata.json']);
    expect(await metadataKeys(store)).toEqual(['lake/events/metadata/v1-r1.metadata.json', zombieCommit.metadataKey, successorCommit.metadataKey]);
    const after = await contents();
    for (const [key, body] of zombieObjects) expect([key, after.get(key)]).toEqual([key, body]);
    expect(after.size).toBe(zombieObjects.size + 4); // the successor's data file, manifest, manifest list and metadata
    expect(store.keys().filter((key) => key.includes('version-hint'))).toEqual([]);

    for (const [metadataKey, name, end] of [[zombieCommit.metadataKey, 'zombie', 15], [successorCommit.metadataKey, 'successor', 18]] as const) {
      const reader = openTable(store);
      await reader.load(metadataKey);
      expect(reader.tieredOffsets()).toEqual(new Map([[0, end]]));
      const read = await lakeRows(reader, store, duck, 'id, name, __bucket, __offset');
      expect(contiguousOffsets(read)).toEqual(new Map([[0, end]]));
      expect(read.map((row) => row.name)).toEqual([...rows(0, 10), ...rows(10, end - 10, name)].map((row) => row.name));
    }
  });

  it('refuses to commit a round twice under one tag, leaving the first attempt as it was', async () => {
    // Proves the safety net: a retried round whose first attempt wrote v{N+1}-{tag} fails with
    // LakeCommitConflictError (checked before any work and again before the write) and nothing is overwritten.
    const store = new InMemoryObjectStore();
    const table = openTable(store);
    await table.load(null);
    const { metadataKey: base } = await table.commit({ added: [await tier(table, 0, 0, 10)], offsets: new Map([[0, 10]]), tag: 'r1' });
    const first = openTable(store);
    const retry = new IcebergTable({ store, tableName: 'events', storeUri: STORE_URI, schema: icebergSchemaOf(COLUMNS), ids: countingIds(5_000) });
    await first.load(base);
    await retry.load(base);
    const { metadataKey } = await first.commit({ added: [await tier(first, 0, 10, 5, 'v1', 'r2')], offsets: new Map([[0, 15]]), tag: 'r2' });
    const before = Buffer.from(await store.get(metadataKey)).toString();

    const error = await retry.commit({ added: [await tier(retry, 0, 10, 5, 'v1', 'r2')], offsets: new Map([[0, 15]]), tag: 'r2' }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(LakeCommitConflictError);
    expect(error).toMatchObject({ code: 'Conflict', metadataKey: 'lake/events/metadata/v2-r2.metadata.json', tableName: 'events' });
    expect(Buffer.from(await store.get(metadataKey)).toString()).toBe(before);
    // The check right before the write: the key appears while the retry is writing its manifests.
    const racing = openTable(store);
    await racing.load(base);
    const racingStore: LakeObjectStore = {
      get: (key) => store.get(key),
      list: (prefix) => store.list(prefix),
      put: async (key, body) => {
        if (key.endsWith('-m0.avro')) await store.put('lake/events/metadata/v2-r4.metadata.json', Buffer.from('{}'));
        return store.put(key, body);
      },
    };
    const late = new IcebergTable({ store: racingStore, tableName: 'events', storeUri: STORE_URI, schema: icebergSchemaOf(COLUMNS), ids: countingIds(7_000) });
    await late.load(base);
    await expect(late.commit({ added: [await tier(late, 0, 10, 5, 'v1', 'r4')], offsets: new Map([[0, 15]]), tag: 'r4' })).rejects.toBeInstanceOf(LakeCommitConflictError);
    expect(Buffer.from(await store.get('lake/events/metadata/v2-r4.metadata.json')).toString()).toBe('{}');
  });

  it('publishes a hint that resolves to the metadata file by the v%s.metadata.json rule, and never moves it back', async () => {
    // Proves what file-system catalog readers (DuckDB's iceberg extension) see: the hint text substituted
    // into `v%s.metadata.json` names exactly the committed file; an older round's late publish leaves a
    // newer hint alone; a lost hint is harmless because loading goes by the key; a garbled hint is replaced.
    const store = new InMemoryObjectStore();
    const table = openTable(store);
    await table.load(null);
    const { metadataKey: first } = await table.commit({ added: [await tier(table, 0, 0, 10, 'v1', 'r7')], offsets: new Map([[0, 10]]), tag: 'r7' });
    const { metadataKey: second } = await table.commit({ added: [await tier(table, 0, 10, 3, 'v1', 'r9')], offsets: new Map([[0, 13]]), tag: 'r9' });
    expect(await table.readHint()).toBeNull();
    const reader = openTable(store);
    const loaded = await reader.load(second);
    expect(reader.tieredOffsets()).toEqual(new Map([[0, 13]]));

    expect(await table.publishHint(second)).toBe(true);
    const hint = Buffer.from(await store.get('lake/events/metadata/version-hint.text')).toString();
    expect(hint).toBe('2-r9');
    const resolved = `lake/events/metadata/${'v%s.metadata.json'.replace('%s', hint)}`;
    expect(resolved).toBe(second);
    expect(await table.readHint()).toBe(second);
    expect((await metadataOf(store, resolved))['current-snapshot-id']).toBe(loaded.currentSnapshot?.['snapshot-id']);

    expect(await table.publishHint(first)).toBe(false);
    expect(Buffer.from(await store.get('lake/events/metadata/version-hint.text')).toString()).toBe('2-r9');
    await store.put('lake/events/metadata/version-hint.text', Buffer.from('garbage'));
    expect(await table.publishHint(first)).toBe(true);
    expect(await table.readHint()).toBe(first);
    await expect(table.publishHint('lake/other/metadata/v1-r1.metadata.json')).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it.each<[string, (table: IcebergTable, live: DataFile[]) => Promise<unknown>, RegExp]>([
    ['a commit with nothing in it', (table) => table.commit({ added: [], offsets: new Map(), tag: 'r2' }), /add or remove/],
    ['a commit of no file at the offsets already tiered', (table) => table.commit({ added: [], offsets: new Map([[0, 10], [1, 10]]), tag: 'r2' }), /or move a tiered offset forward/],
    ['removing a file that is not live', (table) => table.commit({ added: [], removed: [`${STORE_URI}/lake/events/data/nope.parquet`], offsets: new Map(), tag: 'r2' }), /not live/],
    ['adding a file that is already live', (table, live) => table.commit({ added: [live[0]!], removed: [live[1]!.path], offsets: new Map(), tag: 'r2' }), /already live/],
    ['adding and removing one file', (table, live) => table.commit({ added: [live[0]!], removed: [live[0]!.path], offsets: new Map(), tag: 'r2' }), /both added and removed/],
    [
      'adding a file twice',
      async (table) => {
        const file = await tier(table, 0, 10, 1, 'v1', 'r2');
        return table.commit({ added: [file, file], offsets: new Map(), tag: 'r2' });
      },
      /added twice/,
    ],
    ['a tag with a dash', async (table) => table.commit({ added: [await tier(table, 0, 10, 1)], offsets: new Map([[0, 11]]), tag: 'r-2' }), /not a commit tag/],
    ['an empty tag', async (table) => table.commit({ added: [await tier(table, 0, 10, 1)], offsets: new Map([[0, 11]]), tag: '' }), /not a commit tag/],
    ['a tag that is too long', async (table) => table.commit({ added: [await tier(table, 0, 10, 1)], offsets: new Map([[0, 11]]), tag: 'r'.repeat(33) }), /at most 32/],
    ['a data file of a round with a slash', (table) => tier(table, 0, 10, 1, 'v1', 'r2/x'), /not a commit tag/],
  ])('refuses %s as InvalidArgumentError and writes no metadata', async (_case, commit, message) => {
    // Proves a malformed round is refused before any metadata version is written.
    const store = new InMemoryObjectStore();
    const table = openTable(store);
    await table.load(null);
    const live = [await tier(table, 0, 0, 10), await tier(table, 1, 0, 10)];
    await table.commit({ added: live, offsets: new Map([[0, 10], [1, 10]]), tag: 'r1' });
    const error = await commit(table, live).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(String(error)).toMatch(message);
    expect(await metadataKeys(store)).toEqual(['lake/events/metadata/v1-r1.metadata.json']);
  });

  it.each([
    ['another table', 'lake/other/metadata/v1-r1.metadata.json'],
    ['no tag', 'lake/events/metadata/v1.metadata.json'],
    ['version 0', 'lake/events/metadata/v0-r1.metadata.json'],
    ['a leading zero', 'lake/events/metadata/v01-r1.metadata.json'],
    ['a data file', 'lake/events/data/__bucket=0/r1-0-9-x.parquet'],
  ])('refuses to load a metadata key of %s', async (_case, key) => {
    // Proves a key the view holds by mistake fails as InvalidArgumentError before anything is read.
    const store = new InMemoryObjectStore();
    const table = openTable(store);
    await expect(table.load(key)).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(store.calls.get).toBe(0);
  });

  it('fails to load a metadata key that names no object with NotFoundError', async () => {
    // Proves a view naming metadata the store lost is an expected, typed outcome, not a new empty table.
    await expect(openTable(new InMemoryObjectStore()).load('lake/events/metadata/v3-r5.metadata.json')).rejects.toBeInstanceOf(NotFoundError);
  });

  it(`merges the manifests once a snapshot would carry ${LAKE_LIMITS.manifestsPerSnapshotMax}`, async () => {
    // Proves a log table's manifest list stays bounded over many appends, and the merged manifest still
    // lists every file once (as existing, with the sequence number it was added at).
    const store = new InMemoryObjectStore();
    const table = openTable(store);
    await table.load(null);
    const rounds = LAKE_LIMITS.manifestsPerSnapshotMax + 3;
    let snapshot;
    for (let round = 0; round < rounds; round++) {
      const tag = `r${round}`;
      ({ snapshot } = await table.commit({
        added: [await tier(table, round % 4, Math.floor(round / 4), 1, 'v1', tag)],
        offsets: new Map([[round % 4, Math.floor(round / 4) + 1]]),
        tag,
      }));
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
    await expect(table.commit({ added: [], offsets: new Map(), tag: 'r1' })).rejects.toThrow('load() it first');
    await table.load(null);
    await table.commit({ added: [await tier(table, 0, 0, 10)], offsets: new Map([[0, 10]]), tag: 'r1' });
    await expect(table.commit({ added: [await tier(table, 0, 10, 1)], offsets: new Map([[0, 9]]), tag: 'r2' })).rejects.toThrow('go back from 10 to 9');
    await expect(table.commit({ added: [await tier(table, 0, 10, 5)], offsets: new Map([[0, 12]]), tag: 'r2' })).rejects.toThrow(
      'holds offset 14 of bucket 0, which is tiered only up to 12',
    );
    await expect(table.commit({ added: [await tier(table, 1, 0, 5)], offsets: new Map(), tag: 'r2' })).rejects.toThrow('tiered only up to 0');
  });

  it('refuses metadata of a table at another location', async () => {
    // Proves a misconfigured store URI fails at load instead of resolving data files to wrong keys.
    const store = new InMemoryObjectStore();
    const table = openTable(store);
    await table.load(null);
    const { metadataKey } = await table.commit({ added: [await tier(table, 0, 0, 1)], offsets: new Map([[0, 1]]), tag: 'r1' });
    const elsewhere = new IcebergTable({ store, tableName: 'events', storeUri: 's3://other-bucket', schema: icebergSchemaOf(COLUMNS), ids: countingIds() });
    await expect(elsewhere.load(metadataKey)).rejects.toThrow('not s3://other-bucket/lake/events');
  });

  it('keeps the stored schema when the table already exists', async () => {
    // Proves field ids come from the lake table's metadata, never from a recomputation.
    const store = new InMemoryObjectStore();
    const table = openTable(store);
    await table.load(null);
    const { metadataKey } = await table.commit({ added: [await tier(table, 0, 0, 1)], offsets: new Map([[0, 1]]), tag: 'r1' });
    const other = new IcebergTable({ store, tableName: 'events', storeUri: STORE_URI, schema: icebergSchemaOf([{ name: 'x', type: 'int32' }]), ids: countingIds() });
    await other.load(metadataKey);
    expect(other.schema()).toEqual(icebergSchemaOf(COLUMNS));
  });
});
