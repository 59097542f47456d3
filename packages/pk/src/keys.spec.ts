import { InvalidArgumentError } from '@mink/protocol';
import type { Row } from '@mink/records';

import { keyColumnOrder, keyText, prefixBytes, primaryKeyBytes } from './keys';

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');

/** A small seeded generator (mulberry32), so a failing random case replays from its seed. */
function generator(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A random canonical value of one of the key column types, drawn from small domains so keys collide often. */
function randomValue(random: () => number): unknown {
  const pick = Math.floor(random() * 6);
  const small = Math.floor(random() * 4);
  switch (pick) {
    case 0:
      return ['', 'a', 'ab', 'b'][small];
    case 1:
      return BigInt(small - 2);
    case 2:
      return small - 1;
    case 3:
      return small % 2 === 0;
    case 4:
      return new Uint8Array(Array.from({ length: small }, (_, index) => index));
    default:
      return 1_700_000_000_000 + small;
  }
}

describe('keyColumnOrder', () => {
  test.each<[string, string[], string[], string[]]>([
    ['the bucket key defaults to the primary key', ['a', 'b'], [], ['a', 'b']],
    ['a bucket key that is a prefix keeps the order', ['a', 'b', 'c'], ['a'], ['a', 'b', 'c']],
    ['a bucket key that is not a prefix moves first', ['a', 'b', 'c'], ['c'], ['c', 'a', 'b']],
    ['the bucket key order wins over the primary key order', ['a', 'b', 'c'], ['c', 'a'], ['c', 'a', 'b']],
  ])('%s', (_case, primaryKey, bucketKey, expected) => {
    // Proves the bucket-key columns lead the key, so a bucket-key prefix lookup is a byte prefix scan.
    expect(keyColumnOrder(primaryKey, bucketKey)).toEqual(expected);
  });

  test('a bucket key column outside the primary key is a bug', () => {
    // Proves a table the schema should have rejected fails loudly rather than producing keys without it.
    expect(() => keyColumnOrder(['a'], ['b'])).toThrow("bucket key column 'b' is not part of the primary key");
  });
});

describe('primaryKeyBytes', () => {
  test.each<[string, Row, string[], string]>([
    ['an int64', { id: 1n }, ['id'], '020100000031'],
    ['a string then an int64', { user: 'alice', day: 19700n }, ['user', 'day'], '0305000000616c69636502050000003139373030'],
    ["('a', 'bc')", { a: 'a', b: 'bc' }, ['a', 'b'], '03010000006103020000006263'],
    ["('ab', 'c')", { a: 'ab', b: 'c' }, ['a', 'b'], '03020000006162030100000063'],
  ])('encodes %s as the bucket-key encoding of @mink/records', (_case, row, keyColumns, expected) => {
    // Proves the key encoding is the documented one, so tablets written today read back tomorrow.
    expect(hex(primaryKeyBytes(row, keyColumns))).toBe(expected);
  });

  test.each<[string, Row, string]>([
    ['a null key value', { id: null }, "primary key column 'id' must have a value"],
    ['a missing key value', {}, "primary key column 'id' must have a value"],
    ['a key longer than the limit', { id: 'x'.repeat(2_000) }, 'primary key encodes to 2005 bytes, more than the 1024 allowed'],
  ])('rejects %s', (_case, row, message) => {
    // Proves a key that could not be stored is refused as a bad request.
    expect(() => primaryKeyBytes(row, ['id'])).toThrow(InvalidArgumentError);
    expect(() => primaryKeyBytes(row, ['id'])).toThrow(message);
  });

  test('for random rows, a bucket-key prefix is a byte prefix of the key and distinct keys get distinct bytes', () => {
    // Proves the two properties prefix lookup and the tablet rely on, over many random keys of mixed types.
    const seed = 20_240_501;
    const random = generator(seed);
    const primaryKey = ['p', 'q', 'r', 's'];
    const bytesByKey = new Map<string, string>();
    for (let round = 0; round < 2_000; round++) {
      const bucketKeyLength = 1 + Math.floor(random() * primaryKey.length);
      const bucketKey = primaryKey.slice().sort(() => random() - 0.5).slice(0, bucketKeyLength);
      const keyColumns = keyColumnOrder(primaryKey, bucketKey);
      const row: Row = Object.fromEntries(primaryKey.map((column) => [column, randomValue(random)]));
      const key = primaryKeyBytes(row, keyColumns);
      for (let length = 1; length <= bucketKeyLength; length++) {
        const columns = keyColumns.slice(0, length);
        const prefix = prefixBytes(columns.map((column) => row[column]), columns);
        expect({ seed, round, prefix: hex(key.subarray(0, prefix.byteLength)) }).toEqual({ seed, round, prefix: hex(prefix) });
      }
      // Identity of a key: its values in one fixed column order, with type names so 1 and 1n stay apart.
      const identity = JSON.stringify(primaryKey.map((column) => identityOf(row[column])));
      const text = keyText(primaryKeyBytes(row, primaryKey));
      const earlier = bytesByKey.get(text);
      if (earlier !== undefined) expect({ seed, round, identity }).toEqual({ seed, round, identity: earlier });
      bytesByKey.set(text, identity);
    }
    // The domains are small, so the loop above must have met repeated keys as well as distinct ones.
    expect(bytesByKey.size).toBeGreaterThan(100);
    expect(bytesByKey.size).toBeLessThan(2_000);

    function identityOf(value: unknown): string {
      // int64 (bigint) and int32 (number) values of one number share a key, as they share a bucket.
      if (typeof value === 'bigint' || typeof value === 'number') return `number:${value}`;
      if (value instanceof Uint8Array) return `bytes:${hex(value)}`;
      return `${typeof value}:${String(value)}`;
    }
  });
});

describe('prefixBytes', () => {
  test.each<[string, unknown[], string[], string]>([
    ['fewer values than columns', ['a'], ['a', 'b'], 'a key prefix of 2 columns needs 2 values, got 1'],
    ['a null value', [null], ['a'], "key prefix column 'a' must have a value"],
  ])('rejects %s', (_case, values, columns, message) => {
    // Proves a malformed prefix lookup is refused instead of silently matching nothing.
    expect(() => prefixBytes(values, columns)).toThrow(new InvalidArgumentError(message));
  });
});
