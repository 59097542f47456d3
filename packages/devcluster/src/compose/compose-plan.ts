import { createHash } from 'node:crypto';
import type { NatsCredentials } from '@mink/config';
import { natsClientAccessLines } from '../nats-server';
import { NATS_TLS_FILES, tlsFilesOf } from '../nats-tls';
import { natsAuthorizationBlock, type NatsUser } from '../secrets';

/**
 * The decisions of `npm run compose:up` / `compose:down` (packages/devcluster/src/compose), kept apart from
 * the Docker calls that carry them out: which compose files and arguments, which images to build from what,
 * when the stack is up, and what the user's arguments mean.
 */

/**
 * The compose project of `npm run compose:up`: containers are `mink_<service>_<n>`, the network
 * `mink_default` (v1 has no top-level `name`). The compose tests run a project of their own beside it.
 */
export const COMPOSE_PROJECT = 'mink';

/** The compose files, relative to the repository root: the base with official images, and the override with local ones. */
export const COMPOSE_FILES = { base: 'docker/docker-compose.yml', local: 'docker/docker-compose.local.yml' } as const;

/**
 * Where the images come from: `local` (the default) builds each on this machine from Debian and the workspace
 * (docker/docker-compose.local.yml names them); `registry` pulls the official ones and builds the mink images
 * from docker/Dockerfile, as a user with a registry does.
 */
export type ImageSource = 'local' | 'registry';

/** Services that run once and exit (0 when done), as opposed to servers that must stay up. */
export const ONE_SHOT_SERVICES: readonly string[] = ['createbucket'];

/** The `-p` and `-f` arguments every compose command of the stack starts with. */
export function composeFileArguments(source: ImageSource, project: string = COMPOSE_PROJECT): string[] {
  return ['-p', project, '-f', COMPOSE_FILES.base, ...(source === 'local' ? ['-f', COMPOSE_FILES.local] : [])];
}

/**
 * The arguments of `compose up` for the user's own (`npm run compose:up -- <args>`): detached, and with the
 * images already built when they are local (replicas come from `deploy.replicas`, which v1 reads too, or
 * the user's `--scale`). Refuses what would defeat `compose:up`: building (the local images are built
 * before), staying attached, and a `--scale` without `<service>=<count>`.
 */
export function composeUpArguments(userArguments: readonly string[], source: ImageSource): { arguments: string[] } | { error: string } {
  const attached = userArguments.find((argument) => ['--abort-on-container-exit', '--attach-dependencies', '--exit-code-from'].includes(argument.split('=')[0]!));
  if (attached !== undefined) return { error: `compose:up runs the stack detached; ${attached} is not taken (use docker-compose logs -f)` };
  if (source === 'local' && userArguments.includes('--build')) return { error: 'compose:up builds the local images itself; --build is not taken' };
  for (const [index, argument] of userArguments.entries()) {
    const value = argument === '--scale' ? userArguments[index + 1] : argument.startsWith('--scale=') ? argument.slice('--scale='.length) : undefined;
    if (value !== undefined ? !/^[a-z0-9-]+=\d+$/.test(value) : argument === '--scale') return { error: `--scale takes <service>=<count>, not ${value ?? 'nothing'}` };
  }
  return { arguments: ['up', '-d', ...(source === 'local' ? ['--no-build'] : []), ...userArguments.filter((argument) => argument !== '-d' && argument !== '--detach')] };
}

/** What `npm run compose:down -- <args>` asks: only `--keep-data` (keep the volumes: NATS streams and objects). */
export function composeDownOptions(userArguments: readonly string[]): { keepData: boolean } | { error: string } {
  const unknown = userArguments.filter((argument) => argument !== '--keep-data');
  if (unknown.length > 0) return { error: `compose:down takes only --keep-data, not ${unknown.join(' ')}` };
  return { keepData: userArguments.includes('--keep-data') };
}

/** The arguments of `compose down`: containers, networks and, unless kept, the volumes of the stack. */
export function composeDownArguments(keepData: boolean): string[] {
  return ['down', '--remove-orphans', ...(keepData ? [] : ['--volumes'])];
}

/** The images `compose:up` builds for the local source, in build order; each names the one it is built on. */
export type LocalImageName = 'debian' | 'node' | 'nats' | 'prometheus' | 'mink' | 's3';

export interface LocalImageSpec {
  name: LocalImageName;
  /** The repository the image is tagged in: `<repository>:<content tag>` and `<repository>:latest`. */
  repository: string;
  /** Its Dockerfile under docker/local (null: the Debian root, made by debootstrap and `docker import`). */
  dockerfile: string | null;
  /** The local image it is built on, passed as the build argument `fromArgument`. */
  from: LocalImageName | null;
  fromArgument: string | null;
  /** What the build sends besides the Dockerfile: nothing, the Node.js binary, or the workspace. */
  context: 'none' | 'node-binary' | 'workspace';
}

export const LOCAL_IMAGES: readonly LocalImageSpec[] = [
  { name: 'debian', repository: 'mink-local/debian', dockerfile: null, from: null, fromArgument: null, context: 'none' },
  { name: 'node', repository: 'mink-local/node', dockerfile: 'docker/local/node.Dockerfile', from: 'debian', fromArgument: 'BASE_IMAGE', context: 'node-binary' },
  { name: 'nats', repository: 'mink-local/nats', dockerfile: 'docker/local/nats.Dockerfile', from: 'debian', fromArgument: 'BASE_IMAGE', context: 'none' },
  { name: 'prometheus', repository: 'mink-local/prometheus', dockerfile: 'docker/local/prometheus.Dockerfile', from: 'debian', fromArgument: 'BASE_IMAGE', context: 'none' },
  { name: 'mink', repository: 'mink-local/mink', dockerfile: 'docker/local/mink.Dockerfile', from: 'node', fromArgument: 'NODE_IMAGE', context: 'workspace' },
  { name: 's3', repository: 'mink-local/s3', dockerfile: 'docker/local/s3.Dockerfile', from: 'mink', fromArgument: 'MINK_IMAGE', context: 'none' },
];

/** The Debian root of the local images: `debootstrap --variant=minbase <suite> DIR <mirror>`. */
export const DEBIAN_ROOT = { suite: 'bookworm', variant: 'minbase', mirror: 'http://deb.debian.org/debian' } as const;

/**
 * The tag of an image by the content it is made of (its Dockerfile, the tag of the image it is built on and
 * the digest of its context): equal inputs give the tag of an image already built, so a second `compose:up`
 * builds only what changed.
 */
export function localImageTag(repository: string, inputs: readonly string[]): string {
  const digest = createHash('sha256');
  for (const input of inputs) digest.update(`${input.length}:${input}`);
  return `${repository}:c-${digest.digest('hex').slice(0, 16)}`;
}

/**
 * The workspace files the mink image is made of, for its content digest: what runs (every package's and
 * app's dist and bin, the manifests) and what decides node_modules (the lockfile). Sources, tests and
 * build caches change no running code.
 */
export function isWorkspaceContent(relativePath: string): boolean {
  if (['package.json', 'pnpm-lock.yaml', 'pnpm-workspace.yaml'].includes(relativePath)) return true;
  const match = /^(packages|apps)\/[^/]+\/(.+)$/.exec(relativePath);
  if (match === null) return false;
  const inner = match[2]!;
  return inner === 'package.json' || ((inner.startsWith('dist/') || inner.startsWith('bin/')) && !inner.endsWith('.tsbuildinfo'));
}

/**
 * What the workspace's tar (the mink image's build context) leaves out, as GNU tar `--exclude` patterns of
 * `tar -C <root> -c .`: history, build caches, tests, docs, local data and secrets (docker/secrets, and the
 * docker/tokens.json of earlier versions).
 */
export const WORKSPACE_EXCLUDES: readonly string[] = ['./.git', './.nx', './.mink', './tmp', './coverage', './test', './docs', './docker/tokens.json', './docker/secrets', './node_modules/.cache', '*.tsbuildinfo'];

/** A container of the stack as `docker inspect` shows it. */
export interface StackContainer {
  name: string;
  service: string;
  /** Docker's state: created, running, restarting, exited, dead, … */
  status: string;
  exitCode: number;
  /** Its health check's verdict, null for a service without one. */
  health: 'starting' | 'healthy' | 'unhealthy' | null;
}

/**
 * Whether the stack is up: every server running (and healthy, where it has a health check) and every
 * one-shot service exited with 0. `waiting` names the containers not there yet with their state; `failed`
 * those that cannot get there (a one-shot service that exited with an error).
 */
export function stackReadiness(containers: readonly StackContainer[]): { ready: boolean; waiting: string[]; failed: string[] } {
  const waiting: string[] = [];
  const failed: string[] = [];
  for (const container of containers) {
    if (ONE_SHOT_SERVICES.includes(container.service)) {
      if (container.status === 'exited' && container.exitCode !== 0) failed.push(`${container.name} (exited with ${container.exitCode})`);
      else if (container.status !== 'exited') waiting.push(`${container.name} (${container.status})`);
      continue;
    }
    if (container.status !== 'running') waiting.push(`${container.name} (${container.status})`);
    else if (container.health !== null && container.health !== 'healthy') waiting.push(`${container.name} (${container.health})`);
  }
  return { ready: containers.length > 0 && waiting.length === 0 && failed.length === 0, waiting, failed };
}

/** The NATS servers of docker-compose.yml: their service names, JetStream peer names and host names on the compose network. */
export const COMPOSE_NATS_SERVERS: readonly string[] = ['nats-1', 'nats-2', 'nats-3'];
/** The port the NATS servers route to each other on (the `cluster { listen }` of nats-access.conf). */
export const COMPOSE_NATS_ROUTE_PORT = 6222;
/** Where a NATS container finds its TLS certificate and key: docker-compose.yml mounts them from the secrets folder. */
export const COMPOSE_NATS_TLS_MOUNTS = { certFile: '/etc/nats/tls/server.pem', keyFile: '/etc/nats/tls/server-key.pem' } as const;
/** The host names the NATS servers' certificate is valid for: each server on the compose network, and loopback. */
export const COMPOSE_NATS_CERTIFICATE_NAMES: readonly string[] = [...COMPOSE_NATS_SERVERS.map((server) => `DNS:${server}`), 'DNS:localhost', 'IP:127.0.0.1'];

/**
 * The files of the compose stack's secrets folder (docker/secrets unless MINK_COMPOSE_SECRETS_DIR names
 * another): generated by `compose:up` (or `mink compose secrets`) at the first start and reused after, never
 * committed; docker-compose.yml reads every one of them and starts nothing without them.
 */
export const COMPOSE_SECRET_FILES = {
  /** The gateway's and the data nodes' tokens (HTTP and gRPC bearer tokens, Kafka SASL users): kept once written, so tokens added to it stay. */
  tokens: 'tokens.json',
  /** The admin token alone, for `MINK_TOKEN=$(cat …)` and a Kafka client's SASL password (user `admin`). */
  adminToken: 'admin-token',
  /** MINK_CLUSTER_SECRET_FILE of the data nodes and the gateway: the credential of the data nodes' internal routes. */
  clusterSecret: 'cluster-secret',
  /** MINK_METRICS_TOKEN_FILE of every mink service, and the copy Prometheus scrapes with (a file for its own user). */
  metricsToken: 'metrics-token',
  prometheusMetricsToken: 'prometheus-metrics-token',
  /** MINK_S3_ACCESS_KEY_ID and MINK_S3_SECRET_ACCESS_KEY of the mink services (and of the local S3 server), as an env file. */
  s3Env: 's3.env',
  /** MINIO_ROOT_USER and MINIO_ROOT_PASSWORD, the same key, for MinIO and the bucket it is given. */
  minioEnv: 'minio.env',
  /** The NATS servers' users with their permissions, their TLS and their routes (with the routes' credentials), included by nats-cluster.conf. */
  natsAccess: 'nats-access.conf',
  /** The CA of the NATS servers' certificate (MINK_NATS_TLS_CA_FILE of the services), its key, and the servers' certificate and key (ensureServerTlsFiles). */
  natsCa: NATS_TLS_FILES.ca,
  natsCaKey: NATS_TLS_FILES.caKey,
  natsCert: NATS_TLS_FILES.cert,
  natsKey: NATS_TLS_FILES.key,
  /**
   * The CA of the data nodes' Kafka listeners and its key (ensureCertificateAuthority): each data node issues its
   * own certificate with them at start, for its address on the compose network and the name `data-node`
   * (MINK_KAFKA_TLS_CA_FILE, MINK_KAFKA_TLS_CA_KEY_FILE); Kafka clients trust the CA.
   */
  kafkaCa: tlsFilesOf('kafka').ca,
  kafkaCaKey: tlsFilesOf('kafka').caKey,
} as const;

/**
 * The part of the NATS servers' configuration that holds secrets, generated into the secrets folder and
 * included by docker/nats-cluster.conf: every user with its permissions (natsPermissionsOf), TLS on the client
 * port (the certificate and key docker-compose.yml mounts), and the cluster block with the routes'
 * credentials. Each server is given the routes to all three (nats-server ignores its route to itself), so one
 * file serves the three.
 */
export function composeNatsAccessConfig(users: readonly NatsUser[], routeCredentials: NatsCredentials): string {
  const routeUser = `${routeCredentials.user}:${routeCredentials.password}@`;
  const routes = COMPOSE_NATS_SERVERS.map((server) => JSON.stringify(`nats-route://${routeUser}${server}:${COMPOSE_NATS_ROUTE_PORT}`));
  return [
    '# Generated by `npm run compose:up` (packages/devcluster/src/compose): holds passwords; never commit it.',
    ...natsClientAccessLines({ users: [...users], tls: COMPOSE_NATS_TLS_MOUNTS }),
    'cluster {',
    '  name: "mink"',
    `  listen: "0.0.0.0:${COMPOSE_NATS_ROUTE_PORT}"`,
    ...natsAuthorizationBlock(routeCredentials, '  '),
    `  routes: [${routes.join(', ')}]`,
    '}',
    '',
  ].join('\n');
}
