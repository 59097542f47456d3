/**
 * Record batches of schema'd tables as Apache Arrow IPC streams (docs/architecture.md §8.1), so that scans can project
 * columns and tiering can write Parquet without row-by-row work.
 *
 * One encoded batch is a complete IPC stream: the schema message, one record batch message and the
 * end-of-stream marker. It holds the table's columns in the table's order, all nullable, and after them
 * the system column APPEND_TIME_COLUMN with each record's append time.
 *
 * Column types map as follows: boolean → Bool, int32 → Int32, int64 → Int64, float64 → Float64,
 * string → Utf8, bytes → Binary, timestamp → Timestamp(millisecond, "UTC"). A timestamp is stored as
 * the int64 count of milliseconds since the epoch and read back as a number, which is exact because
 * validation only admits safe integers. The "UTC" time zone marks the values as instants, so Parquet
 * writers and query engines do not take them for local wall-clock times.
 *
 * The columns are built directly as typed arrays rather than through Arrow's builders, which go value by
 * value through a visitor (on 100 000 rows of three columns that took four times as long), and laid out
 * as an IPC stream by `encodeIpcStream` rather than through `RecordBatch` and a stream writer.
 */
import { Binary, Bool, type Data, type DataType, Field, Float64, Int8, Int32, Int64, type RecordBatch, RecordBatchReader, TimestampMillisecond, Utf8 } from 'apache-arrow';
import type { ColumnSpec, ColumnType } from '@mink/meta';
import { isUtf8 } from 'node:buffer';
import { InvalidArgumentError } from '@mink/protocol';

import { type ColumnBuffers, type EncodableColumn, bitAt, bytesOf, encodeIpcStream } from './arrow-ipc';
import { BucketKeyWriter } from './bucketing';
import type { RecordBatchMetadata } from './ipc-metadata';
import { isRecordBatchMessage, isSchemaMessage, readIpcMessages, recordBatchOf, schemaFieldsOf } from './ipc-reader';
import { type Row, fieldOf, setField } from './row';

/**
 * Name of the system column holding each record's append time in epoch milliseconds. It starts with `$`,
 * which no column name may (NAME_PATTERN in @mink/meta), so it can never clash with a column of the table.
 */
export const APPEND_TIME_COLUMN = '$ts';

/**
 * Name of the system column holding the change type of each record of a primary-key table's changelog,
 * as an int8 code (CHANGE_TYPES gives the order). Log tables' batches do not have it.
 */
export const CHANGE_TYPE_COLUMN = '$change';

/**
 * The kind of a changelog record, as in Fluss and Flink: `+I` a new key, `-U` the row an update replaced,
 * `+U` the row that replaced it (always right after its `-U`), `-D` the row a delete removed.
 */
export type ChangeType = '+I' | '-U' | '+U' | '-D';

/** Change types by their stored code: the index in this list. Append only; stored data depends on it. */
export const CHANGE_TYPES: readonly ChangeType[] = ['+I', '-U', '+U', '-D'];

/** Arrow's 32-bit value offsets bound the bytes of one string or binary column in one batch. */
const VARIABLE_WIDTH_BYTES_MAX = 2 ** 31 - 1;

/** What decodeBatch returns: the rows and, at the same index, the append time of each. */
export interface DecodedBatch {
  timestampsMs: number[];
  rows: Row[];
  /** The change type of each row, for a batch of a primary-key table's changelog; absent otherwise. */
  changeTypes?: ChangeType[];
}

/**
 * Encodes canonical `rows` (see row.ts) of a table with `columns` as one Arrow IPC stream.
 *
 * `timestampsMs` is the append time of each row, or one time for all of them. A row without a property
 * for a column stores null there. Rows that are not canonical (a number in an int64 column, say) are a
 * bug of the caller, which must validate them first, and throw a plain Error.
 */
export function encodeBatch(columns: ColumnSpec[], rows: Row[], timestampsMs: number[] | number, changeTypes?: readonly ChangeType[]): Uint8Array {
  const appendTimes = appendTimesOf(rows.length, timestampsMs);
  const buffers = columns.map((column) => encodeColumn(column, rows));
  buffers.push({ length: rows.length, nullCount: 0, buffers: [EMPTY, bytesOf(appendTimes)] });
  if (changeTypes !== undefined) buffers.push({ length: rows.length, nullCount: 0, buffers: [EMPTY, bytesOf(changeCodesOf(rows.length, changeTypes))] });
  return encodeLayout(columns, changeTypes !== undefined ? 'changelog' : 'log', rows.length, buffers);
}

const EMPTY = new Uint8Array(0);

/**
 * Encodes canonical `rows` of a table with `columns` as the Arrow IPC stream a client sends to a bucket's
 * leader: the table's columns only (nullable, in table order), without the system columns, which the
 * leader adds when it stores the batch (`stampBatch`).
 */
export function encodeRows(columns: ColumnSpec[], rows: Row[]): Uint8Array {
  return encodeLayout(
    columns,
    'rows',
    rows.length,
    columns.map((column) => encodeColumn(column, rows)),
  );
}

/**
 * The Arrow IPC stream `encodeRows` writes, from column buffers a caller built itself (one per column, in
 * table order, laid out as `encodeRows` lays them out): the gateway's one-pass JSON parser builds them.
 */
export function encodeRowBuffers(columns: ColumnSpec[], length: number, buffers: ColumnBuffers[]): Uint8Array {
  return encodeLayout(columns, 'rows', length, buffers);
}

/**
 * The rows at `indexes` (in that order) of an Arrow record batch whose fields are the table's columns, as
 * the IPC stream `encodeRows` would write for them: the values are copied column by column from the
 * batch's buffers, with no row objects. Throws InvalidArgumentError when the batch's fields are not the
 * table's columns (names, Arrow types, order) or a column is dictionary-encoded.
 */
export function encodeRowsOfBatch(columns: ColumnSpec[], batch: RecordBatch, indexes: readonly number[]): Uint8Array {
  checkFieldsAreColumns(columns, batch.schema.fields);
  return encodeLayout(
    columns,
    'rows',
    indexes.length,
    columns.map((column, index) => gatherColumn(column, batch.data.children[index]!, indexes)),
  );
}

/**
 * The three layouts of a batch: `rows` as a client sends them (the table's columns only), `log` as a log
 * table stores them (plus the append times) and `changelog` as a PK table's changelog stores them (plus
 * the change types).
 */
type BatchLayout = 'rows' | 'log' | 'changelog';

/** The IPC stream of `buffers` laid out as `layout` of `columns`; the schema message is cached per layout and column set. */
function encodeLayout(columns: ColumnSpec[], layout: BatchLayout, length: number, buffers: readonly EncodableColumn[]): Uint8Array {
  const schemaKey = `${layout}|${columns.map((column) => `${column.name}:${column.type}`).join(',')}`;
  return encodeIpcStream(schemaKey, () => fieldsOf(columns, layout), length, buffers);
}

/** Refuses, as InvalidArgumentError naming the first difference, fields that are not the table's columns (names and types, in order). */
function checkFieldsAreColumns(columns: ColumnSpec[], fields: readonly Field[]): void {
  if (fields.length !== columns.length) {
    throw new InvalidArgumentError(`batch: the schema has ${fields.length} fields, the table ${columns.length} columns (${columns.map((column) => column.name).join(', ')})`);
  }
  columns.forEach((column, index) => {
    const field = fields[index]!;
    const expected = arrowTypeOf(column.type);
    if (field.name !== column.name) throw new InvalidArgumentError(`batch: field ${index} is '${field.name}', the table's column ${index} is '${column.name}'`);
    if (String(field.type) !== String(expected)) throw new InvalidArgumentError(`batch: field '${field.name}' is ${field.type}, the table's column is ${column.type} (${expected})`);
  });
}

/**
 * One column's buffers for the rows at `indexes` of `data`, copied from its buffers. In apache-arrow a
 * sliced Data keeps its validity bitmap and boolean bits whole (read at `offset + row`) but slices the
 * values of fixed-width types and the value offsets of variable-width ones (read at `row`).
 */
function gatherColumn(column: ColumnSpec, data: Data, indexes: readonly number[]): ColumnBuffers {
  const length = indexes.length;
  const { offset } = data;
  const isValid = validityReaderOf(data);
  let nullCount = 0;
  const bitmap = new Uint8Array(Math.ceil(length / 8));
  indexes.forEach((row, index) => {
    if (isValid(row)) bitmap[index >> 3] |= 1 << (index & 7);
    else nullCount++;
  });
  const validity = nullCount === 0 ? EMPTY : bitmap;
  switch (column.type) {
    case 'boolean': {
      const source = data.values as Uint8Array;
      const bits = new Uint8Array(Math.ceil(length / 8));
      indexes.forEach((row, index) => {
        if (bitAt(source, offset + row)) bits[index >> 3] |= 1 << (index & 7);
      });
      return { length, nullCount, buffers: [validity, bits] };
    }
    case 'int32':
    case 'float64':
    case 'int64':
    case 'timestamp': {
      const source = data.values as Int32Array | Float64Array | BigInt64Array;
      const Constructor = source.constructor as { new (length: number): Int32Array | Float64Array | BigInt64Array };
      const target = new Constructor(length);
      indexes.forEach((row, index) => {
        target[index] = source[row]!;
      });
      return { length, nullCount, buffers: [validity, bytesOf(target)] };
    }
    case 'string':
    case 'bytes': {
      const sourceOffsets = data.valueOffsets as Int32Array;
      const source = data.values as Uint8Array;
      const valueOffsets = new Int32Array(length + 1);
      let bytes = 0;
      indexes.forEach((row, index) => {
        bytes += sourceOffsets[row + 1]! - sourceOffsets[row]!;
        valueOffsets[index + 1] = bytes;
      });
      // Not zero-filled (every byte is copied over), and copied without a view per value.
      const values = Buffer.allocUnsafe(bytes);
      const from = bufferOf(source);
      indexes.forEach((row, index) => from.copy(values, valueOffsets[index]!, sourceOffsets[row]!, sourceOffsets[row + 1]!));
      return { length, nullCount, buffers: [validity, bytesOf(valueOffsets), values] };
    }
  }
}

/** Column types whose bucket key values `bucketsOfBatch` reads straight from their buffers. */
const BUCKET_KEY_TYPES_READ_FROM_BUFFERS: ReadonlySet<ColumnType> = new Set(['boolean', 'int32', 'int64', 'string']);

/**
 * The bucket among `buckets` of every row of a record batch whose fields are the table's `columns`, from
 * its `bucketKey` columns read straight from their buffers: what `bucketOfRow` gives for the rows
 * `validateRows` makes of the batch's values, without the rows. Null, for the caller to take the rows'
 * way, when a key column is not of a type read so (float64, timestamp and bytes are checked value by value
 * first), or its field is not the column's Arrow type (which the batch's checks refuse by name). String
 * values are hashed as the UTF-8 bytes they hold; a batch whose strings are not valid UTF-8 is refused by
 * its checks (`checkRowsStream`) before anything is sent.
 */
export function bucketsOfBatch(columns: ColumnSpec[], batch: RecordBatch, bucketKey: readonly string[], buckets: number): Int32Array | null {
  const keys: { type: ColumnType; data: Data; isValid: (row: number) => boolean; bytes: Buffer | null }[] = [];
  for (const name of bucketKey) {
    const index = columns.findIndex((column) => column.name === name);
    const column = columns[index];
    const field = batch.schema.fields[index];
    const data = batch.data.children[index];
    if (column === undefined || field === undefined || data === undefined || field.name !== name) return null;
    if (!BUCKET_KEY_TYPES_READ_FROM_BUFFERS.has(column.type) || String(field.type) !== String(arrowTypeOf(column.type))) return null;
    keys.push({ type: column.type, data, isValid: validityReaderOf(data), bytes: column.type === 'string' ? bufferOf(data.values as Uint8Array) : null });
  }
  const writer = new BucketKeyWriter();
  const rowBuckets = new Int32Array(batch.numRows);
  for (let row = 0; row < rowBuckets.length; row++) {
    writer.reset();
    for (const { type, data, isValid, bytes } of keys) {
      if (!isValid(row)) {
        writer.value(null);
        continue;
      }
      switch (type) {
        case 'string': {
          // Value offsets of a sliced Data are sliced (read at `row`), as gatherColumn reads them.
          const offsets = data.valueOffsets as Int32Array;
          writer.utf8String(bytes!, offsets[row]!, offsets[row + 1]!);
          break;
        }
        case 'boolean':
          writer.value(bitAt(data.values as Uint8Array, data.offset + row));
          break;
        case 'int32':
          // `| 0` as validateRows makes it: -0 is 0.
          writer.value((data.values as Int32Array)[row]! | 0);
          break;
        default:
          writer.value((data.values as BigInt64Array)[row]!);
      }
    }
    rowBuckets[row] = writer.bucket(buckets);
  }
  return rowBuckets;
}

/** What the leader stores for a batch a client sent: the batch with the append time of its records added. */
export interface StampedBatch {
  payload: Uint8Array;
  rowCount: number;
}

/** A record batch of a client's Arrow IPC stream whose structure was checked: its rows and its columns' buffers (views of the stream). */
export interface CheckedBatch {
  length: number;
  columns: ColumnBuffers[];
}

/**
 * Checks an Arrow IPC stream sent by a client (see `encodeRows`) against a table's columns and returns the
 * batch to store, with `appendTimeMs` as the append time of every record. The stream is what
 * `checkRowsStream` takes; several record batches (a client's appends to one bucket merged into one
 * request, see `concatIpcStreams`) are stored as one batch of all their rows, in order. Throws
 * InvalidArgumentError naming what is wrong.
 */
export function stampBatch(columns: ColumnSpec[], bytes: Uint8Array, appendTimeMs: number, rowCountMax: number): StampedBatch {
  const { length, stored } = joinedColumns(columns, checkRowsStream(columns, bytes, rowCountMax));
  stored.push(appendTimesColumn(length, appendTimeMs));
  return { payload: encodeLayout(columns, 'log', length, stored), rowCount: length };
}

/**
 * The changelog batch of a primary-key table whose records are `+I` of the rows of checked client batches
 * (see `checkRowsStream`; whole rows, every column of the table), in order, with `appendTimeMs` as every
 * record's time: what `encodeBatch` writes for those rows with change type `+I`, built from their columns
 * without rows (a group of puts of new keys, whose change records are its rows).
 */
export function changelogOfInserts(columns: ColumnSpec[], batches: readonly CheckedBatch[], appendTimeMs: number): StampedBatch {
  const { length, stored } = joinedColumns(columns, batches);
  stored.push(appendTimesColumn(length, appendTimeMs), { length, nullCount: 0, buffers: [EMPTY, bytesOf(new Int8Array(length).fill(CHANGE_TYPES.indexOf('+I')))] });
  return { payload: encodeLayout(columns, 'changelog', length, stored), rowCount: length };
}

/**
 * The columns of checked batches as the buffers of one batch of all their rows (a new array, the callers add
 * system columns to it). Value buffers that only need concatenating stay chunks: the encoder copies them once.
 */
function joinedColumns(columns: ColumnSpec[], batches: readonly CheckedBatch[]): { length: number; stored: EncodableColumn[] } {
  let length = 0;
  for (const batch of batches) length += batch.length;
  const stored = batches.length === 1 ? [...batches[0]!.columns] : columns.map((column, index) => concatColumnBuffers(column.type, batches.map((batch) => batch.columns[index]!)));
  return { length, stored };
}

function appendTimesColumn(length: number, appendTimeMs: number): ColumnBuffers {
  if (!Number.isSafeInteger(appendTimeMs)) throw new Error(`append time ${appendTimeMs} is not a safe integer`);
  return { length, nullCount: 0, buffers: [EMPTY, bytesOf(new BigInt64Array(length).fill(BigInt(appendTimeMs)))] };
}

/**
 * One column of several checked record batches (see `checkRowsStream`) as the buffers of one batch of all
 * their rows, in order: validity bitmaps and boolean bits joined bit by bit, fixed-width values and string
 * bytes back to back, value offsets moved on by the bytes before them.
 */
function concatColumnBuffers(type: ColumnType, parts: readonly ColumnBuffers[]): EncodableColumn {
  let length = 0;
  let nullCount = 0;
  for (const part of parts) {
    length += part.length;
    nullCount += part.nullCount;
  }
  const joinBits = (bufferIndex: number, allSet: (part: ColumnBuffers) => boolean): Uint8Array => {
    const bits = new Uint8Array(Math.ceil(length / 8));
    let position = 0;
    for (const part of parts) {
      const source = part.buffers[bufferIndex]!;
      const every = allSet(part);
      for (let row = 0; row < part.length; row++, position++) {
        if (every || (source[row >> 3]! & (1 << (row & 7))) !== 0) bits[position >> 3] |= 1 << (position & 7);
      }
    }
    return bits;
  };
  const validity = nullCount === 0 ? EMPTY : joinBits(0, (part) => part.nullCount === 0);
  switch (type) {
    case 'boolean':
      return { length, nullCount, buffers: [validity, joinBits(1, () => false)] };
    case 'int32':
    case 'float64':
    case 'int64':
    case 'timestamp':
      return { length, nullCount, buffers: [validity, parts.map((part) => part.buffers[1]!)] };
    case 'string':
    case 'bytes': {
      const offsets = new Int32Array(length + 1);
      let row = 0;
      let base = 0;
      for (const part of parts) {
        const source = part.buffers[1]!;
        const view = new DataView(source.buffer, source.byteOffset, source.byteLength);
        for (let index = 1; index <= part.length; index++) offsets[++row] = base + view.getInt32(index * 4, true);
        base += part.buffers[2]!.byteLength;
      }
      if (base > 0x7fffffff) throw new InvalidArgumentError(`batch: the values of a string or bytes column reach ${base} bytes, more than 32-bit offsets hold`);
      return { length, nullCount, buffers: [validity, bytesOf(offsets), parts.map((part) => part.buffers[2]!)] };
    }
  }
}

/**
 * Checks an Arrow IPC stream of rows a client sends for a table with `columns` and returns its record
 * batches. The stream must hold exactly one schema whose fields are the table's columns (names, types, in
 * table order; a field may be declared not nullable, it is stored nullable like every column), then one or
 * more record batches, uncompressed, of at most `rowCountMax` rows together, and the end-of-stream marker.
 * Their structure is checked (buffer count and bounds, validity bitmaps, value offsets, UTF-8 of string
 * values, timestamps within the safe integers); values are not converted one by one. Throws
 * InvalidArgumentError naming what is wrong.
 */
export function checkRowsStream(columns: ColumnSpec[], bytes: Uint8Array, rowCountMax: number): CheckedBatch[] {
  const refuse = (reason: string) => new InvalidArgumentError(`batch: ${reason}`);
  /** Null when this schema message was checked against these columns before. */
  let schemaFields: Field[] | null;
  let schemaKey: string;
  const batches: { header: RecordBatchMetadata; body: Uint8Array }[] = [];
  try {
    // Bodies stay views of the request (no alignment copy): the checks below read them byte-wise and
    // through DataViews, and encodeLayout copies them into the stored batch once.
    const messages = readIpcMessages(bytes);
    const schemaMessage = messages[0];
    if (schemaMessage === undefined || !isSchemaMessage(schemaMessage)) throw refuse('an Arrow IPC stream must start with its schema message');
    // A client sends the same schema message with every append: decoding its fields was most of the check's
    // CPU. One whose bytes were checked against these columns before is taken without decoding it again.
    schemaKey = checkedSchemaKeyOf(columns, bytes.subarray(schemaMessage.start, schemaMessage.end));
    schemaFields = CHECKED_SCHEMAS.has(schemaKey) ? null : schemaFieldsOf(schemaMessage);
    for (const message of messages.slice(1)) {
      if (!isRecordBatchMessage(message)) throw refuse('the schema must be followed by record batches only (dictionaries are not taken)');
      // Each header is read here, where a corrupt one is a readable refusal; a 64-bit figure beyond the
      // safe integers is one.
      batches.push({ header: recordBatchOf(message), body: message.body });
    }
    if (batches.length === 0) throw refuse('the schema must be followed by record batches only (dictionaries are not taken)');
  } catch (error) {
    if (error instanceof InvalidArgumentError) throw error;
    throw refuse(`not a readable Arrow IPC stream (${error instanceof Error ? error.message : String(error)})`);
  }
  if (schemaFields !== null) {
    checkFieldsAreColumns(columns, schemaFields);
    if (CHECKED_SCHEMAS.size >= CHECKED_SCHEMAS_MAX) CHECKED_SCHEMAS.clear();
    CHECKED_SCHEMAS.add(schemaKey);
  }
  let rowCount = 0;
  for (const { header } of batches) rowCount += header.length;
  if (rowCount > rowCountMax) throw refuse(`a request carries at most ${rowCountMax} rows for one bucket, got ${rowCount}`);
  return batches.map(({ header, body }) => checkRecordBatch(columns, header, body));
}

/**
 * Schema messages of clients' streams found to hold exactly a column set's fields (see `checkFieldsAreColumns`),
 * each as its column set (names and types, all the check reads of it) and the message's bytes; beyond
 * CHECKED_SCHEMAS_MAX the set starts afresh. Only checks that passed are kept: a refusal is decoded and
 * named every time.
 */
const CHECKED_SCHEMAS = new Set<string>();
const CHECKED_SCHEMAS_MAX = 4_096;

/** The key of CHECKED_SCHEMAS for a schema message's bytes (`message`, as encapsulated in the stream) checked against `columns`. */
function checkedSchemaKeyOf(columns: readonly ColumnSpec[], message: Uint8Array): string {
  let key = '';
  for (const column of columns) key += `${column.name.length}:${column.name}:${column.type},`;
  return `${key}|${Buffer.from(message.buffer, message.byteOffset, message.byteLength).toString('latin1')}`;
}

/** One record batch of a client's stream checked against the table's columns (see `checkRowsStream`). */
function checkRecordBatch(columns: ColumnSpec[], header: RecordBatchMetadata, body: Uint8Array): CheckedBatch {
  const refuse = (reason: string) => new InvalidArgumentError(`batch: ${reason}`);
  if (header.compressed) throw refuse('compressed record batches are not taken');
  const length = header.length;
  if (!Number.isSafeInteger(length) || length < 1) throw refuse(`a record batch must hold at least one row, got ${length}`);
  if (header.nodes.length !== columns.length) throw refuse(`the record batch has ${header.nodes.length} field nodes for ${columns.length} fields`);

  const buffersPerColumn = columns.map((column) => (column.type === 'string' || column.type === 'bytes' ? 3 : 2));
  if (header.buffers.length !== buffersPerColumn.reduce((sum, count) => sum + count, 0)) throw refuse(`the record batch has ${header.buffers.length} buffers, its fields need ${buffersPerColumn.reduce((sum, count) => sum + count, 0)}`);
  const bufferAt = (index: number): Uint8Array => {
    const region = header.buffers[index]!;
    if (!Number.isSafeInteger(region.offset) || !Number.isSafeInteger(region.length) || region.offset < 0 || region.length < 0 || region.offset + region.length > body.byteLength) {
      throw refuse(`buffer ${index} [${region.offset}, +${region.length}) lies outside the body of ${body.byteLength} bytes`);
    }
    return body.subarray(region.offset, region.offset + region.length);
  };

  const stored: ColumnBuffers[] = [];
  let next = 0;
  columns.forEach((column, index) => {
    const node = header.nodes[index]!;
    const where = `column '${column.name}'`;
    if (node.length !== length) throw refuse(`${where} holds ${node.length} values in a batch of ${length} rows`);
    if (!Number.isSafeInteger(node.nullCount) || node.nullCount < 0 || node.nullCount > length) throw refuse(`${where} has a null count of ${node.nullCount}`);
    const validityBytes = Math.ceil(length / 8);
    let validity = bufferAt(next++);
    if (node.nullCount > 0) {
      if (validity.byteLength < validityBytes) throw refuse(`${where} has ${node.nullCount} nulls but a validity bitmap of ${validity.byteLength} bytes`);
      let valid = 0;
      for (let row = 0; row < length; row++) if ((validity[row >> 3]! & (1 << (row & 7))) !== 0) valid++;
      if (valid !== length - node.nullCount) throw refuse(`${where}: its validity bitmap marks ${length - valid} nulls, its null count says ${node.nullCount}`);
      validity = validity.subarray(0, validityBytes);
    } else {
      validity = EMPTY;
    }
    const isValid = (row: number) => node.nullCount === 0 || (validity[row >> 3]! & (1 << (row & 7))) !== 0;
    switch (column.type) {
      case 'boolean': {
        const bits = bufferAt(next++);
        if (bits.byteLength < validityBytes) throw refuse(`${where} needs ${validityBytes} bytes of values, has ${bits.byteLength}`);
        stored.push({ length, nullCount: node.nullCount, buffers: [validity, bits.subarray(0, validityBytes)] });
        return;
      }
      case 'int32':
      case 'float64':
      case 'int64':
      case 'timestamp': {
        const width = column.type === 'int32' ? 4 : 8;
        const values = bufferAt(next++);
        if (values.byteLength < length * width) throw refuse(`${where} needs ${length * width} bytes of values, has ${values.byteLength}`);
        const exact = values.subarray(0, length * width);
        if (column.type === 'timestamp') {
          const view = new DataView(exact.buffer, exact.byteOffset, exact.byteLength);
          for (let row = 0; row < length; row++) {
            if (!isValid(row)) continue;
            const value = view.getBigInt64(row * 8, true);
            if (value > MAX_SAFE || value < MIN_SAFE) throw refuse(`${where}, row ${row}: timestamp ${value} is beyond the safe integers`);
          }
        }
        stored.push({ length, nullCount: node.nullCount, buffers: [validity, exact] });
        return;
      }
      case 'string':
      case 'bytes': {
        const offsetBytes = bufferAt(next++);
        const data = bufferAt(next++);
        if (offsetBytes.byteLength < (length + 1) * 4) throw refuse(`${where} needs ${(length + 1) * 4} bytes of value offsets, has ${offsetBytes.byteLength}`);
        const offsets = new DataView(offsetBytes.buffer, offsetBytes.byteOffset, (length + 1) * 4);
        const first = offsets.getInt32(0, true);
        if (first !== 0) throw refuse(`${where}: value offsets must start at 0, got ${first}`);
        let previous = 0;
        for (let row = 1; row <= length; row++) {
          const offset = offsets.getInt32(row * 4, true);
          if (offset < previous) throw refuse(`${where}: value offset ${row} (${offset}) is below the one before (${previous})`);
          previous = offset;
        }
        if (previous > data.byteLength) throw refuse(`${where}: value offsets reach ${previous}, the values hold ${data.byteLength} bytes`);
        const values = data.subarray(0, previous);
        if (column.type === 'string' && !isUtf8(values)) throw refuse(`${where} holds bytes that are not UTF-8`);
        stored.push({ length, nullCount: node.nullCount, buffers: [validity, offsetBytes.subarray(0, (length + 1) * 4), values] });
        return;
      }
    }
  });
  return { length, columns: stored };
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);

/** The fields of a batch of `layout`: the table's columns (nullable), then its system columns (not nullable). */
function fieldsOf(columns: ColumnSpec[], layout: BatchLayout): Field[] {
  const fields = columns.map((column) => new Field(column.name, arrowTypeOf(column.type), true));
  if (layout !== 'rows') fields.push(new Field(APPEND_TIME_COLUMN, new TimestampMillisecond('UTC'), false));
  if (layout === 'changelog') fields.push(new Field(CHANGE_TYPE_COLUMN, new Int8(), false));
  return fields;
}

/**
 * Decodes a batch written by encodeBatch for a table with `columns`. Rows hold the `projection` columns
 * in the projection's order, or every column in table order without one. Throws InvalidArgumentError
 * when the projection names a column the table does not have (or names one twice).
 *
 * A projected column that the batch does not hold reads as null, so batches written before a column was
 * added stay readable. A column the batch holds with another Arrow type, or a batch without append
 * times, means the stored data is not what this table writes, and throws a plain Error.
 */
export function decodeBatch(columns: ColumnSpec[], bytes: Uint8Array, projection?: string[]): DecodedBatch {
  const projected = projectedColumns(columns, projection);
  const reader = RecordBatchReader.from(bytes);
  const timestampsMs: number[] = [];
  const rows: Row[] = [];
  let changeTypes: ChangeType[] | undefined;
  for (const batch of reader) {
    const fieldIndexByName = new Map(batch.schema.fields.map((field, index) => [field.name, index]));
    const appendTimeIndex = fieldIndexByName.get(APPEND_TIME_COLUMN);
    if (appendTimeIndex === undefined) throw new Error(`record batch has no '${APPEND_TIME_COLUMN}' column`);
    const appendTimes = batch.data.children[appendTimeIndex];
    checkArrowType(APPEND_TIME_COLUMN, appendTimes.type, new TimestampMillisecond('UTC'));

    const valueReaders = projected.map((column): ValueReader => {
      const fieldIndex = fieldIndexByName.get(column.name);
      if (fieldIndex === undefined) return () => null;
      const data = batch.data.children[fieldIndex];
      checkArrowType(column.name, data.type, arrowTypeOf(column.type));
      return readerOf(column.type, data);
    });
    const appendTimeOf = readerOf('timestamp', appendTimes);
    const changeTypeIndex = fieldIndexByName.get(CHANGE_TYPE_COLUMN);
    const changeCodes = changeTypeIndex === undefined ? undefined : changeCodesIn(batch.data.children[changeTypeIndex]);
    // Rows are built one at a time, all columns at once, so each object is allocated and filled together.
    for (let index = 0; index < batch.numRows; index++) {
      const row: Row = {};
      for (let position = 0; position < projected.length; position++) setField(row, projected[position].name, valueReaders[position](index));
      rows.push(row);
      timestampsMs.push(appendTimeOf(index) as number);
      if (changeCodes !== undefined) (changeTypes ??= []).push(changeTypeOf(changeCodes[index]!));
    }
  }
  return changeTypes === undefined ? { timestampsMs, rows } : { timestampsMs, rows, changeTypes };
}

function changeCodesOf(rowCount: number, changeTypes: readonly ChangeType[]): Int8Array {
  if (changeTypes.length !== rowCount) throw new Error(`${changeTypes.length} change types for ${rowCount} rows`);
  const codes = new Int8Array(rowCount);
  for (let index = 0; index < rowCount; index++) {
    const code = CHANGE_TYPES.indexOf(changeTypes[index]!);
    if (code < 0) throw new Error(`unknown change type ${String(changeTypes[index])}`);
    codes[index] = code;
  }
  return codes;
}

function changeCodesIn(data: Data): Int8Array {
  checkArrowType(CHANGE_TYPE_COLUMN, data.type, new Int8());
  const values = data.values as Int8Array;
  return values.subarray(data.offset, data.offset + data.length);
}

function changeTypeOf(code: number): ChangeType {
  const changeType = CHANGE_TYPES[code];
  if (changeType === undefined) throw new Error(`stored change type code ${code} is unknown`);
  return changeType;
}

/**
 * The number of rows in an encoded batch, read from the record batch headers without decoding any
 * column (the bodies are skipped).
 */
export function batchRowCount(bytes: Uint8Array): number {
  let rowCount = 0;
  for (const message of readIpcMessages(bytes)) if (isRecordBatchMessage(message)) rowCount += recordBatchOf(message).length;
  return rowCount;
}

function appendTimesOf(rowCount: number, timestampsMs: number[] | number): BigInt64Array {
  if (typeof timestampsMs === 'number') {
    if (!Number.isSafeInteger(timestampsMs)) throw new Error(`append time ${timestampsMs} is not a safe integer`);
    return new BigInt64Array(rowCount).fill(BigInt(timestampsMs));
  }
  if (timestampsMs.length !== rowCount) throw new Error(`${timestampsMs.length} append times for ${rowCount} rows`);
  const appendTimes = new BigInt64Array(rowCount);
  for (let index = 0; index < rowCount; index++) {
    if (!Number.isSafeInteger(timestampsMs[index])) throw new Error(`append time ${timestampsMs[index]} is not a safe integer`);
    appendTimes[index] = BigInt(timestampsMs[index]);
  }
  return appendTimes;
}

/** The checked projection: the named columns in the given order, or every column. */
export function projectedColumns(columns: ColumnSpec[], projection: string[] | undefined): ColumnSpec[] {
  if (projection === undefined) return columns;
  const seen = new Set<string>();
  return projection.map((name) => {
    const column = columns.find((candidate) => candidate.name === name);
    if (column === undefined) throw new InvalidArgumentError(`unknown column '${name}' in the projection`);
    if (seen.has(name)) throw new InvalidArgumentError(`column '${name}' is listed twice in the projection`);
    seen.add(name);
    return column;
  });
}

/** The Arrow type a column of `type` is stored as. */
export function arrowTypeOf(type: ColumnType): DataType {
  switch (type) {
    case 'boolean':
      return new Bool();
    case 'int32':
      return new Int32();
    case 'int64':
      return new Int64();
    case 'float64':
      return new Float64();
    case 'string':
      return new Utf8();
    case 'bytes':
      return new Binary();
    case 'timestamp':
      return new TimestampMillisecond('UTC');
  }
}

function checkArrowType(name: string, actual: DataType, expected: DataType): void {
  // The rendering names the type with its parameters (bit width, unit, time zone), so equal text means
  // equal types for every type this codec writes.
  if (String(actual) !== String(expected)) throw new Error(`column '${name}' is stored as ${actual}, expected ${expected}`);
}

/** A validity bitmap (bit set = value present) of a column, and how many of its values are null. */
interface Validity {
  bitmap: Uint8Array | undefined;
  nullCount: number;
}

function validityOf(values: unknown[]): Validity {
  let nullCount = 0;
  for (const value of values) if (value === null || value === undefined) nullCount++;
  // A column without nulls needs no bitmap; Arrow readers treat a missing bitmap as all valid.
  if (nullCount === 0) return { bitmap: undefined, nullCount };
  const bitmap = new Uint8Array(Math.ceil(values.length / 8));
  for (let index = 0; index < values.length; index++) {
    const value = values[index];
    if (value !== null && value !== undefined) bitmap[index >> 3] |= 1 << (index & 7);
  }
  return { bitmap, nullCount };
}

/** What every column of a batch starts with: its length, null count and validity buffer (empty without nulls). */
interface ColumnValidity {
  length: number;
  nullCount: number;
  nullBitmap: Uint8Array;
}

function encodeColumn(column: ColumnSpec, rows: Row[]): ColumnBuffers {
  const values = rows.map((row) => fieldOf(row, column.name));
  const { bitmap, nullCount } = validityOf(values);
  const common: ColumnValidity = { length: rows.length, nullCount, nullBitmap: bitmap ?? EMPTY };
  const columnOf = (...buffers: Uint8Array[]): ColumnBuffers => ({ length: rows.length, nullCount, buffers: [common.nullBitmap, ...buffers] });
  const notCanonical = (index: number, wanted: string): Error =>
    new Error(`row ${index}, column '${column.name}': ${column.type} wants ${wanted}, got ${typeof values[index]}`);

  switch (column.type) {
    case 'boolean': {
      const bits = new Uint8Array(Math.ceil(rows.length / 8));
      values.forEach((value, index) => {
        if (value === null || value === undefined) return;
        if (typeof value !== 'boolean') throw notCanonical(index, 'a boolean');
        if (value) bits[index >> 3] |= 1 << (index & 7);
      });
      return columnOf(bits);
    }
    case 'int32':
    case 'float64': {
      const data = column.type === 'int32' ? new Int32Array(rows.length) : new Float64Array(rows.length);
      values.forEach((value, index) => {
        if (value === null || value === undefined) return;
        if (typeof value !== 'number') throw notCanonical(index, 'a number');
        data[index] = value;
      });
      return columnOf(bytesOf(data));
    }
    case 'int64':
    case 'timestamp': {
      const data = new BigInt64Array(rows.length);
      values.forEach((value, index) => {
        if (value === null || value === undefined) return;
        if (column.type === 'int64') {
          if (typeof value !== 'bigint') throw notCanonical(index, 'a bigint');
          data[index] = value;
        } else {
          if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw notCanonical(index, 'a safe integer number');
          data[index] = BigInt(value);
        }
      });
      return columnOf(bytesOf(data));
    }
    case 'string':
    case 'bytes':
      return encodeVariableWidth(column, values, common);
  }
}

/**
 * A string column's values written in one pass into a buffer of this many bytes at most (3 bytes of UTF-8
 * per UTF-16 code unit bound them); a column whose bound is larger counts its bytes first.
 */
const ONE_PASS_STRING_BYTES_MAX = 8 << 20;

/** A Utf8 or Binary column: one offset per row plus one, into the concatenated bytes of all values. */
function encodeVariableWidth(column: ColumnSpec, values: unknown[], common: ColumnValidity): ColumnBuffers {
  const isString = column.type === 'string';
  let byteLength = 0;
  let boundBytes = 0;
  values.forEach((value, index) => {
    if (value === null || value === undefined) return;
    if (isString ? typeof value !== 'string' : !(value instanceof Uint8Array)) {
      throw new Error(`row ${index}, column '${column.name}': ${column.type} wants ${isString ? 'a string' : 'a Uint8Array'}, got ${typeof value}`);
    }
    if (isString) boundBytes += (value as string).length * 3;
    else byteLength += (value as Uint8Array).byteLength;
  });
  // Strings: written into a buffer of their bound, without measuring each one first, unless it is large.
  const onePass = isString && boundBytes <= ONE_PASS_STRING_BYTES_MAX;
  if (isString && !onePass) for (const value of values) if (typeof value === 'string') byteLength += Buffer.byteLength(value, 'utf8');
  if (byteLength > VARIABLE_WIDTH_BYTES_MAX) {
    throw new Error(`column '${column.name}' holds ${byteLength} bytes, more than one Arrow batch can (${VARIABLE_WIDTH_BYTES_MAX})`);
  }
  const valueOffsets = new Int32Array(values.length + 1);
  const data = Buffer.allocUnsafe(onePass ? boundBytes : byteLength);
  let offset = 0;
  values.forEach((value, index) => {
    if (typeof value === 'string') {
      offset += data.write(value, offset, 'utf8');
    } else if (value instanceof Uint8Array) {
      data.set(value, offset);
      offset += value.byteLength;
    }
    valueOffsets[index + 1] = offset;
  });
  if (onePass) byteLength = offset;
  // The buffer is not zeroed, so every byte of it must have been written over.
  else if (offset !== byteLength) throw new Error(`column '${column.name}': wrote ${offset} of ${byteLength} bytes`);
  return { length: common.length, nullCount: common.nullCount, buffers: [common.nullBitmap, bytesOf(valueOffsets), data.subarray(0, byteLength)] };
}

/** Reads the value of one row of one column of one batch; null where the row has none. */
type ValueReader = (index: number) => unknown;

/** A reader of the column `data` of `type`, with its buffers looked up once rather than per row. */
function readerOf(type: ColumnType, data: Data): ValueReader {
  const { offset } = data;
  const isValid = validityReaderOf(data);
  switch (type) {
    case 'boolean': {
      const bits = data.values as Uint8Array;
      return (index) => (isValid(index) ? bitAt(bits, offset + index) : null);
    }
    case 'int32':
    case 'float64':
    case 'int64': {
      const values = data.values as Int32Array | Float64Array | BigInt64Array;
      return (index) => (isValid(index) ? values[offset + index] : null);
    }
    case 'timestamp': {
      const values = data.values as BigInt64Array;
      return (index) => (isValid(index) ? Number(values[offset + index]) : null);
    }
    case 'string': {
      const offsets = data.valueOffsets as Int32Array;
      const text = bufferOf(data.values as Uint8Array);
      return (index) => (isValid(index) ? text.toString('utf8', offsets[offset + index], offsets[offset + index + 1]) : null);
    }
    case 'bytes': {
      const offsets = data.valueOffsets as Int32Array;
      const bytes = data.values as Uint8Array;
      // A copy, so a row neither keeps the whole batch alive nor lets a caller change it.
      return (index) => (isValid(index) ? bytes.slice(offsets[offset + index], offsets[offset + index + 1]) : null);
    }
  }
}

function validityReaderOf(data: Data): (index: number) => boolean {
  const { nullBitmap, offset } = data;
  if (data.nullCount === 0 || nullBitmap === undefined || nullBitmap.length === 0) return () => true;
  return (index) => bitAt(nullBitmap, offset + index);
}

/** A Buffer over the same memory, for Node's fast UTF-8 decoding; no bytes are copied. */
function bufferOf(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
