import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkNatsCredentials, ensureClusterSecrets, natsAuthorizationBlock, writeSecretFile } from './secrets';

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

  it('generates a NATS password and an admin token from the random source, in 0600 files of a 0700 folder', () => {
    // Proves the secrets come from the random bytes given (crypto.randomBytes outside tests) and only their owner can read them.
    let calls = 0;
    const random = (bytes: number): Buffer => Buffer.alloc(bytes, ++calls);
    const secrets = ensureClusterSecrets(dataDir, random);
    expect(secrets.natsCredentials).toEqual({ user: 'mink', password: '01'.repeat(16) });
    expect(readFileSync(secrets.natsEnvFile, 'utf8')).toBe(`MINK_NATS_USER=mink\nMINK_NATS_PASSWORD=${'01'.repeat(16)}\n`);
    expect(readFileSync(secrets.adminTokenFile, 'utf8')).toBe(`mink-admin-${'02'.repeat(16)}\n`);
    expect(JSON.parse(readFileSync(secrets.tokensFile, 'utf8'))).toEqual({ tokens: [{ name: 'admin', token: `mink-admin-${'02'.repeat(16)}`, scopes: ['admin'] }] });
    expect([modeOf(join(dataDir, 'secrets')), modeOf(secrets.natsEnvFile), modeOf(secrets.adminTokenFile), modeOf(secrets.tokensFile)]).toEqual(['700', '600', '600', '600']);
  });

  it('keeps the secrets of an earlier start on the same data dir, so clients keep working across restarts', () => {
    const first = ensureClusterSecrets(dataDir);
    const again = ensureClusterSecrets(dataDir, () => {
      throw new Error('no new secret was needed');
    });
    expect(again).toEqual(first);
    expect(first.natsCredentials.password).toMatch(/^[0-9a-f]{32}$/);
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
