/**
 * Rows picked out of several Arrow record batches of one layout, copied into one new batch column by
 * column from the sources' buffers (no row objects): what folding a primary-key table's merged state
 * needs, for the column types of a lake table (Bool, Int32, Int64, Float64, Utf8, Binary,
 * Timestamp(microsecond)).
 *
 * apache-arrow's sliced Data keeps its validity bitmap and boolean bits whole, read at `offset + row`,
 * but slices the values of fixed-width types and the value offsets of variable-width ones, read at `row`;
 * both cases are read that way here, so sliced and whole sources gather alike.
 */
import { type Bool, type Data, type DataType, type Int32, RecordBatch, type Schema, Struct, Type, type Utf8, makeData } from 'apache-arrow';

/** Arrow's 32-bit value offsets bound the bytes of one string or binary column in one batch. */
const VARIABLE_WIDTH_BYTES_MAX = 2 ** 31 - 1;

/**
 * A new record batch of `schema` holding, in order, row `rows[i]` of `sources[segments[i]]` for every i.
 * Every source must have the fields of `schema` in order (the caller built them so); a column of a type
 * outside the lake's is a plain Error.
 */
export function gatherRows(schema: Schema, sources: readonly RecordBatch[], segments: Uint32Array, rows: Uint32Array): RecordBatch {
  if (segments.length !== rows.length) throw new Error(`${segments.length} segments for ${rows.length} rows`);
  const children = schema.fields.map((field, index) =>
    gatherData(
      field.type,
      sources.map((source) => source.data.children[index]!),
      segments,
      rows,
    ),
  );
  return new RecordBatch(schema, makeData({ type: new Struct(schema.fields), length: rows.length, nullCount: 0, children }));
}

/** Bytes the buffers of a record batch take (values, offsets, validity), as views: what holding it costs. */
export function recordBatchBytes(batch: RecordBatch): number {
  return batch.data.children.reduce((total, data) => total + data.byteLength, 0);
}

function gatherData(type: DataType, sources: readonly Data[], segments: Uint32Array, rows: Uint32Array): Data {
  const length = rows.length;
  const { nullBitmap, nullCount } = gatherValidity(sources, segments, rows);
  // Dispatch on the type id: types decoded from IPC are Int, Float and Timestamp instances, not Int32 & co.
  switch (type.typeId) {
    case Type.Bool: {
      const bits = new Uint8Array(Math.ceil(length / 8));
      for (let index = 0; index < length; index++) {
        const source = sources[segments[index]!]!;
        if (bitAt(source.values as Uint8Array, source.offset + rows[index]!)) bits[index >> 3] |= 1 << (index & 7);
      }
      return makeData({ type: type as Bool, length, nullCount, nullBitmap, data: bits });
    }
    case Type.Int:
    case Type.Float:
    case Type.Timestamp: {
      const wordsPerValue = type.ArrayType.BYTES_PER_ELEMENT / 4;
      if (wordsPerValue !== 1 && wordsPerValue !== 2) throw new Error(`no gathering of a ${type} column`);
      const data = new type.ArrayType(gatherWords(sources, segments, rows, wordsPerValue)) as Int32Array;
      return makeData({ type: type as Int32, length, nullCount, nullBitmap, data });
    }
    case Type.Utf8:
    case Type.Binary: {
      const valueOffsets = new Int32Array(length + 1);
      let bytes = 0;
      for (let index = 0; index < length; index++) {
        const offsets = sources[segments[index]!]!.valueOffsets as Int32Array;
        const row = rows[index]!;
        bytes += offsets[row + 1]! - offsets[row]!;
        if (bytes > VARIABLE_WIDTH_BYTES_MAX) throw new Error(`a gathered ${type} column would hold more than ${VARIABLE_WIDTH_BYTES_MAX} bytes`);
        valueOffsets[index + 1] = bytes;
      }
      const values = new Uint8Array(bytes);
      for (let index = 0; index < length; index++) {
        const source = sources[segments[index]!]!;
        const offsets = source.valueOffsets as Int32Array;
        const row = rows[index]!;
        const start = offsets[row]!;
        const end = offsets[row + 1]!;
        if (end > start) values.set((source.values as Uint8Array).subarray(start, end), valueOffsets[index]!);
      }
      return makeData({ type: type as Utf8, length, nullCount, nullBitmap, valueOffsets, data: values });
    }
    default:
      throw new Error(`no gathering of a ${type} column`);
  }
}

/**
 * The values of a fixed-width column as 32-bit words, `wordsPerValue` per value, copied word by word: an
 * int64 or a double moves as two integers, without a BigInt per value and without a double's NaN payload
 * passing through a JavaScript number.
 */
function gatherWords(sources: readonly Data[], segments: Uint32Array, rows: Uint32Array, wordsPerValue: number): ArrayBuffer {
  const target = new Int32Array(rows.length * wordsPerValue);
  const words = sources.map((source) => {
    const values = source.values as Int32Array | BigInt64Array | Float64Array;
    return new Int32Array(values.buffer, values.byteOffset, (values.byteLength / 4) | 0);
  });
  for (let index = 0; index < rows.length; index++) {
    const source = words[segments[index]!]!;
    const at = rows[index]! * wordsPerValue;
    target[index * wordsPerValue] = source[at]!;
    if (wordsPerValue === 2) target[index * 2 + 1] = source[at + 1]!;
  }
  return target.buffer;
}

/** The validity bitmap of the gathered rows (undefined when none is null) and their null count. */
function gatherValidity(sources: readonly Data[], segments: Uint32Array, rows: Uint32Array): { nullBitmap: Uint8Array | undefined; nullCount: number } {
  if (sources.every((source) => source.nullCount === 0)) return { nullBitmap: undefined, nullCount: 0 };
  const bitmap = new Uint8Array(Math.ceil(rows.length / 8));
  let nullCount = 0;
  for (let index = 0; index < rows.length; index++) {
    const source = sources[segments[index]!]!;
    const valid = source.nullCount === 0 || source.nullBitmap === undefined || source.nullBitmap.length === 0 || bitAt(source.nullBitmap, source.offset + rows[index]!);
    if (valid) bitmap[index >> 3] |= 1 << (index & 7);
    else nullCount++;
  }
  return nullCount === 0 ? { nullBitmap: undefined, nullCount: 0 } : { nullBitmap: bitmap, nullCount };
}

function bitAt(bits: Uint8Array, position: number): boolean {
  return (bits[position >> 3]! & (1 << (position & 7))) !== 0;
}
