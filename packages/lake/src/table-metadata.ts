/**
 * Iceberg v2 table metadata (the `v{N}.metadata.json` files; spec "Table Metadata" and Appendix C) and
 * the snapshot summaries of a lake table, as pure functions: time and ids come in as arguments.
 *
 * Every snapshot's summary carries `mink.offsets`: per bucket, the offset after the last record the lake
 * holds (the bucket's tiered end offset), for every bucket ever tiered, not only those of the snapshot's
 * own round. So a snapshot alone says how far each bucket is tiered: mink's metadata view records the
 * same offsets with the metadata key (the log is the commit point), and readers of the lake without the
 * view can still tell where the stream takes over.
 */
import type { IcebergSchema } from './iceberg-schema';
import { LAKE_BUCKET_COLUMN, fieldNamed, lastColumnIdOf } from './iceberg-schema';
import { BUCKET_PARTITION_FIELD_ID, type PartitionSpec } from './avro-manifests';
import { LAKE_LIMITS } from './lake-limits';

/** The snapshot summary key holding the JSON object bucket → tiered end offset. */
export const TIERED_OFFSETS_SUMMARY_KEY = 'mink.offsets';

/** A snapshot as the metadata's JSON writes it. */
export interface Snapshot {
  'snapshot-id': number;
  'parent-snapshot-id'?: number;
  'sequence-number': number;
  'timestamp-ms': number;
  'manifest-list': string;
  summary: Record<string, string>;
  'schema-id': number;
}

/** The table metadata of a lake table as its JSON writes it (format version 2). */
export interface TableMetadata {
  'format-version': 2;
  'table-uuid': string;
  location: string;
  'last-sequence-number': number;
  'last-updated-ms': number;
  'last-column-id': number;
  schemas: IcebergSchema[];
  'current-schema-id': number;
  'partition-specs': PartitionSpec[];
  'default-spec-id': number;
  'last-partition-id': number;
  properties: Record<string, string>;
  'current-snapshot-id'?: number;
  snapshots: Snapshot[];
  'snapshot-log': { 'timestamp-ms': number; 'snapshot-id': number }[];
  'metadata-log': { 'timestamp-ms': number; 'metadata-file': string }[];
  'sort-orders': { 'order-id': number; fields: unknown[] }[];
  'default-sort-order-id': number;
  refs: Record<string, { 'snapshot-id': number; type: 'branch' | 'tag' }>;
}

/** The partition spec of a lake table with `schema`: identity on `__bucket`. */
export function partitionSpecOf(schema: IcebergSchema): PartitionSpec {
  return {
    'spec-id': 0,
    fields: [{ name: LAKE_BUCKET_COLUMN, transform: 'identity', 'source-id': fieldNamed(schema, LAKE_BUCKET_COLUMN).id, 'field-id': BUCKET_PARTITION_FIELD_ID }],
  };
}

/** The metadata of a new lake table at `location` with `schema`, before its first snapshot. */
export function newTableMetadata(tableUuid: string, location: string, schema: IcebergSchema, nowMs: number): TableMetadata {
  return {
    'format-version': 2,
    'table-uuid': tableUuid,
    location,
    'last-sequence-number': 0,
    'last-updated-ms': nowMs,
    'last-column-id': lastColumnIdOf(schema),
    schemas: [schema],
    'current-schema-id': schema['schema-id'],
    'partition-specs': [partitionSpecOf(schema)],
    'default-spec-id': 0,
    'last-partition-id': BUCKET_PARTITION_FIELD_ID,
    properties: { 'write.format.default': 'parquet', 'write.parquet.compression-codec': 'zstd', 'mink.lake': 'true' },
    snapshots: [],
    'snapshot-log': [],
    'metadata-log': [],
    'sort-orders': [{ 'order-id': 0, fields: [] }],
    'default-sort-order-id': 0,
    refs: {},
  };
}

/**
 * `metadata` with `snapshot` made current, expiring what falls out of the retention: the snapshots keep the
 * newest LAKE_LIMITS.snapshotsRetainedMax (the new one included), the snapshot log keeps the entries of kept
 * snapshots only, `main` moves to the new snapshot, and `previousMetadataFile` (the location of the metadata
 * file this one replaces, null for the first) joins the metadata log, which keeps the newest
 * LAKE_LIMITS.metadataLogEntriesMax entries. As every version adds one snapshot, the metadata log then names
 * exactly the metadata files whose current snapshots are the kept older ones (`retainedMetadataFilesOf`).
 * Expiry only drops entries: the objects stay until an orphan sweep finds no kept entry naming them. The
 * snapshot's sequence number must be the next one (an assertion).
 */
export function withSnapshot(metadata: TableMetadata, snapshot: Snapshot, previousMetadataFile: string | null, nowMs: number): TableMetadata {
  if (snapshot['sequence-number'] !== metadata['last-sequence-number'] + 1) {
    throw new Error(`snapshot sequence number ${snapshot['sequence-number']} does not follow ${metadata['last-sequence-number']}`);
  }
  const metadataLog =
    previousMetadataFile === null
      ? metadata['metadata-log']
      : [...metadata['metadata-log'], { 'timestamp-ms': metadata['last-updated-ms'], 'metadata-file': previousMetadataFile }];
  const snapshots = [...metadata.snapshots, snapshot].slice(-LAKE_LIMITS.snapshotsRetainedMax);
  const kept = new Set(snapshots.map((candidate) => candidate['snapshot-id']));
  const snapshotLog = [...metadata['snapshot-log'], { 'timestamp-ms': snapshot['timestamp-ms'], 'snapshot-id': snapshot['snapshot-id'] }].filter((entry) =>
    kept.has(entry['snapshot-id']),
  );
  return {
    ...metadata,
    'last-sequence-number': snapshot['sequence-number'],
    'last-updated-ms': nowMs,
    'current-snapshot-id': snapshot['snapshot-id'],
    snapshots,
    'snapshot-log': snapshotLog.slice(-LAKE_LIMITS.snapshotsRetainedMax),
    'metadata-log': metadataLog.slice(-LAKE_LIMITS.metadataLogEntriesMax),
    refs: { ...metadata.refs, main: { 'snapshot-id': snapshot['snapshot-id'], type: 'branch' } },
  };
}

/**
 * The locations of the metadata files an orphan sweep keeps beside the current one: those the metadata log
 * names (the previous versions, whose current snapshots are the kept older snapshots).
 */
export function retainedMetadataFilesOf(metadata: TableMetadata): string[] {
  return metadata['metadata-log'].map((entry) => entry['metadata-file']);
}

/** The current snapshot of `metadata`, or null before the first. */
export function currentSnapshotOf(metadata: TableMetadata): Snapshot | null {
  const id = metadata['current-snapshot-id'];
  if (id === undefined || id === null || id === -1) return null;
  const snapshot = metadata.snapshots.find((candidate) => candidate['snapshot-id'] === id);
  if (snapshot === undefined) throw new Error(`the current snapshot ${id} is not among the table's snapshots`);
  return snapshot;
}

/** The current schema of `metadata`. */
export function currentSchemaOf(metadata: TableMetadata): IcebergSchema {
  const schema = metadata.schemas.find((candidate) => candidate['schema-id'] === metadata['current-schema-id']);
  if (schema === undefined) throw new Error(`the current schema ${metadata['current-schema-id']} is not among the table's schemas`);
  return schema;
}

/** Per bucket, the offset after the last tiered record, as a snapshot summary records it (empty when it has none). */
export function tieredOffsetsOf(summary: Readonly<Record<string, string>>): Map<number, number> {
  const text = summary[TIERED_OFFSETS_SUMMARY_KEY];
  const offsets = new Map<number, number>();
  if (text === undefined) return offsets;
  const parsed: unknown = JSON.parse(text);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error(`${TIERED_OFFSETS_SUMMARY_KEY} is not a JSON object: ${text}`);
  for (const [bucket, offset] of Object.entries(parsed)) {
    const number = Number(bucket);
    if (!isBucket(number) || String(number) !== bucket) throw new Error(`${TIERED_OFFSETS_SUMMARY_KEY} names the bucket '${bucket}'`);
    if (!isOffset(offset)) throw new Error(`${TIERED_OFFSETS_SUMMARY_KEY} gives bucket ${bucket} the offset ${JSON.stringify(offset)}`);
    offsets.set(number, offset);
  }
  return offsets;
}

/**
 * The tiered offsets after a round: `previous` with each bucket of `round` moved to the round's end
 * offset. A bucket's tiered offset never goes back (an assertion: that would be a writer tiering from
 * a stale view, which the commit's conflict check is there to stop). Buckets of `round` that are not
 * whole numbers or offsets that are not are refused with a plain Error as well: a bug of the caller.
 */
export function mergeTieredOffsets(previous: ReadonlyMap<number, number>, round: ReadonlyMap<number, number>): Map<number, number> {
  const merged = new Map(previous);
  for (const [bucket, offset] of round) {
    if (!isBucket(bucket)) throw new Error(`tiered offsets name the bucket ${bucket}`);
    if (!isOffset(offset)) throw new Error(`tiered offsets give bucket ${bucket} the offset ${offset}`);
    const before = previous.get(bucket) ?? 0;
    if (offset < before) throw new Error(`bucket ${bucket}'s tiered offset would go back from ${before} to ${offset}`);
    merged.set(bucket, offset);
  }
  return merged;
}

/** `offsets` as the summary value: a JSON object with the buckets in ascending order. */
export function tieredOffsetsText(offsets: ReadonlyMap<number, number>): string {
  const sorted = [...offsets].sort(([left], [right]) => left - right);
  return JSON.stringify(Object.fromEntries(sorted.map(([bucket, offset]) => [String(bucket), offset])));
}

/** What a commit changed, for its summary. */
export interface SummaryChange {
  addedFiles: number;
  addedRecords: number;
  addedBytes: number;
  removedFiles: number;
  removedRecords: number;
  removedBytes: number;
  /** Buckets with an added or a removed file. */
  changedPartitions: number;
}

/** The summary keys a snapshot's totals live under (spec Appendix F). */
const TOTALS = ['total-records', 'total-files-size', 'total-data-files'] as const;

/**
 * The summary of a snapshot: the caller's keys, then the spec's (`operation`: `append` when no file was
 * removed, `delete` when files were only removed, `overwrite` when files were replaced; added/deleted counts; totals from the parent's) and `mink.offsets`,
 * which the caller's keys cannot override.
 */
export function snapshotSummaryOf(
  parentSummary: Readonly<Record<string, string>> | null,
  change: SummaryChange,
  offsets: ReadonlyMap<number, number>,
  extra: Readonly<Record<string, string>> = {},
): Record<string, string> {
  const parentTotal = (key: (typeof TOTALS)[number]) => {
    if (parentSummary === null) return 0;
    const value = Number(parentSummary[key] ?? 'NaN');
    if (!Number.isSafeInteger(value)) throw new Error(`the parent snapshot's summary has no ${key}`);
    return value;
  };
  const summary: Record<string, string> = {
    ...extra,
    operation: change.removedFiles === 0 ? 'append' : change.addedFiles === 0 ? 'delete' : 'overwrite',
    'added-data-files': String(change.addedFiles),
    'added-records': String(change.addedRecords),
    'added-files-size': String(change.addedBytes),
    'changed-partition-count': String(change.changedPartitions),
    'total-records': String(parentTotal('total-records') + change.addedRecords - change.removedRecords),
    'total-files-size': String(parentTotal('total-files-size') + change.addedBytes - change.removedBytes),
    'total-data-files': String(parentTotal('total-data-files') + change.addedFiles - change.removedFiles),
    'total-delete-files': '0',
    'total-position-deletes': '0',
    'total-equality-deletes': '0',
    [TIERED_OFFSETS_SUMMARY_KEY]: tieredOffsetsText(offsets),
  };
  if (change.removedFiles > 0) {
    summary['deleted-data-files'] = String(change.removedFiles);
    summary['deleted-records'] = String(change.removedRecords);
    summary['removed-files-size'] = String(change.removedBytes);
  }
  return summary;
}

function isBucket(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 0x7fffffff;
}

function isOffset(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}
