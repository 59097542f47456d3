import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ENV, parseSecretText, type NatsCredentials } from '@mink/config';
import { NATS_IDENTITIES, type NatsIdentity, type NatsPermissions } from './nats-permissions';

/** One NATS identity of a secure cluster: its user and password, and the 0600 file holding them. */
export interface NatsIdentitySecret {
  credentials: NatsCredentials;
  /** `MINK_NATS_USER=…` and `MINK_NATS_PASSWORD=…` lines, for `set -a; . <file>; set +a`. */
  envFile: string;
}

/**
 * The secrets of a local cluster started secure (`mink up --secure`): one NATS user and password per
 * identity (each service role, the outside clients, and `admin` for the local cluster's own readiness
 * checks; see natsPermissionsOf), which the servers ask for and each service gets by environment, the
 * credentials the routes of a NATS cluster give each other, an admin bearer token for the gateway, the
 * cluster secret of the data nodes' internal routes and the token of every service's `/metrics`. They live
 * in `<dataDir>/secrets/` (a 0700 folder of 0600 files) and are reused by the next start on the same data
 * dir, so a client keeps working across restarts. Nothing else of the cluster (cluster.json, the printed
 * endpoints, process arguments, logs) holds a secret: only the paths of these files.
 */
export interface ClusterSecrets {
  /** The outside clients' identity (`natsIdentities.client`): what a MinkClient, the CLI or an application connects with. */
  natsCredentials: NatsCredentials;
  /** `nats-client.env`: the client identity's `MINK_NATS_USER=…` and `MINK_NATS_PASSWORD=…` lines. */
  natsEnvFile: string;
  /** Every identity, each in `nats-<identity>.env`. */
  natsIdentities: Record<NatsIdentity, NatsIdentitySecret>;
  /** The user and password the servers of a NATS cluster route to each other with (`nats-route.env`); no client may use them. */
  natsRouteCredentials: NatsCredentials;
  /** The admin token alone, for `MINK_TOKEN=$(cat <file>)`. */
  adminTokenFile: string;
  /** The gateway's tokens file (MINK_AUTH_TOKENS_FILE) holding the admin token with scope `admin`. */
  tokensFile: string;
  /** The cluster secret alone (`MINK_CLUSTER_SECRET_FILE` of the data nodes and the gateway). */
  clusterSecretFile: string;
  /** The metrics token alone (`MINK_METRICS_TOKEN_FILE` of every service), for a scraper's `Authorization: Bearer`. */
  metricsTokenFile: string;
}

export const SECRETS_FOLDER_NAME = 'secrets';
/** The NATS user of an identity of a secure local cluster: 'mink-coordinator', …, 'mink-client', 'mink-admin'. */
export function localNatsUser(identity: NatsIdentity | 'route'): string {
  return `mink-${identity}`;
}
/** The file of an identity's credentials in the secrets folder: 'nats-data-node.env', …, 'nats-client.env'. */
export function natsEnvFileName(identity: NatsIdentity | 'route'): string {
  return `nats-${identity}.env`;
}
/** The file earlier versions kept their one NATS identity in; no server accepts it any more, so it is removed. */
const LEGACY_NATS_ENV_FILE_NAME = 'nats.env';
/** Random bytes of a generated password or token: 32 hex characters, 128 bits. */
export const SECRET_BYTES = 16;

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

/** A user of a nats-server: its credentials and what it may publish and subscribe to. */
export interface NatsUser {
  credentials: NatsCredentials;
  permissions: NatsPermissions;
}

/**
 * The `authorization { users: [...] }` block of a nats-server config: each user with its password and its
 * `permissions { publish { allow }, subscribe { allow } }` (nats-server 2.x); anything not allowed is refused
 * with a permissions violation. Subjects are quoted, so `$JS…` and `$KV…` are not read as variables.
 */
export function natsUsersAuthorizationBlock(users: readonly NatsUser[], indent = ''): string[] {
  if (users.length === 0) throw new Error('a nats-server asking for users needs at least one');
  const list = (subjects: readonly string[]): string => `[${subjects.map((subject) => JSON.stringify(subject)).join(', ')}]`;
  const lines = [`${indent}authorization {`, `${indent}  users: [`];
  for (const { credentials, permissions } of users) {
    checkNatsCredentials(credentials);
    lines.push(
      `${indent}    {`,
      `${indent}      user: ${JSON.stringify(credentials.user)}`,
      `${indent}      password: ${JSON.stringify(credentials.password)}`,
      `${indent}      permissions: {`,
      `${indent}        publish: { allow: ${list(permissions.publish)} }`,
      `${indent}        subscribe: { allow: ${list(permissions.subscribe)} }`,
      `${indent}      }`,
      `${indent}    }`,
    );
  }
  lines.push(`${indent}  ]`, `${indent}}`);
  return lines;
}

/** Writes `content` to `path` readable by its owner only (0600), also when the file existed with wider rights. */
export function writeSecretFile(path: string, content: string): void {
  writeFileSync(path, content, { mode: 0o600 });
  chmodSync(path, 0o600);
}

/**
 * The secrets a secure local cluster and the compose stack both keep in `folder` (made 0700): one NATS identity
 * per role with its env file, the routes' credentials, the admin token, the cluster secret and the metrics
 * token; each as an earlier start wrote it, else new from `random`.
 */
export interface SharedSecrets {
  natsIdentities: Record<NatsIdentity, NatsIdentitySecret>;
  natsRouteCredentials: NatsCredentials;
  adminTokenFile: string;
  adminToken: string;
  clusterSecretFile: string;
  metricsTokenFile: string;
}

/** Makes or reuses the `SharedSecrets` of `folder`. */
export function ensureSharedSecrets(folder: string, random: (bytes: number) => Buffer): SharedSecrets {
  mkdirSync(folder, { recursive: true, mode: 0o700 });
  chmodSync(folder, 0o700);
  const natsIdentities = Object.fromEntries(NATS_IDENTITIES.map((identity) => [identity, ensureNatsEnvFile(folder, identity, random)])) as Record<NatsIdentity, NatsIdentitySecret>;
  const natsRouteCredentials = ensureNatsEnvFile(folder, 'route', random).credentials;
  const adminTokenFile = ensureSecretFile(join(folder, 'admin-token'), 'the admin token', () => `mink-admin-${random(SECRET_BYTES).toString('hex')}`);
  const clusterSecretFile = ensureSecretFile(join(folder, 'cluster-secret'), ENV.clusterSecretFile, () => `mink-cluster-${random(SECRET_BYTES).toString('hex')}`);
  const metricsTokenFile = ensureSecretFile(join(folder, 'metrics-token'), ENV.metricsTokenFile, () => `mink-metrics-${random(SECRET_BYTES).toString('hex')}`);
  return { natsIdentities, natsRouteCredentials, adminTokenFile, adminToken: readFileSync(adminTokenFile, 'utf8').trim(), clusterSecretFile, metricsTokenFile };
}

/** The secrets of `dataDir` (see ClusterSecrets): those of an earlier secure start, else new ones from `random`. */
export function ensureClusterSecrets(dataDir: string, random: (bytes: number) => Buffer = randomBytes): ClusterSecrets {
  const folder = join(dataDir, SECRETS_FOLDER_NAME);
  const { natsIdentities, natsRouteCredentials, adminTokenFile, adminToken, clusterSecretFile, metricsTokenFile } = ensureSharedSecrets(folder, random);
  rmSync(join(folder, LEGACY_NATS_ENV_FILE_NAME), { force: true });
  const tokensFile = join(folder, 'tokens.json');
  writeSecretFile(tokensFile, adminTokensFileText(adminToken));
  const client = natsIdentities.client;
  return { natsCredentials: client.credentials, natsEnvFile: client.envFile, natsIdentities, natsRouteCredentials, adminTokenFile, tokensFile, clusterSecretFile, metricsTokenFile };
}

/** A gateway tokens file (MINK_AUTH_TOKENS_FILE) of one token, named `admin`, with scope `admin`. */
export function adminTokensFileText(adminToken: string): string {
  return `${JSON.stringify({ tokens: [{ name: 'admin', token: adminToken, scopes: ['admin'] }] }, null, 2)}\n`;
}

/** The credentials of `identity` in its env file, as an earlier start wrote them, else new ones (user `mink-<identity>`). */
export function ensureNatsEnvFile(folder: string, identity: NatsIdentity | 'route', random: (bytes: number) => Buffer): NatsIdentitySecret {
  const envFile = join(folder, natsEnvFileName(identity));
  const credentials = readNatsEnvFile(envFile) ?? { user: localNatsUser(identity), password: random(SECRET_BYTES).toString('hex') };
  writeSecretFile(envFile, `${ENV.natsUser}=${credentials.user}\n${ENV.natsPassword}=${credentials.password}\n`);
  return { credentials, envFile };
}

/**
 * `path`, holding the secret it held (checked as the services will read it, by `parseSecretText`: a file
 * they would refuse stops the start here, naming `variable` and the file) or a new one from `generate`;
 * readable by its owner only either way. Returns `path`.
 */
export function ensureSecretFile(path: string, variable: string, generate: () => string): string {
  const secret = existsSync(path) ? parseSecretText(readFileSync(path, 'utf8'), variable, path).reveal() : generate();
  writeSecretFile(path, `${secret}\n`);
  return path;
}

/** The `NAME=value` lines of an env file such as `ensureClusterSecrets` writes, empty when there is no file. */
export function readEnvFile(path: string): Map<string, string> {
  const values = new Map<string, string>();
  if (!existsSync(path)) return values;
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const at = line.indexOf('=');
    if (at > 0) values.set(line.slice(0, at), line.slice(at + 1).trim());
  }
  return values;
}

/** The credentials of a `nats-<identity>.env` written by `ensureClusterSecrets`, or null when there is none (or it lacks one of them). */
function readNatsEnvFile(path: string): NatsCredentials | null {
  const values = readEnvFile(path);
  const user = values.get(ENV.natsUser);
  const password = values.get(ENV.natsPassword);
  if (!user || !password) return null;
  const credentials = { user, password };
  checkNatsCredentials(credentials);
  return credentials;
}
