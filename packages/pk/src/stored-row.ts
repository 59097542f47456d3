/**
 * The value a PK bucket's KV tablet stores for a key: the whole row as a JSON array of its column values in
 * table order, each in the JSON form of the HTTP API (see @mink/records json.ts). JSON keeps lookups cheap
 * (the stored form is nearly the answer) and every value exact (int64 as decimal text, bytes as base64).
 */
import type { ColumnSpec } from '@mink/meta';
import { type Row, fieldOf, setField, validateRows } from '@mink/records';

/**
 * The stored bytes of a canonical `row` holding every column of the table: the text
 * `JSON.stringify(columns.map((column) => rowToJson(columns, row)[column.name] ?? null))` would give, written
 * value by value without the intermediate JSON object and array (every put stores one, so this is on the
 * write path of every row). A value that is not canonical for its column is a bug of the caller and throws
 * a plain Error, as rowToJson does.
 */
export function encodeStoredRow(columns: readonly ColumnSpec[], row: Row): Uint8Array {
  let text = '[';
  for (let index = 0; index < columns.length; index++) {
    const column = columns[index]!;
    if (index > 0) text += ',';
    text += storedValueText(column, fieldOf(row, column.name));
  }
  return Buffer.from(`${text}]`, 'utf8');
}

/** One value of a stored row as JSON text, in the JSON form of the API (see @mink/records json.ts). */
function storedValueText(column: ColumnSpec, value: unknown): string {
  if (value === null || value === undefined) return 'null';
  switch (column.type) {
    case 'int64':
      if (typeof value !== 'bigint') throw new Error(`column '${column.name}': int64 wants a bigint, got ${typeof value}`);
      return `"${value.toString()}"`;
    case 'bytes':
      if (!(value instanceof Uint8Array)) throw new Error(`column '${column.name}': bytes wants a Uint8Array, got ${typeof value}`);
      return `"${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64')}"`;
    case 'string':
      // Most strings need no escape: quoted as they are, they are what JSON.stringify writes (surrogates,
      // paired or not, take JSON.stringify's way too).
      if (typeof value === 'string' && !NEEDS_ESCAPE.test(value)) return `"${value}"`;
      return JSON.stringify(value);
    default:
      return JSON.stringify(value);
  }
}

/** Characters JSON.stringify writes escaped (quote, backslash, control characters) or may (surrogates). */
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

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
