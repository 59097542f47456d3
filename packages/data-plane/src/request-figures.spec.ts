import { WithBinary } from '@mink/transport';
import { shardedFrom, type TableRecord } from '@mink/meta';
import { UNKNOWN_LABEL, metricLabelsOf, requestFigures, type RequestFigures } from './request-figures';

describe('requestFigures', () => {
  const batch = new Uint8Array(1234);
  const page = new WithBinary({ records: 40, nextOffset: 40, highWatermark: 90, startOffset: 0 }, [new Uint8Array(100), new Uint8Array(28)]);
  const cases: [string, unknown, unknown, RequestFigures | null][] = [
    ['an Arrow append counts the rows stored and the batch bytes', { op: 'append', table: 't', tableId: 1, partition: null, bucket: 3, batch }, { bucket: 3, baseOffset: 7, count: 62 }, { table: 't', partition: null, bucket: 3, op: 'append', rows: 62, bytes: 1234 }],
    ['a refused append counts no rows', { op: 'append', table: 't', bucket: 3, batch }, undefined, { table: 't', partition: null, bucket: 3, op: 'append', rows: 0, bytes: 1234 }],
    ['a bucket of a partition is named with its partition', { op: 'put', table: 't', partition: '2026120117', bucket: 0, rows: [{}, {}] }, {}, { table: 't', partition: '2026120117', bucket: 0, op: 'put', rows: 2, bytes: 0 }],
    ['a delete counts its keys', { op: 'delete', table: 't', bucket: 1, keys: [{}, {}, {}] }, {}, { table: 't', partition: null, bucket: 1, op: 'delete', rows: 3, bytes: 0 }],
    ['an Arrow put counts the operations answered and the batch bytes', { op: 'put', table: 't', bucket: 2, batch }, { bucket: 2, operations: 125, baseOffset: 0, count: 125 }, { table: 't', partition: null, bucket: 2, op: 'put', rows: 125, bytes: 1234 }],
    ['an Arrow delete counts the keys answered and the batch bytes', { op: 'delete', table: 't', bucket: 2, batch }, { bucket: 2, operations: 3, baseOffset: 9, count: 1 }, { table: 't', partition: null, bucket: 2, op: 'delete', rows: 3, bytes: 1234 }],
    ['a refused Arrow put counts no rows', { op: 'put', table: 't', bucket: 2, batch }, undefined, { table: 't', partition: null, bucket: 2, op: 'put', rows: 0, bytes: 1234 }],
    ['a lookup counts its keys', { op: 'lookup', table: 't', bucket: 1, keys: [{}] }, { rows: [null] }, { table: 't', partition: null, bucket: 1, op: 'lookup', rows: 1, bytes: 0 }],
    ['a prefix lookup counts its prefixes', { op: 'prefixLookup', table: 't', bucket: 1, prefixes: [{}, {}] }, {}, { table: 't', partition: null, bucket: 1, op: 'prefixLookup', rows: 2, bytes: 0 }],
    ['a scan counts the records and bytes of its page', { op: 'scan', table: 't', bucket: 2, offset: 0 }, page, { table: 't', partition: null, bucket: 2, op: 'scan', rows: 40, bytes: 128 }],
    ['a table-wide append counts for the whole table', { op: 'appendTable', table: 't', rows: [{}, {}] }, { appended: 2, buckets: [] }, { table: 't', partition: null, bucket: null, op: 'appendTable', rows: 2, bytes: 0 }],
    ['status is not about table data', { op: 'status' }, {}, null],
    ['describeTable is not counted', { op: 'describeTable', table: 't' }, {}, null],
    ['a bucket request without a bucket number is not counted', { op: 'scan', table: 't', bucket: 'x' }, undefined, null],
    ['a body that is not an object', 'junk', undefined, null],
  ];
  it.each(cases)('%s', (_what, request, result, figures) => {
    expect(requestFigures(request, result)).toEqual(figures);
  });
});

describe('metricLabelsOf', () => {
  // Proves a label only ever holds a table, partition and bucket the view holds: requests name them as their
  // callers spell them, refused ones included, so anything else would let any caller add series at will.
  const table = (name: string, buckets: number, partitions: string[] = []) => ({ name, buckets, partitions }) as unknown as TableRecord;
  const tables = shardedFrom<TableRecord>({ events: table('events', 4), hourly: table('hourly', 2, ['2026120116', '2026120117']) });
  const cases: [string, Pick<RequestFigures, 'table' | 'partition' | 'bucket'>, { table: string; bucket: string }][] = [
    ['a bucket of a table of the view', { table: 'events', partition: null, bucket: 3 }, { table: 'events', bucket: '3' }],
    ['a table-wide request', { table: 'events', partition: null, bucket: null }, { table: 'events', bucket: 'all' }],
    ['a bucket of a live partition', { table: 'hourly', partition: '2026120117', bucket: 1 }, { table: 'hourly', bucket: '2026120117/1' }],
    ['a table the view does not hold', { table: 'no-such-table', partition: null, bucket: 0 }, { table: UNKNOWN_LABEL, bucket: UNKNOWN_LABEL }],
    ['a made-up name of every request', { table: `t${'x'.repeat(200)}`, partition: null, bucket: null }, { table: UNKNOWN_LABEL, bucket: UNKNOWN_LABEL }],
    ['an inherited property name, not a table', { table: 'constructor', partition: null, bucket: 0 }, { table: UNKNOWN_LABEL, bucket: UNKNOWN_LABEL }],
    ['a bucket beyond the table\'s buckets', { table: 'events', partition: null, bucket: 4 }, { table: 'events', bucket: UNKNOWN_LABEL }],
    ['a huge bucket number', { table: 'events', partition: null, bucket: 9_007_199_254_740_991 }, { table: 'events', bucket: UNKNOWN_LABEL }],
    ['a negative bucket (a Kafka partition of -1)', { table: 'events', partition: null, bucket: -1 }, { table: 'events', bucket: UNKNOWN_LABEL }],
    ['a partition the table does not have', { table: 'hourly', partition: '1999010100', bucket: 0 }, { table: 'hourly', bucket: UNKNOWN_LABEL }],
    ['a partition of a table that has none', { table: 'events', partition: 'anything', bucket: 0 }, { table: 'events', bucket: UNKNOWN_LABEL }],
  ];
  it.each(cases)('%s', (_what, figures, labels) => {
    expect(metricLabelsOf(figures, tables)).toEqual(labels);
  });

  it('cannot collide with a table name', () => {
    // Proves the placeholder is no valid table name (letters, digits, _ . -, from a letter or _), so an unknown table never counts as a real one.
    expect(UNKNOWN_LABEL).not.toMatch(/^[A-Za-z_][A-Za-z0-9_.-]*$/);
  });
});
