/**
 * Kafka's record batch, message format v2 (https://kafka.apache.org/documentation/#recordbatch). A produce
 * request carries record batches as opaque bytes; mink checks their headers, assigns offsets by rewriting
 * `baseOffset` in place and stores the batches as received, so a fetch serves the very bytes a producer
 * sent. Pure code: no I/O, no clock.
 *
 * Layout of one batch (all integers big-endian):
 *
 *   byte  0  baseOffset            int64
 *   byte  8  batchLength           int32   bytes after this field
 *   byte 12  partitionLeaderEpoch  int32
 *   byte 16  magic                 int8    2 (0 and 1 are the legacy message sets)
 *   byte 17  crc                   uint32  CRC-32C of byte 21 to the end of the batch
 *   byte 21  attributes            int16   bits 0-2 compression, bit 3 timestamp type, bit 4 transactional, bit 5 control
 *   byte 23  lastOffsetDelta       int32
 *   byte 27  baseTimestamp         int64
 *   byte 35  maxTimestamp          int64
 *   byte 43  producerId            int64
 *   byte 51  producerEpoch         int16
 *   byte 53  baseSequence          int32
 *   byte 57  recordCount           int32
 *   byte 61  records               (compressed as a whole when the codec is not none)
 *
 * and one record: length varint, attributes int8, timestampDelta varlong, offsetDelta varint, key (varint
 * length, -1 for null), value (likewise), header count varint, then per header a key (varint length, UTF-8)
 * and a value (varint length, -1 for null).
 */
import { crc32c } from '@node-rs/crc32';
import { ERROR_CODES } from '../wire/codes';
import { KafkaDecodeError, KafkaReader } from '../wire/reader';
import { KafkaWriter } from '../wire/writer';

/** Byte positions of the header fields; the CRC covers everything from `attributes` on. */
const BASE_OFFSET_POSITION = 0;
const BATCH_LENGTH_POSITION = 8;
const PARTITION_LEADER_EPOCH_POSITION = 12;
const MAGIC_POSITION = 16;
const CRC_POSITION = 17;
const ATTRIBUTES_POSITION = 21;
const LAST_OFFSET_DELTA_POSITION = 23;
const BASE_TIMESTAMP_POSITION = 27;
const MAX_TIMESTAMP_POSITION = 35;
const PRODUCER_ID_POSITION = 43;
const PRODUCER_EPOCH_POSITION = 51;
const BASE_SEQUENCE_POSITION = 53;
const RECORD_COUNT_POSITION = 57;

/** The header of a v2 batch, up to and including the record count. */
export const RECORD_BATCH_HEADER_BYTES = 61;
/** `baseOffset` and `batchLength`: the bytes in front of what `batchLength` counts (Kafka's LOG_OVERHEAD). */
const LOG_OVERHEAD_BYTES = BATCH_LENGTH_POSITION + 4;
/** The smallest `batchLength` a v2 batch can have: a header with no records. */
const BATCH_LENGTH_MIN = RECORD_BATCH_HEADER_BYTES - LOG_OVERHEAD_BYTES;

export const RECORD_BATCH_MAGIC = 2;

/** Kafka's sentinels for batches written by a producer that is neither idempotent nor transactional. */
export const NO_PRODUCER_ID = -1;
export const NO_PRODUCER_EPOCH = -1;
export const NO_SEQUENCE = -1;
/** The partition leader epoch a producer writes; the broker stamps its own before it stores the batch. */
export const NO_PARTITION_LEADER_EPOCH = -1;

const COMPRESSION_MASK = 0x07;
const TIMESTAMP_TYPE_FLAG = 0x08;
const TRANSACTIONAL_FLAG = 0x10;
const CONTROL_FLAG = 0x20;

/** Compression codecs by their id in bits 0-2 of the attributes; ids 5-7 are not defined. */
export const COMPRESSION_CODECS = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const;
export type CompressionCodec = (typeof COMPRESSION_CODECS)[number];

/** Bit 3 of the attributes: whether record timestamps are the producer's or the broker's append time. */
export type TimestampType = 'createTime' | 'logAppendTime';

type RecordBatchErrorCode = typeof ERROR_CODES.CORRUPT_MESSAGE | typeof ERROR_CODES.UNSUPPORTED_FOR_MESSAGE_FORMAT;

/**
 * A record set or batch that mink refuses. `code` is the Kafka error code the partition's produce response
 * carries: CORRUPT_MESSAGE for bytes that are not a well-formed v2 batch, UNSUPPORTED_FOR_MESSAGE_FORMAT for
 * the legacy message sets (magic 0 and 1). `position` is the byte, within the array given, where the
 * offending batch starts.
 */
export class InvalidRecordBatchError extends Error {
  constructor(
    message: string,
    readonly code: RecordBatchErrorCode,
    readonly position: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'InvalidRecordBatchError';
  }
}

/**
 * `decodeRecords` was given a compressed batch. Not the client's fault: mink stores and serves compressed
 * batches as received and does not decompress them (yet), so whoever needs the records must not ask.
 */
export class CompressedRecordBatchError extends Error {
  constructor(readonly compression: CompressionCodec) {
    super(`a ${compression}-compressed record batch: mink does not decompress record batches`);
    this.name = 'CompressedRecordBatchError';
  }
}

/**
 * One record batch found in a record set, its header read and checked. `bytes` is a view of the caller's
 * array (not a copy) covering the whole batch, `baseOffset` through the last record; changing the array
 * changes it. Offsets and timestamps are numbers: a header whose int64 fields exceed the safe integers is
 * refused as corrupt.
 */
export interface RecordBatchView {
  baseOffset: number;
  /** The bytes after the `batchLength` field: `bytes.byteLength - 12`. */
  batchLength: number;
  partitionLeaderEpoch: number;
  magic: number;
  /** The CRC-32C the batch carries, already checked against its bytes. */
  crc: number;
  /** The raw attribute bits; the fields below are read from them. */
  attributes: number;
  compression: CompressionCodec;
  timestampType: TimestampType;
  transactional: boolean;
  control: boolean;
  lastOffsetDelta: number;
  baseTimestamp: number;
  maxTimestamp: number;
  producerId: number;
  producerEpoch: number;
  baseSequence: number;
  /** Records in the batch; always `lastOffsetDelta + 1` (checked). */
  recordCount: number;
  bytes: Uint8Array;
}

/** A record header. Keys are strings and may repeat; values may be null. */
export interface RecordHeader {
  key: string;
  value: Uint8Array | null;
}

/** A record to put into a batch: the batch gives it its offset. */
export interface RecordInput {
  timestamp: number;
  key: Uint8Array | null;
  value: Uint8Array | null;
  headers?: readonly RecordHeader[];
}

/** A record read from a batch, with its absolute offset and timestamp. Key, value and header values are views of the batch. */
export interface DecodedRecord {
  offset: number;
  timestamp: number;
  key: Uint8Array | null;
  value: Uint8Array | null;
  headers: RecordHeader[];
}

function dataView(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * Splits a produce request's record set into its batches and checks each one: complete, magic 2, the CRC
 * matches, a defined compression codec, and `recordCount === lastOffsetDelta + 1` with at least one record.
 * The count rule holds for compressed batches too (the count sits in the uncompressed header), as Kafka's
 * LogValidator requires of every v2 batch from a producer; mink relies on it to assign offsets without
 * decompressing. A partial batch at the end is refused: Kafka allows one only in fetch responses (where a
 * size limit may cut the last batch), never in a produce request. An empty record set gives no batches;
 * Kafka refuses a produce with no batch (and, since v3, with more than one), which is the caller's rule.
 */
export function splitRecordBatches(records: Uint8Array): RecordBatchView[] {
  const batches: RecordBatchView[] = [];
  let position = 0;
  while (position < records.byteLength) {
    const batch = readBatchAt(records, position);
    batches.push(batch);
    position += batch.bytes.byteLength;
  }
  return batches;
}

/** Reads and checks one batch that must fill `batch` exactly (a stored batch, say). */
export function readRecordBatch(batch: Uint8Array): RecordBatchView {
  const view = readBatchAt(batch, 0);
  if (view.bytes.byteLength !== batch.byteLength) {
    throw new InvalidRecordBatchError(`${batch.byteLength - view.bytes.byteLength} bytes after the record batch`, ERROR_CODES.CORRUPT_MESSAGE, view.bytes.byteLength);
  }
  return view;
}

function readBatchAt(records: Uint8Array, start: number): RecordBatchView {
  const corrupt = (message: string): InvalidRecordBatchError =>
    new InvalidRecordBatchError(`record batch at byte ${start}: ${message}`, ERROR_CODES.CORRUPT_MESSAGE, start);
  const available = records.byteLength - start;
  if (available < LOG_OVERHEAD_BYTES) throw corrupt(`a partial batch: ${available} bytes, fewer than its ${LOG_OVERHEAD_BYTES}-byte offset and length`);
  const view = dataView(records);
  const batchLength = view.getInt32(start + BATCH_LENGTH_POSITION);
  if (batchLength < 0) throw corrupt(`negative batch length ${batchLength}`);
  const end = start + LOG_OVERHEAD_BYTES + batchLength;
  if (end > records.byteLength) throw corrupt(`a partial batch: its length says ${batchLength} bytes, ${available - LOG_OVERHEAD_BYTES} are there`);

  // Legacy message sets put their magic byte at the same position, so it is checked before the v2 layout.
  if (batchLength < MAGIC_POSITION + 1 - LOG_OVERHEAD_BYTES) throw corrupt(`batch length ${batchLength} leaves no room for the magic byte`);
  const magic = view.getInt8(start + MAGIC_POSITION);
  if (magic === 0 || magic === 1) {
    throw new InvalidRecordBatchError(`record batch at byte ${start}: message format v${magic} (magic ${magic}); mink accepts only v2 record batches`, ERROR_CODES.UNSUPPORTED_FOR_MESSAGE_FORMAT, start);
  }
  if (magic !== RECORD_BATCH_MAGIC) throw corrupt(`unknown magic ${magic}`);
  if (batchLength < BATCH_LENGTH_MIN) throw corrupt(`batch length ${batchLength} is shorter than the ${BATCH_LENGTH_MIN}-byte v2 header`);

  const bytes = records.subarray(start, end);
  const crc = view.getUint32(start + CRC_POSITION);
  const computedCrc = crc32c(bytes.subarray(ATTRIBUTES_POSITION));
  if (crc !== computedCrc) throw corrupt(`CRC-32C mismatch: the batch says ${crc}, its bytes give ${computedCrc}`);

  const int64 = (position: number, what: string): number => {
    const value = view.getBigInt64(start + position);
    if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) throw corrupt(`${what} ${value} is beyond the safe integers`);
    return Number(value);
  };
  const attributes = view.getInt16(start + ATTRIBUTES_POSITION);
  const compression = COMPRESSION_CODECS[attributes & COMPRESSION_MASK];
  if (compression === undefined) throw corrupt(`unknown compression codec ${attributes & COMPRESSION_MASK}`);
  const lastOffsetDelta = view.getInt32(start + LAST_OFFSET_DELTA_POSITION);
  const recordCount = view.getInt32(start + RECORD_COUNT_POSITION);
  if (recordCount <= 0) throw corrupt(`record count ${recordCount}; a batch holds at least one record`);
  if (recordCount !== lastOffsetDelta + 1) throw corrupt(`record count ${recordCount} does not match last offset delta ${lastOffsetDelta}`);

  return {
    baseOffset: int64(BASE_OFFSET_POSITION, 'base offset'),
    batchLength,
    partitionLeaderEpoch: view.getInt32(start + PARTITION_LEADER_EPOCH_POSITION),
    magic,
    crc,
    attributes,
    compression,
    timestampType: (attributes & TIMESTAMP_TYPE_FLAG) !== 0 ? 'logAppendTime' : 'createTime',
    transactional: (attributes & TRANSACTIONAL_FLAG) !== 0,
    control: (attributes & CONTROL_FLAG) !== 0,
    lastOffsetDelta,
    baseTimestamp: int64(BASE_TIMESTAMP_POSITION, 'base timestamp'),
    maxTimestamp: int64(MAX_TIMESTAMP_POSITION, 'max timestamp'),
    producerId: int64(PRODUCER_ID_POSITION, 'producer id'),
    producerEpoch: view.getInt16(start + PRODUCER_EPOCH_POSITION),
    baseSequence: view.getInt32(start + BASE_SEQUENCE_POSITION),
    recordCount,
    bytes,
  };
}

/**
 * Sets a batch's base offset in place: this is how the broker assigns offsets to a produced batch. The CRC
 * starts at `attributes`, after the base offset, so the batch stays valid without recomputing it.
 */
export function setBaseOffset(batch: Uint8Array, baseOffset: number): void {
  if (batch.byteLength < RECORD_BATCH_HEADER_BYTES) throw new Error(`not a record batch: ${batch.byteLength} bytes`);
  if (!Number.isSafeInteger(baseOffset) || baseOffset < 0) throw new Error(`base offset must be a non-negative safe integer, got ${baseOffset}`);
  dataView(batch).setBigInt64(BASE_OFFSET_POSITION, BigInt(baseOffset));
}

/**
 * The offsets a batch takes (`lastOffsetDelta + 1`) read from its header alone, without the checks of
 * `readRecordBatch`: for batches that were checked when they were stored. 0 for bytes too short to hold it.
 */
export function offsetCountOf(batch: Uint8Array): number {
  if (batch.byteLength < LAST_OFFSET_DELTA_POSITION + 4) return 0;
  return dataView(batch).getInt32(LAST_OFFSET_DELTA_POSITION) + 1;
}

/** Sets a batch's partition leader epoch in place; like the base offset it lies before the CRC's range. */
export function setPartitionLeaderEpoch(batch: Uint8Array, partitionLeaderEpoch: number): void {
  if (batch.byteLength < RECORD_BATCH_HEADER_BYTES) throw new Error(`not a record batch: ${batch.byteLength} bytes`);
  if (!Number.isInteger(partitionLeaderEpoch) || partitionLeaderEpoch < -1 || partitionLeaderEpoch > 0x7fffffff) {
    throw new Error(`partition leader epoch must be an int32 of at least -1, got ${partitionLeaderEpoch}`);
  }
  dataView(batch).setInt32(PARTITION_LEADER_EPOCH_POSITION, partitionLeaderEpoch);
}

const textDecoder = new TextDecoder('utf-8', { fatal: true });
const textEncoder = new TextEncoder();

/**
 * The records of an uncompressed batch, with absolute offsets (`baseOffset + offsetDelta`) and timestamps
 * (`baseTimestamp + timestampDelta`, or the batch's `maxTimestamp` for every record of a log-append-time
 * batch, as Kafka's consumers read it). The records must be exactly `recordCount` and fill the batch.
 * A compressed batch throws `CompressedRecordBatchError`; malformed records throw `InvalidRecordBatchError`.
 */
export function decodeRecords(batch: RecordBatchView): DecodedRecord[] {
  if (batch.compression !== 'none') throw new CompressedRecordBatchError(batch.compression);
  const corrupt = (message: string, cause?: unknown): InvalidRecordBatchError =>
    new InvalidRecordBatchError(`record batch at offset ${batch.baseOffset}: ${message}`, ERROR_CODES.CORRUPT_MESSAGE, 0, { cause });
  const reader = new KafkaReader(batch.bytes, RECORD_BATCH_HEADER_BYTES);
  const records: DecodedRecord[] = [];
  try {
    for (let index = 0; index < batch.recordCount; index++) {
      const length = reader.varint('record length');
      if (length < 0) throw corrupt(`record ${index} has negative length ${length}`);
      const record = readRecord(new KafkaReader(reader.raw(length, 'record')), batch);
      if (record === undefined) throw corrupt(`record ${index} ends before the ${length} bytes its length says`);
      records.push(record);
    }
  } catch (error) {
    if (error instanceof KafkaDecodeError) throw corrupt(error.message, error);
    throw error;
  }
  if (reader.remaining !== 0) throw corrupt(`${reader.remaining} bytes after its ${batch.recordCount} records`);
  return records;
}

/** One record from a reader over exactly its bytes; undefined if bytes are left over. */
function readRecord(reader: KafkaReader, batch: RecordBatchView): DecodedRecord | undefined {
  reader.int8('record attributes'); // No record attribute is defined yet.
  const timestampDelta = reader.varlong('timestamp delta');
  const offsetDelta = reader.varint('offset delta');
  const key = readVarintBytes(reader, 'record key');
  const value = readVarintBytes(reader, 'record value');
  const headerCount = reader.varint('header count');
  if (headerCount < 0) throw new KafkaDecodeError(`negative header count ${headerCount}`);
  const headers: RecordHeader[] = [];
  for (let index = 0; index < headerCount; index++) {
    const keyLength = reader.varint('header key length');
    if (keyLength < 0) throw new KafkaDecodeError(`header key with negative length ${keyLength}`);
    const keyBytes = reader.raw(keyLength, 'header key');
    let headerKey: string;
    try {
      headerKey = textDecoder.decode(keyBytes);
    } catch {
      throw new KafkaDecodeError('header key: not valid UTF-8');
    }
    headers.push({ key: headerKey, value: readVarintBytes(reader, 'header value') });
  }
  if (reader.remaining !== 0) return undefined;
  return {
    offset: batch.baseOffset + offsetDelta,
    timestamp: batch.timestampType === 'logAppendTime' ? batch.maxTimestamp : batch.baseTimestamp + timestampDelta,
    key,
    value,
    headers,
  };
}

/** Record-level bytes: a zigzag varint length, any negative length meaning null (as Kafka reads them). */
function readVarintBytes(reader: KafkaReader, what: string): Uint8Array | null {
  const length = reader.varint(what);
  return length < 0 ? null : reader.raw(length, what);
}

function writeVarintBytes(writer: KafkaWriter, bytes: Uint8Array | null): void {
  if (bytes === null) writer.varint(-1);
  else writer.varint(bytes.byteLength).raw(bytes);
}

/** What `encodeRecordBatch` needs; producer fields default to Kafka's "no producer" sentinels. */
export interface RecordBatchInput {
  baseOffset: number;
  /** At least one record; record i gets offset `baseOffset + i`. */
  records: readonly RecordInput[];
  partitionLeaderEpoch?: number;
  timestampType?: TimestampType;
  transactional?: boolean;
  control?: boolean;
  producerId?: number;
  producerEpoch?: number;
  baseSequence?: number;
}

/**
 * Encodes an uncompressed v2 batch with a correct CRC. The base timestamp is the first record's, the max
 * timestamp the largest (as Kafka's producer writes them), so record timestamp deltas may be negative.
 * Used by tests and to present tables that were not written through Kafka as topics.
 */
export function encodeRecordBatch(input: RecordBatchInput): Uint8Array {
  const { baseOffset, records } = input;
  if (records.length === 0) throw new Error('a record batch holds at least one record');
  if (!Number.isSafeInteger(baseOffset) || baseOffset < 0) throw new Error(`base offset must be a non-negative safe integer, got ${baseOffset}`);
  const baseTimestamp = records[0]!.timestamp;
  const maxTimestamp = records.reduce((max, record) => Math.max(max, record.timestamp), baseTimestamp);
  const attributes =
    (input.timestampType === 'logAppendTime' ? TIMESTAMP_TYPE_FLAG : 0) |
    (input.transactional === true ? TRANSACTIONAL_FLAG : 0) |
    (input.control === true ? CONTROL_FLAG : 0);

  const body = new KafkaWriter()
    .int16(attributes)
    .int32(records.length - 1)
    .int64(baseTimestamp)
    .int64(maxTimestamp)
    .int64(input.producerId ?? NO_PRODUCER_ID)
    .int16(input.producerEpoch ?? NO_PRODUCER_EPOCH)
    .int32(input.baseSequence ?? NO_SEQUENCE)
    .int32(records.length);
  records.forEach((record, offsetDelta) => {
    const encoded = new KafkaWriter().int8(0).varlong(record.timestamp - baseTimestamp).varint(offsetDelta);
    writeVarintBytes(encoded, record.key);
    writeVarintBytes(encoded, record.value);
    const headers = record.headers ?? [];
    encoded.varint(headers.length);
    for (const header of headers) {
      writeVarintBytes(encoded, textEncoder.encode(header.key));
      writeVarintBytes(encoded, header.value);
    }
    const recordBytes = encoded.toBytes();
    body.varint(recordBytes.byteLength).raw(recordBytes);
  });
  const bodyBytes = body.toBytes();

  const batch = new Uint8Array(ATTRIBUTES_POSITION + bodyBytes.byteLength);
  batch.set(bodyBytes, ATTRIBUTES_POSITION);
  const view = dataView(batch);
  view.setBigInt64(BASE_OFFSET_POSITION, BigInt(baseOffset));
  view.setInt32(BATCH_LENGTH_POSITION, batch.byteLength - LOG_OVERHEAD_BYTES);
  view.setInt32(PARTITION_LEADER_EPOCH_POSITION, input.partitionLeaderEpoch ?? NO_PARTITION_LEADER_EPOCH);
  view.setInt8(MAGIC_POSITION, RECORD_BATCH_MAGIC);
  view.setUint32(CRC_POSITION, crc32c(bodyBytes));
  return batch;
}

/** A transaction marker: the end of a producer's transaction on one partition (KIP-98's control record). */
export interface TransactionMarker {
  producerId: number;
  producerEpoch: number;
  commit: boolean;
  /** The transaction coordinator's epoch (Kafka's coordinator_epoch); readers ignore it. */
  coordinatorEpoch: number;
  timestamp: number;
}

/** Control record types of a marker's key (`ControlRecordType`). */
const CONTROL_TYPES = { abort: 0, commit: 1 } as const;

/**
 * The control batch a partition stores for a transaction marker (Kafka's EndTransactionMarker): transactional
 * and control, the producer's id and epoch, no sequence, and one record whose key is version 0 and the type
 * (commit or abort) as int16s and whose value is version 0 and the coordinator epoch. Consumers skip it; a
 * read_committed consumer learns from it where an aborted transaction ends.
 */
export function encodeTransactionMarker(marker: TransactionMarker): Uint8Array {
  const key = new KafkaWriter().int16(0).int16(marker.commit ? CONTROL_TYPES.commit : CONTROL_TYPES.abort).toBytes();
  const value = new KafkaWriter().int16(0).int32(marker.coordinatorEpoch).toBytes();
  return encodeRecordBatch({
    baseOffset: 0,
    records: [{ timestamp: marker.timestamp, key, value }],
    transactional: true,
    control: true,
    producerId: marker.producerId,
    producerEpoch: marker.producerEpoch,
    baseSequence: NO_SEQUENCE,
  });
}

/** The marker a control batch holds: commit or abort, or null when its record is not a marker this version knows. */
export function transactionMarkerTypeOf(batch: RecordBatchView): 'commit' | 'abort' | null {
  if (!batch.control) return null;
  const [record] = decodeRecords(batch);
  const key = record?.key;
  if (!key || key.byteLength < 4) return null;
  const type = dataView(key).getInt16(2);
  return type === CONTROL_TYPES.commit ? 'commit' : type === CONTROL_TYPES.abort ? 'abort' : null;
}

