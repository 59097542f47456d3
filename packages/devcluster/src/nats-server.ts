import type { ChildProcess } from 'node:child_process';
import { accessSync, constants as fsConstants, mkdirSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { connect } from 'nats';
import { LIMITS, natsAuthOptions, sleep, type NatsCredentials } from '@mink/config';
import { spawnManaged, type ManagedProcess } from './managed-process';
import { freePort } from './ports';
import { natsAuthorizationBlock, writeSecretFile } from './secrets';

export interface NatsServerOptions {
  /** JetStream keeps its files in `<dataDir>/jetstream`; reuse the directory to keep streams across restarts. */
  dataDir: string;
  /** Client port; a free one is picked when absent. */
  port?: number;
  /** Where the server's output goes (appended); kept in memory only when absent. */
  logFile?: string;
  /** The nats-server binary; found on PATH or in /usr/sbin when absent. */
  binaryPath?: string;
  /**
   * The user and password every client must give (an `authorization` block in the generated config file,
   * which is then readable by its owner only); absent: the server asks for nothing.
   */
  credentials?: NatsCredentials;
}

/** A running nats-server with JetStream, listening on 127.0.0.1 only. */
export interface NatsServerHandle {
  url: string;
  port: number;
  pid: number;
  process: ChildProcess;
  /** SIGTERM, then SIGKILL if the server has not exited within `LIMITS.devServerStopTimeoutMs`. */
  stop(): Promise<void>;
}

export const NATS_SERVER_NOT_FOUND_MESSAGE = 'nats-server not found: install it (Debian: apt-get install nats-server)';

const HOST = '127.0.0.1';
const WELL_KNOWN_NATS_SERVER_PATHS = ['/usr/sbin/nats-server', '/usr/local/bin/nats-server', '/usr/bin/nats-server'];

function isExecutable(path: string): boolean {
  try {
    accessSync(path, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Where nats-server is looked for, in order: every PATH entry, then the usual install locations. */
export function natsServerCandidates(): string[] {
  const onPath = (process.env.PATH ?? '')
    .split(delimiter)
    .filter((directory) => directory !== '')
    .map((directory) => join(directory, 'nats-server'));
  return [...onPath, ...WELL_KNOWN_NATS_SERVER_PATHS];
}

/** The first executable among `candidates`; throws a one-line install hint when there is none. */
export function findNatsServer(candidates: string[] = natsServerCandidates()): string {
  const found = candidates.find(isExecutable);
  if (!found) throw new Error(NATS_SERVER_NOT_FOUND_MESSAGE);
  return found;
}

/**
 * Starts nats-server with JetStream and resolves once it accepts a NATS connection. When no port is
 * given and the picked one is taken before the server binds it, the start is retried on another port.
 */
export async function startNatsServer(options: NatsServerOptions): Promise<NatsServerHandle> {
  const binaryPath = options.binaryPath ?? findNatsServer();
  const storeDirectory = join(options.dataDir, 'jetstream');
  mkdirSync(storeDirectory, { recursive: true });
  // Larger messages than NATS' default 1 MiB let a scan page carry more records per round trip.
  const configFile = join(options.dataDir, 'nats-server.conf');
  writeSecretFile(configFile, natsServerConfig(options.credentials));
  const attemptsMax = options.port === undefined ? LIMITS.devServerStartAttemptsMax : 1;
  let lastError: Error | undefined;
  for (let attempt = 1; attempt <= attemptsMax; attempt++) {
    const port = options.port ?? (await freePort(HOST));
    const args = ['-c', configFile, '-js', '-sd', storeDirectory, '-p', String(port), '-a', HOST];
    const server = spawnManaged(binaryPath, args, { logFile: options.logFile });
    const url = `nats://${HOST}:${port}`;
    try {
      await waitForNats(url, server, options.credentials);
      return { url, port, pid: server.pid, process: server.process, stop: server.stop };
    } catch (error) {
      await server.stop();
      lastError = error as Error;
    }
  }
  throw lastError;
}

/**
 * The config file of a single nats-server: the larger payload, and the `authorization` block of `credentials`
 * (the password is in it: the file is written 0600, and passed with `-c` so no argument shows a secret).
 */
export function natsServerConfig(credentials?: NatsCredentials): string {
  return [`max_payload: ${LIMITS.natsMaxPayloadBytes}`, ...(credentials ? natsAuthorizationBlock(credentials) : []), ''].join('\n');
}

/**
 * Whether a NATS server accepts a connection with `options` (credentials, or none): 'connected' (the
 * connection is closed again at once), or the code of the NatsError that refused it ('AUTHORIZATION_VIOLATION'
 * for missing or wrong credentials). For checks of a secure cluster; it never retries.
 */
export async function natsConnectionOutcome(servers: string | string[], options: { user?: string; pass?: string } = {}): Promise<string> {
  try {
    const connection = await connect({ servers, reconnect: false, timeout: LIMITS.natsMonitorRequestTimeoutMs, ...options });
    await connection.close();
    return 'connected';
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  }
}

/** Polls until a NATS client can connect (with `credentials`, when the server asks for them), failing early when the server exits. */
async function waitForNats(url: string, server: ManagedProcess, credentials: NatsCredentials | undefined): Promise<void> {
  const deadlineMs = Date.now() + LIMITS.devServerStartTimeoutMs;
  for (;;) {
    if (server.hasExited()) {
      throw new Error(`nats-server exited during start on ${url}: ${server.outputTail().trim()}`);
    }
    try {
      const connection = await connect({ servers: url, reconnect: false, timeout: LIMITS.devServerPollIntervalMs * 10, ...natsAuthOptions(credentials) });
      await connection.close();
      return;
    } catch {
      if (Date.now() >= deadlineMs) {
        throw new Error(`nats-server did not accept connections on ${url} within ${LIMITS.devServerStartTimeoutMs} ms`);
      }
      await sleep(LIMITS.devServerPollIntervalMs);
    }
  }
}
