/**
 * Bearer tokens on a real local cluster (issue "Operations", item 4): a gateway started with
 * MINK_AUTH_TOKENS_FILE refuses a request without a token or with one it did not issue (401, with
 * `WWW-Authenticate`), refuses a token beyond its scopes or tables (403), and serves the rest; the `mink`
 * command sends MINK_TOKEN; no token appears in any log of any process.
 */
import { execFile } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { ENV } from '@mink/config';
import { LocalCluster } from '@mink/devcluster';
import { eventually, temporaryDirectory } from './helpers';

jest.setTimeout(180_000);

const run = promisify(execFile);
const CLI = resolve(__dirname, '../../packages/cli/dist/main.js');

const TOKENS = {
  ops: 'ops-secret-4b1c9e7d2f',
  producer: 'producer-secret-8a6f3e1b',
  analyst: 'analyst-secret-5d2a7c9e',
  eventsTeam: 'events-team-secret-1f8b',
};

describe('bearer tokens on the gateway of a real local cluster', () => {
  const directory = temporaryDirectory('auth');
  let cluster: LocalCluster | null = null;

  afterAll(async () => {
    await cluster?.stop();
    directory.remove();
  });

  async function call(method: string, path: string, token?: string, body?: unknown): Promise<{ status: number; body: any; headers: Headers }> {
    const response = await fetch(`${cluster!.gatewayUrl}${path}`, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text === '' ? null : JSON.parse(text), headers: response.headers };
  }

  it('serves each token what its scopes and tables allow, refuses the rest, and logs no token', async () => {
    const tokensFile = join(directory.path, 'tokens.json');
    writeFileSync(
      tokensFile,
      JSON.stringify({
        tokens: [
          { name: 'ops', token: TOKENS.ops, scopes: ['admin'] },
          { name: 'producer', token: TOKENS.producer, scopes: ['write'] },
          { name: 'analyst', token: TOKENS.analyst, scopes: ['read'] },
          { name: 'events-team', token: TOKENS.eventsTeam, scopes: ['read', 'write'], tables: ['events'] },
        ],
      }),
    );
    cluster = await LocalCluster.start({
      dataDir: join(directory.path, 'cluster'),
      nodes: 1,
      coordinators: 1,
      gatewayPort: 0,
      kafkaPort: 0,
      leaseTtlMs: 3_000,
      coordinatorTickMs: 500,
      env: { [ENV.authTokensFile]: tokensFile },
    });
    const table = { name: 'events', columns: [{ name: 'id', type: 'int64' }], buckets: 1 };

    const anonymous = await call('POST', '/v1/tables', undefined, table);
    expect([anonymous.status, anonymous.body.error.code, anonymous.headers.get('www-authenticate')]).toEqual([401, 'Unauthenticated', 'Bearer realm="mink"']);
    expect((await call('GET', '/v1/tables', 'guessed-secret-00000000')).status).toBe(401);
    expect((await call('POST', '/v1/tables', TOKENS.producer, table)).body.error.code).toBe('PermissionDenied');
    expect((await call('POST', '/v1/tables', TOKENS.ops, table)).status).toBe(201);
    expect((await call('POST', '/v1/tables', TOKENS.ops, { ...table, name: 'orders' })).status).toBe(201);

    // Writes: the producer and the events team may append to events; the analyst may not; the events team not to orders.
    expect((await call('POST', '/v1/tables/events/append', TOKENS.analyst, { rows: [{ id: 0 }] })).status).toBe(403);
    expect((await call('POST', '/v1/tables/orders/append', TOKENS.eventsTeam, { rows: [{ id: 0 }] })).status).toBe(403);
    // The first append waits for the new bucket to open (503 until then).
    const first = await eventually('the first append to events', async () => {
      const answer = await call('POST', '/v1/tables/events/append', TOKENS.producer, { rows: [{ id: 0 }] });
      return answer.status === 503 ? undefined : answer;
    });
    expect(first.status).toBe(200);
    expect((await call('POST', '/v1/tables/events/append', TOKENS.eventsTeam, { rows: [{ id: 1 }] })).status).toBe(200);

    // Reads: the analyst and the events team see both rows; the producer may not read.
    expect((await call('GET', '/v1/tables/events/scan?bucket=0', TOKENS.producer)).status).toBe(403);
    for (const token of [TOKENS.analyst, TOKENS.eventsTeam, TOKENS.ops]) {
      const scan = await call('GET', '/v1/tables/events/scan?bucket=0', token);
      expect([scan.status, scan.body.records.map((record: { row: { id: string } }) => Number(record.row.id))]).toEqual([200, [0, 1]]);
    }
    expect((await call('GET', '/v1/tables', TOKENS.eventsTeam)).status).toBe(403);
    expect((await call('GET', '/v1/cluster', TOKENS.analyst)).status).toBe(200);
    expect((await call('POST', '/v1/cluster/rebalance?dryRun=true', TOKENS.analyst)).status).toBe(403);
    expect((await call('DELETE', '/v1/tables/orders', TOKENS.eventsTeam)).status).toBe(403);
    expect((await call('DELETE', '/v1/tables/orders', TOKENS.ops)).status).toBe(200);

    // The mink command sends MINK_TOKEN; without it the gateway's refusal is what it prints.
    const env = { ...process.env, MINK_GATEWAY_URL: cluster.gatewayUrl };
    const listed = await run(process.execPath, [CLI, 'table', 'list', '--json'], { env: { ...env, MINK_TOKEN: TOKENS.analyst } });
    expect(JSON.parse(listed.stdout).tables.map((entry: { name: string }) => entry.name)).toEqual(['events']);
    const refused = await run(process.execPath, [CLI, 'table', 'list'], { env: { ...env, MINK_TOKEN: '' } }).then(
      () => null,
      (error: { code: number; stderr: string }) => error,
    );
    expect([refused?.code, refused?.stderr.trim()]).toEqual([1, expect.stringMatching(/^error: Unauthenticated: /)]);

    // Secure by default: the gateway bound beyond loopback without a tokens file refuses to start, naming what to
    // set; told outright (MINK_ALLOW_UNAUTHENTICATED=true) it starts, and serves without a token.
    const exposed = await cluster.restart('gateway', 'gateway-1', { env: { [ENV.authTokensFile]: '', MINK_HTTP_BIND_HOST: '0.0.0.0' } }).then(
      () => 'started',
      (error: Error) => error.message,
    );
    expect(exposed).toContain('MINK_HTTP_BIND_HOST=0.0.0.0 serves the gateway beyond this machine without credentials: set MINK_AUTH_TOKENS_FILE');
    await cluster.restart('gateway', 'gateway-1', { env: { [ENV.authTokensFile]: '', MINK_HTTP_BIND_HOST: '0.0.0.0', MINK_ALLOW_UNAUTHENTICATED: 'true' } });
    expect((await call('GET', '/v1/tables', undefined)).status).toBe(200);
    // The same for a data node: its Kafka listener beyond loopback without a tokens file (SASL), its HTTP server (the
    // internal scans) without a cluster secret; with the tokens file it starts.
    const dataNodeExposed = await cluster.restart('data-node', '1', { env: { [ENV.authTokensFile]: '', MINK_KAFKA_BIND_HOST: '0.0.0.0' } }).then(
      () => 'started',
      (error: Error) => error.message,
    );
    expect(dataNodeExposed).toContain('MINK_KAFKA_BIND_HOST=0.0.0.0 serves the data node beyond this machine without credentials: set MINK_AUTH_TOKENS_FILE');
    const internalExposed = await cluster.restart('data-node', '1', { env: { [ENV.authTokensFile]: tokensFile, MINK_KAFKA_BIND_HOST: undefined, MINK_HTTP_BIND_HOST: '0.0.0.0' } }).then(
      () => 'started',
      (error: Error) => error.message,
    );
    expect(internalExposed).toContain('MINK_HTTP_BIND_HOST=0.0.0.0 serves the data node beyond this machine without credentials: set MINK_CLUSTER_SECRET_FILE');
    await cluster.restart('data-node', '1', { env: { MINK_HTTP_BIND_HOST: undefined, MINK_KAFKA_BIND_HOST: '0.0.0.0' } });

    // No secret in any process's log.
    await cluster.stop();
    cluster = null;
    const logDir = join(directory.path, 'cluster', 'logs');
    const logs = readdirSync(logDir).map((name) => readFileSync(join(logDir, name), 'utf8'));
    expect(logs.join('').length).toBeGreaterThan(0);
    for (const secret of Object.values(TOKENS)) expect(logs.filter((text) => text.includes(secret))).toEqual([]);
  });
});
