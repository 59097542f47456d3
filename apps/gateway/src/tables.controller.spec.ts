import 'reflect-metadata';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { MinkClient, TableClient } from '@mink/client';
import { emptyShardedMap, shardedFrom, type TableRecord } from '@mink/meta';
import { InvalidArgumentError, type WriteTableResult } from '@mink/protocol';
import { LIMITS } from '@mink/config';
import { decodeBatch, stampBatch, type BucketingOfRows, type RowsByBucket } from '@mink/records';
import { GatewayService } from '@mink/http-api';
import { InFlightBytes, type ClusterMember } from '@mink/runtime';

import { startGatewayOver } from './gateway-app.fixture';

/**
 * The primary-key endpoints of docs/architecture.md §12 over HTTP, with the table client replaced by a recorder: routes,
 * status codes, error bodies, and the arguments each endpoint hands to the client.
 */

const ORDERS: TableRecord = {
  id: 7,
  name: 'orders',
  kind: 'pk',
  columns: [
    { name: 'shop', type: 'string' },
    { name: 'id', type: 'int64' },
  ],
  primaryKey: ['shop', 'id'],
  bucketKey: ['shop'],
  buckets: 2,
  properties: {},
  createdAtMs: 0,
  partitions: [],
};

const EVENTS: TableRecord = {
  id: 8,
  name: 'events',
  kind: 'log',
  columns: [
    { name: 'id', type: 'int64' },
    { name: 'name', type: 'string' },
  ],
  primaryKey: [],
  bucketKey: ['id'],
  buckets: 2,
  properties: {},
  createdAtMs: 0,
  partitions: [],
};

const WRITTEN: WriteTableResult = { written: 1, buckets: [{ bucket: 1, operations: 1, baseOffset: 4, count: 1 }] };

describe('gateway primary-key endpoints', () => {
  let app: NestFastifyApplication;
  const inFlight = new InFlightBytes(LIMITS.httpInFlightBodyBytesMax);
  const calls: { operation: string; args: unknown[] }[] = [];
  const table = {
    put: async (...args: unknown[]) => (calls.push({ operation: 'put', args }), WRITTEN),
    delete: async (...args: unknown[]) => (calls.push({ operation: 'delete', args }), WRITTEN),
    lookup: async (...args: unknown[]) => (calls.push({ operation: 'lookup', args }), { rows: [{ shop: 'a', id: '1' }, null] }),
    prefixLookup: async (...args: unknown[]) => {
      calls.push({ operation: 'prefixLookup', args });
      if ((args[1] as { limit?: number }).limit === 0) throw new InvalidArgumentError('limit must be an integer from 1 to 10000, got 0');
      return { results: [{ rows: [], truncated: false }] };
    },
  } as unknown as TableClient;
  const events = {
    appendEncoded: async (encode: (bucketing: BucketingOfRows) => RowsByBucket | null) => {
      const read = encode({ columns: EVENTS.columns, bucketKey: EVENTS.bucketKey, buckets: EVENTS.buckets, spreadStart: 0 });
      // The rows each bucket's batch holds, as the leader would store them (stampBatch adds the append time).
      const rowsByBucket =
        read && [...read.buckets].map(([bucket, rows]) => [bucket, rows.count, Array.from({ length: rows.count }, (_, index) => String(tableRowsOf(rows.encodeRange(index, index + 1))))]);
      calls.push({ operation: 'appendEncoded', args: [rowsByBucket] });
      return read && { appended: read.rowCount, buckets: [] };
    },
    append: async (...args: unknown[]) => (calls.push({ operation: 'append', args }), { appended: 1, buckets: [] }),
  } as unknown as TableClient;

  beforeAll(async () => {
    const view = { tables: shardedFrom({ orders: ORDERS, events: EVENTS }), buckets: emptyShardedMap(), nodes: {} };
    // The view does not change here: catching up with the log finds it as it is.
    const member = { view, store: { catchUp: async () => view } } as unknown as ClusterMember;
    const client = { table: (name: string) => (name === 'orders' ? table : name === 'events' ? events : undefined) } as unknown as MinkClient;
    app = await startGatewayOver(new GatewayService(member, client), { inFlight });
  });

  afterAll(async () => {
    await app.close();
  });

  beforeEach(() => {
    calls.length = 0;
  });

  async function post(path: string, payload: unknown): Promise<{ status: number; body: unknown }> {
    const response = await app.getHttpAdapter().getInstance().inject({ method: 'POST', url: path, payload: payload as object });
    return { status: response.statusCode, body: response.json() };
  }

  it('answers 503 Unavailable with Retry-After, before reading the body, while the bodies in flight are at their bound', async () => {
    // Proves the backpressure of LIMITS.httpInFlightBodyBytesMax: a full budget refuses, a freed one serves,
    // and every request gives its bytes back once answered.
    expect(inFlight.admit(LIMITS.httpInFlightBodyBytesMax)).toBe(true);
    const refused = await app.getHttpAdapter().getInstance().inject({ method: 'POST', url: '/v1/tables/orders/put', payload: { rows: [{ shop: 'a', id: 1 }] } });
    expect(refused.statusCode).toBe(503);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.json()).toMatchObject({ error: { code: 'Unavailable', message: expect.stringMatching(/does not fit below/) } });
    expect(calls).toEqual([]);
    inFlight.release(LIMITS.httpInFlightBodyBytesMax);
    expect((await post('/v1/tables/orders/put', { rows: [{ shop: 'a', id: 1 }] })).status).toBe(200);
    expect(inFlight.heldBytes).toBe(0);
  });

  test.each<[string, unknown, string, unknown[], unknown]>([
    ['put', { rows: [{ shop: 'a', id: 1 }] }, 'put', [[{ shop: 'a', id: 1 }], {}], WRITTEN],
    ['put', { rows: [{ shop: 'a', id: 1 }], columns: ['shop', 'id'] }, 'put', [[{ shop: 'a', id: 1 }], { columns: ['shop', 'id'] }], WRITTEN],
    ['delete', { keys: [{ shop: 'a', id: 1 }] }, 'delete', [[{ shop: 'a', id: 1 }]], WRITTEN],
    ['lookup', { keys: [{ shop: 'a', id: 1 }, { shop: 'b', id: 2 }], columns: ['id'] }, 'lookup', [[{ shop: 'a', id: 1 }, { shop: 'b', id: 2 }], { columns: ['id'] }], { rows: [{ shop: 'a', id: '1' }, null] }],
    ['prefix-lookup', { prefixes: [{ shop: 'a' }], limit: 5 }, 'prefixLookup', [[{ shop: 'a' }], { limit: 5 }], { results: [{ rows: [], truncated: false }] }],
  ])('POST /v1/tables/orders/%s answers 200 with the client result', async (endpoint, payload, operation, args, expected) => {
    // Proves each endpoint is routed, hands the body's parts to the matching client call, and answers 200.
    const response = await post(`/v1/tables/orders/${endpoint}`, payload);
    expect(response).toEqual({ status: 200, body: expected });
    expect(calls).toEqual([{ operation, args }]);
  });

  test.each<[string, unknown, RegExp]>([
    ['put', { rows: { shop: 'a' } }, /put body: rows must be an array/],
    ['put', { rows: [], colums: ['id'] }, /unknown field 'colums'/],
    ['delete', { keys: 'a' }, /delete body: keys must be an array/],
    ['lookup', [], /lookup body must be/],
    ['prefix-lookup', { prefixes: [{ shop: 'a' }], limit: 0 }, /limit must be an integer/],
  ])('POST /v1/tables/orders/%s with a bad body answers 400 InvalidArgument', async (endpoint, payload, message) => {
    // Proves bad bodies become {error:{code:'InvalidArgument', message}} with status 400.
    const response = await post(`/v1/tables/orders/${endpoint}`, payload);
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ error: { code: 'InvalidArgument', message: expect.stringMatching(message) } });
  });

  test.each<[string, unknown]>([
    ['put', { rows: [{ shop: 'a', id: 1 }] }],
    ['delete', { keys: [{ shop: 'a', id: 1 }] }],
    ['lookup', { keys: [{ shop: 'a', id: 1 }] }],
    ['prefix-lookup', { prefixes: [{ shop: 'a' }] }],
  ])('POST /v1/tables/missing/%s answers 404 NotFound', async (endpoint, payload) => {
    // Proves an unknown table is a 404 and the client is never called.
    const response = await post(`/v1/tables/missing/${endpoint}`, payload);
    expect(response).toEqual({ status: 404, body: { error: { code: 'NotFound', message: "table 'missing' does not exist" } } });
    expect(calls).toEqual([]);
  });

  test.each<[string, Buffer, RegExp]>([
    ['bytes that are not UTF-8 inside a string', Buffer.concat([Buffer.from('{"rows":[{"shop":"'), Buffer.from([0xc3, 0x28]), Buffer.from('","id":1}]}')]), /^request body is not valid UTF-8$/],
    ['a lone continuation byte', Buffer.concat([Buffer.from('{"rows":[{"shop":"a'), Buffer.from([0x80]), Buffer.from('","id":1}]}')]), /^request body is not valid UTF-8$/],
    ['text that is not JSON', Buffer.from('{"rows": [}'), /^request body is not valid JSON/],
    ['arrays nested 100 000 deep', Buffer.from(`{"rows":[{"shop":${'['.repeat(100_000)}${']'.repeat(100_000)},"id":1}]}`), /^request body nests deeper than 64 levels of arrays and objects$/],
  ])('a put whose body holds %s answers 400 and writes nothing', async (_case, payload, message) => {
    // Proves the body is decoded strictly: invalid UTF-8 is refused instead of being stored with U+FFFD in it.
    const response = await app.getHttpAdapter().getInstance().inject({ method: 'POST', url: '/v1/tables/orders/put', payload, headers: { 'content-type': 'application/json' } });
    expect({ status: response.statusCode, body: response.json() }).toEqual({ status: 400, body: { error: { code: 'InvalidArgument', message: expect.stringMatching(message) } } });
    expect(calls).toEqual([]);
  });

  test('a put whose strings hold multi-byte UTF-8 is read as sent', async () => {
    // Proves the strict decoder keeps valid non-ASCII text intact.
    const response = await app.getHttpAdapter().getInstance().inject({ method: 'POST', url: '/v1/tables/orders/put', payload: Buffer.from('{"rows":[{"shop":"café 日本 😀","id":1}]}'), headers: { 'content-type': 'application/json' } });
    expect(response.statusCode).toBe(200);
    expect(calls).toEqual([{ operation: 'put', args: [[{ shop: 'café 日本 😀', id: 1 }], {}] }]);
  });

  test('an append body of the common shape is read straight into each bucket\'s Arrow batch', async () => {
    // Proves the append route gets its bytes (rawJsonRoutes) and GatewayService reads them in one pass.
    const response = await app.getHttpAdapter().getInstance().inject({
      method: 'POST',
      url: '/v1/tables/events/append',
      payload: Buffer.from('{"rows":[{"id":1,"name":"café"},{"id":"2","name":"b"},{"id":3}]}'),
      headers: { 'content-type': 'application/json' },
    });
    expect({ status: response.statusCode, body: response.json() }).toEqual({ status: 200, body: { appended: 3, buckets: [] } });
    expect(calls).toHaveLength(1);
    expect(calls[0]!.operation).toBe('appendEncoded');
    const [rowsByBucket] = calls[0]!.args as [[number, number, string[]][]];
    expect(rowsByBucket.flatMap(([, , rows]) => rows).sort()).toEqual(['1|café', '2|b', '3|null']);
    expect(rowsByBucket.reduce((sum, [, count]) => sum + count, 0)).toBe(3);
  });

  test('an append body outside that shape is parsed the general way and handed to the client as rows', async () => {
    const response = await app.getHttpAdapter().getInstance().inject({
      method: 'POST',
      url: '/v1/tables/events/append',
      payload: Buffer.from('{"rows":[{"id":1.0,"name":"x"}]}'),
      headers: { 'content-type': 'application/json' },
    });
    expect(response.statusCode).toBe(200);
    expect(calls).toEqual([
      { operation: 'appendEncoded', args: [null] },
      { operation: 'append', args: [[{ id: 1, name: 'x' }]] },
    ]);
  });

  test.each<[string, Buffer, number, RegExp]>([
    ['bytes that are not UTF-8', Buffer.concat([Buffer.from('{"rows":[{"name":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}]}')]), 400, /^request body is not valid UTF-8$/],
    ['text that is not JSON', Buffer.from('{"rows": [}'), 400, /^request body is not valid JSON/],
    ['rows that are not a list', Buffer.from('{"rows": 5}'), 400, /^body must be \{rows: \[\.\.\.\]\}$/],
  ])('an append whose body holds %s answers 400 with the general path\'s message', async (_case, payload, status, message) => {
    const response = await app.getHttpAdapter().getInstance().inject({ method: 'POST', url: '/v1/tables/events/append', payload, headers: { 'content-type': 'application/json' } });
    expect({ status: response.statusCode, body: response.json() }).toEqual({ status, body: { error: { code: 'InvalidArgument', message: expect.stringMatching(message) } } });
    expect(calls.filter((call) => call.operation === 'append')).toEqual([]);
  });

  test('an append to a missing table answers 404 before reading its body', async () => {
    const response = await app.getHttpAdapter().getInstance().inject({ method: 'POST', url: '/v1/tables/missing/append', payload: { rows: [{ id: 1 }] } });
    expect({ status: response.statusCode, body: response.json() }).toEqual({ status: 404, body: { error: { code: 'NotFound', message: "table 'missing' does not exist" } } });
    expect(calls).toEqual([]);
  });
});

/** The rows of a batch as the client sends it, as "id|name" text: checked and stored as the leader does (stampBatch), then decoded. */
function tableRowsOf(batch: Uint8Array): string[] {
  const stored = stampBatch(EVENTS.columns, batch, 0, 1_000).payload;
  return decodeBatch(EVENTS.columns, stored).rows.map((row) => `${String(row.id)}|${String(row.name)}`);
}
