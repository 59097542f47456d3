import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { LIMITS } from '@mink/config';
import {
  COMPOSE_PROJECT,
  composeDownArguments,
  composeDownOptions,
  composeFileArguments,
  composeUpArguments,
  stackReadiness,
  type ImageSource,
  type StackContainer,
} from './compose-plan';
import { ensureDockerDaemon, ensureDockerTools, runTool, stopStartedDockerDaemon, type DockerTools } from './docker-tools';
import { composeSecretsDirOf, ensureComposeSecrets } from './compose-secrets';
import { buildLocalImages } from './local-images';

export interface ComposeOptions {
  /** The repository root (the compose files are under docker/). */
  root: string;
  source: ImageSource;
  /** The compose project (COMPOSE_PROJECT unless a test runs one of its own). */
  project?: string;
  /**
   * The environment compose runs with, whose variables the files read (MINK_PUBLISH_HOST, MINK_TOKENS_FILE,
   * MINK_LEASE_TTL_MS, …): this process's unless given.
   */
  env?: NodeJS.ProcessEnv;
  /** Progress and outcome, one line each (never a secret). */
  log: (line: string) => void;
}

/** Where compose:up keeps what compose:down needs (dockerd's pid) and the build logs: .mink/compose, git-ignored. */
export function stateDirOf(root: string): string {
  return join(root, '.mink', 'compose');
}

/** Runs a compose command of the stack with its output on this process's stderr (compose's progress lines). */
export function runCompose(tools: DockerTools, options: ComposeOptions, args: string[]): Promise<void> {
  const [command, ...prefix] = tools.compose;
  return new Promise((resolve, reject) => {
    const child = spawn(command!, [...prefix, ...composeFileArguments(options.source, options.project), ...args], {
      cwd: options.root,
      env: options.env ?? process.env,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${tools.compose.join(' ')} ${args[0]} exited with ${code}`))));
  });
}

/** The stack's containers as Docker sees them now. */
export async function stackContainers(tools: DockerTools, project: string = COMPOSE_PROJECT): Promise<StackContainer[]> {
  const { stdout } = await runTool(tools.docker, ['ps', '-aq', '--filter', `label=com.docker.compose.project=${project}`]);
  const ids = stdout.split('\n').filter((id) => id !== '');
  if (ids.length === 0) return [];
  const inspected = JSON.parse((await runTool(tools.docker, ['inspect', ...ids])).stdout) as {
    Name: string;
    Config: { Labels: Record<string, string> };
    State: { Status: string; ExitCode: number; Health?: { Status: 'starting' | 'healthy' | 'unhealthy' } };
  }[];
  return inspected.map((container) => ({
    name: container.Name.replace(/^\//, ''),
    service: container.Config.Labels['com.docker.compose.service'] ?? '',
    status: container.State.Status,
    exitCode: container.State.ExitCode,
    health: container.State.Health?.Status ?? null,
  }));
}

/** Waits until every container is up (stackReadiness), saying every few seconds which it waits for. */
async function waitUntilReady(tools: DockerTools, project: string, log: (line: string) => void): Promise<void> {
  const started = Date.now();
  let lastProgress = started;
  for (;;) {
    const containers = await stackContainers(tools, project);
    const readiness = stackReadiness(containers);
    if (readiness.failed.length > 0) throw new Error(`the stack did not come up: ${readiness.failed.join(', ')} (docker-compose -p ${project} logs <service>)`);
    if (readiness.ready) {
      log(`all ${containers.length} containers up in ${((Date.now() - started) / 1000).toFixed(0)} s`);
      return;
    }
    if (Date.now() - started > LIMITS.composeReadyTimeoutMs) {
      throw new Error(`the stack was not up within ${LIMITS.composeReadyTimeoutMs / 1000} s; waiting for ${readiness.waiting.join(', ')}`);
    }
    if (Date.now() - lastProgress >= LIMITS.composeProgressIntervalMs) {
      lastProgress = Date.now();
      log(`waiting for ${readiness.waiting.length} of ${containers.length} containers: ${readiness.waiting.join(', ')}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}

/**
 * `npm run compose:up [-- <compose up options>]`: installs Docker, compose and debootstrap when missing (as
 * root), starts dockerd when none answers, builds the local images (or, with the registry source, lets
 * compose pull and build), makes the stack's secrets when they are not there yet (ensureComposeSecrets: NATS
 * identities and TLS, tokens, cluster secret, metrics token, S3 key), starts the stack detached and waits until
 * every container is up.
 */
export async function composeUp(userArguments: readonly string[], options: ComposeOptions): Promise<void> {
  const up = composeUpArguments(userArguments, options.source);
  if ('error' in up) throw new Error(up.error);
  const stateDir = stateDirOf(options.root);
  mkdirSync(stateDir, { recursive: true });
  const tools = await ensureDockerTools(options.log);
  await ensureDockerDaemon(tools, stateDir, options.log);
  if (options.source === 'local') await buildLocalImages(tools, options.root, stateDir, options.log);
  const env = options.env ?? process.env;
  const project = options.project ?? COMPOSE_PROJECT;
  const secrets = await ensureComposeSecrets(composeSecretsDirOf(options.root, env), options.log);
  await runCompose(tools, options, up.arguments);
  await waitUntilReady(tools, project, options.log);
  const publishHost = env.MINK_PUBLISH_HOST || '127.0.0.1';
  options.log(
    `gateway: HTTP http://${publishHost}:${env.MINK_PUBLISH_HTTP_PORT || 8080}, gRPC ${publishHost}:${env.MINK_PUBLISH_GRPC_PORT || 50051} (bearer token: ${secrets.adminTokenFile}); Prometheus http://127.0.0.1:${env.MINK_PUBLISH_PROMETHEUS_PORT || 9090}`,
  );
  options.log(`Kafka: data-node:9092 on the compose network ${project}_default, SASL_SSL (CA ${secrets.kafkaCaFile}), PLAIN or SCRAM-SHA-256/512, user admin, password in ${secrets.adminTokenFile}`);
  options.log(`NATS (TLS, CA ${secrets.natsCaFile}): the client identity is in ${secrets.natsClientEnvFile}`);
}

/**
 * `npm run compose:down [-- --keep-data]`: removes the stack's containers, networks and (unless kept) volumes,
 * then stops dockerd if compose:up started it.
 */
export async function composeDown(userArguments: readonly string[], options: ComposeOptions): Promise<void> {
  const down = composeDownOptions(userArguments);
  if ('error' in down) throw new Error(down.error);
  const stateDir = stateDirOf(options.root);
  const tools = await ensureDockerTools(options.log);
  if (await runTool(tools.docker, ['info', '--format', '{{.ServerVersion}}']).then(() => true, () => false)) {
    await runCompose(tools, options, composeDownArguments(down.keepData));
    options.log(down.keepData ? 'removed the stack; its volumes are kept' : 'removed the stack and its volumes');
  } else {
    options.log('no Docker engine answers: nothing to remove');
  }
  await stopStartedDockerDaemon(stateDir, options.log);
}
