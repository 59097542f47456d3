/**
 * Iceberg v2 manifests and manifest lists as Avro object container files (Iceberg spec, "Manifests" and
 * "Manifest Lists", Appendix A for the Avro mapping): the `manifest_entry` and `manifest_file` structs
 * with the spec's field ids as `field-id` (and `element-id`) attributes, maps with int keys as arrays of
 * key/value records with `logicalType: map`, optional fields as unions with null defaulting to null. The
 * schemas are written into each file's header exactly as given here, so the ids reach every reader.
 *
 * A manifest's header also carries the keys the spec requires of a v2 manifest: `schema`, `schema-id`,
 * `partition-spec`, `partition-spec-id`, `format-version` and `content`. Lake tables are partitioned by
 * identity on `__bucket` (partition field id 1000), so a data file's partition tuple is its bucket.
 */
import type * as avro from 'avsc';
import { avsc } from './lazy-modules';

import type { DataFile } from './data-file';
import type { IcebergSchema } from './iceberg-schema';
import { LAKE_LIMITS } from './lake-limits';

/** Field id of the partition field `__bucket` (the first id Iceberg gives partition fields). */
export const BUCKET_PARTITION_FIELD_ID = 1000;

/** The partition spec (id 0) of a lake table: identity on `__bucket`. */
export interface PartitionSpec {
  'spec-id': number;
  fields: { name: string; transform: 'identity'; 'source-id': number; 'field-id': number }[];
}

/** Status of a manifest entry (spec: 0 EXISTING, 1 ADDED, 2 DELETED). */
export const ENTRY_STATUS = { existing: 0, added: 1, deleted: 2 } as const;
export type EntryStatus = (typeof ENTRY_STATUS)[keyof typeof ENTRY_STATUS];

/** One entry of a manifest. Null snapshot id and sequence numbers are inherited from the manifest (spec). */
export interface ManifestEntry {
  status: EntryStatus;
  snapshotId: number | null;
  sequenceNumber: number | null;
  fileSequenceNumber: number | null;
  dataFile: DataFile;
}

/** One entry of a manifest list: a manifest and its summary. */
export interface ManifestFile {
  path: string;
  length: number;
  partitionSpecId: number;
  /** 0 for data manifests (the only kind lake tables have). */
  content: number;
  sequenceNumber: number;
  minSequenceNumber: number;
  addedSnapshotId: number;
  addedFilesCount: number;
  existingFilesCount: number;
  deletedFilesCount: number;
  addedRowsCount: number;
  existingRowsCount: number;
  deletedRowsCount: number;
  /** One summary per partition field: whether a null occurs and the bounds of the buckets in the manifest. */
  partitions: { containsNull: boolean; lowerBound: Uint8Array | null; upperBound: Uint8Array | null }[];
}

/** What a manifest's header records besides its schema: the table schema and partition spec it was written with. */
export interface ManifestContext {
  schema: IcebergSchema;
  partitionSpec: PartitionSpec;
}

/** The keys Java's writer puts into a manifest list's header: the snapshot it belongs to. */
export interface ManifestListContext {
  snapshotId: number;
  parentSnapshotId: number | null;
  sequenceNumber: number;
}

const optional = (type: unknown, fieldId: number, name: string) => ({ name, type: ['null', type], default: null, 'field-id': fieldId });
const intMap = (keyId: number, valueId: number, valueType: 'long' | 'bytes') => ({
  type: 'array',
  logicalType: 'map',
  items: {
    type: 'record',
    name: `k${keyId}_v${valueId}`,
    fields: [
      { name: 'key', type: 'int', 'field-id': keyId },
      { name: 'value', type: valueType, 'field-id': valueId },
    ],
  },
});

/** The Avro schema of a v2 `manifest_entry` for a table partitioned by identity on `__bucket`. */
export const MANIFEST_ENTRY_SCHEMA = {
  type: 'record',
  name: 'manifest_entry',
  fields: [
    { name: 'status', type: 'int', 'field-id': 0 },
    optional('long', 1, 'snapshot_id'),
    optional('long', 3, 'sequence_number'),
    optional('long', 4, 'file_sequence_number'),
    {
      name: 'data_file',
      'field-id': 2,
      type: {
        type: 'record',
        name: 'r2',
        fields: [
          { name: 'content', type: 'int', 'field-id': 134 },
          { name: 'file_path', type: 'string', 'field-id': 100 },
          { name: 'file_format', type: 'string', 'field-id': 101 },
          {
            name: 'partition',
            'field-id': 102,
            type: { type: 'record', name: 'r102', fields: [optional('int', BUCKET_PARTITION_FIELD_ID, '__bucket')] },
          },
          { name: 'record_count', type: 'long', 'field-id': 103 },
          { name: 'file_size_in_bytes', type: 'long', 'field-id': 104 },
          optional(intMap(117, 118, 'long'), 108, 'column_sizes'),
          optional(intMap(119, 120, 'long'), 109, 'value_counts'),
          optional(intMap(121, 122, 'long'), 110, 'null_value_counts'),
          optional(intMap(138, 139, 'long'), 137, 'nan_value_counts'),
          optional(intMap(126, 127, 'bytes'), 125, 'lower_bounds'),
          optional(intMap(129, 130, 'bytes'), 128, 'upper_bounds'),
          optional('bytes', 131, 'key_metadata'),
          optional({ type: 'array', items: 'long', 'element-id': 133 }, 132, 'split_offsets'),
          optional({ type: 'array', items: 'int', 'element-id': 136 }, 135, 'equality_ids'),
          optional('int', 140, 'sort_order_id'),
        ],
      },
    },
  ],
};

/** The Avro schema of a v2 `manifest_file` (an entry of a manifest list). */
export const MANIFEST_FILE_SCHEMA = {
  type: 'record',
  name: 'manifest_file',
  fields: [
    { name: 'manifest_path', type: 'string', 'field-id': 500 },
    { name: 'manifest_length', type: 'long', 'field-id': 501 },
    { name: 'partition_spec_id', type: 'int', 'field-id': 502 },
    { name: 'content', type: 'int', 'field-id': 517 },
    { name: 'sequence_number', type: 'long', 'field-id': 515 },
    { name: 'min_sequence_number', type: 'long', 'field-id': 516 },
    { name: 'added_snapshot_id', type: 'long', 'field-id': 503 },
    { name: 'added_files_count', type: 'int', 'field-id': 504 },
    { name: 'existing_files_count', type: 'int', 'field-id': 505 },
    { name: 'deleted_files_count', type: 'int', 'field-id': 506 },
    { name: 'added_rows_count', type: 'long', 'field-id': 512 },
    { name: 'existing_rows_count', type: 'long', 'field-id': 513 },
    { name: 'deleted_rows_count', type: 'long', 'field-id': 514 },
    optional(
      {
        type: 'array',
        'element-id': 508,
        items: {
          type: 'record',
          name: 'r508',
          fields: [
            { name: 'contains_null', type: 'boolean', 'field-id': 509 },
            optional('boolean', 518, 'contains_nan'),
            optional('bytes', 510, 'lower_bound'),
            optional('bytes', 511, 'upper_bound'),
          ],
        },
      },
      507,
      'partitions',
    ),
    optional('bytes', 519, 'key_metadata'),
  ],
};

/** The Avro file of a data manifest holding `entries`. */
export function encodeManifest(context: ManifestContext, entries: readonly ManifestEntry[]): Promise<Uint8Array> {
  return encodeAvroFile(
    MANIFEST_ENTRY_SCHEMA,
    {
      schema: JSON.stringify(context.schema),
      'schema-id': String(context.schema['schema-id']),
      'partition-spec': JSON.stringify(context.partitionSpec.fields),
      'partition-spec-id': String(context.partitionSpec['spec-id']),
      'format-version': '2',
      content: 'data',
    },
    entries.map(avroOfEntry),
  );
}

/** The Avro file of a manifest list holding `manifests`. */
export function encodeManifestList(context: ManifestListContext, manifests: readonly ManifestFile[]): Promise<Uint8Array> {
  return encodeAvroFile(
    MANIFEST_FILE_SCHEMA,
    {
      'snapshot-id': String(context.snapshotId),
      'parent-snapshot-id': context.parentSnapshotId === null ? 'null' : String(context.parentSnapshotId),
      'sequence-number': String(context.sequenceNumber),
      'format-version': '2',
    },
    manifests.map(avroOfManifestFile),
  );
}

/** The entries of a manifest file and its header's metadata. */
export async function decodeManifest(bytes: Uint8Array): Promise<{ metadata: Map<string, string>; entries: ManifestEntry[] }> {
  const { metadata, records } = await decodeAvroFile(bytes);
  return { metadata, entries: records.map(entryOfAvro) };
}

/** The manifests of a manifest list file and its header's metadata. */
export async function decodeManifestList(bytes: Uint8Array): Promise<{ metadata: Map<string, string>; manifests: ManifestFile[] }> {
  const { metadata, records } = await decodeAvroFile(bytes);
  return { metadata, manifests: records.map(manifestFileOfAvro) };
}

// The Avro records mirror the schemas above; they are loosely typed where avsc hands them over.
type AvroRecord = Record<string, any>;

function avroOfEntry(entry: ManifestEntry): AvroRecord {
  const file = entry.dataFile;
  return {
    status: entry.status,
    snapshot_id: entry.snapshotId,
    sequence_number: entry.sequenceNumber,
    file_sequence_number: entry.fileSequenceNumber,
    data_file: {
      content: 0,
      file_path: file.path,
      file_format: 'PARQUET',
      partition: { __bucket: file.bucket },
      record_count: file.recordCount,
      file_size_in_bytes: file.fileSizeBytes,
      column_sizes: entriesOf(file.columnSizes),
      value_counts: entriesOf(file.valueCounts),
      null_value_counts: entriesOf(file.nullValueCounts),
      nan_value_counts: null,
      lower_bounds: byteEntriesOf(file.lowerBounds),
      upper_bounds: byteEntriesOf(file.upperBounds),
      key_metadata: null,
      split_offsets: file.splitOffsets.length > 0 ? [...file.splitOffsets] : null,
      equality_ids: null,
      sort_order_id: null,
    },
  };
}

function entryOfAvro(record: AvroRecord): ManifestEntry {
  const file = record.data_file as AvroRecord;
  if (file.content !== 0) throw new Error(`a manifest entry of content ${file.content}: lake tables hold data files only`);
  const bucket = (file.partition as AvroRecord).__bucket as number | null;
  if (bucket === null || bucket === undefined) throw new Error(`data file ${file.file_path} has no __bucket partition value`);
  return {
    status: record.status as EntryStatus,
    snapshotId: record.snapshot_id ?? null,
    sequenceNumber: record.sequence_number ?? null,
    fileSequenceNumber: record.file_sequence_number ?? null,
    dataFile: {
      path: file.file_path,
      bucket,
      recordCount: file.record_count,
      fileSizeBytes: file.file_size_in_bytes,
      columnSizes: mapOf(file.column_sizes),
      valueCounts: mapOf(file.value_counts),
      nullValueCounts: mapOf(file.null_value_counts),
      lowerBounds: byteMapOf(file.lower_bounds),
      upperBounds: byteMapOf(file.upper_bounds),
      splitOffsets: (file.split_offsets as number[] | null) ?? [],
    },
  };
}

function avroOfManifestFile(manifest: ManifestFile): AvroRecord {
  return {
    manifest_path: manifest.path,
    manifest_length: manifest.length,
    partition_spec_id: manifest.partitionSpecId,
    content: manifest.content,
    sequence_number: manifest.sequenceNumber,
    min_sequence_number: manifest.minSequenceNumber,
    added_snapshot_id: manifest.addedSnapshotId,
    added_files_count: manifest.addedFilesCount,
    existing_files_count: manifest.existingFilesCount,
    deleted_files_count: manifest.deletedFilesCount,
    added_rows_count: manifest.addedRowsCount,
    existing_rows_count: manifest.existingRowsCount,
    deleted_rows_count: manifest.deletedRowsCount,
    partitions: manifest.partitions.map((summary) => ({
      contains_null: summary.containsNull,
      contains_nan: null,
      lower_bound: summary.lowerBound === null ? null : bufferOf(summary.lowerBound),
      upper_bound: summary.upperBound === null ? null : bufferOf(summary.upperBound),
    })),
    key_metadata: null,
  };
}

function manifestFileOfAvro(record: AvroRecord): ManifestFile {
  return {
    path: record.manifest_path,
    length: record.manifest_length,
    partitionSpecId: record.partition_spec_id,
    content: record.content,
    sequenceNumber: record.sequence_number,
    minSequenceNumber: record.min_sequence_number,
    addedSnapshotId: record.added_snapshot_id,
    addedFilesCount: record.added_files_count,
    existingFilesCount: record.existing_files_count,
    deletedFilesCount: record.deleted_files_count,
    addedRowsCount: record.added_rows_count,
    existingRowsCount: record.existing_rows_count,
    deletedRowsCount: record.deleted_rows_count,
    partitions: ((record.partitions as AvroRecord[] | null) ?? []).map((summary) => ({
      containsNull: summary.contains_null,
      lowerBound: summary.lower_bound === null ? null : new Uint8Array(summary.lower_bound),
      upperBound: summary.upper_bound === null ? null : new Uint8Array(summary.upper_bound),
    })),
  };
}

function entriesOf(map: ReadonlyMap<number, number>): { key: number; value: number }[] | null {
  return map.size === 0 ? null : [...map].map(([key, value]) => ({ key, value }));
}

function byteEntriesOf(map: ReadonlyMap<number, Uint8Array>): { key: number; value: Buffer }[] | null {
  return map.size === 0 ? null : [...map].map(([key, value]) => ({ key, value: bufferOf(value) }));
}

function mapOf(entries: { key: number; value: number }[] | null): Map<number, number> {
  return new Map((entries ?? []).map((entry) => [entry.key, entry.value]));
}

function byteMapOf(entries: { key: number; value: Buffer }[] | null): Map<number, Uint8Array> {
  return new Map((entries ?? []).map((entry) => [entry.key, new Uint8Array(entry.value)]));
}

function bufferOf(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** avsc's encoder options, with `metadata` (further header keys), which its typings leave out. */
type EncoderOptions = NonNullable<ConstructorParameters<typeof avro.streams.BlockEncoder>[1]> & { metadata: Record<string, Buffer> };

/**
 * An Avro object container file (deflate blocks) of `records` with `schema` in its header verbatim and
 * `metadata` as further header keys. The header is written even when there are no records.
 */
function encodeAvroFile(schema: object, metadata: Record<string, string>, records: readonly AvroRecord[]): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const headerMetadata: Record<string, Buffer> = {};
    for (const [key, value] of Object.entries(metadata)) headerMetadata[key] = Buffer.from(value, 'utf8');
    const options: EncoderOptions = { codec: 'deflate', writeHeader: 'always', blockSize: LAKE_LIMITS.avroBlockBytes, metadata: headerMetadata };
    const encoder = new (avsc().streams.BlockEncoder)(schema as avro.Schema, options);
    const chunks: Buffer[] = [];
    encoder.on('data', (chunk: Buffer) => chunks.push(chunk));
    encoder.on('error', reject);
    encoder.on('end', () => resolve(new Uint8Array(Buffer.concat(chunks))));
    for (const record of records) encoder.write(record);
    encoder.end();
  });
}

/** The records of an Avro object container file, decoded with the schema in its header, and the header's other keys. */
function decodeAvroFile(bytes: Uint8Array): Promise<{ metadata: Map<string, string>; records: AvroRecord[] }> {
  return new Promise((resolve, reject) => {
    const decoder = new (avsc().streams.BlockDecoder)();
    const metadata = new Map<string, string>();
    const records: AvroRecord[] = [];
    decoder.on('metadata', (_type: unknown, _codec: string, header: { meta: Record<string, Buffer> }) => {
      for (const [key, value] of Object.entries(header.meta)) metadata.set(key, value.toString('utf8'));
    });
    decoder.on('data', (record: AvroRecord) => records.push(record));
    decoder.on('error', reject);
    decoder.on('end', () => resolve({ metadata, records }));
    decoder.end(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  });
}
