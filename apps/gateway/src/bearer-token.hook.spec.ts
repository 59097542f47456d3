import 'reflect-metadata';
import { connect } from 'node:net';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { LIMITS } from '@mink/config';
import { parseAccessPolicy, type GatewayService } from '@mink/http-api';
import { flood } from '@mink/testing';
import { OPEN_ROUTES, unauthenticatedRefusalOf } from './bearer-token.hook';
import { startGatewayOver } from './gateway-app.fixture';

/**
 * The gateway's check of bearer tokens before bodies (BearerTokenHook): with a tokens file, a request whose
 * token the gateway did not issue is refused 401 on its headers alone, so its body is never read, parsed or
 * held; health, metrics and the console stay open; scopes and tables are still the AccessGuard's.
 */

const WRITER = 'writer-token-00000001';
const READER = 'reader-token-00000001';
const POLICY = parseAccessPolicy(
  JSON.stringify({
    tokens: [
      { name: 'producer', token: WRITER, scopes: ['write'] },
      { name: 'analyst', token: READER, scopes: ['read'], tables: ['events'] },
    ],
  }),
  'tokens.json',
);

describe('unauthenticatedRefusalOf', () => {
  it.each<[string, string | undefined, string | undefined, string | null]>([
    ['an append with an issued token', '/v1/tables/:name/append', `Bearer ${WRITER}`, null],
    ['a read-only token on an append (the guard refuses it later, 403)', '/v1/tables/:name/append', `Bearer ${READER}`, null],
    ['a token limited to tables on a cluster route (the guard refuses it later, 403)', '/v1/cluster', `Bearer ${READER}`, null],
    ['an append without a token', '/v1/tables/:name/append', undefined, 'this gateway needs a bearer token: send "Authorization: Bearer <token>"'],
    ['an append with a token nobody issued', '/v1/tables/:name/append', 'Bearer guessed-000000000000', 'the bearer token is not one this gateway issued'],
    ['an append with another scheme', '/v1/tables/:name/append', `Basic ${WRITER}`, 'the Authorization header must be "Bearer <token>"'],
    ['a path that matches no route', undefined, undefined, 'this gateway needs a bearer token: send "Authorization: Bearer <token>"'],
    ['/healthz', '/healthz', undefined, null],
    ['/readyz', '/readyz', undefined, null],
    ['/metrics', '/metrics', undefined, null],
    ['the console page', '/console', undefined, null],
    ['a console file', '/console/*', undefined, null],
  ])('%s', (_case, route, authorization, message) => {
    const refusal = unauthenticatedRefusalOf(POLICY, route, authorization);
    expect(refusal === null ? null : [refusal.code, refusal.message]).toEqual(message === null ? null : ['Unauthenticated', message]);
  });

  it('leaves open exactly health, metrics and the console', () => {
    expect([...OPEN_ROUTES].sort()).toEqual(['/console', '/console/*', '/healthz', '/metrics', '/readyz']);
  });
});

describe('a gateway with a tokens file', () => {
  const appended: unknown[] = [];
  const service = {
    append: async (_table: string, body: unknown) => (appended.push(body), { appended: 1, buckets: [] }),
    listTables: async () => ({ tables: [] }),
  } as unknown as GatewayService;
  let app: NestFastifyApplication;
  let port: number;

  beforeAll(async () => {
    app = await startGatewayOver(service, { policy: POLICY });
    await app.listen(0, '127.0.0.1');
    port = (app.getHttpServer().address() as { port: number }).port;
  });

  afterAll(async () => {
    await app.close();
  });

  beforeEach(() => {
    appended.length = 0;
  });

  const inject = (method: 'GET' | 'POST', url: string, token?: string, payload?: string) =>
    app
      .getHttpAdapter()
      .getInstance()
      .inject({ method, url, headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(payload === undefined ? {} : { 'content-type': 'application/json' }) }, ...(payload === undefined ? {} : { payload }) });

  it('refuses a request without an issued token before parsing its body, and serves one with it', async () => {
    // Proves the refusal comes before the body is parsed: a body that is not JSON gets the 401, not a 400.
    for (const token of [undefined, 'guessed-000000000000']) {
      const refused = await inject('POST', '/v1/tables/events/append', token, '{"rows": [not json');
      expect([refused.statusCode, refused.json().error.code, refused.headers['www-authenticate']]).toEqual([401, 'Unauthenticated', 'Bearer realm="mink"']);
    }
    expect((await inject('POST', '/v1/nowhere', undefined, '{}')).statusCode).toBe(401);
    expect(appended).toEqual([]);
    expect((await inject('POST', '/v1/tables/events/append', WRITER, '{"rows":[{"id":1}]}')).statusCode).toBe(200);
    expect(appended).toHaveLength(1);
    // The guard still decides scopes: the reader's token was issued, but may not append.
    expect((await inject('POST', '/v1/tables/events/append', READER, '{"rows":[{"id":1}]}')).statusCode).toBe(403);
    // Open routes need no token: the console's page (which asks its user for one) among them.
    expect([(await inject('GET', '/healthz')).statusCode, (await inject('GET', '/console')).statusCode, (await inject('GET', '/v1/tables')).statusCode]).toEqual([200, 200, 401]);
  });

  it.each(['http://gateway/v1/tables/events/append', '*', '//v1/tables/events/append'])('refuses an unusual request target %p without a token before reading its body', async (target) => {
    // Proves no request target reaches a parsed body unauthenticated, including those Nest sends to its 404 handler.
    const answer = await rawPost(port, target, '{"rows":[{"id":1}]}');
    expect(answer).toMatch(/^HTTP\/1\.1 401 /);
    expect(appended).toEqual([]);
  });

  it('answers a 60 MiB append without a token while most of it is unsent, reads little of it, and closes the connection', async () => {
    // Proves an unauthenticated caller cannot make the gateway read, hold or parse a large body: the 401 comes
    // first, and a caller that goes on sending is cut after LIMITS.httpRefusedBodyLingerMs.
    const bytes = 60 * 1024 * 1024;
    const answer = await flood(port, '/v1/tables/events/append', bytes, false);
    expect([answer.status, JSON.parse(answer.body).error.code, answer.closedByServer]).toEqual([401, 'Unauthenticated', true]);
    expect(answer.writtenBeforeAnswer).toBeLessThan(bytes / 4);
    expect(answer.written).toBeLessThan(bytes);
    expect(answer.elapsedMs).toBeLessThan(LIMITS.httpRefusedBodyLingerMs + 5_000);
    expect(appended).toEqual([]);
    expect((await inject('POST', '/v1/tables/events/append', WRITER, '{"rows":[{"id":2}]}')).statusCode).toBe(200);
  });
});


/** Sends a POST of `body` to `target` as written, and resolves with what comes back until the headers end. */
function rawPost(port: number, target: string, body: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(`POST ${target} HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    });
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (text: string) => {
      received += text;
      if (received.includes('\r\n\r\n')) {
        socket.destroy();
        resolve(received);
      }
    });
    socket.on('error', () => resolve(received));
  });
}
