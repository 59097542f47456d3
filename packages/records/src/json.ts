/**
 * Canonical rows (see row.ts) as JSON objects, following the protobuf JSON mapping (docs/architecture.md §8.1): an
 * `int64` becomes a decimal string so that no JSON parser rounds it, `bytes` become standard base64 with
 * padding, a `timestamp` stays a number of epoch milliseconds, and null stays null. validateRows is the
 * inverse: `validateRows(columns, [rowToJson(columns, row)])` returns a row equal to `row`.
 */
import type { ColumnSpec, ColumnType } from '@mink/meta';

import { type Row, setField } from './row';

/**
 * The JSON form of `row`, with the row's own properties in the row's order (a projected row keeps the
 * projection's order). A property that is not a column, or a value that is not canonical, is a bug of
 * the caller and throws a plain Error.
 */
export function rowToJson(columns: ColumnSpec[], row: Row): Record<string, unknown> {
  return jsonOf(columnTypesOf(columns), row);
}

/** rowToJson of each row, looking the column types up once for all of them (as a scan needs). */
export function rowsToJson(columns: ColumnSpec[], rows: Row[]): Record<string, unknown>[] {
  const types = columnTypesOf(columns);
  return rows.map((row) => jsonOf(types, row));
}

function columnTypesOf(columns: ColumnSpec[]): Map<string, ColumnType> {
  return new Map(columns.map((column) => [column.name, column.type]));
}

function jsonOf(types: Map<string, ColumnType>, row: Row): Record<string, unknown> {
  const json: Record<string, unknown> = {};
  for (const name of Object.keys(row)) {
    const type = types.get(name);
    if (type === undefined) throw new Error(`row has a property '${name}' that is not a column of the table`);
    setField(json, name, jsonValueOf(type, name, row[name]));
  }
  return json;
}

function jsonValueOf(type: ColumnType, name: string, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  switch (type) {
    case 'int64':
      if (typeof value !== 'bigint') throw new Error(`column '${name}': int64 wants a bigint, got ${typeof value}`);
      return value.toString();
    case 'bytes':
      if (!(value instanceof Uint8Array)) throw new Error(`column '${name}': bytes wants a Uint8Array, got ${typeof value}`);
      return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64');
    default:
      return value;
  }
}
