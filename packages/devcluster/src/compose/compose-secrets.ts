import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, copyFileSync, existsSync, rmSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { DEFAULTS, ENV } from '@mink/config';
import { NATS_IDENTITIES, natsPermissionsOf } from '../nats-permissions';
import { ensureCertificateAuthority, ensureServerTlsFiles } from '../nats-tls';
import { SECRET_BYTES, adminTokensFileText, ensureSharedSecrets, readEnvFile, writeSecretFile } from '../secrets';
import { COMPOSE_NATS_CERTIFICATE_NAMES, COMPOSE_SECRET_FILES, composeNatsAccessConfig } from './compose-plan';

/** The variable naming the secrets folder docker-compose.yml reads (relative to docker/, or absolute); docker/secrets when unset. */
export const COMPOSE_SECRETS_DIR_VARIABLE = 'MINK_COMPOSE_SECRETS_DIR';

/** The uids that read the secrets in their containers: the mink images' `node` user, and Prometheus' `nobody`. */
const MINK_UID = 1000;
const PROMETHEUS_UID = 65534;

/** The secrets folder of the stack compose runs with `env`: MINK_COMPOSE_SECRETS_DIR (resolved as compose does, against docker/), else docker/secrets. */
export function composeSecretsDirOf(root: string, env: NodeJS.ProcessEnv): string {
  const named = env[COMPOSE_SECRETS_DIR_VARIABLE];
  if (named === undefined || named === '') return join(root, 'docker', 'secrets');
  return isAbsolute(named) ? named : resolve(root, 'docker', named);
}

/** What a Kafka client, a MinkClient or a curl needs of a compose stack's secrets: file paths, never the secrets. */
export interface ComposeSecrets {
  folder: string;
  /** The admin token (bearer token of the gateway; SASL password of the Kafka user `admin`). */
  adminTokenFile: string;
  /** The outside clients' NATS identity, as `MINK_NATS_USER=…` / `MINK_NATS_PASSWORD=…` lines. */
  natsClientEnvFile: string;
  /** The CA a NATS client trusts (the servers speak TLS only). */
  natsCaFile: string;
  /** The CA a Kafka client trusts (the data nodes' listeners speak TLS only, SASL_SSL). */
  kafkaCaFile: string;
  metricsTokenFile: string;
  clusterSecretFile: string;
  /** MINK_S3_ACCESS_KEY_ID and MINK_S3_SECRET_ACCESS_KEY of the stack's S3 server. */
  s3EnvFile: string;
}

/**
 * Makes the compose stack's secrets folder (COMPOSE_SECRET_FILES), keeping what an earlier start wrote:
 * one NATS user per role with its permissions (the scheme of `mink up --secure`, natsPermissionsOf), the
 * routes' credentials, TLS for NATS (a CA and the servers' certificate, made with openssl), the CA the data
 * nodes issue their Kafka listeners' certificates with, the gateway's and
 * data nodes' tokens (HTTP, gRPC and Kafka SASL) with an admin token, the data nodes' cluster secret, the
 * metrics token, and an S3 key for MinIO (or the local S3 server). Files the containers read are given to the
 * container's user when run as root (0600), else made readable by every user, and said so through `log`.
 */
export async function ensureComposeSecrets(folder: string, log: (line: string) => void, random: (bytes: number) => Buffer = randomBytes): Promise<ComposeSecrets> {
  const path = (name: string): string => join(folder, name);
  const fresh = !existsSync(path(COMPOSE_SECRET_FILES.adminToken));
  const { natsIdentities, natsRouteCredentials, adminTokenFile, adminToken, clusterSecretFile, metricsTokenFile } = ensureSharedSecrets(folder, random);
  const users = NATS_IDENTITIES.map((identity) => ({ credentials: natsIdentities[identity].credentials, permissions: natsPermissionsOf(identity, DEFAULTS.metaStream) }));
  writeSecretFile(path(COMPOSE_SECRET_FILES.natsAccess), composeNatsAccessConfig(users, natsRouteCredentials));
  await ensureServerTlsFiles(folder, 'nats', COMPOSE_NATS_CERTIFICATE_NAMES);
  await ensureCertificateAuthority(folder, 'kafka');
  // Kept once written, so tokens an operator adds stay.
  const tokensFile = path(COMPOSE_SECRET_FILES.tokens);
  if (!existsSync(tokensFile)) writeSecretFile(tokensFile, adminTokensFileText(adminToken));
  const prometheusMetricsToken = path(COMPOSE_SECRET_FILES.prometheusMetricsToken);
  rmSync(prometheusMetricsToken, { force: true });
  copyFileSync(metricsTokenFile, prometheusMetricsToken);

  const s3EnvFile = path(COMPOSE_SECRET_FILES.s3Env);
  const s3 = readEnvFile(s3EnvFile);
  const accessKeyId = s3.get(ENV.s3AccessKeyId) ?? `mink${random(8).toString('hex')}`;
  const secretAccessKey = s3.get(ENV.s3SecretAccessKey) ?? random(SECRET_BYTES * 2).toString('hex');
  writeSecretFile(s3EnvFile, `${ENV.s3AccessKeyId}=${accessKeyId}\n${ENV.s3SecretAccessKey}=${secretAccessKey}\n`);
  writeSecretFile(path(COMPOSE_SECRET_FILES.minioEnv), `MINIO_ROOT_USER=${accessKeyId}\nMINIO_ROOT_PASSWORD=${secretAccessKey}\n`);

  // Read in the containers: the mink services' files by `node`, Prometheus' copy by `nobody`. The NATS
  // servers run as root and read theirs as they are.
  const readable: string[] = [];
  for (const name of [COMPOSE_SECRET_FILES.tokens, COMPOSE_SECRET_FILES.clusterSecret, COMPOSE_SECRET_FILES.metricsToken, COMPOSE_SECRET_FILES.natsCa, COMPOSE_SECRET_FILES.kafkaCa, COMPOSE_SECRET_FILES.kafkaCaKey]) {
    if (!giveToContainerUser(path(name), MINK_UID)) readable.push(name);
  }
  if (!giveToContainerUser(prometheusMetricsToken, PROMETHEUS_UID)) readable.push(COMPOSE_SECRET_FILES.prometheusMetricsToken);
  if (readable.length > 0) log(`${readable.join(', ')} in ${folder} are readable by every user of this machine: not root, so they cannot be given to the containers' users`);
  if (fresh) log(`generated the stack's secrets in ${folder} (git-ignored; the admin token is ${adminTokenFile})`);
  return { folder, adminTokenFile, natsClientEnvFile: natsIdentities.client.envFile, natsCaFile: path(COMPOSE_SECRET_FILES.natsCa), kafkaCaFile: path(COMPOSE_SECRET_FILES.kafkaCa), metricsTokenFile, clusterSecretFile, s3EnvFile };
}

/**
 * Gives `path` to `uid` (mode 0600) when this process is root; otherwise makes it readable by everyone so that
 * the container's user can read it through the bind mount. Returns whether it could keep the file private.
 */
function giveToContainerUser(path: string, uid: number): boolean {
  if (process.getuid?.() === 0) {
    chownSync(path, uid, uid);
    chmodSync(path, 0o600);
    return true;
  }
  chmodSync(path, 0o644);
  return false;
}
