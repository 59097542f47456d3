/**
 * Validation of rows sent by clients (the body of an append, a put or the keys of a lookup or delete)
 * against a table's columns, and their conversion into canonical rows (see row.ts).
 *
 * The accepted JSON forms follow the protobuf JSON mapping (docs/architecture.md §8.1): an `int64` is a decimal string or
 * a number that is a safe integer, so no value loses precision on its way through JSON; a `timestamp` is
 * epoch milliseconds as a safe integer or a decimal string; `bytes` are base64. The canonical forms are
 * accepted as well (a bigint for `int64`, a Uint8Array for `bytes`), so validating canonical rows again
 * returns equal rows. Bounds on the number of rows and request bytes are the gateway's.
 */
import type { ColumnSpec, ColumnType } from '@mink/meta';
import { InvalidArgumentError } from '@mink/protocol';

import { INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, type Row, fieldOf, setField } from './row';

export interface ValidateOptions {
  /** Columns that must hold a value in every row, e.g. the primary key. Must be columns of the table. */
  required?: string[];
  /**
   * Columns a row may hold, e.g. the `columns` of a partial put or the primary key of a lookup. Rows
   * then hold exactly these columns; without it they hold every column of the table.
   */
  allowedColumns?: string[];
}

/**
 * Checks every row and returns them in canonical form, in order, each with one property per allowed
 * column in the table's column order (a missing or null value becomes null). Throws InvalidArgumentError
 * naming the first bad row and column; nothing is returned unless every row is valid.
 */
export function validateRows(columns: ColumnSpec[], rows: unknown, options: ValidateOptions = {}): Row[] {
  const allowed = allowedColumnsOf(columns, options);
  const required = new Set(options.required ?? []);
  for (const name of required) {
    // The caller derives required columns from the table (its primary key), so a stranger is a bug.
    if (!columns.some((column) => column.name === name)) throw new Error(`required column '${name}' is not a column of the table`);
    if (!allowed.some((column) => column.name === name)) {
      throw new InvalidArgumentError(`column '${name}' is required and must be among the request's columns`);
    }
  }
  if (!Array.isArray(rows)) throw new InvalidArgumentError(`rows must be an array, got ${describeValue(rows)}`);
  if (rows.length === 0) throw new InvalidArgumentError('rows must not be empty');

  const allowedNames = new Set(allowed.map((column) => column.name));
  const tableNames = new Set(columns.map((column) => column.name));
  const result: Row[] = new Array(rows.length);
  for (let index = 0; index < rows.length; index++) {
    const input: unknown = rows[index];
    if (typeof input !== 'object' || input === null || Array.isArray(input)) {
      throw new InvalidArgumentError(`row ${index}: expected an object, got ${describeValue(input)}`);
    }
    const record = input as Row;
    for (const key of Object.keys(record)) {
      if (allowedNames.has(key)) continue;
      if (tableNames.has(key)) throw new InvalidArgumentError(`row ${index}: column '${key}' is not among the request's columns`);
      throw new InvalidArgumentError(`row ${index}: unknown column '${key}'`);
    }
    const row: Row = {};
    for (const column of allowed) {
      const value = fieldOf(record, column.name);
      if (value === undefined || value === null) {
        if (required.has(column.name)) {
          throw new InvalidArgumentError(`row ${index}, column '${column.name}': a value is required, got ${describeValue(value)}`);
        }
        setField(row, column.name, null);
        continue;
      }
      const canonical = canonicalValue(column.type, value);
      if (canonical instanceof Rejection) throw new InvalidArgumentError(`row ${index}, column '${column.name}': ${canonical.reason}`);
      setField(row, column.name, canonical);
    }
    result[index] = row;
  }
  return result;
}

/** The columns rows may hold, in the table's order; checks the request's list of column names. */
function allowedColumnsOf(columns: ColumnSpec[], options: ValidateOptions): ColumnSpec[] {
  if (options.allowedColumns === undefined) return columns;
  const names = new Set<string>();
  for (const name of options.allowedColumns) {
    if (!columns.some((column) => column.name === name)) throw new InvalidArgumentError(`unknown column '${name}' in the request's columns`);
    if (names.has(name)) throw new InvalidArgumentError(`column '${name}' is listed twice in the request's columns`);
    names.add(name);
  }
  return columns.filter((column) => names.has(column.name));
}

/** Why a value was rejected. A class rather than a string so a valid `string` value is never mistaken for it. */
class Rejection {
  constructor(readonly reason: string) {}
}

/** The canonical form of a non-null `value` for a column of `type`, or a Rejection saying what was expected. */
function canonicalValue(type: ColumnType, value: unknown): unknown {
  switch (type) {
    case 'boolean':
      return typeof value === 'boolean' ? value : expected('boolean (true or false)', value);
    case 'int32':
      if (typeof value === 'number' && Number.isInteger(value) && value >= INT32_MIN && value <= INT32_MAX) {
        // `| 0` turns -0 into 0, which is what an Int32 column stores anyway.
        return value | 0;
      }
      return expected(`int32 (an integer from ${INT32_MIN} to ${INT32_MAX})`, value);
    case 'int64':
      return int64Of(value);
    case 'float64':
      return typeof value === 'number' && Number.isFinite(value) ? value : expected('float64 (a finite number)', value);
    case 'string':
      if (typeof value !== 'string') return expected('string', value);
      // UTF-8 cannot hold an unpaired surrogate, so such a string would not read back as it was written.
      if (!isWellFormed(value)) return new Rejection('expected string, got a string with an unpaired surrogate (not valid Unicode)');
      return value;
    case 'bytes':
      return bytesOf(value);
    case 'timestamp':
      return timestampOf(value);
  }
}

const INT64_EXPECTED = 'int64 (a safe integer number or a decimal string)';
const TIMESTAMP_EXPECTED = 'timestamp (epoch milliseconds as a safe integer number or a decimal string)';

/**
 * An optional minus sign, any leading zeros, then at most 19 significant digits. Bounding the digits
 * keeps a very long digit string from reaching BigInt, and 19 digits cover the whole int64 range.
 */
const DECIMAL_PATTERN = /^-?0*[0-9]{1,19}$/;

function int64Of(value: unknown): bigint | Rejection {
  if (typeof value === 'bigint') {
    return value >= INT64_MIN && value <= INT64_MAX ? value : outOfInt64Range(`${value}n`);
  }
  if (typeof value === 'number') {
    if (Number.isSafeInteger(value)) return BigInt(value);
    if (Number.isInteger(value)) {
      return new Rejection(`number ${value} is not a safe integer and may have lost precision; send int64 values beyond 2^53 as decimal strings`);
    }
    return expected(INT64_EXPECTED, value);
  }
  if (typeof value === 'string') {
    if (!DECIMAL_PATTERN.test(value)) {
      return /^-?[0-9]+$/.test(value) ? outOfInt64Range(JSON.stringify(value)) : expected(INT64_EXPECTED, value);
    }
    // BigInt reads the same text, leading zeros included, so the pattern is the only gate.
    const parsed = BigInt(value);
    return parsed >= INT64_MIN && parsed <= INT64_MAX ? parsed : outOfInt64Range(JSON.stringify(value));
  }
  return expected(INT64_EXPECTED, value);
}

function outOfInt64Range(shown: string): Rejection {
  return new Rejection(`int64 out of range (${INT64_MIN} to ${INT64_MAX}), got ${shown}`);
}

function timestampOf(value: unknown): number | Rejection {
  if (typeof value === 'number') {
    // `+ 0` turns -0 into 0 so that equal instants have one canonical form.
    return Number.isSafeInteger(value) ? value + 0 : expected(TIMESTAMP_EXPECTED, value);
  }
  if (typeof value === 'string' && DECIMAL_PATTERN.test(value)) {
    const parsed = Number(value);
    if (Number.isSafeInteger(parsed)) return parsed + 0;
  }
  return expected(TIMESTAMP_EXPECTED, value);
}

/**
 * Standard or URL-safe base64, with or without padding, as the protobuf JSON mapping accepts. Node's
 * decoder skips characters outside the alphabet silently, so the text is checked before it is decoded.
 */
const BASE64_PATTERN = /^[A-Za-z0-9+/_-]*={0,2}$/;

function bytesOf(value: unknown): Uint8Array | Rejection {
  if (value instanceof Uint8Array) return value;
  if (typeof value === 'string' && BASE64_PATTERN.test(value)) {
    const unpadded = value.replace(/=+$/, '');
    const paddingIsValid = unpadded.length === value.length || value.length % 4 === 0;
    if (unpadded.length % 4 !== 1 && paddingIsValid) {
      const decoded = Buffer.from(unpadded, 'base64');
      return new Uint8Array(decoded.buffer, decoded.byteOffset, decoded.byteLength);
    }
  }
  return expected('bytes (a base64 string)', value);
}

function expected(what: string, value: unknown): Rejection {
  return new Rejection(`expected ${what}, got ${describeValue(value)}`);
}

/** Longest quoted string in an error message, so a huge value does not end up in logs whole. */
const QUOTED_LENGTH_MAX = 64;

/** A short rendering of a value for an error message. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (typeof value === 'string') {
    const shown = value.length > QUOTED_LENGTH_MAX ? `${value.slice(0, QUOTED_LENGTH_MAX)}…` : value;
    return JSON.stringify(shown);
  }
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (Array.isArray(value)) return 'an array';
  if (value instanceof Uint8Array) return 'a byte array';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}

/** `String.prototype.isWellFormed` (Node 20) is newer than the ES2022 library the project compiles against. */
function isWellFormed(value: string): boolean {
  return (value as string & { isWellFormed(): boolean }).isWellFormed();
}
