import type { ColumnSpec } from '@mink/meta';

import fc from 'fast-check';

import { BucketKeyWriter, bucketKeyBytes, bucketOfRow, murmur3Hash32, splitByBucket } from './bucketing';
import type { Row } from './row';
import { validateRows } from './validate';

const text = (value: string): Uint8Array => new TextEncoder().encode(value);
const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');

describe('murmur3Hash32', () => {
  test.each<[string, Uint8Array, number, number]>([
    ['empty', new Uint8Array(0), 0, 0],
    ['empty, seed 1', new Uint8Array(0), 1, 0x514e28b7],
    ['empty, seed 0xffffffff', new Uint8Array(0), 0xffffffff, 0x81f16f39],
    ['four bytes', new Uint8Array([0x21, 0x43, 0x65, 0x87]), 0, 0xf55b516b],
    ['three bytes', new Uint8Array([0x21, 0x43, 0x65]), 0, 0x7e4a8634],
    ['two bytes', new Uint8Array([0x21, 0x43]), 0, 0xa0f7b07a],
    ['one byte', new Uint8Array([0x21]), 0, 0x72661cf4],
    ['four zero bytes', new Uint8Array(4), 0, 0x2362f9de],
    ['four 0xff bytes', new Uint8Array([0xff, 0xff, 0xff, 0xff]), 0, 0x76293b50],
    ['"aaaa"', text('aaaa'), 0x9747b28c, 0x5a97808a],
    ['"Hello, world!"', text('Hello, world!'), 0x9747b28c, 0x24884cba],
    ['the quick brown fox', text('The quick brown fox jumps over the lazy dog'), 0x9747b28c, 0x2fa826cd],
  ])('matches the published MurmurHash3 x86_32 vector: %s', (_case, bytes, seed, expected) => {
    // Proves the implementation is the reference algorithm, including every tail length and seed handling.
    expect(murmur3Hash32(bytes, seed)).toBe(expected);
  });

  it('hashes the first `length` bytes as it hashes them alone, whatever follows them', () => {
    // Proves a reused buffer (BucketKeyWriter) hashes its key only: every prefix length, every tail length.
    const bytes = text('The quick brown fox jumps over the lazy dog');
    for (let length = 0; length <= bytes.length; length++) {
      expect(murmur3Hash32(bytes, 0x9747b28c, length)).toBe(murmur3Hash32(bytes.slice(0, length), 0x9747b28c));
    }
  });
});

describe('bucketOfRow', () => {
  // GOLDEN VALUES. If one of these changes, rows of existing tables would move to other buckets: do not
  // update them, fix the change instead (see the top of bucketing.ts).
  test.each<[string, Row, string[], string, number, number, number]>([
    ['an int64', { id: 1n }, ['id'], '020100000031', 2766381652, 4, 596],
    ['the smallest int64', { id: -(2n ** 63n) }, ['id'], '02140000002d39323233333732303336383534373735383038', 3165109068, 4, 844],
    ['a string', { user: 'alice' }, ['user'], '0305000000616c696365', 1787091556, 4, 612],
    ['a string and an int64', { user: 'alice', day: 19700n }, ['user', 'day'], '0305000000616c69636502050000003139373030', 4159175350, 6, 694],
    ['null', { user: null }, ['user'], '00', 1364076727, 7, 183],
    ['bytes', { key: new Uint8Array([1, 2, 3]) }, ['key'], '0403000000010203', 3350829928, 0, 872],
    ['a boolean', { on: true }, ['on'], '0101', 1107827355, 3, 667],
    ["('a', 'bc')", { a: 'a', b: 'bc' }, ['a', 'b'], '03010000006103020000006263', 850872874, 2, 554],
    ["('ab', 'c')", { a: 'ab', b: 'c' }, ['a', 'b'], '03020000006162030100000063', 564111755, 3, 395],
  ])('golden value: %s', (_case, row, bucketKey, keyHex, hash, bucketOf8, bucketOf1024) => {
    // Proves the key encoding, the hash and the modulo stay exactly as they were when data was written.
    const bytes = bucketKeyBytes(row, bucketKey);
    expect(hex(bytes)).toBe(keyHex);
    expect(murmur3Hash32(bytes, 0)).toBe(hash);
    expect(bucketOfRow(row, bucketKey, 8)).toBe(bucketOf8);
    expect(bucketOfRow(row, bucketKey, 1024)).toBe(bucketOf1024);
  });

  test('an int64 sent as a number or as a string lands in one bucket', () => {
    // Proves clients may mix the two accepted JSON forms of an int64 key without splitting the key's rows.
    const columns: ColumnSpec[] = [{ name: 'id', type: 'int64' }];
    const [fromNumber, fromString] = validateRows(columns, [{ id: 123456789 }, { id: '123456789' }]);
    expect(bucketOfRow(fromNumber, ['id'], 1024)).toBe(bucketOfRow(fromString, ['id'], 1024));
    expect(bucketOfRow({ id: 5 }, ['id'], 1024)).toBe(bucketOfRow({ id: 5n }, ['id'], 1024));
  });

  test.each<[string, Row, Row]>([
    ['split points of strings', { a: 'a', b: 'bc' }, { a: 'ab', b: 'c' }],
    ['a string and a number', { a: '5' }, { a: 5n }],
    ['an empty string and null', { a: '' }, { a: null }],
    ['empty bytes and an empty string', { a: new Uint8Array(0) }, { a: '' }],
    ['false and null', { a: false }, { a: null }],
  ])('different keys encode differently: %s', (_case, left, right) => {
    // Proves the tags and length prefixes keep distinct keys apart before hashing.
    const bucketKey = Object.keys(left);
    expect(hex(bucketKeyBytes(left, bucketKey))).not.toBe(hex(bucketKeyBytes(right, bucketKey)));
  });

  test.each<[string, (index: number) => Row]>([
    ['sequential int64 keys', (index) => ({ key: BigInt(index) })],
    ['string keys', (index) => ({ key: `user-${index}` })],
    ['composite keys', (index) => ({ key: `tenant-${index % 10}`, day: BigInt(Math.floor(index / 10)) })],
  ])('spreads 10 000 %s evenly over 8 buckets', (_case, rowOf) => {
    // Proves every bucket gets within 20 % of the mean, so no bucket leader is a hot spot.
    const counts = new Array<number>(8).fill(0);
    for (let index = 0; index < 10_000; index++) {
      const row = rowOf(index);
      counts[bucketOfRow(row, Object.keys(row), 8)]++;
    }
    const mean = 10_000 / 8;
    for (const count of counts) {
      expect(count).toBeGreaterThanOrEqual(mean * 0.8);
      expect(count).toBeLessThanOrEqual(mean * 1.2);
    }
  });

  test('gives each key bytes of its own, which later keys do not overwrite', () => {
    // Proves the writer the bucketing functions share is copied out: a tablet keeps each key's bytes.
    const first = bucketKeyBytes({ user: 'alice' }, ['user']);
    const second = bucketKeyBytes({ user: 'bob', day: 1n }, ['user', 'day']);
    bucketOfRow({ user: 'x'.repeat(1_000) }, ['user'], 8);
    expect(hex(first)).toBe('0305000000616c696365');
    expect(hex(second)).toBe('0303000000626f62020100000031');
  });

  test('a missing key column hashes like null and an inherited name is not read', () => {
    // Proves bucket keys read only the row's own properties, as validation does.
    expect(bucketOfRow({}, ['toString'], 1024)).toBe(bucketOfRow({ toString: null }, ['toString'], 1024));
  });

  test.each<[string, () => unknown, string]>([
    ['zero buckets', () => bucketOfRow({ id: 1n }, ['id'], 0), 'buckets must be an integer from 1 to 1024, got 0'],
    ['fractional buckets', () => bucketOfRow({ id: 1n }, ['id'], 1.5), 'buckets must be an integer from 1 to 1024, got 1.5'],
    ['too many buckets', () => bucketOfRow({ id: 1n }, ['id'], 1025), 'buckets must be an integer from 1 to 1024, got 1025'],
    ['an empty bucket key', () => bucketOfRow({ id: 1n }, [], 8), 'a row without a bucket key has no bucket of its own'],
    ['a non-canonical value', () => bucketOfRow({ id: { n: 1 } }, ['id'], 8), "bucket key column 'id' holds a object"],
  ])('refuses %s', (_case, action, expectedMessage) => {
    // Proves caller bugs fail loudly rather than placing rows somewhere arbitrary.
    expect(action).toThrow(expectedMessage);
  });
});

describe('splitByBucket', () => {
  test('keeps the order of rows within each bucket and agrees with bucketOfRow', () => {
    // Proves a split batch appends each bucket's rows in the client's order, each where bucketOfRow says.
    const rows: Row[] = Array.from({ length: 200 }, (_, index) => ({ id: BigInt(index % 37), sequence: index }));
    const split = splitByBucket(rows, ['id'], 8, 0);
    let total = 0;
    for (const [bucket, bucketRows] of split) {
      total += bucketRows.length;
      expect(bucketRows.length).toBeGreaterThan(0);
      expect(bucketRows.every((row) => bucketOfRow(row, ['id'], 8) === bucket)).toBe(true);
      const sequences = bucketRows.map((row) => row.sequence as number);
      expect(sequences).toEqual([...sequences].sort((left, right) => left - right));
    }
    expect(total).toBe(rows.length);
    // Buckets appear in the order of their first row.
    const firstRowOfBucket = [...split.values()].map((bucketRows) => bucketRows[0].sequence as number);
    expect(firstRowOfBucket).toEqual([...firstRowOfBucket].sort((left, right) => left - right));
  });

  test.each<[number, number, number]>([
    [0, 8, 0],
    [3, 8, 3],
    [8, 8, 0],
    [13, 8, 5],
    [-1, 8, 7],
    [12345, 1, 0],
  ])('without a bucket key, spreadStart %i over %i buckets sends the whole batch to bucket %i', (spreadStart, buckets, expected) => {
    // Proves a log table without a bucket key keeps a batch together in the bucket the caller rotates to.
    const rows: Row[] = [{ sequence: 0 }, { sequence: 1 }, { sequence: 2 }];
    const split = splitByBucket(rows, [], buckets, spreadStart);
    expect([...split.entries()]).toEqual([[expected, rows]]);
  });

  test('the same rows split the same way every time, whatever spreadStart is', () => {
    // Proves rows with a bucket key ignore the spread rotation, so a key always lands in one bucket.
    const rows: Row[] = Array.from({ length: 50 }, (_, index) => ({ user: `user-${index}` }));
    expect(splitByBucket(rows, ['user'], 16, 3)).toEqual(splitByBucket(rows, ['user'], 16, 9));
  });

  test('no rows give no buckets', () => {
    // Proves an empty input creates no empty appends.
    expect(splitByBucket([], ['id'], 8, 0).size).toBe(0);
    expect(splitByBucket([], [], 8, 0).size).toBe(0);
  });
});

describe('BucketKeyWriter', () => {
  it('gives every key the bucket bucketOfRow gives it, values written as canonical values, strings as UTF-8 bytes or numbers as decimal text, through a growing buffer', () => {
    const value = fc.oneof(
      fc.constant(null),
      fc.boolean(),
      fc.integer(),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
      fc.string({ unit: 'grapheme', maxLength: 400 }),
      fc.uint8Array({ maxLength: 300 }),
    );
    const writer = new BucketKeyWriter();
    fc.assert(
      fc.property(fc.array(value, { minLength: 1, maxLength: 4 }), fc.integer({ min: 1, max: 1024 }), fc.boolean(), (values, buckets, asBytes) => {
        const bucketKey = values.map((_, index) => `k${index}`);
        const row: Row = Object.fromEntries(values.map((each, index) => [`k${index}`, each]));
        writer.reset();
        for (const each of values) {
          if (asBytes && typeof each === 'string') {
            const utf8 = Buffer.from(`«${each}»`, 'utf8');
            writer.utf8String(utf8, Buffer.byteLength('«'), utf8.length - Buffer.byteLength('»'));
          } else if (asBytes && (typeof each === 'bigint' || typeof each === 'number')) {
            // A number as the decimal text toString gives, inside other bytes (as in a JSON body).
            const text = Buffer.from(`:${each.toString()},`, 'latin1');
            writer.asciiNumber(text, 1, text.length - 1);
          } else writer.value(each);
        }
        expect(writer.bucket(buckets)).toBe(bucketOfRow(row, bucketKey, buckets));
      }),
      { numRuns: 2_000 },
    );
  });
});
