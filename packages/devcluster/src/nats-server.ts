import type { ChildProcess } from 'node:child_process';
import { accessSync, constants as fsConstants, mkdirSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { connect, type ConnectionOptions } from 'nats';
import { LIMITS, natsAuthOptions, natsTlsOptions, sleep, type NatsCredentials, type TlsFiles } from '@mink/config';
import { spawnManaged, type ManagedProcess } from './managed-process';
import { freePort } from './ports';
import { natsAuthorizationBlock, natsUsersAuthorizationBlock, writeSecretFile, type NatsUser } from './secrets';

/**
 * TLS of a nats-server's client port: its certificate chain and key (the config's `tls { cert_file, key_file }`;
 * every client must then speak TLS), and the CA that signed the certificate, which the launcher's own checks
 * (and the services, given `MINK_NATS_TLS_CA_FILE`) trust.
 */
export interface NatsServerTls extends TlsFiles {
  caFile: string;
}

/** Who a nats-server accepts and how its clients connect: what the config writers and the launchers' own checks share. */
export interface NatsServerAccess {
  /**
   * The user and password the launcher's own checks connect with. Alone, they are the one user, allowed
   * everything (and, in a NATS cluster, the routes' credentials too); with `users`, they must be one of them.
   * Absent: the server asks for nothing.
   */
  credentials?: NatsCredentials;
  /** Every user the server accepts, each limited to its permissions (an `authorization { users }` block). */
  users?: NatsUser[];
  /** TLS on the client port; absent: plain text. */
  tls?: NatsServerTls;
}

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
   * The user and password the launcher checks the server with, and the only user when `users` is absent (an
   * `authorization` block in the generated config file, which is then readable by its owner only); absent:
   * the server asks for nothing.
   */
  credentials?: NatsCredentials;
  /** The users the server accepts, each with its permissions (see NatsServerAccess). */
  users?: NatsUser[];
  /** TLS on the client port (see NatsServerAccess). */
  tls?: NatsServerTls;
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
  writeSecretFile(configFile, natsServerConfig(options.credentials, options));
  const attemptsMax = options.port === undefined ? LIMITS.devServerStartAttemptsMax : 1;
  let lastError: Error | undefined;
  for (let attempt = 1; attempt <= attemptsMax; attempt++) {
    const port = options.port ?? (await freePort(HOST));
    const args = ['-c', configFile, '-js', '-sd', storeDirectory, '-p', String(port), '-a', HOST];
    const server = spawnManaged(binaryPath, args, { logFile: options.logFile });
    const url = `nats://${HOST}:${port}`;
    try {
      await waitForNats(url, server, options);
      return { url, port, pid: server.pid, process: server.process, stop: server.stop };
    } catch (error) {
      await server.stop();
      lastError = error as Error;
    }
  }
  throw lastError;
}

/**
 * The config file of a single nats-server: the larger payload, the `authorization` block of `access.users`
 * (else of `credentials` alone), and the `tls` block of `access.tls`. Passwords are in it: the file is
 * written 0600, and passed with `-c` so no argument shows a secret.
 */
export function natsServerConfig(credentials?: NatsCredentials, access: Omit<NatsServerAccess, 'credentials'> = {}): string {
  return [`max_payload: ${LIMITS.natsMaxPayloadBytes}`, ...natsClientAccessLines({ ...access, credentials }), ''].join('\n');
}

/** The lines of a nats-server config saying who may connect as a client, and over what (users or one user, TLS). */
export function natsClientAccessLines(access: Omit<NatsServerAccess, 'tls'> & { tls?: TlsFiles | undefined }): string[] {
  if (access.users && access.credentials && !access.users.some((user) => user.credentials.user === access.credentials!.user)) {
    throw new Error(`the launcher's NATS user '${access.credentials.user}' is not one of the server's users`);
  }
  const authorization = access.users ? natsUsersAuthorizationBlock(access.users) : access.credentials ? natsAuthorizationBlock(access.credentials) : [];
  const tls = access.tls ? ['tls {', `  cert_file: ${JSON.stringify(access.tls.certFile)}`, `  key_file: ${JSON.stringify(access.tls.keyFile)}`, '}'] : [];
  return [...authorization, ...tls];
}

/** The options of a nats.js `connect` of the launcher's own checks of a server with `access`. */
export function natsCheckOptions(access: NatsServerAccess): Pick<ConnectionOptions, 'user' | 'pass' | 'tls'> {
  return { ...natsAuthOptions(access.credentials), ...natsTlsOptions(access.tls ? { caFile: access.tls.caFile } : null) };
}

/**
 * Whether a NATS server accepts a connection with `options` (credentials, or none): 'connected' (the
 * connection is closed again at once), or the code of the NatsError that refused it ('AUTHORIZATION_VIOLATION'
 * for missing or wrong credentials). For checks of a secure cluster; it never retries.
 */
export async function natsConnectionOutcome(servers: string | string[], options: Pick<ConnectionOptions, 'user' | 'pass' | 'tls' | 'inboxPrefix'> = {}): Promise<string> {
  try {
    const connection = await connect({ servers, reconnect: false, timeout: LIMITS.natsMonitorRequestTimeoutMs, ...options });
    await connection.close();
    return 'connected';
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  }
}

/** Polls until a NATS client can connect (with the credentials and TLS of `access`), failing early when the server exits. */
async function waitForNats(url: string, server: ManagedProcess, access: NatsServerAccess): Promise<void> {
  const deadlineMs = Date.now() + LIMITS.devServerStartTimeoutMs;
  for (;;) {
    if (server.hasExited()) {
      throw new Error(`nats-server exited during start on ${url}: ${server.outputTail().trim()}`);
    }
    try {
      const connection = await connect({ servers: url, reconnect: false, timeout: LIMITS.devServerPollIntervalMs * 10, ...natsCheckOptions(access) });
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
