import fc from 'fast-check';
import { batchesOfSlice, packedIndex, planPackedSlices, type PackableBatch } from './packed-slice';
import { boundedBatches } from './slice-reads';

/** Consecutive batches of the given byte lengths, batch i holding i % 3 + 1 records. */
function batchesOf(lengths: number[]): PackableBatch[] {
  let offset = 0;
  return lengths.map((length, index) => {
    const batch = { startOffset: offset, endOffset: offset + (index % 3) + 1, length };
    offset = batch.endOffset;
    return batch;
  });
}

/** The bytes of a packed slice of `payloads` and the slice naming them, as the compactor writes them. */
function packed(payloads: Uint8Array[], records: number[], startOffset = 10) {
  let offset = startOffset;
  const batches = payloads.map((payload, index) => {
    const batch = { startOffset: offset, endOffset: offset + records[index]!, length: payload.byteLength };
    offset = batch.endOffset;
    return batch;
  });
  const index = packedIndex(batches);
  const bytes = new Uint8Array(payloads.reduce((sum, payload) => sum + payload.byteLength, 0) + index.byteLength);
  let position = 0;
  for (const part of [...payloads, index]) {
    bytes.set(part, position);
    position += part.byteLength;
  }
  const slice = { object: 'streams/1-_-0/10-20-1-1', startOffset, endOffset: offset, position: 0, length: bytes.byteLength, batches: payloads.length };
  return { bytes, slice, batches };
}

describe('planPackedSlices', () => {
  // An index costs 8 bytes per batch, counted against bytesMax.
  it.each<[string, number[], { bytesMax: number; batchesMax: number }, [number, number][]]>([
    ['batches that fit with their index share one slice', [10, 10, 10], { bytesMax: 54, batchesMax: 100 }, [[0, 3]]],
    ['the index counts: one byte short starts a new slice', [10, 10, 10], { bytesMax: 53, batchesMax: 100 }, [[0, 2], [2, 3]]],
    ['a batch larger than the bound gets a slice of its own', [10, 500, 10, 10], { bytesMax: 100, batchesMax: 100 }, [[0, 1], [1, 2], [2, 4]]],
    ['the batch bound starts a new slice', [1, 1, 1, 1, 1], { bytesMax: 1000, batchesMax: 2 }, [[0, 2], [2, 4], [4, 5]]],
    ['one batch per slice when the batch bound is 1', [1, 1], { bytesMax: 1000, batchesMax: 1 }, [[0, 1], [1, 2]]],
    ['nothing to pack', [], { bytesMax: 100, batchesMax: 10 }, []],
  ])('%s', (_name, lengths, bounds, expected) => {
    expect(planPackedSlices(batchesOf(lengths), bounds).map((range) => [range.first, range.endExclusive])).toEqual(expected);
  });

  it('refuses bounds that cannot pack anything', () => {
    expect(() => planPackedSlices([], { bytesMax: 0, batchesMax: 1 })).toThrow('pack bounds');
    expect(() => planPackedSlices([], { bytesMax: 10, batchesMax: 0 })).toThrow('pack bounds');
  });

  it('covers every batch once, in order, and keeps every slice of several batches within the bounds', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 300 }), { maxLength: 60 }), fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 1, max: 8 }), (lengths, bytesMax, batchesMax) => {
        const batches = batchesOf(lengths);
        const ranges = planPackedSlices(batches, { bytesMax, batchesMax });
        expect(ranges.flatMap((range) => Array.from({ length: range.endExclusive - range.first }, (_, index) => range.first + index))).toEqual(batches.map((_, index) => index));
        for (const range of ranges) {
          const count = range.endExclusive - range.first;
          expect(count).toBeLessThanOrEqual(batchesMax);
          if (count > 1) expect(lengths.slice(range.first, range.endExclusive).reduce((sum, length) => sum + length, 0) + 8 * count).toBeLessThanOrEqual(bytesMax);
        }
      }),
    );
  });
});

describe('batchesOfSlice', () => {
  const text = (value: string): Uint8Array => new TextEncoder().encode(value);

  it('returns a plain slice as its one batch', () => {
    const bytes = text('abc');
    expect(batchesOfSlice({ object: 'wal/1', startOffset: 4, endOffset: 6, length: 3 }, bytes)).toEqual([{ startOffset: 4, endOffset: 6, payload: bytes }]);
  });

  it('cuts a packed slice back into the batches that were packed, as views of its bytes', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.uint8Array({ minLength: 1, maxLength: 40 }), fc.integer({ min: 1, max: 5 })), { minLength: 2, maxLength: 30 }),
        fc.nat(1000),
        (parts, startOffset) => {
          const { bytes, slice, batches } = packed(
            parts.map(([payload]) => payload),
            parts.map(([, records]) => records),
            startOffset,
          );
          const cut = batchesOfSlice(slice, bytes);
          expect(cut.map((batch) => [batch.startOffset, batch.endOffset, Array.from(batch.payload)])).toEqual(batches.map((batch, index) => [batch.startOffset, batch.endOffset, Array.from(parts[index]![0])]));
          expect(cut.every((batch) => batch.payload.buffer === bytes.buffer)).toBe(true);
        },
      ),
    );
  });

  it.each<[string, (input: ReturnType<typeof packed>) => [Parameters<typeof batchesOfSlice>[0], Uint8Array], string]>([
    ['fewer bytes than the view records', ({ slice, bytes }) => [slice, bytes.subarray(1)], 'came with'],
    ['an index that claims more records than the slice holds', ({ slice, bytes }) => [{ ...slice, endOffset: slice.endOffset - 1 }, bytes], 'runs past the slice'],
    ['an index that claims fewer records than the slice holds', ({ slice, bytes }) => [{ ...slice, endOffset: slice.endOffset + 1 }, bytes], 'its batches end at offset'],
    ['a batch count the index does not hold', ({ slice, bytes }) => [{ ...slice, batches: 2 }, bytes], 'is corrupt'],
    ['a batch count too large for the bytes', ({ slice, bytes }) => [{ ...slice, batches: 100 }, bytes], 'cannot hold'],
    [
      'an empty batch in the index',
      ({ slice, bytes }) => {
        const broken = bytes.slice();
        new DataView(broken.buffer).setUint32(broken.byteLength - 24, 0, true);
        return [slice, broken];
      },
      'batch 0 is empty',
    ],
  ])('refuses %s', (_name, corrupt, message) => {
    const input = packed([text('aaa'), text('bb'), text('c')], [2, 1, 3]);
    const [slice, bytes] = corrupt(input);
    expect(() => batchesOfSlice(slice, bytes)).toThrow(message);
  });
});

describe('boundedBatches', () => {
  const batch = (startOffset: number, endOffset: number, length: number) => ({ startOffset, endOffset, payload: new Uint8Array(length) });
  const batches = [batch(0, 2, 10), batch(2, 5, 10), batch(5, 6, 10), batch(6, 9, 10)];
  it.each<[string, number, number, { bytesMax: number; batchesMax: number }, number[]]>([
    ['from the batch holding start until maxRecords are covered', 3, 4, { bytesMax: 1000, batchesMax: 100 }, [2, 5, 6]],
    ['batches wholly before start are dropped', 5, 100, { bytesMax: 1000, batchesMax: 100 }, [5, 6]],
    ['the byte bound stops it, at least one batch', 0, 100, { bytesMax: 5, batchesMax: 100 }, [0]],
    ['the byte bound takes what fits', 2, 100, { bytesMax: 20, batchesMax: 100 }, [2, 5]],
    ['the batch bound stops it', 0, 100, { bytesMax: 1000, batchesMax: 3 }, [0, 2, 5]],
    ['nothing after the end', 9, 10, { bytesMax: 1000, batchesMax: 10 }, []],
  ])('%s', (_name, start, maxRecords, bounds, expected) => {
    expect(boundedBatches(batches, start, maxRecords, bounds).map((chosen) => chosen.startOffset)).toEqual(expected);
  });
});
