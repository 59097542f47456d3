/**
 * One NATS identity per role (issue 42, item 1): a secure local cluster's services each run on their role's
 * identity, and every one of them works (a client on the outside clients' identity creates a table, appends
 * and scans), while nats-server logs no permissions violation of theirs. The client identity cannot write the
 * metadata log, neither by a plain publish, nor through JetStream, nor by deleting or purging its stream,
 * and the log is unchanged afterwards; nor can it serve or overhear a data node's request subject or another
 * process's replies. A connection without a user is refused. A cluster whose nats-server asks for TLS runs
 * with its services given MINK_NATS_TLS_CA_FILE; a client trusting the CA works, one without TLS or without
 * the CA is refused.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { connect, type NatsConnection } from 'nats';
import { DEFAULTS } from '@mink/config';
import { MinkClient } from '@mink/client';
import { LOCAL_CERTIFICATE_NAMES, LocalCluster, ensureServerTlsFiles, natsConnectionOutcome, type NatsIdentity, type ServiceRole } from '@mink/devcluster';
import { metaLogSubject } from '@mink/metalog';
import { SUBJECTS } from '@mink/protocol';
import { ONE_NODE_CLUSTER, eventually, temporaryDirectory } from './helpers';

jest.setTimeout(240_000);

const META = DEFAULTS.metaStream;
const LOG = metaLogSubject(META);
const NODE_1 = SUBJECTS.nodeRpc(SUBJECTS.nodeAddress('1'));
const ROWS = [
  { id: '1', name: 'one' },
  { id: '2', name: 'two' },
];

/** A client of the table `events`: creates it, appends the two rows once it can, and scans them back. */
async function createAppendScan(client: MinkClient): Promise<unknown[]> {
  await client.createTable({ name: 'events', columns: [{ name: 'id', type: 'int64' }, { name: 'name', type: 'string' }], buckets: 1 });
  await eventually('the first append to events', () => client.table('events').append(ROWS.map((row) => ({ id: Number(row.id), name: row.name }))));
  return (await client.table('events').scan({ bucket: 0 })).records.map((record) => record.row);
}

/** What a promise settled with: 'ok', or the error's message. */
function outcomeOf(promise: Promise<unknown>): Promise<string> {
  return promise.then(
    () => 'ok',
    (error: Error) => error.message,
  );
}

/** The first error a connection reports asynchronously (a refused plain publish), or 'none' within `timeoutMs`. */
async function nextAsyncError(connection: NatsConnection, timeoutMs = 5_000): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve('none'), timeoutMs);
  });
  const reported = (async () => {
    for await (const status of connection.status()) {
      if (status.type === 'error') return String(status.data);
    }
    return 'closed';
  })();
  try {
    return await Promise.race([reported, timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

/** The messages and last sequence of the metadata log, read on the cluster's `admin` identity. */
async function metaLogState(cluster: LocalCluster): Promise<{ messages: number; lastSeq: number }> {
  const admin = cluster.natsCredentialsOf('admin')!;
  const connection = await connect({ servers: cluster.natsUrls, user: admin.user, pass: admin.password });
  try {
    const info = await (await connection.jetstreamManager()).streams.info(META);
    return { messages: info.state.messages, lastSeq: info.state.last_seq };
  } finally {
    await connection.close();
  }
}

/** The value of `name` in the environment a running process was started with. */
function environmentOf(pid: number, name: string): string | undefined {
  const entry = readFileSync(`/proc/${pid}/environ`, 'utf8')
    .split('\0')
    .find((line) => line.startsWith(`${name}=`));
  return entry?.slice(name.length + 1);
}

/** The permissions violations nats-server logged so far, one line each. */
function violations(cluster: LocalCluster): string[] {
  return readFileSync(join(cluster.logDir, 'nats.log'), 'utf8')
    .split('\n')
    .filter((line) => /violation/i.test(line) && !/authorization violation/i.test(line));
}

describe('NATS identities of a secure cluster', () => {
  const directory = temporaryDirectory('nats-identities');
  let cluster: LocalCluster | null = null;
  const connections: NatsConnection[] = [];
  const clients: MinkClient[] = [];

  afterEach(async () => {
    await Promise.all(connections.splice(0).map((connection) => connection.close().catch(() => undefined)));
    await Promise.all(clients.splice(0).map((client) => client.close().catch(() => undefined)));
    await cluster?.stop();
    cluster = null;
  });

  afterAll(() => directory.remove());

  it('runs every service on its own identity and keeps the client identity off the metadata log and the services’ subjects', async () => {
    const dataDir = join(directory.path, 'plain');
    cluster = await LocalCluster.start({ ...ONE_NODE_CLUSTER, dataDir, secure: true });

    // Each role's credentials sit in secrets/nats-<role>.env (0600), and each service was given its own.
    const services: [ServiceRole, string, NatsIdentity][] = [
      ['coordinator', 'coordinator-1', 'coordinator'],
      ['data-node', '1', 'data-node'],
      ['gateway', 'gateway-1', 'gateway'],
      ['tiering-worker', 'tiering-1', 'tiering-worker'],
    ];
    for (const [role, nodeId, identity] of services) {
      const credentials = cluster.natsCredentialsOf(identity)!;
      const envFile = join(dataDir, 'secrets', `nats-${identity}.env`);
      expect([identity, readFileSync(envFile, 'utf8'), (statSync(envFile).mode & 0o777).toString(8)]).toEqual([
        identity,
        `MINK_NATS_USER=${credentials.user}\nMINK_NATS_PASSWORD=${credentials.password}\n`,
        '600',
      ]);
      const pid = cluster.process(role, nodeId).pid;
      expect([role, environmentOf(pid, 'MINK_NATS_USER')]).toEqual([role, `mink-${identity}`]);
    }
    const clientCredentials = cluster.natsCredentials!;
    expect([clientCredentials.user, cluster.natsEnvFile]).toEqual(['mink-client', join(dataDir, 'secrets', 'nats-client.env')]);
    const asClient = { user: clientCredentials.user, pass: clientCredentials.password };

    // (a) Every service works on its identity: a client on the client identity creates, appends and scans.
    const client = await MinkClient.connect({ servers: cluster.natsUrl, ...asClient });
    clients.push(client);
    expect(await createAppendScan(client)).toEqual(ROWS);
    // The services needed nothing they were refused: nats-server logged no violation so far.
    expect(violations(cluster)).toEqual([]);

    // (b) No user, or another identity's password, is refused outright.
    expect(await natsConnectionOutcome(cluster.natsUrls)).toBe('AUTHORIZATION_VIOLATION');
    expect(await natsConnectionOutcome(cluster.natsUrls, { user: 'mink-coordinator', pass: clientCredentials.password })).toBe('AUTHORIZATION_VIOLATION');

    // (c) The client identity cannot write the metadata log: a plain publish of a DropTable, a JetStream publish,
    // and the JetStream API's stream delete, purge and consumer create are all refused.
    const before = await metaLogState(cluster);
    const raw = await connect({ servers: cluster.natsUrls, ...asClient, inboxPrefix: SUBJECTS.clientInboxPrefix });
    connections.push(raw);
    const refusedPublish = nextAsyncError(raw);
    raw.publish(LOG, new TextEncoder().encode(JSON.stringify({ type: 'DropTable', coordinatorEpoch: 1_000_000, name: 'events', atMs: Date.now() })));
    await raw.flush();
    expect(await refusedPublish).toMatch(/PERMISSIONS_VIOLATION|permissions violation/i);
    const attempts = {
      jetStreamPublish: await outcomeOf(raw.jetstream().publish(LOG, new TextEncoder().encode('{}'), { timeout: 5_000 })),
      streamDelete: await outcomeOf(raw.request(`$JS.API.STREAM.DELETE.${META}`, undefined, { timeout: 5_000 })),
      streamPurge: await outcomeOf(raw.request(`$JS.API.STREAM.PURGE.${META}`, new TextEncoder().encode('{}'), { timeout: 5_000 })),
      consumerCreate: await outcomeOf(raw.request(`$JS.API.CONSUMER.CREATE.${META}`, new TextEncoder().encode(JSON.stringify({ stream_name: META, config: {} })), { timeout: 5_000 })),
    };
    // (nats.js quotes the server's -ERR text as it came, in single quotes.)
    expect(attempts).toEqual({
      jetStreamPublish: `'Permissions Violation for Publish to "${LOG}"'`,
      streamDelete: `'Permissions Violation for Publish to "$JS.API.STREAM.DELETE.${META}"'`,
      streamPurge: `'Permissions Violation for Publish to "$JS.API.STREAM.PURGE.${META}"'`,
      consumerCreate: `'Permissions Violation for Publish to "$JS.API.CONSUMER.CREATE.${META}"'`,
    });
    // The log is as it was (the cluster appends nothing by itself while idle, so its count is exact), and the table is there.
    expect(await metaLogState(cluster)).toEqual(before);
    expect((await client.table('events').scan({ bucket: 0 })).records.map((record) => record.row)).toEqual(ROWS);

    // (d) Nor can it serve a data node's request subject, or overhear the services' replies.
    for (const subject of [NODE_1, SUBJECTS.anyNodeRpc, SUBJECTS.coordinatorRpc, '_INBOX.>']) {
      const subscription = raw.subscribe(subject);
      const ended = await outcomeOf(
        (async () => {
          for await (const message of subscription) void message;
        })(),
      );
      expect([subject, ended]).toEqual([subject, `'Permissions Violation for Subscription to "${subject}"'`]);
    }
    // The data node still answers its requests (nobody took them over).
    expect((await client.table('events').scan({ bucket: 0 })).records.map((record) => record.row)).toEqual(ROWS);

    // A service's identity is limited too: the gateway reads the log but may not append to it.
    const gateway = cluster.natsCredentialsOf('gateway')!;
    const asGateway = await connect({ servers: cluster.natsUrls, user: gateway.user, pass: gateway.password });
    connections.push(asGateway);
    expect(await outcomeOf(asGateway.jetstream().publish(LOG, new TextEncoder().encode('{}'), { timeout: 5_000 }))).toBe(`'Permissions Violation for Publish to "${LOG}"'`);
    expect(await metaLogState(cluster)).toEqual(before);
    // nats-server logged each refusal (its log reaches the file through a pipe, so the last lines may lag), and
    // every violation it logged is one of those provoked here, by the client or the gateway identity.
    const logged = await eventually('the logged refusals of the gateway and of the subscriptions', () => {
      const lines = violations(cluster!);
      const seen = (user: string, kind: string, subject: string) => lines.some((line) => line.includes(`${kind} Violation - User "${user}", Subject "${subject}"`));
      return seen('mink-gateway', 'Publish', LOG) && seen('mink-client', 'Subscription', '_INBOX.>') && seen('mink-client', 'Publish', `$JS.API.STREAM.PURGE.${META}`) ? lines : undefined;
    });
    expect(logged.filter((line) => !/User "(mink-client|mink-gateway)"/.test(line))).toEqual([]);
  });

  it('runs a secure cluster over three clustered nats-servers whose routes have credentials of their own', async () => {
    // Proves the users (and their permissions) hold on every server of a JetStream cluster, whose routes use the route identity, not a client's.
    const dataDir = join(directory.path, 'clustered');
    cluster = await LocalCluster.start({ ...ONE_NODE_CLUSTER, dataDir, secure: true, natsCluster: 3 });
    const route = readFileSync(join(dataDir, 'secrets', 'nats-route.env'), 'utf8');
    expect(route).toMatch(/^MINK_NATS_USER=mink-route\nMINK_NATS_PASSWORD=[0-9a-f]{32}\n$/);
    const config = readFileSync(join(dataDir, 'nats', 'nats-1', 'nats-server.conf'), 'utf8');
    expect(config).toContain(`nats-route://mink-route:${route.split('MINK_NATS_PASSWORD=')[1]!.trim()}@127.0.0.1:`);
    const credentials = cluster.natsCredentials!;
    const client = await MinkClient.connect({ servers: cluster.natsUrl, user: credentials.user, pass: credentials.password });
    clients.push(client);
    expect(await createAppendScan(client)).toEqual(ROWS);
    // A route's credentials are no client identity.
    const routeCredentials = route.match(/^MINK_NATS_USER=(.*)\nMINK_NATS_PASSWORD=(.*)\n$/)!;
    expect(await natsConnectionOutcome(cluster.natsUrls, { user: routeCredentials[1], pass: routeCredentials[2] })).toBe('AUTHORIZATION_VIOLATION');
    const logged = ['nats-1', 'nats-2', 'nats-3'].flatMap((name) =>
      readFileSync(join(cluster!.logDir, `${name}.log`), 'utf8')
        .split('\n')
        .filter((line) => /violation/i.test(line) && !/authorization violation/i.test(line)),
    );
    expect(logged).toEqual([]);
  });

  it('speaks TLS to a nats-server that asks for it: the services with MINK_NATS_TLS_CA_FILE, a client with the CA', async () => {
    // The CA and loopback certificate `mink up --secure` makes (ensureServerTlsFiles).
    const natsTls = await ensureServerTlsFiles(join(directory.path, 'nats-tls'), 'nats', LOCAL_CERTIFICATE_NAMES);
    const { certFile, caFile } = natsTls;
    const dataDir = join(directory.path, 'tls');
    cluster = await LocalCluster.start({ ...ONE_NODE_CLUSTER, dataDir, secure: true, natsTls });
    expect(cluster.natsTlsCaFile).toBe(caFile);
    expect(JSON.parse(readFileSync(cluster.clusterFile, 'utf8')).endpoints.natsTlsCaFile).toBe(caFile);
    expect(readFileSync(join(dataDir, 'nats', 'nats-server.conf'), 'utf8')).toContain(`tls {\n  cert_file: ${JSON.stringify(certFile)}`);
    const pid = cluster.process('data-node', '1').pid;
    expect(environmentOf(pid, 'MINK_NATS_TLS_CA_FILE')).toBe(caFile);

    const credentials = cluster.natsCredentials!;
    const asClient = { user: credentials.user, pass: credentials.password };
    const client = await MinkClient.connect({ servers: cluster.natsUrl, ...asClient, tls: { caFile } });
    clients.push(client);
    expect(await createAppendScan(client)).toEqual(ROWS);

    // Without TLS (nats.js's TLS error: the server requires it), or with TLS but without the CA, the server is not reached.
    expect(await natsConnectionOutcome(cluster.natsUrls, { ...asClient, tls: null })).toBe('TLS');
    expect(await natsConnectionOutcome(cluster.natsUrls, asClient)).toMatch(/SELF_SIGNED|self.signed|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER|local issuer/i);
    expect(await natsConnectionOutcome(cluster.natsUrls, { ...asClient, tls: { caFile } })).toBe('connected');
  });
});
