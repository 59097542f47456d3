import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ENV, type NatsCredentials } from '@mink/config';

/**
 * The secrets of a local cluster started secure (`mink up --secure`): a NATS user and password every server
 * asks for and every service is given by environment, and an admin bearer token for the gateway. They live in
 * `<dataDir>/secrets/` (a 0700 folder of 0600 files) and are reused by the next start on the same data dir,
 * so a client keeps working across restarts. Nothing else of the cluster (cluster.json, the printed
 * endpoints, process arguments, logs) holds a secret: only the paths of these files.
 */
export interface ClusterSecrets {
  natsCredentials: NatsCredentials;
  /** `MINK_NATS_USER=…` and `MINK_NATS_PASSWORD=…` lines, for `set -a; . <file>; set +a`. */
  natsEnvFile: string;
  /** The admin token alone, for `MINK_TOKEN=$(cat <file>)`. */
  adminTokenFile: string;
  /** The gateway's tokens file (MINK_AUTH_TOKENS_FILE) holding the admin token with scope `admin`. */
  tokensFile: string;
}

export const SECRETS_FOLDER_NAME = 'secrets';
/** The NATS user of a secure local cluster. */
export const LOCAL_NATS_USER = 'mink';
/** Random bytes of a generated password or token: 32 hex characters, 128 bits. */
const SECRET_BYTES = 16;

/**
 * Characters a NATS user or password may have here: they are written into a nats-server config (quoted) and
 * into the route URLs of a NATS cluster (`nats-route://user:password@host:port`), where anything else would
 * need escaping. Generated secrets are hex.
 */
const CREDENTIAL_PATTERN = /^[A-Za-z0-9_.~-]{1,256}$/;

/** Refuses a user or password that cannot be written as is into a nats-server config and a route URL; never quotes the password. */
export function checkNatsCredentials(credentials: NatsCredentials): void {
  if (!CREDENTIAL_PATTERN.test(credentials.user)) throw new Error(`NATS user '${credentials.user}' must be 1 to 256 of A-Z a-z 0-9 _ . ~ -`);
  if (!CREDENTIAL_PATTERN.test(credentials.password)) throw new Error('the NATS password must be 1 to 256 of A-Z a-z 0-9 _ . ~ - (not shown)');
}

/** The `authorization` block of a nats-server config asking every client (or route, inside `cluster {}`) for `credentials`. */
export function natsAuthorizationBlock(credentials: NatsCredentials, indent = ''): string[] {
  checkNatsCredentials(credentials);
  return [`${indent}authorization {`, `${indent}  user: ${JSON.stringify(credentials.user)}`, `${indent}  password: ${JSON.stringify(credentials.password)}`, `${indent}}`];
}

/** Writes `content` to `path` readable by its owner only (0600), also when the file existed with wider rights. */
export function writeSecretFile(path: string, content: string): void {
  writeFileSync(path, content, { mode: 0o600 });
  chmodSync(path, 0o600);
}

/** The secrets of `dataDir` (see ClusterSecrets): those of an earlier secure start, else new ones from `random`. */
export function ensureClusterSecrets(dataDir: string, random: (bytes: number) => Buffer = randomBytes): ClusterSecrets {
  const folder = join(dataDir, SECRETS_FOLDER_NAME);
  mkdirSync(folder, { recursive: true, mode: 0o700 });
  chmodSync(folder, 0o700);
  const natsEnvFile = join(folder, 'nats.env');
  const adminTokenFile = join(folder, 'admin-token');
  const tokensFile = join(folder, 'tokens.json');
  const natsCredentials = readNatsEnvFile(natsEnvFile) ?? { user: LOCAL_NATS_USER, password: random(SECRET_BYTES).toString('hex') };
  writeSecretFile(natsEnvFile, `${ENV.natsUser}=${natsCredentials.user}\n${ENV.natsPassword}=${natsCredentials.password}\n`);
  const adminToken = existsSync(adminTokenFile) ? readFileSync(adminTokenFile, 'utf8').trim() : `mink-admin-${random(SECRET_BYTES).toString('hex')}`;
  writeSecretFile(adminTokenFile, `${adminToken}\n`);
  writeSecretFile(tokensFile, `${JSON.stringify({ tokens: [{ name: 'admin', token: adminToken, scopes: ['admin'] }] }, null, 2)}\n`);
  return { natsCredentials, natsEnvFile, adminTokenFile, tokensFile };
}

/** The credentials of a `nats.env` written by `ensureClusterSecrets`, or null when there is none (or it lacks one of them). */
function readNatsEnvFile(path: string): NatsCredentials | null {
  if (!existsSync(path)) return null;
  const values = new Map<string, string>();
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const at = line.indexOf('=');
    if (at > 0) values.set(line.slice(0, at), line.slice(at + 1).trim());
  }
  const user = values.get(ENV.natsUser);
  const password = values.get(ENV.natsPassword);
  if (!user || !password) return null;
  const credentials = { user, password };
  checkNatsCredentials(credentials);
  return credentials;
}
