import { WithBinary } from '@mink/transport';
import { requestFigures, type RequestFigures } from './request-figures';

describe('requestFigures', () => {
  const batch = new Uint8Array(1234);
  const page = new WithBinary({ records: 40, nextOffset: 40, highWatermark: 90, startOffset: 0 }, [new Uint8Array(100), new Uint8Array(28)]);
  const cases: [string, unknown, unknown, RequestFigures | null][] = [
    ['an Arrow append counts the rows stored and the batch bytes', { op: 'append', table: 't', tableId: 1, partition: null, bucket: 3, batch }, { bucket: 3, baseOffset: 7, count: 62 }, { table: 't', bucket: '3', op: 'append', rows: 62, bytes: 1234 }],
    ['a refused append counts no rows', { op: 'append', table: 't', bucket: 3, batch }, undefined, { table: 't', bucket: '3', op: 'append', rows: 0, bytes: 1234 }],
    ['a bucket of a partition is named with its partition', { op: 'put', table: 't', partition: '2026120117', bucket: 0, rows: [{}, {}] }, {}, { table: 't', bucket: '2026120117/0', op: 'put', rows: 2, bytes: 0 }],
    ['a delete counts its keys', { op: 'delete', table: 't', bucket: 1, keys: [{}, {}, {}] }, {}, { table: 't', bucket: '1', op: 'delete', rows: 3, bytes: 0 }],
    ['an Arrow put counts the operations answered and the batch bytes', { op: 'put', table: 't', bucket: 2, batch }, { bucket: 2, operations: 125, baseOffset: 0, count: 125 }, { table: 't', bucket: '2', op: 'put', rows: 125, bytes: 1234 }],
    ['an Arrow delete counts the keys answered and the batch bytes', { op: 'delete', table: 't', bucket: 2, batch }, { bucket: 2, operations: 3, baseOffset: 9, count: 1 }, { table: 't', bucket: '2', op: 'delete', rows: 3, bytes: 1234 }],
    ['a refused Arrow put counts no rows', { op: 'put', table: 't', bucket: 2, batch }, undefined, { table: 't', bucket: '2', op: 'put', rows: 0, bytes: 1234 }],
    ['a lookup counts its keys', { op: 'lookup', table: 't', bucket: 1, keys: [{}] }, { rows: [null] }, { table: 't', bucket: '1', op: 'lookup', rows: 1, bytes: 0 }],
    ['a prefix lookup counts its prefixes', { op: 'prefixLookup', table: 't', bucket: 1, prefixes: [{}, {}] }, {}, { table: 't', bucket: '1', op: 'prefixLookup', rows: 2, bytes: 0 }],
    ['a scan counts the records and bytes of its page', { op: 'scan', table: 't', bucket: 2, offset: 0 }, page, { table: 't', bucket: '2', op: 'scan', rows: 40, bytes: 128 }],
    ['a table-wide append counts for the whole table', { op: 'appendTable', table: 't', rows: [{}, {}] }, { appended: 2, buckets: [] }, { table: 't', bucket: 'all', op: 'appendTable', rows: 2, bytes: 0 }],
    ['status is not about table data', { op: 'status' }, {}, null],
    ['describeTable is not counted', { op: 'describeTable', table: 't' }, {}, null],
    ['a bucket request without a bucket number is not counted', { op: 'scan', table: 't', bucket: 'x' }, undefined, null],
    ['a body that is not an object', 'junk', undefined, null],
  ];
  it.each(cases)('%s', (_what, request, result, figures) => {
    expect(requestFigures(request, result)).toEqual(figures);
  });
});
