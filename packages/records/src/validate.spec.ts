import type { ColumnSpec } from '@mink/meta';
import { InvalidArgumentError } from '@mink/protocol';

import { validateRows } from './validate';
import { EVERY_TYPE_COLUMNS } from './every-type.fixture';

const COLUMNS = EVERY_TYPE_COLUMNS;

/** Validates one row holding only `column` and returns that column's canonical value. */
function canonicalOf(column: string, value: unknown): unknown {
  return validateRows(COLUMNS, [{ [column]: value }])[0][column];
}

/** The message of the InvalidArgumentError that `action` throws; fails the test if it throws anything else. */
function messageOf(action: () => unknown): string {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidArgumentError);
    return (error as Error).message;
  }
  throw new Error('expected an InvalidArgumentError, but nothing was thrown');
}

describe('validateRows', () => {
  test.each<[string, unknown, unknown]>([
    ['flag', true, true],
    ['flag', false, false],
    ['count', 0, 0],
    ['count', -0, 0],
    ['count', 2147483647, 2147483647],
    ['count', -2147483648, -2147483648],
    ['id', '-9223372036854775808', -9223372036854775808n],
    ['id', '9223372036854775807', 9223372036854775807n],
    ['id', '9007199254740993', 9007199254740993n],
    ['id', '007', 7n],
    ['id', '-0', 0n],
    ['id', 9007199254740991, 9007199254740991n],
    ['id', -9007199254740991, -9007199254740991n],
    ['id', 5, 5n],
    ['id', 5n, 5n],
    ['score', 1.5, 1.5],
    ['score', -0, -0],
    ['score', Number.MAX_VALUE, Number.MAX_VALUE],
    ['name', '', ''],
    ['name', 'grüße 👋', 'grüße 👋'],
    ['payload', '', new Uint8Array([])],
    ['payload', 'AP8=', new Uint8Array([0, 255])],
    ['payload', 'AP8', new Uint8Array([0, 255])],
    ['payload', '-_8', new Uint8Array([251, 255])],
    ['payload', '+/8=', new Uint8Array([251, 255])],
    ['payload', new Uint8Array([1, 2]), new Uint8Array([1, 2])],
    ['at', 1700000000000, 1700000000000],
    ['at', -1, -1],
    ['at', '1700000000000', 1700000000000],
    ['at', 9007199254740991, 9007199254740991],
  ])('accepts column %s = %p as %p', (column, value, canonical) => {
    // Proves each accepted JSON form (and the canonical form) of every type becomes the documented canonical value.
    const result = canonicalOf(column, value);
    expect(result).toEqual(canonical);
    expect(Object.is(result, canonical) || typeof canonical === 'object').toBe(true);
  });

  test.each<[string, unknown, string]>([
    ['flag', 'true', `row 0, column 'flag': expected boolean (true or false), got "true"`],
    ['flag', 1, `row 0, column 'flag': expected boolean (true or false), got 1`],
    ['count', 2147483648, `row 0, column 'count': expected int32 (an integer from -2147483648 to 2147483647), got 2147483648`],
    ['count', -2147483649, `expected int32 (an integer from -2147483648 to 2147483647), got -2147483649`],
    ['count', 1.5, 'expected int32 (an integer from -2147483648 to 2147483647), got 1.5'],
    ['count', '1', 'expected int32 (an integer from -2147483648 to 2147483647), got "1"'],
    ['id', 'abc', `row 0, column 'id': expected int64 (a safe integer number or a decimal string), got "abc"`],
    ['id', '', 'expected int64 (a safe integer number or a decimal string), got ""'],
    ['id', '+5', 'expected int64 (a safe integer number or a decimal string), got "+5"'],
    ['id', ' 5', 'expected int64 (a safe integer number or a decimal string), got " 5"'],
    ['id', '1e3', 'expected int64 (a safe integer number or a decimal string), got "1e3"'],
    ['id', '9223372036854775808', 'int64 out of range (-9223372036854775808 to 9223372036854775807), got "9223372036854775808"'],
    ['id', '-9223372036854775809', 'int64 out of range (-9223372036854775808 to 9223372036854775807), got "-9223372036854775809"'],
    ['id', '123456789012345678901234567890', 'int64 out of range'],
    ['id', 2 ** 63, 'number 9223372036854776000 is not a safe integer'],
    ['id', 9007199254740992, 'number 9007199254740992 is not a safe integer and may have lost precision'],
    ['id', 1.5, 'expected int64 (a safe integer number or a decimal string), got 1.5'],
    ['id', true, 'expected int64 (a safe integer number or a decimal string), got true'],
    ['id', 2n ** 63n, 'int64 out of range (-9223372036854775808 to 9223372036854775807), got 9223372036854775808n'],
    ['score', Number.NaN, `row 0, column 'score': expected float64 (a finite number), got NaN`],
    ['score', Number.POSITIVE_INFINITY, 'expected float64 (a finite number), got Infinity'],
    ['score', 'NaN', 'expected float64 (a finite number), got "NaN"'],
    ['score', '1.5', 'expected float64 (a finite number), got "1.5"'],
    ['name', 5, `row 0, column 'name': expected string, got 5`],
    ['name', { text: 'a' }, 'expected string, got an object'],
    ['name', ['a'], 'expected string, got an array'],
    ['name', 'a\uD800b', 'expected string, got a string with an unpaired surrogate'],
    ['payload', 'not base64!', `row 0, column 'payload': expected bytes (a base64 string), got "not base64!"`],
    ['payload', 'A', 'expected bytes (a base64 string), got "A"'],
    ['payload', 'AP8==', 'expected bytes (a base64 string), got "AP8=="'],
    ['payload', 'A=B=', 'expected bytes (a base64 string)'],
    ['payload', [0, 255], 'expected bytes (a base64 string), got an array'],
    ['at', 1.5, `row 0, column 'at': expected timestamp (epoch milliseconds as a safe integer number or a decimal string), got 1.5`],
    ['at', 2 ** 53, 'expected timestamp (epoch milliseconds as a safe integer number or a decimal string), got 9007199254740992'],
    ['at', '9007199254740993', 'got "9007199254740993"'],
    ['at', '2024-01-01T00:00:00Z', 'got "2024-01-01T00:00:00Z"'],
  ])('rejects column %s = %p', (column, value, fragment) => {
    // Proves every type rejects wrong JSON types and out-of-range values with a message naming row, column and value.
    expect(messageOf(() => canonicalOf(column, value))).toContain(fragment);
  });

  test('a long rejected string is shortened in the message', () => {
    // Proves a huge bad value does not end up whole in the error message (and so in logs).
    const message = messageOf(() => canonicalOf('id', 'x'.repeat(10_000)));
    expect(message).toBe(`row 0, column 'id': expected int64 (a safe integer number or a decimal string), got "${'x'.repeat(64)}…"`);
  });

  test.each<[string, unknown, string]>([
    ['rows not an array', { id: 1 }, 'rows must be an array, got an object'],
    ['rows missing', undefined, 'rows must be an array, got nothing'],
    ['rows a string', 'rows', 'rows must be an array, got "rows"'],
    ['rows empty', [], 'rows must not be empty'],
    ['a row that is null', [{ id: 1 }, null], 'row 1: expected an object, got null'],
    ['a row that is an array', [[1, 2]], 'row 0: expected an object, got an array'],
    ['a row that is a number', [{}, {}, 7], 'row 2: expected an object, got 7'],
    ['an unknown column', [{ id: 1, x: 2 }], "row 0: unknown column 'x'"],
    ['an inherited name as column', [{ toString: 'a' }], "row 0: unknown column 'toString'"],
    ['a __proto__ key', [JSON.parse('{"__proto__": {"id": 1}}')], "row 0: unknown column '__proto__'"],
    ['a bad value in a later row', [{ id: 1 }, { id: 2 }, { id: 3 }, { id: 'abc' }], `row 3, column 'id': expected int64`],
  ])('rejects %s', (_case, rows, expectedMessage) => {
    // Proves malformed request shapes are rejected with a message that says which row is wrong.
    expect(messageOf(() => validateRows(COLUMNS, rows))).toContain(expectedMessage);
  });

  test('returns every column in table order, with missing and null values as null', () => {
    // Proves the canonical row shape: one property per column in column order, absent and null both become null.
    const [row] = validateRows(COLUMNS, [{ name: 'a', id: '1', score: null }]);
    expect(Object.keys(row)).toEqual(COLUMNS.map((column) => column.name));
    expect(row).toEqual({ id: 1n, flag: null, count: null, score: null, name: 'a', payload: null, at: null });
  });

  test.each<[string, unknown[], string | null]>([
    ['present', [{ id: '1', name: 'a' }], null],
    ['missing', [{ id: '1', name: 'a' }, { name: 'b' }], "row 1, column 'id': a value is required, got nothing"],
    ['null', [{ id: null, name: 'a' }], "row 0, column 'id': a value is required, got null"],
    ['second required missing', [{ id: '1' }], "row 0, column 'name': a value is required, got nothing"],
  ])('required columns: %s', (_case, rows, expectedMessage) => {
    // Proves columns listed as required (e.g. the primary key) must hold a value in every row.
    const validate = (): unknown => validateRows(COLUMNS, rows, { required: ['id', 'name'] });
    if (expectedMessage === null) expect(validate()).toHaveLength(rows.length);
    else expect(messageOf(validate)).toBe(expectedMessage);
  });

  test('allowedColumns limits rows to the named columns, in table order', () => {
    // Proves a partial put or a key list yields rows holding exactly the allowed columns.
    const rows = validateRows(COLUMNS, [{ name: 'a', id: 1 }, { id: 2 }], { required: ['id'], allowedColumns: ['name', 'id'] });
    expect(rows).toEqual([
      { id: 1n, name: 'a' },
      { id: 2n, name: null },
    ]);
    expect(Object.keys(rows[0])).toEqual(['id', 'name']);
  });

  test.each<[string, unknown[], { required?: string[]; allowedColumns?: string[] }, string]>([
    ['a table column outside allowedColumns', [{ id: 1, score: 2 }], { allowedColumns: ['id'] }, "row 0: column 'score' is not among the request's columns"],
    ['an unknown column with allowedColumns', [{ id: 1, x: 2 }], { allowedColumns: ['id'] }, "row 0: unknown column 'x'"],
    ['an unknown name in allowedColumns', [{ id: 1 }], { allowedColumns: ['id', 'x'] }, "unknown column 'x' in the request's columns"],
    ['a repeated name in allowedColumns', [{ id: 1 }], { allowedColumns: ['id', 'id'] }, "column 'id' is listed twice in the request's columns"],
    ['a required column outside allowedColumns', [{ name: 'a' }], { required: ['id'], allowedColumns: ['name'] }, "column 'id' is required and must be among the request's columns"],
  ])('rejects %s', (_case, rows, options, expectedMessage) => {
    // Proves the request's own column list is checked against the table and against the required columns.
    expect(messageOf(() => validateRows(COLUMNS, rows, options))).toBe(expectedMessage);
  });

  test('a required column that the table does not have is a bug of the caller, not of the request', () => {
    // Proves a wrong `required` list fails loudly as a plain Error rather than as a 400 to the client.
    expect(() => validateRows(COLUMNS, [{ id: 1 }], { required: ['nope'] })).toThrow(new Error("required column 'nope' is not a column of the table"));
    expect(() => validateRows(COLUMNS, [{ id: 1 }], { required: ['nope'] })).not.toThrow(InvalidArgumentError);
  });

  test('columns named like Object.prototype members read only own properties', () => {
    // Proves a column called `constructor` or `__proto__` is null when the row does not set it, and kept when it does.
    const columns: ColumnSpec[] = [
      { name: 'constructor', type: 'string' },
      { name: '__proto__', type: 'int32' },
    ];
    const [absent, present] = validateRows(columns, [{}, JSON.parse('{"constructor": "c", "__proto__": 7}')]);
    expect(absent.constructor).toBeNull();
    expect(Object.getOwnPropertyDescriptor(absent, '__proto__')?.value).toBeNull();
    expect(present.constructor).toBe('c');
    expect(Object.getOwnPropertyDescriptor(present, '__proto__')?.value).toBe(7);
    expect(Object.getPrototypeOf(present)).toBe(Object.prototype);
  });

  test('validating canonical rows again returns equal rows', () => {
    // Proves canonical values are accepted as input, so internal callers may validate rows they already hold.
    const once = validateRows(COLUMNS, [{ id: '-9223372036854775808', flag: true, count: 3, score: 0.25, name: 'n', payload: 'AQI=', at: 12 }]);
    expect(validateRows(COLUMNS, once)).toEqual(once);
  });
});
