/**
 * Scans as Arrow (docs/architecture.md §12): the records of stored batches from an offset on, as one Arrow IPC stream of
 * the projected columns plus the scan's system columns, built from the stored buffers without decoding a
 * value into a row. Projection picks column buffers by name; the rows of a batch before the offset asked
 * for (or after the limit) are cut off by slicing the buffers, which copies only validity bitmaps that do
 * not start on a byte and value offsets that do not start at zero.
 *
 * The scan layout: the projected columns (nullable, in projection order), then `_offset` (int64), the
 * record's offset, `_timestamp` (timestamp ms UTC), its append time, and for a PK table's changelog
 * `_change` (utf8), its change type (`+I`, `-U`, `+U`, `-D`).
 */
import { Field, Int64, TimestampMillisecond, Utf8 } from 'apache-arrow';
import { type ColumnSpec, RESERVED_COLUMN_NAMES } from '@mink/meta';

import { APPEND_TIME_COLUMN, CHANGE_TYPES, CHANGE_TYPE_COLUMN, arrowTypeOf } from './arrow-codec';
import { type ColumnBuffers, END_OF_STREAM, bytesOf, recordBatchMessageOf, schemaMessageOf } from './arrow-ipc';
import { type RawColumn, buffersPerType, int32sOf, readIpcStream } from './ipc-reader';

/** The system columns of a scan; a table's columns may not take these names (RESERVED_COLUMN_NAMES). */
export const SCAN_OFFSET_COLUMN = RESERVED_COLUMN_NAMES[0]!;
export const SCAN_TIMESTAMP_COLUMN = RESERVED_COLUMN_NAMES[1]!;
export const SCAN_CHANGE_COLUMN = RESERVED_COLUMN_NAMES[2]!;

/** What a scan returns: the projected columns (table columns, in projection order), and whether it is a PK changelog. */
export interface ScanLayout {
  columns: ColumnSpec[];
  changelog: boolean;
}

/** One stored batch: its encoded payload and the offset of its first record. */
export interface StoredBatch {
  startOffset: number;
  payload: Uint8Array;
}

export interface ScanPage {
  /** A complete IPC stream (schema, record batches, end-of-stream) of the scan layout, as parts to send back to back. */
  stream: Uint8Array[];
  /** Bytes of the stream. */
  byteLength: number;
  records: number;
  /** The offset after the last record in the stream (`fromOffset` when it holds none). */
  nextOffset: number;
}

export function scanFieldsOf(layout: ScanLayout): Field[] {
  const fields = layout.columns.map((column) => new Field(column.name, arrowTypeOf(column.type), true));
  fields.push(new Field(SCAN_OFFSET_COLUMN, new Int64(), false));
  fields.push(new Field(SCAN_TIMESTAMP_COLUMN, new TimestampMillisecond('UTC'), false));
  if (layout.changelog) fields.push(new Field(SCAN_CHANGE_COLUMN, new Utf8(), false));
  return fields;
}

function scanSchemaMessageOf(layout: ScanLayout): Uint8Array {
  const key = `scan|${layout.changelog ? 'changelog' : 'log'}|${layout.columns.map((column) => `${column.name}:${column.type}`).join(',')}`;
  return schemaMessageOf(key, () => scanFieldsOf(layout));
}

/**
 * The records of `batches` (whole stored batches in offset order, the first one holding `fromOffset` or
 * starting after it) from `fromOffset` on, at most `recordsMax` of them, as one IPC stream of at most
 * `bytesMax` bytes, except that a stream holds at least one record when there is one (a single record
 * larger than `bytesMax` is returned alone). A batch that would pass the byte bound is cut to the rows that
 * fit. A stored batch whose columns do not have the table's types throws a plain Error.
 */
export function encodeScanPage(layout: ScanLayout, batches: readonly StoredBatch[], fromOffset: number, recordsMax: number, bytesMax: number): ScanPage {
  const schema = scanSchemaMessageOf(layout);
  const parts: Uint8Array[] = [schema];
  let bytes = schema.byteLength + END_OF_STREAM.byteLength;
  let records = 0;
  let nextOffset = fromOffset;
  for (const batch of batches) {
    if (records >= recordsMax) break;
    const stored = readStoredBatch(batch.payload);
    const endOffset = batch.startOffset + stored.length;
    if (endOffset <= nextOffset) continue;
    // Only the first batch may start after the offset asked for: the records before it were trimmed.
    if (batch.startOffset > nextOffset) {
      if (records > 0) throw new Error(`stored batches skip from offset ${nextOffset} to ${batch.startOffset}`);
      nextOffset = batch.startOffset;
    }
    const from = nextOffset - batch.startOffset;
    let to = Math.min(stored.length, from + (recordsMax - records));
    let message = scanMessageOf(layout, stored, batch.startOffset, from, to);
    let size = messageBytes(message);
    while (bytes + size > bytesMax && to - from > 1) {
      // Cut the batch to the rows that fit at its average row size, and again while that is still too big.
      const rowBytes = size / (to - from);
      const fitting = Math.floor((bytesMax - bytes) / rowBytes);
      if (fitting < 1 && records > 0) break;
      to = from + Math.max(1, Math.min(to - from - 1, fitting));
      message = scanMessageOf(layout, stored, batch.startOffset, from, to);
      size = messageBytes(message);
    }
    if (bytes + size > bytesMax && records > 0) break;
    parts.push(...message);
    bytes += size;
    records += to - from;
    nextOffset = batch.startOffset + to;
    // A batch cut short by the byte bound ends the page: the next one continues inside it.
    if (to < stored.length || bytes >= bytesMax) break;
  }
  parts.push(END_OF_STREAM);
  return { stream: parts, byteLength: bytes, records, nextOffset };
}

/** A stored batch read as raw columns by name: its row count and the buffers of each field. */
interface StoredColumns {
  length: number;
  byName: Map<string, { type: string; column: RawColumn }>;
}

function readStoredBatch(payload: Uint8Array): StoredColumns {
  const stream = readIpcStream(payload);
  if (stream.batches.length !== 1) throw new Error(`a stored batch holds ${stream.batches.length} record batches, not one`);
  const batch = stream.batches[0]!;
  const byName = new Map<string, { type: string; column: RawColumn }>();
  stream.fields.forEach((field, index) => byName.set(field.name, { type: String(field.type), column: batch.columns[index]! }));
  return { length: batch.length, byName };
}

function scanMessageOf(layout: ScanLayout, stored: StoredColumns, startOffset: number, from: number, to: number): Uint8Array[] {
  const length = to - from;
  const columns: ColumnBuffers[] = layout.columns.map((column) => {
    const found = stored.byName.get(column.name);
    const type = arrowTypeOf(column.type);
    // A column added after the batch was written reads as null.
    if (found === undefined) return nullColumn(buffersPerType(type), length);
    if (found.type !== String(type)) throw new Error(`column '${column.name}' is stored as ${found.type}, expected ${String(type)}`);
    return sliceColumn(found.column, column.type === 'boolean' ? 'bits' : column.type === 'string' || column.type === 'bytes' ? 'variable' : fixedWidthOf(column.type), from, to);
  });
  const offsets = new BigInt64Array(length);
  for (let index = 0; index < length; index++) offsets[index] = BigInt(startOffset + from + index);
  columns.push({ length, nullCount: 0, buffers: [EMPTY, bytesOf(offsets)] });
  const appendTimes = stored.byName.get(APPEND_TIME_COLUMN);
  if (appendTimes === undefined) throw new Error(`a stored batch has no '${APPEND_TIME_COLUMN}' column`);
  columns.push(sliceColumn(appendTimes.column, 8, from, to));
  if (layout.changelog) columns.push(changeColumnOf(stored, from, to));
  return recordBatchMessageOf(length, columns);
}

const EMPTY = new Uint8Array(0);

function fixedWidthOf(type: ColumnSpec['type']): number {
  return type === 'int32' ? 4 : 8;
}

function messageBytes(parts: readonly Uint8Array[]): number {
  let total = 0;
  for (const part of parts) total += part.byteLength;
  return total;
}

/** The `_change` column: each change code as its two-character text, so every value is two bytes long. */
function changeColumnOf(stored: StoredColumns, from: number, to: number): ColumnBuffers {
  const codes = stored.byName.get(CHANGE_TYPE_COLUMN);
  if (codes === undefined) throw new Error(`a stored changelog batch has no '${CHANGE_TYPE_COLUMN}' column`);
  const values = codes.column.buffers[1]!;
  const length = to - from;
  const offsets = new Int32Array(length + 1);
  const text = new Uint8Array(length * 2);
  for (let index = 0; index < length; index++) {
    const changeType = CHANGE_TYPES[values[from + index]!];
    if (changeType === undefined) throw new Error(`stored change type code ${values[from + index]} is unknown`);
    text[index * 2] = changeType.charCodeAt(0);
    text[index * 2 + 1] = changeType.charCodeAt(1);
    offsets[index + 1] = (index + 1) * 2;
  }
  return { length, nullCount: 0, buffers: [EMPTY, bytesOf(offsets), text] };
}

/** A column of `length` nulls: an all-zero validity bitmap and zeroed values. */
function nullColumn(bufferCount: number, length: number): ColumnBuffers {
  const validity = new Uint8Array(Math.ceil(length / 8));
  if (bufferCount === 3) return { length, nullCount: length, buffers: [validity, new Uint8Array((length + 1) * 4), EMPTY] };
  return { length, nullCount: length, buffers: [validity, new Uint8Array(length * 8)] };
}

/**
 * Rows [from, to) of a raw column. `layout` is the value layout: a bitmap of booleans, value offsets and
 * bytes of a variable-width type, or the byte width of fixed-width values.
 */
export function sliceColumn(column: RawColumn, layout: 'bits' | 'variable' | number, from: number, to: number): ColumnBuffers {
  const length = to - from;
  let nullCount = 0;
  let validity: Uint8Array = EMPTY;
  if (column.nullCount > 0) {
    validity = sliceBits(column.buffers[0]!, from, to);
    nullCount = length - countBits(validity, length);
    if (nullCount === 0) validity = EMPTY;
  }
  if (layout === 'bits') return { length, nullCount, buffers: [validity, sliceBits(column.buffers[1]!, from, to)] };
  if (layout === 'variable') {
    const offsets = int32sOf(column.buffers[1]!, column.length + 1);
    const base = offsets[from]!;
    const end = offsets[to]!;
    let sliced: Int32Array;
    if (base === 0) {
      sliced = offsets.subarray(from, to + 1);
    } else {
      sliced = new Int32Array(length + 1);
      for (let index = 0; index <= length; index++) sliced[index] = offsets[from + index]! - base;
    }
    return { length, nullCount, buffers: [validity, bytesOf(sliced), column.buffers[2]!.subarray(base, end)] };
  }
  return { length, nullCount, buffers: [validity, column.buffers[1]!.subarray(from * layout, to * layout)] };
}

/** Bits [from, to) of a bitmap, starting at bit 0 of a new bitmap (a view when `from` is on a byte). */
function sliceBits(bits: Uint8Array, from: number, to: number): Uint8Array {
  const length = to - from;
  const bytes = Math.ceil(length / 8);
  if ((from & 7) === 0) {
    const view = bits.subarray(from >> 3, (from >> 3) + bytes);
    // Bits past `to` in the last byte are left as stored; readers ignore bits beyond the length.
    return view;
  }
  const out = new Uint8Array(bytes);
  for (let index = 0; index < length; index++) {
    const bit = from + index;
    if ((bits[bit >> 3]! & (1 << (bit & 7))) !== 0) out[index >> 3] |= 1 << (index & 7);
  }
  return out;
}

function countBits(bits: Uint8Array, length: number): number {
  let count = 0;
  for (let index = 0; index < length; index++) if ((bits[index >> 3]! & (1 << (index & 7))) !== 0) count++;
  return count;
}
