/**
 * A Kafka topic read as a table: one stored Kafka record batch turned into the Arrow IPC payload an append
 * of its records to a table with the topic columns (`KAFKA_TOPIC_COLUMNS`: key bytes, value bytes,
 * headers string) would have stored, so the scan code (`encodeScanPage` and the JSON, NDJSON and Arrow
 * replies built on it) serves a topic unchanged. Pure: no I/O, no clock.
 *
 * The payload has the log layout of `encodeBatch`: the three columns, then the append time column holding
 * each record's own timestamp, as a Kafka consumer reads it (create time: the batch's base timestamp plus
 * the record's delta; log append time: the batch's max timestamp for every record).
 *
 * - key, value: the record's bytes; a null key or value stays null.
 * - headers: JSON text of the record's headers in order, `[{"key":"trace","value":"YWJj"}]`, each value in
 *   standard base64 with padding (as the HTTP API writes every bytes value, since header values are
 *   bytes, not text) or null for a null value; `[]` for a record without headers. Repeated keys stay
 *   repeated, which a JSON object could not hold.
 *
 * A transaction marker (a control batch) is one row as well, so every offset of a topic is a row: its key
 * and value are the control record's bytes, and its one header `mink.control` holds `commit` or `abort`.
 *
 * Offsets: record i takes offset `baseOffset + i`, so the batch's records must have the offset deltas
 * 0..n-1. Kafka checks that of every produced v2 batch and mink keeps batches as produced; only compaction
 * in Kafka leaves gaps, which mink has not got, so a gap is refused rather than papered over.
 */
import { LIMITS } from '@mink/config';
import { KAFKA_TOPIC_COLUMNS } from '@mink/meta';
import { type Row, type StoredBatch, encodeBatch } from '@mink/records';

import { type DecodedRecord, InvalidRecordBatchError, type RecordBatchView, readRecordBatch, transactionMarkerTypeOf } from '../messages/record-batch';
import { ERROR_CODES } from '../wire/codes';
import { recordsOfBatch } from './batch-records';
import { RecordBatchConversionError } from './conversion-error';

/**
 * The bytes the records of one batch may decompress to, by default. A produce request frame is at most
 * `kafkaFrameBytesMax`, so an uncompressed batch is never larger; a compressed one is held to the same size.
 */
export const RECORD_BATCH_DECOMPRESSED_BYTES_MAX = LIMITS.kafkaFrameBytesMax;

/**
 * The largest `decompressedBytesMax` taken: Arrow's 32-bit value offsets hold at most 2^31 - 1 bytes of one
 * column in one batch, and header values grow by a third in base64, so 1 GiB of records always fits.
 */
const DECOMPRESSED_BYTES_MAX_LIMIT = 2 ** 30;

export interface StoredRowsOfRecordBatchOptions {
  /** Bytes the records may decompress to, at most 1 GiB; default RECORD_BATCH_DECOMPRESSED_BYTES_MAX. */
  decompressedBytesMax?: number;
}

/**
 * A stored Kafka record batch as a stored Arrow batch: `startOffset` and `payload` are a `StoredBatch`
 * for `encodeScanPage` with the layout `{ columns: KAFKA_TOPIC_COLUMNS, changelog: false }`.
 */
export interface StoredRowsOfRecordBatch extends StoredBatch {
  /** The batch's base offset: the offset of its first record. */
  startOffset: number;
  /** Its records, which take the offsets `startOffset` to `startOffset + recordCount - 1`. */
  recordCount: number;
  payload: Uint8Array;
}

/**
 * The Arrow payload of the records of `batch`, one stored Kafka record batch (v2, uncompressed or
 * compressed with gzip, snappy, lz4 or zstd). Throws RecordBatchConversionError: `CorruptRecordBatch` for
 * bytes that are not a well-formed batch (its CRC is checked) or records that do not decode,
 * `UnsupportedRecordBatch` for a control batch that is no transaction marker, a legacy message set or
 * offset deltas that are not 0..n-1, `RecordBatchTooLarge` past `decompressedBytesMax`.
 */
export function storedRowsOfRecordBatch(batch: Uint8Array, options: StoredRowsOfRecordBatchOptions = {}): StoredRowsOfRecordBatch {
  const view = readBatch(batch);
  const where = `record batch at offset ${view.baseOffset}`;
  const marker = view.control ? markerOf(view, where) : null;
  const decompressedBytesMax = options.decompressedBytesMax ?? RECORD_BATCH_DECOMPRESSED_BYTES_MAX;
  if (!Number.isSafeInteger(decompressedBytesMax) || decompressedBytesMax < 1 || decompressedBytesMax > DECOMPRESSED_BYTES_MAX_LIMIT) {
    throw new Error(`decompressedBytesMax must be from 1 to ${DECOMPRESSED_BYTES_MAX_LIMIT}, got ${decompressedBytesMax}`);
  }
  const records = recordsOfBatch(view, decompressedBytesMax);
  records.forEach((record, index) => {
    if (!Number.isSafeInteger(record.timestamp)) {
      throw new RecordBatchConversionError('CorruptRecordBatch', `${where}: record ${index} has timestamp ${record.timestamp}, beyond the safe integers`);
    }
    if (record.offset !== view.baseOffset + index) {
      throw new RecordBatchConversionError(
        'UnsupportedRecordBatch',
        `${where}: record ${index} has offset delta ${record.offset - view.baseOffset}; mink reads batches whose offset deltas are 0 to ${view.recordCount - 1} in order`,
      );
    }
  });
  const rows: Row[] = records.map((record) => ({ key: record.key, value: record.value, headers: marker === null ? headersJson(record) : controlHeaderJson(marker) }));
  const payload = encodeBatch(
    KAFKA_TOPIC_COLUMNS.map((column) => ({ ...column })),
    rows,
    records.map((record) => record.timestamp),
  );
  return { startOffset: view.baseOffset, recordCount: view.recordCount, payload };
}

function readBatch(batch: Uint8Array): RecordBatchView {
  try {
    return readRecordBatch(batch);
  } catch (error) {
    if (!(error instanceof InvalidRecordBatchError)) throw error;
    const code = error.code === ERROR_CODES.UNSUPPORTED_FOR_MESSAGE_FORMAT ? 'UnsupportedRecordBatch' : 'CorruptRecordBatch';
    throw new RecordBatchConversionError(code, error.message, { cause: error });
  }
}

/** The header of a transaction marker's row, naming the marker. */
export const CONTROL_HEADER = 'mink.control';

function markerOf(view: RecordBatchView, where: string): 'commit' | 'abort' {
  let marker: 'commit' | 'abort' | null = null;
  try {
    marker = view.compression === 'none' && view.recordCount === 1 ? transactionMarkerTypeOf(view) : null;
  } catch (error) {
    if (!(error instanceof InvalidRecordBatchError)) throw error;
  }
  if (marker === null) throw new RecordBatchConversionError('UnsupportedRecordBatch', `${where}: a control batch that is not a transaction marker`);
  return marker;
}

function controlHeaderJson(marker: 'commit' | 'abort'): string {
  return JSON.stringify([{ key: CONTROL_HEADER, value: Buffer.from(marker).toString('base64') }]);
}

/** The headers of a record as the `headers` column holds them: JSON, values in base64 or null. */
function headersJson(record: DecodedRecord): string {
  return JSON.stringify(
    record.headers.map((header) => ({
      key: header.key,
      value: header.value === null ? null : Buffer.from(header.value.buffer, header.value.byteOffset, header.value.byteLength).toString('base64'),
    })),
  );
}
