import { Field, Int64, RecordBatch, Schema, Struct, Table, makeData, tableToIPC } from 'apache-arrow';
import { LIMITS } from '@mink/config';
import type { ColumnSpec } from '@mink/meta';
import { MinkError, type WriteBucketResult } from '@mink/protocol';
import { decodeBatch, encodeRows, stampBatch } from '@mink/records';

import {
  boundedEncodings,
  byBucketThenOffset,
  chunksOf,
  fillsRequest,
  indexesByBucket,
  jsonBytesOf,
  mergedAppends,
  prefixLookupRequestBounds,
  reassemble,
  splitAppendResult,
  splitWriteResult,
  writeTableResultOf,
  type AnsweredChunk,
  type RequestBounds,
} from './request-planning';

describe('chunksOf', () => {
  const unitBytes = (): number => 1;

  test.each<[string, number[], RequestBounds, number[][]]>([
    ['no items', [], { itemsMax: 3, bytesMax: 100 }, []],
    ['fewer items than the bound', [1, 2], { itemsMax: 3, bytesMax: 100 }, [[1, 2]]],
    ['exactly the item bound', [1, 2, 3], { itemsMax: 3, bytesMax: 100 }, [[1, 2, 3]]],
    ['one over the item bound', [1, 2, 3, 4], { itemsMax: 3, bytesMax: 100 }, [[1, 2, 3], [4]]],
    ['the byte bound before the item bound', [1, 2, 3, 4, 5], { itemsMax: 10, bytesMax: 2 }, [[1, 2], [3, 4], [5]]],
    ['one item per chunk', [1, 2, 3], { itemsMax: 1, bytesMax: 100 }, [[1], [2], [3]]],
  ])('cuts %s in order', (_case, items, bounds, expected) => {
    // Proves chunks keep every item once, in order, and each chunk stays within both bounds.
    expect(chunksOf(items, bounds, unitBytes)).toEqual(expected);
  });

  it('gives an item larger than the byte bound a chunk of its own instead of dropping it', () => {
    // Proves an oversized item is sent alone (for the receiver to refuse), never merged or lost.
    const sizes = new Map([['small', 10], ['huge', 1_000], ['tail', 10]]);
    expect(chunksOf(['small', 'huge', 'tail'], { itemsMax: 10, bytesMax: 100 }, (item) => sizes.get(item)!)).toEqual([['small'], ['huge'], ['tail']]);
  });

  it('measures JSON by default, in UTF-8 bytes', () => {
    // Proves the default measure counts multi-byte characters as bytes, so a chunk never exceeds the wire bound.
    const row = { name: 'é'.repeat(10) };
    expect(jsonBytesOf(row)).toBe(Buffer.byteLength(JSON.stringify(row)) + 1);
    expect(jsonBytesOf(row)).toBeGreaterThan(JSON.stringify(row).length + 1);
    const bytesMax = jsonBytesOf(row) * 2;
    expect(chunksOf([row, row, row], { itemsMax: 100, bytesMax })).toEqual([[row, row], [row]]);
  });

  it('refuses a bound that could never make progress', () => {
    // Proves a zero item bound is a programming error, not an endless loop.
    expect(() => chunksOf([1], { itemsMax: 0, bytesMax: 10 })).toThrow(/itemsMax/);
  });
});

describe('indexesByBucket', () => {
  it('groups positions by bucket in increasing order, buckets in the order of their first item', () => {
    // Proves the split keeps enough to put answers back where each item was.
    const buckets = [2, 0, 2, 1, 0, 2];
    const split = indexesByBucket(buckets, (bucket) => bucket);
    expect([...split.entries()]).toEqual([
      [2, [0, 2, 5]],
      [0, [1, 4]],
      [1, [3]],
    ]);
  });

  it('is empty for no items', () => {
    // Proves an empty call asks no bucket.
    expect(indexesByBucket([], () => 0).size).toBe(0);
  });
});

describe('reassemble', () => {
  it('puts answers from several buckets and chunks back in the order of the call', () => {
    // Proves answer i of the result answers item i, however the items were split.
    const chunks: AnsweredChunk<string>[] = [
      { indexes: [1, 4], answers: ['b', 'e'] },
      { indexes: [0, 2], answers: ['a', 'c'] },
      { indexes: [3], answers: ['d'] },
    ];
    expect(reassemble(5, chunks)).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('keeps null answers (keys without a row) in place', () => {
    // Proves a missing row stays null at its key's position rather than shifting later answers.
    expect(reassemble(3, [{ indexes: [2, 0, 1], answers: [{ id: 3 }, null, { id: 2 }] }])).toEqual([null, { id: 2 }, { id: 3 }]);
  });

  test.each<[string, number, AnsweredChunk<number>[], RegExp]>([
    ['too few answers for a request', 2, [{ indexes: [0, 1], answers: [1] }], /answered 1 items of a request for 2/],
    ['too many answers for a request', 1, [{ indexes: [0], answers: [1, 2] }], /answered 2 items of a request for 1/],
    ['a position answered twice', 2, [{ indexes: [0], answers: [1] }, { indexes: [0], answers: [1] }], /answered twice/],
    ['a position never answered', 2, [{ indexes: [0], answers: [1] }], /position 1 of 2 got no answer/],
    ['a position outside the call', 1, [{ indexes: [1], answers: [1] }], /outside/],
  ])('throws on %s', (_case, count, chunks, message) => {
    // Proves a broken answer fails loudly instead of handing the caller rows for the wrong keys.
    expect(() => reassemble(count, chunks)).toThrow(message);
  });
});

describe('prefixLookupRequestBounds', () => {
  test.each<[number, number]>([
    [LIMITS.prefixLookupRowsMax, 1],
    [LIMITS.prefixLookupRowsMax / 2, 2],
    [LIMITS.prefixLookupRowsMax - 1, 1],
    [100, LIMITS.prefixLookupRowsMax / 100],
    [1, Math.min(LIMITS.prefixLookupRowsMax, LIMITS.lookupKeysPerRequestMax)],
  ])('with a limit of %d rows per prefix, carries %d prefixes per request', (limit, prefixes) => {
    // Proves one request's answer stays within prefixLookupRowsMax rows, and a request always carries a prefix.
    expect(prefixLookupRequestBounds(limit).itemsMax).toBe(prefixes);
    expect(prefixLookupRequestBounds(limit).bytesMax).toBe(LIMITS.appendRequestBytesMax);
  });

  it('refuses a limit that is not a positive integer', () => {
    // Proves the bound is only computed from a checked limit.
    expect(() => prefixLookupRequestBounds(0)).toThrow(/positive integer/);
  });
});

describe('write results', () => {
  const result = (bucket: number, baseOffset: number): WriteBucketResult => ({ bucket, operations: 1, baseOffset, count: 1 });

  it('orders bucket results by bucket, then by offset', () => {
    // Proves the table-wide answer lists buckets as the HTTP contract shows them, whatever order requests finished in.
    const results = [result(2, 5), result(0, 9), result(2, 1), result(0, 3)];
    expect(writeTableResultOf(4, results)).toEqual({ written: 4, buckets: [result(0, 3), result(0, 9), result(2, 1), result(2, 5)] });
    expect(byBucketThenOffset(results)).not.toBe(results);
  });

  it('orders the results of a partitioned table by partition (time order), then bucket, then offset', () => {
    const of = (partition: string, bucket: number, baseOffset: number): WriteBucketResult => ({ ...result(bucket, baseOffset), partition });
    const results = [of('2026120111', 0, 4), of('2026120110', 1, 0), of('2026120111', 0, 2), of('2026120110', 0, 7)];
    expect(byBucketThenOffset(results)).toEqual([of('2026120110', 0, 7), of('2026120110', 1, 0), of('2026120111', 0, 2), of('2026120111', 0, 4)]);
  });
});

describe('boundedEncodings', () => {
  it('cuts by item count, halves a range that encodes too large, and keeps order', () => {
    // Proves each request is within both bounds and that no item is lost, repeated or reordered.
    const encodeRange = (start: number, end: number) => Uint8Array.from({ length: (end - start) * 10 }, (_, index) => start + Math.floor(index / 10));
    const encoded = boundedEncodings(9, encodeRange, { itemsMax: 4, bytesMax: 25 });
    expect(encoded.map((bytes) => [...new Set(bytes)])).toEqual([[0, 1], [2, 3], [4, 5], [6, 7], [8]]);
    expect(encoded.every((bytes) => bytes.byteLength <= 25)).toBe(true);
  });

  it('sends an item larger than bytesMax alone', () => {
    // Proves the halving stops at one item rather than looping or dropping it.
    expect(boundedEncodings(2, (start, end) => new Uint8Array((end - start) * 100), { itemsMax: 10, bytesMax: 50 }).map((bytes) => bytes.byteLength)).toEqual([100, 100]);
  });
});

describe('fillsRequest', () => {
  const append = (bytes: number) => ({ mergeable: new Uint8Array(bytes) });
  const put = {};
  it.each([
    ['nothing waits', [], false],
    ['one small append', [append(100)], false],
    ['small appends short of the minimum', [append(400), append(500)], false],
    ['appends reaching the minimum together', [append(400), append(600)], true],
    ['one append of the minimum', [append(1_000)], true],
    ['an append the request cannot take after a smaller one (700 + 700 > 1 200)', [append(700), append(700)], true],
    ['a put (never merged)', [put], true],
    ['small appends, then a put they cannot merge with', [append(100), put], true],
    ['small appends reaching the minimum only after a put', [append(100), put, append(1_000)], true],
  ])('%s', (_name, waiting: { mergeable?: Uint8Array }[], expected) => {
    expect(fillsRequest(waiting, 1_000, 1_200)).toBe(expected);
  });

  it('sends every append at once with a minimum of 1 byte', () => {
    expect(fillsRequest([append(1)], 1, 1_200)).toBe(true);
  });
});

describe('mergedAppends and splitAppendResult', () => {
  const ID: ColumnSpec[] = [{ name: 'id', type: 'int64' }];
  const streamOf = (first: number, rows: number) => encodeRows(ID, Array.from({ length: rows }, (_, index) => ({ id: BigInt(first + index) })));

  it.each<[string, number[], RequestBounds, number | null]>([
    ['one stream: nothing to merge', [5], { itemsMax: 100, bytesMax: 1 << 20 }, null],
    ['every stream within the bounds', [5, 1, 7], { itemsMax: 100, bytesMax: 1 << 20 }, 3],
    ['rows stop the run', [5, 1, 7], { itemsMax: 6, bytesMax: 1 << 20 }, 2],
    ['rows stop it after the first', [5, 2, 7], { itemsMax: 6, bytesMax: 1 << 20 }, null],
    ['bytes stop the run (streams of 328, 296 and 344 bytes)', [5, 1, 7], { itemsMax: 100, bytesMax: 700 }, 2],
  ])('%s', (_name, sizes, bounds, count) => {
    // Proves a merged request stays within what one request may carry, and holds the first streams in order.
    let first = 0;
    const streams = sizes.map((rows) => {
      const stream = streamOf(first, rows);
      first += rows;
      return stream;
    });
    const merged = mergedAppends(streams, bounds);
    expect(merged?.count ?? null).toBe(count);
    if (merged === null) return;
    expect(merged.rowCounts).toEqual(sizes.slice(0, count!));
    const stored = decodeBatch(ID, stampBatch(ID, merged.batch, 1, LIMITS.appendRowsPerRequestMax).payload).rows;
    expect(stored.map((row) => Number(row.id))).toEqual(Array.from({ length: merged.rowCounts.reduce((sum, rows) => sum + rows, 0) }, (_, index) => index));
  });

  it('merges the appends before one of another schema message, and none when the second one differs', () => {
    // Proves a waiting append of another schema (say a producer declaring a column not nullable) ends the run instead of stopping every merge.
    const notNullable = (id: bigint): Uint8Array => {
      const batch = new RecordBatch(new Schema([new Field('id', new Int64(), false)]), makeData({ type: new Struct([new Field('id', new Int64(), false)]), length: 1, children: [makeData({ type: new Int64(), length: 1, data: BigInt64Array.of(id) })] }));
      return tableToIPC(new Table([batch]), 'stream');
    };
    const bounds = { itemsMax: 100, bytesMax: 1 << 20 };
    const merged = mergedAppends([streamOf(0, 2), streamOf(2, 3), notNullable(9n), streamOf(5, 1)], bounds);
    expect(merged?.count).toBe(2);
    expect(merged?.rowCounts).toEqual([2, 3]);
    expect(mergedAppends([streamOf(0, 2), notNullable(9n), streamOf(2, 3)], bounds)).toBeNull();
  });

  it('splits the answer of a merged request into each append\'s offsets, and refuses an answer of another row count', () => {
    // Proves each merged call learns where its own rows landed.
    expect(splitAppendResult({ bucket: 2, baseOffset: 40, count: 6, duplicate: true }, [1, 3, 2])).toEqual([
      { bucket: 2, baseOffset: 40, count: 1, duplicate: true },
      { bucket: 2, baseOffset: 41, count: 3, duplicate: true },
      { bucket: 2, baseOffset: 44, count: 2, duplicate: true },
    ]);
    expect(() => splitAppendResult({ bucket: 2, baseOffset: 40, count: 5 }, [1, 3, 2])).toThrow(/answered 5 rows for a request of 6/);
  });
});

describe('splitWriteResult', () => {
  it('gives each merged put its part, with the bucket and partition of the request, or the error of a part refused alone', () => {
    const result: WriteBucketResult = {
      bucket: 3,
      partition: '2026120400',
      operations: 6,
      baseOffset: 10,
      count: 5,
      parts: [
        { operations: 1, baseOffset: 10, count: 1 },
        { error: { code: 'InvalidArgument', message: 'operation 0: deletes are disabled for this table' } },
        { operations: 3, baseOffset: 11, count: 4 },
      ],
    };
    const parts = splitWriteResult(result, [1, 2, 3]);
    expect(parts[0]).toEqual({ bucket: 3, partition: '2026120400', operations: 1, baseOffset: 10, count: 1 });
    expect(parts[1]).toBeInstanceOf(MinkError);
    expect(parts[1]).toMatchObject({ code: 'InvalidArgument', message: 'operation 0: deletes are disabled for this table' });
    expect(parts[2]).toEqual({ bucket: 3, partition: '2026120400', operations: 3, baseOffset: 11, count: 4 });
    expect(splitWriteResult({ bucket: 0, operations: 2, baseOffset: -1, count: 0, duplicate: true, parts: [{ operations: 2, baseOffset: -1, count: 0, duplicate: true }] }, [2])).toEqual([
      { bucket: 0, operations: 2, baseOffset: -1, count: 0, duplicate: true },
    ]);
  });

  it.each([
    ['no parts', { bucket: 0, operations: 2, baseOffset: 0, count: 2 }, [1, 1], 'the leader answered no parts for a request of 2'],
    ['too few parts', { bucket: 0, operations: 2, baseOffset: 0, count: 2, parts: [{ operations: 2, baseOffset: 0, count: 2 }] }, [1, 1], 'the leader answered 1 parts for a request of 2'],
    ['a part of other rows', { bucket: 0, operations: 2, baseOffset: 0, count: 2, parts: [{ operations: 2, baseOffset: 0, count: 2 }] }, [1], 'the leader answered 2 operations for part 0 of 1 rows'],
  ] as const)('refuses an answer with %s', (_, result, rowCounts, message) => {
    expect(() => splitWriteResult(result as WriteBucketResult, rowCounts)).toThrow(message);
  });
});
