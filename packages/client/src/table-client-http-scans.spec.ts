import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { NatsConnection } from 'nats';
import type { ColumnSpec } from '@mink/meta';
import { LIMITS } from '@mink/config';
import { NotLeaderError, SUBJECTS, UnauthenticatedError, clusterAuthorizationOf, scanPageHeadersOf, toErrorBody, type ScanPageMetadata, type ScanRequest, type TableRoute } from '@mink/protocol';
import { encodeBatch, encodeScanPage } from '@mink/records';
import { answeringMultiMessages, encodeJson, encodeWithBinary } from '@mink/transport';

import { HttpScanPages } from './http-scan-pages';
import { TableClient } from './table-client';

/**
 * TableClient's scans when leaders have HTTP addresses: pages come from the leader's internal scan route,
 * with the same rules as over NATS — redirects (now carrying the HTTP address), retries at a new leader
 * after a dead one, abandonment of a request to a paused leader once the route names another — and over
 * NATS when a leader has no HTTP address or every connection to it is busy. The data nodes are plain
 * node:http servers and a fake NATS connection, all answering from one stored bucket.
 */

const COLUMNS: ColumnSpec[] = [
  { name: 'id', type: 'int64' },
  { name: 'name', type: 'string' },
];
const RECORDS = 30;
/** Records per page a fake node answers, so a whole-bucket scan takes several pages. */
const PAGE_RECORDS = 10;
const STORED = [0, 10, 20].map((startOffset) => ({
  startOffset,
  payload: encodeBatch(COLUMNS, Array.from({ length: 10 }, (_, index) => ({ id: BigInt(startOffset + index), name: `n${startOffset + index}` })), 1_000),
}));

/** The page a data node answers to `request` from the stored bucket. */
function pageOf(request: ScanRequest): { metadata: ScanPageMetadata; bytes: Buffer } {
  const page = encodeScanPage({ columns: COLUMNS, changelog: false }, STORED, request.offset, Math.min(request.limit, PAGE_RECORDS), 1 << 20);
  return { metadata: { records: page.records, nextOffset: page.nextOffset, highWatermark: RECORDS, startOffset: 0 }, bytes: Buffer.concat(page.stream) };
}

/** What a fake HTTP node does with a scan request: answer the page, throw a typed error, or hold it (a paused node). */
type Behaviour = (request: ScanRequest) => 'page' | 'hold' | Error;

class FakeHttpNode {
  readonly requests: ScanRequest[] = [];
  readonly held: ServerResponse[] = [];
  closedConnections = 0;
  behaviour: Behaviour = () => 'page';
  /** The Authorization header a request must carry (a node of a cluster with a secret); others get a 401 before their body is read. */
  requiredAuthorization: string | null = null;
  refusals = 0;
  address = '';
  private readonly server: Server;

  constructor(readonly node: string) {
    this.server = createServer((incoming: IncomingMessage, response: ServerResponse) => {
      if (this.requiredAuthorization !== null && incoming.headers.authorization !== this.requiredAuthorization) {
        this.refusals++;
        return void response.writeHead(401, { 'content-type': 'application/json', connection: 'close' }).end(JSON.stringify(toErrorBody(new UnauthenticatedError('this route needs the cluster secret'))));
      }
      const chunks: Buffer[] = [];
      incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
      incoming.on('end', () => {
        const request = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ScanRequest;
        this.requests.push(request);
        const outcome = this.behaviour(request);
        if (outcome === 'hold') return void this.held.push(response);
        if (outcome instanceof Error) return void response.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify(toErrorBody(outcome)));
        const { metadata, bytes } = pageOf(request);
        response.writeHead(200, { 'content-length': bytes.byteLength, ...scanPageHeadersOf(metadata) }).end(bytes);
      });
    });
    this.server.on('connection', (socket: Socket) => socket.on('close', () => this.closedConnections++));
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.address = `127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/** The NATS side: describeTable from `route`, and scans of the stored bucket for requests that come this way. */
class FakeNats {
  readonly scans: { subject: string; request: ScanRequest }[] = [];
  constructor(public route: TableRoute) {}

  readonly nc = {
    request: answeringMultiMessages(async (subject: string, data: Uint8Array) => {
      const body = JSON.parse(new TextDecoder().decode(data)) as ScanRequest | { op: 'describeTable' };
      if (body.op === 'describeTable') return { data: encodeJson({ result: structuredClone(this.route) }) };
      this.scans.push({ subject, request: body });
      const { metadata, bytes } = pageOf(body);
      return { data: encodeWithBinary({ result: metadata }, bytes) };
    }),
  } as unknown as NatsConnection;
}

function leaderOf(node: FakeHttpNode | string, leaderEpoch: number, withHttp = true): TableRoute['leaders'][number] {
  const id = typeof node === 'string' ? node : node.node;
  return { node: id, address: SUBJECTS.nodeAddress(id), leaderEpoch, ...(withHttp && typeof node !== 'string' ? { http: node.address } : {}) };
}

function routeOf(leader: TableRoute['leaders'][number]): TableRoute {
  return { table: 'events', tableId: 5, kind: 'log', columns: COLUMNS, primaryKey: [], bucketKey: ['id'], buckets: 1, leaders: [leader] };
}

async function until(what: string, condition: () => boolean): Promise<void> {
  for (let waited = 0; !condition(); waited += 5) {
    if (waited > 10_000) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const offsetsOf = (requests: readonly ScanRequest[]) => requests.map((request) => request.offset);

describe('TableClient scans over the leaders\' HTTP routes', () => {
  const nodes: FakeHttpNode[] = [];
  let pages: HttpScanPages;

  async function node(id: string): Promise<FakeHttpNode> {
    const started = await new FakeHttpNode(id).start();
    nodes.push(started);
    return started;
  }

  beforeEach(() => {
    pages = new HttpScanPages();
  });

  afterEach(async () => {
    pages.close();
    await Promise.all(nodes.splice(0).map((started) => started.stop()));
  });

  it('reads every page of a scan from the leader over HTTP and none over NATS', async () => {
    // Proves the default path: the page requests (the next one sent before the current one is handed over) all go to the HTTP route.
    const n1 = await node('n1');
    const nats = new FakeNats(routeOf(leaderOf(n1, 1)));
    const client = new TableClient(nats.nc, 'events', { httpScans: pages });
    const { records, nextOffset, highWatermark } = await client.scan({ bucket: 0, offset: 3, limit: 100 });
    expect(records.map((record) => [record.offset, record.row.name])).toEqual(Array.from({ length: RECORDS - 3 }, (_, index) => [3 + index, `n${3 + index}`]));
    expect({ nextOffset, highWatermark }).toEqual({ nextOffset: RECORDS, highWatermark: RECORDS });
    expect(offsetsOf(n1.requests)).toEqual([3, 13, 23]);
    expect(n1.requests[0]).toEqual({ op: 'scan', table: 'events', tableId: 5, partition: null, bucket: 0, offset: 3, limit: 100 });
    expect(nats.scans).toEqual([]);
  });

  it('scans over NATS when the leader has no HTTP address, or the client has no HttpScanPages', async () => {
    // Proves the fallback: a node without `http` (or a client built without HTTP) is scanned as before.
    const nats = new FakeNats(routeOf(leaderOf('n1', 1, false)));
    const withoutAddress = new TableClient(nats.nc, 'events', { httpScans: pages });
    expect((await withoutAddress.scanArrow({ bucket: 0, limit: 100 })).table.numRows).toBe(RECORDS);
    expect(nats.scans.map((scan) => [scan.subject, scan.request.offset])).toEqual([0, 10, 20].map((offset) => [SUBJECTS.nodeRpc(SUBJECTS.nodeAddress('n1')), offset]));

    const n1 = await node('n1');
    const natsOnly = new FakeNats(routeOf(leaderOf(n1, 1)));
    expect((await new TableClient(natsOnly.nc, 'events').scanArrow({ bucket: 0, limit: 100 })).table.numRows).toBe(RECORDS);
    expect(n1.requests).toEqual([]);
    expect(natsOnly.scans).toHaveLength(3);
  });

  it('scans over NATS a leader that refuses the client\'s credentials, at once and without asking it again for a while', async () => {
    // Proves an outside client (no cluster secret) still scans a cluster whose nodes ask for one: the 401 of
    // the first page sends that page over NATS in the same attempt, and the node is not asked over HTTP again
    // until LIMITS.clientScanRefusalMemoryMs has passed.
    const n1 = await node('n1');
    n1.requiredAuthorization = clusterAuthorizationOf('cluster-secret-0123456789');
    const nats = new FakeNats(routeOf(leaderOf(n1, 1)));
    let nowMs = 1_000_000;
    const outside = new HttpScanPages({ nowMs: () => nowMs });
    try {
      const client = new TableClient(nats.nc, 'events', { httpScans: outside });
      const { records } = await client.scan({ bucket: 0, offset: 3, limit: 100 });
      expect(records.map((record) => record.row.name)).toEqual(Array.from({ length: RECORDS - 3 }, (_, index) => `n${3 + index}`));
      expect([n1.refusals, n1.requests, offsetsOf(nats.scans.map((scan) => scan.request))]).toEqual([1, [], [3, 13, 23]]);
      expect(outside.refuses(n1.address)).toBe(true);
      nowMs += LIMITS.clientScanRefusalMemoryMs - 1;
      expect((await client.scanArrow({ bucket: 0, limit: 100 })).table.numRows).toBe(RECORDS);
      expect(n1.refusals).toBe(1);
      nowMs += 1;
      expect(outside.refuses(n1.address)).toBe(false);
      expect((await client.scanArrow({ bucket: 0, limit: 100 })).table.numRows).toBe(RECORDS);
      expect(n1.refusals).toBe(2);
      expect(nats.scans).toHaveLength(9);
    } finally {
      outside.close();
    }

    // A client with the secret (the gateway) keeps the HTTP path.
    const inside = new HttpScanPages({ clusterSecret: 'cluster-secret-0123456789' });
    try {
      const scansBefore = nats.scans.length;
      expect((await new TableClient(nats.nc, 'events', { httpScans: inside }).scanArrow({ bucket: 0, limit: 100 })).table.numRows).toBe(RECORDS);
      expect([offsetsOf(n1.requests), nats.scans.length - scansBefore, n1.refusals]).toEqual([[0, 10, 20], 0, 2]);
    } finally {
      inside.close();
    }
  });

  it('follows a NotLeader answered over HTTP to the HTTP address of the leader it names', async () => {
    // Proves redirects carry the new leader's HTTP address, so the retry and the pages after it stay on HTTP.
    const [n1, n2] = [await node('n1'), await node('n2')];
    n1.behaviour = () => new NotLeaderError('node n1 does not lead bucket 0', { table: 'events', bucket: 0, node: 'n2', to: SUBJECTS.nodeAddress('n2'), leaderEpoch: 2, http: n2.address });
    const nats = new FakeNats(routeOf(leaderOf(n1, 1)));
    const client = new TableClient(nats.nc, 'events', { httpScans: pages });
    expect((await client.scan({ bucket: 0, limit: 100 })).records).toHaveLength(RECORDS);
    expect(offsetsOf(n1.requests)).toEqual([0]);
    expect(offsetsOf(n2.requests)).toEqual([0, 10, 20]);
    expect(nats.scans).toEqual([]);
    expect((await client.describe()).leaders[0]).toEqual(leaderOf(n2, 2));
  });

  it('sends a page request over NATS when every connection to the leader is busy', async () => {
    // Proves the per-node bound: a long poll holding the only connection does not hold up another scan.
    const n1 = await node('n1');
    const nats = new FakeNats(routeOf(leaderOf(n1, 1)));
    const narrow = new HttpScanPages({ connectionsPerNodeMax: 1 });
    try {
      const client = new TableClient(nats.nc, 'events', { httpScans: narrow });
      n1.behaviour = (request) => (request.waitMs ? 'hold' : 'page');
      const longPoll = client.scan({ bucket: 0, offset: RECORDS, limit: 10, waitMs: 20_000 });
      await until('the long poll reached the node', () => n1.held.length === 1);
      expect((await client.scan({ bucket: 0, limit: 100 })).records).toHaveLength(RECORDS);
      expect(offsetsOf(nats.scans.map((scan) => scan.request))).toEqual([0, 10, 20]);
      // The long poll is answered (empty at the high watermark) once its node replies.
      const { bytes, metadata } = pageOf({ op: 'scan', table: 'events', tableId: 5, partition: null, bucket: 0, offset: RECORDS, limit: 10 });
      n1.held[0]!.writeHead(200, { 'content-length': bytes.byteLength, ...scanPageHeadersOf(metadata) }).end(bytes);
      expect(await longPoll).toEqual({ records: [], nextOffset: RECORDS, highWatermark: RECORDS });
    } finally {
      narrow.close();
    }
  });

  it('abandons a page request to a paused leader once the route names a new one, and completes the scan there', async () => {
    // Proves answerOrLeaderChange works for HTTP requests, and that the abandoned request's connection is closed.
    const [n1, n2] = [await node('n1'), await node('n2')];
    const nats = new FakeNats(routeOf(leaderOf(n1, 1)));
    const client = new TableClient(nats.nc, 'events', { httpScans: pages });
    const scan = client.scanPages({ bucket: 0, limit: 100 });
    const first = await scan.next();
    expect(first.value).toMatchObject({ records: 10, nextOffset: 10 });
    // n1 pauses after the first page; the second page was asked for already. The bucket moves to n2.
    n1.behaviour = () => 'hold';
    await until('the second page request reached n1', () => n1.requests.length === 2);
    const movedAt = Date.now();
    nats.route = routeOf(leaderOf(n2, 2));
    const rest: number[] = [];
    for await (const page of scan) rest.push(page.nextOffset);
    expect(rest).toEqual([20, 30]);
    expect(Date.now() - movedAt).toBeLessThan(5_000);
    expect(offsetsOf(n2.requests)).toEqual([10, 20]);
    await until('the abandoned connection to n1 closed', () => n1.closedConnections >= 1);
    expect(pages.inFlightTo(n1.address)).toBe(0);
  });

  it('retries at the new leader when the old one is dead (its port refuses connections)', async () => {
    // Proves a refused connection is Unavailable: the client refreshes the route and goes where it points.
    const [n1, n2] = [await node('n1'), await node('n2')];
    const nats = new FakeNats(routeOf(leaderOf(n1, 1)));
    const client = new TableClient(nats.nc, 'events', { httpScans: pages, random: () => 0 });
    await client.describe();
    await n1.stop();
    setTimeout(() => (nats.route = routeOf(leaderOf(n2, 2))), 300);
    expect((await client.scan({ bucket: 0, limit: 100 })).records).toHaveLength(RECORDS);
    expect(offsetsOf(n2.requests)).toEqual([0, 10, 20]);
    expect(nats.scans).toEqual([]);
  });
});
