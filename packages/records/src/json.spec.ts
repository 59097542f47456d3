
import { rowToJson, rowsToJson } from './json';
import type { Row } from './row';
import { validateRows } from './validate';
import { EVERY_TYPE_COLUMNS } from './every-type.fixture';

const COLUMNS = EVERY_TYPE_COLUMNS;

describe('rowToJson', () => {
  test.each<[string, Row, Record<string, unknown>]>([
    [
      'every type',
      { id: -(2n ** 63n), flag: true, count: -7, score: 0.5, name: 'grüße', payload: new Uint8Array([0, 251, 255]), at: 1700000000000 },
      { id: '-9223372036854775808', flag: true, count: -7, score: 0.5, name: 'grüße', payload: 'APv/', at: 1700000000000 },
    ],
    ['an int64 beyond 2^53', { id: 2n ** 53n + 1n }, { id: '9007199254740993' }],
    ['nulls', { id: null, payload: null, at: null }, { id: null, payload: null, at: null }],
    ['empty bytes and string', { payload: new Uint8Array(0), name: '' }, { payload: '', name: '' }],
  ])('writes %s in the protobuf JSON mapping', (_case, row, expected) => {
    // Proves int64 becomes a decimal string, bytes standard base64, timestamps stay numbers and nulls stay null.
    expect(rowToJson(COLUMNS, row)).toEqual(expected);
  });

  test('keeps the order of a projected row', () => {
    // Proves a scan with `columns=name,id` answers objects whose keys follow that order.
    expect(Object.keys(rowToJson(COLUMNS, { name: 'a', id: 1n }))).toEqual(['name', 'id']);
  });

  test('validateRows is its inverse', () => {
    // Proves JSON out and JSON in agree, so a client can write back what it read.
    const rows = validateRows(COLUMNS, [
      { id: '9223372036854775807', flag: false, count: 2147483647, score: -1e-300, name: 'n', payload: 'AAEC', at: -5 },
      { id: 0 },
    ]);
    const json = rowsToJson(COLUMNS, rows);
    expect(JSON.parse(JSON.stringify(json))).toEqual(json);
    expect(validateRows(COLUMNS, json)).toEqual(rows);
  });

  test.each<[string, Row, string]>([
    ['a property that is not a column', { nope: 1 }, "row has a property 'nope' that is not a column of the table"],
    ['a number in an int64 column', { id: 5 }, "column 'id': int64 wants a bigint, got number"],
    ['a string in a bytes column', { payload: 'AA==' }, "column 'payload': bytes wants a Uint8Array, got string"],
  ])('refuses %s', (_case, row, expectedMessage) => {
    // Proves rows that are not canonical fail loudly instead of reaching a client in the wrong form.
    expect(() => rowToJson(COLUMNS, row)).toThrow(expectedMessage);
  });
});
