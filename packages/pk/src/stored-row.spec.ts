import type { ColumnSpec } from '@mink/meta';

import { decodeStoredRow, encodeStoredRow, storedRowJson } from './stored-row';

const COLUMNS: ColumnSpec[] = [
  { name: 'id', type: 'int64' },
  { name: 'name', type: 'string' },
  { name: 'blob', type: 'bytes' },
  { name: 'at', type: 'timestamp' },
  { name: 'ok', type: 'boolean' },
];

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

  it('refuses bytes that do not hold one value per column', () => {
    expect(() => storedRowJson(COLUMNS, Buffer.from('[1,2]'))).toThrow('holds 2 values for a table of 5 columns');
  });
});
