import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type S3ServerHandle, startS3Server } from '@mink/devcluster';
import type { ColumnSpec } from '@mink/meta';
import { S3ObjectStore } from '@mink/s3stream';
import { type DuckReader, openDuckReader } from './duckdb.fixture';
import { icebergSchemaOf } from './iceberg-schema';
import { IcebergTable } from './iceberg-table';
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

  it('appends, replaces a bucket copy-on-write and reloads from the real store', async () => {
    // Proves the port fits S3ObjectStore as it is (no adapter), and the whole write and read path over
    // real S3 requests: metadata, hint, manifests and Parquet files, read back by DuckDB exactly once each.
    const table = new IcebergTable({ store, tableName: 'clicks', storeUri: `s3://${BUCKET}/cluster-a`, schema: icebergSchemaOf(COLUMNS) });
    const write = async (bucket: number, startOffset: number, count: number) => {
      const rows = Array.from({ length: count }, (_, index) => ({ id: BigInt(startOffset + index), at: 1_700_000_000_000 + index }));
      return table.writeDataFile(parquetOfArrow({ schema: table.schema(), bucket, batches: [streamBatch(COLUMNS, rows, startOffset)] }));
    };
    expect((await table.load()).version).toBe(0);
    const bucketZero = await write(0, 0, 100);
    await table.commit({ added: [bucketZero, await write(1, 0, 50)], offsets: new Map([[0, 100], [1, 50]]) });
    await table.commit({ added: [await write(1, 50, 25)], offsets: new Map([[1, 75]]) });
    await table.commit({ added: [await write(0, 0, 120)], removed: [bucketZero.path], offsets: new Map([[0, 120]]) });

    const reader = new IcebergTable({ store, tableName: 'clicks', storeUri: `s3://${BUCKET}/cluster-a`, schema: icebergSchemaOf(COLUMNS) });
    const loaded = await reader.load();
    expect(loaded.version).toBe(3);
    expect(loaded.metadata?.location).toBe(`s3://${BUCKET}/cluster-a/lake/clicks`);
    expect(reader.tieredOffsets()).toEqual(new Map([[0, 120], [1, 75]]));
    const read = await lakeRows(reader, store, duck, 'id, __bucket, __offset, epoch_ms("at") as at_ms');
    expect(read).toHaveLength(195);
    expect(contiguousOffsets(read)).toEqual(new Map([[0, 120], [1, 75]]));
    expect(Buffer.from(await store.get('lake/clicks/metadata/version-hint.text')).toString()).toBe('3');
  });
});
