/**
 * Canonical rows (see row.ts) read from an Arrow IPC stream a client sends for a primary-key write: the
 * put's rows or the delete's keys travel as Arrow columns, like an append's batch, so neither side builds
 * or parses JSON. The stream is checked as an append's is (`checkRowsStream`: schema, structure, UTF-8,
 * timestamps); the values are then read straight from the checked buffers, with the two checks JSON rows
 * get that Arrow's types do not make: a required column (the primary key) has a value in every row, and a
 * float64 is finite (a stored row is JSON, which has no NaN or infinity).
 */
import type { ColumnSpec, ColumnType } from '@mink/meta';
import { InvalidArgumentError } from '@mink/protocol';

import { type CheckedBatch, checkRowsStream } from './arrow-codec';
import { type ColumnBuffers, bitAt } from './arrow-ipc';
import { type Row, setField } from './row';

export interface RowsStreamOptions {
  /** Most rows the stream may hold, over all its record batches. */
  rowCountMax: number;
  /** Columns that must have a value in every row (a null is refused, as `validateRows` refuses it). */
  required?: readonly string[];
}

/**
 * The rows of an Arrow IPC stream whose fields are `columns` (names, types, in this order; see
 * `checkRowsStream`), each holding every one of `columns` (null where the batch has none), in stream order.
 * Throws InvalidArgumentError naming what is wrong: the stream, a null in a required column, a float64 that
 * is not finite.
 */
export function decodeRowsStream(columns: ColumnSpec[], bytes: Uint8Array, options: RowsStreamOptions): Row[] {
  return readRowsStream(columns, bytes, options).rows;
}

/** `decodeRowsStream`, with the checked record batches the rows were read from (`changelogOfInserts` takes them). */
export function readRowsStream(columns: ColumnSpec[], bytes: Uint8Array, options: RowsStreamOptions): { rows: Row[]; batches: CheckedBatch[] } {
  const required = new Set(options.required ?? []);
  for (const name of required) {
    if (!columns.some((column) => column.name === name)) throw new InvalidArgumentError(`column '${name}' is required and must be among the batch's columns`);
  }
  const rows: Row[] = [];
  const batches = checkRowsStream(columns, bytes, options.rowCountMax);
  for (const batch of batches) {
    const first = rows.length;
    for (let index = 0; index < batch.length; index++) rows.push({});
    columns.forEach((column, position) => {
      const buffers = batch.columns[position]!;
      const read = valueReaderOf(column.type, buffers);
      const isValid = validityOf(buffers);
      for (let index = 0; index < batch.length; index++) {
        const row = rows[first + index]!;
        if (!isValid(index)) {
          if (required.has(column.name)) throw new InvalidArgumentError(`row ${first + index}, column '${column.name}': a value is required, got null`);
          setField(row, column.name, null);
          continue;
        }
        const value = read(index);
        if (typeof value === 'number' && column.type === 'float64' && !Number.isFinite(value)) {
          throw new InvalidArgumentError(`row ${first + index}, column '${column.name}': expected float64 (a finite number), got ${value}`);
        }
        setField(row, column.name, value);
      }
    });
  }
  return { rows, batches };
}

function validityOf(column: ColumnBuffers): (index: number) => boolean {
  const bits = column.buffers[0]!;
  if (column.nullCount === 0) return () => true;
  return (index) => bitAt(bits, index);
}

/** Reads the value at a row of a checked column (buffers are views of the request, not aligned: read through DataViews). */
function valueReaderOf(type: ColumnType, column: ColumnBuffers): (index: number) => unknown {
  const values = column.buffers[1]!;
  const view = new DataView(values.buffer, values.byteOffset, values.byteLength);
  switch (type) {
    case 'boolean':
      return (index) => bitAt(values, index);
    case 'int32':
      return (index) => view.getInt32(index * 4, true);
    case 'float64':
      return (index) => view.getFloat64(index * 8, true);
    case 'int64':
      return (index) => view.getBigInt64(index * 8, true);
    case 'timestamp':
      return (index) => Number(view.getBigInt64(index * 8, true));
    case 'string': {
      const data = column.buffers[2]!;
      const text = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
      return (index) => text.toString('utf8', view.getInt32(index * 4, true), view.getInt32(index * 4 + 4, true));
    }
    case 'bytes': {
      const data = column.buffers[2]!;
      // A copy, so a row neither keeps the request alive nor shares its memory.
      return (index) => data.slice(view.getInt32(index * 4, true), view.getInt32(index * 4 + 4, true));
    }
  }
}

/**
 * The columns of a primary-key write's Arrow batch: those of `columns` (a table's) that `names` names, in
 * table order: every column of a put, a partial put's columns, or a delete's primary key.
 */
export function columnsInTableOrder(columns: readonly ColumnSpec[], names?: readonly string[]): ColumnSpec[] {
  return names === undefined ? [...columns] : columns.filter((column) => names.includes(column.name));
}
