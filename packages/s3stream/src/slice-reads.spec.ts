import type { DataSlice } from '@mink/meta';
import { InMemoryObjectStore } from './object-store';
import { coalesceSliceReads, readSlicePayloads } from './slice-reads';

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
