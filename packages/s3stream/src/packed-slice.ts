import { PACKED_INDEX_BYTES_PER_BATCH, type DataSlice } from '@mink/meta';

/** One committed batch: the records [startOffset, endOffset), encoded as the appender wrote them. */
export interface StreamBatch {
  startOffset: number;
  endOffset: number;
  /** Shared with the reader's caches when it came from there: treat it as read-only. */
  payload: Uint8Array;
}

/** Batches compaction moved: `from` their WAL slices `to` the one slice of a stream object that now holds them. */
export interface SliceMove {
  from: readonly DataSlice[];
  to: DataSlice;
}

/** A batch as the compactor plans a packed slice: its records and its bytes. */
export type PackableBatch = Pick<DataSlice, 'startOffset' | 'endOffset' | 'length'>;

/** How large one packed slice may grow: bytes (its batches and their index) and batches. */
export interface PackBounds {
  bytesMax: number;
  batchesMax: number;
}

/**
 * The slices a stream object's batches (`batches`, consecutive, in offset order) are packed into, as index
 * ranges [first, endExclusive): consecutive batches while the slice, index included, stays within
 * `bytesMax` and `batchesMax`. A range of one batch is written as a plain slice (no index); a batch larger
 * than `bytesMax` gets one of its own. Packing is what keeps a stream's slices, which every process holds
 * in its view and a CommitWal copies, growing with its bytes rather than with its appends.
 */
export function planPackedSlices(batches: readonly PackableBatch[], bounds: PackBounds): { first: number; endExclusive: number }[] {
  assertPackBounds(bounds);
  const ranges: { first: number; endExclusive: number }[] = [];
  let first = 0;
  let bytes = 0;
  for (let index = 0; index < batches.length; index++) {
    const length = batches[index]!.length;
    const count = index - first;
    if (count > 0 && (count >= bounds.batchesMax || bytes + length + (count + 1) * PACKED_INDEX_BYTES_PER_BATCH > bounds.bytesMax)) {
      ranges.push({ first, endExclusive: index });
      first = index;
      bytes = 0;
    }
    bytes += length;
  }
  if (first < batches.length) ranges.push({ first, endExclusive: batches.length });
  return ranges;
}

/** Throws on bounds that could not pack anything. */
export function assertPackBounds(bounds: PackBounds): void {
  if (!(bounds.bytesMax >= 1) || !Number.isSafeInteger(bounds.batchesMax) || bounds.batchesMax < 1) {
    throw new Error(`pack bounds need bytesMax >= 1 and batchesMax >= 1 (got ${bounds.bytesMax}, ${bounds.batchesMax})`);
  }
}

/** The index written after the batches of a packed slice: per batch its record count and its byte length. */
export function packedIndex(batches: readonly PackableBatch[]): Uint8Array {
  const index = new Uint8Array(batches.length * PACKED_INDEX_BYTES_PER_BATCH);
  const view = new DataView(index.buffer);
  batches.forEach((batch, position) => {
    view.setUint32(position * PACKED_INDEX_BYTES_PER_BATCH, batch.endOffset - batch.startOffset, true);
    view.setUint32(position * PACKED_INDEX_BYTES_PER_BATCH + 4, batch.length, true);
  });
  return index;
}

/**
 * The batches of one slice's bytes: the slice itself when it is one batch, else the batches of a packed
 * slice, cut at its index (views of `bytes`, not copies). Throws a plain Error when the index does not
 * account for exactly the slice's records and bytes: the object does not hold what the view says.
 */
export function batchesOfSlice(slice: Pick<DataSlice, 'object' | 'startOffset' | 'endOffset' | 'length' | 'batches'>, bytes: Uint8Array): StreamBatch[] {
  if (bytes.byteLength !== slice.length) throw new Error(`a slice of ${slice.length} bytes of ${slice.object} came with ${bytes.byteLength} bytes`);
  const count = slice.batches;
  if (count === undefined) return [{ startOffset: slice.startOffset, endOffset: slice.endOffset, payload: bytes }];
  const indexStart = bytes.byteLength - count * PACKED_INDEX_BYTES_PER_BATCH;
  const corrupt = (what: string): Error =>
    new Error(`the packed slice [${slice.startOffset}, ${slice.endOffset}) of ${slice.object} is corrupt: ${what}`);
  if (!(Number.isSafeInteger(count) && count >= 2 && indexStart > 0)) throw corrupt(`${slice.length} bytes cannot hold ${count} batches and their index`);
  const index = new DataView(bytes.buffer, bytes.byteOffset + indexStart, count * PACKED_INDEX_BYTES_PER_BATCH);
  const batches = new Array<StreamBatch>(count);
  let offset = slice.startOffset;
  let position = 0;
  for (let batch = 0; batch < count; batch++) {
    const records = index.getUint32(batch * PACKED_INDEX_BYTES_PER_BATCH, true);
    const length = index.getUint32(batch * PACKED_INDEX_BYTES_PER_BATCH + 4, true);
    if (records === 0 || length === 0) throw corrupt(`batch ${batch} is empty`);
    if (offset + records > slice.endOffset || position + length > indexStart) throw corrupt(`batch ${batch} runs past the slice`);
    batches[batch] = { startOffset: offset, endOffset: offset + records, payload: bytes.subarray(position, position + length) };
    offset += records;
    position += length;
  }
  if (offset !== slice.endOffset || position !== indexStart) throw corrupt(`its batches end at offset ${offset} and byte ${position}, not ${slice.endOffset} and ${indexStart}`);
  return batches;
}
