import 'reflect-metadata';
import { createHash } from 'node:crypto';
import { Body, Controller, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { LIMITS, Secret } from '@mink/config';
import { flood } from '@mink/testing';
import { UnauthenticatedError, clusterAuthorizationOf, fromErrorBody } from '@mink/protocol';
import { HealthController } from './health.controller';
import { createHttpAdapter } from './http-adapter';
import { HttpErrorFilter } from './http-errors';
import { checkCredential, guardedRoutesOf, refusalOf, type CredentialCheck, type RouteSecrets } from './route-credentials';
import { SERVICE_STATE, ServiceState } from './service-state';

const CLUSTER_SECRET = 'cluster-secret-0123456789abcdef';
const METRICS_TOKEN = 'metrics-token-0123456789abcdef';
const digestOf = (text: string) => createHash('sha256').update(text, 'utf8').digest();

describe('checkCredential', () => {
  // Proves the one rule of an Authorization header against a secret: "<scheme> <secret>", the scheme in any
  // case, spaces only between the two, and the secret itself (compared by digest in constant time).
  const digest = digestOf(CLUSTER_SECRET);
  const cases: [string, string | undefined, CredentialCheck][] = [
    ['the right secret', `Cluster ${CLUSTER_SECRET}`, 'accepted'],
    ['the scheme in another case', `cluster ${CLUSTER_SECRET}`, 'accepted'],
    ['several spaces between, one after', `Cluster   ${CLUSTER_SECRET} `, 'accepted'],
    ['no header', undefined, 'missing'],
    ['an empty header', '', 'missing'],
    ['another scheme with the right secret', `Bearer ${CLUSTER_SECRET}`, 'malformed'],
    ['the secret alone', CLUSTER_SECRET, 'malformed'],
    ['the scheme alone', 'Cluster', 'malformed'],
    ['a space inside the secret', `Cluster ${CLUSTER_SECRET.slice(0, 10)} ${CLUSTER_SECRET.slice(10)}`, 'malformed'],
    ['a wrong secret of the same length', `Cluster ${CLUSTER_SECRET.replace(/.$/, 'X')}`, 'wrong'],
    ['the secret with one character more', `Cluster ${CLUSTER_SECRET}x`, 'wrong'],
    ['a prefix of the secret', `Cluster ${CLUSTER_SECRET.slice(0, 16)}`, 'wrong'],
    ['the secret in another case', `Cluster ${CLUSTER_SECRET.toUpperCase()}`, 'wrong'],
  ];
  it.each(cases)('%s', (_what, header, expected) => {
    expect(checkCredential(header, 'Cluster', digest)).toBe(expected);
  });
});

describe('refusalOf', () => {
  // Proves which routes ask for which secret: /internal/… the cluster secret, /metrics the metrics token,
  // everything else (and a path that matches no route) nothing; and that no secret set guards nothing.
  const both: RouteSecrets = { clusterSecret: new Secret(CLUSTER_SECRET), metricsToken: new Secret(METRICS_TOKEN) };
  const guarded = guardedRoutesOf(both);
  const cases: [string, string | undefined, string | undefined, string | null][] = [
    ['the internal scan route with the cluster secret', '/internal/v1/scan', clusterAuthorizationOf(CLUSTER_SECRET), null],
    ['the internal scan route without credentials', '/internal/v1/scan', undefined, 'this route needs the cluster secret (MINK_CLUSTER_SECRET_FILE): send "Authorization: Cluster <secret>"'],
    ['the internal scan route with the metrics token as a bearer', '/internal/v1/scan', `Bearer ${METRICS_TOKEN}`, 'this route needs the cluster secret (MINK_CLUSTER_SECRET_FILE): the Authorization header must be "Cluster <secret>"'],
    ['the internal scan route with the metrics token under the cluster scheme', '/internal/v1/scan', `Cluster ${METRICS_TOKEN}`, 'this route needs the cluster secret (MINK_CLUSTER_SECRET_FILE): the one sent is not this service\'s'],
    ['any other internal route', '/internal/v2/anything', undefined, 'this route needs the cluster secret (MINK_CLUSTER_SECRET_FILE): send "Authorization: Cluster <secret>"'],
    ['/metrics with the token', '/metrics', `Bearer ${METRICS_TOKEN}`, null],
    ['/metrics without it', '/metrics', undefined, 'this route needs the metrics token (MINK_METRICS_TOKEN_FILE): send "Authorization: Bearer <secret>"'],
    ['/metrics with the cluster secret', '/metrics', clusterAuthorizationOf(CLUSTER_SECRET), 'this route needs the metrics token (MINK_METRICS_TOKEN_FILE): the Authorization header must be "Bearer <secret>"'],
    ['/metrics with a wrong token', '/metrics', 'Bearer not-the-metrics-token', 'this route needs the metrics token (MINK_METRICS_TOKEN_FILE): the one sent is not this service\'s'],
    ['/healthz', '/healthz', undefined, null],
    ['/readyz', '/readyz', undefined, null],
    ['an API route', '/v1/tables/:name/append', undefined, null],
    ['no route (a 404)', undefined, undefined, null],
  ];
  it.each(cases)('%s', (_what, route, header, message) => {
    const refusal = refusalOf(guarded, route, header);
    expect(refusal?.error.message ?? null).toBe(message);
    if (refusal) expect(refusal.error).toBeInstanceOf(UnauthenticatedError);
  });

  it('guards nothing without secrets, and each route by its own secret only', () => {
    expect(guardedRoutesOf({ clusterSecret: null, metricsToken: null })).toEqual([]);
    const clusterOnly = guardedRoutesOf({ clusterSecret: new Secret(CLUSTER_SECRET), metricsToken: null });
    expect([refusalOf(clusterOnly, '/metrics', undefined), refusalOf(clusterOnly, '/internal/v1/scan', undefined)?.error.code]).toEqual([null, 'Unauthenticated']);
    const metricsOnly = guardedRoutesOf({ clusterSecret: null, metricsToken: new Secret(METRICS_TOKEN) });
    expect([refusalOf(metricsOnly, '/internal/v1/scan', undefined), refusalOf(metricsOnly, '/metrics', undefined)?.error.code]).toEqual([null, 'Unauthenticated']);
  });
});


@Controller()
class InternalEchoController {
  static bodies: unknown[] = [];

  @Post('internal/v1/echo')
  echo(@Body() body: unknown): { echoed: unknown } {
    InternalEchoController.bodies.push(body);
    return { echoed: body };
  }

  @Post('v1/open')
  open(@Body() body: unknown): { echoed: unknown } {
    return { echoed: body };
  }
}

describe('the routes of a service with a cluster secret and a metrics token', () => {
  let app: NestFastifyApplication;
  let port: number;
  const state = new ServiceState('data-node', '1');

  beforeAll(async () => {
    @Module({ controllers: [HealthController, InternalEchoController], providers: [{ provide: SERVICE_STATE, useValue: state }] })
    class GuardedTestModule {}
    const routeSecrets = { clusterSecret: new Secret(CLUSTER_SECRET), metricsToken: new Secret(METRICS_TOKEN) };
    app = await NestFactory.create<NestFastifyApplication>(GuardedTestModule, createHttpAdapter(undefined, { routeSecrets }), { logger: false, bodyParser: false });
    app.useGlobalFilters(new HttpErrorFilter());
    await app.listen(0, '127.0.0.1');
    port = (app.getHttpServer().address() as { port: number }).port;
    state.setReady(true);
  });

  afterAll(async () => {
    await app.close();
  });

  beforeEach(() => {
    InternalEchoController.bodies = [];
  });

  const inject = (method: 'GET' | 'POST', url: string, authorization?: string, payload?: string) => {
    const headers: Record<string, string> = {};
    if (authorization !== undefined) headers.authorization = authorization;
    if (payload !== undefined) headers['content-type'] = 'application/json';
    return app.getHttpAdapter().getInstance().inject({ method, url, headers, ...(payload === undefined ? {} : { payload }) });
  };

  it('answers an internal route only with the cluster secret, with a 401 an HTTP caller rebuilds as Unauthenticated', async () => {
    // Proves the guard's answer is the usual error body (so HttpScanPages gets a typed error) and that the
    // handler never runs for a refused request, even one whose body is not JSON (the body is not parsed).
    for (const authorization of [undefined, clusterAuthorizationOf('not-the-cluster-secret'), `Bearer ${CLUSTER_SECRET}`]) {
      const refused = await inject('POST', '/internal/v1/echo', authorization, '{"not json');
      expect([refused.statusCode, refused.headers['www-authenticate']]).toEqual([401, 'Cluster realm="mink"']);
      expect(fromErrorBody(refused.json())).toMatchObject({ code: 'Unauthenticated', message: expect.stringContaining('the cluster secret (MINK_CLUSTER_SECRET_FILE)') });
    }
    expect(InternalEchoController.bodies).toEqual([]);
    const accepted = await inject('POST', '/internal/v1/echo', clusterAuthorizationOf(CLUSTER_SECRET), '{"rows":[1]}');
    expect([accepted.statusCode, accepted.json()]).toEqual([201, { echoed: { rows: [1] } }]);
    // A route outside /internal/ asks for nothing.
    expect((await inject('POST', '/v1/open', undefined, '{"a":1}')).json()).toEqual({ echoed: { a: 1 } });
  });

  it('answers /metrics only with the metrics token, and /healthz and /readyz to anyone', async () => {
    expect((await inject('GET', '/metrics')).statusCode).toBe(401);
    expect((await inject('GET', '/metrics', `Bearer ${CLUSTER_SECRET}`)).statusCode).toBe(401);
    expect((await inject('GET', '/metrics', clusterAuthorizationOf(METRICS_TOKEN))).statusCode).toBe(401);
    const scraped = await inject('GET', '/metrics', `Bearer ${METRICS_TOKEN}`);
    expect([scraped.statusCode, scraped.body]).toEqual([200, expect.stringContaining('process_cpu_user_seconds_total')]);
    expect((await inject('GET', '/healthz')).json()).toEqual({ status: 'ok', role: 'data-node', node: '1' });
    expect((await inject('GET', '/readyz')).statusCode).toBe(200);
  });

  it('refuses a 48 MiB body without credentials before reading it, closes the connection, and goes on serving', async () => {
    // Proves the check runs before the body is read: the 401 arrives while most of the body is still to be
    // sent (a server reading it first would answer only after all of it), and the server then closes the
    // connection rather than wait for the rest of the body.
    const bytes = 48 * 1024 * 1024;
    const answer = await flood(port, '/internal/v1/echo', bytes, true);
    expect([answer.status, JSON.parse(answer.body).error.code, answer.closedByServer]).toEqual([401, 'Unauthenticated', true]);
    expect(answer.writtenBeforeAnswer).toBeLessThan(bytes / 3);
    expect(InternalEchoController.bodies).toEqual([]);
    expect((await inject('POST', '/internal/v1/echo', clusterAuthorizationOf(CLUSTER_SECRET), '{"after":true}')).json()).toEqual({ echoed: { after: true } });
  });

  it('reads no more of a refused body from a caller that goes on sending, and cuts its connection after LIMITS.httpRefusedBodyLingerMs', async () => {
    // Proves an unauthenticated caller cannot make the service drain a body: once the socket buffers are
    // full the caller is blocked, then cut, having sent a small part of the body; the answer reached it first.
    const bytes = 48 * 1024 * 1024;
    const pushy = await flood(port, '/internal/v1/echo', bytes, false);
    expect([pushy.status, pushy.closedByServer]).toEqual([401, true]);
    expect(pushy.written).toBeLessThan(bytes / 2);
    expect(pushy.elapsedMs).toBeGreaterThanOrEqual(LIMITS.httpRefusedBodyLingerMs - 50);
    expect(pushy.elapsedMs).toBeLessThan(LIMITS.httpRefusedBodyLingerMs + 5_000);
    expect((await inject('GET', '/healthz')).statusCode).toBe(200);
  });
});
