import type { ColumnSpec } from '@mink/meta';

import { type Row, rowToJson, validateRows } from '@mink/records';

import { decodeStoredRow, encodeStoredRow, storedRowJson } from './stored-row';

const COLUMNS: ColumnSpec[] = [
  { name: 'id', type: 'int64' },
  { name: 'name', type: 'string' },
  { name: 'blob', type: 'bytes' },
  { name: 'at', type: 'timestamp' },
  { name: 'ok', type: 'boolean' },
];

const EVERY_TYPE: ColumnSpec[] = [
  { name: 'id', type: 'int64' },
  { name: 'flag', type: 'boolean' },
  { name: 'count', type: 'int32' },
  { name: 'score', type: 'float64' },
  { name: 'name', type: 'string' },
  { name: 'payload', type: 'bytes' },
  { name: 'at', type: 'timestamp' },
];

const EDGE_ROWS: Row[] = [
  { id: -(2n ** 63n), flag: true, count: -(2 ** 31), score: -0, name: '', payload: new Uint8Array(0), at: -1 },
  { id: 2n ** 63n - 1n, flag: false, count: 2 ** 31 - 1, score: Number.MAX_VALUE, name: 'grüße 👋 "quoted" \\ back\nslash \u0000 \u2028', payload: Uint8Array.from({ length: 256 }, (_, index) => index), at: 9007199254740991 },
  { id: null, flag: null, count: null, score: null, name: null, payload: null, at: null },
  { id: 0n, flag: true, count: 0, score: 1e21, name: 'tab\t and \u001f', payload: new Uint8Array([0]), at: 0 },
  { id: 5n, score: 5e-324 },
];

function randomRow(seed: number): Row {
  const pick = (value: unknown) => ((seed * 2654435761) >>> (seed % 7)) % 3 === 0 ? null : value;
  return {
    id: pick(BigInt(seed) * 7_919_000_003n - 10n ** 15n),
    flag: pick(seed % 2 === 0),
    count: pick((seed * 40_503) % 2 ** 31),
    score: pick(Math.sin(seed) * 10 ** (seed % 30)),
    name: pick(String.fromCharCode(...Array.from({ length: seed % 13 }, (_, index) => (seed * 31 + index * 977) % 0xd7ff))),
    payload: pick(Uint8Array.from({ length: seed % 9 }, (_, index) => (seed + index * 13) % 256)),
    at: pick(seed * 1_000_003),
  };
}

describe('stored rows', () => {
  const row = { id: 9_007_199_254_740_993n, name: 'ä', blob: new Uint8Array([0, 255]), at: 1_700_000_000_000, ok: null };

  it('round-trips a canonical row exactly, including int64 beyond 2^53 and bytes', () => {
    expect(decodeStoredRow(COLUMNS, encodeStoredRow(COLUMNS, row))).toEqual(row);
  });

  it('answers lookups in the JSON form of the API, projected in the projection order', () => {
    const stored = encodeStoredRow(COLUMNS, row);
    expect(storedRowJson(COLUMNS, stored)).toEqual({ id: '9007199254740993', name: 'ä', blob: 'AP8=', at: 1_700_000_000_000, ok: null });
    expect(storedRowJson(COLUMNS, stored, ['name', 'id'])).toEqual({ name: 'ä', id: '9007199254740993' });
    expect(Object.keys(storedRowJson(COLUMNS, stored, ['name', 'id']))).toEqual(['name', 'id']);
  });

  it.each([
    ['edge values of every type and nulls', EDGE_ROWS],
    ['random rows', Array.from({ length: 200 }, (_, index) => randomRow(index))],
  ])('writes the bytes the JSON of the row as an array gives: %s', (_name, rows) => {
    // Proves the direct writer stores what JSON.stringify of rowToJson's values stored before it (stored
    // rows in tablets and snapshots written by either read the same), escapes and unicode included.
    for (const each of rows) {
      const json = rowToJson(EVERY_TYPE, each);
      const expected = JSON.stringify(EVERY_TYPE.map((column) => json[column.name] ?? null));
      expect(Buffer.from(encodeStoredRow(EVERY_TYPE, each)).toString('utf8')).toBe(expected);
      // Read back as the JSON it is (so -0 reads as 0, as it always has).
      expect(decodeStoredRow(EVERY_TYPE, encodeStoredRow(EVERY_TYPE, each))).toEqual(validateRows(EVERY_TYPE, [JSON.parse(JSON.stringify(json)) as Row])[0]);
    }
  });

  it('throws a plain Error for a value that is not canonical', () => {
    expect(() => encodeStoredRow(COLUMNS, { ...row, id: 1 })).toThrow("column 'id': int64 wants a bigint, got number");
    expect(() => encodeStoredRow(COLUMNS, { ...row, blob: 'AP8=' })).toThrow("column 'blob': bytes wants a Uint8Array, got string");
  });

  it('refuses bytes that do not hold one value per column', () => {
    expect(() => storedRowJson(COLUMNS, Buffer.from('[1,2]'))).toThrow('holds 2 values for a table of 5 columns');
  });
});
