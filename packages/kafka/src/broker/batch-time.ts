import { decodeRecords, readRecordBatch } from '../messages/record-batch';

/** The newest record timestamp a stored batch declares (its maxTimestamp field). */
export function maxTimestampOfBatch(batch: Uint8Array): number {
  return readRecordBatch(batch).maxTimestamp;
}

/**
 * ListOffsets by timestamp inside the first batch whose maxTimestamp reaches `timestamp`: the first record
 * at or after it, with its timestamp. A compressed batch is not decompressed: its base offset and
 * maxTimestamp answer (a consumer starting there reads at most one batch of older records).
 */
export function offsetOfTimestamp(batch: Uint8Array, timestamp: number): { offset: number; timestamp: number } {
  const view = readRecordBatch(batch);
  if (view.compression !== 'none') return { offset: view.baseOffset, timestamp: view.maxTimestamp };
  for (const record of decodeRecords(view)) {
    if (record.timestamp >= timestamp) return { offset: record.offset, timestamp: record.timestamp };
  }
  return { offset: view.baseOffset + view.lastOffsetDelta, timestamp: view.maxTimestamp };
}
