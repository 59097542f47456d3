/**
 * One Parquet data file (ZSTD) of a lake table from the Arrow IPC batches mink stores for one bucket
 * (docs/architecture.md §9: "tiering can write Parquet without row-by-row work").
 *
 * A stored batch (see @mink/records `encodeBatch`/`stampBatch`) holds the table's columns, nullable, in
 * table order, then `$ts`, each record's append time as `Timestamp(millisecond, "UTC")`. Record `i` of a
 * batch whose first record is at offset `startOffset` is at offset `startOffset + i`. The file holds the
 * lake schema's table columns (taken from the batches by name; a column a batch does not hold, because it
 * was written before the column existed, reads as null), then `__bucket`, `__offset` and `__timestamp`.
 * Every Arrow field carries `PARQUET:field_id` with its Iceberg field id, which parquet-wasm writes into
 * the Parquet schema, so Iceberg readers map columns by id.
 *
 * The columns are reused as they are stored, with three exceptions done on typed arrays without a value
 * per row in JavaScript objects: timestamps are multiplied to microseconds (Iceberg's unit), and the
 * bucket and offset columns are generated.
 *
 * The manifest metrics (value and null counts, column sizes, bounds) are read back from the footer the
 * writer produced, not computed here.
 *
 * For primary-key tables, `changelogOfStoredBatch` lays a stored changelog batch out as the lake schema
 * (keeping its change types beside it) and `parquetOfLakeBatches` writes batches already in that layout:
 * the merged state of a bucket (merged-state.ts), whose rows carry their own offsets.
 */
import {
  Binary,
  Bool,
  type Data,
  type DataType,
  Field,
  Float64,
  Int8,
  Int32,
  Int64,
  RecordBatch,
  RecordBatchReader,
  Schema,
  Struct,
  Table,
  TimestampMicrosecond,
  Utf8,
  makeData,
  tableToIPC,
} from 'apache-arrow';
import { parquetWasm } from './lazy-modules';
import { InvalidArgumentError } from '@mink/protocol';
import { APPEND_TIME_COLUMN, CHANGE_TYPE_COLUMN, arrowTypeOf } from '@mink/records';

import { type DataFileMetrics, longOfBound } from './data-file';
import { COLUMN_TYPE_OF, type IcebergField, type IcebergSchema, LAKE_BUCKET_COLUMN, LAKE_OFFSET_COLUMN, LAKE_TIMESTAMP_COLUMN, fieldNamed, tableFieldsOf } from './iceberg-schema';
import { LAKE_LIMITS } from './lake-limits';
import { type ParquetColumnChunk, type ParquetFooter, readParquetFooter } from './parquet-footer';

/** The Arrow field metadata key Parquet writers (arrow-rs, pyarrow) turn into the schema element's field_id. */
export const PARQUET_FIELD_ID_KEY = 'PARQUET:field_id';

/**
 * One stored batch of the bucket. Its records' offsets are either consecutive from `startOffset` (a
 * stream's batches) or given one per record in `rowOffsets` (rows of a primary-key table's merged state,
 * each at the offset of the change that last wrote it).
 *
 * A stream batch may name `keep`, the offsets [fromOffset, endOffset) of its records to write, when a
 * tiering range starts or ends inside it; the batch must hold all of them. The records are sliced as Arrow
 * data (no row is copied into JavaScript values), so a round that begins mid-batch costs no more than one
 * that begins at a batch boundary.
 */
export type LakeBatch = { payload: Uint8Array; startOffset: number; keep?: OffsetRange } | { payload: Uint8Array; rowOffsets: readonly number[] };

/** The offsets [fromOffset, endOffset) of a stream; `fromOffset < endOffset`. */
export interface OffsetRange {
  fromOffset: number;
  endOffset: number;
}

export interface ParquetOfArrowInput {
  /** The lake table's schema (from its metadata): which columns, their field ids and nullability. */
  schema: IcebergSchema;
  bucket: number;
  /** In any order; together they must hold at least one record. */
  batches: readonly LakeBatch[];
  /** Rows per row group; LAKE_LIMITS.parquetRowGroupRowsMax when absent. */
  rowGroupRowsMax?: number;
}

/** A written data file, not yet stored: its bytes, its bucket and what the manifest records about it. */
export interface ParquetDataFile {
  bytes: Uint8Array;
  bucket: number;
  metrics: DataFileMetrics;
  /** The smallest and the largest `__offset` in the file. */
  offsets: { first: number; last: number };
}

/**
 * Writes the records of `batches` as one Parquet file of the lake schema. Throws InvalidArgumentError for
 * input a caller can get wrong (no records, more than LAKE_LIMITS.parquetSourceBytesMax, a bucket or
 * offset that is not a whole number, a `keep` range its batch does not hold, a batch of a primary-key
 * table's changelog, whose `-U`/`-D` records must be merged away first) and a plain Error for stored
 * data that is not what mink writes (a column of another Arrow type, no `$ts`).
 */
export function parquetOfArrow(input: ParquetOfArrowInput): ParquetDataFile {
  const { schema, bucket } = input;
  if (!Number.isSafeInteger(bucket) || bucket < 0 || bucket > 0x7fffffff) throw new InvalidArgumentError(`bucket ${bucket} is not a bucket number`);
  const sourceBytes = input.batches.reduce((total, batch) => total + batch.payload.byteLength, 0);
  if (sourceBytes > LAKE_LIMITS.parquetSourceBytesMax) {
    throw new InvalidArgumentError(`${sourceBytes} bytes of batches for one data file, more than ${LAKE_LIMITS.parquetSourceBytesMax}: write several files`);
  }
  const arrowSchema = lakeArrowSchemaOf(schema);
  const recordBatches: RecordBatch[] = [];
  for (const batch of input.batches) {
    // The offsets to write of a batch that names `keep`, with where the batch starts; null writes all.
    const keep = 'startOffset' in batch && batch.keep !== undefined ? { ...batch.keep, batchStart: batch.startOffset } : null;
    if (keep !== null) checkKeep(keep.batchStart, keep);
    let rowInPayload = 0;
    for (const stored of RecordBatchReader.from(batch.payload)) {
      if (stored.numRows === 0) continue;
      // Rows [first, end) of this record batch are written: all of them, or those at the kept offsets.
      const first = keep === null ? 0 : Math.max(0, keep.fromOffset - (keep.batchStart + rowInPayload));
      const end = keep === null ? stored.numRows : Math.min(stored.numRows, keep.endOffset - (keep.batchStart + rowInPayload));
      if (first < end) {
        const rows = first === 0 && end === stored.numRows ? stored : stored.slice(first, end);
        recordBatches.push(lakeBatchOf(schema, arrowSchema, bucket, rows, offsetsOf(batch, rowInPayload + first, end - first)));
      }
      rowInPayload += stored.numRows;
    }
    if ('rowOffsets' in batch && batch.rowOffsets.length !== rowInPayload) {
      throw new InvalidArgumentError(`a batch of ${rowInPayload} records comes with ${batch.rowOffsets.length} row offsets`);
    }
    if (keep !== null && keep.batchStart + rowInPayload < keep.endOffset) {
      throw new InvalidArgumentError(`a batch of offsets [${keep.batchStart}, ${keep.batchStart + rowInPayload}) does not hold the offsets up to ${keep.endOffset} it is to keep`);
    }
  }
  if (recordBatches.length === 0) throw new InvalidArgumentError('a data file needs at least one record');
  return writeLakeParquet(schema, arrowSchema, bucket, recordBatches, input.rowGroupRowsMax);
}

/** The Arrow schema of a lake table's data files: every field of `schema` in order, with its field id. */
export function lakeArrowSchemaOf(schema: IcebergSchema): Schema {
  return new Schema(schema.fields.map(arrowFieldOf));
}

/** Input of `parquetOfLakeBatches`: record batches already laid out as the lake schema. */
export interface LakeRecordBatchesInput {
  schema: IcebergSchema;
  bucket: number;
  /** Each with the fields of `lakeArrowSchemaOf(schema)` (names and types, in order); together at least one record. */
  batches: readonly RecordBatch[];
  /** Rows per row group; LAKE_LIMITS.parquetRowGroupRowsMax when absent. */
  rowGroupRowsMax?: number;
}

/**
 * Writes record batches already in the lake's layout (the table's columns with timestamps in
 * microseconds, then `__bucket`, `__offset`, `__timestamp`) as one Parquet data file, as they are: a
 * primary-key table's merged state, whose rows carry the offsets of the changes that last wrote them.
 * The caller bounds their size (LAKE_LIMITS.pkBucketStateBytesMax). Throws InvalidArgumentError for no
 * records or a bad bucket, and a plain Error for batches of another layout or of rows of another bucket
 * than their `__bucket` column says (the first row is checked).
 */
export function parquetOfLakeBatches(input: LakeRecordBatchesInput): ParquetDataFile {
  const { schema, bucket } = input;
  if (!Number.isSafeInteger(bucket) || bucket < 0 || bucket > 0x7fffffff) throw new InvalidArgumentError(`bucket ${bucket} is not a bucket number`);
  const arrowSchema = lakeArrowSchemaOf(schema);
  const bucketIndex = schema.fields.findIndex((field) => field.name === LAKE_BUCKET_COLUMN);
  const batches = input.batches.filter((batch) => batch.numRows > 0);
  for (const batch of batches) {
    checkLakeLayout(arrowSchema, batch.schema.fields);
    const firstBucket = (batch.data.children[bucketIndex]!.values as Int32Array)[0];
    if (firstBucket !== bucket) throw new Error(`a batch of rows of bucket ${firstBucket} given for a data file of bucket ${bucket}`);
  }
  if (batches.length === 0) throw new InvalidArgumentError('a data file needs at least one record');
  return writeLakeParquet(schema, arrowSchema, bucket, batches.map((batch) => new RecordBatch(arrowSchema, makeData({ type: new Struct(arrowSchema.fields), length: batch.numRows, nullCount: 0, children: batch.data.children }))), input.rowGroupRowsMax);
}

/** Throws a plain Error naming the first difference when `fields` are not the lake layout's (names, types, order). */
export function checkLakeLayout(arrowSchema: Schema, fields: readonly Field[]): void {
  if (fields.length !== arrowSchema.fields.length) throw new Error(`a lake batch has ${fields.length} fields, the lake table ${arrowSchema.fields.length}`);
  arrowSchema.fields.forEach((expected, index) => {
    const field = fields[index]!;
    if (field.name !== expected.name || String(field.type) !== String(expected.type)) {
      throw new Error(`field ${index} of a lake batch is '${field.name}' (${field.type}), the lake table's is '${expected.name}' (${expected.type})`);
    }
  });
}

/**
 * One record batch of a primary-key table's stored changelog, laid out as the lake schema (the table's
 * columns, timestamps in microseconds, `__bucket`, `__offset`, `__timestamp`), with its change types.
 * Row `i` is the change at offset `startOffset + i`.
 */
export interface LakeChangelogBatch {
  rows: RecordBatch;
  /** The change type of each row as stored: an index into CHANGE_TYPES of @mink/records (`+I`, `-U`, `+U`, `-D`). */
  changeCodes: Int8Array;
  startOffset: number;
}

/**
 * The record batches of a stored changelog batch of a primary-key table (what its bucket's stream holds:
 * the table's columns, `$ts` and `$change`), the first record at `startOffset`, each laid out as the lake
 * schema without copying the columns (timestamps are multiplied to microseconds). Throws a plain Error for
 * a batch that is not a changelog (no `$change`) or holds columns of other types than the table's.
 */
export function changelogOfStoredBatch(schema: IcebergSchema, bucket: number, payload: Uint8Array, startOffset: number): LakeChangelogBatch[] {
  if (!Number.isSafeInteger(startOffset) || startOffset < 0) throw new InvalidArgumentError(`start offset ${startOffset} is not a stream offset`);
  const arrowSchema = lakeArrowSchemaOf(schema);
  const batches: LakeChangelogBatch[] = [];
  let next = startOffset;
  for (const stored of RecordBatchReader.from(payload)) {
    if (stored.numRows === 0) continue;
    const changeIndex = stored.schema.fields.findIndex((field) => field.name === CHANGE_TYPE_COLUMN);
    if (changeIndex < 0) throw new Error(`the stored batch at offset ${next} has no '${CHANGE_TYPE_COLUMN}' column: it is not a primary-key table's changelog`);
    const changes = stored.data.children[changeIndex]!;
    if (String(changes.type) !== String(new Int8())) throw new Error(`'${CHANGE_TYPE_COLUMN}' is stored as ${changes.type}`);
    const changeCodes = (changes.values as Int8Array).subarray(0, stored.numRows);
    batches.push({ rows: lakeBatchOf(schema, arrowSchema, bucket, stored, consecutiveLongs(next, stored.numRows), true), changeCodes, startOffset: next });
    next += stored.numRows;
  }
  return batches;
}

/** One Parquet file (ZSTD, field ids, metrics from its footer) of `recordBatches`, laid out as `arrowSchema`. */
function writeLakeParquet(schema: IcebergSchema, arrowSchema: Schema, bucket: number, recordBatches: RecordBatch[], rowGroupRowsMax: number | undefined): ParquetDataFile {
  const ipc = tableToIPC(new Table(arrowSchema, recordBatches), 'stream');
  const { Compression, Table: WasmTable, WriterPropertiesBuilder, writeParquet } = parquetWasm();
  const properties = new WriterPropertiesBuilder()
    .setCompression(Compression.ZSTD)
    .setMaxRowGroupSize(rowGroupRowsMax ?? LAKE_LIMITS.parquetRowGroupRowsMax)
    .setCreatedBy('mink lake (parquet-wasm)')
    .build();
  // Both the table and the properties are moved into WebAssembly memory and freed by the call.
  const bytes = writeParquet(WasmTable.fromIPCStream(ipc), properties);
  const metrics = metricsOf(schema, bytes);
  const offsetField = fieldNamed(schema, LAKE_OFFSET_COLUMN).id;
  const first = metrics.lowerBounds.get(offsetField);
  const last = metrics.upperBounds.get(offsetField);
  if (first === undefined || last === undefined) throw new Error('the Parquet writer recorded no bounds for __offset');
  return { bytes, bucket, metrics, offsets: { first: longOfBound(first), last: longOfBound(last) } };
}

/** Refuses a `keep` range that is empty, not of offsets, or starting before its batch. */
function checkKeep(startOffset: number, keep: OffsetRange): void {
  const { fromOffset, endOffset } = keep;
  if (!Number.isSafeInteger(fromOffset) || !Number.isSafeInteger(endOffset) || fromOffset < 0 || fromOffset >= endOffset) {
    throw new InvalidArgumentError(`[${fromOffset}, ${endOffset}) is not a range of offsets to keep`);
  }
  if (fromOffset < startOffset) throw new InvalidArgumentError(`offset ${fromOffset} to keep is before its batch, which starts at ${startOffset}`);
}

/** The Arrow field a lake field is written as, with its field id. */
function arrowFieldOf(field: IcebergField): Field {
  return new Field(field.name, lakeArrowTypeOf(field), !field.required, new Map([[PARQUET_FIELD_ID_KEY, String(field.id)]]));
}

function lakeArrowTypeOf(field: IcebergField): DataType {
  switch (field.type) {
    case 'boolean':
      return new Bool();
    case 'int':
      return new Int32();
    case 'long':
      return new Int64();
    case 'double':
      return new Float64();
    case 'string':
      return new Utf8();
    case 'binary':
      return new Binary();
    case 'timestamptz':
      return new TimestampMicrosecond('UTC');
  }
}

/** The offsets of `length` records of `batch` starting with its record `first`. */
function offsetsOf(batch: LakeBatch, first: number, length: number): BigInt64Array {
  if ('startOffset' in batch) {
    const start = batch.startOffset + first;
    if (!Number.isSafeInteger(start) || start < 0 || !Number.isSafeInteger(start + length)) {
      throw new InvalidArgumentError(`start offset ${batch.startOffset} is not a stream offset`);
    }
    return consecutiveLongs(start, length);
  }
  const offsets = batch.rowOffsets.slice(first, first + length);
  if (offsets.length !== length) throw new InvalidArgumentError(`a batch of more records than its ${batch.rowOffsets.length} row offsets`);
  for (const offset of offsets) if (!Number.isSafeInteger(offset) || offset < 0) throw new InvalidArgumentError(`row offset ${offset} is not a stream offset`);
  return longsOf(offsets);
}

/** One stored record batch laid out as the lake schema; a changelog's (`$change`) only when `changelog` says it may be one. */
function lakeBatchOf(schema: IcebergSchema, arrowSchema: Schema, bucket: number, stored: RecordBatch, offsets: BigInt64Array, changelog = false): RecordBatch {
  const length = stored.numRows;
  const byName = new Map(stored.schema.fields.map((field, index) => [field.name, index]));
  if (!changelog && byName.has(CHANGE_TYPE_COLUMN)) {
    throw new InvalidArgumentError(`a batch of a primary-key table's changelog ('${CHANGE_TYPE_COLUMN}' column): tier the merged rows instead`);
  }
  const storedColumn = (name: string): Data | undefined => {
    const index = byName.get(name);
    return index === undefined ? undefined : stored.data.children[index];
  };
  const children = tableFieldsOf(schema).map((field) => {
    const columnType = COLUMN_TYPE_OF[field.type];
    const data = storedColumn(field.name);
    if (data === undefined) {
      if (field.required) throw new Error(`a stored batch has no column '${field.name}', which the lake table requires`);
      return nullData(lakeArrowTypeOf(field), length);
    }
    const expected = arrowTypeOf(columnType);
    if (String(data.type) !== String(expected)) throw new Error(`column '${field.name}' is stored as ${data.type}, expected ${expected}`);
    if (field.required && data.nullCount > 0) throw new Error(`column '${field.name}' of the primary key holds ${data.nullCount} nulls`);
    return columnType === 'timestamp' ? microsecondData(data) : data;
  });
  const appendTimes = storedColumn(APPEND_TIME_COLUMN);
  if (appendTimes === undefined) throw new Error(`a stored batch has no '${APPEND_TIME_COLUMN}' column`);
  if (String(appendTimes.type) !== String(arrowTypeOf('timestamp'))) throw new Error(`'${APPEND_TIME_COLUMN}' is stored as ${appendTimes.type}`);
  // The system columns come last, in LAKE_SYSTEM_COLUMNS order, as icebergSchemaOf lays them out.
  const systemData: Record<string, Data> = {
    [LAKE_BUCKET_COLUMN]: makeData({ type: new Int32(), length, data: new Int32Array(length).fill(bucket) }),
    [LAKE_OFFSET_COLUMN]: makeData({ type: new Int64(), length, data: offsets }),
    [LAKE_TIMESTAMP_COLUMN]: microsecondData(appendTimes),
  };
  for (const field of schema.fields) if (systemData[field.name] !== undefined) children.push(systemData[field.name]!);
  return new RecordBatch(arrowSchema, makeData({ type: new Struct(arrowSchema.fields), length, nullCount: 0, children }));
}

/** A column of `length` nulls of `type`. */
function nullData(type: DataType, length: number): Data {
  const nullBitmap = new Uint8Array(Math.ceil(length / 8));
  if (type instanceof Utf8) return makeData({ type, length, nullCount: length, nullBitmap, valueOffsets: new Int32Array(length + 1), data: new Uint8Array(0) });
  if (type instanceof Binary) return makeData({ type, length, nullCount: length, nullBitmap, valueOffsets: new Int32Array(length + 1), data: new Uint8Array(0) });
  if (type instanceof Bool) return makeData({ type, length, nullCount: length, nullBitmap, data: new Uint8Array(Math.ceil(length / 8)) });
  if (type instanceof Int32) return makeData({ type, length, nullCount: length, nullBitmap, data: new Int32Array(length) });
  if (type instanceof Float64) return makeData({ type, length, nullCount: length, nullBitmap, data: new Float64Array(length) });
  if (type instanceof Int64) return makeData({ type, length, nullCount: length, nullBitmap, data: new BigInt64Array(length) });
  if (type instanceof TimestampMicrosecond) return makeData({ type, length, nullCount: length, nullBitmap, data: new BigInt64Array(length) });
  throw new Error(`no null column of ${type}`);
}

/**
 * A millisecond timestamp column as microseconds, with the same validity. A slice (of a batch a range
 * starts or ends in) keeps its offset: Arrow's values of a slice start at its first row, while its
 * validity bitmap is the whole batch's, read from `offset` on.
 */
function microsecondData(data: Data): Data {
  const millis = (data.values as BigInt64Array).subarray(0, data.length);
  const nullCount = data.nullCount;
  return makeData({
    type: new TimestampMicrosecond('UTC'),
    offset: nullCount > 0 ? data.offset : 0,
    length: data.length,
    nullCount,
    nullBitmap: nullCount > 0 ? data.nullBitmap : undefined,
    data: millisToMicros(millis),
  });
}

const TWO_TO_32 = 4_294_967_296;

// The word-wise arithmetic below reads the low 32 bits of an int64 first, as little-endian machines store them.
if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1) throw new Error('@mink/lake assumes a little-endian machine');

/**
 * Each value times 1000, in 32-bit words with JavaScript numbers rather than one BigInt per value
 * (values are epoch milliseconds within the safe integers, so the product fits an int64).
 */
export function millisToMicros(millis: BigInt64Array): BigInt64Array {
  const micros = new BigInt64Array(millis.length);
  const input = new Int32Array(millis.buffer, millis.byteOffset, millis.length * 2);
  const output = new Int32Array(micros.buffer);
  for (let index = 0; index < millis.length; index++) {
    const low = input[2 * index]! >>> 0;
    const lowProduct = low * 1000; // below 2^42: exact
    const carry = Math.floor(lowProduct / TWO_TO_32);
    output[2 * index] = (lowProduct - carry * TWO_TO_32) | 0;
    // ToInt32 wraps modulo 2^32, which is two's complement arithmetic on the high word.
    output[2 * index + 1] = (input[2 * index + 1]! * 1000 + carry) | 0;
  }
  return micros;
}

/** `start`, `start + 1`, … (`length` values; non-negative safe integers) as an int64 column. */
export function consecutiveLongs(start: number, length: number): BigInt64Array {
  const values = new BigInt64Array(length);
  const words = new Int32Array(values.buffer);
  for (let index = 0; index < length; index++) {
    const value = start + index;
    const high = Math.floor(value / TWO_TO_32);
    words[2 * index] = (value - high * TWO_TO_32) | 0;
    words[2 * index + 1] = high | 0;
  }
  return values;
}

function longsOf(numbers: readonly number[]): BigInt64Array {
  const values = new BigInt64Array(numbers.length);
  const words = new Int32Array(values.buffer);
  numbers.forEach((value, index) => {
    const high = Math.floor(value / TWO_TO_32);
    words[2 * index] = (value - high * TWO_TO_32) | 0;
    words[2 * index + 1] = high | 0;
  });
  return values;
}

/**
 * The manifest metrics of the Parquet file `bytes` written for `schema`, from its footer: sums over row
 * groups, and bounds where every row group recorded exact ones. Bounds are kept for boolean, int, long,
 * timestamptz and double columns, whose Parquet plain encoding is Iceberg's single-value serialization;
 * string and binary columns get none (Iceberg's truncation rules for them are left to a later change).
 */
export function metricsOf(schema: IcebergSchema, bytes: Uint8Array): DataFileMetrics {
  const footer = readParquetFooter(bytes);
  const columnSizes = new Map<number, number>();
  const valueCounts = new Map<number, number>();
  const nullValueCounts = new Map<number, number>();
  const lowerBounds = new Map<number, Uint8Array>();
  const upperBounds = new Map<number, Uint8Array>();
  for (const field of schema.fields) {
    const chunks = chunksOf(footer, field);
    columnSizes.set(field.id, sum(chunks.map((chunk) => chunk.compressedBytes)));
    valueCounts.set(field.id, sum(chunks.map((chunk) => chunk.valueCount)));
    if (chunks.every((chunk) => chunk.nullCount !== null)) nullValueCounts.set(field.id, sum(chunks.map((chunk) => chunk.nullCount!)));
    const compare = comparatorOf(field);
    if (compare === null || chunks.length === 0) continue;
    const minimums = chunks.map((chunk) => chunk.minValue);
    const maximums = chunks.map((chunk) => chunk.maxValue);
    // A chunk of nulls only has no bounds and takes no part; a chunk with values but no bounds leaves the column without.
    const withValues = chunks.map((chunk) => chunk.nullCount === null || chunk.nullCount < chunk.valueCount);
    if (withValues.some((has, index) => has && (minimums[index] === null || maximums[index] === null))) continue;
    const lows = minimums.filter((value, index): value is Uint8Array => withValues[index]! && value !== null);
    const highs = maximums.filter((value, index): value is Uint8Array => withValues[index]! && value !== null);
    if (lows.length === 0) continue;
    // Iceberg's bounds leave NaN out; a writer that let one into its statistics leaves the column without bounds.
    if (field.type === 'double' && [...lows, ...highs].some((value) => Number.isNaN(new DataView(value.buffer, value.byteOffset, 8).getFloat64(0, true)))) continue;
    lowerBounds.set(field.id, lows.reduce((low, value) => (compare(value, low) < 0 ? value : low)).slice());
    upperBounds.set(field.id, highs.reduce((high, value) => (compare(value, high) > 0 ? value : high)).slice());
  }
  return {
    recordCount: footer.rowCount,
    fileSizeBytes: bytes.byteLength,
    columnSizes,
    valueCounts,
    nullValueCounts,
    lowerBounds,
    upperBounds,
    splitOffsets: footer.rowGroups.map((rowGroup) => rowGroup.fileOffset).sort((left, right) => left - right),
  };
}

/** The column chunks of `field` in every row group, found by field id. */
function chunksOf(footer: ParquetFooter, field: IcebergField): ParquetColumnChunk[] {
  return footer.rowGroups.map((rowGroup) => {
    const chunk = rowGroup.columns.find((candidate) => candidate.fieldId === field.id);
    if (chunk === undefined) throw new Error(`the Parquet file has no column with field id ${field.id} ('${field.name}')`);
    return chunk;
  });
}

type BoundComparator = (left: Uint8Array, right: Uint8Array) => number;

/** How two plain-encoded values of `field` compare, or null when its bounds are not recorded. */
function comparatorOf(field: IcebergField): BoundComparator | null {
  const view = (bytes: Uint8Array, size: number) => {
    if (bytes.byteLength !== size) throw new Error(`a bound of '${field.name}' has ${bytes.byteLength} bytes, expected ${size}`);
    return new DataView(bytes.buffer, bytes.byteOffset, size);
  };
  switch (field.type) {
    case 'boolean':
      return (left, right) => view(left, 1).getUint8(0) - view(right, 1).getUint8(0);
    case 'int':
      return (left, right) => view(left, 4).getInt32(0, true) - view(right, 4).getInt32(0, true);
    case 'long':
    case 'timestamptz':
      return (left, right) => {
        const difference = view(left, 8).getBigInt64(0, true) - view(right, 8).getBigInt64(0, true);
        return difference < 0n ? -1 : difference > 0n ? 1 : 0;
      };
    case 'double':
      return (left, right) => {
        const a = view(left, 8).getFloat64(0, true);
        const b = view(right, 8).getFloat64(0, true);
        // -0 sorts below +0, so a lower bound keeps -0 and an upper bound +0 when both occur.
        if (a === b) return (Object.is(a, -0) ? 0 : 1) - (Object.is(b, -0) ? 0 : 1);
        return a < b ? -1 : 1;
      };
    case 'string':
    case 'binary':
      return null;
  }
}

function sum(values: readonly number[]): number {
  return values.reduce((total, value) => total + value, 0);
}
