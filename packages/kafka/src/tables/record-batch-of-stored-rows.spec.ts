import type { ColumnSpec } from '@mink/meta';
import { CHANGE_TYPES, type ChangeType, type Row, encodeBatch, encodeRows, rowToJson, stampBatch } from '@mink/records';
import fc from 'fast-check';

import { KafkajsDecoder, kafkajsModule } from '../messages/kafka-oracle.fixture';
import { decodeRecords, readRecordBatch } from '../messages/record-batch';
import { RecordBatchConversionError } from './conversion-error';
import { CHANGE_TYPE_HEADER, type TableAsTopic, recordBatchOfStoredRows } from './record-batch-of-stored-rows';

const decodeKafkajsBatch = kafkajsModule('protocol/recordBatch/v0/decoder');

interface KafkajsBatch {
  firstOffset: string;
  firstTimestamp: string;
  maxTimestamp: string;
  partitionLeaderEpoch: number;
  lastOffsetDelta: number;
  producerId: string;
  inTransaction: boolean;
  isControlBatch: boolean;
  timestampType: number;
  records: Array<{ offset: string; timestamp: string; key: Buffer | null; value: Buffer | null; headers: Record<string, Buffer | Buffer[]> }>;
}

/** kafkajs's own decoder of a fetched record batch: the oracle that a Kafka client reads what we write. */
async function decodeWithKafkajs(batch: Uint8Array): Promise<KafkajsBatch> {
  return decodeKafkajsBatch(new KafkajsDecoder(Buffer.from(batch.buffer, batch.byteOffset, batch.byteLength)));
}

/** What a consumer sees of each record: key and value as text, headers as text, offset and timestamp as numbers. */
function consumed(batch: KafkajsBatch): Array<{ offset: number; timestamp: number; key: string | null; value: string | null; headers: Record<string, string> }> {
  return batch.records.map((record) => ({
    offset: Number(record.offset),
    timestamp: Number(record.timestamp),
    key: record.key === null ? null : record.key.toString('utf8'),
    value: record.value === null ? null : record.value.toString('utf8'),
    headers: Object.fromEntries(Object.entries(record.headers).map(([key, value]) => [key, Buffer.isBuffer(value) ? value.toString('utf8') : value.map(String).join(',')])),
  }));
}

const COLUMNS: ColumnSpec[] = [
  { name: 'id', type: 'int64' },
  { name: 'flag', type: 'boolean' },
  { name: 'count', type: 'int32' },
  { name: 'score', type: 'float64' },
  { name: 'name', type: 'string' },
  { name: 'payload', type: 'bytes' },
  { name: 'at', type: 'timestamp' },
];

const LOG_TABLE: TableAsTopic = { columns: COLUMNS, kind: 'log', primaryKey: [] };
const PK_TABLE: TableAsTopic = { columns: COLUMNS, kind: 'pk', primaryKey: ['id'] };

/** Row `index`: every third value null, int64 beyond 2^53, text that JSON must escape, bytes of any value. */
function rowOf(index: number): Row {
  const nullHere = (column: number) => (index + column) % 3 === 0;
  return {
    id: 2n ** 60n + BigInt(index),
    flag: nullHere(1) ? null : index % 2 === 0,
    count: nullHere(2) ? null : index * 1000 - 2 ** 31 + 1,
    score: nullHere(3) ? null : index / 7,
    name: nullHere(4) ? null : `naïve "q"\n\\ ${'é'.repeat(index % 4)} ${index}`,
    payload: nullHere(5) ? null : Uint8Array.from({ length: index % 4 }, (_, byte) => (index * 31 + byte) % 256),
    at: nullHere(6) ? null : 1_700_000_000_000 + index,
  };
}

/** The HTTP scan's `row` of a stored row, by the row-by-row path (rowToJson, JSON.stringify): independent of the scan's JSON writer. */
function rowText(columns: ColumnSpec[], row: Row): string {
  return JSON.stringify(rowToJson(columns, row));
}

const keyText = (row: Row): string => JSON.stringify({ id: String(row.id) });

describe('recordBatchOfStoredRows, read back by kafkajs', () => {
  it('gives a log table one record per row: offsets from the start offset, the row as the scan renders it, its own timestamp, no key, no headers', async () => {
    const rows = Array.from({ length: 7 }, (_, index) => rowOf(index));
    // Append times out of order, so the batch's base timestamp (the first record's) is not its minimum.
    const times = [1_600_000_000_050, 1_600_000_000_010, 1_600_000_000_099, 1_600_000_000_000, 1_600_000_000_050, 1_600_000_000_060, 1_600_000_000_070];
    const batch = recordBatchOfStoredRows(LOG_TABLE, { startOffset: 1_234, payload: encodeBatch(COLUMNS, rows, times) });

    const decoded = await decodeWithKafkajs(batch);
    expect(decoded).toMatchObject({ firstOffset: '1234', lastOffsetDelta: 6, firstTimestamp: '1600000000050', maxTimestamp: '1600000000099', partitionLeaderEpoch: -1, producerId: '-1', inTransaction: false, isControlBatch: false, timestampType: 0 });
    expect(consumed(decoded)).toEqual(rows.map((row, index) => ({ offset: 1_234 + index, timestamp: times[index], key: null, value: rowText(COLUMNS, row), headers: {} })));
  });

  it('is a well-formed uncompressed v2 batch by our own reader too (magic 2, CRC-32C, no producer)', () => {
    const batch = recordBatchOfStoredRows(LOG_TABLE, { startOffset: 9, payload: encodeBatch(COLUMNS, [rowOf(1), rowOf(2)], 5) });
    const view = readRecordBatch(batch);
    expect(view).toMatchObject({ baseOffset: 9, magic: 2, compression: 'none', timestampType: 'createTime', producerId: -1, producerEpoch: -1, baseSequence: -1, recordCount: 2, control: false, transactional: false });
    expect(decodeRecords(view).map((record) => [record.offset, record.timestamp])).toEqual([
      [9, 5],
      [10, 5],
    ]);
  });

  it('reads a batch as the leader stores a client Arrow append (stampBatch: one append time for all rows)', async () => {
    const rows = [rowOf(4), rowOf(5), rowOf(6)];
    const stamped = stampBatch(COLUMNS, encodeRows(COLUMNS, rows), 1_700_000_123_456, 100);
    const decoded = await decodeWithKafkajs(recordBatchOfStoredRows(LOG_TABLE, { startOffset: 0, payload: stamped.payload }));
    expect(consumed(decoded).map((record) => [record.offset, record.timestamp, record.value])).toEqual(rows.map((row, index) => [index, 1_700_000_123_456, rowText(COLUMNS, row)]));
  });

  it('gives a PK changelog the key as JSON of the primary key, and the change type as the scan names it in the mink.change header', async () => {
    const changes: Array<[ChangeType, Row]> = [
      ['+I', rowOf(1)],
      ['-U', rowOf(1)],
      ['+U', { ...rowOf(1), name: 'changed' }],
      ['-D', { ...rowOf(1), name: 'changed' }],
      ['+I', rowOf(2)],
    ];
    const payload = encodeBatch(
      COLUMNS,
      changes.map(([, row]) => row),
      [10, 11, 11, 12, 13],
      changes.map(([changeType]) => changeType),
    );
    const decoded = await decodeWithKafkajs(recordBatchOfStoredRows(PK_TABLE, { startOffset: 40, payload }));
    expect(consumed(decoded)).toEqual(
      changes.map(([changeType, row], index) => ({ offset: 40 + index, timestamp: [10, 11, 11, 12, 13][index], key: keyText(row), value: rowText(COLUMNS, row), headers: { [CHANGE_TYPE_HEADER]: changeType } })),
    );
  });

  it('gives -D records a null value (a tombstone) when asked, and nothing else changes', async () => {
    const changes: ChangeType[] = ['+I', '-D', '+I'];
    const rows = [rowOf(3), rowOf(3), rowOf(8)];
    const payload = encodeBatch(COLUMNS, rows, 77, changes);
    const decoded = consumed(await decodeWithKafkajs(recordBatchOfStoredRows(PK_TABLE, { startOffset: 0, payload }, { deletesAsTombstones: true })));
    expect(decoded.map((record) => [record.key, record.value, record.headers[CHANGE_TYPE_HEADER]])).toEqual([
      [keyText(rows[0]!), rowText(COLUMNS, rows[0]!), '+I'],
      [keyText(rows[1]!), null, '-D'],
      [keyText(rows[2]!), rowText(COLUMNS, rows[2]!), '+I'],
    ]);
  });

  const keyCases: Array<{ name: string; columns: ColumnSpec[]; primaryKey: string[]; row: Row; key: string }> = [
    { name: 'an int32 key is a JSON number', columns: [{ name: 'id', type: 'int32' }, { name: 'v', type: 'string' }], primaryKey: ['id'], row: { id: 5, v: 'x' }, key: '{"id":5}' },
    { name: 'an int64 key is a decimal string', columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: ['id'], row: { id: 2n ** 62n, v: 'x' }, key: '{"id":"4611686018427387904"}' },
    { name: 'a string key is escaped as JSON', columns: [{ name: 'v', type: 'int32' }, { name: 'k', type: 'string' }], primaryKey: ['k'], row: { v: 1, k: 'a"b\n✓' }, key: '{"k":"a\\"b\\n✓"}' },
    { name: 'a bytes key is base64', columns: [{ name: 'k', type: 'bytes' }], primaryKey: ['k'], row: { k: Uint8Array.from([0, 255, 1]) }, key: '{"k":"AP8B"}' },
    {
      name: 'a composite key follows the primary key order, not the table order',
      columns: [{ name: 'a', type: 'int32' }, { name: 'b', type: 'timestamp' }, { name: 'c', type: 'boolean' }],
      primaryKey: ['c', 'a'],
      row: { a: -3, b: 1_700_000_000_000, c: true },
      key: '{"c":true,"a":-3}',
    },
    {
      name: 'a column named __proto__ keeps its place',
      columns: [{ name: '__proto__', type: 'string' }, { name: 'v', type: 'int32' }],
      primaryKey: ['__proto__'],
      row: Object.assign(Object.defineProperty({}, '__proto__', { value: 'p', enumerable: true, writable: true }), { v: 2 }),
      key: '{"__proto__":"p"}',
    },
  ];
  it.each(keyCases)('renders PK keys as the HTTP API does: $name', async ({ columns, primaryKey, row, key }) => {
    const table: TableAsTopic = { columns, kind: 'pk', primaryKey };
    const decoded = consumed(await decodeWithKafkajs(recordBatchOfStoredRows(table, { startOffset: 3, payload: encodeBatch(columns, [row], 1, ['+I']) })));
    expect(decoded).toEqual([{ offset: 3, timestamp: 1, key, value: rowText(columns, row), headers: { [CHANGE_TYPE_HEADER]: '+I' } }]);
  });

  it('writes the partition leader epoch it is given', async () => {
    const batch = recordBatchOfStoredRows(LOG_TABLE, { startOffset: 0, payload: encodeBatch(COLUMNS, [rowOf(0)], 1) }, { partitionLeaderEpoch: 7 });
    expect((await decodeWithKafkajs(batch)).partitionLeaderEpoch).toBe(7);
  });

  it('renders a column added after the batch was written as null, as the scan does', async () => {
    const older: ColumnSpec[] = [{ name: 'id', type: 'int32' }];
    const table: TableAsTopic = { columns: [...older, { name: 'added', type: 'string' }], kind: 'log', primaryKey: [] };
    const decoded = consumed(await decodeWithKafkajs(recordBatchOfStoredRows(table, { startOffset: 0, payload: encodeBatch(older, [{ id: 1 }], 1) })));
    expect(decoded[0]!.value).toBe('{"id":1,"added":null}');
  });
});

describe('recordBatchOfStoredRows refuses what is not a batch of the table', () => {
  const logPayload = encodeBatch(COLUMNS, [rowOf(0), rowOf(1)], 1);
  const corrupt: Array<{ name: string; table: TableAsTopic; payload: Uint8Array; message: RegExp }> = [
    { name: 'a log batch read as a PK changelog (no change types)', table: PK_TABLE, payload: logPayload, message: /no '\$change' column/ },
    { name: 'a column stored with another type', table: { columns: [{ name: 'id', type: 'string' }], kind: 'log', primaryKey: [] }, payload: logPayload, message: /column 'id' is stored as Int64/ },
    { name: 'bytes that are not Arrow IPC', table: LOG_TABLE, payload: Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8, 9]), message: /not a batch of the table/ },
    { name: 'a cut-off payload', table: LOG_TABLE, payload: logPayload.subarray(0, logPayload.byteLength - 40), message: /not a batch of the table/ },
    { name: 'a batch with no rows', table: LOG_TABLE, payload: encodeBatch(COLUMNS, [], 1), message: /holds no rows/ },
  ];
  it.each(corrupt)('throws CorruptStoredRows for $name', ({ table, payload, message }) => {
    const attempt = () => recordBatchOfStoredRows(table, { startOffset: 0, payload });
    expect(attempt).toThrow(RecordBatchConversionError);
    expect(attempt).toThrow(message);
    try {
      attempt();
    } catch (error) {
      expect((error as RecordBatchConversionError).code).toBe('CorruptStoredRows');
    }
  });

  const misuse: Array<{ name: string; table: TableAsTopic; startOffset: number; message: RegExp }> = [
    { name: 'a primary key column the table lacks', table: { columns: COLUMNS, kind: 'pk', primaryKey: ['nope'] }, startOffset: 0, message: /primary key column 'nope'/ },
    { name: 'a PK table without a primary key', table: { columns: COLUMNS, kind: 'pk', primaryKey: [] }, startOffset: 0, message: /must name its primary key/ },
    { name: 'a negative start offset', table: LOG_TABLE, startOffset: -1, message: /start offset/ },
  ];
  it.each(misuse)('throws a plain Error for a caller bug: $name', ({ table, startOffset, message }) => {
    expect(() => recordBatchOfStoredRows(table, { startOffset, payload: logPayload })).toThrow(message);
  });
});

describe('recordBatchOfStoredRows, property', () => {
  const value = (column: ColumnSpec): fc.Arbitrary<unknown> => {
    switch (column.type) {
      case 'boolean':
        return fc.boolean();
      case 'int32':
        return fc.integer();
      case 'int64':
        return fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });
      case 'float64':
        return fc.double({ noNaN: true, noDefaultInfinity: true });
      case 'string':
        return fc.fullUnicodeString({ maxLength: 12 });
      case 'bytes':
        return fc.uint8Array({ maxLength: 12 });
      case 'timestamp':
        return fc.integer({ min: -(2 ** 40), max: 2 ** 42 });
    }
  };
  const rowArbitrary = fc.record(Object.fromEntries(COLUMNS.map((column) => [column.name, fc.option(value(column), { nil: null })]))) as fc.Arbitrary<Row>;

  it('kafkajs reads back every row as the JSON the row-by-row path gives, at its offset and timestamp, with key and change type on changelogs', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ row: rowArbitrary, timestamp: fc.integer({ min: 0, max: 2 ** 45 }), changeType: fc.constantFrom(...CHANGE_TYPES) }), { minLength: 1, maxLength: 30 }),
        fc.nat(2 ** 40),
        fc.boolean(),
        async (entries, startOffset, changelog) => {
          // A PK row always has its key.
          const rows = entries.map((entry, index) => (changelog ? { ...entry.row, id: BigInt(index) } : entry.row));
          const times = entries.map((entry) => entry.timestamp);
          const payload = encodeBatch(COLUMNS, rows, times, changelog ? entries.map((entry) => entry.changeType) : undefined);
          const table = changelog ? PK_TABLE : LOG_TABLE;
          const decoded = await decodeWithKafkajs(recordBatchOfStoredRows(table, { startOffset, payload }));
          expect(decoded.firstTimestamp).toBe(String(times[0]));
          expect(decoded.maxTimestamp).toBe(String(Math.max(...times)));
          expect(consumed(decoded)).toEqual(
            rows.map((row, index) => ({
              offset: startOffset + index,
              timestamp: times[index],
              key: changelog ? keyText(row) : null,
              value: rowText(COLUMNS, row),
              headers: changelog ? { [CHANGE_TYPE_HEADER]: entries[index]!.changeType } : {},
            })),
          );
        },
      ),
      { numRuns: 150 },
    );
  });
});
