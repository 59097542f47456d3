import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { ENV, readServiceConfig } from './env';
import { SECRET_CHARS_MAX, SECRET_CHARS_MIN, Secret, parseSecretText, readBoundedFile, readSecretFile } from './secret-file';

const GOOD = 'mink-cluster-0123456789abcdef';

describe('parseSecretText', () => {
  // Proves which file contents make a secret: trimmed, 16 to 4096 visible ASCII characters, since it is sent
  // as "Authorization: <scheme> <secret>"; anything else is refused naming the variable and the file.
  const cases: [string, string, string | Error][] = [
    ['a secret alone', GOOD, GOOD],
    ['a secret and the newline an editor adds', `${GOOD}\n`, GOOD],
    ['white space around it', `  \t${GOOD}\r\n\n`, GOOD],
    ['exactly the shortest length', 'a'.repeat(SECRET_CHARS_MIN), 'a'.repeat(SECRET_CHARS_MIN)],
    ['exactly the longest length', 'b'.repeat(SECRET_CHARS_MAX), 'b'.repeat(SECRET_CHARS_MAX)],
    ['every visible ASCII character', '!"#$%&\'()*+,-./0123456789:;<=>?@AZ[\\]^_`az{|}~', '!"#$%&\'()*+,-./0123456789:;<=>?@AZ[\\]^_`az{|}~'],
    ['an empty file', '', new Error('MINK_CLUSTER_SECRET_FILE: the secret in /s is empty')],
    ['white space only', ' \n\t\n', new Error('MINK_CLUSTER_SECRET_FILE: the secret in /s is empty')],
    ['one character short', 'a'.repeat(SECRET_CHARS_MIN - 1), new Error('MINK_CLUSTER_SECRET_FILE: the secret in /s is shorter than 16 characters')],
    ['one character long', 'b'.repeat(SECRET_CHARS_MAX + 1), new Error('MINK_CLUSTER_SECRET_FILE: the secret in /s is longer than 4096 characters')],
    ['a space inside', 'mink cluster 0123456789', new Error('MINK_CLUSTER_SECRET_FILE: the secret in /s must be visible ASCII characters without spaces (it is sent in an HTTP header)')],
    ['two lines', `${GOOD}\n${GOOD}`, new Error('MINK_CLUSTER_SECRET_FILE: the secret in /s must be visible ASCII characters without spaces (it is sent in an HTTP header)')],
    ['a character beyond ASCII', `${GOOD}é`, new Error('MINK_CLUSTER_SECRET_FILE: the secret in /s must be visible ASCII characters without spaces (it is sent in an HTTP header)')],
    ['a control character', `${GOOD}\u0000x`, new Error('MINK_CLUSTER_SECRET_FILE: the secret in /s must be visible ASCII characters without spaces (it is sent in an HTTP header)')],
  ];
  it.each(cases)('%s', (_what, text, expected) => {
    if (expected instanceof Error) {
      expect(() => parseSecretText(text, 'MINK_CLUSTER_SECRET_FILE', '/s')).toThrow(expected.message);
    } else {
      expect(parseSecretText(text, 'MINK_CLUSTER_SECRET_FILE', '/s').reveal()).toBe(expected);
    }
  });

  it('never quotes the text it refuses', () => {
    // Proves a nearly right secret (say one character short) does not end up in a log through the error.
    const nearly = 'secret-of-15-ch';
    expect(() => parseSecretText(nearly, 'V', '/s')).toThrow();
    expect(() => parseSecretText(nearly, 'V', '/s')).not.toThrow(nearly);
    expect(() => parseSecretText(`${GOOD} tail`, 'V', '/s')).not.toThrow(GOOD);
  });
});

describe('Secret', () => {
  it('shows [secret] wherever it is logged, printed or serialised, and the value through reveal() only', () => {
    // Proves a ServiceConfig holding secrets can be logged by mistake without leaking them.
    const secret = new Secret(GOOD);
    const config = { name: 'x', clusterSecret: secret };
    expect(JSON.stringify(config)).toBe('{"name":"x","clusterSecret":"[secret]"}');
    expect(inspect(config)).not.toContain(GOOD);
    expect(`${secret}`).toBe('[secret]');
    expect(Object.keys(secret)).toEqual([]);
    expect(secret.reveal()).toBe(GOOD);
  });
});

describe('readSecretFile', () => {
  let folder: string;

  beforeEach(() => {
    folder = mkdtempSync(join(tmpdir(), 'mink-secret-file-'));
  });

  afterEach(() => {
    rmSync(folder, { recursive: true, force: true });
  });

  it('answers null for an unset or empty variable: no secret asked for, as before the setting existed', () => {
    const read = () => {
      throw new Error('no file is read');
    };
    expect(readSecretFile(undefined, 'V', read)).toBeNull();
    expect(readSecretFile('', 'V', read)).toBeNull();
  });

  it('reads the secret of a file', () => {
    const path = join(folder, 'cluster-secret');
    writeFileSync(path, `${GOOD}\n`, { mode: 0o600 });
    expect(readSecretFile(path, 'V')?.reveal()).toBe(GOOD);
  });

  it.each([
    ['a missing file', (path: string) => path, 'ENOENT'],
    ['a folder', () => '.', 'EISDIR'],
    ['a file far larger than any secret', (path: string) => (writeFileSync(path, 'x'.repeat(1 << 20)), path), 'EFBIG'],
    ['a device that never ends', () => '/dev/zero', 'EFBIG'],
  ])('refuses %s, naming the variable, the file and why', (_what, pathOf, code) => {
    // Proves a file that cannot be used stops the start with its name, and a huge one is not read whole.
    const path = pathOf(join(folder, 'secret'));
    expect(() => readSecretFile(path, 'MINK_METRICS_TOKEN_FILE')).toThrow(`MINK_METRICS_TOKEN_FILE: cannot read ${path} (${code})`);
  });

  it('reads a bounded file up to its bound and refuses one byte more', () => {
    const path = join(folder, 'bounded');
    writeFileSync(path, 'abcd');
    expect(readBoundedFile(path, 4)).toBe('abcd');
    expect(() => readBoundedFile(path, 3)).toThrow('larger than 3 bytes');
  });
});

describe('readServiceConfig: MINK_CLUSTER_SECRET_FILE and MINK_METRICS_TOKEN_FILE', () => {
  it('reads both secrets from their files, and none when the variables are unset or empty', () => {
    // Proves the settings reach every service's config, and their absence keeps today's open routes.
    const files: Record<string, string> = { '/run/cluster': `${GOOD}\n`, '/run/metrics': 'metrics-token-0123456789' };
    const read = (path: string) => files[path] ?? '';
    const config = readServiceConfig({ [ENV.clusterSecretFile]: '/run/cluster', [ENV.metricsTokenFile]: '/run/metrics' }, {}, undefined, read);
    expect([config.clusterSecret?.reveal(), config.metricsToken?.reveal()]).toEqual([GOOD, 'metrics-token-0123456789']);
    expect(ENV.clusterSecretFile).toBe('MINK_CLUSTER_SECRET_FILE');
    expect(ENV.metricsTokenFile).toBe('MINK_METRICS_TOKEN_FILE');
    expect(readServiceConfig({})).toMatchObject({ clusterSecret: null, metricsToken: null });
    expect(readServiceConfig({ [ENV.clusterSecretFile]: '', [ENV.metricsTokenFile]: '' })).toMatchObject({ clusterSecret: null, metricsToken: null });
  });

  it('stops the start on a secret too short, naming the variable', () => {
    expect(() => readServiceConfig({ [ENV.metricsTokenFile]: '/run/metrics' }, {}, undefined, () => 'short')).toThrow('MINK_METRICS_TOKEN_FILE: the secret in /run/metrics is shorter than 16 characters');
  });
});
