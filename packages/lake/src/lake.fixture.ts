/** Helpers of the lake table tests: stable ids, a table's rows as DuckDB reads them from its live files. */
import type { ColumnSpec } from '@mink/meta';
import { type Row, encodeBatch } from '@mink/records';
import type { DuckReader, DuckRow } from './duckdb.fixture';
import type { IcebergTable, LakeIdSource } from './iceberg-table';
import type { LakeObjectStore } from './lake-store';
import type { LakeBatch } from './parquet-of-arrow';

/** Ids and time that count up, so names and timestamps are the same in every run. */
export function countingIds(snapshotIdBase = 1_000): LakeIdSource {
  let uuids = 0;
  let snapshots = snapshotIdBase;
  let nowMs = 1_800_000_000_000;
  return {
    uuid: () => `00000000-0000-4000-8000-${String(++uuids).padStart(12, '0')}`,
    snapshotId: () => ++snapshots,
    nowMs: () => (nowMs += 1_000),
  };
}

/** A stream batch of `rows` stored at `startOffset`, appended at `appendTimeMs`. */
export function streamBatch(columns: ColumnSpec[], rows: Row[], startOffset: number, appendTimeMs = 1_750_000_000_000): LakeBatch {
  return { payload: encodeBatch(columns, rows, appendTimeMs), startOffset };
}

/**
 * Every row of the table's current snapshot, as DuckDB reads the live data files (found by walking
 * metadata → manifest list → manifests, then copied out of the store), ordered by bucket and offset.
 */
export async function lakeRows(table: IcebergTable, store: LakeObjectStore, duck: DuckReader, select = '*'): Promise<DuckRow[]> {
  const files = await table.dataFiles();
  if (files.length === 0) return [];
  const paths: string[] = [];
  for (const file of files) {
    const key = table.keyOf(file.path);
    paths.push(duck.file(key, await store.get(key)));
  }
  // The data folders are named `__bucket={b}`; hive partitioning is off so the files' own column is read.
  return duck.json(`select ${select} from read_parquet([${paths.join(', ')}], hive_partitioning = false) order by __bucket, __offset`);
}

/** Checks that every bucket's offsets run from `from` without gap or repeat; returns the end offset per bucket. */
export function contiguousOffsets(rows: DuckRow[], from: ReadonlyMap<number, number> = new Map()): Map<number, number> {
  const next = new Map<number, number>();
  for (const row of rows) {
    const bucket = Number(row.__bucket);
    const offset = Number(row.__offset);
    const expected = next.get(bucket) ?? from.get(bucket) ?? 0;
    if (offset !== expected) throw new Error(`bucket ${bucket}: offset ${offset} where ${expected} was expected`);
    next.set(bucket, offset + 1);
  }
  return next;
}
