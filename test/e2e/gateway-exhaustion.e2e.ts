/**
 * Exhaustion of the gateway on a real local cluster (issue 42 item 5), each abuse followed by a normal
 * append and scan that must still be served: a 60 MiB append without a token is refused 401 before its body
 * is read (answered fast, the gateway's peak RSS not grown by the body); a chunked body past the per-request
 * limit is refused 413; a client that sends its headers too slowly, or its body a byte a second, is cut at the
 * header or request timeout; idle connections, fresh or kept alive, are closed; more gRPC calls than one
 * connection may have open wait (grpc-js queues them) until one ends; and an internal error (a stored
 * object corrupted on the S3 server, read after a data node restart emptied its cache) answers 500 with an
 * error id, never the internal message, which the gateway's log carries under that id.
 */
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import type { ClientReadableStream } from '@grpc/grpc-js';
import { ENV, LIMITS } from '@mink/config';
import { LocalCluster } from '@mink/devcluster';
import { closed, rawConnection } from '@mink/testing';
import { bearerMetadata, callClientStreaming, callUnary, collectServerStream, openGatewayGrpcClients, type GatewayGrpcClients } from '@mink/grpc-api';
import { eventually, http, ONE_NODE_CLUSTER, temporaryDirectory } from './helpers';

jest.setTimeout(300_000);

const ADMIN = 'exhaustion-admin-secret-1c7e';
const WRITER = 'exhaustion-writer-secret-9a2b';

/** Short timeouts (MINK_HTTP_*_TIMEOUT_MS), so that each is seen within a test's time. */
const HEADERS_TIMEOUT_MS = 1_500;
const REQUEST_TIMEOUT_MS = 3_000;
const KEEP_ALIVE_TIMEOUT_MS = 2_000;
/** How much later than its timeout a connection may be closed: the check interval (at most 1 s), Node's extra second for keep-alive, a loaded machine. */
const SLACK_MS = 3_000;
/** MINK_HTTP_CONNECTIONS_MAX of every service: above the 70 connections test (d) holds at once. */
const CONNECTIONS_MAX = 100;

describe('the gateway under exhaustion', () => {
  const directory = temporaryDirectory('exhaustion');
  let cluster: LocalCluster | null = null;
  let grpc: GatewayGrpcClients | null = null;
  let base = '';
  let port = 0;
  /** The ids appended to `events` so far, in order: what every scan must return. */
  const appended: number[] = [];

  afterAll(async () => {
    grpc?.close();
    await cluster?.stop();
    directory.remove();
  });

  const gateway = () => cluster!.processes().find((entry) => entry.role === 'gateway')!;

  /** A normal append of one row to `events`, then a scan of it that must hold every row appended so far. */
  async function stillServes(what: string): Promise<void> {
    const id = appended.length + 1;
    const append = await eventually(`an append after ${what}`, async () => {
      const answer = await http(base, 'POST', '/v1/tables/events/append', { rows: [{ id, note: what }] }, WRITER);
      return answer.status === 503 ? undefined : answer;
    });
    expect([what, append.status, append.body.appended]).toEqual([what, 200, 1]);
    appended.push(id);
    const scan = await http(base, 'GET', '/v1/tables/events/scan?bucket=0&limit=1000', undefined, ADMIN);
    expect([what, scan.status, scan.body.records.map((record: { row: { id: string } }) => Number(record.row.id))]).toEqual([what, 200, appended]);
  }

  it('starts a gateway with a tokens file and short HTTP timeouts', async () => {
    const tokensFile = join(directory.path, 'tokens.json');
    writeFileSync(
      tokensFile,
      JSON.stringify({
        tokens: [
          { name: 'ops', token: ADMIN, scopes: ['admin'] },
          { name: 'producer', token: WRITER, scopes: ['write'] },
        ],
      }),
    );
    cluster = await LocalCluster.start({
      ...ONE_NODE_CLUSTER,
      dataDir: join(directory.path, 'cluster'),
      env: {
        [ENV.authTokensFile]: tokensFile,
        [ENV.httpHeadersTimeoutMs]: String(HEADERS_TIMEOUT_MS),
        [ENV.httpRequestTimeoutMs]: String(REQUEST_TIMEOUT_MS),
        [ENV.httpKeepAliveTimeoutMs]: String(KEEP_ALIVE_TIMEOUT_MS),
        [ENV.httpConnectionsMax]: String(CONNECTIONS_MAX),
      },
    });
    base = cluster.gatewayUrl;
    port = Number(new URL(base).port);
    grpc = openGatewayGrpcClients(`127.0.0.1:${gateway().ports.grpc}`);
    for (const name of ['events', 'fragile']) {
      const created = await http(base, 'POST', '/v1/tables', { name, columns: [{ name: 'id', type: 'int64' }, { name: 'note', type: 'string' }], buckets: 1 }, ADMIN);
      expect(created.status).toBe(201);
    }
    await stillServes('the start');
  });

  it('(a) refuses a 60 MiB append without a token 401, fast, without the gateway holding the body', async () => {
    const pid = gateway().pid;
    const bytes = 60 * 1024 * 1024;
    const peakBefore = resetPeakRss(pid);
    const startedAt = Date.now();
    const answer = await upload(port, '/v1/tables/events/append', bytes);
    const elapsedMs = Date.now() - startedAt;
    expect([answer.status, JSON.parse(answer.body).error.code]).toEqual([401, 'Unauthenticated']);
    // The answer came before most of the body was sent: the gateway did not wait for it.
    expect(answer.writtenBeforeAnswer!).toBeLessThan(bytes / 4);
    expect(elapsedMs).toBeLessThan(5_000);
    // A gateway that read the body would have held at least its 60 MiB at once (twice, with the chunks it joins).
    const grownMiB = (peakRss(pid) - peakBefore) / (1024 * 1024);
    expect(grownMiB).toBeLessThan(30);
    await stillServes('a 60 MiB append without a token');
  });

  it('(b) refuses a chunked body past the per-request limit 413, and its sender gets the answer', async () => {
    const answer = await chunkedUpload(port, '/v1/tables/events/append', LIMITS.httpBodyBytesMax + 4 * 1024 * 1024, WRITER);
    expect([answer.status, JSON.parse(answer.body).error.message]).toEqual([413, `the request body passes ${LIMITS.httpBodyBytesMax} bytes`]);
    await stillServes('a chunked body past the limit');
  });

  it('(c) cuts a client that sends its headers and then nothing, and one whose body trickles in a byte a second', async () => {
    const startedAt = Date.now();
    const silent = rawConnection(port);
    silent.write('POST /v1/tables/events/append HTTP/1.1\r\nHost: gateway\r\n');
    const trickling = rawConnection(port);
    trickling.write(`POST /v1/tables/events/append HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer ${WRITER}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`);
    const drip = setInterval(() => trickling.write(' '), 1_000);
    const [silentEnd, tricklingEnd] = await Promise.all([closed(silent), closed(trickling)]);
    clearInterval(drip);
    expect(silentEnd.received).toMatch(/^HTTP\/1\.1 408 /);
    expect(silentEnd.atMs - startedAt).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 100);
    expect(silentEnd.atMs - startedAt).toBeLessThan(HEADERS_TIMEOUT_MS + SLACK_MS);
    expect(tricklingEnd.received).toMatch(/^HTTP\/1\.1 408 /);
    expect(tricklingEnd.atMs - startedAt).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 100);
    expect(tricklingEnd.atMs - startedAt).toBeLessThan(REQUEST_TIMEOUT_MS + SLACK_MS);
    await stillServes('slow senders');
  });

  it('(d) closes many idle connections, fresh ones at the header timeout and kept-alive ones at the keep-alive timeout', async () => {
    const startedAt = Date.now();
    const fresh = Array.from({ length: 50 }, () => rawConnection(port));
    const keptAlive = Array.from({ length: 20 }, () => rawConnection(port));
    for (const socket of keptAlive) socket.write('GET /healthz HTTP/1.1\r\nHost: gateway\r\n\r\n');
    const ends = await Promise.all([...fresh, ...keptAlive].map(closed));
    const freshEnds = ends.slice(0, fresh.length);
    const keptAliveEnds = ends.slice(fresh.length);
    for (const end of freshEnds) expect(end.atMs - startedAt).toBeLessThan(HEADERS_TIMEOUT_MS + SLACK_MS);
    for (const end of keptAliveEnds) {
      expect(end.received).toMatch(/^HTTP\/1\.1 200 /);
      expect(end.atMs - startedAt).toBeGreaterThanOrEqual(KEEP_ALIVE_TIMEOUT_MS - 100);
      expect(end.atMs - startedAt).toBeLessThan(KEEP_ALIVE_TIMEOUT_MS + SLACK_MS);
    }
    await stillServes('idle connections');
  });

  it('(d2) drops connections beyond MINK_HTTP_CONNECTIONS_MAX as they are accepted, and serves again once they end', async () => {
    // 120 connections at once, each asking for /healthz and kept alive: at most CONNECTIONS_MAX are answered (fewer
    // by any the test's own HTTP client still holds), every other one is closed without a byte, before any answered
    // one reaches its keep-alive timeout.
    const startedAt = Date.now();
    const sockets = Array.from({ length: CONNECTIONS_MAX + 20 }, () => rawConnection(port));
    for (const socket of sockets) socket.write('GET /healthz HTTP/1.1\r\nHost: gateway\r\n\r\n');
    const ends = await Promise.all(sockets.map(closed));
    const answered = ends.filter((end) => /^HTTP\/1\.1 200 /.test(end.received));
    const dropped = ends.filter((end) => end.received === '');
    expect(answered.length + dropped.length).toBe(sockets.length);
    expect(answered.length).toBeLessThanOrEqual(CONNECTIONS_MAX);
    expect(answered.length).toBeGreaterThanOrEqual(CONNECTIONS_MAX - 10);
    expect(dropped.length).toBeGreaterThanOrEqual(20);
    const firstAnsweredEnd = Math.min(...answered.map((end) => end.atMs));
    for (const end of dropped) expect(end.atMs).toBeLessThan(firstAnsweredEnd);
    expect(firstAnsweredEnd - startedAt).toBeGreaterThanOrEqual(KEEP_ALIVE_TIMEOUT_MS - 100);
    await stillServes('more connections than allowed');
  });

  it('(e) holds back a gRPC call beyond the streams one connection may have open until one of them ends', async () => {
    // Health watches hold their streams open and need no token; the client queues what the server's SETTINGS do not allow.
    const health = grpc!.health as unknown as { Watch(request: object): ClientReadableStream<{ status: string }> };
    const watches = Array.from({ length: LIMITS.grpcConcurrentStreamsPerConnectionMax }, () => health.Watch({ service: '' }));
    const first: Promise<unknown>[] = watches.map((watch) => new Promise((resolve) => watch.once('data', resolve)));
    for (const watch of watches) watch.on('error', () => undefined);
    await Promise.all(first);
    let checked = false;
    const check = callUnary(grpc!.health, 'Check', { service: '' }).then((reply) => ((checked = true), reply));
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(checked).toBe(false);
    watches[0]!.cancel();
    expect(await check).toEqual({ status: 'SERVING' });
    for (const watch of watches) watch.cancel();
    // gRPC itself still serves, on the same connection.
    const id = appended.length + 1;
    expect(await callClientStreaming(grpc!.mink, 'Append', [{ table: 'events', rowsJson: JSON.stringify([{ id, note: 'gRPC' }]) }], bearerMetadata(WRITER))).toMatchObject({ appended: '1' });
    appended.push(id);
    const pages = await collectServerStream<{ recordsJson: string }>(grpc!.mink, 'Scan', { table: 'events', bucket: 0, offset: '0', limit: '1000' }, bearerMetadata(ADMIN));
    expect(pages.flatMap((page) => JSON.parse(page.recordsJson)).map((record: { row: { id: string } }) => Number(record.row.id))).toEqual(appended);
    await stillServes('more gRPC calls than streams');
  });

  it('(f) answers an internal error 500 with an error id only, and logs the error under that id', async () => {
    // The only row of `fragile` goes to a WAL object of its own, which is then overwritten on the S3 server's
    // disk; a restart empties the data node's cache, so the scan must read the corrupted bytes.
    const s3Folder = join(directory.path, 'cluster', 's3');
    const before = new Set(walObjectsIn(s3Folder));
    const append = await eventually('the append to fragile', async () => {
      const answer = await http(base, 'POST', '/v1/tables/fragile/append', { rows: [{ id: 1, note: 'x'.repeat(200) }] }, WRITER);
      return answer.status === 503 ? undefined : answer;
    });
    expect(append.status).toBe(200);
    const written = walObjectsIn(s3Folder).filter((file) => !before.has(file));
    expect(written.length).toBeGreaterThan(0);
    for (const file of written) writeFileSync(file, Buffer.alloc(statSync(file).size, 0xa5));
    await cluster!.restart('data-node', '1');
    const failed = await eventually('the scan of the corrupted bucket', async () => {
      const answer = await http(base, 'GET', '/v1/tables/fragile/scan?bucket=0', undefined, ADMIN);
      return answer.status === 503 ? undefined : answer;
    });
    expect([failed.status, failed.body.error.code]).toEqual([500, 'Internal']);
    const errorId = failed.headers.get('mink-error-id');
    expect(failed.body.error.message).toBe(`internal error ${errorId}; the service's log has the details under this id`);
    // The gateway's output reaches its log file through `mink up`'s pipe, a moment later.
    const logLines = await eventually('the log line of the error', () => {
      const lines = readFileSync(gateway().logFile, 'utf8').split('\n').filter((line) => line.includes(String(errorId)));
      return lines.length > 0 ? lines : undefined;
    });
    expect(logLines.length).toBe(1);
    // The log line holds the error itself, with the message the caller did not get.
    const logged = JSON.parse(logLines[0]!) as { errorId: string; err: { message: string; stack: string } };
    expect(logged).toMatchObject({ errorId, msg: 'request failed', err: { message: expect.any(String), stack: expect.any(String) } });
    expect(logged.err.message).not.toMatch(/^internal error /);
    expect(failed.body.error.message).not.toContain(logged.err.message);
    await stillServes('an internal error');
  });
});

/** The peak resident memory of process `pid` so far (VmHWM), in bytes. */
function peakRss(pid: number): number {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match![1]) * 1024;
}

/** Resets the peak resident memory of `pid` to its current one (writing 5 to clear_refs) and returns it. */
function resetPeakRss(pid: number): number {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
  return peakRss(pid);
}

/** Every WAL object file under the S3 server's folder. */
function walObjectsIn(folder: string): string[] {
  const found: string[] = [];
  const walk = (path: string): void => {
    for (const entry of readdirSync(path, { withFileTypes: true })) {
      const child = join(path, entry.name);
      if (entry.isDirectory()) walk(child);
      else if (entry.name.endsWith('._S3rver_object') && child.includes('/wal/')) found.push(child);
    }
  };
  walk(folder);
  return found;
}


/** POSTs `bytes` of body with a Content-Length and no token, 1 MiB at a time, until answered or cut. */
function upload(port: number, path: string, bytes: number): Promise<{ status: number; body: string; writtenBeforeAnswer: number | null }> {
  return new Promise((resolve, reject) => {
    const chunk = Buffer.alloc(1 << 20, 0x20);
    let written = 0;
    let writtenBeforeAnswer: number | null = null;
    const outgoing = httpRequest({ host: '127.0.0.1', port, path, method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'content-length': bytes, connection: 'keep-alive' } }, (incoming) => {
      writtenBeforeAnswer = written;
      let body = '';
      incoming.setEncoding('utf8');
      incoming.on('data', (text: string) => (body += text));
      incoming.on('end', () => {
        outgoing.destroy();
        resolve({ status: incoming.statusCode ?? 0, body, writtenBeforeAnswer });
      });
    });
    outgoing.on('error', (error) => {
      if (writtenBeforeAnswer === null) reject(error);
    });
    const writeMore = (): void => {
      while (writtenBeforeAnswer === null && written < bytes) {
        written += chunk.byteLength;
        if (!outgoing.write(chunk)) return void outgoing.once('drain', writeMore);
      }
    };
    writeMore();
  });
}

/** POSTs `bytes` of body chunked (no Content-Length) with `token`, 1 MiB at a time, until answered or cut. */
function chunkedUpload(port: number, path: string, bytes: number, token: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const chunk = Buffer.alloc(1 << 20, 0x20);
    let written = 0;
    let answered = false;
    const outgoing = httpRequest(
      { host: '127.0.0.1', port, path, method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked', authorization: `Bearer ${token}`, connection: 'keep-alive' } },
      (incoming) => {
        answered = true;
        let body = '';
        incoming.setEncoding('utf8');
        incoming.on('data', (text: string) => (body += text));
        incoming.on('end', () => {
          outgoing.destroy();
          resolve({ status: incoming.statusCode ?? 0, body });
        });
      },
    );
    outgoing.on('error', (error) => {
      if (!answered) reject(error);
    });
    const writeMore = (): void => {
      while (!answered && written < bytes) {
        written += chunk.byteLength;
        if (!outgoing.write(chunk)) return void outgoing.once('drain', writeMore);
      }
      if (!answered) outgoing.end();
    };
    writeMore();
  });
}
