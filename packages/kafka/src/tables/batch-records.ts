/**
 * The records of a stored or produced Kafka record batch, whatever its compression, and whether two batches
 * hold the same records. Pure: no I/O, no clock.
 */
import { type DecodedRecord, InvalidRecordBatchError, RECORD_BATCH_HEADER_BYTES, type RecordBatchView, decodeRecords, readRecordBatch } from '../messages/record-batch';
import { RecordBatchConversionError, messageOf } from './conversion-error';
import { decompressRecords } from './decompress';

/**
 * The records of a batch, its records section decompressed first when the batch is compressed (at most
 * `decompressedBytesMax` bytes). Throws RecordBatchConversionError (`CorruptRecordBatch`) for records that
 * do not decode.
 */
export function recordsOfBatch(view: RecordBatchView, decompressedBytesMax: number): DecodedRecord[] {
  let uncompressed = view;
  if (view.compression !== 'none') {
    const records = decompressRecords(view.compression, view.bytes.subarray(RECORD_BATCH_HEADER_BYTES), decompressedBytesMax);
    // decodeRecords reads the records after the header of the view it is given: the same header (its CRC
    // already checked) in front of the decompressed records is that view for an uncompressed batch.
    const bytes = new Uint8Array(RECORD_BATCH_HEADER_BYTES + records.byteLength);
    bytes.set(view.bytes.subarray(0, RECORD_BATCH_HEADER_BYTES));
    bytes.set(records, RECORD_BATCH_HEADER_BYTES);
    uncompressed = { ...view, compression: 'none', bytes };
  }
  try {
    return decodeRecords(uncompressed);
  } catch (error) {
    if (!(error instanceof InvalidRecordBatchError)) throw error;
    const codec = view.compression === 'none' ? '' : ` (after ${view.compression} decompression)`;
    throw new RecordBatchConversionError('CorruptRecordBatch', `${messageOf(error)}${codec}`, { cause: error });
  }
}

/**
 * Whether two record batches hold the same records: as many, each with the same key, value and headers in
 * the same order, whatever the batches' headers, compression and timestamps. This is what a producer's retry
 * of a batch sends again; kafkajs encodes each attempt anew, stamping the batch with the time of the attempt
 * and, when some messages carry a timestamp and others not, giving the others new timestamp deltas.
 * Batches that do not decode (at most `decompressedBytesMax` bytes of records each) are not the same.
 */
export function sameRecords(first: Uint8Array, second: Uint8Array, decompressedBytesMax: number): boolean {
  let firstRecords: DecodedRecord[];
  let secondRecords: DecodedRecord[];
  try {
    firstRecords = recordsOfBatch(readRecordBatch(first), decompressedBytesMax);
    secondRecords = recordsOfBatch(readRecordBatch(second), decompressedBytesMax);
  } catch (error) {
    if (error instanceof RecordBatchConversionError || error instanceof InvalidRecordBatchError) return false;
    throw error;
  }
  if (firstRecords.length !== secondRecords.length) return false;
  return firstRecords.every((record, index) => {
    const other = secondRecords[index]!;
    return (
      sameBytes(record.key, other.key) &&
      sameBytes(record.value, other.value) &&
      record.headers.length === other.headers.length &&
      record.headers.every((header, headerIndex) => header.key === other.headers[headerIndex]!.key && sameBytes(header.value, other.headers[headerIndex]!.value))
    );
  });
}

function sameBytes(first: Uint8Array | null, second: Uint8Array | null): boolean {
  if (first === null || second === null) return first === second;
  return Buffer.from(first.buffer, first.byteOffset, first.byteLength).equals(Buffer.from(second.buffer, second.byteOffset, second.byteLength));
}
