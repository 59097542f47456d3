import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { type DataFile, IcebergTable, icebergSchemaOf } from '@mink/lake';
import type { ColumnSpec } from '@mink/meta';
import { S3ObjectStore } from '@mink/s3stream';

/**
 * DuckDB's rows of `select` over the live data files of `table`'s lake at `metadataKey` (metadata → manifest
 * list → manifests → Parquet), read from the S3 server at `s3Endpoint` (bucket `mink`, s3rver's credentials)
 * as an Iceberg reader does, ordered by bucket and offset.
 */
export async function lakeSelect(
  s3Endpoint: string,
  table: string,
  columns: ColumnSpec[],
  primaryKey: string[],
  metadataKey: string | null,
  select: string,
  key: { accessKeyId: string; secretAccessKey: string } = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
): Promise<{ rows: Record<string, unknown>[]; files: DataFile[] }> {
  const store = new S3ObjectStore({ endpoint: s3Endpoint, bucket: 'mink', region: 'us-east-1', ...key });
  const lake = new IcebergTable({ store, tableName: table, storeUri: 's3://mink', schema: icebergSchemaOf(columns, primaryKey) });
  await lake.load(metadataKey);
  const files = await lake.dataFiles();
  if (files.length === 0) return { rows: [], files };
  const local = mkdtempSync(join(tmpdir(), 'mink-lake-'));
  try {
    const paths: string[] = [];
    for (const [index, file] of files.entries()) {
      const path = join(local, `${index}.parquet`);
      writeFileSync(path, await store.get(lake.keyOf(file.path)));
      paths.push(`'${path}'`);
    }
    const duck = await DuckDBInstance.create(':memory:');
    const connection = await duck.connect();
    const reader = await connection.runAndReadAll(`SELECT ${select} FROM read_parquet([${paths.join(', ')}], hive_partitioning = false) ORDER BY __bucket, __offset`);
    const rows = reader.getRowObjectsJson() as Record<string, unknown>[];
    connection.closeSync();
    return { rows, files };
  } finally {
    rmSync(local, { recursive: true, force: true });
  }
}
