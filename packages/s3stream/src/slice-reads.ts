import { firstSliceEndingAfter, type DataSlice, type Indexed } from '@mink/meta';
import type { ObjectStore } from './object-store';
import type { StreamBatch } from './packed-slice';

/** One ranged GET that serves several slices lying back to back in one object. */
export interface CoalescedRead {
  object: string;
  start: number;
  endExclusive: number;
  /** Positions (in the caller's list) of the slices it serves, in byte order. */
  members: number[];
}

/**
 * Groups slices into ranged reads: consecutive slices of the list that lie back to back in one object
 * (one's end is the next one's position) share one read, as long as it stays within `bytesMax` (a slice
 * larger than that still gets a read of its own). Slices keep their order; nothing is read twice.
 */
export function coalesceSliceReads(slices: readonly Pick<DataSlice, 'object' | 'position' | 'length'>[], bytesMax: number): CoalescedRead[] {
  const reads: CoalescedRead[] = [];
  let current: CoalescedRead | undefined;
  slices.forEach((slice, index) => {
    const end = slice.position + slice.length;
    if (current && current.object === slice.object && current.endExclusive === slice.position && end - current.start <= bytesMax) {
      current.endExclusive = end;
      current.members.push(index);
      return;
    }
    current = { object: slice.object, start: slice.position, endExclusive: end, members: [index] };
    reads.push(current);
  });
  return reads;
}

/**
 * Issues one coalesced read and cuts its bytes into the payloads of its members (`slices` are those members,
 * in the read's order). The payloads are views into the one array the store returned. Throws the store's
 * error, and a plain Error when the store returns another byte count than the slices need: the view names
 * bytes the object does not hold.
 */
export async function getCoalescedRead(store: ObjectStore, read: CoalescedRead, slices: readonly Pick<DataSlice, 'position' | 'length'>[]): Promise<Uint8Array[]> {
  const bytes = await store.get(read.object, { start: read.start, endExclusive: read.endExclusive });
  if (bytes.byteLength !== read.endExclusive - read.start) {
    throw new Error(`object ${read.object} returned ${bytes.byteLength} bytes at ${read.start} where the view records ${read.endExclusive - read.start}`);
  }
  return slices.map((slice) => bytes.subarray(slice.position - read.start, slice.position - read.start + slice.length));
}

/**
 * The payloads of `slices`, in order: from `cached` where it has them, the others with one ranged GET per
 * run of back-to-back slices of one object, at most `readsInFlight` GETs at a time. Throws the store's
 * error of the first failed GET, and a plain Error when a GET returns fewer bytes than the slices need.
 */
export async function readSlicePayloads(
  store: ObjectStore,
  slices: readonly DataSlice[],
  options: { readsInFlight: number; readBytesMax: number; cached?: (slice: DataSlice) => Uint8Array | undefined },
): Promise<Uint8Array[]> {
  const payloads = new Array<Uint8Array | undefined>(slices.length);
  const missing: number[] = [];
  slices.forEach((slice, index) => {
    const hit = options.cached?.(slice);
    if (hit !== undefined && hit.byteLength === slice.length) payloads[index] = hit;
    else missing.push(index);
  });
  const reads = coalesceSliceReads(
    missing.map((index) => slices[index]!),
    options.readBytesMax,
  );
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (!failed && next < reads.length) {
      const read = reads[next++]!;
      const indices = read.members.map((member) => missing[member]!);
      try {
        const parts = await getCoalescedRead(
          store,
          read,
          indices.map((index) => slices[index]!),
        );
        indices.forEach((index, position) => (payloads[index] = parts[position]));
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.readsInFlight, reads.length) }, worker));
  return payloads as Uint8Array[];
}

/** The bounds of one stream read, and so of one prefetch window: payload bytes and batches. */
export interface ReadBounds {
  bytesMax: number;
  batchesMax: number;
}

/** The slices one read takes, as the index range [first, endExclusive) of the stream's slices. */
export interface SliceRange {
  first: number;
  endExclusive: number;
}

/**
 * The slices a read from `start` takes (`slices` in offset order): from the first slice ending after
 * `start`, whole slices until they cover `maxRecords` records from `start` or the next one would pass a
 * bound. At least one slice is taken when any ends after `start`, however large it is.
 */
export function chooseReadSlices(slices: Indexed<Pick<DataSlice, 'startOffset' | 'endOffset' | 'length'>>, start: number, maxRecords: number, bounds: ReadBounds): SliceRange {
  assertReadBounds(bounds);
  if (!(maxRecords >= 1)) throw new Error(`a read takes at least one record, not ${maxRecords}`);
  const first = firstSliceEndingAfter(slices, start);
  let endExclusive = first;
  let records = 0;
  let bytes = 0;
  while (endExclusive < slices.length && records < maxRecords) {
    const slice = slices.at(endExclusive)!;
    if (endExclusive > first && (bytes + slice.length > bounds.bytesMax || endExclusive - first >= bounds.batchesMax)) break;
    records += slice.endOffset - Math.max(slice.startOffset, start);
    bytes += slice.length;
    endExclusive++;
  }
  return { first, endExclusive };
}

/**
 * The batches a read from `start` returns out of all those of the slices it took (`batches`, in offset order;
 * a packed slice holds many, and may start well before `start` or reach well past the bounds): chosen as
 * `chooseReadSlices` chooses slices, so a read returns the batches it would if every batch were a slice.
 */
export function boundedBatches(batches: readonly StreamBatch[], start: number, maxRecords: number, bounds: ReadBounds): StreamBatch[] {
  const sized = batches.map((batch) => ({ startOffset: batch.startOffset, endOffset: batch.endOffset, length: batch.payload.byteLength }));
  const { first, endExclusive } = chooseReadSlices(sized, start, maxRecords, bounds);
  return batches.slice(first, endExclusive);
}

/**
 * The end (exclusive) of the window of slices starting at index `from`: what one read starting there takes
 * within `bounds` when it asks for any number of records. At least one slice while any is left.
 */
export function windowEnd(slices: Indexed<Pick<DataSlice, 'length'>>, from: number, bounds: ReadBounds): number {
  assertReadBounds(bounds);
  let end = from;
  let bytes = 0;
  while (end < slices.length && (end === from || (bytes + slices.at(end)!.length <= bounds.bytesMax && end - from < bounds.batchesMax))) {
    bytes += slices.at(end)!.length;
    end++;
  }
  return end;
}

/** How far a sequential scan looks ahead: `windowsMax` windows, each what one read takes within the bounds. */
export interface PrefetchBounds extends ReadBounds {
  windowsMax: number;
}

/**
 * The slices a sequential scan fetches ahead after a read that took the slices before index `after`, as
 * ascending indices of `slices`; `isHeld` says whether a slice is already cached or being fetched.
 *
 * The look-ahead is the `windowsMax` windows after the read. Nothing is fetched while the next window (what
 * the next read takes) is wholly held. Once it is not, whole windows are laid from the first slice not held
 * and those ending within the look-ahead are fetched, at least one, without the slices already held. So a
 * scan reading less than a window at a time refills a window at once instead of issuing a small GET for
 * every read, and holds between about one and `windowsMax` windows ahead of itself.
 */
export function planPrefetch(slices: Indexed<Pick<DataSlice, 'length'>>, after: number, isHeld: (index: number) => boolean, bounds: PrefetchBounds): number[] {
  if (!Number.isSafeInteger(bounds.windowsMax) || bounds.windowsMax < 0) throw new Error(`a look-ahead of ${bounds.windowsMax} windows is not a whole number`);
  if (!Number.isSafeInteger(after) || after < 0 || after > slices.length) throw new Error(`a read cannot end at slice ${after} of ${slices.length}`);
  if (bounds.windowsMax === 0) return [];
  const nextWindowEnd = windowEnd(slices, after, bounds);
  let lookAheadEnd = nextWindowEnd;
  for (let window = 1; window < bounds.windowsMax; window++) lookAheadEnd = windowEnd(slices, lookAheadEnd, bounds);

  let firstMissing = after;
  while (firstMissing < nextWindowEnd && isHeld(firstMissing)) firstMissing++;
  if (firstMissing >= nextWindowEnd) return [];

  const wanted: number[] = [];
  for (let from = firstMissing; from < slices.length; ) {
    const end = windowEnd(slices, from, bounds);
    if (from > firstMissing && end > lookAheadEnd) break;
    for (let index = from; index < end; index++) if (!isHeld(index)) wanted.push(index);
    from = end;
  }
  return wanted;
}

/** Where a bucket's previous read ended: the start of the last batch it returned, and that batch's end. */
export interface ReadEnd {
  lastBatchStartOffset: number;
  endOffset: number;
}

/** Where a read that took `slices` (in offset order) from `start` ended; a read that took none ended at `start`. */
export function readEndOf(slices: readonly Pick<DataSlice, 'startOffset' | 'endOffset'>[], start: number): ReadEnd {
  const last = slices.at(-1);
  return last ? { lastBatchStartOffset: last.startOffset, endOffset: last.endOffset } : { lastBatchStartOffset: start, endOffset: start };
}

/**
 * Whether a read from `start` that took the slices `range` of a stream's `sliceCount` and ended at `end` stopped
 * at its byte or batch bound before the `maxRecords` records it asked for, with more slices left: the
 * caller will ask for the rest.
 */
export function isCutShort(range: SliceRange, sliceCount: number, end: ReadEnd, start: number, maxRecords: number): boolean {
  return range.endExclusive < sliceCount && end.endOffset - start < maxRecords;
}

/**
 * Whether a read from `start` continues the previous read of its bucket, as a sequential scan does: it starts
 * where that read ended, or inside its last batch (a caller that stopped within a batch asks for the rest).
 */
export function continuesRead(previous: ReadEnd | undefined, start: number): boolean {
  return previous !== undefined && previous.lastBatchStartOffset <= start && start <= previous.endOffset;
}

function assertReadBounds(bounds: ReadBounds): void {
  if (!(bounds.bytesMax >= 1) || !Number.isSafeInteger(bounds.batchesMax) || bounds.batchesMax < 1) {
    throw new Error(`read bounds need bytesMax >= 1 and batchesMax >= 1 (got ${bounds.bytesMax}, ${bounds.batchesMax})`);
  }
}
