import {
  Binary,
  Bool,
  type Data,
  type DataType,
  Field,
  Float64,
  Int8,
  Int32,
  Int64,
  RecordBatch,
  RecordBatchStreamWriter,
  Schema,
  Struct,
  TimestampMillisecond,
  Utf8,
  makeData,
  tableFromIPC,
} from 'apache-arrow';
import fc from 'fast-check';
import type { ColumnSpec } from '@mink/meta';
import { InvalidArgumentError } from '@mink/protocol';

import { APPEND_TIME_COLUMN, CHANGE_TYPE_COLUMN, CHANGE_TYPES, type ChangeType, type CheckedBatch, batchRowCount, bucketsOfBatch, changelogOfInserts, checkRowsStream, decodeBatch, encodeBatch, encodeRows, encodeRowsOfBatch, stampBatch } from './arrow-codec';
import { bucketOfRow } from './bucketing';
import { rowToJson } from './json';
import { type IpcMessage, concatIpcStreams, readIpcMessages } from './ipc-reader';
import { recordBatchFiguresByArrow } from './arrow-decoded.fixture';
import type { Row } from './row';
import { validateRows } from './validate';
import { EDGE_ROWS, EVERY_TYPE_COLUMNS, randomRows } from './every-type.fixture';

const COLUMNS = EVERY_TYPE_COLUMNS;

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

describe('encodeBatch and decodeBatch', () => {
  test.each<[string, Row[]]>([
    ['edge values and nulls', EDGE_ROWS],
    ['one row', EDGE_ROWS.slice(1, 2)],
    ['randomized rows (seed 7)', randomRows(7, 517)],
    ['randomized rows (seed 8)', randomRows(8, 64)],
  ])('round-trips %s exactly', (_case, rows) => {
    // Proves every column type, null and append time reads back exactly as written, bit for bit.
    const timestampsMs = rows.map((_, index) => 1_700_000_000_000 + index * 7);
    const decoded = decodeBatch(COLUMNS, encodeBatch(COLUMNS, rows, timestampsMs));
    expect(decoded.timestampsMs).toEqual(timestampsMs);
    expect(decoded.rows).toEqual(rows);
    // toEqual treats Buffer and Uint8Array alike and ignores -0; check both where they matter.
    decoded.rows.forEach((row, index) => {
      expect(Object.keys(row)).toEqual(COLUMNS.map((column) => column.name));
      if (row.payload !== null) expect(Object.getPrototypeOf(row.payload)).toBe(Uint8Array.prototype);
      expect(Object.is(row.score, rows[index].score)).toBe(true);
    });
  });

  test('an empty string and empty bytes stay distinct from null', () => {
    // Proves the validity bitmap, not the value length, decides null.
    const rows: Row[] = [
      { id: 1n, name: '', payload: new Uint8Array(0) },
      { id: 2n, name: null, payload: null },
    ];
    const decoded = decodeBatch(COLUMNS, encodeBatch(COLUMNS, rows, 5), ['name', 'payload']);
    expect(decoded.rows).toEqual([
      { name: '', payload: new Uint8Array(0) },
      { name: null, payload: null },
    ]);
  });

  test('an int64 beyond 2^53 survives JSON in, Arrow and JSON out', () => {
    // Proves the whole path from a client's decimal string back to JSON loses no precision.
    const [row] = validateRows(COLUMNS, [{ id: '9007199254740993', payload: 'AP8=', at: '1700000000001' }]);
    const decoded = decodeBatch(COLUMNS, encodeBatch(COLUMNS, [row], 1));
    expect(rowToJson(COLUMNS, decoded.rows[0])).toEqual({
      id: '9007199254740993',
      flag: null,
      count: null,
      score: null,
      name: null,
      payload: 'AP8=',
      at: 1700000000001,
    });
  });

  test('one append time applies to every row', () => {
    // Proves the single-number form of timestampsMs stamps all rows of the batch.
    const decoded = decodeBatch(COLUMNS, encodeBatch(COLUMNS, EDGE_ROWS, 1_234));
    expect(decoded.timestampsMs).toEqual([1_234, 1_234, 1_234, 1_234]);
  });

  test.each<[string, string[], Row[]]>([
    ['a subset in projection order', ['name', 'id'], [{ name: 'a', id: 1n }, { name: null, id: 2n }]],
    ['one column', ['flag'], [{ flag: true }, { flag: null }]],
    ['no column', [], [{}, {}]],
  ])('projects %s', (_case, projection, expected) => {
    // Proves rows hold exactly the projected columns, in the projection's order.
    const rows: Row[] = [
      { id: 1n, flag: true, name: 'a' },
      { id: 2n, flag: null, name: null },
    ];
    const decoded = decodeBatch(COLUMNS, encodeBatch(COLUMNS, rows, [10, 11]), projection);
    expect(decoded.rows).toEqual(expected);
    expect(decoded.rows.map((row) => Object.keys(row))).toEqual(expected.map(() => projection));
    expect(decoded.timestampsMs).toEqual([10, 11]);
  });

  test.each<[string, string[], string]>([
    ['an unknown column', ['id', 'nope'], "unknown column 'nope' in the projection"],
    ['the system column', [APPEND_TIME_COLUMN], `unknown column '${APPEND_TIME_COLUMN}' in the projection`],
    ['a repeated column', ['id', 'id'], "column 'id' is listed twice in the projection"],
  ])('rejects a projection with %s', (_case, projection, expectedMessage) => {
    // Proves a bad projection from a client is an InvalidArgumentError, not a crash or a silent omission.
    const bytes = encodeBatch(COLUMNS, EDGE_ROWS, 1);
    expect(messageOf(() => decodeBatch(COLUMNS, bytes, projection))).toBe(expectedMessage);
  });

  test('the bytes are a standard Arrow IPC stream with the documented schema', () => {
    // Proves other Arrow readers (tiering, query engines) see the declared types and the append time column.
    const bytes = encodeBatch(COLUMNS, EDGE_ROWS, 42);
    expect(Array.from(bytes.subarray(0, 4))).toEqual([0xff, 0xff, 0xff, 0xff]);
    // An IPC stream ends with the continuation marker and a zero length.
    expect(Array.from(bytes.subarray(bytes.length - 8))).toEqual([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
    const table = tableFromIPC(bytes);
    expect(table.batches).toHaveLength(1);
    expect(table.schema.fields.map((field) => [field.name, String(field.type), field.nullable])).toEqual([
      ['id', 'Int64', true],
      ['flag', 'Bool', true],
      ['count', 'Int32', true],
      ['score', 'Float64', true],
      ['name', 'Utf8', true],
      ['payload', 'Binary', true],
      ['at', 'Timestamp<MILLISECOND, UTC>', true],
      [APPEND_TIME_COLUMN, 'Timestamp<MILLISECOND, UTC>', false],
    ]);
    expect(table.getChild('at')?.toArray()).toEqual(new BigInt64Array([-1n, 9007199254740991n, 0n, 0n]));
    expect(table.getChild('at')?.get(1)).toBe(9007199254740991);
    expect(table.getChild('name')?.get(1)).toBe('grüße 👋');
  });

  test.each<[string, Row[]]>([
    ['no rows', []],
    ['four rows', EDGE_ROWS],
    ['517 rows', randomRows(3, 517)],
  ])('batchRowCount counts %s', (_case, rows) => {
    // Proves the row count read from the headers matches what decoding finds.
    const bytes = encodeBatch(COLUMNS, rows, 1);
    expect(batchRowCount(bytes)).toBe(rows.length);
    expect(decodeBatch(COLUMNS, bytes).rows).toHaveLength(rows.length);
  });

  test('a column added to the table after a batch was written reads as null', () => {
    // Proves old batches stay readable when the table's column list grows.
    const before: ColumnSpec[] = [{ name: 'id', type: 'int64' }];
    const bytes = encodeBatch(before, [{ id: 1n }], 1);
    expect(decodeBatch([...before, { name: 'note', type: 'string' }], bytes).rows).toEqual([{ id: 1n, note: null }]);
  });

  test('a column stored with another type is an error, not a misread', () => {
    // Proves decoding never reinterprets bytes of one type as another.
    const bytes = encodeBatch([{ name: 'id', type: 'int64' }], [{ id: 1n }], 1);
    expect(() => decodeBatch([{ name: 'id', type: 'timestamp' }], bytes)).toThrow("column 'id' is stored as Int64, expected Timestamp<MILLISECOND, UTC>");
  });

  test.each<[string, Row, string]>([
    ['a number in an int64 column', { id: 5 }, "row 0, column 'id': int64 wants a bigint, got number"],
    ['a string in a boolean column', { flag: 'true' }, "row 0, column 'flag': boolean wants a boolean, got string"],
    ['a bigint in an int32 column', { count: 5n }, "row 0, column 'count': int32 wants a number, got bigint"],
    ['a base64 string in a bytes column', { payload: 'AA==' }, "row 0, column 'payload': bytes wants a Uint8Array, got string"],
    ['a fraction in a timestamp column', { at: 1.5 }, "row 0, column 'at': timestamp wants a safe integer number, got number"],
  ])('encodeBatch refuses %s', (_case, row, expectedMessage) => {
    // Proves rows that skipped validation fail loudly instead of being stored as garbage.
    expect(() => encodeBatch(COLUMNS, [row], 1)).toThrow(expectedMessage);
  });

  test.each<[string, number[] | number, string]>([
    ['too few append times', [1], '1 append times for 2 rows'],
    ['a fractional append time', [1, 1.5], 'append time 1.5 is not a safe integer'],
    ['a single unsafe append time', 2 ** 60, `append time ${2 ** 60} is not a safe integer`],
  ])('encodeBatch refuses %s', (_case, timestampsMs, expectedMessage) => {
    // Proves every record gets exactly one exact append time.
    expect(() => encodeBatch(COLUMNS, EDGE_ROWS.slice(0, 2), timestampsMs)).toThrow(expectedMessage);
  });
});

describe('changelog batches', () => {
  const columns: ColumnSpec[] = [
    { name: 'id', type: 'int64' },
    { name: 'name', type: 'string' },
  ];
  const rows = [
    { id: 1n, name: 'a' },
    { id: 1n, name: 'a' },
    { id: 1n, name: 'b' },
    { id: 2n, name: null },
  ];

  it('round-trips the change type of every row', () => {
    const changeTypes: ChangeType[] = ['+I', '-U', '+U', '-D'];
    const decoded = decodeBatch(columns, encodeBatch(columns, rows, 7, changeTypes));
    expect(decoded.rows).toEqual(rows);
    expect(decoded.changeTypes).toEqual(changeTypes);
    expect(decoded.timestampsMs).toEqual([7, 7, 7, 7]);
  });

  it('keeps the change types with a projection', () => {
    const decoded = decodeBatch(columns, encodeBatch(columns, rows, 7, ['+I', '+I', '-D', '+I']), ['name']);
    expect(decoded.rows.map((row) => row.name)).toEqual(['a', 'a', 'b', null]);
    expect(decoded.changeTypes).toEqual(['+I', '+I', '-D', '+I']);
  });

  it('has no change types for a log batch', () => {
    expect(decodeBatch(columns, encodeBatch(columns, rows, 7)).changeTypes).toBeUndefined();
  });

  it('refuses a change type list of the wrong length or with an unknown type', () => {
    expect(() => encodeBatch(columns, rows, 7, ['+I'])).toThrow('1 change types for 4 rows');
    expect(() => encodeBatch(columns, rows, 7, ['+I', '+I', '+I', 'x' as ChangeType])).toThrow('unknown change type x');
  });
});

/**
 * The same batch as apache-arrow's own stream writer lays it out from Data built by makeData: the oracle
 * for the IPC layout encodeBatch writes by hand (message framing, buffer order, padding, null counts).
 */
function arrowWriterBytes(columns: ColumnSpec[], rows: Row[], appendTimeMs: number, changeTypes?: ChangeType[]): Uint8Array {
  const typeOf = (type: ColumnSpec['type']): DataType =>
    ({
      boolean: new Bool(),
      int32: new Int32(),
      int64: new Int64(),
      float64: new Float64(),
      string: new Utf8(),
      bytes: new Binary(),
      timestamp: new TimestampMillisecond('UTC'),
    })[type];
  const fields = columns.map((column) => new Field(column.name, typeOf(column.type), true));
  const children: Data[] = columns.map((column) => {
    // Plain typed arrays per column, as the format defines them; the library's writer lays them out.
    const values = rows.map((row) => row[column.name] ?? null);
    const nullCount = values.filter((value) => value === null).length;
    const nullBitmap = nullCount === 0 ? undefined : Uint8Array.from({ length: Math.ceil(values.length / 8) }, (_, byte) =>
      values.slice(byte * 8, byte * 8 + 8).reduce<number>((bits, value, bit) => (value === null ? bits : bits | (1 << bit)), 0),
    );
    const common = { length: values.length, nullCount, nullBitmap };
    switch (column.type) {
      case 'boolean':
        return makeData({ type: new Bool(), ...common, data: Uint8Array.from({ length: Math.ceil(values.length / 8) }, (_, byte) =>
          values.slice(byte * 8, byte * 8 + 8).reduce<number>((bits, value, bit) => (value === true ? bits | (1 << bit) : bits), 0)) });
      case 'int32':
        return makeData({ type: new Int32(), ...common, data: Int32Array.from(values, (value) => (value as number | null) ?? 0) });
      case 'float64':
        return makeData({ type: new Float64(), ...common, data: Float64Array.from(values, (value) => (value as number | null) ?? 0) });
      case 'int64':
        return makeData({ type: new Int64(), ...common, data: BigInt64Array.from(values, (value) => (value as bigint | null) ?? 0n) });
      case 'timestamp':
        return makeData({ type: new TimestampMillisecond('UTC'), ...common, data: BigInt64Array.from(values, (value) => BigInt((value as number | null) ?? 0)) });
      case 'string':
      case 'bytes': {
        const parts = values.map((value) => (value === null ? new Uint8Array(0) : typeof value === 'string' ? new TextEncoder().encode(value) : (value as Uint8Array)));
        const valueOffsets = new Int32Array(parts.length + 1);
        parts.forEach((part, index) => (valueOffsets[index + 1] = valueOffsets[index]! + part.byteLength));
        const data = new Uint8Array(valueOffsets[parts.length]!);
        parts.forEach((part, index) => data.set(part, valueOffsets[index]!));
        return column.type === 'string' ? makeData({ type: new Utf8(), ...common, valueOffsets, data }) : makeData({ type: new Binary(), ...common, valueOffsets, data });
      }
    }
  });
  fields.push(new Field(APPEND_TIME_COLUMN, new TimestampMillisecond('UTC'), false));
  children.push(makeData({ type: new TimestampMillisecond('UTC'), length: rows.length, nullCount: 0, data: new BigInt64Array(rows.length).fill(BigInt(appendTimeMs)) }));
  if (changeTypes) {
    fields.push(new Field(CHANGE_TYPE_COLUMN, new Int8(), false));
    children.push(makeData({ type: new Int8(), length: rows.length, nullCount: 0, data: Int8Array.from(changeTypes.map((type) => CHANGE_TYPES.indexOf(type))) }));
  }
  const batch = new RecordBatch(new Schema(fields), makeData({ type: new Struct(fields), length: rows.length, nullCount: 0, children }));
  return RecordBatchStreamWriter.writeAll([batch]).toUint8Array(true);
}

describe('the IPC layout of encodeBatch', () => {
  it.each([
    ['edge values of every type, nulls included', COLUMNS, EDGE_ROWS, undefined],
    ['200 random rows', COLUMNS, randomRows(7, 200), undefined],
    ['a changelog batch', COLUMNS, EDGE_ROWS, ['+I', '-U', '+U', '-D'] as ChangeType[]],
    ['one column without nulls', [{ name: 'id', type: 'int64' }] as ColumnSpec[], [{ id: 1n }, { id: 2n }, { id: 3n }], undefined],
  ])('is what apache-arrow writes, but for the layout of the record batch flatbuffer: %s', (_name, columns, rows, changeTypes) => {
    // Proves the hand-laid stream says what the library's says, so every Arrow reader (DuckDB, PyArrow,
    // tiering) reads it: the same schema message and body bytes, and a record batch header that the
    // library decodes to the same figures (ipc-metadata.ts writes it in a layout of its own).
    const appendTimeMs = 1_700_000_000_000;
    const ours = readIpcMessages(encodeBatch(columns, rows, appendTimeMs, changeTypes));
    const theirs = readIpcMessages(arrowWriterBytes(columns, rows, appendTimeMs, changeTypes));
    const described = (messages: IpcMessage[]) => ({
      schema: Buffer.from(messages[0]!.metadata).toString('hex'),
      batches: messages.slice(1).map((message) => ({ ...recordBatchFiguresByArrow(message.metadata), body: Buffer.from(message.body).toString('hex') })),
    });
    expect(described(ours)).toEqual(described(theirs));
    expect(ours.length).toBe(2);
  });

  it('keeps one schema per column set apart from another with the same names but other types', () => {
    // Proves the cached schema message is keyed by types too: a batch of an int32 id is not labelled int64.
    const asInt64 = encodeBatch([{ name: 'id', type: 'int64' }], [{ id: 5n }], 0);
    const asInt32 = encodeBatch([{ name: 'id', type: 'int32' }], [{ id: 5 }], 0);
    expect(String(tableFromIPC(asInt64).schema.fields[0]!.type)).toBe('Int64');
    expect(String(tableFromIPC(asInt32).schema.fields[0]!.type)).toBe('Int32');
  });
});

/** An IPC stream of one record batch of `fields` and `children`, written by apache-arrow. */
function streamOf(fields: Field[], children: Data[], length: number): Uint8Array {
  const batch = new RecordBatch(new Schema(fields), makeData({ type: new Struct(fields), length, nullCount: 0, children }));
  return RecordBatchStreamWriter.writeAll([batch]).toUint8Array(true);
}

const ID_ONLY: ColumnSpec[] = [{ name: 'id', type: 'int64' }];

/** Bytes of the record batch message (framing, metadata and body) of a one-batch stream ending in the 8-byte end-of-stream marker. */
function batchMessageBytes(stream: Uint8Array): number {
  const view = new DataView(stream.buffer, stream.byteOffset, stream.byteLength);
  const schemaBytes = 8 + view.getInt32(4, true);
  return stream.byteLength - 8 - schemaBytes;
}

describe('string columns', () => {
  it.each([
    ['written in one pass', 'ü€👋 ascii', 1_000],
    ['counted first (their bound passes the one-pass limit)', 'é', 1_500_000],
  ])('round-trip, %s', (_name, unit, repeats) => {
    // Proves both ways of writing a string column give the exact UTF-8 bytes: multi-byte characters, empty and null values.
    const columns: ColumnSpec[] = [{ name: 'text', type: 'string' }];
    const rows: Row[] = [{ text: unit.repeat(repeats) }, { text: '' }, { text: null }, { text: `${unit}-tail` }, { text: unit.repeat(repeats) }];
    expect(decodeBatch(columns, encodeBatch(columns, rows, 7)).rows).toEqual(rows);
    const ipc = tableFromIPC(encodeRows(columns, rows));
    expect(ipc.getChild('text')!.toArray()).toEqual(rows.map((row) => row.text));
  });
});

describe('encodeRows and stampBatch', () => {
  it.each([
    ['edge values of every type, nulls included', COLUMNS, EDGE_ROWS],
    ['300 random rows', COLUMNS, randomRows(11, 300)],
  ])('store what encodeBatch stores for the same rows: %s', (_name, columns, rows) => {
    // Proves the binary path changes nothing stored: client encoding + leader stamping = the leader encoding rows.
    const stamped = stampBatch(columns, encodeRows(columns, rows), 1_700_000_000_123, 100_000);
    expect(stamped.rowCount).toBe(rows.length);
    expect(Buffer.from(stamped.payload).equals(Buffer.from(encodeBatch(columns, rows, 1_700_000_000_123)))).toBe(true);
  });

  it.each([1, 3, 5])('checks and stores a batch lying at byte offset %i of a larger buffer as one lying at offset 0', (shift) => {
    // Proves a batch inside a NATS message (bodies not 8-byte aligned) is read in place and stored unchanged.
    const rows = randomRows(17, 40);
    const bytes = encodeRows(COLUMNS, rows);
    const backing = new Uint8Array(bytes.byteLength + shift + 2).fill(0xee);
    backing.set(bytes, shift);
    const stamped = stampBatch(COLUMNS, backing.subarray(shift, shift + bytes.byteLength), 9, 100);
    expect(Buffer.from(stamped.payload).equals(Buffer.from(encodeBatch(COLUMNS, rows, 9)))).toBe(true);
  });

  it.each([
    ['cut inside the schema', (bytes: Uint8Array) => bytes.subarray(0, 20)],
    ['cut inside the record batch body', (bytes: Uint8Array) => bytes.subarray(0, bytes.byteLength - 40)],
    ['followed by a second record batch cut short', (bytes: Uint8Array) => Buffer.concat([bytes.subarray(0, bytes.byteLength - 8), bytes.subarray(bytes.byteLength - 8 - batchMessageBytes(bytes), bytes.byteLength - 16)])],
  ])('refuses a stream %s', (_case, damage) => {
    // Proves the in-place message reader bounds every length it reads.
    const bytes = encodeRows(ID_ONLY, [{ id: 1n }, { id: 2n }]);
    expect(() => stampBatch(ID_ONLY, damage(bytes), 1, 10)).toThrow(InvalidArgumentError);
  });

  it('stores a stream of several record batches (appends merged into one request) as one batch of all their rows', () => {
    // Proves merging changes nothing stored: the batches of several client streams, stamped together, are what
    // encodeBatch writes for all their rows (nulls, booleans and strings across batch boundaries included).
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 37 }), { minLength: 1, maxLength: 6 }), fc.integer({ min: 0, max: 1_000 }), (sizes, seed) => {
        const rows = randomRows(seed, sizes.reduce((sum, size) => sum + size, 0));
        const streams: Uint8Array[] = [];
        let start = 0;
        for (const size of sizes) {
          streams.push(encodeRows(COLUMNS, rows.slice(start, start + size)));
          start += size;
        }
        const merged = concatIpcStreams(streams);
        expect(merged?.rowCounts).toEqual(sizes);
        const stamped = stampBatch(COLUMNS, merged!.bytes, 42, 100_000);
        expect(stamped.rowCount).toBe(rows.length);
        expect(Buffer.from(stamped.payload).equals(Buffer.from(encodeBatch(COLUMNS, rows, 42)))).toBe(true);
      }),
      { numRuns: 60 },
    );
  });

  it('writes the changelog of +I records of checked batches as encodeBatch writes it for their rows (changelogOfInserts)', () => {
    // Proves a group of new keys' puts may store its changelog from the requests' columns: the same bytes as
    // encoding the change records (every row '+I'), one or several batches, nulls and strings across their boundaries.
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 37 }), { minLength: 1, maxLength: 5 }), fc.integer({ min: 0, max: 1_000 }), (sizes, seed) => {
        const rows = [...EDGE_ROWS, ...randomRows(seed, sizes.reduce((sum, size) => sum + size, 0))];
        const batches: CheckedBatch[] = [];
        let start = 0;
        for (const size of [EDGE_ROWS.length, ...sizes]) {
          batches.push(...checkRowsStream(COLUMNS, encodeRows(COLUMNS, rows.slice(start, start + size)), 100));
          start += size;
        }
        const inserts = changelogOfInserts(COLUMNS, batches, 42);
        expect(inserts.rowCount).toBe(rows.length);
        const encoded = encodeBatch(COLUMNS, rows, 42, rows.map(() => '+I'));
        expect(Buffer.from(inserts.payload).equals(Buffer.from(encoded))).toBe(true);
        expect(decodeBatch(COLUMNS, inserts.payload).changeTypes).toEqual(rows.map(() => '+I'));
      }),
      { numRuns: 40 },
    );
  });

  it('counts the rows of every record batch of a stream against the request bound', () => {
    // Proves merged appends cannot exceed what one request may append.
    const merged = concatIpcStreams([encodeRows(ID_ONLY, [{ id: 1n }, { id: 2n }]), encodeRows(ID_ONLY, [{ id: 3n }])])!;
    expect(stampBatch(ID_ONLY, merged.bytes, 1, 3).rowCount).toBe(3);
    expect(() => stampBatch(ID_ONLY, merged.bytes, 1, 2)).toThrow(/at most 2 rows for one bucket, got 3/);
  });

  it('refuses a merged stream whose second record batch is malformed, naming the column', () => {
    // Proves each record batch of a merged stream is checked, not only the first.
    const names: ColumnSpec[] = [{ name: 'name', type: 'string' }];
    const good = encodeRows(names, [{ name: 'ok' }]);
    const bad = streamOf([new Field('name', new Utf8(), true)], [makeData({ type: new Utf8(), length: 1, valueOffsets: Int32Array.of(0, 2), data: Uint8Array.of(0xff, 0xfe) })], 1);
    const merged = concatIpcStreams([good, bad]);
    expect(merged).not.toBeNull();
    expect(() => stampBatch(names, merged!.bytes, 1, 10)).toThrow(/column 'name' holds bytes that are not UTF-8/);
  });

  it('merges the leading run of streams with the first one\'s schema message only, never bytes that are no stream', () => {
    // Proves a batch is never read with another stream's schema, and a stream of another schema ends the run.
    const int64 = encodeRows(ID_ONLY, [{ id: 1n }]);
    const two = encodeRows(ID_ONLY, [{ id: 2n }, { id: 3n }]);
    const notNullable = streamOf([new Field('id', new Int64(), false)], [makeData({ type: new Int64(), length: 1, data: BigInt64Array.of(7n) })], 1);
    const garbage = new Uint8Array([1, 2, 3]);
    expect(concatIpcStreams([int64, notNullable])?.rowCounts).toEqual([1]);
    expect(concatIpcStreams([int64, two, notNullable, int64])?.rowCounts).toEqual([1, 2]);
    expect(concatIpcStreams([int64, garbage, int64])?.rowCounts).toEqual([1]);
    expect(concatIpcStreams([garbage, int64])).toBeNull();
    expect(concatIpcStreams([notNullable, int64])?.rowCounts).toEqual([1]);
    expect(concatIpcStreams([])).toBeNull();
    expect(concatIpcStreams([int64, int64])?.rowCounts).toEqual([1, 1]);
    // What the run holds is the run's rows alone, stored as one batch.
    const run = concatIpcStreams([int64, two, notNullable])!;
    expect(decodeBatch(ID_ONLY, stampBatch(ID_ONLY, run.bytes, 1, 10).payload).rows.map((row) => row.id)).toEqual([1n, 2n, 3n]);
  });

  it('takes a stream apache-arrow wrote from vectors of the right types', () => {
    // Proves a producer holding Arrow columns (not our encoder) is taken as is.
    const columns: ColumnSpec[] = [
      { name: 'id', type: 'int64' },
      { name: 'name', type: 'string' },
    ];
    const fields = [new Field('id', new Int64(), true), new Field('name', new Utf8(), true)];
    const bytes = streamOf(fields, [makeData({ type: new Int64(), length: 2, data: BigInt64Array.of(1n, 2n) }), makeData({ type: new Utf8(), length: 2, valueOffsets: Int32Array.of(0, 1, 3), data: new TextEncoder().encode('abc') })], 2);
    const stamped = stampBatch(columns, bytes, 5, 100);
    expect(decodeBatch(columns, stamped.payload)).toEqual({ rows: [{ id: 1n, name: 'a' }, { id: 2n, name: 'bc' }], timestampsMs: [5, 5] });
  });

  const ID: ColumnSpec[] = [{ name: 'id', type: 'int64' }];
  it('checks a schema message it took before against the columns of each call: the same bytes are refused for another column set, and a refusal is named every time', () => {
    // Proves the cache of checked schema messages is keyed by the column set too, keeps no refusal, and skips no record batch check.
    const bytes = encodeRows(ID, [{ id: 1n }, { id: 2n }]);
    const stored = Buffer.from(encodeBatch(ID, [{ id: 1n }, { id: 2n }], 5));
    expect(Buffer.from(stampBatch(ID, bytes, 5, 10).payload).equals(stored)).toBe(true);
    expect(Buffer.from(stampBatch(ID, bytes, 5, 10).payload).equals(stored)).toBe(true);
    for (const columns of [[{ name: 'key', type: 'int64' }], [{ name: 'id', type: 'int32' }], [...ID, { name: 'x', type: 'int32' }]] as ColumnSpec[][]) {
      for (let attempt = 0; attempt < 2; attempt++) expect(() => stampBatch(columns, bytes, 5, 10)).toThrow(/^batch: (field 0 is 'id'|field 'id' is Int64|the schema has 1 fields)/);
    }
    // A record batch whose null count its bitmap does not show, after a valid stream with the same schema message.
    stampBatch(ID, streamOf([new Field('id', new Int64(), true)], [makeData({ type: new Int64(), length: 1, data: BigInt64Array.of(1n) })], 1), 5, 10);
    const bad = streamOf([new Field('id', new Int64(), true)], [makeData({ type: new Int64(), length: 3, nullCount: 2, nullBitmap: Uint8Array.of(0b110), data: BigInt64Array.of(1n, 2n, 3n) })], 3);
    expect(() => stampBatch(ID, bad, 5, 10)).toThrow(/marks 1 nulls, its null count says 2/);
  });

  it('takes a field declared not nullable and stores it as every column is stored', () => {
    // Proves a producer's stricter schema is no obstacle: the stored batch is what encodeBatch writes.
    const bytes = streamOf([new Field('id', new Int64(), false)], [makeData({ type: new Int64(), length: 1, data: BigInt64Array.of(7n) })], 1);
    expect(Buffer.from(stampBatch(ID, bytes, 3, 10).payload).equals(Buffer.from(encodeBatch(ID, [{ id: 7n }], 3)))).toBe(true);
  });

  const NAME: ColumnSpec[] = [{ name: 'name', type: 'string' }];
  const utf8 = (bytes: Uint8Array, offsets: number[]) =>
    streamOf([new Field('name', new Utf8(), true)], [makeData({ type: new Utf8(), length: offsets.length - 1, valueOffsets: Int32Array.from(offsets), data: bytes })], offsets.length - 1);
  it.each<[string, ColumnSpec[], () => Uint8Array, RegExp]>([
    ['bytes that are no IPC stream', ID, () => new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9]), /^batch: /],
    ['an empty body', ID, () => new Uint8Array(0), /must start with its schema message/],
    ['a stream cut short', ID, () => encodeRows(ID, [{ id: 1n }, { id: 2n }]).subarray(0, 200), /^batch: /],
    ['another column name', ID, () => encodeRows([{ name: 'key', type: 'int64' }], [{ key: 1n }]), /field 0 is 'key', the table's column 0 is 'id'/],
    ['another column type', ID, () => encodeRows([{ name: 'id', type: 'int32' }], [{ id: 1 }]), /field 'id' is Int32, the table's column is int64/],
    ['a column too many', ID, () => encodeRows([...ID, { name: 'x', type: 'int32' }], [{ id: 1n, x: 1 }]), /the schema has 2 fields, the table 1 columns/],
    ['string bytes that are not UTF-8', NAME, () => utf8(Uint8Array.of(0x61, 0xff, 0xfe), [0, 1, 3]), /column 'name' holds bytes that are not UTF-8/],
    ['value offsets that go back', NAME, () => utf8(new TextEncoder().encode('abc'), [0, 2, 1]), /value offset 2 \(1\) is below the one before \(2\)/],
    ['value offsets beyond the values', NAME, () => utf8(new TextEncoder().encode('abc'), [0, 1, 30]), /value offsets reach 30, the values hold \d+ bytes/],
    [
      'a null count the bitmap does not show',
      ID,
      () => streamOf([new Field('id', new Int64(), true)], [makeData({ type: new Int64(), length: 3, nullCount: 2, nullBitmap: Uint8Array.of(0b110), data: BigInt64Array.of(1n, 2n, 3n) })], 3),
      /marks 1 nulls, its null count says 2/,
    ],
    [
      'a timestamp beyond the safe integers',
      [{ name: 'at', type: 'timestamp' }],
      () => streamOf([new Field('at', new TimestampMillisecond('UTC'), true)], [makeData({ type: new TimestampMillisecond('UTC'), length: 1, data: BigInt64Array.of(2n ** 60n) })], 1),
      /timestamp 1152921504606846976 is beyond the safe integers/,
    ],
    ['more rows than one request may append', ID, () => encodeRows(ID, Array.from({ length: 11 }, (_, index) => ({ id: BigInt(index) }))), /at most 10 rows for one bucket, got 11/],
  ])('refuses %s as InvalidArgument', (_name, columns, bytes, message) => {
    // Proves bad binary input is the caller's error, named, never stored or thrown as a crash.
    let caught: unknown;
    try {
      stampBatch(columns, bytes(), 0, 10);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(InvalidArgumentError);
    expect((caught as Error).message).toMatch(message);
  });
});

describe('bucketsOfBatch', () => {
  const rows = [...EDGE_ROWS, ...randomRows(41, 400)];
  const batchOf = (begin: number, end: number) => tableFromIPC(encodeRows(COLUMNS, rows)).batches[0]!.slice(begin, end);

  it.each([
    [['id'], 8],
    [['flag'], 8],
    [['count'], 1000],
    [['name'], 7],
    [['name', 'id', 'flag', 'count'], 64],
    [['count', 'name'], 1],
  ])('gives what bucketOfRow gives for each row, key %j of %d buckets, whole and sliced', (bucketKey, buckets) => {
    // Proves reading the key from the buffers (nulls, -2^63, -0, non-ASCII and empty strings, a sliced
    // batch whose validity, bits and offsets start at an offset) routes every row where its row would go.
    for (const [begin, end] of [
      [0, rows.length],
      [37, 211],
    ] as const) {
      const expected = rows.slice(begin, end).map((row) => bucketOfRow(row, bucketKey, buckets));
      expect(Array.from(bucketsOfBatch(COLUMNS, batchOf(begin, end), bucketKey, buckets)!)).toEqual(expected);
    }
  });

  it.each([
    ['a float64 key', ['score']],
    ['a bytes key', ['payload']],
    ['a timestamp key', ['at']],
    ['a key with one column read value by value', ['id', 'at']],
  ])('leaves %s to the rows\' way (null)', (_name, bucketKey) => {
    // Proves the columns whose values are checked one by one first are never routed from raw buffers.
    expect(bucketsOfBatch(COLUMNS, batchOf(0, 10), bucketKey, 8)).toBeNull();
  });

  it('leaves a batch whose key field is not the column\'s Arrow type to the rows\' way (null)', () => {
    // Proves an int32 field is not read as int64 values: the batch's checks refuse it by name instead.
    const batch = tableFromIPC(encodeRows([{ name: 'id', type: 'int32' }], [{ id: 1 }])).batches[0]!;
    expect(bucketsOfBatch([{ name: 'id', type: 'int64' }], batch, ['id'], 8)).toBeNull();
  });
});

describe('encodeRowsOfBatch', () => {
  it.each([
    ['every other row of 300 random rows, reversed', 0, 300],
    ['rows of a sliced batch (buffers at an offset)', 37, 211],
  ])('writes what encodeRows writes for the same rows: %s', (_name, begin, end) => {
    // Proves the column-by-column copy (validity, bits, fixed width, offsets and bytes) equals encoding the rows themselves.
    const rows = randomRows(23, 300);
    const batch = tableFromIPC(encodeRows(COLUMNS, rows)).batches[0]!.slice(begin, end);
    const indexes = Array.from({ length: end - begin }, (_, index) => index)
      .filter((index) => index % 2 === 0)
      .reverse();
    const expected = encodeRows(
      COLUMNS,
      indexes.map((index) => rows[begin + index]!),
    );
    expect(Buffer.from(encodeRowsOfBatch(COLUMNS, batch, indexes)).equals(Buffer.from(expected))).toBe(true);
  });

  it('refuses a batch whose fields are not the table columns', () => {
    // Proves a mismatched producer schema is the caller's error before anything is sent.
    const batch = tableFromIPC(encodeRows([{ name: 'id', type: 'int32' }], [{ id: 1 }])).batches[0]!;
    expect(() => encodeRowsOfBatch([{ name: 'id', type: 'int64' }], batch, [0])).toThrow(InvalidArgumentError);
  });
});
