import type { DataSlice } from '@mink/meta';
import type { ObjectStore } from './object-store';

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
      let bytes: Uint8Array;
      try {
        bytes = await store.get(read.object, { start: read.start, endExclusive: read.endExclusive });
      } catch (error) {
        failed = true;
        throw error;
      }
      if (bytes.byteLength !== read.endExclusive - read.start) {
        throw new Error(`object ${read.object} returned ${bytes.byteLength} bytes at ${read.start} where the view records ${read.endExclusive - read.start}`);
      }
      for (const member of read.members) {
        const slice = slices[missing[member]!]!;
        payloads[missing[member]!] = bytes.subarray(slice.position - read.start, slice.position - read.start + slice.length);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.readsInFlight, reads.length) }, worker));
  return payloads as Uint8Array[];
}
