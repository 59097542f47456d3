import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type S3ServerHandle, startS3Server } from '@mink/devcluster';
import type { ColumnSpec } from '@mink/meta';
import { S3ObjectStore } from '@mink/s3stream';
import { type DuckReader, openDuckReader } from './duckdb.fixture';
import { icebergSchemaOf } from './iceberg-schema';
import { IcebergTable } from './iceberg-table';
import { lakeStoreUri } from './lake-store';
import { contiguousOffsets, lakeRows, streamBatch } from './lake.fixture';
import { parquetOfArrow } from './parquet-of-arrow';

const BUCKET = 'mink-lake-test';
const SERVER_START_TIMEOUT_MS = 20_000;
const COLUMNS: ColumnSpec[] = [
  { name: 'id', type: 'int64' },
  { name: 'at', type: 'timestamp' },
];

describe('IcebergTable on s3rver through S3ObjectStore', () => {
  let dataDir: string;
  let s3: S3ServerHandle;
  let store: S3ObjectStore;
  let duck: DuckReader;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'mink-lake-s3-'));
    s3 = await startS3Server({ dataDir, bucket: BUCKET, logFile: join(dataDir, 's3rver.log') });
    // A key prefix, so the store URI the manifests record has to include it.
    store = new S3ObjectStore({ endpoint: s3.endpoint, bucket: BUCKET, region: 'us-east-1', accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER', prefix: 'cluster-a/' });
    duck = await openDuckReader();
  }, SERVER_START_TIMEOUT_MS);

  afterAll(async () => {
    duck?.close();
    store?.close();
    await s3?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('appends, replaces a bucket copy-on-write, races two rounds and reloads from the real store', async () => {
    // Proves the port fits S3ObjectStore as it is (no adapter), and the whole write and read path over
    // real S3 requests: metadata under round-tagged keys, manifests and Parquet files, read back by DuckDB
    // exactly once each; two rounds from one base both land without overwriting each other, and the hint
    // published for the winner resolves to its metadata file.
    const storeUri = lakeStoreUri(BUCKET, 'cluster-a/');
    expect(storeUri).toBe(`s3://${BUCKET}/cluster-a`);
    const table = new IcebergTable({ store, tableName: 'clicks', storeUri, schema: icebergSchemaOf(COLUMNS) });
    const write = async (writer: IcebergTable, tag: string, bucket: number, startOffset: number, count: number) => {
      const rows = Array.from({ length: count }, (_, index) => ({ id: BigInt(startOffset + index), at: 1_700_000_000_000 + index }));
      return writer.writeDataFile(parquetOfArrow({ schema: writer.schema(), bucket, batches: [streamBatch(COLUMNS, rows, startOffset)] }), tag);
    };
    expect((await table.load(null)).version).toBe(0);
    const bucketZero = await write(table, 'r1', 0, 0, 100);
    await table.commit({ added: [bucketZero, await write(table, 'r1', 1, 0, 50)], offsets: new Map([[0, 100], [1, 50]]), tag: 'r1' });
    await table.commit({ added: [await write(table, 'r2', 1, 50, 25)], offsets: new Map([[1, 75]]), tag: 'r2' });
    const { metadataKey: base } = await table.commit({ added: [await write(table, 'r3', 0, 0, 120)], removed: [bucketZero.path], offsets: new Map([[0, 120]]), tag: 'r3' });

    // A fenced round (r4) and its successor (r5) both commit on v3.
    const zombie = new IcebergTable({ store, tableName: 'clicks', storeUri, schema: icebergSchemaOf(COLUMNS) });
    await zombie.load(base);
    const { metadataKey: lost } = await zombie.commit({ added: [await write(zombie, 'r4', 1, 75, 5)], offsets: new Map([[1, 80]]), tag: 'r4' });
    const { metadataKey: won } = await table.commit({ added: [await write(table, 'r5', 1, 75, 9)], offsets: new Map([[1, 84]]), tag: 'r5' });
    expect([lost, won]).toEqual(['lake/clicks/metadata/v4-r4.metadata.json', 'lake/clicks/metadata/v4-r5.metadata.json']);
    expect(await table.publishHint(won)).toBe(true);

    const reader = new IcebergTable({ store, tableName: 'clicks', storeUri, schema: icebergSchemaOf(COLUMNS) });
    expect(await reader.readHint()).toBe(won);
    const loaded = await reader.load(won);
    expect(loaded.version).toBe(4);
    expect(loaded.metadata?.location).toBe(`s3://${BUCKET}/cluster-a/lake/clicks`);
    expect(reader.tieredOffsets()).toEqual(new Map([[0, 120], [1, 84]]));
    const read = await lakeRows(reader, store, duck, 'id, __bucket, __offset, epoch_ms("at") as at_ms');
    expect(read).toHaveLength(204);
    expect(contiguousOffsets(read)).toEqual(new Map([[0, 120], [1, 84]]));
    expect(Buffer.from(await store.get('lake/clicks/metadata/version-hint.text')).toString()).toBe('4-r5');
    await reader.load(lost);
    expect(contiguousOffsets(await lakeRows(reader, store, duck))).toEqual(new Map([[0, 120], [1, 80]]));
  });
});
