/**
 * Reads the footer of a Parquet file (its `FileMetaData`, Thrift compact protocol, parquet-format's
 * `parquet.thrift`) as far as Iceberg's manifests need it: per column chunk its field id, physical type,
 * value count, compressed size and statistics (null count, exact min and max values as the bytes Parquet
 * stores them), and each row group's start. The writer (parquet-wasm) computed the statistics while
 * encoding, so the manifest's metrics cost no pass over the rows here.
 *
 * The decoder is generic (a struct becomes a map from field id to value) and only the fields below are
 * looked at. It reads files this package wrote; a malformed footer throws a plain Error.
 */

/** Parquet's physical types (parquet.thrift `Type`), by their code. */
export const PARQUET_PHYSICAL_TYPES = ['BOOLEAN', 'INT32', 'INT64', 'INT96', 'FLOAT', 'DOUBLE', 'BYTE_ARRAY', 'FIXED_LEN_BYTE_ARRAY'] as const;
export type ParquetPhysicalType = (typeof PARQUET_PHYSICAL_TYPES)[number];

/** One column chunk of one row group, as the footer describes it. */
export interface ParquetColumnChunk {
  /** The top-level column's name (the first element of `path_in_schema`). */
  name: string;
  /** The schema element's `field_id`, or null when the file has none for the column. */
  fieldId: number | null;
  physicalType: ParquetPhysicalType;
  /** Values in the chunk, nulls included (for a flat column: the row group's rows). */
  valueCount: number;
  /** Bytes the chunk takes in the file (compressed pages, headers included). */
  compressedBytes: number;
  /** Null values, when the writer recorded them. */
  nullCount: number | null;
  /** Smallest and largest non-null value in Parquet's plain encoding, when the writer recorded them exactly. */
  minValue: Uint8Array | null;
  maxValue: Uint8Array | null;
}

export interface ParquetRowGroup {
  rowCount: number;
  /** Byte position of the row group's first page in the file. */
  fileOffset: number;
  columns: ParquetColumnChunk[];
}

export interface ParquetFooter {
  rowCount: number;
  rowGroups: ParquetRowGroup[];
  /** Top-level schema elements (the root excluded) by name: their field ids. */
  fieldIds: Map<string, number | null>;
  keyValueMetadata: Map<string, string>;
}

const MAGIC = 'PAR1';
const TRAILER_BYTES = 8;

/** The footer of the Parquet file `bytes`. */
export function readParquetFooter(bytes: Uint8Array): ParquetFooter {
  if (bytes.byteLength < 12 || ascii(bytes.subarray(0, 4)) !== MAGIC || ascii(bytes.subarray(bytes.byteLength - 4)) !== MAGIC) {
    throw new Error('not a Parquet file (no PAR1 magic at both ends)');
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const metadataBytes = view.getUint32(bytes.byteLength - TRAILER_BYTES, true);
  const metadataStart = bytes.byteLength - TRAILER_BYTES - metadataBytes;
  if (metadataStart < 4) throw new Error(`a Parquet footer of ${metadataBytes} bytes does not fit a file of ${bytes.byteLength}`);
  const reader = new CompactReader(bytes.subarray(metadataStart, bytes.byteLength - TRAILER_BYTES));
  return fileMetaDataOf(reader.readStruct());
}

type ThriftValue = number | boolean | Uint8Array | ThriftValue[] | ThriftStruct | Map<ThriftValue, ThriftValue>;
type ThriftStruct = Map<number, ThriftValue>;

function fileMetaDataOf(fileMetaData: ThriftStruct): ParquetFooter {
  const schema = listOf(fileMetaData, 2).map((element) => element as ThriftStruct);
  // The first element is the root; a flat schema's other elements are its columns, in order.
  const fieldIds = new Map<string, number | null>();
  for (const element of schema.slice(1)) fieldIds.set(text(required(element, 4)), optionalNumber(element, 9));
  const rowGroups = listOf(fileMetaData, 4).map((value) => {
    const rowGroup = value as ThriftStruct;
    const columns = listOf(rowGroup, 1).map((chunkValue) => {
      const chunk = chunkValue as ThriftStruct;
      const metaData = required(chunk, 3) as ThriftStruct;
      const path = listOf(metaData, 3).map((part) => text(part));
      const statistics = metaData.get(12) as ThriftStruct | undefined;
      const name = path[0]!;
      const typeCode = required(metaData, 1) as number;
      const physicalType = PARQUET_PHYSICAL_TYPES[typeCode];
      if (physicalType === undefined) throw new Error(`column '${name}' has the unknown physical type ${typeCode}`);
      const exact = (valueField: number, exactField: number): Uint8Array | null => {
        const value = statistics?.get(valueField);
        // An absent flag means exact (writers before the flag existed wrote exact values only).
        if (!(value instanceof Uint8Array) || statistics?.get(exactField) === false) return null;
        return value;
      };
      return {
        name,
        fieldId: fieldIds.get(name) ?? null,
        physicalType,
        valueCount: required(metaData, 5) as number,
        compressedBytes: required(metaData, 7) as number,
        nullCount: statistics === undefined ? null : optionalNumber(statistics, 3),
        minValue: exact(6, 8),
        maxValue: exact(5, 7),
      } satisfies ParquetColumnChunk;
    });
    const firstChunkMetaData = (listOf(rowGroup, 1)[0] as ThriftStruct | undefined)?.get(3) as ThriftStruct | undefined;
    // file_offset (5) is optional; the first page of the first column chunk is where the row group starts.
    const fileOffset =
      optionalNumber(rowGroup, 5) ?? optionalNumber(firstChunkMetaData ?? new Map(), 11) ?? optionalNumber(firstChunkMetaData ?? new Map(), 9) ?? 4;
    return { rowCount: required(rowGroup, 3) as number, fileOffset, columns } satisfies ParquetRowGroup;
  });
  const keyValueMetadata = new Map<string, string>();
  for (const entry of (fileMetaData.get(5) as ThriftValue[] | undefined) ?? []) {
    const pair = entry as ThriftStruct;
    const value = pair.get(2);
    keyValueMetadata.set(text(required(pair, 1)), value === undefined ? '' : text(value));
  }
  return { rowCount: required(fileMetaData, 3) as number, rowGroups, fieldIds, keyValueMetadata };
}

function required(struct: ThriftStruct, field: number): ThriftValue {
  const value = struct.get(field);
  if (value === undefined) throw new Error(`Parquet footer: required field ${field} is missing`);
  return value;
}

function optionalNumber(struct: ThriftStruct, field: number): number | null {
  const value = struct.get(field);
  return typeof value === 'number' ? value : null;
}

function listOf(struct: ThriftStruct, field: number): ThriftValue[] {
  const value = required(struct, field);
  if (!Array.isArray(value)) throw new Error(`Parquet footer: field ${field} is not a list`);
  return value;
}

const decoder = new TextDecoder('utf-8', { fatal: true });

function text(value: ThriftValue): string {
  if (!(value instanceof Uint8Array)) throw new Error('Parquet footer: expected a string');
  return decoder.decode(value);
}

function ascii(bytes: Uint8Array): string {
  return String.fromCharCode(...bytes);
}

/** Compact protocol type codes (Thrift's TCompactProtocol). */
const enum CompactType {
  Stop = 0,
  BooleanTrue = 1,
  BooleanFalse = 2,
  Byte = 3,
  I16 = 4,
  I32 = 5,
  I64 = 6,
  Double = 7,
  Binary = 8,
  List = 9,
  Set = 10,
  Map = 11,
  Struct = 12,
}

/** Nesting a footer may have; parquet's FileMetaData nests a few levels, a deeper one is malformed. */
const NESTING_MAX = 64;

/**
 * A reader of Thrift's compact protocol. Integers are read into JavaScript numbers: exact up to 2^53, which
 * holds every count, size and offset of a file this package writes (values above lose precision and are
 * not looked at).
 */
class CompactReader {
  private position = 0;
  private depth = 0;

  constructor(private readonly bytes: Uint8Array) {}

  readStruct(): ThriftStruct {
    if (++this.depth > NESTING_MAX) throw new Error('Parquet footer: nested too deeply');
    const struct: ThriftStruct = new Map();
    let fieldId = 0;
    for (;;) {
      const header = this.byte();
      const type = header & 0x0f;
      if (type === CompactType.Stop) break;
      const delta = header >> 4;
      fieldId = delta === 0 ? this.zigzag(this.varint()) : fieldId + delta;
      if (type === CompactType.BooleanTrue || type === CompactType.BooleanFalse) struct.set(fieldId, type === CompactType.BooleanTrue);
      else struct.set(fieldId, this.value(type));
    }
    this.depth--;
    return struct;
  }

  private value(type: number): ThriftValue {
    switch (type) {
      case CompactType.BooleanTrue:
        return true;
      case CompactType.BooleanFalse:
        return false;
      case CompactType.Byte: {
        const byte = this.byte();
        return byte > 127 ? byte - 256 : byte;
      }
      case CompactType.I16:
      case CompactType.I32:
      case CompactType.I64:
        return this.zigzag(this.varint());
      case CompactType.Double: {
        const bytes = this.take(8);
        return new DataView(bytes.buffer, bytes.byteOffset, 8).getFloat64(0, true);
      }
      case CompactType.Binary:
        return this.take(this.varint());
      case CompactType.List:
      case CompactType.Set: {
        const header = this.byte();
        const shortSize = header >> 4;
        const size = shortSize === 15 ? this.varint() : shortSize;
        const elementType = header & 0x0f;
        const values: ThriftValue[] = [];
        for (let index = 0; index < size; index++) {
          // In a list, a boolean is one byte of its own (1 true, anything else false).
          values.push(elementType === CompactType.BooleanTrue || elementType === CompactType.BooleanFalse ? this.byte() === 1 : this.value(elementType));
        }
        return values;
      }
      case CompactType.Map: {
        const size = this.varint();
        const map = new Map<ThriftValue, ThriftValue>();
        if (size === 0) return map;
        const types = this.byte();
        for (let index = 0; index < size; index++) map.set(this.value(types >> 4), this.value(types & 0x0f));
        return map;
      }
      case CompactType.Struct:
        return this.readStruct();
      default:
        throw new Error(`Parquet footer: unknown compact type ${type} at byte ${this.position}`);
    }
  }

  private byte(): number {
    if (this.position >= this.bytes.byteLength) throw new Error('Parquet footer: ends in the middle of a value');
    return this.bytes[this.position++]!;
  }

  private take(length: number): Uint8Array {
    if (this.position + length > this.bytes.byteLength) throw new Error(`Parquet footer: a value of ${length} bytes runs past its end`);
    const value = this.bytes.subarray(this.position, this.position + length);
    this.position += length;
    return value;
  }

  /** An unsigned LEB128 varint, by multiplication so values above 2^31 stay whole. */
  private varint(): number {
    let value = 0;
    let scale = 1;
    for (let index = 0; index < 10; index++) {
      const byte = this.byte();
      value += (byte & 0x7f) * scale;
      if ((byte & 0x80) === 0) return value;
      scale *= 128;
    }
    throw new Error('Parquet footer: a varint longer than 10 bytes');
  }

  private zigzag(value: number): number {
    return value % 2 === 0 ? value / 2 : -(value + 1) / 2;
  }
}
