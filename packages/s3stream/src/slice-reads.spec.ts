import type { DataSlice } from '@mink/meta';
import { InMemoryObjectStore } from './object-store';
import { chooseReadSlices, coalesceSliceReads, continuesRead, isCutShort, planPrefetch, readEndOf, readSlicePayloads, windowEnd } from './slice-reads';

const slice = (object: string, position: number, length: number, startOffset = 0): DataSlice => ({ object, position, length, startOffset, endOffset: startOffset + 1 });

describe('coalesceSliceReads', () => {
  it.each<[string, DataSlice[], number, [string, number, number, number[]][]]>([
    ['back-to-back slices of one object share a read', [slice('a', 0, 10), slice('a', 10, 5), slice('a', 15, 1)], 100, [['a', 0, 16, [0, 1, 2]]]],
    ['a gap starts a new read', [slice('a', 0, 10), slice('a', 20, 5)], 100, [['a', 0, 10, [0]], ['a', 20, 25, [1]]]],
    ['another object starts a new read', [slice('a', 0, 10), slice('b', 10, 5)], 100, [['a', 0, 10, [0]], ['b', 10, 15, [1]]]],
    ['the byte bound starts a new read', [slice('a', 0, 10), slice('a', 10, 10), slice('a', 20, 10)], 20, [['a', 0, 20, [0, 1]], ['a', 20, 30, [2]]]],
    ['a slice over the bound reads alone', [slice('a', 0, 50), slice('a', 50, 1)], 20, [['a', 0, 50, [0]], ['a', 50, 51, [1]]]],
    ['slices out of byte order are not merged backwards', [slice('a', 10, 5), slice('a', 0, 10)], 100, [['a', 10, 15, [0]], ['a', 0, 10, [1]]]],
    ['nothing to read', [], 100, []],
  ])('%s', (_name, slices, bytesMax, expected) => {
    expect(coalesceSliceReads(slices, bytesMax).map((read) => [read.object, read.start, read.endExclusive, read.members])).toEqual(expected);
  });
});

describe('readSlicePayloads', () => {
  it('returns every payload in order with one GET per run, taking cached payloads without a GET', async () => {
    // Proves the bytes are sliced right out of coalesced reads and that the cache saves its GETs.
    const store = new InMemoryObjectStore();
    await store.put('wal/1', new TextEncoder().encode('aaabbbbcc'));
    await store.put('wal/2', new TextEncoder().encode('xxyyy'));
    const slices = [slice('wal/1', 0, 3), slice('wal/1', 3, 4), slice('wal/1', 7, 2), slice('wal/2', 0, 2), slice('wal/2', 2, 3)];
    const cached = new Map([[slices[3]!, new TextEncoder().encode('XX')]]);
    const payloads = await readSlicePayloads(store, slices, { readsInFlight: 2, readBytesMax: 1 << 20, cached: (wanted) => cached.get(wanted) });
    expect(payloads.map((payload) => new TextDecoder().decode(payload))).toEqual(['aaa', 'bbbb', 'cc', 'XX', 'yyy']);
    expect(store.calls.get).toBe(2);
  });

  it('fails when the store returns fewer bytes than the slices need', async () => {
    // Proves a view that names bytes an object does not hold is an error, not a short payload.
    const store = new InMemoryObjectStore();
    await store.put('wal/1', new Uint8Array(4));
    await expect(readSlicePayloads(store, [slice('wal/1', 2, 4)], { readsInFlight: 1, readBytesMax: 100 })).rejects.toThrow();
  });
});

/** Slices of one object back to back, one record each unless `records` says otherwise, with these byte lengths. */
function backToBack(lengths: number[], records: number[] = lengths.map(() => 1)): DataSlice[] {
  const slices: DataSlice[] = [];
  let position = 0;
  let offset = 0;
  lengths.forEach((length, index) => {
    slices.push({ object: 'streams/s', startOffset: offset, endOffset: offset + records[index]!, position, length });
    position += length;
    offset += records[index]!;
  });
  return slices;
}

describe('chooseReadSlices', () => {
  // Batches [0,3) 6 bytes, [3,5) 4 bytes, [5,6) 3 bytes, [6,10) 13 bytes.
  const slices = backToBack([6, 4, 3, 13], [3, 2, 1, 4]);
  it.each<[string, number, number, { bytesMax: number; batchesMax: number }, [number, number]]>([
    ['whole batches until the byte bound', 0, 100, { bytesMax: 10, batchesMax: 100 }, [0, 2]],
    ['from the batch holding the offset', 4, 1, { bytesMax: 100, batchesMax: 100 }, [1, 2]],
    ['until the records asked for are covered, counted from the offset', 2, 2, { bytesMax: 100, batchesMax: 100 }, [0, 2]],
    ['until the batch bound', 0, 100, { bytesMax: 100, batchesMax: 1 }, [0, 1]],
    ['one batch larger than the byte bound alone', 6, 100, { bytesMax: 10, batchesMax: 100 }, [3, 4]],
    ['at least one batch under any byte bound', 0, 100, { bytesMax: 1, batchesMax: 100 }, [0, 1]],
    ['nothing at the end of the stream', 10, 100, { bytesMax: 100, batchesMax: 100 }, [4, 4]],
  ])('takes %s', (_name, start, maxRecords, bounds, [first, endExclusive]) => {
    expect(chooseReadSlices(slices, start, maxRecords, bounds)).toEqual({ first, endExclusive });
  });

  it.each<[string, number, { bytesMax: number; batchesMax: number }]>([
    ['no records', 0, { bytesMax: 10, batchesMax: 1 }],
    ['no bytes', 1, { bytesMax: 0, batchesMax: 1 }],
    ['no batches', 1, { bytesMax: 10, batchesMax: 0 }],
  ])('refuses a read of %s', (_name, maxRecords, bounds) => {
    expect(() => chooseReadSlices(slices, 0, maxRecords, bounds)).toThrow(Error);
  });
});

describe('windowEnd', () => {
  it.each<[string, number[], number, { bytesMax: number; batchesMax: number }, number]>([
    ['slices up to the byte bound', [10, 10, 10, 10], 0, { bytesMax: 30, batchesMax: 10 }, 3],
    ['slices up to the batch bound', [10, 10, 10, 10], 1, { bytesMax: 100, batchesMax: 2 }, 3],
    ['one slice larger than the bound', [50, 10], 0, { bytesMax: 30, batchesMax: 10 }, 1],
    ['what is left at the end', [10, 10], 1, { bytesMax: 30, batchesMax: 10 }, 2],
    ['nothing past the end', [10], 1, { bytesMax: 30, batchesMax: 10 }, 1],
  ])('ends after %s', (_name, lengths, from, bounds, expected) => {
    expect(windowEnd(backToBack(lengths), from, bounds)).toBe(expected);
  });
});

describe('planPrefetch', () => {
  const tens = (count: number) => Array.from({ length: count }, () => 10);
  // Windows of three slices of 10 bytes, two of them ahead, unless a row says otherwise.
  const bounds = { bytesMax: 30, batchesMax: 100, windowsMax: 2 };
  it.each<[string, number[], number, number[], Partial<typeof bounds>, number[]]>([
    ['nothing held: the next two windows', tens(12), 3, [], {}, [3, 4, 5, 6, 7, 8]],
    ['the next window wholly held: nothing', tens(12), 3, [3, 4, 5], {}, []],
    ['the next window held in part: whole windows from the first missing slice within the look-ahead', tens(20), 6, [6, 7], {}, [8, 9, 10]],
    ['one whole window even when it ends past the look-ahead', tens(8), 0, [0, 1], { windowsMax: 1 }, [2, 3, 4]],
    ['held slices inside the windows are left out', tens(12), 0, [1, 4], {}, [0, 2, 3, 5]],
    ['windows cut by the batch bound', tens(12), 0, [], { batchesMax: 2 }, [0, 1, 2, 3]],
    ['a slice larger than a window as a window of its own', [100, 10, 10], 0, [], { windowsMax: 1 }, [0]],
    ['what is left before the end of the stream', tens(4), 2, [], {}, [2, 3]],
    ['nothing at the end of the stream', tens(4), 4, [], {}, []],
    ['nothing when no window is asked for', tens(4), 0, [], { windowsMax: 0 }, []],
  ])('fetches %s', (_name, lengths, after, held, overrides, expected) => {
    const heldIndices = new Set(held);
    expect(planPrefetch(backToBack(lengths), after, (index) => heldIndices.has(index), { ...bounds, ...overrides })).toEqual(expected);
  });

  it.each<[string, number, Partial<typeof bounds>]>([
    ['a read ending past the slices', 5, {}],
    ['a negative read end', -1, {}],
    ['a negative number of windows', 0, { windowsMax: -1 }],
    ['windows of no bytes', 0, { bytesMax: 0 }],
  ])('refuses %s', (_name, after, overrides) => {
    expect(() => planPrefetch(backToBack(tens(4)), after, () => false, { ...bounds, ...overrides })).toThrow(Error);
  });

  it('keeps a scan reading less than a window at a time supplied with one whole window per refill', () => {
    // Proves the refill rule over a whole scan: after the first plan of two windows every plan is exactly one
    // window of back-to-back slices, and every read finds its slices already planned.
    const slices = backToBack(tens(200));
    const windowBounds = { bytesMax: 80, batchesMax: 100, windowsMax: 2 };
    const planned = new Set<number>();
    const plans: number[][] = [];
    for (let read = 0; read + 2 <= slices.length; read += 2) {
      if (read > 0) for (const index of [read, read + 1]) expect([read, planned.has(index)]).toEqual([read, true]);
      const plan = planPrefetch(slices, read + 2, (index) => planned.has(index), windowBounds);
      plan.forEach((index) => planned.add(index));
      if (plan.length > 0) plans.push(plan);
    }
    expect(plans[0]).toEqual(Array.from({ length: 16 }, (_, index) => 2 + index));
    for (const plan of plans.slice(1, -1)) expect(plan).toEqual(Array.from({ length: 8 }, (_, index) => plan[0]! + index));
    expect(planned.size).toBe(198);
  });
});

describe('continuesRead', () => {
  const previous = { lastBatchStartOffset: 10, endOffset: 15 };
  it.each<[string, { lastBatchStartOffset: number; endOffset: number } | undefined, number, boolean]>([
    ['a read where the previous one ended', previous, 15, true],
    ['a read inside the last batch of the previous one', previous, 12, true],
    ['a read at the start of that batch', previous, 10, true],
    ['a read before that batch', previous, 9, false],
    ['a read past the end', previous, 16, false],
    ['the first read of a bucket', undefined, 0, false],
  ])('%s', (_name, before, start, expected) => {
    expect(continuesRead(before, start)).toBe(expected);
  });
});

describe('isCutShort', () => {
  // A stream of 10 slices; the read from offset 100 took slices [2, 5) and ended at offset 130.
  const end = { lastBatchStartOffset: 120, endOffset: 130 };
  it.each<[string, { first: number; endExclusive: number }, number, number, boolean]>([
    ['a read that stopped at its bound before the records it asked for', { first: 2, endExclusive: 5 }, 10, 1_000, true],
    ['a read that got the records it asked for', { first: 2, endExclusive: 5 }, 10, 30, false],
    ['a read that got fewer records only because the stream ends there', { first: 2, endExclusive: 10 }, 10, 1_000, false],
    ['a read one record short with slices left', { first: 2, endExclusive: 5 }, 10, 31, true],
  ])('%s', (_name, range, sliceCount, maxRecords, expected) => {
    expect(isCutShort(range, sliceCount, end, 100, maxRecords)).toBe(expected);
  });
});

describe('readEndOf', () => {
  it.each<[string, DataSlice[], number, { lastBatchStartOffset: number; endOffset: number }]>([
    ['the last batch of a read', backToBack([5, 5], [3, 4]), 1, { lastBatchStartOffset: 3, endOffset: 7 }],
    ['the start of a read that took nothing', [], 9, { lastBatchStartOffset: 9, endOffset: 9 }],
  ])('is %s', (_name, slices, start, expected) => {
    expect(readEndOf(slices, start)).toEqual(expected);
  });
});
