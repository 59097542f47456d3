/**
 * Reads the record batches of an Arrow IPC stream as raw buffers, without building vectors or decoding
 * values: the schema's fields, and per record batch its row count and, per field, its null count and its
 * buffers (validity, then value offsets for variable-width types, then values) as views of the input.
 *
 * Only the flat types mink writes are taken (Bool, Int8/32/64, Float64, Utf8, Binary, Timestamp); anything
 * else, a dictionary, compression or a malformed stream throws a plain Error: the bytes come from mink's
 * own storage or data nodes, so a failure here is a bug or corruption, not a caller's mistake.
 */
import { type DataType, type Field, Message, Type } from 'apache-arrow';
import { END_OF_STREAM, concatBytes } from './arrow-ipc';
import { MESSAGE_HEADER, type MessageMetadata, type RecordBatchMetadata, readMessageMetadata, readRecordBatchMetadata } from './ipc-metadata';

export interface RawColumn {
  length: number;
  nullCount: number;
  /** Validity (possibly empty when nullCount is 0), then value offsets (Utf8, Binary), then values. */
  buffers: Uint8Array[];
}

export interface RawBatch {
  length: number;
  /** One per field of the schema, in schema order. */
  columns: RawColumn[];
}

export interface RawStream {
  fields: Field[];
  batches: RawBatch[];
}

/** Buffers per column of a flat type: validity and values, plus value offsets for variable-width types. */
export function buffersPerType(type: DataType): number {
  switch (type.typeId) {
    case Type.Utf8:
    case Type.Binary:
      return 3;
    case Type.Bool:
    case Type.Int:
    case Type.Float:
    case Type.Timestamp:
      return 2;
    default:
      throw new Error(`Arrow type ${String(type)} is not one mink stores`);
  }
}

export function readIpcStream(bytes: Uint8Array): RawStream {
  const messages = readIpcMessages(bytes);
  const schemaMessage = messages[0];
  if (schemaMessage === undefined || !isSchemaMessage(schemaMessage)) throw new Error('an Arrow IPC stream must start with its schema message');
  const fields = schemaFieldsOf(schemaMessage);
  const counts = fields.map((field) => buffersPerType(field.type));
  const batches: RawBatch[] = [];
  for (const message of messages.slice(1)) {
    const framedBody = message.body;
    if (!isRecordBatchMessage(message)) throw new Error(`an Arrow IPC stream of mink holds record batches only, found message type ${message.headerType}`);
    const header = recordBatchOf(message);
    if (header.compressed) throw new Error('compressed record batches are not read');
    // Callers view fixed-width buffers as typed arrays, which need 8-byte alignment: an unaligned body is
    // copied (with the Uint8Array constructor: a Node Buffer's slice() is a view, not a copy).
    const body = framedBody.byteOffset % 8 === 0 ? framedBody : new Uint8Array(framedBody);
    if (header.nodes.length !== fields.length) throw new Error(`a record batch has ${header.nodes.length} field nodes for ${fields.length} fields`);
    const { length } = header;
    let next = 0;
    const columns = header.nodes.map((node, index): RawColumn => {
      const buffers: Uint8Array[] = [];
      for (let count = 0; count < counts[index]!; count++) {
        const region = header.buffers[next++];
        if (region === undefined) throw new Error(`a record batch has fewer buffers than its fields need`);
        const start = region.offset;
        const end = start + region.length;
        if (start < 0 || end > body.byteLength) throw new Error(`buffer [${start}, ${end}) lies outside a body of ${body.byteLength} bytes`);
        buffers.push(body.subarray(start, end));
      }
      return { length: node.length, nullCount: node.nullCount, buffers };
    });
    batches.push({ length, columns });
  }
  return { fields, batches };
}

/** The value offsets of a variable-width column as int32s, copied when the bytes are not 4-byte aligned. */
export function int32sOf(bytes: Uint8Array, count: number): Int32Array {
  if (bytes.byteLength < count * 4) throw new Error(`${count} int32 values need ${count * 4} bytes, have ${bytes.byteLength}`);
  if (bytes.byteOffset % 4 === 0) return new Int32Array(bytes.buffer, bytes.byteOffset, count);
  return new Int32Array(bytes.slice(0, count * 4).buffer);
}

/**
 * One message of an Arrow IPC stream: what its metadata says of itself (`headerType`, `bodyLength`), its
 * metadata (the flatbuffer, a view of the input; see `recordBatchOf`, `schemaFieldsOf`) and its body as a
 * view of the input.
 */
export interface IpcMessage extends MessageMetadata {
  metadata: Uint8Array;
  body: Uint8Array;
  /** The whole encapsulated message (prefix, metadata and body): `[start, end)` of the input. */
  start: number;
  end: number;
}

/**
 * The messages of an Arrow IPC stream up to its end-of-stream marker (or the end of the bytes), each body a
 * view of `bytes` at whatever alignment it has there. apache-arrow's MessageReader copies a body that is not
 * 8-byte aligned, which a batch inside a NATS message or an HTTP body usually is not; a caller that reads
 * the buffers byte-wise or through DataViews (as checking an incoming batch does) needs no copy. Throws a
 * plain Error for a truncated or malformed framing.
 */
export function readIpcMessages(bytes: Uint8Array): IpcMessage[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const messages: IpcMessage[] = [];
  let position = 0;
  while (position < bytes.byteLength) {
    const start = position;
    if (position + 4 > bytes.byteLength) throw new Error(`a message length at byte ${position} is cut off`);
    let metadataLength = view.getInt32(position, true);
    position += 4;
    // Since Arrow 0.15 a message starts with the continuation marker 0xFFFFFFFF, then its metadata length.
    if (metadataLength === -1) {
      if (position + 4 > bytes.byteLength) throw new Error(`a message length at byte ${position} is cut off`);
      metadataLength = view.getInt32(position, true);
      position += 4;
    }
    if (metadataLength === 0) break;
    if (metadataLength < 0 || position + metadataLength > bytes.byteLength) {
      throw new Error(`a message of ${metadataLength} metadata bytes at byte ${position} does not fit in ${bytes.byteLength} bytes`);
    }
    const metadata = bytes.subarray(position, position + metadataLength);
    const message = readMessageMetadata(metadata);
    position += metadataLength;
    const { bodyLength } = message;
    if (bodyLength < 0 || position + bodyLength > bytes.byteLength) {
      throw new Error(`a message body of ${bodyLength} bytes at byte ${position} does not fit in ${bytes.byteLength} bytes`);
    }
    // Spelled out: an object spread of `message` here took about 9 µs a call (V8's generic clone), 14 times the rest.
    messages.push({ headerType: message.headerType, bodyLength, header: message.header, metadata, body: bytes.subarray(position, position + bodyLength), start, end: position + bodyLength });
    position += bodyLength;
  }
  return messages;
}

/**
 * Arrow IPC streams of one schema as one stream, the way a client merges appends waiting for one bucket into
 * one request: the longest leading run of `streams` that share the first one's schema message, as the
 * schema message once, then every record batch message of each stream of the run as it is (no column
 * re-encoded; the messages are copied once into the result), then the end-of-stream marker; with the rows
 * of each stream of the run (as many entries as streams taken). Null when the first stream is not a schema
 * message followed by record batches only. A later stream that is not such a stream, or whose schema message
 * differs in a byte from the first one's (its batches might be laid out otherwise), ends the run.
 */
export function concatIpcStreams(streams: readonly Uint8Array[]): { bytes: Uint8Array; rowCounts: number[] } | null {
  let schema: Uint8Array | undefined;
  const parts: Uint8Array[] = [];
  const rowCounts: number[] = [];
  for (const stream of streams) {
    const read = schemaAndBatchesOf(stream);
    if (read === null) break;
    if (schema === undefined) {
      schema = read.schema;
      parts.push(schema);
    } else if (!Buffer.from(read.schema.buffer, read.schema.byteOffset, read.schema.byteLength).equals(schema)) {
      break;
    }
    parts.push(...read.batches);
    rowCounts.push(read.rows);
  }
  if (schema === undefined) return null;
  parts.push(END_OF_STREAM);
  return { bytes: concatBytes(parts), rowCounts };
}

/** A stream's schema message, its record batch messages and their rows; null when it is not a schema followed by record batches only. */
function schemaAndBatchesOf(stream: Uint8Array): { schema: Uint8Array; batches: Uint8Array[]; rows: number } | null {
  let messages: IpcMessage[];
  try {
    messages = readIpcMessages(stream);
  } catch {
    return null;
  }
  const first = messages[0];
  if (first === undefined || !isSchemaMessage(first) || messages.length < 2) return null;
  const batches: Uint8Array[] = [];
  let rows = 0;
  for (const message of messages.slice(1)) {
    if (!isRecordBatchMessage(message)) return null;
    try {
      rows += recordBatchOf(message).length;
    } catch {
      return null;
    }
    batches.push(stream.subarray(message.start, message.end));
  }
  return { schema: stream.subarray(first.start, first.end), batches, rows };
}

export function isSchemaMessage(message: IpcMessage): boolean {
  return message.headerType === MESSAGE_HEADER.schema;
}

export function isRecordBatchMessage(message: IpcMessage): boolean {
  return message.headerType === MESSAGE_HEADER.recordBatch;
}

/** The header of a record batch message (see `isRecordBatchMessage`); throws a plain Error when it is malformed. */
export function recordBatchOf(message: IpcMessage): RecordBatchMetadata {
  return readRecordBatchMetadata(message.metadata, message);
}

/** The fields of a schema message (see `isSchemaMessage`), decoded by apache-arrow. */
export function schemaFieldsOf(message: IpcMessage): Field[] {
  const decoded = Message.decode(message.metadata);
  if (!decoded.isSchema()) throw new Error(`the message is not a schema (header type ${message.headerType})`);
  return decoded.header().fields;
}
