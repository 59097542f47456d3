import type { DataFile, icebergSchemaOf } from '@mink/lake';
import { CliError } from './io';
import { renderTable } from './render';

/** The columns of a table as the lake's schema takes them. */
type ColumnSpec = Parameters<typeof icebergSchemaOf>[0][number];

/** The property that switches a table's lake on, and the one that sets how often it is tiered. */
const LAKE_ENABLED_PROPERTY = 'table.datalake.enabled';
const LAKE_FRESHNESS_PROPERTY = 'table.datalake.freshness';
/** The freshness a table without the property is tiered at (README "Lake"). */
const DEFAULT_LAKE_FRESHNESS = '3m';

/** What `GET /v1/tables/{name}` answers that the lake commands use; optional fields, so a newer gateway cannot break them. */
export interface DescribedTable {
  name?: string;
  columns?: ColumnSpec[];
  primaryKey?: string[];
  properties?: Record<string, string>;
  lake?: { metadataKey?: string | null; snapshotId?: string | number | null; tieredAt?: string | null };
}

/** A table's lake as the metadata log names it: the Iceberg metadata object of its newest committed round. */
export interface TableLake {
  table: string;
  metadataKey: string;
  columns: ColumnSpec[];
  primaryKey: string[];
}

/** The lake of `table` as described, or null while it has none to read (see `noLakeReason`). */
export function lakeOfTable(table: string, described: DescribedTable): TableLake | null {
  const metadataKey = described.lake?.metadataKey;
  if (typeof metadataKey !== 'string' || metadataKey === '') return null;
  return { table, metadataKey, columns: described.columns ?? [], primaryKey: described.primaryKey ?? [] };
}

/** The lake of `table` as described, or a CliError saying in one line why it has none (`noLakeReason`). */
export function requireLake(table: string, described: DescribedTable): TableLake {
  const lake = lakeOfTable(table, described);
  if (lake === null) throw new CliError(`table '${table}' ${noLakeReason(described)}`);
  return lake;
}

/**
 * Why a described table has no lake to read, as the end of a sentence starting with the table's name: the
 * lake is off, or no tiering round has committed yet (the first comes one freshness after it was switched on).
 */
export function noLakeReason(described: DescribedTable): string {
  const properties = described.properties ?? {};
  if (properties[LAKE_ENABLED_PROPERTY] !== 'true') {
    return `has no lake: ${LAKE_ENABLED_PROPERTY} is not true (mink table alter ${described.name ?? '<table>'} --property ${LAKE_ENABLED_PROPERTY}=true)`;
  }
  const freshness = properties[LAKE_FRESHNESS_PROPERTY] ?? DEFAULT_LAKE_FRESHNESS;
  return `has no lake yet: no tiering round has committed (rounds are due every ${freshness})`;
}

/** One live data file as `mink lake files` prints it. */
export interface LakeFileLine {
  /** The object's key in the bucket (`lake/{table}/data/__bucket={b}/….parquet`). */
  key: string;
  /** Its location as the manifests record it (`s3://{bucket}/{key}`). */
  path: string;
  /** The `__bucket` partition value (for a partitioned table, the lake bucket of a partition's bucket). */
  bucket: number;
  records: number;
  bytes: number;
}

/** What `mink lake files` prints: the table's current snapshot and its live files. */
export interface LakeFileListing {
  table: string;
  metadataKey: string;
  /** `s3://{bucket}/{metadataKey}`: what an Iceberg reader is given. */
  metadataLocation: string;
  snapshotId: number | null;
  files: LakeFileLine[];
}

/** The listing of `files` (in bucket order, then by key), each with its key as `keyOf` finds it under the store's URI. */
export function lakeFileListing(
  lake: Pick<TableLake, 'table' | 'metadataKey'>,
  storeUri: string,
  snapshotId: number | null,
  files: readonly DataFile[],
  keyOf: (path: string) => string,
): LakeFileListing {
  const lines = files
    .map((file) => ({ key: keyOf(file.path), path: file.path, bucket: file.bucket, records: file.recordCount, bytes: file.fileSizeBytes }))
    .sort((left, right) => left.bucket - right.bucket || (left.key < right.key ? -1 : left.key > right.key ? 1 : 0));
  return { table: lake.table, metadataKey: lake.metadataKey, metadataLocation: `${storeUri}/${lake.metadataKey}`, snapshotId, files: lines };
}

/** The listing as text: one line per file under a header, then a line that sums them up and names the snapshot. */
export function renderLakeFiles(listing: LakeFileListing): string {
  const records = listing.files.reduce((sum, file) => sum + file.records, 0);
  const bytes = listing.files.reduce((sum, file) => sum + file.bytes, 0);
  const summary =
    `${listing.files.length} ${listing.files.length === 1 ? 'file' : 'files'}, ${records} records, ${bytes} bytes ` +
    `in snapshot ${listing.snapshotId ?? 'none'} of ${listing.metadataLocation}`;
  if (listing.files.length === 0) return summary;
  const table = renderTable(
    ['KEY', 'BUCKET', 'RECORDS', 'BYTES'],
    listing.files.map((file) => [file.key, String(file.bucket), String(file.records), String(file.bytes)]),
  );
  return `${table}\n${summary}`;
}
