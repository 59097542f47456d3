import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readSecretFile } from '@mink/config';
import { NATS_IDENTITIES } from './nats-permissions';
import { checkNatsCredentials, ensureClusterSecrets, natsAuthorizationBlock, natsUsersAuthorizationBlock, writeSecretFile } from './secrets';

function modeOf(path: string): string {
  return (statSync(path).mode & 0o777).toString(8);
}

describe('the secrets of a secure local cluster', () => {
  let dataDir: string;

  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'mink-secrets-'));
  });

  afterEach(() => {
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('generates a NATS identity per role, for clients and for the cluster checks, route credentials, an admin token, a cluster secret and a metrics token from the random source, in 0600 files of a 0700 folder', () => {
    // Proves the secrets come from the random bytes given (crypto.randomBytes outside tests) and only their owner can read them.
    let calls = 0;
    const random = (bytes: number): Buffer => Buffer.alloc(bytes, ++calls);
    const secrets = ensureClusterSecrets(dataDir, random);
    const hex = (call: number): string => call.toString(16).padStart(2, '0').repeat(16);
    // One identity per role, then the clients' and the admin one, each in nats-<identity>.env.
    expect(NATS_IDENTITIES).toEqual(['coordinator', 'data-node', 'gateway', 'tiering-worker', 'client', 'admin']);
    NATS_IDENTITIES.forEach((identity, index) => {
      const { credentials, envFile } = secrets.natsIdentities[identity];
      expect([credentials, envFile]).toEqual([{ user: `mink-${identity}`, password: hex(index + 1) }, join(dataDir, 'secrets', `nats-${identity}.env`)]);
      expect(readFileSync(envFile, 'utf8')).toBe(`MINK_NATS_USER=mink-${identity}\nMINK_NATS_PASSWORD=${hex(index + 1)}\n`);
    });
    // The outside clients' identity is what natsCredentials and natsEnvFile name (what `mink up` prints, cluster.json lists).
    expect([secrets.natsCredentials, secrets.natsEnvFile]).toEqual([secrets.natsIdentities.client.credentials, join(dataDir, 'secrets', 'nats-client.env')]);
    expect(secrets.natsRouteCredentials).toEqual({ user: 'mink-route', password: hex(7) });
    expect(readFileSync(secrets.adminTokenFile, 'utf8')).toBe(`mink-admin-${hex(8)}\n`);
    expect(JSON.parse(readFileSync(secrets.tokensFile, 'utf8'))).toEqual({ tokens: [{ name: 'admin', token: `mink-admin-${hex(8)}`, scopes: ['admin'] }] });
    expect([secrets.clusterSecretFile, secrets.metricsTokenFile]).toEqual([join(dataDir, 'secrets', 'cluster-secret'), join(dataDir, 'secrets', 'metrics-token')]);
    expect(readFileSync(secrets.clusterSecretFile, 'utf8')).toBe(`mink-cluster-${hex(9)}\n`);
    expect(readFileSync(secrets.metricsTokenFile, 'utf8')).toBe(`mink-metrics-${hex(10)}\n`);
    const files = [...NATS_IDENTITIES.map((identity) => secrets.natsIdentities[identity].envFile), join(dataDir, 'secrets', 'nats-route.env'), secrets.adminTokenFile, secrets.tokensFile, secrets.clusterSecretFile, secrets.metricsTokenFile];
    expect([modeOf(join(dataDir, 'secrets')), ...files.map(modeOf)]).toEqual(['700', ...files.map(() => '600')]);
    // What the services will read from the files they are given: the secrets as generated.
    expect([readSecretFile(secrets.clusterSecretFile, 'MINK_CLUSTER_SECRET_FILE')?.reveal(), readSecretFile(secrets.metricsTokenFile, 'MINK_METRICS_TOKEN_FILE')?.reveal()]).toEqual([
      `mink-cluster-${hex(9)}`,
      `mink-metrics-${hex(10)}`,
    ]);
  });

  it('removes the one-identity nats.env of an earlier version, which no server accepts any more', () => {
    // Proves a data dir upgraded to per-role identities keeps no stale NATS credentials that look usable.
    const legacy = join(dataDir, 'secrets', 'nats.env');
    ensureClusterSecrets(dataDir);
    writeFileSync(legacy, 'MINK_NATS_USER=mink\nMINK_NATS_PASSWORD=0123456789abcdef\n');
    ensureClusterSecrets(dataDir);
    expect(existsSync(legacy)).toBe(false);
  });

  it('generates only the secrets an earlier start did not write (a data dir of a version without the cluster secret)', () => {
    // Proves an upgrade keeps the NATS password and admin token its clients use, and adds the new secrets.
    const first = ensureClusterSecrets(dataDir);
    rmSync(first.clusterSecretFile);
    rmSync(first.metricsTokenFile);
    const again = ensureClusterSecrets(dataDir, (bytes) => Buffer.alloc(bytes, 0xab));
    expect([again.natsCredentials, readFileSync(again.adminTokenFile, 'utf8')]).toEqual([first.natsCredentials, readFileSync(first.adminTokenFile, 'utf8')]);
    expect(readFileSync(again.clusterSecretFile, 'utf8')).toBe(`mink-cluster-${'ab'.repeat(16)}\n`);
    expect(modeOf(again.metricsTokenFile)).toBe('600');
  });

  it('refuses to start on a cluster secret file the services would refuse, naming the variable and the file but not the content', () => {
    // Proves a hand-edited secret that is too short stops `mink up --secure` at once rather than every data node at start.
    ensureClusterSecrets(dataDir);
    const path = join(dataDir, 'secrets', 'cluster-secret');
    writeFileSync(path, 'short-one\n');
    expect(() => ensureClusterSecrets(dataDir)).toThrow(`MINK_CLUSTER_SECRET_FILE: the secret in ${path} is shorter than 16 characters`);
    expect(() => ensureClusterSecrets(dataDir)).not.toThrow('short-one');
  });

  it('keeps the secrets of an earlier start on the same data dir, so clients keep working across restarts', () => {
    const first = ensureClusterSecrets(dataDir);
    const contents = (secrets: typeof first) => [secrets.clusterSecretFile, secrets.metricsTokenFile, secrets.adminTokenFile].map((file) => readFileSync(file, 'utf8'));
    const before = contents(first);
    const again = ensureClusterSecrets(dataDir, () => {
      throw new Error('no new secret was needed');
    });
    expect(again).toEqual(first);
    expect(contents(again)).toEqual(before);
    expect(first.natsCredentials.password).toMatch(/^[0-9a-f]{32}$/);
    expect(before[0]).toMatch(/^mink-cluster-[0-9a-f]{32}\n$/);
  });

  it('makes a file written before with wider rights readable by its owner only', () => {
    const path = join(dataDir, 'nats-server.conf');
    writeFileSync(path, 'old', { mode: 0o644 });
    writeSecretFile(path, 'new');
    expect([readFileSync(path, 'utf8'), modeOf(path)]).toEqual(['new', '600']);
  });

  it('writes the authorization block of a nats-server config, indented inside cluster {}', () => {
    expect(natsAuthorizationBlock({ user: 'mink', password: 'abc123' }, '  ')).toEqual(['  authorization {', '    user: "mink"', '    password: "abc123"', '  }']);
  });

  it('writes the users of a nats-server config, each with its allow lists quoted (so `$JS…` is no variable)', () => {
    // Proves the block nats-server 2.x reads: users, each with permissions { publish { allow }, subscribe { allow } }.
    const users = [
      { credentials: { user: 'mink-client', password: 'abc123' }, permissions: { publish: ['mink.nodes.rpc', 'mink.node.*.rpc'], subscribe: ['_INBOX.client.>'] } },
      { credentials: { user: 'mink-admin', password: 'def456' }, permissions: { publish: ['$JS.API.INFO'], subscribe: ['_INBOX.>'] } },
    ];
    expect(natsUsersAuthorizationBlock(users)).toEqual([
      'authorization {',
      '  users: [',
      '    {',
      '      user: "mink-client"',
      '      password: "abc123"',
      '      permissions: {',
      '        publish: { allow: ["mink.nodes.rpc", "mink.node.*.rpc"] }',
      '        subscribe: { allow: ["_INBOX.client.>"] }',
      '      }',
      '    }',
      '    {',
      '      user: "mink-admin"',
      '      password: "def456"',
      '      permissions: {',
      '        publish: { allow: ["$JS.API.INFO"] }',
      '        subscribe: { allow: ["_INBOX.>"] }',
      '      }',
      '    }',
      '  ]',
      '}',
    ]);
    expect(() => natsUsersAuthorizationBlock([])).toThrow('needs at least one');
    expect(() => natsUsersAuthorizationBlock([{ ...users[0]!, credentials: { user: 'mink-client', password: 'quote"d' } }])).toThrow('the NATS password must be');
  });

  it.each([
    [{ user: 'mink', password: 'has space' }, 'the NATS password must be'],
    [{ user: 'mink', password: 'quote"d' }, 'the NATS password must be'],
    [{ user: 'mink', password: 'at@sign' }, 'the NATS password must be'],
    [{ user: '', password: 'fine' }, "NATS user '' must be"],
  ])('refuses %p: it could not be written into the config or a route URL as is', (credentials, message) => {
    // Proves a credential that would break the config file or the route URL is refused, and a refused password is not quoted.
    expect(() => checkNatsCredentials(credentials)).toThrow(message);
    expect(() => checkNatsCredentials(credentials)).not.toThrow(credentials.password);
  });
});
