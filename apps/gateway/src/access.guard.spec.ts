import 'reflect-metadata';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { parseAccessPolicy, type AccessPolicy, type GatewayService } from '@mink/http-api';
import { loadAccessPolicy } from './access.guard';
import { startGatewayOver } from './gateway-app.fixture';

/**
 * Bearer tokens on every route of the gateway's API, over the real Nest/Fastify stack with the service replaced
 * by a recorder: which token reaches which route, and what a refusal looks like on the wire.
 */

const ADMIN = 'admin-token-000000001';
const WRITER = 'writer-token-00000001';
const READER = 'reader-token-00000001';
const EVENTS_ONLY = 'events-token-00000001';

const POLICY = parseAccessPolicy(
  JSON.stringify({
    tokens: [
      { name: 'ops', token: ADMIN, scopes: ['admin'] },
      { name: 'producer', token: WRITER, scopes: ['write'] },
      { name: 'analyst', token: READER, scopes: ['read'] },
      { name: 'events-team', token: EVENTS_ONLY, scopes: ['read', 'write', 'admin'], tables: ['events'] },
    ],
  }),
  'tokens.json',
);

/** Every route of the API: method, path, body, and the scope it needs. */
const ROUTES: [string, string, unknown, 'read' | 'write' | 'admin', boolean][] = [
  // method, url, body, scope, names a single table ('events')
  ['POST', '/v1/tables', { name: 'events', columns: [{ name: 'id', type: 'int64' }] }, 'admin', true],
  ['GET', '/v1/tables', undefined, 'read', false],
  ['GET', '/v1/tables/events', undefined, 'read', true],
  ['PATCH', '/v1/tables/events', { properties: {} }, 'admin', true],
  ['DELETE', '/v1/tables/events', undefined, 'admin', true],
  ['POST', '/v1/tables/events/append', { rows: [{ id: 1 }] }, 'write', true],
  ['POST', '/v1/tables/events/put', { rows: [{ id: 1 }] }, 'write', true],
  ['POST', '/v1/tables/events/delete', { keys: [{ id: 1 }] }, 'write', true],
  ['POST', '/v1/tables/events/lookup', { keys: [{ id: 1 }] }, 'read', true],
  ['POST', '/v1/tables/events/prefix-lookup', { prefixes: [{ id: 1 }] }, 'read', true],
  ['GET', '/v1/tables/events/scan?bucket=0', undefined, 'read', true],
  ['GET', '/v1/cluster', undefined, 'read', false],
  ['POST', '/v1/cluster/rebalance?dryRun=true', undefined, 'admin', false],
  ['GET', '/v1/kafka/groups', undefined, 'read', false],
];

const ALLOWED: Record<string, (scope: string, oneTable: boolean) => boolean> = {
  [ADMIN]: () => true,
  [WRITER]: (scope) => scope === 'write',
  [READER]: (scope) => scope === 'read',
  [EVENTS_ONLY]: (_scope, oneTable) => oneTable,
};

describe('gateway access tokens', () => {
  const calls: string[] = [];
  const answer = (name: string) => async () => (calls.push(name), { ok: true });
  const service = {
    createTable: answer('createTable'),
    listTables: answer('listTables'),
    describeTable: answer('describeTable'),
    alterTable: answer('alterTable'),
    dropTable: answer('dropTable'),
    append: answer('append'),
    put: answer('put'),
    delete: answer('delete'),
    lookup: answer('lookup'),
    prefixLookup: answer('prefixLookup'),
    scan: async () => (calls.push('scan'), { contentType: 'application/json', headers: {}, body: '{"records":[]}' }),
    clusterStatus: answer('clusterStatus'),
    rebalance: answer('rebalance'),
    kafkaGroups: answer('kafkaGroups'),
  } as unknown as GatewayService;

  const start = (policy: AccessPolicy | null): Promise<NestFastifyApplication> => startGatewayOver(service, { policy });

  let guarded: NestFastifyApplication;
  let open: NestFastifyApplication;
  beforeAll(async () => {
    guarded = await start(POLICY);
    open = await start(null);
  });
  afterAll(async () => {
    await guarded.close();
    await open.close();
  });
  beforeEach(() => {
    calls.length = 0;
  });

  function send(app: NestFastifyApplication, [method, url, body]: (typeof ROUTES)[number], token?: string) {
    return app.getHttpAdapter().getInstance().inject({
      method: method as 'GET',
      url,
      ...(body === undefined ? {} : { payload: body as object }),
      headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    });
  }

  it.each(ROUTES)('%s %s: 401 without a token or with an unknown one, 403 or 200 by scope and table', async (...route) => {
    // Proves every route is guarded, and a refused request never reaches the service.
    for (const token of [undefined, 'unknown-token-0000000001']) {
      const refused = await send(guarded, route, token);
      expect(refused.statusCode).toBe(401);
      expect(refused.headers['www-authenticate']).toBe('Bearer realm="mink"');
      expect(refused.json()).toEqual({ error: { code: 'Unauthenticated', message: expect.any(String) } });
    }
    expect(calls).toEqual([]);
    for (const token of [ADMIN, WRITER, READER, EVENTS_ONLY]) {
      const response = await send(guarded, route, token);
      const allowed = ALLOWED[token]!(route[3], route[4]);
      expect([token, response.statusCode]).toEqual([token, allowed ? (route[0] === 'POST' && route[1] === '/v1/tables' ? 201 : 200) : 403]);
      if (!allowed) expect(response.json()).toEqual({ error: { code: 'PermissionDenied', message: expect.any(String) } });
      expect(JSON.stringify(response.json())).not.toContain(token);
    }
    expect(calls).toHaveLength(Object.values(ALLOWED).filter((allows) => allows(route[3], route[4])).length);
  });

  it('asks a table-limited token for a table it covers when it creates one', async () => {
    const created = await send(guarded, ['POST', '/v1/tables', { name: 'orders', columns: [] }, 'admin', true], EVENTS_ONLY);
    expect(created.statusCode).toBe(403);
    expect(created.json().error.message).toContain("does not cover table 'orders'");
  });

  it('leaves /healthz, /readyz and /metrics open, and asks nothing without a policy', async () => {
    for (const path of ['/healthz', '/metrics']) expect((await guarded.getHttpAdapter().getInstance().inject({ method: 'GET', url: path })).statusCode).toBe(200);
    expect([200, 503]).toContain((await guarded.getHttpAdapter().getInstance().inject({ method: 'GET', url: '/readyz' })).statusCode);
    for (const route of ROUTES) expect((await send(open, route)).statusCode).toBeLessThan(300);
  });

  it('loads no policy without a file, and refuses to start on a file it cannot read or use, naming it', () => {
    expect(loadAccessPolicy('')).toBeNull();
    expect(() => loadAccessPolicy('/nonexistent/mink-tokens.json')).toThrow('MINK_AUTH_TOKENS_FILE: cannot read /nonexistent/mink-tokens.json (ENOENT)');
    expect(() => loadAccessPolicy(__filename)).toThrow(`${__filename}: not JSON`);
  });
});
