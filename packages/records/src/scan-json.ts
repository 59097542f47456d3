/**
 * The JSON text of the records of a scan stream (see scan-stream.ts), written in one pass from the Arrow
 * buffers to UTF-8 bytes, with no row objects and no intermediate strings: each record is
 * `{"offset":…,"timestamp":…,"changeType":…,"row":{…}}` (changeType only on a changelog), its row following
 * the protobuf JSON mapping of json.ts: int64 as a decimal string, bytes as base64, timestamps as epoch
 * milliseconds, null as null. The bytes are exactly what `JSON.stringify` gives for the objects a
 * row-by-row decode would build (a string needing no escapes is copied from the stored UTF-8 as it is).
 */
import { type DataType, Type } from 'apache-arrow';

import { type RawColumn, int32sOf, readIpcStream } from './ipc-reader';
import { SCAN_CHANGE_COLUMN, SCAN_OFFSET_COLUMN, SCAN_TIMESTAMP_COLUMN } from './scan-stream';

/** The JSON text of the records of `stream` with `separator` between them (and after the last with `trailing`). */
export function scanJsonText(stream: Uint8Array, separator: ',' | '\n', trailing = false): { text: Buffer; records: number } {
  const { fields, batches } = readIpcStream(stream);
  const indexOf = (name: string): number => fields.findIndex((field) => field.name === name);
  const offsetIndex = indexOf(SCAN_OFFSET_COLUMN);
  const timestampIndex = indexOf(SCAN_TIMESTAMP_COLUMN);
  const changeIndex = indexOf(SCAN_CHANGE_COLUMN);
  if (offsetIndex < 0 || timestampIndex < 0) throw new Error(`a scan stream must hold '${SCAN_OFFSET_COLUMN}' and '${SCAN_TIMESTAMP_COLUMN}'`);
  const rowFields = fields.map((field, index) => ({ field, index })).filter(({ index }) => index !== offsetIndex && index !== timestampIndex && index !== changeIndex);
  const keys = rowFields.map(({ field }, position) => Buffer.from(`${position === 0 ? '' : ','}${JSON.stringify(field.name)}:`));
  const out = new JsonBytes(stream.byteLength * 1.25 + 1024);
  const separatorCode = separator.charCodeAt(0);
  let records = 0;
  for (const batch of batches) {
    const writeOffset = valueWriterOf(fields[offsetIndex]!.type, batch.columns[offsetIndex]!, false);
    const writeTimestamp = valueWriterOf(fields[timestampIndex]!.type, batch.columns[timestampIndex]!, false);
    const writeChange = changeIndex < 0 ? undefined : valueWriterOf(fields[changeIndex]!.type, batch.columns[changeIndex]!, false);
    const writers = rowFields.map(({ field, index }) => valueWriterOf(field.type, batch.columns[index]!, true));
    for (let row = 0; row < batch.length; row++) {
      if (records > 0) out.byte(separatorCode);
      out.raw(OFFSET_KEY);
      writeOffset(out, row);
      out.raw(TIMESTAMP_KEY);
      writeTimestamp(out, row);
      if (writeChange !== undefined) {
        out.raw(CHANGE_KEY);
        writeChange(out, row);
      }
      out.raw(ROW_KEY);
      for (let position = 0; position < writers.length; position++) {
        out.raw(keys[position]!);
        writers[position]!(out, row);
      }
      out.raw(RECORD_END);
      records++;
    }
  }
  if (trailing && records > 0) out.byte(separatorCode);
  return { text: out.bytes(), records };
}

/** The JSON text of each record of `stream`, in order (for tests and small scans). */
export function scanJsonRecords(stream: Uint8Array): string[] {
  const { text, records } = scanJsonText(stream, '\n');
  return records === 0 ? [] : text.toString('utf8').split('\n');
}

const OFFSET_KEY = Buffer.from('{"offset":');
const TIMESTAMP_KEY = Buffer.from(',"timestamp":');
const CHANGE_KEY = Buffer.from(',"changeType":');
const ROW_KEY = Buffer.from(',"row":{');
const RECORD_END = Buffer.from('}}');
const NULL = Buffer.from('null');
const TRUE = Buffer.from('true');
const FALSE = Buffer.from('false');
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** A growing buffer of JSON text. */
class JsonBytes {
  private buffer: Buffer;
  private position = 0;

  constructor(capacity: number) {
    this.buffer = Buffer.allocUnsafe(Math.ceil(capacity));
  }

  bytes(): Buffer {
    return this.buffer.subarray(0, this.position);
  }

  private reserve(bytes: number): void {
    if (this.position + bytes <= this.buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.position + bytes));
    this.buffer.copy(grown, 0, 0, this.position);
    this.buffer = grown;
  }

  byte(code: number): void {
    this.reserve(1);
    this.buffer[this.position++] = code;
  }

  raw(bytes: Buffer): void {
    this.reserve(bytes.length);
    if (bytes.length <= 16) {
      for (let index = 0; index < bytes.length; index++) this.buffer[this.position++] = bytes[index]!;
    } else {
      bytes.copy(this.buffer, this.position);
      this.position += bytes.length;
    }
  }

  /** Text of ASCII characters only (numbers, base64). */
  ascii(text: string): void {
    this.reserve(text.length);
    for (let index = 0; index < text.length; index++) this.buffer[this.position++] = text.charCodeAt(index);
  }

  /** UTF-8 bytes [start, end) of `source` as a JSON string: copied when nothing needs escaping. */
  utf8String(source: Buffer, start: number, end: number): void {
    for (let index = start; index < end; index++) {
      const code = source[index]!;
      if (code < 0x20 || code === QUOTE || code === BACKSLASH) {
        this.text(JSON.stringify(source.toString('utf8', start, end)));
        return;
      }
    }
    this.reserve(end - start + 2);
    this.buffer[this.position++] = QUOTE;
    source.copy(this.buffer, this.position, start, end);
    this.position += end - start;
    this.buffer[this.position++] = QUOTE;
  }

  private text(text: string): void {
    this.reserve(Buffer.byteLength(text));
    this.position += this.buffer.write(text, this.position, 'utf8');
  }
}

/** Writes the JSON of value `row` of a column. */
type ValueWriter = (out: JsonBytes, row: number) => void;

/**
 * The writer of one column. `quoteInt64` writes int64 values as decimal strings (row values); the
 * system columns `_offset` and `_timestamp` are plain numbers.
 */
function valueWriterOf(type: DataType, column: RawColumn, quoteInt64: boolean): ValueWriter {
  const write = presentValueWriterOf(type, column, quoteInt64);
  if (column.nullCount === 0) return write;
  const validity = column.buffers[0]!;
  return (out, row) => {
    if ((validity[row >> 3]! & (1 << (row & 7))) === 0) out.raw(NULL);
    else write(out, row);
  };
}

function presentValueWriterOf(type: DataType, column: RawColumn, quoteInt64: boolean): ValueWriter {
  const values = column.buffers[column.buffers.length - 1]!;
  const view = new DataView(values.buffer, values.byteOffset, values.byteLength);
  switch (type.typeId) {
    case Type.Bool:
      return (out, row) => out.raw((values[row >> 3]! & (1 << (row & 7))) !== 0 ? TRUE : FALSE);
    case Type.Int: {
      const bitWidth = (type as unknown as { bitWidth: number }).bitWidth;
      if (bitWidth === 32) return (out, row) => out.ascii(String(view.getInt32(row * 4, true)));
      if (bitWidth !== 64) throw new Error(`Arrow type ${String(type)} is not one a scan returns`);
      if (!quoteInt64) return (out, row) => out.ascii(int64Text(view, row));
      return (out, row) => {
        out.byte(QUOTE);
        out.ascii(int64Text(view, row));
        out.byte(QUOTE);
      };
    }
    case Type.Timestamp:
      return (out, row) => out.ascii(int64Text(view, row));
    case Type.Float:
      return (out, row) => {
        const value = view.getFloat64(row * 8, true);
        out.ascii(Number.isFinite(value) ? String(value) : 'null');
      };
    case Type.Utf8: {
      const offsets = int32sOf(column.buffers[1]!, column.length + 1);
      const source = Buffer.from(values.buffer, values.byteOffset, values.byteLength);
      return (out, row) => out.utf8String(source, offsets[row]!, offsets[row + 1]!);
    }
    case Type.Binary: {
      const offsets = int32sOf(column.buffers[1]!, column.length + 1);
      const source = Buffer.from(values.buffer, values.byteOffset, values.byteLength);
      return (out, row) => {
        out.byte(QUOTE);
        out.ascii(source.toString('base64', offsets[row]!, offsets[row + 1]!));
        out.byte(QUOTE);
      };
    }
    default:
      throw new Error(`Arrow type ${String(type)} is not one a scan returns`);
  }
}

/** Values within ±2^53 are read as two 32-bit halves; only larger ones pay for a BigInt. */
const HIGH_WORD_SAFE = 2 ** 21;

function int64Text(view: DataView, row: number): string {
  const low = view.getUint32(row * 8, true);
  const high = view.getInt32(row * 8 + 4, true);
  if (high > -HIGH_WORD_SAFE && high < HIGH_WORD_SAFE) return String(high * 2 ** 32 + low);
  return view.getBigInt64(row * 8, true).toString();
}
