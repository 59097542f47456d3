import type { NatsConnection } from 'nats';
import { LIMITS } from '@mink/config';
import { decideWriterSequence, type ColumnSpec, type WriterState } from '@mink/meta';
import {
  InvalidArgumentError,
  MinkError,
  NotLeaderError,
  SUBJECTS,
  UnavailableError,
  toErrorBody,
  type AppendBucketRequest,
  type DeleteBucketRequest,
  type LookupBucketRequest,
  type PrefixLookupBucketRequest,
  type PutBucketRequest,
  type TableRoute,
  type WriteBucketResult,
} from '@mink/protocol';
import { Float64, Int32, Int64, RecordBatch, Utf8, makeData, tableFromIPC, vectorFromArray } from 'apache-arrow';
import { batchRowCount, bucketOfRow, columnsInTableOrder, decodeBatch, decodeRowsStream, encodeRows, rowsToJson, stampBatch, validateRows, type Row } from '@mink/records';
import { answeringMultiMessages, decodeMultiMessage, decodeRequest, isMultiMessage, openRequest } from '@mink/transport';
import { decidePkWriterOrder } from '@mink/pk';

import { TableClient } from './table-client';
import { eventually } from '@mink/testing';

/**
 * TableClient against a fake NATS connection that plays the data nodes: it answers describeTable from a
 * route and bucket requests from an in-memory table, checks that each request reached the bucket its
 * rows belong to, and records every request in arrival order.
 */

const COLUMNS: ColumnSpec[] = [
  { name: 'shop', type: 'string' },
  { name: 'id', type: 'int64' },
  { name: 'amount', type: 'float64' },
];
const BUCKETS = 4;

function pkRoute(overrides: Partial<TableRoute> = {}): TableRoute {
  return {
    table: 'orders',
    tableId: 7,
    kind: 'pk',
    columns: COLUMNS,
    primaryKey: ['shop', 'id'],
    bucketKey: ['shop'],
    buckets: BUCKETS,
    leaders: Array.from({ length: BUCKETS }, (_, bucket) => ({ node: `n${bucket % 2}`, address: addressOf(bucket % 2), leaderEpoch: 1 })),
    ...overrides,
  };
}

function addressOf(node: number): string {
  return SUBJECTS.nodeAddress(`n${node}`);
}

type BucketRequest = PutBucketRequest | DeleteBucketRequest | LookupBucketRequest | PrefixLookupBucketRequest;

/**
 * The JSON rows of a put (or the keys of a delete) of a table with COLUMNS, read as a leader reads them: from
 * the request's Arrow batch of the put's columns (the primary key's for a delete) in table order, or its JSON.
 */
function writtenRowsOf(request: PutBucketRequest | DeleteBucketRequest, primaryKey: readonly string[]): Record<string, unknown>[] {
  if (request.batch === undefined) return (request.op === 'put' ? request.rows : request.keys) as Record<string, unknown>[];
  const columns = columnsInTableOrder(COLUMNS, request.op === 'delete' ? primaryKey : request.columns);
  return rowsToJson(columns, decodeRowsStream(columns, request.batch, { rowCountMax: LIMITS.pkBatchOperationsMax, required: [...primaryKey] }));
}

interface Received {
  subject: string;
  request: BucketRequest;
}

/** Delivery of one request: the handler may hold it back until `release` is called. */
type Handler = (subject: string, request: BucketRequest) => unknown;

class FakeCluster {
  readonly received: Received[] = [];
  /** Stored rows by bucket, keyed by the JSON of their primary key. */
  readonly stored = new Map<number, Map<string, Record<string, unknown>>>();
  private readonly nextOffset = new Map<number, number>();
  /** Delays of the answers to successive describeTable requests, in milliseconds (none once used up). */
  describeDelaysMs: number[] = [];
  /** Overrides the fake data node for the next requests (e.g. to answer NotLeader). */
  intercept: ((subject: string, request: BucketRequest) => unknown) | null = null;

  constructor(readonly route: TableRoute) {}

  readonly nc = {
    request: answeringMultiMessages(async (subject: string, data: Uint8Array) => {
      const body = decodeRequest(data) as { op: string };
      let reply: unknown;
      try {
        reply = { result: await this.answer(subject, body) };
      } catch (error) {
        reply = toErrorBody(error);
      }
      return { data: new TextEncoder().encode(JSON.stringify(reply)) };
    }),
  } as unknown as NatsConnection;

  private async answer(subject: string, body: { op: string }): Promise<unknown> {
    if (subject === SUBJECTS.anyNodeRpc && body.op === 'describeTable') {
      const delayMs = this.describeDelaysMs.shift() ?? 0;
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
      return structuredClone(this.route);
    }
    const request = body as BucketRequest;
    this.received.push({ subject, request });
    if (this.intercept) {
      const intercepted = await this.intercept(subject, request);
      if (intercepted !== undefined) return intercepted;
    }
    const leader = this.route.leaders[request.bucket];
    if (!leader || SUBJECTS.nodeRpc(leader.address) !== subject) throw new Error(`bucket ${request.bucket} asked at ${subject}`);
    return this.serve(request);
  }

  /** The data node's part: checks routing, then applies or reads. */
  private serve(request: BucketRequest): unknown {
    const keyColumns = this.route.primaryKey;
    const bucketRows = this.stored.get(request.bucket) ?? new Map<string, Record<string, unknown>>();
    this.stored.set(request.bucket, bucketRows);
    const keyOf = (row: Record<string, unknown>) => JSON.stringify(keyColumns.map((name) => row[name]));
    const checkBucket = (rows: Record<string, unknown>[], bucketKey: string[], allowed?: string[]) => {
      for (const row of validateRows(COLUMNS, rows, allowed ? { allowedColumns: allowed } : {})) {
        expect(bucketOfRow(row, bucketKey, this.route.buckets)).toBe(request.bucket);
      }
    };
    switch (request.op) {
      case 'put': {
        const rows = writtenRowsOf(request, keyColumns);
        checkBucket(rows, this.route.bucketKey, request.columns);
        for (const row of rows) bucketRows.set(keyOf(row), { ...bucketRows.get(keyOf(row)), ...row });
        return this.written(request.bucket, rows.length);
      }
      case 'delete': {
        const keys = writtenRowsOf(request, keyColumns);
        checkBucket(keys, this.route.bucketKey, keyColumns);
        for (const key of keys) bucketRows.delete(keyOf(key));
        return this.written(request.bucket, keys.length);
      }
      case 'lookup': {
        checkBucket(request.keys as Record<string, unknown>[], this.route.bucketKey, keyColumns);
        return { rows: (request.keys as Record<string, unknown>[]).map((key) => project(bucketRows.get(keyOf(key)) ?? null, request.columns)) };
      }
      case 'prefixLookup': {
        checkBucket(request.prefixes as Record<string, unknown>[], this.route.bucketKey, this.route.bucketKey);
        const limit = request.limit ?? LIMITS.prefixLookupRowsMax;
        return {
          results: (request.prefixes as Record<string, unknown>[]).map((prefix) => {
            const matching = [...bucketRows.values()].filter((row) => this.route.bucketKey.every((name) => row[name] === prefix[name]));
            return { rows: matching.slice(0, limit).map((row) => project(row, request.columns)!), truncated: matching.length > limit };
          }),
        };
      }
    }
  }

  private written(bucket: number, operations: number): WriteBucketResult {
    const baseOffset = this.nextOffset.get(bucket) ?? 0;
    this.nextOffset.set(bucket, baseOffset + operations);
    return { bucket, operations, baseOffset, count: operations };
  }
}

function project(row: Record<string, unknown> | null, columns: string[] | undefined): Record<string, unknown> | null {
  if (row === null || columns === undefined) return row;
  return Object.fromEntries(columns.map((name) => [name, row[name] ?? null]));
}

const SHOPS = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta'];

function bucketOfShop(shop: string): number {
  return bucketOfRow({ shop }, ['shop'], BUCKETS);
}

describe('TableClient on a primary-key table', () => {
  it('puts rows to the bucket of their bucket key and answers with results by bucket then offset', async () => {
    // Proves put routes each row by bucketOfRow, sends each bucket's rows as an Arrow batch of the table's columns, and sorts the answer.
    const cluster = new FakeCluster(pkRoute());
    const client = new TableClient(cluster.nc, 'orders');
    const rows = SHOPS.map((shop, index) => ({ shop, id: index, amount: index * 1.5 }));
    const result = await client.put(rows);
    expect(result.written).toBe(rows.length);
    expect(result.buckets.map((bucket) => bucket.bucket)).toEqual([...new Set(SHOPS.map(bucketOfShop))].sort((a, b) => a - b));
    expect(result.buckets.reduce((sum, bucket) => sum + bucket.operations, 0)).toBe(rows.length);
    const put = cluster.received.find((received) => received.request.op === 'put')!.request as PutBucketRequest;
    expect(put).toMatchObject({ table: 'orders', tableId: 7, partition: null });
    expect(put.columns).toBeUndefined();
    expect(put.rows).toBeUndefined();
    const sent = decodeRowsStream(COLUMNS, put.batch!, { rowCountMax: rows.length });
    expect(sent.length).toBeGreaterThan(0);
    for (const row of sent) expect(row).toEqual({ shop: row.shop, id: BigInt(SHOPS.indexOf(row.shop as string)), amount: SHOPS.indexOf(row.shop as string) * 1.5 });
    expect(cluster.received.filter((received) => received.request.op === 'put').flatMap((received) => decodeRowsStream(COLUMNS, (received.request as PutBucketRequest).batch!, { rowCountMax: rows.length }).map((row) => row.shop))).toHaveLength(rows.length);
  });

  it('fails a put with one bad row before anything is sent', async () => {
    // Proves validation covers the whole call: a bad row or a missing key sends nothing at all.
    const cluster = new FakeCluster(pkRoute());
    const client = new TableClient(cluster.nc, 'orders');
    await expect(client.put([{ shop: 'alpha', id: 1 }, { shop: 'beta', id: 'x' }])).rejects.toThrow(InvalidArgumentError);
    await expect(client.put([{ shop: 'alpha', amount: 1 }])).rejects.toThrow(/column 'id': a value is required/);
    expect(cluster.received).toEqual([]);
  });

  it('sends a partial put with its columns and refuses one that leaves a key column out', async () => {
    // Proves partial puts carry `columns` and that a column list without the whole key is refused up front.
    const cluster = new FakeCluster(pkRoute());
    const client = new TableClient(cluster.nc, 'orders');
    await client.put([{ shop: 'alpha', id: 1, amount: 1 }]);
    await client.put([{ shop: 'alpha', id: 1, amount: 2 }], { columns: ['shop', 'id', 'amount'] });
    const partial = cluster.received[1].request as PutBucketRequest;
    expect(partial.columns).toEqual(['shop', 'id', 'amount']);
    const before = cluster.received.length;
    await expect(client.put([{ shop: 'alpha', amount: 3 }], { columns: ['shop', 'amount'] })).rejects.toThrow(
      /must include every primary key column; missing 'id'/,
    );
    await expect(client.put([{ shop: 'alpha', id: 1 }], { columns: ['shop', 'id', 'colour'] })).rejects.toThrow(/unknown column 'colour'/);
    await expect(client.put([{ shop: 'alpha', id: 1, amount: 3 }], { columns: ['shop', 'id'] })).rejects.toThrow(/column 'amount' is not among the request's columns/);
    expect(cluster.received.length).toBe(before);
  });

  it('looks keys up across buckets and answers rows[i] for keys[i], null where there is no row', async () => {
    // Proves lookup answers are reassembled in key order from per-bucket answers, with nulls in place.
    const cluster = new FakeCluster(pkRoute());
    const client = new TableClient(cluster.nc, 'orders');
    await client.put(SHOPS.map((shop, index) => ({ shop, id: index, amount: index })));
    const keys = [...SHOPS].reverse().map((shop) => ({ shop, id: SHOPS.indexOf(shop) }));
    keys.splice(3, 0, { shop: 'alpha', id: 99 });
    const { rows } = await client.lookup(keys, { columns: ['amount', 'shop'] });
    expect(rows).toEqual(keys.map((key) => (key.id === 99 ? null : { amount: key.id, shop: key.shop })));
  });

  it('cuts a lookup into requests of at most lookupKeysPerRequestMax keys', async () => {
    // Proves a large lookup is split per bucket under the key bound and still answers in key order.
    const cluster = new FakeCluster(pkRoute({ buckets: 1, leaders: [{ node: 'n0', address: addressOf(0), leaderEpoch: 1 }] }));
    const client = new TableClient(cluster.nc, 'orders');
    await client.put([{ shop: 'alpha', id: 5, amount: 1 }]);
    const count = LIMITS.lookupKeysPerRequestMax + 2;
    const keys = Array.from({ length: count }, (_, index) => ({ shop: 'alpha', id: index }));
    const { rows } = await client.lookup(keys);
    const lookups = cluster.received.filter((received) => received.request.op === 'lookup').map((received) => (received.request as LookupBucketRequest).keys.length);
    expect(lookups).toEqual([LIMITS.lookupKeysPerRequestMax, 2]);
    expect(rows).toHaveLength(count);
    expect(rows.filter((row) => row !== null)).toEqual([{ shop: 'alpha', id: '5', amount: 1 }]);
    expect(rows[5]).not.toBeNull();
  });

  it('deletes keys in the bucket of their bucket key', async () => {
    // Proves delete validates keys as exactly the primary key and routes them like put.
    const cluster = new FakeCluster(pkRoute());
    const client = new TableClient(cluster.nc, 'orders');
    await client.put([{ shop: 'alpha', id: 1, amount: 1 }, { shop: 'beta', id: 2, amount: 2 }]);
    const result = await client.delete([{ shop: 'alpha', id: 1 }]);
    expect(result).toEqual({ written: 1, buckets: [{ bucket: bucketOfShop('alpha'), operations: 1, baseOffset: expect.any(Number), count: 1 }] });
    expect((await client.lookup([{ shop: 'alpha', id: 1 }, { shop: 'beta', id: 2 }])).rows.map((row) => row?.shop ?? null)).toEqual([null, 'beta']);
    await expect(client.delete([{ shop: 'alpha', id: 1, amount: 1 }])).rejects.toThrow(/column 'amount' is not among the request's columns/);
    await expect(client.delete([])).rejects.toThrow(/keys must not be empty/);
  });

  it('answers prefix lookups in request order with the limit applied per prefix', async () => {
    // Proves prefixes are routed by the bucket key and each answer lands at its prefix's position.
    const cluster = new FakeCluster(pkRoute());
    const client = new TableClient(cluster.nc, 'orders');
    await client.put([
      { shop: 'alpha', id: 1, amount: 1 },
      { shop: 'alpha', id: 2, amount: 2 },
      { shop: 'beta', id: 3, amount: 3 },
    ]);
    const { results } = await client.prefixLookup([{ shop: 'beta' }, { shop: 'gamma' }, { shop: 'alpha' }], { limit: 1, columns: ['id'] });
    expect(results).toEqual([
      { rows: [{ id: '3' }], truncated: false },
      { rows: [], truncated: false },
      { rows: [{ id: '1' }], truncated: true },
    ]);
    const request = cluster.received.find((received) => received.request.op === 'prefixLookup')!.request as PrefixLookupBucketRequest;
    expect(request.limit).toBe(1);
    await expect(client.prefixLookup([{ shop: 'alpha', id: 1 }])).rejects.toThrow(/column 'id' is not among the request's columns/);
  });

  it('refuses a prefix lookup on a table bucketed by its whole primary key', async () => {
    // Proves the call fails as InvalidArgument pointing at lookup, and nothing is sent.
    const cluster = new FakeCluster(pkRoute({ bucketKey: ['shop', 'id'] }));
    const client = new TableClient(cluster.nc, 'orders');
    await expect(client.prefixLookup([{ shop: 'alpha' }])).rejects.toThrow(/proper prefix of the primary key; use lookup/);
    expect(cluster.received).toEqual([]);
  });

  it('follows a NotLeader redirect and keeps the new leader for later requests', async () => {
    // Proves a put answered NotLeader is retried at the leader the redirect names, as appends are.
    const bucket = bucketOfShop('alpha');
    const route = pkRoute();
    const cluster = new FakeCluster(route);
    const stale = structuredClone(route);
    const staleSubject = SUBJECTS.nodeRpc(stale.leaders[bucket]!.address);
    const actualAddress = addressOf(9);
    route.leaders[bucket] = { node: 'n9', address: actualAddress, leaderEpoch: 2 };
    cluster.intercept = (subject, request) => {
      if (subject === SUBJECTS.nodeRpc(actualAddress)) return undefined;
      throw new NotLeaderError('not the leader', { table: 'orders', bucket: request.bucket, node: 'n9', to: actualAddress, leaderEpoch: 2 });
    };
    const client = new TableClient(cluster.nc, 'orders');
    // The client starts from the stale route, as if the leader moved after it described the table.
    (client as unknown as { route: TableRoute }).route = stale;
    const result = await client.put([{ shop: 'alpha', id: 1, amount: 1 }]);
    expect(result.buckets).toEqual([{ bucket, operations: 1, baseOffset: 0, count: 1 }]);
    expect(cluster.received.map((received) => received.subject)).toEqual([staleSubject, SUBJECTS.nodeRpc(actualAddress)]);
    await client.lookup([{ shop: 'alpha', id: 1 }]);
    expect(cluster.received[2].subject).toBe(SUBJECTS.nodeRpc(actualAddress));
  });

  it('abandons a request to a leader that stopped answering once the route names a new leader, and sends it there', async () => {
    // Proves a dead or paused leader costs about clientLeaderCheckMs after the move, not the 10 s request timeout.
    const cluster = new FakeCluster(pkRoute());
    const bucket = bucketOfShop('alpha');
    const oldLeader = cluster.route.leaders[bucket]!;
    const newIndex = oldLeader.node === 'n0' ? 1 : 0;
    cluster.intercept = (subject) => (subject === SUBJECTS.nodeRpc(oldLeader.address) ? new Promise<never>(() => undefined) : undefined);
    const client = new TableClient(cluster.nc, 'orders');
    const startedMs = Date.now();
    const put = client.put([{ shop: 'alpha', id: 1, amount: 1 }]);
    await eventually('the leader to receive the request', () => cluster.received.length === 1, { timeoutMs: 1_000, intervalMs: 5 });
    cluster.route.leaders[bucket] = { node: `n${newIndex}`, address: addressOf(newIndex), leaderEpoch: oldLeader.leaderEpoch + 1 };
    await expect(put).resolves.toMatchObject({ written: 1 });
    expect(Date.now() - startedMs).toBeLessThan(LIMITS.requestTimeoutMs / 2);
    expect(cluster.received.map((received) => received.subject)).toEqual([SUBJECTS.nodeRpc(oldLeader.address), SUBJECTS.nodeRpc(addressOf(newIndex))]);
  });

  it('retries a write answered Unavailable', async () => {
    // Proves Unavailable is retried after the answer's retry delay rather than failing the call.
    const cluster = new FakeCluster(pkRoute());
    let unavailable = 1;
    cluster.intercept = () => {
      if (unavailable-- > 0) throw new UnavailableError('bucket opening', 10);
      return undefined;
    };
    const client = new TableClient(cluster.nc, 'orders');
    await expect(client.delete([{ shop: 'alpha', id: 1 }])).resolves.toMatchObject({ written: 1 });
    expect(cluster.received).toHaveLength(2);
  });

  it('sends writes of one bucket one at a time in call order with appendsInFlightPerBucket 1', async () => {
    // Proves a later put of a key never overtakes an earlier one: the second waits for the first's answer.
    // (With several in flight, the leader orders them by sequence: see 'TableClient puts' below.)
    const cluster = new FakeCluster(pkRoute());
    const releases: (() => void)[] = [];
    cluster.intercept = (_subject, request) => {
      if (request.op !== 'put') return undefined;
      return new Promise<undefined>((resolve) => releases.push(() => resolve(undefined)));
    };
    const client = new TableClient(cluster.nc, 'orders', { appendsInFlightPerBucket: 1 });
    const first = client.put([{ shop: 'alpha', id: 1, amount: 1 }]);
    const second = client.put([{ shop: 'alpha', id: 1, amount: 2 }]);
    const third = client.delete([{ shop: 'alpha', id: 1 }]);
    await eventually('the leader to receive the request', () => cluster.received.length >= 1, { timeoutMs: 1_000, intervalMs: 5 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    // The route was fetched once for all three calls, and only the first put has gone out.
    expect(cluster.received.map((received) => received.request.op)).toEqual(['put']);
    releases.shift()!();
    await first;
    await eventually('the leader to receive the request', () => cluster.received.length >= 2, { timeoutMs: 1_000, intervalMs: 5 });
    expect(writtenRowsOf(cluster.received[1].request as PutBucketRequest, ['shop', 'id'])).toEqual([{ shop: 'alpha', id: '1', amount: 2 }]);
    releases.shift()!();
    await second;
    expect(await third).toMatchObject({ written: 1 });
    expect(cluster.received.map((received) => received.request.op)).toEqual(['put', 'put', 'delete']);
    expect(cluster.stored.get(bucketOfShop('alpha'))!.size).toBe(0);
  });

  it('keeps call order even when the first call waits longer for the route', async () => {
    // Proves writes enter the bucket queues in call order, not in the order their route lookups answer.
    const cluster = new FakeCluster(pkRoute());
    cluster.describeDelaysMs = [50];
    const client = new TableClient(cluster.nc, 'orders');
    const first = client.put([{ shop: 'alpha', id: 1, amount: 1 }]);
    const second = client.delete([{ shop: 'alpha', id: 1 }]);
    await Promise.all([first, second]);
    expect(cluster.received.map((received) => received.request.op)).toEqual(['put', 'delete']);
    expect(cluster.stored.get(bucketOfShop('alpha'))!.size).toBe(0);
  });

  it('refuses append on a primary-key table', async () => {
    // Proves append names put as the call to use.
    const cluster = new FakeCluster(pkRoute());
    const client = new TableClient(cluster.nc, 'orders');
    await expect(client.append([{ shop: 'alpha', id: 1, amount: 1 }])).rejects.toThrow("table 'orders' is a primary-key table: use put");
  });
});

describe('TableClient on a log table', () => {
  it.each<[string, (client: TableClient) => Promise<unknown>]>([
    ['put', (client) => client.put([{ shop: 'alpha', id: 1 }])],
    ['delete', (client) => client.delete([{ shop: 'alpha', id: 1 }])],
    ['lookup', (client) => client.lookup([{ shop: 'alpha', id: 1 }])],
    ['prefixLookup', (client) => client.prefixLookup([{ shop: 'alpha' }])],
  ])('refuses %s', async (_operation, call) => {
    // Proves PK operations on a log table fail as InvalidArgument naming append, and nothing is sent.
    const cluster = new FakeCluster(pkRoute({ kind: 'log', primaryKey: [], bucketKey: [] }));
    const error = await call(new TableClient(cluster.nc, 'orders')).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(MinkError);
    expect((error as MinkError).code).toBe('InvalidArgument');
    expect((error as MinkError).message).toBe("table 'orders' is a log table: use append");
    expect(cluster.received).toEqual([]);
  });
});

/** A fake NATS connection of one leader: answers describeTable with `route()` and every other request with `write`, errors as error bodies. */
function fakeLeaderConnection(route: () => TableRoute, write: (body: unknown) => Promise<unknown>): NatsConnection {
  return {
    request: answeringMultiMessages(async (_subject: string, data: Uint8Array) => {
      const body = decodeRequest(data) as { op: string };
      let reply: unknown;
      try {
        reply = { result: body.op === 'describeTable' ? structuredClone(route()) : await write(body) };
      } catch (error) {
        reply = toErrorBody(error);
      }
      return { data: new TextEncoder().encode(JSON.stringify(reply)) };
    }),
  } as unknown as NatsConnection;
}

/**
 * A fake leader of a log table for the append pipeline: it answers describeTable, holds each append until
 * the test releases it (or answers at once), and decides each one with the real decideWriterSequence over
 * its own committed writer state, so a batch that overtakes its predecessor is refused as the data node
 * refuses it. Committed rows are kept in commit order.
 */
class FakeLogLeader {
  readonly received: AppendBucketRequest[] = [];
  readonly committedRows: unknown[] = [];
  private readonly writers = new Map<string, WriterState>();
  private readonly inFlight = new Map<string, Set<number>>();
  private nextOffset = 0;
  holdReplies = false;
  private readonly held: (() => void)[] = [];
  /** Answers the next appends instead of the leader (once each), by writer seq; undefined lets it through. */
  failures = new Map<number, () => unknown>();

  readonly route: TableRoute = {
    table: 'events',
    tableId: 3,
    kind: 'log',
    columns: COLUMNS,
    primaryKey: [],
    bucketKey: ['shop'],
    buckets: 1,
    leaders: [{ node: 'n0', address: addressOf(0), leaderEpoch: 1 }],
  };

  readonly nc = fakeLeaderConnection(() => this.route, (body) => this.append(body as AppendBucketRequest));

  releaseAll(): void {
    this.holdReplies = false;
    for (const release of this.held.splice(0)) release();
  }

  private async append(request: AppendBucketRequest): Promise<unknown> {
    this.received.push(request);
    const writer = request.writer!;
    const failure = this.failures.get(writer.seq);
    if (failure) {
      this.failures.delete(writer.seq);
      const answer = failure();
      if (answer !== undefined) return answer;
    }
    const seqs = this.inFlight.get(writer.id) ?? new Set<number>();
    const decision = decideWriterSequence({ seq: writer.seq, ackedSeq: writer.acked, committed: this.writers.get(writer.id), inFlight: seqs });
    if (decision.kind === 'duplicate') return { bucket: 0, baseOffset: decision.batch.baseOffset, count: decision.batch.count, duplicate: true };
    if (decision.kind === 'outOfOrder') throw new UnavailableError(`sequence ${writer.seq} before ${decision.expected}`, 0);
    if (decision.kind !== 'write') throw new MinkError('Conflict', `unexpected ${decision.kind}`);
    seqs.add(writer.seq);
    this.inFlight.set(writer.id, seqs);
    if (this.holdReplies) await new Promise<void>((resolve) => this.held.push(resolve));
    seqs.delete(writer.seq);
    // The leader's part of an Arrow append: check and stamp the batch, then read its rows back.
    const rows = decodeBatch(COLUMNS, stampBatch(COLUMNS, request.batch!, 0, LIMITS.appendRowsPerRequestMax).payload).rows;
    const baseOffset = this.nextOffset;
    this.nextOffset += rows.length;
    this.committedRows.push(...rows);
    const previous = this.writers.get(writer.id);
    this.writers.set(writer.id, {
      seq: writer.seq,
      baseOffset,
      count: rows.length,
      earlier: previous ? [{ seq: previous.seq, baseOffset: previous.baseOffset, count: previous.count }, ...(previous.earlier ?? [])].slice(0, 4) : [],
    });
    return { bucket: 0, baseOffset, count: rows.length };
  }
}

const rowOf = (id: number) => ({ shop: 'alpha', id, amount: id });

/** Waits until a held leader received five numbered requests, then checks that no more came and none named an acknowledgement. */
async function expectFiveInFlightUnacknowledged(received: { writer?: { seq: number; acked?: number } }[]): Promise<void> {
  await eventually('five requests in flight', () => received.length >= 5, { timeoutMs: 1_000, intervalMs: 5 });
  await new Promise((resolve) => setTimeout(resolve, 20));
  expect(received.map((request) => [request.writer!.seq, request.writer!.acked])).toEqual([
    [0, -1],
    [1, -1],
    [2, -1],
    [3, -1],
    [4, -1],
  ]);
}

describe('TableClient appends: several requests in flight per bucket', () => {
  it('keeps up to appendsInFlightPerBucket appends of a bucket in flight, in sequence order, naming the newest acknowledged sequence', async () => {
    // Proves the window: 5 requests go out before any answer, the rest follow as answers come, and the rows commit in call order.
    const leader = new FakeLogLeader();
    leader.holdReplies = true;
    const client = new TableClient(leader.nc, 'events', { appendsInFlightPerBucket: 5, pipelinedAppendBytesMin: 1 });
    const calls = Array.from({ length: 7 }, (_, index) => client.append([rowOf(index)]));
    await expectFiveInFlightUnacknowledged(leader.received);
    leader.releaseAll();
    const results = await Promise.all(calls);
    expect(results.map((result) => result.buckets[0]!.baseOffset)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    // The two appends that waited for the window went out together, as the next sequence (see the next test).
    expect(leader.received.slice(5).map((request) => [request.writer!.seq, batchRowCount(request.batch!)])).toEqual([[5, 2]]);
    expect(leader.received[5]!.writer!.acked).toBeGreaterThanOrEqual(0);
    expect(leader.committedRows.map((row) => String((row as { id: bigint }).id))).toEqual(['0', '1', '2', '3', '4', '5', '6']);
  });

  it('by default sends small appends one request at a time, merged while one is in flight, and full ones up to the window', async () => {
    // Proves fillsRequest in the pump: seven one-row appends make one request in flight and then one merged
    // request of the six that waited, although the window had room; appends of a full request each go out at
    // once, five in flight, and so does each append of more than half a request.
    const leader = new FakeLogLeader();
    leader.holdReplies = true;
    const client = new TableClient(leader.nc, 'events', { appendsInFlightPerBucket: 5 });
    const small = Array.from({ length: 7 }, (_, index) => client.append([rowOf(index)]));
    await eventually('the first append in flight', () => leader.received.length === 1, { timeoutMs: 1_000, intervalMs: 5 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(leader.received).toHaveLength(1);
    leader.releaseAll();
    const results = await Promise.all(small);
    expect(results.map((result) => result.buckets[0]!.baseOffset)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(leader.received.map((request) => [request.writer!.seq, batchRowCount(request.batch!)])).toEqual([
      [0, 1],
      [1, 6],
    ]);

    leader.holdReplies = true;
    const shop = 'x'.repeat(LIMITS.appendRequestBytesMax);
    const full = Array.from({ length: 6 }, (_, index) => client.append([{ shop, id: 7 + index, amount: 0 }]));
    await eventually('five full appends in flight', () => leader.received.length === 2 + 5, { timeoutMs: 2_000, intervalMs: 5 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(leader.received).toHaveLength(7);
    leader.releaseAll();
    await Promise.all(full);
    expect(leader.received.slice(2).map((request) => batchRowCount(request.batch!))).toEqual([1, 1, 1, 1, 1, 1]);

    // Two appends of 60 % of a request each (more than LIMITS.appendRequestBytesPipelined): the second goes out beside the first.
    leader.holdReplies = true;
    const most = 'y'.repeat(Math.floor(0.6 * LIMITS.appendRequestBytesMax));
    const halves = [13, 14].map((id) => client.append([{ shop: most, id, amount: 0 }]));
    await eventually('both appends in flight', () => leader.received.length === 10, { timeoutMs: 2_000, intervalMs: 5 });
    leader.releaseAll();
    await Promise.all(halves);
    expect(leader.committedRows.map((row) => Number((row as { id: bigint }).id))).toEqual(Array.from({ length: 15 }, (_, index) => index));
  });

  it('sends the appends that waited for the window as one request, and answers each with its own offsets', async () => {
    // Proves merging: appends queued behind a full window go out as one numbered request of all their rows
    // (Arrow record batches back to back), within the request bounds, and each call gets its own rows' offsets.
    const leader = new FakeLogLeader();
    leader.holdReplies = true;
    const client = new TableClient(leader.nc, 'events', { appendsInFlightPerBucket: 1 });
    const first = client.append([rowOf(0)]);
    await eventually('the first append in flight', () => leader.received.length === 1, { timeoutMs: 1_000, intervalMs: 5 });
    const sizes = [3, 1, 2, LIMITS.appendRowsPerRequestMax - 6, 4];
    let next = 1;
    const calls = sizes.map((size) => client.append(Array.from({ length: size }, () => rowOf(next++))));
    const appendArrow = client.appendArrow(tableFromIPC(encodeRows(COLUMNS, [{ shop: 'alpha', id: BigInt(next), amount: 1 }])).batches[0]!);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(leader.received).toHaveLength(1);
    leader.releaseAll();
    const results = await Promise.all([first, ...calls, appendArrow]);
    expect(results.map((result) => [result.buckets[0]!.baseOffset, result.buckets[0]!.count])).toEqual([
      [0, 1],
      [1, 3],
      [4, 1],
      [5, 2],
      [7, LIMITS.appendRowsPerRequestMax - 6],
      [LIMITS.appendRowsPerRequestMax + 1, 4],
      [LIMITS.appendRowsPerRequestMax + 5, 1],
    ]);
    // Merged up to the row bound of one request: the first four waiting calls, then the last call and the Arrow one.
    expect(leader.received.map((request) => [request.writer!.seq, batchRowCount(request.batch!)])).toEqual([
      [0, 1],
      [1, LIMITS.appendRowsPerRequestMax],
      [2, 5],
    ]);
    expect(leader.committedRows.map((row) => Number((row as { id: bigint }).id))).toEqual(Array.from({ length: next + 1 }, (_, index) => index));
  });

  it('refuses a producer batch the leader would refuse before sending it, so it cannot fail the appends merged with it', async () => {
    // Proves appendArrow checks a batch as the leader does: bad UTF-8 in a string column fails the call unsent.
    const leader = new FakeLogLeader();
    const client = new TableClient(leader.nc, 'events');
    const bad = new RecordBatch({
      shop: makeData({ type: new Utf8(), length: 1, valueOffsets: Int32Array.of(0, 2), data: Uint8Array.of(0xff, 0xfe) }),
      id: makeData({ type: new Int64(), length: 1, data: BigInt64Array.of(1n) }),
      amount: makeData({ type: new Float64(), length: 1, data: Float64Array.of(1) }),
    });
    const error = await client.appendArrow(bad).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(MinkError);
    expect((error as MinkError).code).toBe('InvalidArgument');
    expect((error as MinkError).message).toMatch(/column 'shop' holds bytes that are not UTF-8/);
    expect(leader.received).toEqual([]);
  });

  it('sends one at a time with appendsInFlightPerBucket 1', async () => {
    // Proves the window bound is the option: the second request waits for the first answer.
    const leader = new FakeLogLeader();
    leader.holdReplies = true;
    const client = new TableClient(leader.nc, 'events', { appendsInFlightPerBucket: 1 });
    const calls = [client.append([rowOf(0)]), client.append([rowOf(1)])];
    await eventually('the leader to receive the request', () => leader.received.length >= 1, { timeoutMs: 1_000, intervalMs: 5 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(leader.received).toHaveLength(1);
    leader.releaseAll();
    await Promise.all(calls);
    expect(leader.committedRows.map((row) => String((row as { id: bigint }).id))).toEqual(['0', '1']);
  });

  it('retries a failed append before the ones behind it, which never commit ahead of it', async () => {
    // Proves order and exactly-once across a failure: seq 1 fails once, seq 2 and 3 arrive before its retry
    // and are refused as out of order, then everything commits once, in call order.
    const leader = new FakeLogLeader();
    leader.failures.set(1, () => {
      throw new UnavailableError('upload failed', 30);
    });
    const client = new TableClient(leader.nc, 'events', { appendsInFlightPerBucket: 5, random: () => 0 });
    const results = await Promise.all(Array.from({ length: 5 }, (_, index) => client.append([rowOf(index)])));
    expect(leader.committedRows.map((row) => String((row as { id: bigint }).id))).toEqual(['0', '1', '2', '3', '4']);
    expect(results.map((result) => result.buckets[0]!.baseOffset)).toEqual([0, 1, 2, 3, 4]);
    const seqsSent = leader.received.map((request) => request.writer!.seq);
    expect(seqsSent.filter((seq) => seq === 1).length).toBe(2);
  });

  it('answers a retry of an earlier batch after a later one was acknowledged as a duplicate', async () => {
    // Proves the remembered window: the reply of seq 0 is lost after it committed, seq 1 is acknowledged,
    // and the retry of seq 0 gets its original offsets without writing its rows twice.
    const leader = new FakeLogLeader();
    let lost = false;
    const client = new TableClient(leader.nc, 'events', { appendsInFlightPerBucket: 5, random: () => 0 });
    type Request = (subject: string, data: Uint8Array) => Promise<{ data: Uint8Array }>;
    const fake = leader.nc as unknown as { request: Request };
    const realRequest = fake.request.bind(fake);
    fake.request = answeringMultiMessages(async (subject, data) => {
      const reply = await realRequest(subject, data);
      const body = decodeRequest(data) as AppendBucketRequest;
      if (body.op === 'append' && body.writer!.seq === 0 && !lost) {
        lost = true;
        await new Promise((resolve) => setTimeout(resolve, 30));
        throw Object.assign(new Error('timeout'), { code: 'TIMEOUT' });
      }
      return reply;
    });
    const results = await Promise.all([client.append([rowOf(0)]), client.append([rowOf(1)])]);
    expect(leader.committedRows.map((row) => String((row as { id: bigint }).id))).toEqual(['0', '1']);
    expect(results.map((result) => result.buckets[0]!.baseOffset)).toEqual([0, 1]);
    expect(leader.received.filter((request) => request.writer!.seq === 0)).toHaveLength(2);
  });

  it('holds the window at the oldest unanswered sequence, so a retry after a lost reply is still remembered', async () => {
    // Found by the cluster simulation: with a window counted in requests, a request whose reply was lost
    // held one place while the others went on, so by its retry the leader had forgotten it (Conflict).
    // Here the reply of seq 0 is lost for a while: nothing past seq 1 goes out meanwhile, and the retry
    // of seq 0 is answered with its original offsets.
    const leader = new FakeLogLeader();
    const client = new TableClient(leader.nc, 'events', { appendsInFlightPerBucket: 2, pipelinedAppendBytesMin: 1, random: () => 0 });
    type Request = (subject: string, data: Uint8Array) => Promise<{ data: Uint8Array }>;
    const fake = leader.nc as unknown as { request: Request };
    const realRequest = fake.request.bind(fake);
    // Counted from the first send of seq 0 until its retry, so it does not matter whether seq 1 leaves with it.
    let seq0Sends = 0;
    const sentWhileUnanswered: number[] = [];
    fake.request = answeringMultiMessages(async (subject, data) => {
      const body = decodeRequest(data) as AppendBucketRequest;
      if (body.op === 'append') {
        if (body.writer!.seq === 0) seq0Sends++;
        else if (seq0Sends === 1) sentWhileUnanswered.push(body.writer!.seq);
      }
      const reply = await realRequest(subject, data);
      if (body.op === 'append' && body.writer!.seq === 0 && seq0Sends === 1) {
        // The reply of the first send of seq 0 is lost.
        await new Promise((resolve) => setTimeout(resolve, 50));
        throw Object.assign(new Error('timeout'), { code: 'TIMEOUT' });
      }
      return reply;
    });
    const results = await Promise.all(Array.from({ length: 8 }, (_, index) => client.append([rowOf(index)])));
    expect(seq0Sends).toBe(2);
    expect(sentWhileUnanswered).toEqual([1]);
    expect(results.map((result) => result.buckets[0]!.baseOffset)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(leader.committedRows.map((row) => String((row as { id: bigint }).id))).toEqual(['0', '1', '2', '3', '4', '5', '6', '7']);
  });

  it('never retries a request of a writer generation that ended, and starts the next one after it settled', async () => {
    // Found by the cluster simulation: seq 0 is lost on the way (no reply), seq 1 is refused for good, so the
    // writer generation ends. The retry of seq 0 must not be written under the ended writer after the new
    // generation's first append (an acknowledged append stored after a later call's rows).
    const leader = new FakeLogLeader();
    leader.failures.set(1, () => {
      throw new MinkError('Conflict', 'refused for good');
    });
    const client = new TableClient(leader.nc, 'events', { appendsInFlightPerBucket: 5, pipelinedAppendBytesMin: 1, random: () => 0 });
    type Request = (subject: string, data: Uint8Array) => Promise<{ data: Uint8Array }>;
    const fake = leader.nc as unknown as { request: Request };
    const realRequest = fake.request.bind(fake);
    let dropped = false;
    fake.request = answeringMultiMessages(async (subject, data) => {
      const body = decodeRequest(data) as AppendBucketRequest;
      if (body.op === 'append' && body.writer!.seq === 0 && !dropped) {
        dropped = true;
        await new Promise((resolve) => setTimeout(resolve, 50));
        throw Object.assign(new Error('timeout'), { code: 'TIMEOUT' });
      }
      return realRequest(subject, data);
    });
    const first = client.append([rowOf(0)]);
    const firstFailed = first.catch((error: unknown) => error);
    await expect(client.append([rowOf(1)])).rejects.toThrow('refused for good');
    const third = client.append([rowOf(2)]);
    expect(await firstFailed).toMatchObject({ message: expect.stringMatching(/earlier append to bucket 0 of table 'events' failed/) });
    await expect(third).resolves.toMatchObject({ appended: 1 });
    expect(leader.committedRows.map((row) => String((row as { id: bigint }).id))).toEqual(['2']);
    const generations = leader.received.map((request) => request.writer!.id);
    expect(generations[generations.length - 1]).not.toBe(generations[0]);
  });

  it('fails the appends sent behind one that failed for good, and starts a new writer for later appends', async () => {
    // Proves nothing overtakes a failure: seq 0 is refused for good, seq 1 (sent behind it) fails without
    // committing, and the next call writes as a new writer id from sequence 0.
    const leader = new FakeLogLeader();
    leader.failures.set(0, () => {
      throw new MinkError('Conflict', 'refused for good');
    });
    const client = new TableClient(leader.nc, 'events', { appendsInFlightPerBucket: 5, pipelinedAppendBytesMin: 1, random: () => 0 });
    const first = client.append([rowOf(0)]);
    const second = client.append([rowOf(1)]);
    await expect(first).rejects.toThrow('refused for good');
    await expect(second).rejects.toThrow(/earlier append to bucket 0 of table 'events' failed/);
    expect(leader.committedRows).toEqual([]);
    await expect(client.append([rowOf(2)])).resolves.toMatchObject({ appended: 1 });
    const last = leader.received[leader.received.length - 1]!;
    expect(last.writer!.seq).toBe(0);
    expect(last.writer!.id).not.toBe(leader.received[0]!.writer!.id);
    expect(leader.committedRows.map((row) => String((row as { id: bigint }).id))).toEqual(['2']);
  });
});

/**
 * A fake leader of a one-bucket PK table for the write pipeline: it holds each put until the test releases
 * it (or answers at once) and orders them with the real decidePkWriterOrder, keeping per writer what a
 * data node's PkBucket keeps (next sequence, failed sequence, pending and remembered ones). The names put
 * are kept in the order they were written.
 */
class FakePkLeader {
  readonly received: PutBucketRequest[] = [];
  readonly written: string[] = [];
  private readonly writers = new Map<string, { next: number; failedAt: number | null; pending: Map<number, Promise<unknown>>; remembered: Map<number, unknown> }>();
  private nextOffset = 0;
  holdReplies = false;
  private readonly held: (() => void)[] = [];
  /** Fails the next put of these sequences (once each) after accepting it. */
  failures = new Set<number>();

  readonly route: TableRoute = pkRoute({ buckets: 1, leaders: [{ node: 'n0', address: addressOf(0), leaderEpoch: 1 }] });

  readonly nc = fakeLeaderConnection(() => this.route, (body) => this.put(body as PutBucketRequest));

  releaseAll(): void {
    this.holdReplies = false;
    for (const release of this.held.splice(0)) release();
  }

  private put(request: PutBucketRequest): Promise<unknown> {
    this.received.push(request);
    const writer = request.writer!;
    const known = this.writers.get(writer.id);
    const decision = decidePkWriterOrder({ seq: writer.seq, acked: writer.acked, known });
    if (decision.kind === 'join') return known!.pending.get(writer.seq)!;
    if (decision.kind === 'answer') return Promise.resolve(known!.remembered.get(writer.seq));
    if (decision.kind === 'outOfOrder') return Promise.reject(new UnavailableError(`sequence ${writer.seq} before ${decision.expected}`, 0));
    if (decision.kind === 'forgotten') return Promise.reject(new MinkError('Conflict', `sequence ${writer.seq} forgotten`));
    const state = known ?? { next: 0, failedAt: null, pending: new Map(), remembered: new Map() };
    this.writers.set(writer.id, state);
    state.next = writer.seq + 1;
    state.failedAt = null;
    const outcome = (async () => {
      if (this.holdReplies) await new Promise<void>((resolve) => this.held.push(resolve));
      state.pending.delete(writer.seq);
      if (this.failures.delete(writer.seq)) {
        state.failedAt = state.failedAt === null ? writer.seq : Math.min(state.failedAt, writer.seq);
        throw new UnavailableError('the upload failed', 10);
      }
      if (state.failedAt !== null && writer.seq > state.failedAt) throw new UnavailableError(`sequence ${state.failedAt} failed`, 0);
      const rows = writtenRowsOf(request, this.route.primaryKey);
      // Each part is planned alone, as the real leader does: here a part holding a negative id is refused.
      const partRows: Row[][] = [];
      let start = 0;
      for (const count of request.parts ?? [rows.length]) {
        partRows.push(rows.slice(start, start + count));
        start += count;
      }
      const baseOffset = this.nextOffset;
      const parts = partRows.map((part) => {
        if (part.some((row) => Number(row.id) < 0)) return { error: { code: 'InvalidArgument' as const, message: 'operation 0: a negative id' } };
        this.written.push(...part.map((row) => String(row.id)));
        const outcome = { operations: part.length, baseOffset: this.nextOffset, count: part.length };
        this.nextOffset += part.length;
        return outcome;
      });
      const result = { bucket: 0, operations: rows.length, baseOffset, count: this.nextOffset - baseOffset, ...(request.parts ? { parts } : {}) };
      state.remembered.set(writer.seq, result);
      return result;
    })();
    state.pending.set(writer.seq, outcome);
    return outcome;
  }
}

describe('TableClient puts: several requests in flight per bucket', () => {
  const putRow = (id: number) => ({ shop: 'alpha', id, amount: id });

  it('keeps up to appendsInFlightPerBucket puts of a bucket in flight, numbered, and they are written in call order', async () => {
    // Proves puts share the append window: 5 go out before any answer, each with its sequence and the newest acknowledged one.
    const leader = new FakePkLeader();
    leader.holdReplies = true;
    const client = new TableClient(leader.nc, 'orders', { appendsInFlightPerBucket: 5, pipelinedAppendBytesMin: 1 });
    const calls = Array.from({ length: 7 }, (_, index) => client.put([putRow(index)]));
    await expectFiveInFlightUnacknowledged(leader.received);
    leader.releaseAll();
    await Promise.all(calls);
    // The two puts that waited for the window went out together, as the next sequence, in two parts.
    expect(leader.received.slice(5).map((request) => [request.writer!.seq, request.parts])).toEqual([[5, [1, 1]]]);
    expect(leader.written).toEqual(['0', '1', '2', '3', '4', '5', '6']);
  });

  it('retries a failed put before the ones sent behind it, which are never written ahead of it', async () => {
    // Proves order across a failure: seq 1 fails once after the leader took it, the puts behind it fail or
    // are refused as out of order, and every put is written in call order after the retry.
    const leader = new FakePkLeader();
    leader.holdReplies = true;
    leader.failures.add(1);
    const client = new TableClient(leader.nc, 'orders', { appendsInFlightPerBucket: 5, pipelinedAppendBytesMin: 1, random: () => 0 });
    const calls = Array.from({ length: 5 }, (_, index) => client.put([putRow(index)]));
    await eventually('five puts in flight', () => leader.received.length >= 5, { timeoutMs: 1_000, intervalMs: 5 });
    leader.releaseAll();
    const results = await Promise.all(calls);
    expect(results.map((result) => result.written)).toEqual([1, 1, 1, 1, 1]);
    expect(leader.written).toEqual(['0', '1', '2', '3', '4']);
    expect(leader.received.filter((request) => request.writer!.seq === 1).length).toBe(2);
  });
});

describe('TableClient puts: merged while a request is in flight', () => {
  const putRow = (id: number) => ({ shop: 'alpha', id, amount: id });

  /** A client with one put (of id 0) in flight at a leader holding its replies, and then puts of `calls`, queued behind it. */
  async function putsBehindOneInFlight(calls: ReturnType<typeof putRow>[][]) {
    const leader = new FakePkLeader();
    leader.holdReplies = true;
    const client = new TableClient(leader.nc, 'orders');
    const first = client.put([putRow(0)]);
    await eventually('the first put in flight', () => leader.received.length === 1, { timeoutMs: 1_000, intervalMs: 5 });
    const waiting = calls.map((rows) => client.put(rows));
    await new Promise((resolve) => setTimeout(resolve, 20));
    return { leader, client, first, waiting };
  }

  it('sends whole-row puts waiting behind a request as one request of several parts and answers each call its own part', async () => {
    // Proves the merge: one put in flight, five wait and go out as one request of five parts (one writer
    // sequence), each call resolves with its part's offsets, and the rows are written in call order.
    const { leader, first, waiting } = await putsBehindOneInFlight([[putRow(1), putRow(2)], [putRow(3)], [putRow(4)], [putRow(5), putRow(6)], [putRow(7)]]);
    expect(leader.received).toHaveLength(1);
    leader.releaseAll();
    const results = await Promise.all([first, ...waiting]);
    expect(leader.received.map((request) => [request.writer!.seq, request.parts])).toEqual([
      [0, undefined],
      [1, [2, 1, 1, 2, 1]],
    ]);
    expect(leader.written).toEqual(['0', '1', '2', '3', '4', '5', '6', '7']);
    expect(results.map((result) => result.buckets.map(({ baseOffset, count, operations }) => [baseOffset, count, operations]))).toEqual([
      [[0, 1, 1]],
      [[1, 2, 2]],
      [[3, 1, 1]],
      [[4, 1, 1]],
      [[5, 2, 2]],
      [[7, 1, 1]],
    ]);
  });

  it('fails only the call whose part the leader refused; the others of the request are written', async () => {
    // Proves a merged request keeps each put's own fate: the part with a negative id is refused alone.
    const { leader, client, first, waiting } = await putsBehindOneInFlight([[putRow(1)], [putRow(-2)], [putRow(3)]]);
    leader.releaseAll();
    const settled = await Promise.allSettled([first, ...waiting]);
    expect(settled.map((outcome) => outcome.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect((settled[2] as PromiseRejectedResult).reason).toMatchObject({ code: 'InvalidArgument', message: 'operation 0: a negative id' });
    expect(leader.written).toEqual(['0', '1', '3']);
    // The client goes on with the same writer: the next put is numbered after the merged request.
    await client.put([putRow(4)]);
    expect(leader.received.map((request) => request.writer!.seq)).toEqual([0, 1, 2]);
    expect(leader.received[1]!.parts).toEqual([1, 1, 1]);
  });

  it('does not merge partial puts', async () => {
    // Proves only whole-row puts merge: partial puts keep one request each.
    const leader = new FakePkLeader();
    leader.holdReplies = true;
    const client = new TableClient(leader.nc, 'orders');
    const calls = [0, 1, 2].map((id) => client.put([{ shop: 'alpha', id }], { columns: ['shop', 'id'] }));
    await eventually('three puts in flight', () => leader.received.length === 3, { timeoutMs: 1_000, intervalMs: 5 });
    leader.releaseAll();
    await Promise.all(calls);
    expect(leader.received.map((request) => request.parts)).toEqual([undefined, undefined, undefined]);
  });
});

describe('TableClient writes in multi messages', () => {
  it("sends the appends of a call to one node in one message, and puts in another", async () => {
    // Proves the client coalesces a call's bucket requests per node (one message for four buckets' appends)
    // and keeps puts, which also wait for their bucket's tablet, out of the appends' message.
    const leaders = Array.from({ length: BUCKETS }, () => ({ node: 'n0', address: addressOf(0), leaderEpoch: 1 }));
    const routes: Record<string, TableRoute> = {
      events: { table: 'events', tableId: 3, kind: 'log', columns: COLUMNS, primaryKey: [], bucketKey: ['id'], buckets: BUCKETS, leaders },
      orders: pkRoute({ leaders }),
    };
    const answer = answeringMultiMessages(async (_subject: string, data: Uint8Array) => {
      const body = decodeRequest(data) as { op: string; table: string; bucket: number; batch?: Uint8Array; rows?: unknown[] };
      let result: unknown;
      if (body.op === 'describeTable') result = structuredClone(routes[body.table]);
      else if (body.op === 'append') result = { bucket: body.bucket, baseOffset: 0, count: batchRowCount(body.batch!) };
      else {
        const rows = writtenRowsOf(body as unknown as PutBucketRequest, ['shop', 'id']);
        result = { bucket: body.bucket, operations: rows.length, baseOffset: 0, count: rows.length };
      }
      return { data: new TextEncoder().encode(JSON.stringify({ result })) };
    });
    /** The ops of the requests of each message sent, in order. */
    const messages: string[][] = [];
    const nc = {
      request: async (subject: string, data: Uint8Array) => {
        const { body } = openRequest(data) as { body: Uint8Array };
        const requests = isMultiMessage(body) ? decodeMultiMessage(body) : [body];
        messages.push(requests.map((request) => (decodeRequest(request) as { op: string }).op));
        return answer(subject, data);
      },
    } as unknown as NatsConnection;
    const events = new TableClient(nc, 'events');
    const orders = new TableClient(nc, 'orders');
    const ids = Array.from({ length: 64 }, (_, index) => index);
    const appendRows = ids.map((id) => ({ shop: 'alpha', id, amount: 1 }));
    const putRows = ids.map((id) => ({ shop: `shop-${id}`, id, amount: 1 }));
    // Routes first, so both calls' requests leave in the same turn of the event loop.
    await Promise.all([events.append(appendRows), orders.put(putRows)]);
    messages.length = 0;
    const [appended, put] = await Promise.all([events.append(appendRows), orders.put(putRows)]);
    expect(appended.buckets).toHaveLength(BUCKETS);
    expect(put.buckets).toHaveLength(BUCKETS);
    expect(messages).toEqual([Array(BUCKETS).fill('append'), Array(BUCKETS).fill('put')]);
  });
});

describe('TableClient.appendArrow', () => {
  // A RecordBatch built from columns has nullable fields named by its keys, in key order.
  const arrowBatch = (ids: number[]) =>
    new RecordBatch({
      shop: vectorFromArray(ids.map(() => 'alpha'), new Utf8()).data[0]!,
      id: makeData({ type: new Int64(), length: ids.length, data: BigInt64Array.from(ids, BigInt) }),
      amount: makeData({ type: new Float64(), length: ids.length, data: Float64Array.from(ids, (id) => id / 2) }),
    });

  it('sends a batch whose rows fall in one bucket as its IPC stream and stores exactly its rows', async () => {
    // Proves the producer's columns reach the leader as Arrow (no JSON rows) and land as they were.
    const leader = new FakeLogLeader();
    const client = new TableClient(leader.nc, 'events');
    const result = await client.appendArrow(arrowBatch([1, 2, 3]));
    expect(result).toEqual({ appended: 3, buckets: [{ bucket: 0, baseOffset: 0, count: 3 }] });
    expect(leader.received.every((request) => request.batch instanceof Uint8Array && request.rows === undefined)).toBe(true);
    expect(leader.committedRows).toEqual([1, 2, 3].map((id) => ({ shop: 'alpha', id: BigInt(id), amount: id / 2 })));
  });

  it.each([[['shop']], [['id']], [['shop', 'id']]])('sends each row of a batch spanning buckets to the bucket of its key %j, as append does', async (bucketKey: string[]) => {
    // Proves routing from the key columns' buffers (no row objects): every row reaches the bucket
    // bucketOfRow gives for it, once, and in each bucket the rows keep the batch's order.
    const route: TableRoute = {
      table: 'events',
      tableId: 3,
      kind: 'log',
      columns: COLUMNS,
      primaryKey: [],
      bucketKey,
      buckets: 4,
      leaders: Array.from({ length: 4 }, (_, bucket) => ({ node: `n${bucket % 2}`, address: addressOf(bucket % 2), leaderEpoch: 1 })),
    };
    const stored = new Map<number, Row[]>();
    const client = new TableClient(
      fakeLeaderConnection(
        () => route,
        async (body) => {
          const request = body as AppendBucketRequest;
          const rows = decodeBatch(COLUMNS, stampBatch(COLUMNS, request.batch!, 0, LIMITS.appendRowsPerRequestMax).payload).rows;
          stored.set(request.bucket, [...(stored.get(request.bucket) ?? []), ...rows]);
          return { bucket: request.bucket, baseOffset: 0, count: rows.length };
        },
      ),
      'events',
    );
    const ids = Array.from({ length: 100 }, (_, index) => index * 7919 - 300);
    const shops = ids.map((id) => (id % 5 === 0 ? null : `shop-${id % 13}-ü`));
    const batch = new RecordBatch({
      shop: vectorFromArray(shops, new Utf8()).data[0]!,
      id: makeData({ type: new Int64(), length: ids.length, data: BigInt64Array.from(ids, BigInt) }),
      amount: makeData({ type: new Float64(), length: ids.length, data: Float64Array.from(ids, (id) => id / 2) }),
    });
    const result = await client.appendArrow(batch);
    expect(result.appended).toBe(100);
    expect(stored.size).toBeGreaterThan(1);
    const rows: Row[] = ids.map((id, index) => ({ shop: shops[index]!, id: BigInt(id), amount: id / 2 }));
    for (const bucket of [0, 1, 2, 3]) {
      expect(stored.get(bucket) ?? []).toEqual(rows.filter((row) => bucketOfRow(row, bucketKey, 4) === bucket));
    }
  });

  it('is refused by the leader as InvalidArgument when the batch does not have the table\'s columns', async () => {
    // Proves a schema mismatch is the caller's error and stores nothing.
    const leader = new FakeLogLeader();
    const client = new TableClient(leader.nc, 'events');
    const wrong = new RecordBatch({
      shop: vectorFromArray(['alpha'], new Utf8()).data[0]!,
      id: makeData({ type: new Int32(), length: 1, data: Int32Array.of(1) }),
      amount: makeData({ type: new Float64(), length: 1, data: Float64Array.of(1) }),
    });
    await expect(client.appendArrow(wrong)).rejects.toThrow(/field 'id' is Int32, the table's column is int64/);
    expect(leader.committedRows).toEqual([]);
  });
});
