import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { INTERNAL_SCAN_PATH, MinkError, scanPageHeadersOf, type ScanRequest } from '@mink/protocol';

import { HttpScanPages } from './http-scan-pages';

/**
 * HttpScanPages against a plain node:http server that misbehaves on purpose: what each failure of the
 * connection or of the reply becomes (the typed error the client's retry rules act on), the bound on requests
 * per node, abandonment, and the one silent retry of a kept-alive connection the server had closed.
 */

const REQUEST: ScanRequest = { op: 'scan', table: 'events', tableId: 1, partition: null, bucket: 0, offset: 0, limit: 10 };
const PAGE = { records: 3, nextOffset: 3, highWatermark: 9, startOffset: 0 };

type Responder = (request: IncomingMessage, response: ServerResponse, body: Buffer) => void;

class FakeNode {
  readonly server: Server;
  responder: Responder = (_request, response) => this.page(response, Buffer.from('arrow bytes'));
  readonly bodies: unknown[] = [];
  /** Requests seen per connection, by the connection's remote port. */
  readonly requestsByConnection = new Map<number, number>();
  closedConnections = 0;

  constructor() {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const port = request.socket.remotePort ?? -1;
        this.requestsByConnection.set(port, (this.requestsByConnection.get(port) ?? 0) + 1);
        expect(request.method).toBe('POST');
        expect(request.url).toBe(INTERNAL_SCAN_PATH);
        const body = Buffer.concat(chunks);
        this.bodies.push(JSON.parse(body.toString('utf8')));
        this.responder(request, response, body);
      });
    });
    this.server.on('connection', (socket: Socket) => socket.on('close', () => this.closedConnections++));
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  page(response: ServerResponse, bytes: Buffer): void {
    response.writeHead(200, { 'content-type': 'application/vnd.apache.arrow.stream', 'content-length': bytes.byteLength, ...scanPageHeadersOf(PAGE) });
    response.end(bytes);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

async function errorOf(answer: Promise<unknown> | null): Promise<MinkError> {
  expect(answer).not.toBeNull();
  const error = await answer!.then(
    () => new Error('answered'),
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(MinkError);
  return error as MinkError;
}

async function until(what: string, condition: () => boolean): Promise<void> {
  for (let waited = 0; !condition(); waited += 5) {
    if (waited > 5_000) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('HttpScanPages', () => {
  let node: FakeNode;
  let address: string;
  let pages: HttpScanPages;

  beforeEach(async () => {
    node = new FakeNode();
    address = await node.start();
    pages = new HttpScanPages({ connectionsPerNodeMax: 2 });
  });

  afterEach(async () => {
    pages.close();
    await node.stop();
  });

  it('posts the scan request as JSON and reads the page from the body and headers', async () => {
    // Proves the request is the NATS request as it is, and the page is the body's bytes with the header metadata.
    const page = await pages.fetch(address, REQUEST, 1_000)!;
    expect(node.bodies).toEqual([REQUEST]);
    expect(page).toEqual({ ...PAGE, batch: Buffer.from('arrow bytes') });
  });

  it('reads a body sent in chunks without Content-Length', async () => {
    node.responder = (_request, response) => {
      response.writeHead(200, scanPageHeadersOf(PAGE));
      response.write('arrow ');
      setTimeout(() => response.end('bytes'), 10);
    };
    expect((await pages.fetch(address, REQUEST, 1_000)!).batch).toEqual(Buffer.from('arrow bytes'));
  });

  test.each<[string, string, Responder, RegExp]>([
    ['a 503 with an error body', 'Unavailable', (_request, response) => response.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 'Unavailable', message: 'opening', retryAfterMs: 300 } })), /^opening$/],
    ['a proxy\'s 502 without an error body', 'Unavailable', (_request, response) => response.writeHead(502).end('Bad Gateway'), /answered a scan page request with HTTP 502: Bad Gateway/],
    ['a 404 without an error body (no such route)', 'NotFound', (_request, response) => response.writeHead(404).end('not here'), /HTTP 404/],
    ['a 200 without page headers', 'Internal', (_request, response) => response.writeHead(200, { 'content-length': 1 }).end('x'), /no valid mink-records header/],
    [
      'a 200 cut short of its Content-Length',
      'Unavailable',
      (_request, response) => {
        response.writeHead(200, { 'content-length': 1_000, ...scanPageHeadersOf(PAGE) });
        response.write('x'.repeat(10), () => response.socket?.destroy());
      },
      /closed the connection in the middle of a scan page reply/,
    ],
    ['a connection closed before any reply', 'Unavailable', (request) => request.socket.destroy(), /no scan page from the data node at .*: (ECONNRESET|socket hang up)/],
  ])('turns %s into %s', async (_case, code, responder, message) => {
    // Proves each failure is the error whose rule fits it: retry (Unavailable), refresh (NotFound), or give up (Internal).
    node.responder = responder;
    const error = await errorOf(pages.fetch(address, REQUEST, 1_000));
    expect(error.code).toBe(code);
    expect(error.message).toMatch(message);
    if (error.message === 'opening') expect(error.details?.retryAfterMs).toBe(300);
  });

  it('answers null, sending nothing, for an address that is not host:port, so the caller uses NATS', () => {
    // Proves a malformed NodeRecord.http (an IPv6 address without brackets, a path) costs a fallback, not a failed scan.
    for (const bad of ['::1:8080', '127.0.0.1:8080/x', 'user@127.0.0.1:8080', '127.0.0.1:8080?a=1', 'host:port']) {
      expect([bad, pages.fetch(bad, REQUEST, 1_000)]).toEqual([bad, null]);
    }
    expect(node.bodies).toEqual([]);
  });

  it('answers Unavailable when nothing listens at the address (a dead node)', async () => {
    await node.stop();
    const error = await errorOf(pages.fetch(address, REQUEST, 1_000));
    expect(error.code).toBe('Unavailable');
    expect(error.message).toMatch(/ECONNREFUSED/);
  });

  it('answers Timeout after timeoutMs and closes the connection of the request', async () => {
    // Proves a paused node costs the request timeout at most, and its connection is not reused after.
    node.responder = () => undefined;
    const startedAt = Date.now();
    const error = await errorOf(pages.fetch(address, REQUEST, 200));
    expect(error.code).toBe('Timeout');
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(190);
    await until('the connection closed', () => node.closedConnections === 1);
    expect(pages.inFlightTo(address)).toBe(0);
  });

  it('ends a request whose signal aborts, closing its connection', async () => {
    // Proves an abandoned request (its leader moved) does not keep holding a connection to a paused node.
    node.responder = () => undefined;
    const abandon = new AbortController();
    const answer = pages.fetch(address, REQUEST, 10_000, abandon.signal);
    await until('the request arrived', () => node.bodies.length === 1);
    abandon.abort();
    expect((await errorOf(answer)).message).toMatch(/was abandoned/);
    await until('the connection closed', () => node.closedConnections === 1);
    // An abort after the answer is harmless.
    node.responder = (_request, response) => node.page(response, Buffer.from('late'));
    const late = new AbortController();
    expect((await pages.fetch(address, REQUEST, 1_000, late.signal)!).batch).toEqual(Buffer.from('late'));
    late.abort();
    expect(pages.inFlightTo(address)).toBe(0);
  });

  it('keeps at most connectionsPerNodeMax requests in flight to one node and answers null beyond them', async () => {
    // Proves the bound: the caller sends the extra request over NATS instead of queueing it behind long polls.
    const held: ServerResponse[] = [];
    node.responder = (_request, response) => held.push(response);
    const first = pages.fetch(address, REQUEST, 5_000)!;
    const second = pages.fetch(address, REQUEST, 5_000)!;
    expect(pages.fetch(address, REQUEST, 5_000)).toBeNull();
    expect(pages.inFlightTo(address)).toBe(2);
    await until('both requests arrived', () => held.length === 2);
    held.forEach((response) => node.page(response, Buffer.from('held')));
    await Promise.all([first, second]);
    expect(pages.inFlightTo(address)).toBe(0);
    node.responder = (_request, response) => node.page(response, Buffer.from('free again'));
    expect((await pages.fetch(address, REQUEST, 5_000)!).batch).toEqual(Buffer.from('free again'));
  });

  it('retries once on a new connection when a kept-alive one was closed by the node, and only then', async () => {
    // Proves a stale idle connection costs nothing, while a node that resets every connection is still Unavailable.
    let served = 0;
    node.responder = (request, response) => {
      // Every connection serves one page, then is dropped when the next request arrives on it (an idle timeout racing it).
      if ((node.requestsByConnection.get(request.socket.remotePort ?? -1) ?? 0) > 1) return request.socket.destroy();
      served++;
      node.page(response, Buffer.from(`page ${served}`));
    };
    expect((await pages.fetch(address, REQUEST, 1_000)!).batch).toEqual(Buffer.from('page 1'));
    expect((await pages.fetch(address, REQUEST, 1_000)!).batch).toEqual(Buffer.from('page 2'));
    expect(node.requestsByConnection.size).toBe(2);

    node.responder = (request) => request.socket.destroy();
    expect((await errorOf(pages.fetch(address, REQUEST, 1_000))).code).toBe('Unavailable');
  });
});
