/**
 * The value a PK bucket's KV tablet stores for a key: the whole row as a JSON array of its column values in
 * table order, each in the JSON form of the HTTP API (see @mink/records json.ts). JSON keeps lookups cheap
 * (the stored form is nearly the answer) and every value exact (int64 as decimal text, bytes as base64).
 */
import type { ColumnSpec } from '@mink/meta';
import { type Row, fieldOf, rowToJson, setField, validateRows } from '@mink/records';

/** The stored bytes of a canonical `row` holding every column of the table. */
export function encodeStoredRow(columns: readonly ColumnSpec[], row: Row): Uint8Array {
  const json = rowToJson(columns as ColumnSpec[], row);
  return Buffer.from(JSON.stringify(columns.map((column) => fieldOf(json, column.name) ?? null)), 'utf8');
}

/** The JSON form of a stored row (as the HTTP API returns rows), holding `projection` or every column. */
export function storedRowJson(columns: readonly ColumnSpec[], bytes: Uint8Array, projection?: readonly string[]): Record<string, unknown> {
  const values = parseStored(columns, bytes);
  const row: Record<string, unknown> = {};
  if (projection === undefined) {
    columns.forEach((column, index) => setField(row, column.name, values[index] ?? null));
    return row;
  }
  for (const name of projection) {
    const index = columns.findIndex((column) => column.name === name);
    // Projections are checked against the table before any lookup, so a stranger here is a bug.
    if (index < 0) throw new Error(`projected column '${name}' is not a column of the table`);
    setField(row, name, values[index] ?? null);
  }
  return row;
}

/** The canonical row of stored bytes, as the merge of a put needs it. */
export function decodeStoredRow(columns: readonly ColumnSpec[], bytes: Uint8Array): Row {
  return validateRows(columns as ColumnSpec[], [storedRowJson(columns, bytes)])[0]!;
}

function parseStored(columns: readonly ColumnSpec[], bytes: Uint8Array): unknown[] {
  const values: unknown = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'));
  if (!Array.isArray(values) || values.length !== columns.length) {
    throw new Error(`a stored row holds ${Array.isArray(values) ? values.length : 'no'} values for a table of ${columns.length} columns`);
  }
  return values;
}
