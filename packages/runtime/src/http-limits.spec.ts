import 'reflect-metadata';
import { request as httpRequest } from 'node:http';
import { Body, Controller, Get, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { LIMITS } from '@mink/config';
import { closed, rawConnection } from '@mink/testing';
import { createHttpAdapter, InFlightBytes } from './http-adapter';
import { HttpErrorFilter } from './http-errors';
import { applyHttpTimeouts, DEFAULT_HTTP_TIMEOUTS, type HttpTimeouts } from './http-timeouts';
import { announcesBody } from './unread-body';

/**
 * The bounds every mink HTTP server puts on its clients (createHttpAdapter, applyHttpTimeouts): chunked
 * bodies count toward the bytes in flight as they arrive and are refused 503 or 413 past the bounds, and
 * connections that send their headers or body too slowly, or idle too long, are closed, while an answer
 * that takes long (a long poll) is not cut.
 */

describe('applyHttpTimeouts', () => {
  const server = () => ({ headersTimeout: 0, requestTimeout: 0, keepAliveTimeout: 0 });

  it('sets the three timeouts and checks them at least once per header timeout', () => {
    // Proves Node's 30 s default check interval cannot stretch a short header timeout.
    const target = server() as ReturnType<typeof server> & { connectionsCheckingInterval?: number };
    applyHttpTimeouts(target, { headersTimeoutMs: 400, requestTimeoutMs: 900, keepAliveTimeoutMs: 700 });
    expect(target).toEqual({ headersTimeout: 400, requestTimeout: 900, keepAliveTimeout: 700, connectionsCheckingInterval: 400 });
    applyHttpTimeouts(target, DEFAULT_HTTP_TIMEOUTS);
    expect(target).toEqual({ headersTimeout: 10_000, requestTimeout: 120_000, keepAliveTimeout: 65_000, connectionsCheckingInterval: LIMITS.httpTimeoutCheckIntervalMs });
  });

  it.each<[string, HttpTimeouts]>([
    ['a header timeout above the request timeout', { headersTimeoutMs: 2_000, requestTimeoutMs: 1_000, keepAliveTimeoutMs: 1_000 }],
    ['a zero timeout (none at all)', { headersTimeoutMs: 1_000, requestTimeoutMs: 2_000, keepAliveTimeoutMs: 0 }],
    ['a fraction of a millisecond', { headersTimeoutMs: 0.5, requestTimeoutMs: 2_000, keepAliveTimeoutMs: 1_000 }],
    ['not a number', { headersTimeoutMs: Number.NaN, requestTimeoutMs: 2_000, keepAliveTimeoutMs: 1_000 }],
  ])('refuses %s', (_case, timeouts) => {
    expect(() => applyHttpTimeouts(server(), timeouts)).toThrow();
  });
});

describe('announcesBody', () => {
  it.each<[string, Record<string, string>, boolean]>([
    ['a Content-Length', { 'content-length': '12' }, true],
    ['a chunked body', { 'transfer-encoding': 'chunked' }, true],
    ['Content-Length: 0', { 'content-length': '0' }, false],
    ['neither', {}, false],
  ])('%s: %p', (_case, headers, expected) => {
    expect(announcesBody(headers)).toBe(expected);
  });
});

@Controller()
class LimitsTestController {
  static bodies: number[] = [];

  @Post('echo')
  echo(@Body() body: unknown): { bytes: number } {
    const bytes = JSON.stringify(body).length;
    LimitsTestController.bodies.push(bytes);
    return { bytes };
  }

  /** Answers after 1.5 s: longer than the request timeout of the test server. */
  @Get('slow')
  async slow(): Promise<{ waited: boolean }> {
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    return { waited: true };
  }
}

describe('an HTTP service built by createHttpAdapter', () => {
  let app: NestFastifyApplication;
  let port: number;
  // A small bound, so that two requests can fill it; the body limit stays LIMITS.httpBodyBytesMax.
  const inFlight = new InFlightBytes(64 * 1024);
  const TIMEOUTS: HttpTimeouts = { headersTimeoutMs: 400, requestTimeoutMs: 900, keepAliveTimeoutMs: 600 };

  beforeAll(async () => {
    @Module({ controllers: [LimitsTestController] })
    class LimitsTestModule {}
    app = await NestFactory.create<NestFastifyApplication>(LimitsTestModule, createHttpAdapter(inFlight), { logger: false, bodyParser: false });
    app.useGlobalFilters(new HttpErrorFilter());
    applyHttpTimeouts(app.getHttpServer(), TIMEOUTS);
    await app.listen(0, '127.0.0.1');
    port = (app.getHttpServer().address() as { port: number }).port;
  });

  afterAll(async () => {
    await app.close();
  });

  beforeEach(() => {
    LimitsTestController.bodies = [];
  });

  it('counts a chunked body while it arrives, answers 503 with Retry-After past the bytes in flight, and gives the bytes back', async () => {
    // Proves a body without Content-Length no longer passes the bound unseen: with 40 KiB of another request
    // held, 40 KiB more sent chunked do not fit below 64 KiB; alone, the same body is served.
    const holder = rawConnection(port);
    holder.write('POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 40960\r\n\r\n[');
    await until(() => inFlight.heldBytes === 40_960);
    const refused = await chunkedPost(port, '/echo', jsonOfBytes(40 * 1024), 8 * 1024);
    expect([refused.status, refused.headers['retry-after'], JSON.parse(refused.body).error.code]).toEqual([503, '1', 'Unavailable']);
    holder.destroy();
    await until(() => inFlight.heldBytes === 0);
    const served = await chunkedPost(port, '/echo', jsonOfBytes(40 * 1024), 8 * 1024);
    expect([served.status, JSON.parse(served.body)]).toEqual([201, { bytes: 40 * 1024 }]);
    expect(LimitsTestController.bodies).toEqual([40 * 1024]);
    await until(() => inFlight.heldBytes === 0);
  });

  it('answers 413 to a chunked body past LIMITS.httpBodyBytesMax and closes its connection', async () => {
    // Proves the per-request limit holds for a body that never said its length, and the rest of it is not read.
    const big = new InFlightBytes(LIMITS.httpInFlightBodyBytesMax);
    const bigApp = await NestFactory.create<NestFastifyApplication>(
      (() => {
        @Module({ controllers: [LimitsTestController] })
        class BigBodyTestModule {}
        return BigBodyTestModule;
      })(),
      createHttpAdapter(big),
      { logger: false, bodyParser: false },
    );
    bigApp.useGlobalFilters(new HttpErrorFilter());
    await bigApp.listen(0, '127.0.0.1');
    try {
      const bigPort = (bigApp.getHttpServer().address() as { port: number }).port;
      const answer = await chunkedPost(bigPort, '/echo', Buffer.alloc(LIMITS.httpBodyBytesMax + 1024 * 1024, 0x20), 1024 * 1024);
      expect([answer.status, JSON.parse(answer.body).error.message]).toEqual([413, `the request body passes ${LIMITS.httpBodyBytesMax} bytes`]);
      expect(answer.closedByServer).toBe(true);
      expect(LimitsTestController.bodies).toEqual([]);
      await until(() => big.heldBytes === 0);
    } finally {
      await bigApp.close();
    }
    // 65 MiB through a loopback socket: seconds on a loaded 2-core machine, past jest's default 5 s.
  }, 60_000);

  it('closes a connection that sends nothing, or its headers too slowly, after the header timeout (408)', async () => {
    // Proves a client cannot hold sockets open by opening connections and sending nothing (or a byte at a time).
    const started = Date.now();
    const silent = rawConnection(port);
    const slow = rawConnection(port);
    slow.write('GET /slow HTTP/1.1\r\n');
    const trickle = setInterval(() => slow.write('X'), 100);
    const [silentEnd, slowEnd] = await Promise.all([closed(silent), closed(slow)]);
    clearInterval(trickle);
    for (const end of [silentEnd, slowEnd]) {
      expect(end.received).toMatch(/^HTTP\/1\.1 408 /);
      expect(end.atMs - started).toBeGreaterThanOrEqual(TIMEOUTS.headersTimeoutMs - 50);
      expect(end.atMs - started).toBeLessThan(TIMEOUTS.headersTimeoutMs + 1_500);
    }
  });

  it('closes a connection whose body trickles in after the request timeout (408), without handing the request on', async () => {
    const started = Date.now();
    const socket = rawConnection(port);
    socket.write('POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n[');
    const trickle = setInterval(() => socket.write(' '), 100);
    const end = await closed(socket);
    clearInterval(trickle);
    expect(end.received).toMatch(/^HTTP\/1\.1 408 /);
    expect(end.atMs - started).toBeGreaterThanOrEqual(TIMEOUTS.requestTimeoutMs - 50);
    expect(end.atMs - started).toBeLessThan(TIMEOUTS.requestTimeoutMs + 1_500);
    expect(LimitsTestController.bodies).toEqual([]);
    await until(() => inFlight.heldBytes === 0);
  });

  it('closes an idle keep-alive connection after the keep-alive timeout, but never cuts an answer that takes longer than the request timeout', async () => {
    // Proves the request timeout bounds receiving the request only: a long poll outlives it.
    const socket = rawConnection(port);
    const ended = closed(socket);
    socket.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\n');
    const answeredAt = await new Promise<number>((resolve) => socket.once('data', () => resolve(Date.now())));
    const end = await ended;
    expect(end.received).toMatch(/^HTTP\/1\.1 200 [\s\S]*\{"waited":true\}$/);
    // Node.js waits one second beyond the keep-alive timeout it announces.
    expect(end.atMs - answeredAt).toBeGreaterThanOrEqual(TIMEOUTS.keepAliveTimeoutMs - 50);
    expect(end.atMs - answeredAt).toBeLessThan(TIMEOUTS.keepAliveTimeoutMs + 1_000 + 1_500);
  });

  it('passes every byte of a chunked body on unchanged, however it is cut', async () => {
    // Proves the counting stream is transparent: the handler parses the same JSON it would from one piece.
    const body = Buffer.from(JSON.stringify({ rows: [{ id: 1 }, { id: 'two', text: 'é'.repeat(100) }] }));
    const answer = await chunkedPost(port, '/echo', body, 7);
    expect([answer.status, JSON.parse(answer.body)]).toEqual([201, { bytes: JSON.stringify(JSON.parse(body.toString())).length }]);
  });
});

/** A JSON array of one string, `bytes` long in all. */
function jsonOfBytes(bytes: number): Buffer {
  return Buffer.from(`["${'x'.repeat(bytes - 4)}"]`);
}


/** POSTs `body` chunked (no Content-Length) in pieces of `pieceBytes`; stops sending once an answer comes. */
function chunkedPost(port: number, path: string, body: Buffer, pieceBytes: number): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string; closedByServer: boolean }> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const outgoing = httpRequest({ host: '127.0.0.1', port, path, method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked', connection: 'keep-alive' } }, (incoming) => {
      answered = true;
      let text = '';
      incoming.setEncoding('utf8');
      incoming.on('data', (chunk: string) => (text += chunk));
      incoming.on('end', () => {
        const socket = outgoing.socket;
        const result = { status: incoming.statusCode ?? 0, headers: incoming.headers, body: text };
        if (socket === null || socket.destroyed) return resolve({ ...result, closedByServer: true });
        const timer = setTimeout(() => {
          socket.destroy();
          resolve({ ...result, closedByServer: false });
        }, 3_000);
        socket.once('close', () => {
          clearTimeout(timer);
          resolve({ ...result, closedByServer: true });
        });
      });
    });
    outgoing.on('error', (error) => {
      if (!answered) reject(error);
    });
    let offset = 0;
    const writeMore = (): void => {
      while (!answered && offset < body.length) {
        const piece = body.subarray(offset, offset + pieceBytes);
        offset += piece.length;
        if (!outgoing.write(piece)) return void outgoing.once('drain', writeMore);
      }
      if (!answered) outgoing.end();
    };
    writeMore();
  });
}

async function until(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('the condition did not hold in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
