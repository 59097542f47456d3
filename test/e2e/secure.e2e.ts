/**
 * A secure local cluster (issue "Operations", item 4): started with `secure` and a certificate, its
 * nats-server refuses a connection without the generated user and password (and with a wrong password),
 * while every service (given them by environment) runs and a MinkClient given them appends and scans; the
 * gateway serves HTTPS and gRPC over TLS with a self-signed certificate the test makes with openssl, which a
 * caller trusting it reaches and one that does not (or speaks plain text) cannot; the generated admin token
 * is asked for; a certificate file the gateway cannot read stops its start; and neither the NATS password,
 * the admin token, the cluster secret nor the metrics token appears in any process's log, in cluster.json,
 * or in any process's arguments.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { credentials } from '@grpc/grpc-js';
import { MinkClient } from '@mink/client';
import { LocalCluster, natsConnectionOutcome, readClusterFile } from '@mink/devcluster';
import { bearerMetadata, callUnary, openGatewayGrpcClients } from '@mink/grpc-api';
import { ONE_NODE_CLUSTER, eventually, temporaryDirectory } from './helpers';

jest.setTimeout(180_000);

const run = promisify(execFile);
const CLI = resolve(__dirname, '../../packages/cli/dist/main.js');

interface Answer {
  status: number;
  body: any;
  headers: Record<string, string | string[] | undefined>;
}

/** One HTTPS request to the gateway trusting `ca` (none: only the system's authorities); rejects on a TLS or socket failure. */
function https(url: string, options: { ca?: Buffer; token?: string; method?: string; body?: unknown } = {}): Promise<Answer> {
  return new Promise((resolveAnswer, reject) => {
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    const request = httpsRequest(
      url,
      {
        method: options.method ?? 'GET',
        agent: false,
        ...(options.ca ? { ca: [options.ca] } : {}),
        headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(options.token ? { authorization: `Bearer ${options.token}` } : {}) },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolveAnswer({ status: response.statusCode ?? 0, body: text === '' ? null : JSON.parse(text), headers: response.headers }));
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

/** A plain-text GET: its status, or the socket error's code when the server does not speak HTTP. */
function plainHttpOutcome(url: string): Promise<string> {
  return new Promise((resolveOutcome) => {
    const request = httpGet(url, { agent: false, timeout: 5_000 }, (response) => {
      response.resume();
      resolveOutcome(`status ${response.statusCode}`);
    });
    request.on('timeout', () => request.destroy(new Error('timeout')));
    request.on('error', (error: NodeJS.ErrnoException) => resolveOutcome(error.code ?? error.message));
  });
}

function modeOf(path: string): string {
  return (statSync(path).mode & 0o777).toString(8);
}

describe('a secure local cluster: NATS credentials, a generated admin token, TLS on the gateway', () => {
  const directory = temporaryDirectory('secure');
  let cluster: LocalCluster | null = null;

  afterAll(async () => {
    await cluster?.stop();
    directory.remove();
  });

  it('refuses NATS without credentials, serves HTTPS and gRPC over TLS to a caller trusting the certificate, and leaks no secret', async () => {
    const certFile = join(directory.path, 'gateway.crt');
    const keyFile = join(directory.path, 'gateway.key');
    // A self-signed certificate for the loopback address the gateway is reached at.
    await run('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
      '-subj', '/CN=mink-test', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost', '-keyout', keyFile, '-out', certFile,
    ]);
    const ca = readFileSync(certFile);
    const dataDir = join(directory.path, 'cluster');
    cluster = await LocalCluster.start({ ...ONE_NODE_CLUSTER, dataDir, secure: true, tls: { certFile, keyFile } });
    const natsCredentials = cluster.natsCredentials!;
    const adminToken = readFileSync(cluster.adminTokenFile!, 'utf8').trim();
    const clusterSecret = readFileSync(cluster.clusterSecretFile!, 'utf8').trim();
    const metricsToken = readFileSync(cluster.metricsTokenFile!, 'utf8').trim();
    expect(natsCredentials.password).toMatch(/^[0-9a-f]{32}$/);
    expect(adminToken).toMatch(/^mink-admin-[0-9a-f]{32}$/);
    expect(clusterSecret).toMatch(/^mink-cluster-[0-9a-f]{32}$/);
    expect(metricsToken).toMatch(/^mink-metrics-[0-9a-f]{32}$/);

    // Secrets sit in files only their owner reads: the secrets folder, and the nats-server config holding the password.
    expect(modeOf(join(dataDir, 'secrets'))).toBe('700');
    const secretFiles = [cluster.natsEnvFile!, cluster.adminTokenFile!, join(dataDir, 'secrets', 'tokens.json'), cluster.clusterSecretFile!, cluster.metricsTokenFile!];
    expect(secretFiles.slice(3)).toEqual([join(dataDir, 'secrets', 'cluster-secret'), join(dataDir, 'secrets', 'metrics-token')]);
    for (const file of [...secretFiles, join(dataDir, 'nats', 'nats-server.conf')]) {
      expect([file, modeOf(file)]).toEqual([file, '600']);
    }
    expect(readFileSync(cluster.natsEnvFile!, 'utf8')).toBe(`MINK_NATS_USER=${natsCredentials.user}\nMINK_NATS_PASSWORD=${natsCredentials.password}\n`);

    // NATS: no credentials, or a wrong password, is an authorization violation; the right ones connect.
    // (natsConnectionOutcome is a plain nats.js connect: 'connected', or the NatsError's code.)
    expect(await natsConnectionOutcome(cluster.natsUrls)).toBe('AUTHORIZATION_VIOLATION');
    expect(await natsConnectionOutcome(cluster.natsUrls, { user: natsCredentials.user, pass: 'not-the-password' })).toBe('AUTHORIZATION_VIOLATION');
    expect(await natsConnectionOutcome(cluster.natsUrls, { user: natsCredentials.user, pass: natsCredentials.password })).toBe('connected');

    // A client with the credentials works against the services, which got them by environment.
    const client = await MinkClient.connect({ servers: cluster.natsUrl, user: natsCredentials.user, pass: natsCredentials.password });
    try {
      await client.createTable({ name: 'events', columns: [{ name: 'id', type: 'int64' }, { name: 'name', type: 'string' }], buckets: 1 });
      await eventually('the first append to events', () => client.table('events').append([{ id: 1, name: 'one' }, { id: 2, name: 'two' }]));
      const scanned = await client.table('events').scan({ bucket: 0 });
      expect(scanned.records.map((record) => record.row)).toEqual([
        { id: '1', name: 'one' },
        { id: '2', name: 'two' },
      ]);
    } finally {
      await client.close();
    }

    // HTTPS: trusted with the certificate as CA; refused without it; plain text on the same port gets no HTTP answer.
    const gatewayUrl = cluster.gatewayUrl;
    expect(gatewayUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect((await https(`${gatewayUrl}/readyz`, { ca })).status).toBe(200);
    const listed = await https(`${gatewayUrl}/v1/tables`, { ca, token: adminToken });
    expect([listed.status, listed.body.tables.map((table: { name: string }) => table.name)]).toEqual([200, ['events']]);
    const untrusted = await https(`${gatewayUrl}/readyz`).then(
      () => 'answered',
      (error: NodeJS.ErrnoException) => error.code,
    );
    expect(untrusted).toBe('DEPTH_ZERO_SELF_SIGNED_CERT');
    expect(await plainHttpOutcome(`${gatewayUrl.replace('https:', 'http:')}/readyz`)).not.toMatch(/^status 200/);
    // The generated admin token is asked for: none is a 401 with the error shape.
    const anonymous = await https(`${gatewayUrl}/v1/tables`, { ca });
    expect([anonymous.status, anonymous.body.error.code, anonymous.headers['www-authenticate']]).toEqual([401, 'Unauthenticated', 'Bearer realm="mink"']);

    // The mink command: MINK_GATEWAY_URL=https://… with MINK_TLS_CA_FILE and MINK_TOKEN; without the CA it cannot reach the gateway.
    const env = { ...process.env, MINK_GATEWAY_URL: gatewayUrl, MINK_TOKEN: adminToken };
    const cli = await run(process.execPath, [CLI, 'table', 'list', '--json'], { env: { ...env, MINK_TLS_CA_FILE: certFile } });
    expect(JSON.parse(cli.stdout).tables.map((table: { name: string }) => table.name)).toEqual(['events']);
    const cliUntrusted = await run(process.execPath, [CLI, 'table', 'list'], { env: { ...env, MINK_TLS_CA_FILE: '' } }).then(
      () => null,
      (error: { code: number; stderr: string }) => error,
    );
    expect([cliUntrusted?.code, cliUntrusted?.stderr.trim()]).toEqual([1, expect.stringMatching(/^error: Unavailable: cannot reach the gateway at https:.*SELF_SIGNED/)]);

    // gRPC over TLS with the certificate as root; a plain-text channel gets no answer.
    const secureClients = openGatewayGrpcClients(cluster.gatewayGrpcAddress, credentials.createSsl(ca));
    const plainClients = openGatewayGrpcClients(cluster.gatewayGrpcAddress);
    try {
      const tables = await callUnary(secureClients.mink, 'ListTables', {}, bearerMetadata(adminToken));
      expect(tables.tables.map((table: { name: string }) => table.name)).toEqual(['events']);
      const unauthenticated = await callUnary(secureClients.mink, 'ListTables', {}).catch((error: { code: number }) => error.code);
      expect(unauthenticated).toBe(16); // UNAUTHENTICATED: TLS is no substitute for the token.
      const plain = await callUnary(plainClients.mink, 'ListTables', {}, bearerMetadata(adminToken)).catch((error: { code: number }) => error.code);
      expect(plain).toBe(14); // UNAVAILABLE: the listener speaks TLS only.
    } finally {
      secureClients.close();
      plainClients.close();
    }

    // No secret in any process's arguments (what `ps` shows), any log, or cluster.json.
    const secrets = [natsCredentials.password, adminToken, clusterSecret, metricsToken];
    const pids = cluster.processes().map((entry) => entry.pid);
    expect(pids.length).toBe(6);
    for (const pid of pids) {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      expect(secrets.filter((secret) => argv.includes(secret))).toEqual([]);
    }
    const clusterFile = readClusterFile(dataDir);
    expect(clusterFile.secrets).toEqual({ natsEnvFile: cluster.natsEnvFile, adminTokenFile: cluster.adminTokenFile, metricsTokenFile: cluster.metricsTokenFile });
    expect(clusterFile.endpoints.gateway).toBe(gatewayUrl);

    // A certificate file the gateway cannot read stops its start, naming the variable and the file.
    const missing = join(directory.path, 'no-such.crt');
    const restart = await cluster.restart('gateway', 'gateway-1', { env: { MINK_TLS_CERT_FILE: missing } }).then(
      () => 'restarted',
      (error: Error) => error.message,
    );
    expect(restart).toContain(`MINK_TLS_CERT_FILE: cannot read ${missing} (ENOENT)`);
    await cluster.stop();
    cluster = null;
    const logDir = join(dataDir, 'logs');
    const texts = [...readdirSync(logDir).map((name) => readFileSync(join(logDir, name), 'utf8')), readFileSync(join(dataDir, 'cluster.json'), 'utf8')];
    expect(texts.join('').length).toBeGreaterThan(1_000);
    expect(texts.join('')).toMatch(/authorization violation|authentication error/i); // nats-server logged the refused connections: the grep reads real logs.
    for (const secret of secrets) expect(texts.filter((text) => text.includes(secret))).toEqual([]);
    expect(existsSync(join(dataDir, 'secrets', 'tokens.json'))).toBe(true);
  });
});
