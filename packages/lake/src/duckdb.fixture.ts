/**
 * DuckDB as an independent reader of the lake's Parquet files in tests (its `iceberg` and `httpfs`
 * extensions cannot be downloaded here, so tests walk the Iceberg metadata themselves and hand DuckDB
 * local copies of the data files).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';

export type DuckRow = Record<string, unknown>;

export interface DuckReader {
  /** Rows of `sql` as JSON-friendly values (BIGINT as a decimal string, timestamps as text, blobs escaped). */
  json(sql: string): Promise<DuckRow[]>;
  /** Rows of `sql` as JavaScript values (BIGINT as bigint, TIMESTAMPTZ as Date, BLOB as Buffer). */
  js(sql: string): Promise<DuckRow[]>;
  /** Writes `bytes` to a local file named after `key` and returns its path, quoted for SQL. */
  file(key: string, bytes: Uint8Array): string;
  close(): void;
}

export async function openDuckReader(): Promise<DuckReader> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  const folder = mkdtempSync(join(tmpdir(), 'mink-lake-duckdb-'));
  return {
    json: async (sql) => (await connection.runAndReadAll(sql)).getRowObjectsJson() as DuckRow[],
    js: async (sql) => (await connection.runAndReadAll(sql)).getRowObjectsJS() as DuckRow[],
    file: (key, bytes) => {
      const path = join(folder, key);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, bytes);
      return `'${path.replace(/'/g, "''")}'`;
    },
    close: () => {
      connection.closeSync();
      instance.closeSync();
      rmSync(folder, { recursive: true, force: true });
    },
  };
}
