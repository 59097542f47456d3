import fc from 'fast-check';
import type { ColumnSpec } from '@mink/meta';

import { encodeRows } from './arrow-codec';
import { EVERY_TYPE_COLUMNS } from './every-type.fixture';
import { splitByBucket } from './bucketing';
import { readAppendBody, type BucketingOfRows } from './json-rows';
import { validateRows } from './validate';

/** Every type but bytes (base64 values go the general way). */
const COLUMNS: ColumnSpec[] = EVERY_TYPE_COLUMNS.filter((column) => column.type !== 'bytes');

const encoder = new TextEncoder();

/** What the general path sends for a body: `JSON.parse`, `validateRows`, `splitByBucket`, `encodeRows` per bucket. */
function generalPath(body: string, bucketing: BucketingOfRows): Map<number, Uint8Array> {
  const rows = validateRows(bucketing.columns, (JSON.parse(body) as { rows: unknown }).rows);
  const split = splitByBucket(rows, bucketing.bucketKey, bucketing.buckets, bucketing.spreadStart);
  return new Map([...split].map(([bucket, bucketRows]) => [bucket, encodeRows(bucketing.columns, bucketRows)]));
}

/** What the one-pass reader gives for a body (each bucket's rows encoded whole), or null. */
function onePass(body: string | Uint8Array, bucketing: BucketingOfRows): Map<number, Uint8Array> | null {
  const read = readAppendBody(typeof body === 'string' ? encoder.encode(body) : body, bucketing);
  if (read === null) return null;
  return new Map([...read.buckets].map(([bucket, rows]) => [bucket, rows.encodeRange(0, rows.count)]));
}

function expectSameAsGeneral(body: string, bucketing: BucketingOfRows): void {
  const fast = onePass(body, bucketing);
  expect(fast).not.toBeNull();
  const general = generalPath(body, bucketing);
  expect([...fast!.keys()]).toEqual([...general.keys()]);
  for (const [bucket, bytes] of general) expect(Buffer.from(fast!.get(bucket)!).equals(Buffer.from(bytes))).toBe(true);
}

const KEYED: BucketingOfRows = { columns: COLUMNS, bucketKey: ['id'], buckets: 8, spreadStart: 0 };

describe('readAppendBody', () => {
  it('lays out rows by bucket exactly as the general path: every type, nulls, missing columns, keys in any order, whitespace, escapes', () => {
    const body = `{ "rows" : [
      {"id": 1, "flag": true, "count": -5, "score": 1.5e3, "name": "plain", "at": 1700000000000},
      {"name": "esc\\"aped \\u00e9 \\ud83d\\ude00 \\n", "id": "-42", "at": "0012", "flag": false, "count": 0, "score": -0},
      {},
      {"id": null, "name": null, "score": 0.1, "count": 2147483647, "at": -0},
      {"id": 900719925474099, "name": "ünïcödé 😀", "count": -2147483648, "score": 123456789.123456789},
      {"id": "-0", "count": -0, "at": "0"}, {"id": "007", "count": 0, "at": 0}, {"id": -0, "count": -7, "at": "-12"}, {"id": "-120", "at": "100"}
    ] }`;
    expectSameAsGeneral(body, KEYED);
    expectSameAsGeneral(body, { ...KEYED, bucketKey: ['name', 'count'] });
    expectSameAsGeneral(body, { ...KEYED, bucketKey: ['flag'] });
    expectSameAsGeneral(body, { ...KEYED, bucketKey: ['score', 'at'] });
    expectSameAsGeneral(body, { ...KEYED, bucketKey: ['count', 'id', 'at'], buckets: 61 });
    // Without a bucket key every row goes to the bucket of the spread start.
    expectSameAsGeneral(body, { ...KEYED, bucketKey: [], spreadStart: 13 });
    expectSameAsGeneral(body, { ...KEYED, bucketKey: [], spreadStart: -3 });
  });

  it('encodes any range of a bucket as the general path encodes those rows', () => {
    const rows = Array.from({ length: 70 }, (_, index) => ({ id: index % 3, name: index % 5 === 0 ? null : `row ${index}`, flag: index % 7 === 0 ? null : index % 2 === 0, at: index }));
    const body = JSON.stringify({ rows });
    const read = readAppendBody(encoder.encode(body), { ...KEYED, buckets: 1 })!;
    const canonical = validateRows(COLUMNS, rows);
    for (const [start, end] of [[0, 70], [0, 1], [5, 13], [8, 64], [63, 70], [69, 70]] as const) {
      expect(Buffer.from(read.buckets.get(0)!.encodeRange(start, end)).equals(Buffer.from(encodeRows(COLUMNS, canonical.slice(start, end))))).toBe(true);
    }
  });

  it('grows past the sizes it estimates from the first row: a long first row, then many short rows, then long strings', () => {
    // Each bucket's buffers start sized for body length / first row's bytes rows and the first row's string
    // lengths; here the first row is far longer than the others (so the estimate is too small), later
    // strings far longer than the first (so string buffers grow), and one bucket gets most rows.
    const first = { id: 0, name: 'x'.repeat(5_000), flag: true, count: 1, score: 0.5, at: 1 };
    const many = Array.from({ length: 3_000 }, (_, index) => ({ id: index % 100 === 0 ? index : 7, name: index > 2_500 ? 'y'.repeat(9_000 + index) : `n${index}` }));
    const body = JSON.stringify({ rows: [first, ...many] });
    expectSameAsGeneral(body, KEYED);
    expectSameAsGeneral(body, { ...KEYED, bucketKey: [], spreadStart: 2 });
    // And the other way round: a short first row before long ones.
    expectSameAsGeneral(JSON.stringify({ rows: [{ id: 1 }, ...many] }), KEYED);
  });

  it('finds the end of every string whatever its alignment: quotes, backslashes and control characters at each position of a word', () => {
    // The string scan skips whole 32-bit words of plain bytes; every special byte must still be seen, for
    // every offset of the body in its buffer and every position of the byte in a string.
    const atOffset = (text: string, offset: number): Uint8Array => {
      const bytes = encoder.encode(text);
      const buffer = new Uint8Array(bytes.length + 8);
      buffer.set(bytes, offset);
      return buffer.subarray(offset, offset + bytes.length);
    };
    for (let offset = 0; offset < 4; offset++) {
      for (let length = 0; length <= 13; length++) {
        for (let at = 0; at <= length; at++) {
          const plain = 'abcdéfghijklmnop'.slice(0, length);
          const names = [plain, `${plain.slice(0, at)}"${plain.slice(at)}`, `${plain.slice(0, at)}\\${plain.slice(at)}`, `${plain.slice(0, at)}\n${plain.slice(at)}`];
          const body = JSON.stringify({ rows: names.map((name, index) => ({ id: index, name })) });
          const fast = onePass(atOffset(body, offset), KEYED);
          const general = generalPath(body, KEYED);
          expect([...fast!.keys()]).toEqual([...general.keys()]);
          for (const [bucket, bytes] of general) expect(Buffer.from(fast!.get(bucket)!).equals(Buffer.from(bytes))).toBe(true);
          // A raw control character inside a string is not JSON: the reader gives up on it wherever it is.
          const raw = `{"rows":[{"id":1,"name":"${plain.slice(0, at)}\u0001${plain.slice(at)}"}]}`;
          expect(onePass(atOffset(raw, offset), KEYED)).toBeNull();
        }
      }
    }
    // A body shorter than a word that ends its buffer before the next word boundary.
    const tiny = new Uint8Array(3);
    tiny.set(encoder.encode('{}'), 1);
    expect(onePass(tiny.subarray(1), KEYED)).toBeNull();
  });

  it('gives up (null) on everything outside its shape, so the general path answers it', () => {
    const bodies = [
      '',
      '[]',
      '{"rows":[]}',
      '{"rows":[{"id":1}],"more":1}',
      '{"rows":[{"id":1}],"rows":[{"id":2}]}',
      '{"other":[{"id":1}]}',
      '{"rows":[{"id":1,"id":2}]}',
      '{"rows":[{"nope":1}]}',
      '{"rows":[{"\\u0069d":1}]}',
      '{"rows":[1]}',
      '{"rows":[{"id":1.0}]}',
      '{"rows":[{"id":1e2}]}',
      '{"rows":[{"id":01}]}',
      '{"rows":[{"id":1234567890123456}]}',
      '{"rows":[{"id":"12a"}]}',
      '{"rows":[{"id":true}]}',
      '{"rows":[{"count":2147483648}]}',
      '{"rows":[{"score":1.}]}',
      '{"rows":[{"score":.5}]}',
      '{"rows":[{"score":1e400}]}',
      '{"rows":[{"score":"1"}]}',
      '{"rows":[{"flag":1}]}',
      '{"rows":[{"flag":tru}]}',
      '{"rows":[{"name":1}]}',
      '{"rows":[{"name":"\\ud800"}]}',
      '{"rows":[{"name":"tab\there"}]}',
      '{"rows":[{"name":"open}]}',
      '{"rows":[{"id":1}]} x',
      '{"rows":[{"id":1},]}',
      '{"rows":[{"id":1}}',
      '{"rows":[{"name":{"nested":1}}]}',
    ];
    for (const body of bodies) expect([body, onePass(body, KEYED)]).toEqual([body, null]);
    // Invalid UTF-8 and a byte-order mark go the general way too (which refuses the first and skips the second).
    expect(onePass(new Uint8Array([...encoder.encode('{"rows":[{"name":"'), 0xff, ...encoder.encode('"}]}')]), KEYED)).toBeNull();
    expect(onePass(new Uint8Array([0xef, 0xbb, 0xbf, ...encoder.encode('{"rows":[{"id":1}]}')]), KEYED)).toBeNull();
    // A table with a bytes column is read the general way (base64).
    expect(onePass('{"rows":[{"id":1}]}', { ...KEYED, columns: [...COLUMNS, { name: 'blob', type: 'bytes' }] })).toBeNull();
  });

  it('agrees with the general path on random rows: same batches, or null where the general path would refuse', () => {
    const value = fc.oneof(
      fc.constant(null),
      fc.boolean(),
      fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
      fc.maxSafeInteger(),
      fc.double(),
      fc.string({ unit: 'binary' }),
      fc.bigInt({ min: -(10n ** 16n), max: 10n ** 16n }).map((big) => String(big)),
    );
    const names = COLUMNS.map((column) => column.name);
    const row = fc.dictionary(fc.constantFrom(...names, 'stranger'), value, { maxKeys: 8 });
    const bucketing = fc.record({
      columns: fc.constant(COLUMNS),
      bucketKey: fc.subarray(names, { maxLength: 3 }),
      buckets: fc.integer({ min: 1, max: 16 }),
      spreadStart: fc.integer({ min: -5, max: 100 }),
    });
    fc.assert(
      fc.property(fc.array(row, { minLength: 1, maxLength: 20 }), bucketing, fc.boolean(), (rows, where, spaced) => {
        const body = spaced ? JSON.stringify({ rows }, null, 1) : JSON.stringify({ rows });
        const fast = onePass(body, where);
        let general: Map<number, Uint8Array> | Error;
        try {
          general = generalPath(body, where);
        } catch (error) {
          general = error as Error;
        }
        if (general instanceof Error) {
          expect(fast).toBeNull();
          return;
        }
        if (fast === null) return;
        expect([...fast.keys()]).toEqual([...general.keys()]);
        for (const [bucket, bytes] of general) expect(Buffer.from(fast.get(bucket)!).equals(Buffer.from(bytes))).toBe(true);
      }),
      { numRuns: 2_000 },
    );
  });

  it('reads random rows of the right types as the general path does, giving up on few of them', () => {
    const valueOf: Record<string, fc.Arbitrary<unknown>> = {
      id: fc.oneof(fc.integer({ min: -(10 ** 15) + 1, max: 10 ** 15 - 1 }), fc.integer().map(String), fc.constant(-0)),
      flag: fc.boolean(),
      count: fc.oneof(fc.integer(), fc.constantFrom(-(2 ** 31), 2 ** 31 - 1, -0)),
      score: fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer(), fc.constantFrom(-0, 5e-324, 1.7976931348623157e308)),
      name: fc.oneof(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary' }), fc.constantFrom('', '"', '\\', '\u2028', 'tab\t', '😀')),
      at: fc.oneof(fc.integer({ min: 0, max: 10 ** 15 - 1 }), fc.nat().map(String)),
    };
    const row = fc.record(Object.fromEntries(Object.entries(valueOf).map(([name, arbitrary]) => [name, fc.option(arbitrary, { nil: null })])), { requiredKeys: [] });
    const bucketing = fc.record({
      columns: fc.constant(COLUMNS),
      bucketKey: fc.subarray(COLUMNS.map((column) => column.name), { maxLength: 3 }),
      buckets: fc.integer({ min: 1, max: 16 }),
      spreadStart: fc.integer({ min: -5, max: 100 }),
    });
    let read = 0;
    let runs = 0;
    fc.assert(
      fc.property(fc.array(row, { minLength: 1, maxLength: 30 }), bucketing, (rows, where) => {
        runs++;
        const body = JSON.stringify({ rows });
        const general = generalPath(body, where);
        const fast = onePass(body, where);
        if (fast === null) return;
        read++;
        expect([...fast.keys()]).toEqual([...general.keys()]);
        for (const [bucket, bytes] of general) expect(Buffer.from(fast.get(bucket)!).equals(Buffer.from(bytes))).toBe(true);
      }),
      { numRuns: 1_000 },
    );
    // Lone surrogates in random binary strings send some bodies the general way; most must stay on the fast one.
    expect(read / runs).toBeGreaterThan(0.5);
  });

  it('reads the common shape without giving up: the bench and README rows', () => {
    const rows = Array.from({ length: 500 }, (_, index) => ({ id: index * 7919, name: `sensor-${index % 1000}`, value: index / 7, payload: `${index}-${'x'.repeat(200)}` }));
    const columns: ColumnSpec[] = [
      { name: 'id', type: 'int64' },
      { name: 'name', type: 'string' },
      { name: 'value', type: 'float64' },
      { name: 'payload', type: 'string' },
    ];
    expectSameAsGeneral(JSON.stringify({ rows }), { columns, bucketKey: ['id'], buckets: 8, spreadStart: 0 });
    expectSameAsGeneral(JSON.stringify({ rows: [{ user_id: '42', event: 'click', at: 1700000000000 }] }), {
      columns: [
        { name: 'user_id', type: 'int64' },
        { name: 'event', type: 'string' },
        { name: 'at', type: 'timestamp' },
      ],
      bucketKey: ['user_id'],
      buckets: 4,
      spreadStart: 0,
    });
  });
});
