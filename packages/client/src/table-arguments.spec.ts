import { LIMITS } from '@mink/config';
import { InvalidArgumentError, type TableRoute } from '@mink/protocol';

import {
  partialPutColumnsOf,
  prefixLimitOf,
  projectionOf,
  requireItems,
  requireKind,
  requirePrimaryKeyTable,
  requireProperPrefixBucketKey,
} from './table-arguments';

function route(overrides: Partial<TableRoute> = {}): TableRoute {
  return {
    table: 'orders',
    tableId: 7,
    kind: 'pk',
    columns: [
      { name: 'shop', type: 'string' },
      { name: 'id', type: 'int64' },
      { name: 'amount', type: 'float64' },
    ],
    primaryKey: ['shop', 'id'],
    bucketKey: ['shop'],
    buckets: 4,
    leaders: [null, null, null, null],
    ...overrides,
  };
}

/** The InvalidArgumentError `call` throws; fails the test when it throws anything else or nothing. */
function invalidArgumentOf(call: () => unknown): InvalidArgumentError {
  try {
    call();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidArgumentError);
    return error as InvalidArgumentError;
  }
  throw new Error('expected an InvalidArgumentError');
}

describe('requireKind', () => {
  it('tells a caller of a PK operation on a log table to append', () => {
    // Proves put/delete/lookup on a log table fail as InvalidArgument naming the table and the right call.
    expect(invalidArgumentOf(() => requireKind(route({ kind: 'log' }), 'pk')).message).toBe("table 'orders' is a log table: use append");
  });

  it('tells a caller of append on a PK table to put', () => {
    // Proves append on a PK table fails as InvalidArgument naming the table and the right call.
    expect(invalidArgumentOf(() => requireKind(route(), 'log')).message).toBe("table 'orders' is a primary-key table: use put");
  });

  it('accepts the matching kind', () => {
    // Proves the check passes when the call fits the table.
    expect(() => requireKind(route(), 'pk')).not.toThrow();
    expect(() => requireKind(route({ kind: 'log' }), 'log')).not.toThrow();
  });

  it('treats a PK route without a bucket key as a broken view', () => {
    // Proves an empty bucket key on a PK table is an assertion (plain Error), not a caller's mistake.
    const error = (() => {
      try {
        requirePrimaryKeyTable(route({ bucketKey: [] }));
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(InvalidArgumentError);
  });
});

describe('partialPutColumnsOf', () => {
  test.each<[string, unknown, RegExp]>([
    ['a missing key column', ['shop', 'amount'], /must include every primary key column; missing 'id'/],
    ['every key column missing', ['amount'], /missing 'shop', 'id'/],
    ['an unknown column', ['shop', 'id', 'colour'], /unknown column 'colour'/],
    ['not an array', 'shop,id', /must be an array of column names/],
    ['a non-string entry', ['shop', 'id', 3], /must be an array of column names/],
  ])('refuses %s', (_case, columns, message) => {
    // Proves a bad partial put fails before any row is looked at, with a message saying what to fix.
    expect(invalidArgumentOf(() => partialPutColumnsOf(route(), columns)).message).toMatch(message);
  });

  it('accepts the key columns with others, in any order', () => {
    // Proves a valid column list is returned as given.
    expect(partialPutColumnsOf(route(), ['amount', 'id', 'shop'])).toEqual(['amount', 'id', 'shop']);
  });
});

describe('projectionOf', () => {
  test.each<[string, unknown, RegExp]>([
    ['an unknown column', ['colour'], /unknown column 'colour'/],
    ['a duplicate', ['id', 'id'], /listed twice/],
    ['not an array', 'id', /must be an array of column names/],
  ])('refuses %s', (_case, columns, message) => {
    // Proves a bad projection fails as InvalidArgument before anything is sent.
    expect(invalidArgumentOf(() => projectionOf(route(), columns)).message).toMatch(message);
  });

  it('accepts any order and an empty projection', () => {
    // Proves a projection is kept in the caller's order, and an empty one asks only which keys exist.
    expect(projectionOf(route(), ['amount', 'shop'])).toEqual(['amount', 'shop']);
    expect(projectionOf(route(), [])).toEqual([]);
  });
});

describe('requireItems', () => {
  test.each<[unknown, RegExp]>([
    [undefined, /keys must be an array, got nothing/],
    [{ id: 1 }, /keys must be an array, got an object/],
    [[], /keys must not be empty/],
  ])('refuses %p', (value, message) => {
    // Proves keys that are not a non-empty array are named as keys in the error.
    expect(invalidArgumentOf(() => requireItems(value, 'keys')).message).toMatch(message);
  });
});

describe('requireProperPrefixBucketKey', () => {
  it('refuses a table bucketed by its whole primary key', () => {
    // Proves prefix lookup is refused where a prefix would be a whole key.
    const error = invalidArgumentOf(() => requireProperPrefixBucketKey(route({ bucketKey: ['shop', 'id'] })));
    expect(error.message).toMatch(/prefix lookup needs a bucket key that is a proper prefix of the primary key; use lookup/);
  });

  it('refuses a bucket key that lists the whole key in another order', () => {
    // Proves the check is about which columns the bucket key holds, not their order.
    expect(() => requireProperPrefixBucketKey(route({ bucketKey: ['id', 'shop'] }))).toThrow(InvalidArgumentError);
  });

  it('accepts a bucket key that leaves key columns out', () => {
    // Proves the common case, a table bucketed by a leading key column, is accepted.
    expect(() => requireProperPrefixBucketKey(route())).not.toThrow();
  });
});

describe('prefixLimitOf', () => {
  test.each<[unknown]>([[0], [-1], [1.5], [LIMITS.prefixLookupRowsMax + 1], ['10'], [null]])('refuses %p', (limit) => {
    // Proves a limit outside [1, prefixLookupRowsMax] or not an integer is InvalidArgument.
    expect(invalidArgumentOf(() => prefixLimitOf(limit)).message).toMatch(/limit must be an integer from 1 to/);
  });

  test.each<[unknown, number | undefined]>([
    [undefined, undefined],
    [1, 1],
    [LIMITS.prefixLookupRowsMax, LIMITS.prefixLookupRowsMax],
  ])('accepts %p', (limit, expected) => {
    // Proves valid limits pass through and an absent one stays absent (the data node's default applies).
    expect(prefixLimitOf(limit)).toBe(expected);
  });
});
