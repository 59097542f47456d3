import { InvalidArgumentError } from '@mink/protocol';

import { clusterQueryOf, readBooleanParameter, readClusterQuery, readGroupParameter, readDeleteBody, readDryRun, readLookupBody, readPrefixLookupBody, readPutBody } from './request-bodies';

describe('bodies of the primary-key endpoints', () => {
  test.each<[string, () => unknown, RegExp]>([
    ['a put body that is not an object', () => readPutBody([{ id: 1 }]), /^put body must be \{rows: \[\.\.\.\], columns\?: \[\.\.\.\]\}$/],
    ['a put body without rows', () => readPutBody({}), /^put body: rows is required$/],
    ['a put body whose rows are not an array', () => readPutBody({ rows: { id: 1 } }), /^put body: rows must be an array$/],
    ['a put body with a misspelt field', () => readPutBody({ rows: [], column: ['id'] }), /^put body has an unknown field 'column'/],
    ['a put body whose columns are not names', () => readPutBody({ rows: [], columns: 'id' }), /^put body: columns must be an array of column names$/],
    ['a put body whose columns are null', () => readPutBody({ rows: [], columns: null }), /columns must be an array of column names/],
    ['a delete body with rows instead of keys', () => readDeleteBody({ rows: [] }), /^delete body has an unknown field 'rows'/],
    ['a delete body without keys', () => readDeleteBody(null), /^delete body must be \{keys: \[\.\.\.\]\}$/],
    ['a lookup body whose keys are not an array', () => readLookupBody({ keys: 'a' }), /^lookup body: keys must be an array$/],
    ['a lookup body with a bad projection', () => readLookupBody({ keys: [], columns: [1] }), /^lookup body: columns must be an array of column names$/],
    ['a prefix lookup body without prefixes', () => readPrefixLookupBody({ keys: [] }), /^prefix lookup body has an unknown field 'keys'/],
    ['a prefix lookup body whose limit is text', () => readPrefixLookupBody({ prefixes: [], limit: '10' }), /^prefix lookup body: limit must be a number, got string$/],
  ])('refuses %s', (_case, read, message) => {
    // Proves a body of the wrong shape is a 400 InvalidArgument naming the endpoint and the field.
    expect(read).toThrow(InvalidArgumentError);
    expect(read).toThrow(message);
  });

  test.each<[string, () => unknown, unknown]>([
    ['a full put', () => readPutBody({ rows: [{ id: 1 }] }), { rows: [{ id: 1 }] }],
    ['a partial put', () => readPutBody({ rows: [{ id: 1 }], columns: ['id'] }), { rows: [{ id: 1 }], columns: ['id'] }],
    ['a delete', () => readDeleteBody({ keys: [{ id: 1 }] }), { keys: [{ id: 1 }] }],
    ['a lookup with a projection', () => readLookupBody({ keys: [{ id: 1 }], columns: [] }), { keys: [{ id: 1 }], columns: [] }],
    ['a prefix lookup with a limit', () => readPrefixLookupBody({ prefixes: [{ shop: 'a' }], limit: 5 }), { prefixes: [{ shop: 'a' }], limit: 5 }],
    // Emptiness and row contents are the client's to judge against the table, so they pass here.
    ['an empty put', () => readPutBody({ rows: [] }), { rows: [] }],
  ])('reads %s', (_case, read, expected) => {
    // Proves well-shaped bodies come through unchanged, without fields they did not have.
    expect(read()).toEqual(expected);
  });
});

describe('the dryRun query parameter of a rebalance', () => {
  test.each<[string, string | string[] | undefined, boolean]>([
    ['absent: a real rebalance', undefined, false],
    ['true', 'true', true],
    ['1', '1', true],
    ['bare (?dryRun)', '', true],
    ['false', 'false', false],
    ['0', '0', false],
  ])('reads %s', (_case, value, expected) => {
    expect(readDryRun(value)).toBe(expected);
  });

  test.each<[string, string | string[]]>([
    ['a word that is not a boolean', 'maybe'],
    ['a capitalised boolean', 'True'],
    ['the parameter given twice', ['true', 'false']],
  ])('refuses %s instead of carrying out a real rebalance', (_case, value) => {
    // Proves a typo is a 400 naming the parameter, never a rebalance the caller did not ask for.
    expect(() => readDryRun(value)).toThrow(InvalidArgumentError);
    expect(() => readDryRun(value)).toThrow(/^dryRun must be true or false/);
  });
});

describe('readBooleanParameter', () => {
  test.each<[string | string[] | undefined, boolean, boolean]>([
    [undefined, true, true],
    [undefined, false, false],
    ['false', true, false],
    ['0', true, false],
    ['true', false, true],
    ['1', false, true],
    ['', false, true],
  ])('%p (absent = %p) -> %p', (value, absent, expected) => {
    // Proves GET /v1/cluster?buckets= reads like dryRun: absent takes the endpoint's default, bare is true.
    expect(readBooleanParameter('buckets', value, absent)).toBe(expected);
  });

  it('refuses anything else, naming the parameter', () => {
    expect(() => readBooleanParameter('buckets', 'no', true)).toThrow(InvalidArgumentError);
    expect(() => readBooleanParameter('buckets', ['true', 'true'], true)).toThrow(/^buckets must be true or false, got \["true","true"\]$/);
  });
});

describe('readClusterQuery', () => {
  test.each<[string | string[] | undefined, string | string[] | undefined, object]>([
    [undefined, undefined, { listBuckets: true }],
    ['false', undefined, { listBuckets: false }],
    [undefined, 'clicks', { listBuckets: true, table: 'clicks' }],
    ['true', '__consumer_offsets', { listBuckets: true, table: '__consumer_offsets' }],
  ])('buckets=%p table=%p -> %p', (buckets, table, expected) => {
    // Proves GET /v1/cluster?table= lists one table's buckets and leaves the rest of the query as it was.
    expect(readClusterQuery(buckets, table)).toEqual(expected);
  });

  test.each<[string, string | string[] | undefined, string | string[], RegExp]>([
    ['an empty name', undefined, '', /^table must not be empty$/],
    ['a name that is no table name', undefined, '9 bad<b>', /^table '9 bad<b>' is invalid/],
    ['a name over the length limit', undefined, 'x'.repeat(129), /longer than 128 characters/],
    ['a name given twice', undefined, ['a', 'b'], /^table must be given once, got \["a","b"\]$/],
    ['with buckets=false', 'false', 'clicks', /cannot go with buckets=false/],
    ['with a bad buckets=', 'no', 'clicks', /^buckets must be true or false/],
  ])('refuses %s', (_case, buckets, table, message) => {
    expect(() => readClusterQuery(buckets, table)).toThrow(InvalidArgumentError);
    expect(() => readClusterQuery(buckets, table)).toThrow(message);
  });
});

describe('clusterQueryOf', () => {
  test.each<[boolean, string | undefined, object]>([
    [true, undefined, { listBuckets: true }],
    [false, undefined, { listBuckets: false }],
    [true, 'clicks', { listBuckets: true, table: 'clicks' }],
    [true, '__consumer_offsets', { listBuckets: true, table: '__consumer_offsets' }],
  ])('listBuckets=%p table=%p -> %p', (listBuckets, table, expected) => {
    // Proves the one check HTTP's ?table= and gRPC's ClusterStatus.table share passes every valid query through.
    expect(clusterQueryOf(listBuckets, table)).toEqual(expected);
  });

  test.each<[string, boolean, string, string | undefined, RegExp]>([
    ['an empty name', true, '', undefined, /^table must not be empty$/],
    ['a name that is no table name', true, '9 bad<b>', undefined, /^table '9 bad<b>' is invalid/],
    ['a name over the length limit', true, 'x'.repeat(129), undefined, /longer than 128 characters/],
    ['a name with the buckets left out', false, 'clicks', undefined, /^table lists the buckets of that table; it cannot go with buckets=false$/],
    ['a name with omit_buckets, named as gRPC names it', false, 'clicks', 'omit_buckets', /^table lists the buckets of that table; it cannot go with omit_buckets$/],
  ])('refuses %s', (_case, listBuckets, table, omitting, message) => {
    expect(() => clusterQueryOf(listBuckets, table, omitting)).toThrow(InvalidArgumentError);
    expect(() => clusterQueryOf(listBuckets, table, omitting)).toThrow(message);
  });
});

describe('readGroupParameter', () => {
  test.each<[string | undefined, object]>([
    [undefined, {}],
    ['billing', { group: 'billing' }],
    ['a group/with spaces é', { group: 'a group/with spaces é' }],
  ])('%p -> %p', (value, expected) => {
    // Proves GET /v1/kafka/groups?group= takes any Kafka group id, and lists every group without it.
    expect(readGroupParameter(value)).toEqual(expected);
  });

  test.each<[string, string | string[]]>([
    ['an empty id', ''],
    ['an id given twice', ['a', 'b']],
  ])('refuses %s', (_case, value) => {
    expect(() => readGroupParameter(value)).toThrow(InvalidArgumentError);
    expect(() => readGroupParameter(value)).toThrow(/^group must be one group id, got /);
  });
});
