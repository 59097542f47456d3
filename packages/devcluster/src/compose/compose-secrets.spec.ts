import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { findNatsServer } from '../nats-server';
import { COMPOSE_NATS_TLS_MOUNTS, COMPOSE_SECRET_FILES } from './compose-plan';
import { composeSecretsDirOf, ensureComposeSecrets } from './compose-secrets';

/**
 * The compose stack's secrets folder, made with the real openssl and checked with the real nats-server
 * (`-t`: the configuration the containers run, with the generated part included, is accepted).
 */
const ROOT = resolve(__dirname, '..', '..', '..', '..');

describe('composeSecretsDirOf', () => {
  it.each<[string | undefined, string]>([
    [undefined, join(ROOT, 'docker', 'secrets')],
    ['', join(ROOT, 'docker', 'secrets')],
    // Relative to docker/, as compose reads the variable in docker/docker-compose.yml.
    ['../tmp/stack', join(ROOT, 'tmp', 'stack')],
    ['/srv/mink-secrets', '/srv/mink-secrets'],
  ])('MINK_COMPOSE_SECRETS_DIR=%p is %s', (named, folder) => {
    expect(composeSecretsDirOf(ROOT, named === undefined ? {} : { MINK_COMPOSE_SECRETS_DIR: named })).toBe(folder);
  });
});

describe('ensureComposeSecrets', () => {
  let folder: string;
  const lines: string[] = [];
  beforeEach(() => {
    folder = mkdtempSync(join(tmpdir(), 'mink-compose-secrets-'));
    lines.length = 0;
  });
  afterEach(() => rmSync(folder, { recursive: true, force: true }));

  const read = (name: string): string => readFileSync(join(folder, name), 'utf8');

  it('writes every file the compose files read, private to this user (or to the containers\' users) and never in a log line', async () => {
    const secrets = await ensureComposeSecrets(folder, (line) => lines.push(line));
    for (const name of [...Object.values(COMPOSE_SECRET_FILES), 'nats-coordinator.env', 'nats-data-node.env', 'nats-gateway.env', 'nats-tiering-worker.env', 'nats-client.env', 'nats-route.env']) {
      expect({ name, exists: existsSync(join(folder, name)) }).toEqual({ name, exists: true });
    }
    expect(statSync(folder).mode & 0o777).toBe(0o700);
    for (const name of [COMPOSE_SECRET_FILES.natsAccess, COMPOSE_SECRET_FILES.natsKey, COMPOSE_SECRET_FILES.natsCaKey, COMPOSE_SECRET_FILES.s3Env, COMPOSE_SECRET_FILES.adminToken]) {
      expect({ name, mode: statSync(join(folder, name)).mode & 0o777 }).toEqual({ name, mode: 0o600 });
    }
    const admin = read(COMPOSE_SECRET_FILES.adminToken).trim();
    expect(JSON.parse(read(COMPOSE_SECRET_FILES.tokens))).toEqual({ tokens: [{ name: 'admin', token: admin, scopes: ['admin'] }] });
    expect(read(COMPOSE_SECRET_FILES.prometheusMetricsToken)).toBe(read(COMPOSE_SECRET_FILES.metricsToken));
    // MinIO's root key is the services' S3 key.
    const s3 = Object.fromEntries(read(COMPOSE_SECRET_FILES.s3Env).trim().split('\n').map((line) => line.split('=')));
    expect(read(COMPOSE_SECRET_FILES.minioEnv)).toBe(`MINIO_ROOT_USER=${s3.MINK_S3_ACCESS_KEY_ID}\nMINIO_ROOT_PASSWORD=${s3.MINK_S3_SECRET_ACCESS_KEY}\n`);
    expect(s3.MINK_S3_SECRET_ACCESS_KEY).toMatch(/^[0-9a-f]{64}$/);
    expect(secrets.adminTokenFile).toBe(join(folder, COMPOSE_SECRET_FILES.adminToken));
    const secretValues = [admin, s3.MINK_S3_SECRET_ACCESS_KEY, read(COMPOSE_SECRET_FILES.clusterSecret).trim(), read(COMPOSE_SECRET_FILES.metricsToken).trim()];
    for (const line of lines) for (const secret of secretValues) expect(line).not.toContain(secret);
    expect(lines.some((line) => line.includes('generated'))).toBe(true);
  });

  it('keeps what an earlier start wrote, tokens added to tokens.json included, and renews a deleted certificate from the same CA', async () => {
    await ensureComposeSecrets(folder, () => undefined);
    const tokens = JSON.stringify({ tokens: [{ name: 'admin', token: read(COMPOSE_SECRET_FILES.adminToken).trim(), scopes: ['admin'] }, { name: 'reader', token: 'a-reader-token-of-the-operator', scopes: ['read'] }] });
    writeFileSync(join(folder, COMPOSE_SECRET_FILES.tokens), tokens);
    const kept = [COMPOSE_SECRET_FILES.adminToken, COMPOSE_SECRET_FILES.clusterSecret, COMPOSE_SECRET_FILES.metricsToken, COMPOSE_SECRET_FILES.s3Env, COMPOSE_SECRET_FILES.natsAccess, COMPOSE_SECRET_FILES.natsCa, COMPOSE_SECRET_FILES.kafkaCa, COMPOSE_SECRET_FILES.kafkaCaKey, 'nats-data-node.env'];
    const before = kept.map(read);
    rmSync(join(folder, COMPOSE_SECRET_FILES.natsCert));
    await ensureComposeSecrets(folder, () => undefined);
    expect(kept.map(read)).toEqual(before);
    expect(read(COMPOSE_SECRET_FILES.tokens)).toBe(tokens);
    execFileSync('openssl', ['verify', '-CAfile', join(folder, COMPOSE_SECRET_FILES.natsCa), join(folder, COMPOSE_SECRET_FILES.natsCert)]);
  });

  it('makes a server certificate for nats-1..3 that the CA verifies, and a configuration nats-server accepts with docker/nats-cluster.conf', async () => {
    await ensureComposeSecrets(folder, () => undefined);
    const text = execFileSync('openssl', ['x509', '-in', join(folder, COMPOSE_SECRET_FILES.natsCert), '-noout', '-ext', 'subjectAltName'], { encoding: 'utf8' });
    for (const name of ['DNS:nats-1', 'DNS:nats-2', 'DNS:nats-3']) expect(text).toContain(name);
    // The containers' layout, rebuilt here: the shared file, the generated one beside it, the TLS files where compose mounts them.
    const layout = join(folder, 'etc-nats');
    mkdirSync(layout);
    copyFileSync(join(ROOT, 'docker', 'nats-cluster.conf'), join(layout, 'nats-cluster.conf'));
    writeFileSync(
      join(layout, 'nats-access.conf'),
      read(COMPOSE_SECRET_FILES.natsAccess).replace(COMPOSE_NATS_TLS_MOUNTS.certFile, join(folder, COMPOSE_SECRET_FILES.natsCert)).replace(COMPOSE_NATS_TLS_MOUNTS.keyFile, join(folder, COMPOSE_SECRET_FILES.natsKey)),
    );
    const checked = spawnSync(findNatsServer(), ['-c', join(layout, 'nats-cluster.conf'), '-t'], { encoding: 'utf8' });
    expect({ status: checked.status, said: checked.stderr.trim() }).toEqual({ status: 0, said: expect.stringMatching(/configuration file .* is valid$/) });
  });
});
