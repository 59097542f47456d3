import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { tableFromIPC } from 'apache-arrow';
import { HttpScanPages } from '@mink/client';
import { Secret } from '@mink/config';
import {
  INTERNAL_SCAN_PATH,
  InvalidArgumentError,
  MinkError,
  NotLeaderError,
  SCAN_PAGE_HEADERS,
  UnavailableError,
  type Redirect,
  type ScanPage,
  type ScanRequest,
} from '@mink/protocol';
import { encodeBatch, encodeScanPage } from '@mink/records';
import { Module } from '@nestjs/common';
import { createHttpAdapter, HealthController, HttpErrorFilter, SERVICE_STATE, ServiceState } from '@mink/runtime';
import { WithBinary } from '@mink/transport';

import { InternalScans, type DataPlane } from '@mink/data-plane';
import { InternalScanController } from './internal-scan.controller';

/**
 * The internal scan route of a data node on its real HTTP stack (Nest, Fastify, the service's error filter),
 * with the data plane replaced by one that answers by bucket, read by the client's HttpScanPages: a page
 * arrives byte for byte with its metadata, and every error arrives as the same typed error a NATS reply
 * carries (code, message, redirect, retry delay), with the HTTP status of docs/architecture.md §12.
 */

const COLUMNS = [
  { name: 'id', type: 'int64' as const },
  { name: 'name', type: 'string' as const },
];
const REDIRECT: Redirect = { table: 'events', bucket: 1, node: '2', to: 'mink.node.2', leaderEpoch: 4, http: '10.0.0.2:8081' };

/** What the fake data plane answers for each bucket, as DataPlane.scan would. */
function scanOf(request: ScanRequest): WithBinary {
  switch (request.bucket) {
    case 0: {
      const stored = [{ startOffset: 0, payload: encodeBatch(COLUMNS, Array.from({ length: 50 }, (_, index) => ({ id: BigInt(index), name: `n${index}` })), 1_000) }];
      const page = encodeScanPage({ columns: COLUMNS, changelog: false }, stored, request.offset, request.limit, 1 << 20);
      return new WithBinary({ records: page.records, nextOffset: page.nextOffset, highWatermark: 50, startOffset: 0 }, page.stream);
    }
    case 1:
      throw new NotLeaderError('node 1 does not lead bucket 1 of table \'events\'', REDIRECT);
    case 2:
      throw new UnavailableError('bucket 2 of table \'events\' is still opening on node 1', 700);
    case 3:
      throw new InvalidArgumentError('limit must be a positive integer, got 0');
    default:
      throw new Error('a stored batch is corrupt');
  }
}

describe('the internal scan route of a data node', () => {
  let app: NestFastifyApplication;
  let address: string;
  let registered = true;
  const received: { request: ScanRequest; transport: string }[] = [];
  const state = new ServiceState('data-node', '1');
  const dataPlane = {
    scan: async (request: ScanRequest, transport: string) => {
      received.push({ request, transport });
      return scanOf(request);
    },
  } as unknown as DataPlane;
  const pages = new HttpScanPages();

  beforeAll(async () => {
    const scans = new InternalScans('1', () => (registered ? dataPlane : null), state.registry);
    // The data node's HTTP controllers, without the rest of the data node (which joins a cluster).
    @Module({ controllers: [HealthController, InternalScanController], providers: [{ provide: SERVICE_STATE, useValue: state }, { provide: InternalScans, useValue: scans }] })
    class InternalScanTestModule {}
    app = await NestFactory.create<NestFastifyApplication>(InternalScanTestModule, createHttpAdapter(), { logger: false, bodyParser: false });
    app.useGlobalFilters(new HttpErrorFilter());
    await app.listen(0, '127.0.0.1');
    const bound = app.getHttpServer().address() as { port: number };
    address = `127.0.0.1:${bound.port}`;
  });

  afterAll(async () => {
    pages.close();
    await app.close();
  });

  beforeEach(() => {
    received.length = 0;
    registered = true;
  });

  const request = (bucket: number, fields: Partial<ScanRequest> = {}): ScanRequest => ({ op: 'scan', table: 'events', tableId: 3, partition: null, bucket, offset: 0, limit: 100, ...fields });

  it('answers a page with its Arrow IPC stream as the body and its metadata in headers', async () => {
    // Proves the route hands the data plane the request as sent over NATS (marked as HTTP) and the page arrives whole.
    const sent = request(0, { offset: 10, limit: 15, columns: ['name'], waitMs: 2_000 });
    const page = await pages.fetch(address, sent, 5_000)!;
    expect(received).toEqual([{ request: sent, transport: 'http' }]);
    expect(page).toMatchObject({ records: 15, nextOffset: 25, highWatermark: 50, startOffset: 0 });
    const table = tableFromIPC(page.batch);
    expect(Array.from(table.getChild('_offset')!.toArray() as BigInt64Array, Number)).toEqual(Array.from({ length: 15 }, (_, index) => 10 + index));
    expect(table.getChild('name')!.toArray()).toEqual(Array.from({ length: 15 }, (_, index) => `n${10 + index}`));
    expect(await state.registry.getSingleMetricAsString('mink_internal_scan_pages_total')).toMatch(/ 1$/m);
  });

  it('hands the data plane the partition a scan of a partitioned table names', async () => {
    // Proves the HTTP path carries the partition as the NATS one does, so the page is of that partition's bucket.
    const sent = request(0, { partition: '2026120110', offset: 5, limit: 5 });
    await pages.fetch(address, sent, 5_000)!;
    expect(received).toEqual([{ request: sent, transport: 'http' }]);
  });

  it('sets Content-Length and the page headers on the raw reply', async () => {
    // Proves the wire format other clients than HttpScanPages would read: one body of a known length.
    const reply = await app.getHttpAdapter().getInstance().inject({ method: 'POST', url: INTERNAL_SCAN_PATH, payload: request(0) });
    expect(reply.statusCode).toBe(200);
    expect(reply.headers['content-type']).toBe('application/vnd.apache.arrow.stream');
    expect(Number(reply.headers['content-length'])).toBe(reply.rawPayload.byteLength);
    expect(reply.headers[SCAN_PAGE_HEADERS.records]).toBe('50');
    expect(reply.headers[SCAN_PAGE_HEADERS.nextOffset]).toBe('50');
    expect(tableFromIPC(reply.rawPayload).numRows).toBe(50);
  });

  test.each<[string, number, number, Partial<MinkError> & { details?: unknown }, string | undefined]>([
    ['NotLeader, with the redirect and the leader\'s HTTP address', 1, 503, { code: 'NotLeader', details: { redirect: REDIRECT } }, undefined],
    ['Unavailable, with its retry delay', 2, 503, { code: 'Unavailable', details: { retryAfterMs: 700 } }, '1'],
    ['InvalidArgument', 3, 400, { code: 'InvalidArgument', message: 'limit must be a positive integer, got 0' }, undefined],
    ['an unexpected error, as Internal', 4, 500, { code: 'Internal', message: 'a stored batch is corrupt' }, undefined],
  ])('maps %s as over NATS', async (_case, bucket, status, expected, retryAfter) => {
    // Proves the one HTTP mapping of typed errors carries everything the client needs to redirect or retry.
    const raw = await app.getHttpAdapter().getInstance().inject({ method: 'POST', url: INTERNAL_SCAN_PATH, payload: request(bucket) });
    expect(raw.statusCode).toBe(status);
    expect(raw.headers['retry-after']).toBe(retryAfter);
    const error = await pages.fetch(address, request(bucket), 5_000)!.catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(MinkError);
    expect(error).toMatchObject(expected);
  });

  it('answers Unavailable while the node registers an incarnation, and InvalidArgument for a body that is not a request', async () => {
    // Proves the route never reaches a data plane that is not there, and refuses bodies it cannot read.
    registered = false;
    await expect(pages.fetch(address, request(0), 5_000)).rejects.toMatchObject({ code: 'Unavailable', message: 'data node 1 is registering a new incarnation' });
    registered = true;
    for (const payload of ['[1, 2]', '"scan"', '{"bucket": ']) {
      const reply = await app.getHttpAdapter().getInstance().inject({ method: 'POST', url: INTERNAL_SCAN_PATH, payload, headers: { 'content-type': 'application/json' } });
      expect([payload, reply.statusCode, reply.json().error.code]).toEqual([payload, 400, 'InvalidArgument']);
    }
    expect(received).toEqual([]);
  });

  it('serves pages over one kept-alive connection, one after another', async () => {
    // Proves the route leaves the connection reusable (the client's keep-alive pool is what makes small pages cheap).
    const ports = new Set<number>();
    const server = app.getHttpServer();
    const onConnection = (socket: { remotePort?: number }) => ports.add(socket.remotePort ?? -1);
    server.on('connection', onConnection);
    const fresh = new HttpScanPages({ connectionsPerNodeMax: 1 });
    try {
      const answers: ScanPage[] = [];
      for (let offset = 0; offset < 50; offset += 10) answers.push(await fresh.fetch(address, request(0, { offset, limit: 10 }), 5_000)!);
      expect(answers.map((answer) => answer.nextOffset)).toEqual([10, 20, 30, 40, 50]);
      expect(ports.size).toBe(1);
    } finally {
      server.off('connection', onConnection);
      fresh.close();
    }
  });
});

describe('the internal scan route of a data node with a cluster secret', () => {
  // Proves the route asks callers for the cluster secret (MINK_CLUSTER_SECRET_FILE) before the data plane
  // sees anything: HttpScanPages with the secret (the gateway) gets its page; one without it (a client
  // outside the cluster) gets the node's Unauthenticated error once, then sends that node nothing for a while.
  const secret = 'cluster-secret-0123456789abcdef';
  let app: NestFastifyApplication;
  let address: string;
  const received: ScanRequest[] = [];
  const state = new ServiceState('data-node', '1');
  const dataPlane = {
    scan: async (request: ScanRequest) => {
      received.push(request);
      return scanOf(request);
    },
  } as unknown as DataPlane;

  beforeAll(async () => {
    const scans = new InternalScans('1', () => dataPlane, state.registry);
    @Module({ controllers: [HealthController, InternalScanController], providers: [{ provide: SERVICE_STATE, useValue: state }, { provide: InternalScans, useValue: scans }] })
    class SecuredScanTestModule {}
    const routeSecrets = { clusterSecret: new Secret(secret), metricsToken: null };
    app = await NestFactory.create<NestFastifyApplication>(SecuredScanTestModule, createHttpAdapter(undefined, { routeSecrets }), { logger: false, bodyParser: false });
    app.useGlobalFilters(new HttpErrorFilter());
    await app.listen(0, '127.0.0.1');
    address = `127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
  });

  afterAll(async () => {
    await app.close();
  });

  const request: ScanRequest = { op: 'scan', table: 'events', tableId: 3, partition: null, bucket: 0, offset: 0, limit: 10 };

  it('serves a caller with the secret and refuses one without it, which then scans that node over NATS', async () => {
    const inside = new HttpScanPages({ clusterSecret: secret });
    const outside = new HttpScanPages();
    const wrong = new HttpScanPages({ clusterSecret: 'another-secret-0123456789abcdef' });
    try {
      expect((await inside.fetch(address, request, 5_000)!).records).toBe(10);
      expect(received).toEqual([request]);
      for (const pages of [outside, wrong]) {
        await expect(pages.fetch(address, request, 5_000)).rejects.toMatchObject({ code: 'Unauthenticated' });
        // Remembered: the next request for this node goes over NATS (null) without being sent.
        expect(pages.fetch(address, request, 5_000)).toBeNull();
      }
      expect(received).toEqual([request]);
      // Health stays open; metrics too, when no metrics token is set.
      expect((await app.getHttpAdapter().getInstance().inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
      expect((await app.getHttpAdapter().getInstance().inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(200);
    } finally {
      for (const pages of [inside, outside, wrong]) pages.close();
    }
  });
});
