import { LIMITS } from '@mink/config';
import { alterTableBody, createTableBody, readJsonArray, readSafeInteger, readScanRequest, readTableName, type CreateTableMessage, type ScanMessage } from './requests';

/**
 * gRPC requests as proto-loader decodes them (proto3 defaults for absent fields) turned into the HTTP API's
 * bodies and scan parameters, and every malformed one refused as InvalidArgument naming its field.
 */

describe('readJsonArray', () => {
  it.each<[string, string, unknown[]]>([
    ['rows', '[{"id":"9007199254740993","name":"a"}]', [{ id: '9007199254740993', name: 'a' }]],
    ['an empty array', '[]', []],
    ['spaces around', ' [1, 2] ', [1, 2]],
  ])('reads %s', (_name, text, rows) => {
    expect(readJsonArray(text, 'rows_json')).toEqual(rows);
  });

  it.each<[string, string | undefined, string]>([
    ['absent', undefined, 'rows_json is required: a JSON array'],
    ['empty', '', 'rows_json is required: a JSON array'],
    ['blank', '  ', 'rows_json is required: a JSON array'],
    ['not JSON', '[{"id":1}', 'rows_json: is not valid JSON'],
    ['an object', '{"rows":[]}', 'rows_json must be a JSON array, got object'],
    ['null', 'null', 'rows_json must be a JSON array, got null'],
    ['a number', '5', 'rows_json must be a JSON array, got number'],
    ['too deep', `${'['.repeat(LIMITS.jsonBodyDepthMax + 1)}${']'.repeat(LIMITS.jsonBodyDepthMax + 1)}`, `rows_json: nests deeper than ${LIMITS.jsonBodyDepthMax} levels`],
  ])('refuses %s, naming the field', (_name, text, message) => {
    expect(() => readJsonArray(text, 'rows_json')).toThrow(expect.objectContaining({ code: 'InvalidArgument', message: expect.stringContaining(message) }));
  });
});

describe('readTableName and readSafeInteger', () => {
  it('requires a table name', () => {
    expect(readTableName('events')).toBe('events');
    expect(() => readTableName('')).toThrow(expect.objectContaining({ code: 'InvalidArgument', message: 'table is required' }));
    expect(() => readTableName('', 'name')).toThrow('name is required');
  });

  it.each<[string, number | string]>([
    ['0', 0],
    ['9007199254740991', Number.MAX_SAFE_INTEGER],
    ['9007199254740992', 'offset must be a non-negative integer of at most 9007199254740991'],
    ['18446744073709551615', 'offset must be a non-negative integer'],
    ['-1', 'offset must be a non-negative integer'],
  ])('reads uint64 %s', (text, expected) => {
    if (typeof expected === 'number') expect(readSafeInteger(text, 'offset')).toBe(expected);
    else expect(() => readSafeInteger(text, 'offset')).toThrow(expected);
  });
});

const EMPTY_CREATE: CreateTableMessage = { name: '', columns: [], primaryKey: [], bucketKey: [], buckets: 0, properties: {} };

describe('createTableBody', () => {
  it.each<[string, Partial<CreateTableMessage>, Record<string, unknown>]>([
    ['a log table, defaults left out', { name: 'events', columns: [{ name: 'id', type: 'int64' }] }, { name: 'events', columns: [{ name: 'id', type: 'int64' }] }],
    [
      'a PK table with every field',
      { name: 'users', columns: [{ name: 'id', type: 'int64' }], primaryKey: ['id'], bucketKey: ['id'], buckets: 4, properties: { 'table.log.ttl': '1d' } },
      { name: 'users', columns: [{ name: 'id', type: 'int64' }], primaryKey: ['id'], bucketKey: ['id'], buckets: 4, properties: { 'table.log.ttl': '1d' } },
    ],
    [
      'a partitioned table, retain 0 left out, precreate 0 kept',
      { name: 'clicks', columns: [{ name: 'ts', type: 'timestamp' }], partition: { column: 'ts', unit: 'hour', retain: 0, precreate: 0 } },
      { name: 'clicks', columns: [{ name: 'ts', type: 'timestamp' }], partition: { column: 'ts', unit: 'hour', precreate: 0 } },
    ],
  ])('%s', (_name, request, body) => {
    expect(createTableBody({ ...EMPTY_CREATE, ...request })).toEqual(body);
  });

  it('refuses a request without a name', () => {
    expect(() => createTableBody(EMPTY_CREATE)).toThrow('name is required');
  });
});

describe('alterTableBody', () => {
  it('sets and removes properties', () => {
    expect(alterTableBody({ name: 't', set: { 'table.log.ttl': '2d' }, remove: ['table.datalake.freshness'] })).toEqual({
      properties: { 'table.log.ttl': '2d', 'table.datalake.freshness': null },
    });
  });

  it.each<[string, Record<string, string>, string[], string]>([
    ['nothing', {}, [], 'set or remove must name at least one property'],
    ['one property both ways', { a: '1' }, ['a'], "property 'a' is both in set and in remove"],
  ])('refuses %s', (_name, set, remove, message) => {
    expect(() => alterTableBody({ name: 't', set, remove })).toThrow(expect.objectContaining({ code: 'InvalidArgument', message }));
  });
});

const SCAN: ScanMessage = { table: 'events', bucket: 0, partition: '', offset: '0', limit: '0', columns: [], waitMs: 0, follow: false, format: 'SCAN_FORMAT_JSON' };

describe('readScanRequest', () => {
  it.each<[string, Partial<ScanMessage>, object]>([
    ['a plain scan: the default limit, no wait', {}, { parameters: { bucket: 0, offset: 0, limit: LIMITS.scanRecordsDefault, waitMs: 0 }, follow: false, recordsMax: LIMITS.scanRecordsDefault, format: 'json' }],
    [
      'a plain scan with everything',
      { bucket: 3, partition: '2026120110', offset: '42', limit: '7', columns: ['id'], waitMs: 500, format: 'SCAN_FORMAT_ARROW' },
      { parameters: { bucket: 3, offset: 42, limit: 7, waitMs: 500, partition: '2026120110', columns: ['id'] }, follow: false, recordsMax: 7, format: 'arrow' },
    ],
    ['a follow without a limit: every read waits the longest', { follow: true }, { parameters: { bucket: 0, offset: 0, limit: LIMITS.scanRecordsMax, waitMs: LIMITS.scanWaitMsMax }, follow: true, recordsMax: Number.POSITIVE_INFINITY }],
    ['a follow of 5 records waiting 2 s', { follow: true, limit: '5', waitMs: 2_000 }, { parameters: { limit: 5, waitMs: 2_000 }, follow: true, recordsMax: 5 }],
    ['a follow asking for a tiny wait waits the shortest a follow may', { follow: true, waitMs: 1 }, { parameters: { waitMs: LIMITS.scanFollowWaitMsMin }, follow: true }],
    ['a follow beyond one read', { follow: true, limit: '250000' }, { parameters: { limit: LIMITS.scanRecordsMax }, recordsMax: 250_000 }],
  ])('%s', (_name, request, plan) => {
    expect(readScanRequest({ ...SCAN, ...request })).toMatchObject({ table: 'events', ...plan });
  });

  it.each<[string, Partial<ScanMessage>, string]>([
    ['no table', { table: '' }, 'table is required'],
    ['an offset beyond 2^53', { offset: '9007199254740993' }, 'offset must be a non-negative integer'],
    ['a wait beyond the bound', { waitMs: LIMITS.scanWaitMsMax + 1 }, `wait_ms may be at most ${LIMITS.scanWaitMsMax}`],
    ['a plain scan beyond the record bound', { limit: String(LIMITS.scanRecordsMax + 1) }, `limit may be at most ${LIMITS.scanRecordsMax} without follow`],
    ['an unknown format number', { format: 7 as unknown as ScanMessage['format'] }, 'format 7 is not a ScanFormat'],
  ])('refuses %s', (_name, request, message) => {
    expect(() => readScanRequest({ ...SCAN, ...request })).toThrow(expect.objectContaining({ code: 'InvalidArgument', message: expect.stringContaining(message) }));
  });
});
