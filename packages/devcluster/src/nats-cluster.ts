import type { ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { join } from 'node:path';
import { connect } from 'nats';
import { LIMITS, sleep, type NatsCredentials } from '@mink/config';
import { spawnManaged, type ManagedProcess } from './managed-process';
import { findNatsServer, natsCheckOptions, natsClientAccessLines, type NatsServerTls } from './nats-server';
import { freePort } from './ports';
import { natsAuthorizationBlock, writeSecretFile, type NatsUser } from './secrets';

/**
 * A JetStream cluster of nats-servers on this machine, for `mink up --nats-cluster` and fault tests. Each
 * server has a name (`server_name`, 'nats-1', …), its own store folder, and three loopback ports: clients,
 * cluster routes and monitoring (`/jsz`, where the JetStream meta leader is read). Ports and folders stay
 * the same across restarts of a server, so a restarted server rejoins the cluster with the data it had.
 */

const HOST = '127.0.0.1';

/** The name every local JetStream cluster has (the `cluster { name }` of its servers). */
export const LOCAL_NATS_CLUSTER_NAME = 'mink';

/** Everything needed to start (and restart) one server of a cluster; it never changes after the first start. */
export interface NatsClusterNodeSpec {
  /** `server_name`, also the JetStream peer name: 'nats-1', 'nats-2', … */
  name: string;
  /** The cluster's name; the same for every server of one cluster. */
  clusterName: string;
  /** Folder of this server: its config file and its JetStream store (`<folder>/jetstream`). */
  folder: string;
  ports: { client: number; cluster: number; monitor: number };
  /** Cluster ports of the other servers of the cluster. */
  routes: number[];
  logFile?: string;
  binaryPath?: string;
  /**
   * The user and password of the launcher's own checks; alone, the one client user, allowed everything, and
   * the routes' credentials too (unless `routeCredentials`); absent: none asked for.
   */
  credentials?: NatsCredentials;
  /** The client users, each with its permissions; `credentials` must be one of them. */
  users?: NatsUser[];
  /** What the servers' routes give each other (a `cluster { authorization }` block); `credentials` when absent. */
  routeCredentials?: NatsCredentials;
  /** TLS on the client port (routes and monitoring stay plain, on loopback). */
  tls?: NatsServerTls;
}

/** One running server of a cluster. */
export interface NatsClusterNodeHandle {
  spec: NatsClusterNodeSpec;
  url: string;
  pid: number;
  process: ChildProcess;
  /** Resolves with the exit code (null when killed by a signal) once the server has exited. */
  exited: Promise<number | null>;
  hasExited(): boolean;
  /** SIGTERM, then SIGKILL if the server has not exited within `LIMITS.devServerStopTimeoutMs`. */
  stop(): Promise<void>;
}

export interface NatsClusterOptions {
  /** Each server keeps its files in `<dataDir>/<name>`; reuse the folder to keep streams across restarts. */
  dataDir: string;
  /** Servers in the cluster: an odd number from 3 to `LIMITS.localNatsServersMax` (a quorum of a majority needs 3). */
  size: number;
  /** Each server's output is appended to `<logDir>/<name>.log`; kept in memory only when absent. */
  logDir?: string;
  /** The nats-server binary; found on PATH or in /usr/sbin when absent. */
  binaryPath?: string;
  /** The cluster's name (default `LOCAL_NATS_CLUSTER_NAME`). */
  clusterName?: string;
  /** The user and password of clients and routes (see `NatsClusterNodeSpec.credentials`). */
  credentials?: NatsCredentials;
  /** See `NatsClusterNodeSpec.users`, `routeCredentials` and `tls`. */
  users?: NatsUser[];
  routeCredentials?: NatsCredentials;
  tls?: NatsServerTls;
}

/** A running cluster: its servers in name order and the URLs a client is given (all of them). */
export interface NatsClusterHandle {
  readonly urls: string[];
  /** The current incarnation of each server, in name order. */
  nodes(): NatsClusterNodeHandle[];
  node(name: string): NatsClusterNodeHandle;
  /** Stops the server if it still runs, starts it again on the same ports and store, and resolves once JetStream answers through it. */
  restart(name: string): Promise<NatsClusterNodeHandle>;
  /** The server_name of the current JetStream meta leader by `/jsz` of any running server; null while none is elected. */
  metaLeader(): Promise<string | null>;
  /** Stops every server. */
  stop(): Promise<void>;
}

/** The names of the servers of a cluster of `size`: 'nats-1' to 'nats-<size>'. */
export function natsServerNames(size: number): string[] {
  return Array.from({ length: size }, (_, index) => `nats-${index + 1}`);
}

/** Refuses a cluster size JetStream cannot run with a majority quorum: 1 (not a cluster), an even count, or more than the bound. */
export function checkNatsClusterSize(size: number): void {
  if (!Number.isInteger(size) || size < 3 || size > LIMITS.localNatsServersMax || size % 2 === 0) {
    throw new Error(`a NATS cluster has an odd number of servers from 3 to ${LIMITS.localNatsServersMax}, not ${size}`);
  }
}

/**
 * The nats-server configuration of one server of a cluster: loopback ports, JetStream store, routes to the
 * others. With credentials, clients and routes both need them (the routes carry them in their URLs), so the
 * file holds the password: it is written 0600.
 */
export function natsClusterConfig(spec: NatsClusterNodeSpec): string {
  const routeCredentials = spec.routeCredentials ?? spec.credentials;
  const routeUser = routeCredentials ? `${routeCredentials.user}:${routeCredentials.password}@` : '';
  const routes = spec.routes.map((port) => JSON.stringify(`nats-route://${routeUser}${HOST}:${port}`)).join(', ');
  return [
    `server_name: ${JSON.stringify(spec.name)}`,
    `listen: "${HOST}:${spec.ports.client}"`,
    `http: "${HOST}:${spec.ports.monitor}"`,
    // Larger messages than NATS' default 1 MiB let a scan page carry more records per round trip.
    `max_payload: ${LIMITS.natsMaxPayloadBytes}`,
    ...natsClientAccessLines(spec),
    'jetstream {',
    `  store_dir: ${JSON.stringify(join(spec.folder, 'jetstream'))}`,
    '}',
    'cluster {',
    `  name: ${JSON.stringify(spec.clusterName)}`,
    `  listen: "${HOST}:${spec.ports.cluster}"`,
    ...(routeCredentials ? natsAuthorizationBlock(routeCredentials, '  ') : []),
    `  routes: [${routes}]`,
    '}',
    '',
  ].join('\n');
}

/** Picks three free loopback ports for each of `names` (not reserved: see `freePort`). */
async function pickSpecs(options: NatsClusterOptions): Promise<NatsClusterNodeSpec[]> {
  const names = natsServerNames(options.size);
  const ports: NatsClusterNodeSpec['ports'][] = [];
  const taken = new Set<number>();
  const pick = async (): Promise<number> => {
    for (;;) {
      const port = await freePort(HOST);
      if (!taken.has(port)) {
        taken.add(port);
        return port;
      }
    }
  };
  for (let index = 0; index < names.length; index++) ports.push({ client: await pick(), cluster: await pick(), monitor: await pick() });
  return names.map((name, index) => ({
    name,
    clusterName: options.clusterName ?? LOCAL_NATS_CLUSTER_NAME,
    folder: join(options.dataDir, name),
    ports: ports[index]!,
    routes: ports.filter((_, other) => other !== index).map((otherPorts) => otherPorts.cluster),
    logFile: options.logDir === undefined ? undefined : join(options.logDir, `${name}.log`),
    binaryPath: options.binaryPath,
    credentials: options.credentials,
    users: options.users,
    routeCredentials: options.routeCredentials,
    tls: options.tls,
  }));
}

/**
 * Starts one server of a cluster and resolves once it accepts NATS connections. JetStream is not
 * necessarily ready then (it needs a quorum of the cluster): see `waitForJetStream`.
 */
export async function startNatsClusterNode(spec: NatsClusterNodeSpec): Promise<NatsClusterNodeHandle> {
  const binaryPath = spec.binaryPath ?? findNatsServer();
  mkdirSync(join(spec.folder, 'jetstream'), { recursive: true });
  const configFile = join(spec.folder, 'nats-server.conf');
  writeSecretFile(configFile, natsClusterConfig(spec));
  const server = spawnManaged(binaryPath, ['-c', configFile], { logFile: spec.logFile });
  const url = `nats://${HOST}:${spec.ports.client}`;
  try {
    await waitForConnection(url, server, spec);
  } catch (error) {
    await server.stop();
    throw error;
  }
  return {
    spec,
    url,
    pid: server.pid,
    process: server.process,
    exited: server.exited,
    hasExited: server.hasExited,
    stop: server.stop,
  };
}

/**
 * Starts `size` clustered nats-servers with JetStream and resolves once JetStream answers (a meta leader is
 * elected and every server has joined). When a server fails to start (a picked port was taken meanwhile)
 * the whole cluster is stopped and started again on other ports, up to `LIMITS.devServerStartAttemptsMax` times.
 */
export async function startNatsCluster(options: NatsClusterOptions): Promise<NatsClusterHandle> {
  checkNatsClusterSize(options.size);
  let lastError: Error | undefined;
  for (let attempt = 1; attempt <= LIMITS.devServerStartAttemptsMax; attempt++) {
    const specs = await pickSpecs(options);
    const started = await Promise.allSettled(specs.map((spec) => startNatsClusterNode(spec)));
    const nodes = started.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
    const failure = started.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
    try {
      if (failure) throw failure.reason as Error;
      await waitForJetStream(nodes, LIMITS.natsJetStreamReadyTimeoutMs);
      return clusterHandle(nodes);
    } catch (error) {
      await Promise.all(nodes.map((node) => node.stop()));
      lastError = error as Error;
    }
  }
  throw lastError;
}

function clusterHandle(initial: NatsClusterNodeHandle[]): NatsClusterHandle {
  const current = new Map(initial.map((node) => [node.spec.name, node]));
  const node = (name: string): NatsClusterNodeHandle => {
    const found = current.get(name);
    if (!found) throw new Error(`the NATS cluster has no server ${name}`);
    return found;
  };
  return {
    urls: initial.map((entry) => entry.url),
    nodes: () => [...current.values()],
    node,
    restart: async (name) => {
      const previous = node(name);
      await previous.stop();
      const restarted = await startNatsClusterNode(previous.spec);
      current.set(name, restarted);
      try {
        await waitForJetStream([restarted], LIMITS.natsJetStreamReadyTimeoutMs);
      } catch (error) {
        await restarted.stop();
        throw error;
      }
      return restarted;
    },
    metaLeader: () => natsMetaLeader([...current.values()].filter((entry) => !entry.hasExited()).map((entry) => entry.spec.ports.monitor)),
    stop: async () => {
      await Promise.all([...current.values()].map((entry) => entry.stop()));
    },
  };
}

/** What `/jsz` of a clustered server says about the JetStream meta group (the part mink reads). */
interface JszAnswer {
  meta_cluster?: { name?: string; leader?: string; cluster_size?: number };
}

/**
 * The server_name of the JetStream meta leader, as `/jsz` of the first server among `monitorPorts` that
 * answers and knows one; null when none does (no quorum yet, or every server is down).
 */
export async function natsMetaLeader(monitorPorts: number[]): Promise<string | null> {
  for (const port of monitorPorts) {
    const answer = await jsz(port);
    const leader = answer?.meta_cluster?.leader;
    if (leader) return leader;
  }
  return null;
}

/**
 * Resolves once JetStream answers through each of `nodes`: its `/jsz` names a meta leader and an account
 * info request on a connection to that server alone succeeds (the meta leader answers it). Fails early when
 * a server exits, and after `timeoutMs`.
 */
export async function waitForJetStream(nodes: NatsClusterNodeHandle[], timeoutMs: number): Promise<void> {
  const deadlineMs = Date.now() + timeoutMs;
  await Promise.all(
    nodes.map(async (node) => {
      let lastProblem = 'no answer yet';
      for (;;) {
        if (node.hasExited()) throw new Error(`nats-server ${node.spec.name} exited while JetStream was starting`);
        const problem = await jetStreamProblem(node);
        if (problem === null) return;
        lastProblem = problem;
        if (Date.now() >= deadlineMs) {
          throw new Error(`JetStream did not answer through nats-server ${node.spec.name} (${node.url}) within ${timeoutMs} ms: ${lastProblem}`);
        }
        await sleep(LIMITS.readinessPollIntervalMs);
      }
    }),
  );
}

/** Null when JetStream answers through `node`, else what is missing. */
async function jetStreamProblem(node: NatsClusterNodeHandle): Promise<string | null> {
  const answer = await jsz(node.spec.ports.monitor);
  if (!answer?.meta_cluster?.leader) return 'no JetStream meta leader known to it';
  let connection;
  try {
    connection = await connect({ servers: node.url, reconnect: false, timeout: LIMITS.natsMonitorRequestTimeoutMs, ...natsCheckOptions(node.spec) });
  } catch (error) {
    return `no connection: ${(error as Error).message}`;
  }
  try {
    const manager = await connection.jetstreamManager({ timeout: LIMITS.natsMonitorRequestTimeoutMs });
    await manager.getAccountInfo();
    return null;
  } catch (error) {
    return `account info failed: ${(error as Error).message}`;
  } finally {
    await connection.close().catch(() => undefined);
  }
}

/** `/jsz` of the server monitored on `port`, or null when it does not answer in time. Never keeps a connection open. */
function jsz(port: number): Promise<JszAnswer | null> {
  return new Promise((resolveAnswer) => {
    const request = httpGet(`http://${HOST}:${port}/jsz`, { agent: false, timeout: LIMITS.natsMonitorRequestTimeoutMs }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        body += chunk;
      });
      response.on('end', () => {
        try {
          resolveAnswer(response.statusCode === 200 ? (JSON.parse(body) as JszAnswer) : null);
        } catch {
          resolveAnswer(null);
        }
      });
      response.on('error', () => resolveAnswer(null));
    });
    request.on('timeout', () => request.destroy());
    request.on('error', () => resolveAnswer(null));
  });
}

/** Polls until a NATS client can connect (with the spec's credentials), failing early when the server exits. */
async function waitForConnection(url: string, server: ManagedProcess, spec: NatsClusterNodeSpec): Promise<void> {
  const { name } = spec;
  const deadlineMs = Date.now() + LIMITS.devServerStartTimeoutMs;
  for (;;) {
    if (server.hasExited()) {
      throw new Error(`nats-server ${name} exited during start on ${url}: ${server.outputTail().trim()}`);
    }
    try {
      const connection = await connect({ servers: url, reconnect: false, timeout: LIMITS.devServerPollIntervalMs * 10, ...natsCheckOptions(spec) });
      await connection.close();
      return;
    } catch {
      if (Date.now() >= deadlineMs) {
        throw new Error(`nats-server ${name} did not accept connections on ${url} within ${LIMITS.devServerStartTimeoutMs} ms`);
      }
      await sleep(LIMITS.devServerPollIntervalMs);
    }
  }
}
