import { Field, Float64, Int64, RecordBatch, RecordBatchStreamWriter, Schema, Struct, makeData } from 'apache-arrow';
import type { ColumnSpec } from '@mink/meta';
import { InvalidArgumentError } from '@mink/protocol';

import { encodeRows } from './arrow-codec';
import { columnsInTableOrder, decodeRowsStream } from './arrow-rows';
import { EDGE_ROWS, EVERY_TYPE_COLUMNS, randomRows } from './every-type.fixture';
import { concatIpcStreams } from './ipc-reader';
import { rowToJson } from './json';
import type { Row } from './row';
import { validateRows } from './validate';

const COLUMNS = EVERY_TYPE_COLUMNS;
const KEY: ColumnSpec[] = [
  { name: 'id', type: 'int64' },
  { name: 'score', type: 'float64' },
];

/** A one-batch IPC stream of `KEY`'s two columns built by apache-arrow, with `ids` and `scores` (null where null). */
function keyStream(ids: (bigint | null)[], scores: (number | null)[]): Uint8Array {
  const validity = (values: unknown[]) => Uint8Array.from({ length: Math.ceil(values.length / 8) }, (_, byte) => values.slice(byte * 8, byte * 8 + 8).reduce<number>((bits, value, bit) => bits | (value === null ? 0 : 1 << bit), 0));
  const nulls = (values: unknown[]) => values.filter((value) => value === null).length;
  const schema = new Schema([new Field('id', new Int64(), true), new Field('score', new Float64(), true)]);
  const batch = new RecordBatch(
    schema,
    makeData({
      type: new Struct(schema.fields),
      length: ids.length,
      nullCount: 0,
      children: [
        makeData({ type: new Int64(), length: ids.length, nullCount: nulls(ids), nullBitmap: validity(ids), data: BigInt64Array.from(ids, (id) => id ?? 0n) }),
        makeData({ type: new Float64(), length: scores.length, nullCount: nulls(scores), nullBitmap: validity(scores), data: Float64Array.from(scores, (score) => score ?? 0) }),
      ],
    }),
  );
  return RecordBatchStreamWriter.writeAll([batch]).toUint8Array(true);
}

describe('decodeRowsStream', () => {
  it.each([
    ['edge values of every type, nulls included', EDGE_ROWS],
    ['300 random rows', randomRows(5, 300)],
  ])('reads back the canonical rows encodeRows wrote: %s', (_name, rows) => {
    // Proves a PK write's rows arrive as the leader would have validated them from JSON: the same
    // canonical values (bigint int64, number timestamps, Uint8Array bytes) and null where null.
    const decoded = decodeRowsStream(COLUMNS, encodeRows(COLUMNS, rows), { rowCountMax: rows.length });
    expect(decoded).toEqual(rows.map((row) => Object.fromEntries(COLUMNS.map((column) => [column.name, row[column.name] ?? null]))));
    expect(decoded).toEqual(validateRows(COLUMNS, rows.map((row) => rowToJson(COLUMNS, row))));
  });

  it('reads the rows of several record batches in stream order', () => {
    // Proves a stream of merged record batches is read whole, row numbers running on across batches.
    const rows = randomRows(9, 50);
    const merged = concatIpcStreams([encodeRows(COLUMNS, rows.slice(0, 7)), encodeRows(COLUMNS, rows.slice(7, 8)), encodeRows(COLUMNS, rows.slice(8))])!;
    expect(decodeRowsStream(COLUMNS, merged.bytes, { rowCountMax: 50 })).toEqual(validateRows(COLUMNS, rows.map((row) => rowToJson(COLUMNS, row))));
    const nullKeyLater = [...rows.slice(0, 8).map((row) => ({ ...row, id: 1n })), { ...rows[8]!, id: null }];
    const withNull = concatIpcStreams([encodeRows(COLUMNS, nullKeyLater.slice(0, 8)), encodeRows(COLUMNS, nullKeyLater.slice(8))])!;
    expect(() => decodeRowsStream(COLUMNS, withNull.bytes, { rowCountMax: 50, required: ['id'] })).toThrow("row 8, column 'id': a value is required, got null");
  });

  it.each<[string, Uint8Array, string[], RegExp]>([
    ['a null in a required column', encodeRows(KEY, [{ id: 1n, score: 1 }, { id: null, score: 2 }]), ['id'], /^row 1, column 'id': a value is required, got null$/],
    ['NaN', keyStream([1n, 2n], [0.5, Number.NaN]), [], /^row 1, column 'score': expected float64 \(a finite number\), got NaN$/],
    ['infinity', keyStream([1n], [Number.NEGATIVE_INFINITY]), [], /^row 0, column 'score': expected float64 \(a finite number\), got -Infinity$/],
    ['a required column the batch does not have', encodeRows(KEY, [{ id: 1n, score: 1 }]), ['name'], /^column 'name' is required and must be among the batch's columns$/],
    ['more rows than the bound', encodeRows(KEY, [{ id: 1n, score: 1 }, { id: 2n, score: 2 }, { id: 3n, score: 3 }]), [], /at most 2 rows for one bucket, got 3/],
    ['fields that are not the columns', encodeRows([{ name: 'id', type: 'int64' }], [{ id: 1n }]), [], /^batch: /],
    ['bytes that are not Arrow', new Uint8Array([1, 2, 3]), [], /^batch: /],
  ])('refuses %s as InvalidArgument', (_name, bytes, required, message) => {
    // Proves the two checks JSON validation makes that Arrow's types do not (a key value, a finite float)
    // and the stream checks shared with appends hold for PK writes.
    const read = () => decodeRowsStream(KEY, bytes, { rowCountMax: 2, required });
    expect(read).toThrow(InvalidArgumentError);
    expect(read).toThrow(message);
  });

  it('accepts nulls outside the required columns and a float that is finite', () => {
    // Proves the refusals above are about the value, not the column: the same stream shapes pass.
    expect(decodeRowsStream(KEY, keyStream([1n, 2n], [null, -0]), { rowCountMax: 2, required: ['id'] })).toEqual([
      { id: 1n, score: null },
      { id: 2n, score: -0 },
    ] satisfies Row[]);
  });
});

describe('columnsInTableOrder', () => {
  it.each<[string, string[] | undefined, string[]]>([
    ['every column without names', undefined, ['id', 'flag', 'count', 'score', 'name', 'payload', 'at']],
    ['the named columns in table order, whatever order names them', ['at', 'id', 'name'], ['id', 'name', 'at']],
    ['nothing for names of no column', ['nope'], []],
  ])('%s', (_name, names, expected) => {
    expect(columnsInTableOrder(COLUMNS, names).map((column) => column.name)).toEqual(expected);
  });
});
