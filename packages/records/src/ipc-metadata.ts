/**
 * The flatbuffer metadata of Arrow IPC messages that mink reads and writes on every append: a message's
 * header type and body length, and a record batch header (row count, field nodes, buffer regions,
 * compression), as the Arrow format lays them out (format/Message.fbs; the FlatBuffers binary format:
 * a root offset, then tables found through their vtables, vectors of structs prefixed by their length).
 *
 * apache-arrow reads and writes these through its generated flatbuffer classes, which build an object per
 * node and buffer (with 64-bit fields as BigInts) and a growing Builder per message: on a data node that was
 * about 5 % of its CPU under small appends, on the gateway about 8 %. Schema messages, written once per
 * column set and cached, and read only when a client's schema bytes were not checked before, stay with
 * apache-arrow.
 *
 * Reading is bounds-checked field by field: the bytes come from clients, and anything malformed throws a
 * plain Error naming what is wrong (the callers turn it into their refusal), never reads past the message.
 */

/** `MessageHeader` union members (format/Message.fbs). */
export const MESSAGE_HEADER = { none: 0, schema: 1, dictionaryBatch: 2, recordBatch: 3 } as const;

/** `MetadataVersion.V5`, what apache-arrow and Arrow C++ write since Arrow 1.0. */
const METADATA_VERSION_V5 = 4;

/** A record batch's `FieldNode`: the values of one field and how many of them are null. */
export interface FieldNodeMetadata {
  length: number;
  nullCount: number;
}

/** A record batch's `Buffer`: where one buffer lies in the message body. */
export interface BufferRegionMetadata {
  offset: number;
  length: number;
}

/** A record batch message's header. */
export interface RecordBatchMetadata {
  length: number;
  nodes: FieldNodeMetadata[];
  buffers: BufferRegionMetadata[];
  /** Whether the header names a body compression (mink neither writes nor takes compressed batches). */
  compressed: boolean;
}

/** What a message's metadata says of itself: its header's type and where that header table lies, and its body's length. */
export interface MessageMetadata {
  headerType: number;
  bodyLength: number;
  /** The position of the header table in the metadata, 0 when there is none. */
  header: number;
}

const STRUCT_BYTES = 16;

/** The flatbuffer of a record batch message of `length` rows whose body of `bodyLength` bytes holds `buffers`. */
export function encodeRecordBatchMetadata(length: number, nodes: readonly FieldNodeMetadata[], buffers: readonly BufferRegionMetadata[], bodyLength: number): Uint8Array {
  const bytes = new Uint8Array(recordBatchMetadataBytes(nodes.length, buffers.length));
  writeRecordBatchMetadata(new DataView(bytes.buffer), 0, length, nodes, buffers, bodyLength);
  return bytes;
}

/** The bytes `writeRecordBatchMetadata` writes for `nodes` field nodes and `buffers` buffer regions (a multiple of 8). */
export function recordBatchMetadataBytes(nodes: number, buffers: number): number {
  return 96 + STRUCT_BYTES * (nodes + buffers);
}

/**
 * Writes the flatbuffer of a record batch message at `at` of `view` (which must be 8-byte aligned in the
 * stream, as an encapsulated message's metadata is), laid out once and for all (positions from `at`):
 *
 *     0  root offset → the Message table at 24
 *     4  Message vtable: 4 fields (version, header_type, header, bodyLength), 16 padding to 24
 *    24  Message table: vtable back-offset, header offset (→ 60), bodyLength (int64 at 32), version, header_type
 *    48  RecordBatch vtable: 3 fields (length, nodes, buffers)
 *    60  RecordBatch table: vtable back-offset, length (int64 at 64), nodes offset (→ 84), buffers offset
 *    84  nodes: count, then 16-byte FieldNode structs from 88
 *        buffers: count (4 bytes of padding before it), then 16-byte Buffer structs, 8-byte aligned
 *
 * Every int64 lies 8-byte aligned, every table 4-byte aligned, every offset points forward, as the format's
 * verifiers require.
 */
export function writeRecordBatchMetadata(view: DataView, at: number, length: number, nodes: readonly FieldNodeMetadata[], buffers: readonly BufferRegionMetadata[], bodyLength: number): void {
  const nodesAt = at + 84;
  const buffersAt = nodesAt + 8 + STRUCT_BYTES * nodes.length;
  view.setUint32(at, 24, true);
  // Message vtable.
  view.setUint16(at + 4, 12, true);
  view.setUint16(at + 6, 20, true);
  view.setUint16(at + 8, 16, true);
  view.setUint16(at + 10, 18, true);
  view.setUint16(at + 12, 4, true);
  view.setUint16(at + 14, 8, true);
  // Message table.
  view.setInt32(at + 24, 20, true);
  view.setUint32(at + 28, 32, true);
  setInt64(view, at + 32, bodyLength);
  view.setInt16(at + 40, METADATA_VERSION_V5, true);
  view.setUint8(at + 42, MESSAGE_HEADER.recordBatch);
  // RecordBatch vtable.
  view.setUint16(at + 48, 10, true);
  view.setUint16(at + 50, 20, true);
  view.setUint16(at + 52, 4, true);
  view.setUint16(at + 54, 12, true);
  view.setUint16(at + 56, 16, true);
  // RecordBatch table.
  view.setInt32(at + 60, 12, true);
  setInt64(view, at + 64, length);
  view.setUint32(at + 72, nodesAt - (at + 72), true);
  view.setUint32(at + 76, buffersAt - (at + 76), true);
  writeStructs(view, nodesAt, nodes, (node) => node.length, (node) => node.nullCount);
  writeStructs(view, buffersAt, buffers, (buffer) => buffer.offset, (buffer) => buffer.length);
}

/** A vector at `at` of 16-byte structs of two int64s, `first` and `second` of each item: its count, then the structs. */
function writeStructs<T>(view: DataView, at: number, items: readonly T[], first: (item: T) => number, second: (item: T) => number): void {
  view.setUint32(at, items.length, true);
  let position = at + 4;
  for (const item of items) {
    setInt64(view, position, first(item));
    setInt64(view, position + 8, second(item));
    position += STRUCT_BYTES;
  }
}

/** Reads a message's header type, header table and body length from its flatbuffer `metadata`. */
export function readMessageMetadata(metadata: Uint8Array): MessageMetadata {
  const view = viewOf(metadata);
  const message = tableAt(view, offsetAt(view, 0, 'the root'), 'the message');
  const headerTypeAt = fieldAt(view, message, 1, 1);
  const headerType = headerTypeAt === 0 ? MESSAGE_HEADER.none : view.getUint8(headerTypeAt);
  const headerAt = fieldAt(view, message, 2, 4);
  const bodyLengthAt = fieldAt(view, message, 3, 8);
  const bodyLength = bodyLengthAt === 0 ? 0 : int64At(view, bodyLengthAt, 'the body length');
  return { headerType, bodyLength, header: headerAt === 0 ? 0 : offsetAt(view, headerAt, 'the header') };
}

/** Reads the record batch header of a message whose metadata `readMessageMetadata` read as `message`. */
export function readRecordBatchMetadata(metadata: Uint8Array, message: MessageMetadata): RecordBatchMetadata {
  if (message.headerType !== MESSAGE_HEADER.recordBatch) throw new Error(`the message is not a record batch (header type ${message.headerType})`);
  if (message.header === 0) throw new Error('the record batch message has no header');
  const view = viewOf(metadata);
  const batch = tableAt(view, message.header, 'the record batch header');
  const lengthAt = fieldAt(view, batch, 0, 8);
  const length = lengthAt === 0 ? 0 : int64At(view, lengthAt, 'the row count');
  const nodes: FieldNodeMetadata[] = [];
  forEachStruct(view, batch, 1, 'field nodes', (at) => {
    nodes.push({ length: int64At(view, at, 'a field node length'), nullCount: int64At(view, at + 8, 'a null count') });
  });
  const buffers: BufferRegionMetadata[] = [];
  forEachStruct(view, batch, 2, 'buffers', (at) => {
    buffers.push({ offset: int64At(view, at, 'a buffer offset'), length: int64At(view, at + 8, 'a buffer length') });
  });
  // `compression` is a table: present (a non-zero offset) means the body is compressed.
  const compressed = fieldAt(view, batch, 3, 4) !== 0;
  return { length, nodes, buffers, compressed };
}

/** A flatbuffer table: where it lies, and its vtable's field count. */
interface Table {
  at: number;
  vtable: number;
  fields: number;
  bytes: number;
}

function viewOf(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Throws unless `bytes` bytes at `at` lie within the metadata; `what` (of `owner`) names them (built only then: this runs for every field read). */
function need(view: DataView, at: number, bytes: number, what: string, owner?: string): void {
  if (at < 0 || at + bytes > view.byteLength) {
    throw new Error(`${owner === undefined ? what : `${what} of ${owner}`} (${bytes} bytes at byte ${at}) lies outside the ${view.byteLength} bytes of the message metadata`);
  }
}

/** The position an unsigned offset at `at` points to. */
function offsetAt(view: DataView, at: number, what: string): number {
  need(view, at, 4, 'the offset', what);
  return at + view.getUint32(at, true);
}

function tableAt(view: DataView, at: number, what: string): Table {
  need(view, at, 4, what);
  const vtable = at - view.getInt32(at, true);
  need(view, vtable, 4, 'the vtable', what);
  const vtableBytes = view.getUint16(vtable, true);
  const bytes = view.getUint16(vtable + 2, true);
  if (vtableBytes < 4 || vtableBytes % 2 !== 0) throw new Error(`the vtable of ${what} is ${vtableBytes} bytes long`);
  need(view, vtable, vtableBytes, 'the vtable', what);
  if (bytes < 4) throw new Error(`${what} is ${bytes} bytes long`);
  need(view, at, bytes, what);
  return { at, vtable, fields: (vtableBytes - 4) / 2, bytes };
}

/** The position of field `index` (of `size` bytes) of `table`, 0 when the table does not hold it. */
function fieldAt(view: DataView, table: Table, index: number, size: number): number {
  if (index >= table.fields) return 0;
  const offset = view.getUint16(table.vtable + 4 + 2 * index, true);
  if (offset === 0) return 0;
  if (offset < 4 || offset + size > table.bytes) throw new Error(`field ${index} at ${offset} lies outside its table of ${table.bytes} bytes`);
  return table.at + offset;
}

/** Calls `each` with the position of every 16-byte struct of the vector in field `index` of `table` (none when absent). */
function forEachStruct(view: DataView, table: Table, index: number, what: string, each: (at: number) => void): void {
  const fieldPosition = fieldAt(view, table, index, 4);
  if (fieldPosition === 0) return;
  const vector = offsetAt(view, fieldPosition, what);
  need(view, vector, 4, 'the length', what);
  const count = view.getUint32(vector, true);
  need(view, vector + 4, count * STRUCT_BYTES, 'the items', what);
  for (let item = 0, at = vector + 4; item < count; item++, at += STRUCT_BYTES) each(at);
}

const TWO_TO_32 = 2 ** 32;

/** A little-endian int64 as a number; throws when it is beyond the safe integers. */
function int64At(view: DataView, at: number, what: string): number {
  // Exact within the safe integers; beyond them the sum rounds, but never back into them.
  const value = view.getInt32(at + 4, true) * TWO_TO_32 + view.getUint32(at, true);
  if (!Number.isSafeInteger(value)) throw new Error(`${what} is beyond the safe integers`);
  return value;
}

function setInt64(view: DataView, at: number, value: number): void {
  if (!Number.isSafeInteger(value)) throw new Error(`${value} is not a safe integer`);
  view.setUint32(at, value >>> 0, true);
  view.setInt32(at + 4, Math.floor(value / TWO_TO_32), true);
}
