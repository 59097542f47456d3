import { decodeRecords, readRecordBatch } from '../messages/record-batch';

/**
 * ListOffsets by timestamp within one stored batch, its header read once: when the batch's maxTimestamp
 * reaches `timestamp`, the first record at or after it with its timestamp; else the offset after the batch,
 * where the search goes on. A compressed batch is not decompressed: its base offset and maxTimestamp
 * answer (a consumer starting there reads at most one batch of older records).
 */
export function searchTimestampInBatch(batch: Uint8Array, timestamp: number): { found: { offset: number; timestamp: number } } | { nextOffset: number } {
  const view = readRecordBatch(batch);
  const lastOffset = view.baseOffset + view.lastOffsetDelta;
  if (view.maxTimestamp < timestamp) return { nextOffset: lastOffset + 1 };
  if (view.compression !== 'none') return { found: { offset: view.baseOffset, timestamp: view.maxTimestamp } };
  for (const record of decodeRecords(view)) {
    if (record.timestamp >= timestamp) return { found: { offset: record.offset, timestamp: record.timestamp } };
  }
  return { found: { offset: lastOffset, timestamp: view.maxTimestamp } };
}
