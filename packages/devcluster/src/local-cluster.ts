import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { get as httpGet, type IncomingMessage } from 'node:http';
import { get as httpsGet } from 'node:https';
import { dirname, join, resolve } from 'node:path';
import { DEFAULTS, ENV, LIMITS, sleep, type NatsCredentials, type TlsFiles } from '@mink/config';
import { checkNatsClusterSize, natsMetaLeader, startNatsCluster, startNatsClusterNode, waitForJetStream, type NatsClusterNodeSpec } from './nats-cluster';
import { startNatsServer, type NatsServerAccess, type NatsServerTls } from './nats-server';
import { NATS_IDENTITIES, natsPermissionsOf, type NatsIdentity } from './nats-permissions';
import { freePort, reservePorts } from './ports';
import type { S3Latency } from './s3-latency';
import { startS3Server } from './s3-server';
import { ensureClusterSecrets, type ClusterSecrets } from './secrets';

/** The mink apps, each built to `apps/<role>/dist/main.js`. */
export type ServiceRole = 'coordinator' | 'data-node' | 'gateway' | 'tiering-worker';

/** The servers mink depends on: one S3 server, and one nats-server or a JetStream cluster of them (`natsCluster`). */
export type ServerRole = 'nats' | 's3';

export type ClusterRole = ServerRole | ServiceRole;

/** Every role in start order, which is also the order of `processes()` and of cluster.json. */
export const CLUSTER_ROLES: readonly ClusterRole[] = ['nats', 's3', 'coordinator', 'data-node', 'gateway', 'tiering-worker'];

export const SERVICE_ROLES: readonly ServiceRole[] = ['coordinator', 'data-node', 'gateway', 'tiering-worker'];

/** The name of the file, in the data dir, that lists the processes of a running local cluster. */
export const CLUSTER_FILE_NAME = 'cluster.json';

/**
 * One process of a local cluster, as `processes()` returns it and as cluster.json stores it.
 *
 * - `nodeId` is the process's MINK_NODE_ID: "1", "2", … for data nodes, "coordinator-1", …, "gateway-1"
 *   and "tiering-1". It is null for `s3` and for a single `nats` (they have no mink identity); the servers
 *   of a NATS cluster are "nats-1", "nats-2", … (their `server_name`).
 * - `pid` belongs to the current incarnation; it stays after that incarnation exits (with `running`
 *   false) so a caller can tell which process died, and changes when `restart` starts a new one.
 * - `ports`: `{client}` for a single nats, `{client, cluster, monitor}` for a server of a NATS cluster,
 *   `{http}` for s3 and every service, plus `{kafka}` for data nodes and `{grpc}` for the gateway.
 */
export interface ClusterProcessInfo {
  role: ClusterRole;
  nodeId: string | null;
  pid: number;
  ports: Record<string, number>;
  running: boolean;
  /** The file the process's stdout and stderr are appended to. */
  logFile: string;
}

/** How a process ended: an exit code, or the signal that killed it. */
export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** The content of `${dataDir}/cluster.json`. */
export interface ClusterFile {
  processes: { role: ClusterRole; nodeId: string | null; pid: number; ports: Record<string, number>; running: boolean; log: string }[];
  /** `natsTlsCaFile`: the CA a NATS client trusts, when the servers speak TLS (`natsTls`). */
  endpoints: { gateway: string; nats: string; natsTlsCaFile?: string; s3: string; s3Bucket: string };
  /**
   * Of a secure cluster only: the files holding its secrets (never the secrets themselves): the outside
   * clients' NATS credentials as `MINK_NATS_USER`/`MINK_NATS_PASSWORD` lines (`nats-client.env`), the gateway's admin token (null when the
   * gateway was given a tokens file of its own), and the token every service's `/metrics` asks for (a
   * scraper's `Authorization: Bearer`).
   */
  secrets?: { natsEnvFile: string; adminTokenFile: string | null; metricsTokenFile: string };
}

export interface LocalClusterOptions {
  /** Everything the cluster keeps lives here: NATS JetStream files, S3 objects, logs and cluster.json. */
  dataDir: string;
  /** Data nodes, with ids "1" to "nodes" (default `DEFAULTS.nodes`). */
  nodes?: number;
  /** Coordinator replicas, with ids "coordinator-1", … (default `DEFAULTS.coordinators`). */
  coordinators?: number;
  /** Tiering workers, with ids "tiering-1", … (default 1). */
  tieringWorkers?: number;
  /** HTTP port of the gateway (default `DEFAULTS.gatewayPort`); 0 picks a free port. */
  gatewayPort?: number;
  /**
   * Address the gateway binds (`MINK_HTTP_BIND_HOST`); every other service, and the gateway by default,
   * listens on 127.0.0.1 only, so a local cluster is reachable from this machine alone unless told otherwise.
   */
  gatewayBindHost?: string;
  /**
   * gRPC port of the gateway (`MINK_GRPC_PORT`, bound on the gateway's address); a free one when absent or 0,
   * so that clusters of tests never meet on one port (`mink up` passes `DEFAULTS.grpcPort`).
   */
  grpcPort?: number;
  /** Kafka port of data node 1; node n gets this plus n - 1 (default `DEFAULTS.kafkaPort`); 0 picks free ports. */
  kafkaPort?: number;
  leaseTtlMs?: number;
  coordinatorTickMs?: number;
  /** Client port of the single nats-server; a free one when absent or 0 (never the shared 4222 by default). Not with `natsCluster` above 1. */
  natsPort?: number;
  /**
   * nats-servers (default 1). 1 is one embedded server (role 'nats', nodeId null). 3 or 5 start a JetStream
   * cluster (role 'nats', nodeIds 'nats-1', …, every port free and loopback only); services then get every
   * URL in MINK_NATS_URL and MINK_META_REPLICAS = this count, so the metadata log and the KV buckets survive
   * the loss of a minority of servers. Even counts are refused: they tolerate no more failures than one fewer.
   */
  natsCluster?: number;
  /** Port of the S3 server; a free one when absent or 0. */
  s3Port?: number;
  /**
   * A secure cluster (`mink up --secure`): every nats-server asks for a user and password, one identity per
   * service role, one for outside clients and one (`admin`) for this cluster's own checks, each allowed only
   * the subjects it needs (natsPermissionsOf); every service gets its role's by environment (`MINK_NATS_USER`,
   * `MINK_NATS_PASSWORD`), the gateway asks for bearer tokens from
   * a generated tokens file holding one admin token (unless `env` names a tokens file of its own), the data
   * nodes' internal routes ask for a generated cluster secret (`MINK_CLUSTER_SECRET_FILE`, which the data
   * nodes and the gateway get) and every service's `/metrics` for a generated token
   * (`MINK_METRICS_TOKEN_FILE`). The services get the paths of the secret files, never a secret. The secrets
   * live in 0600 files under `<dataDir>/secrets/` (see ClusterSecrets) and are reused by the next secure start.
   */
  secure?: boolean;
  /** The gateway's certificate and key (`MINK_TLS_CERT_FILE`, `MINK_TLS_KEY_FILE`): it then serves HTTPS and gRPC over TLS. */
  tls?: TlsFiles;
  /**
   * TLS on every nats-server's client port (its certificate and key), and the CA that signed the certificate:
   * every service then gets `MINK_NATS_TLS_CA_FILE` and speaks TLS to NATS; a client needs the CA too.
   */
  natsTls?: NatsServerTls;
  /** A first-byte latency the S3 server adds to every answer, standing in for a cloud object store (`pnpm bench --s3-latency`). */
  s3Latency?: S3Latency;
  /** The monorepo root holding `apps/`; found by walking up from this file to pnpm-workspace.yaml. */
  repoRoot?: string;
  /** Where each process's output is appended (default `${dataDir}/logs`). */
  logDir?: string;
  /** MINK_LOG_LEVEL of every service (default 'info'). */
  /**
   * When set, every service runs under `node --cpu-prof` and writes a V8 CPU profile
   * (`*.cpuprofile`, readable by Chrome DevTools or speedscope) into this folder when it exits cleanly.
   */
  cpuProfileDir?: string;
  logLevel?: string;
  /** Extra environment for every service, applied last; an undefined value removes a variable. */
  env?: Record<string, string | undefined>;
  /** Receives one line per event: a process ready, a process exited. */
  logger?: (line: string) => void;
  /** How long one service may take to answer 200 on /readyz (default `LIMITS.serviceReadyTimeoutMs`). */
  readyTimeoutMs?: number;
  /** Aborting it makes a start in progress stop what it started and reject. */
  signal?: AbortSignal;
}

/** A process of the cluster as the cluster tracks it, across restarts. */
interface TrackedProcess {
  readonly role: ClusterRole;
  readonly nodeId: string | null;
  readonly ports: Record<string, number>;
  readonly logFile: string;
  /** The environment a service is started with; kept so a restart is the same process again (unless the restart changes it). */
  env: NodeJS.ProcessEnv | null;
  pid: number;
  child: ChildProcess;
  /** The launcher's stop, for nats and s3 (it also drains their piped output). */
  stopServer: (() => Promise<void>) | null;
  /** How a server of a NATS cluster is started again: same name, ports and store. */
  natsSpec?: NatsClusterNodeSpec;
  exitStatus: ExitStatus | null;
  exited: Promise<ExitStatus>;
}

interface ResolvedOptions {
  dataDir: string;
  nodes: number;
  coordinators: number;
  tieringWorkers: number;
  gatewayPort: number;
  gatewayBindHost: string;
  grpcPort: number;
  kafkaPort: number;
  leaseTtlMs: number;
  coordinatorTickMs: number;
  natsPort: number | undefined;
  natsCluster: number;
  s3Port: number | undefined;
  secure: boolean;
  tls: TlsFiles | undefined;
  natsTls: NatsServerTls | undefined;
  s3Latency: S3Latency | undefined;
  repoRoot: string;
  logDir: string;
  logLevel: string;
  cpuProfileDir: string | undefined;
  env: Record<string, string | undefined>;
  logger: (line: string) => void;
  readyTimeoutMs: number;
  signal: AbortSignal | undefined;
}

const LOOPBACK_HOST = '127.0.0.1';
/** s3rver accepts only its built-in credentials. */
const S3_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

/**
 * A whole mink cluster of real OS processes on this machine, for `mink up` and end-to-end tests:
 * nats-server, an S3 server, coordinators, data nodes, a gateway and a tiering worker.
 *
 * Ordering: `start` brings processes up in that order and waits until each group answers 200 on /readyz
 * before it starts the next, because each later role needs the earlier ones to become ready. A process
 * that dies is logged and left dead: the cluster never restarts anything by itself, since fault tests
 * kill processes on purpose. Every child is killed when this Node process exits, however it exits
 * short of SIGKILL.
 */
export class LocalCluster {
  private readonly tracked: TrackedProcess[] = [];
  private stopping = false;
  private stopPromise: Promise<void> | null = null;
  private natsUrlsValue: string[] = [];
  private s3EndpointValue = '';
  private secrets: ClusterSecrets | null = null;
  private readonly killAllOnExit = (): void => {
    for (const entry of this.tracked) {
      if (entry.exitStatus === null) signalQuietly(entry.pid, 'SIGKILL');
    }
  };

  private constructor(private readonly options: ResolvedOptions) {
    process.on('exit', this.killAllOnExit);
    reservePorts(fixedPortsOf(options));
  }

  /** Starts every process and resolves once all are ready; on failure stops what it started and rejects. */
  static async start(options: LocalClusterOptions): Promise<LocalCluster> {
    const cluster = new LocalCluster(resolveOptions(options));
    try {
      await cluster.startAll();
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    return cluster;
  }

  /** `http://127.0.0.1:<port>`, or `https://…` when the gateway was given a certificate (`tls`). */
  get gatewayUrl(): string {
    return this.gatewayUrlOf(this.find('gateway', 'gateway-1'));
  }

  private gatewayUrlOf(gateway: TrackedProcess): string {
    return `${this.options.tls ? 'https' : 'http'}://${LOOPBACK_HOST}:${gateway.ports.http}`;
  }

  /**
   * The NATS user and password of outside clients of a secure cluster (the `client` identity: what a
   * MinkClient, the CLI or an application connects with), null otherwise. The services have identities of
   * their own (`natsCredentialsOf`).
   */
  get natsCredentials(): NatsCredentials | null {
    return this.secrets?.natsCredentials ?? null;
  }

  /** The NATS user and password of `identity` in a secure cluster (what a service of that role gets), null otherwise. */
  natsCredentialsOf(identity: NatsIdentity): NatsCredentials | null {
    return this.secrets?.natsIdentities[identity].credentials ?? null;
  }

  /** Of a secure cluster: the 0600 file of the client identity's `MINK_NATS_USER`/`MINK_NATS_PASSWORD` lines (`nats-client.env`); null otherwise. */
  get natsEnvFile(): string | null {
    return this.secrets?.natsEnvFile ?? null;
  }

  /** The CA file a NATS client trusts when the servers speak TLS (`natsTls`), null otherwise. */
  get natsTlsCaFile(): string | null {
    return this.options.natsTls?.caFile ?? null;
  }

  /** Of a secure cluster whose gateway uses the generated tokens file: the 0600 file holding the admin token; null otherwise. */
  get adminTokenFile(): string | null {
    return this.secrets !== null && this.options.env[ENV.authTokensFile] === undefined ? this.secrets.adminTokenFile : null;
  }

  /** Of a secure cluster: the 0600 file holding the token every service's `/metrics` asks for; null otherwise. */
  get metricsTokenFile(): string | null {
    return this.secrets?.metricsTokenFile ?? null;
  }

  /** Of a secure cluster: the 0600 file holding the cluster secret of the data nodes' internal routes; null otherwise. */
  get clusterSecretFile(): string | null {
    return this.secrets?.clusterSecretFile ?? null;
  }

  /** `host:port` of the gateway's gRPC listener. */
  get gatewayGrpcAddress(): string {
    return `${LOOPBACK_HOST}:${this.find('gateway', 'gateway-1').ports.grpc}`;
  }

  /**
   * What services get as MINK_NATS_URL: the one server's URL, or every server's URL of a NATS cluster
   * separated by commas. `MinkClient.connect({ servers })` takes it as it is; a bare nats.js `connect` needs
   * `natsUrls`.
   */
  get natsUrl(): string {
    return this.natsUrlsValue.join(',');
  }

  /** The URL of every nats-server, in name order. */
  get natsUrls(): string[] {
    return [...this.natsUrlsValue];
  }

  /** nats-servers of this cluster: 1, or the size of its JetStream cluster. */
  get natsServers(): number {
    return this.options.natsCluster;
  }

  /**
   * The server_name ('nats-1', …) of the current JetStream meta leader, read from `/jsz` of a running
   * server of the NATS cluster; null while none is elected, and always for a single nats-server.
   */
  natsMetaLeader(): Promise<string | null> {
    const monitorPorts = this.tracked.filter((entry) => entry.role === 'nats' && entry.exitStatus === null && entry.ports.monitor !== undefined).map((entry) => entry.ports.monitor!);
    return natsMetaLeader(monitorPorts);
  }

  get s3Endpoint(): string {
    return this.s3EndpointValue;
  }

  get s3Bucket(): string {
    return DEFAULTS.s3Bucket;
  }

  get dataDir(): string {
    return this.options.dataDir;
  }

  get logDir(): string {
    return this.options.logDir;
  }

  get clusterFile(): string {
    return join(this.options.dataDir, CLUSTER_FILE_NAME);
  }

  /** Every process started so far, in start order, including those that have exited. */
  processes(): ClusterProcessInfo[] {
    return this.tracked.map(describe);
  }

  /** One process; `nodeId` is omitted (or null) for s3 and a single nats ('nats-1', … in a NATS cluster). Throws for a process the cluster does not have. */
  process(role: ClusterRole, nodeId: string | null = null): ClusterProcessInfo {
    return describe(this.find(role, nodeId));
  }

  /** Sends a signal to the current incarnation; does nothing when it has already exited. */
  kill(role: ClusterRole, nodeId: string | null = null, signal: NodeJS.Signals = 'SIGKILL'): void {
    const entry = this.find(role, nodeId);
    if (entry.exitStatus === null) signalQuietly(entry.pid, signal);
  }

  /** Freezes the process (SIGSTOP): it holds its sockets and leases but does nothing until `resume`. */
  pause(role: ClusterRole, nodeId: string | null = null): void {
    this.kill(role, nodeId, 'SIGSTOP');
  }

  resume(role: ClusterRole, nodeId: string | null = null): void {
    this.kill(role, nodeId, 'SIGCONT');
  }

  /** Resolves when the current incarnation has exited (at once if it already has). */
  waitForExit(role: ClusterRole, nodeId: string | null = null): Promise<ExitStatus> {
    return this.find(role, nodeId).exited;
  }

  /**
   * Stops the process if it still runs (SIGTERM, then SIGKILL after `LIMITS.serviceStopTimeoutMs`), starts
   * it again with the same environment, data folder and ports, and resolves once it is ready. `env`
   * changes a service's environment from this start on (an undefined value removes a variable), e.g. a
   * test moving the clock a coordinator plans partitions with.
   */
  async restart(role: ClusterRole, nodeId: string | null = null, options: { env?: Record<string, string | undefined> } = {}): Promise<ClusterProcessInfo> {
    this.assertNotStopping();
    const entry = this.find(role, nodeId);
    await this.terminate(entry);
    if (options.env !== undefined && entry.env !== null) entry.env = withEnvChanges(entry.env, options.env);
    if (role === 'nats') {
      await this.launchNats(entry);
    } else if (role === 's3') {
      await this.launchS3(entry);
    } else {
      this.spawnService(entry);
      await this.waitReady(entry);
    }
    this.writeClusterFile();
    this.logReady(entry);
    return describe(entry);
  }

  /** Starts one more data node with the next free id and resolves once it is ready. */
  async addDataNode(): Promise<ClusterProcessInfo> {
    this.assertNotStopping();
    const ids = this.tracked.filter((entry) => entry.role === 'data-node').map((entry) => Number(entry.nodeId));
    const index = ids.length === 0 ? 0 : Math.max(...ids);
    const entry = await this.createService('data-node', String(index + 1), index);
    this.writeClusterFile();
    await this.waitReady(entry);
    this.logReady(entry);
    return describe(entry);
  }

  /**
   * Stops everything: SIGTERM to every service (SIGCONT too, so a paused one can act on it), SIGKILL to
   * those still running after `LIMITS.serviceStopTimeoutMs`; then nats-server and the S3 server the same
   * way. Services go first so they can leave cleanly while NATS and S3 are still there. Resolves when
   * every process has exited; calling it again returns the same promise.
   */
  stop(): Promise<void> {
    if (this.stopPromise) return this.stopPromise;
    this.stopping = true;
    this.stopPromise = (async () => {
      const services = this.tracked.filter((entry) => entry.role !== 'nats' && entry.role !== 's3');
      await Promise.all(services.map((entry) => this.terminate(entry)));
      const servers = this.tracked.filter((entry) => entry.role === 'nats' || entry.role === 's3');
      await Promise.all(servers.map((entry) => this.terminate(entry)));
      if (this.tracked.length > 0) this.writeClusterFile();
      process.removeListener('exit', this.killAllOnExit);
    })();
    return this.stopPromise;
  }

  private async startAll(): Promise<void> {
    const { options } = this;
    for (const role of SERVICE_ROLES) assertBuilt(options.repoRoot, role);
    assertNoClusterRunning(options.dataDir);
    assertSameNatsLayout(options.dataDir, options.natsCluster);
    mkdirSync(options.logDir, { recursive: true });
    if (options.secure) this.secrets = ensureClusterSecrets(options.dataDir);

    if (options.natsCluster === 1) {
      const nats = await this.startServer('nats', (entry) => this.launchNats(entry));
      this.logReady(nats);
    } else {
      await this.startNatsCluster();
    }
    this.throwIfAborted();
    const s3 = await this.startServer('s3', (entry) => this.launchS3(entry));
    this.logReady(s3);

    // The coordinators first: a data node that restarts asks the lease holder to lead its buckets again.
    // The others together: each loads the metadata view on its own, and on a cluster of 100 000 buckets
    // the gateway and the tiering worker loading it one after the other behind the data nodes was a
    // third of a restart.
    await this.startGroup([['coordinator', range(options.coordinators).map((index) => `coordinator-${index + 1}`)]]);
    await this.startGroup([
      ['data-node', range(options.nodes).map((index) => String(index + 1))],
      ['gateway', ['gateway-1']],
      ['tiering-worker', range(options.tieringWorkers).map((index) => `tiering-${index + 1}`)],
    ]);
  }

  /** Starts nats or s3 through its launcher; the entry is tracked (and so stopped) once it runs. */
  private async startServer(role: ServerRole, launch: (entry: TrackedProcess) => Promise<void>): Promise<TrackedProcess> {
    const portName = role === 'nats' ? 'client' : 'http';
    const requested = role === 'nats' ? this.options.natsPort : this.options.s3Port;
    const entry: TrackedProcess = {
      role,
      nodeId: null,
      ports: { [portName]: requested ?? 0 },
      logFile: join(this.options.logDir, logFileName(role, null)),
      env: null,
      pid: 0,
      child: undefined as unknown as ChildProcess,
      stopServer: null,
      exitStatus: { code: null, signal: null },
      exited: Promise.resolve({ code: null, signal: null }),
    };
    await launch(entry);
    this.tracked.push(entry);
    this.writeClusterFile();
    return entry;
  }

  /** Starts the servers of a NATS cluster together (they need each other for a JetStream quorum) and tracks each. */
  private async startNatsCluster(): Promise<void> {
    const { options } = this;
    const handle = await startNatsCluster({
      dataDir: join(options.dataDir, 'nats'),
      size: options.natsCluster,
      logDir: options.logDir,
      ...this.natsServerAccess(),
      routeCredentials: this.secrets?.natsRouteCredentials,
    });
    const entries: TrackedProcess[] = handle.nodes().map((node) => ({
      role: 'nats',
      nodeId: node.spec.name,
      ports: { ...node.spec.ports },
      logFile: node.spec.logFile ?? join(options.logDir, logFileName('nats', node.spec.name)),
      env: null,
      pid: 0,
      child: undefined as unknown as ChildProcess,
      stopServer: node.stop,
      natsSpec: node.spec,
      exitStatus: { code: null, signal: null },
      exited: Promise.resolve({ code: null, signal: null }),
    }));
    handle.nodes().forEach((node, index) => this.track(entries[index]!, node.process));
    this.tracked.push(...entries);
    this.natsUrlsValue = [...handle.urls];
    this.writeClusterFile();
    for (const entry of entries) this.logReady(entry);
  }

  private async launchNats(entry: TrackedProcess): Promise<void> {
    if (entry.natsSpec) {
      // A server of a NATS cluster: same name, ports and store, so it rejoins the cluster with what it held.
      const node = await startNatsClusterNode(entry.natsSpec);
      entry.stopServer = node.stop;
      this.track(entry, node.process);
      await waitForJetStream([node], LIMITS.natsJetStreamReadyTimeoutMs);
      return;
    }
    const requested = entry.ports.client === 0 ? undefined : entry.ports.client;
    const handle = await startNatsServer({
      dataDir: join(this.options.dataDir, 'nats'),
      port: requested,
      logFile: entry.logFile,
      ...this.natsServerAccess(),
    });
    // Later restarts reuse the port, so services that keep reconnecting to this URL find the server again.
    entry.ports.client = handle.port;
    this.natsUrlsValue = [handle.url];
    entry.stopServer = handle.stop;
    this.track(entry, handle.process);
  }

  /**
   * Who the nats-servers accept: nobody in particular for an open cluster; for a secure one every identity
   * with its permissions, the launcher checking with `admin`. TLS when asked for.
   */
  private natsServerAccess(): NatsServerAccess {
    const { secrets } = this;
    const metaStream = this.options.env[ENV.metaStream] ?? DEFAULTS.metaStream;
    const access: NatsServerAccess = { tls: this.options.natsTls };
    if (secrets === null) return access;
    return {
      ...access,
      credentials: secrets.natsIdentities.admin.credentials,
      users: NATS_IDENTITIES.map((identity) => ({ credentials: secrets.natsIdentities[identity].credentials, permissions: natsPermissionsOf(identity, metaStream) })),
    };
  }

  private async launchS3(entry: TrackedProcess): Promise<void> {
    const requested = entry.ports.http === 0 ? undefined : entry.ports.http;
    const handle = await startS3Server({
      dataDir: join(this.options.dataDir, 's3'),
      port: requested,
      bucket: DEFAULTS.s3Bucket,
      logFile: entry.logFile,
      latency: this.options.s3Latency,
    });
    entry.ports.http = handle.port;
    this.s3EndpointValue = handle.endpoint;
    entry.stopServer = handle.stop;
    this.track(entry, handle.process);
  }

  /** Spawns every process of the roles given, then waits until all of them are ready. */
  private async startGroup(roles: [ServiceRole, string[]][]): Promise<void> {
    this.throwIfAborted();
    const entries: TrackedProcess[] = [];
    for (const [role, nodeIds] of roles) {
      for (const [index, nodeId] of nodeIds.entries()) entries.push(await this.createService(role, nodeId, index));
    }
    this.writeClusterFile();
    await Promise.all(
      entries.map(async (entry) => {
        await this.waitReady(entry);
        this.logReady(entry);
      }),
    );
  }

  /** Picks the ports of a new service, builds its environment, spawns it and tracks it. */
  private async createService(role: ServiceRole, nodeId: string, index: number): Promise<TrackedProcess> {
    const { options } = this;
    const ports: Record<string, number> = {};
    ports.http = role === 'gateway' && options.gatewayPort !== 0 ? options.gatewayPort : await freePort(LOOPBACK_HOST);
    if (role === 'data-node') ports.kafka = options.kafkaPort === 0 ? await freePort(LOOPBACK_HOST) : options.kafkaPort + index;
    if (role === 'gateway') ports.grpc = options.grpcPort === 0 ? await freePort(LOOPBACK_HOST) : options.grpcPort;
    const entry: TrackedProcess = {
      role,
      nodeId,
      ports,
      logFile: join(options.logDir, logFileName(role, nodeId)),
      env: this.serviceEnv(role, nodeId, ports),
      pid: 0,
      child: undefined as unknown as ChildProcess,
      stopServer: null,
      exitStatus: null,
      exited: Promise.resolve({ code: null, signal: null }),
    };
    this.spawnService(entry);
    this.tracked.push(entry);
    return entry;
  }

  private serviceEnv(role: ServiceRole, nodeId: string, ports: Record<string, number>): NodeJS.ProcessEnv {
    const { options } = this;
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      [ENV.natsUrl]: this.natsUrl,
      // One replica per server: the metadata log and the KV buckets then survive the loss of a minority of them.
      [ENV.metaReplicas]: String(options.natsCluster),
      [ENV.s3Endpoint]: this.s3EndpointValue,
      [ENV.s3Bucket]: DEFAULTS.s3Bucket,
      [ENV.s3AccessKeyId]: S3_CREDENTIALS.accessKeyId,
      [ENV.s3SecretAccessKey]: S3_CREDENTIALS.secretAccessKey,
      [ENV.nodeId]: nodeId,
      [ENV.leaseTtlMs]: String(options.leaseTtlMs),
      [ENV.coordinatorTickMs]: String(options.coordinatorTickMs),
      [ENV.httpPort]: String(ports.http),
      [ENV.advertisedHost]: LOOPBACK_HOST,
      // Loopback follows from the advertised host; said outright so that no inherited variable widens it.
      [ENV.httpBindHost]: role === 'gateway' ? options.gatewayBindHost : LOOPBACK_HOST,
      [ENV.kafkaBindHost]: LOOPBACK_HOST,
      [ENV.logLevel]: options.logLevel,
      // Each process gets a folder of its own for local state (a data node's KV tablets).
      [ENV.dataDir]: join(options.dataDir, 'local', nodeId),
    };
    if (ports.kafka !== undefined) env[ENV.kafkaPort] = String(ports.kafka);
    if (ports.grpc !== undefined) {
      env[ENV.grpcPort] = String(ports.grpc);
      env[ENV.grpcBindHost] = options.gatewayBindHost;
    }
    // Secrets go by environment, never as arguments (which `ps` shows to every user of the machine). Without
    // `secure`, none is passed on from this process's own environment either: the cluster is the open one.
    // Each service gets its role's NATS identity, allowed only what that role does (natsPermissionsOf).
    const credentials = this.natsCredentialsOf(role);
    env[ENV.natsUser] = credentials?.user;
    env[ENV.natsPassword] = credentials?.password;
    env[ENV.natsTlsCaFile] = options.natsTls?.caFile;
    env[ENV.natsTlsCertFile] = undefined;
    env[ENV.natsTlsKeyFile] = undefined;
    // The gateway's tokens guard its HTTP and gRPC APIs, and the data nodes' Kafka listeners (SASL) with the same scopes.
    if ((role === 'gateway' || role === 'data-node') && this.secrets) env[ENV.authTokensFile] = this.secrets.tokensFile;
    // The paths of the other secrets, never the secrets: the data nodes ask for the cluster secret on their
    // internal routes and the gateway sends it on its scans; every service asks for the metrics token.
    env[ENV.clusterSecretFile] = (role === 'data-node' || role === 'gateway') && this.secrets ? this.secrets.clusterSecretFile : undefined;
    env[ENV.metricsTokenFile] = this.secrets?.metricsTokenFile;
    // Only the gateway serves TLS; the others get no certificate variables at all.
    env[ENV.tlsCertFile] = role === 'gateway' ? options.tls?.certFile : undefined;
    env[ENV.tlsKeyFile] = role === 'gateway' ? options.tls?.keyFile : undefined;
    return withEnvChanges(removeUndefined(env), options.env);
  }

  private spawnService(entry: TrackedProcess): void {
    const mainPath = appMainPath(this.options.repoRoot, entry.role as ServiceRole);
    mkdirSync(dirname(entry.logFile), { recursive: true });
    // The child writes straight into its log file, so its output does not depend on this process
    // staying alive or draining a pipe.
    const logDescriptor = openSync(entry.logFile, 'a');
    let child: ChildProcess;
    try {
      // One profile per start of a process: a restarted service writes a second file instead of overwriting the first.
      const profileName = `${entry.role}-${entry.nodeId ?? entry.role}-${Date.now()}.cpuprofile`;
      const profile = this.options.cpuProfileDir ? ['--cpu-prof', `--cpu-prof-dir=${this.options.cpuProfileDir}`, `--cpu-prof-name=${profileName}`] : [];
      child = spawn(process.execPath, [...DEFAULTS.serviceNodeFlags, ...(DEFAULTS.roleNodeFlags[entry.role as ServiceRole] ?? []), ...profile, mainPath], {
        cwd: this.options.repoRoot,
        env: entry.env ?? process.env,
        stdio: ['ignore', logDescriptor, logDescriptor],
        detached: false,
      });
    } finally {
      closeSync(logDescriptor);
    }
    if (child.pid === undefined) throw new Error(`could not start ${label(entry)} (${process.execPath} ${mainPath})`);
    this.track(entry, child);
  }

  /** Makes `child` the current incarnation of `entry` and reports its exit. */
  private track(entry: TrackedProcess, child: ChildProcess): void {
    const pid = child.pid!;
    entry.child = child;
    entry.pid = pid;
    entry.exitStatus = null;
    child.on('error', (error) => this.options.logger(`${label(entry)} (pid ${pid}): ${error.message}`));
    entry.exited = new Promise<ExitStatus>((resolveExit) => {
      const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
        const status = { code, signal };
        if (entry.pid === pid) {
          entry.exitStatus = status;
          if (!this.stopping) {
            this.options.logger(`${label(entry)} (pid ${pid}) exited with ${describeExit(status)}`);
            this.writeClusterFile();
          }
        }
        resolveExit(status);
      };
      // A launcher's process may have exited before we got it; its exit event is then already gone.
      if (child.exitCode !== null || child.signalCode !== null) onExit(child.exitCode, child.signalCode);
      else child.once('exit', onExit);
    });
  }

  /** Polls /readyz until it answers 200 (over HTTPS for a gateway with TLS); fails early, quoting the log, when the process exits. */
  private async waitReady(entry: TrackedProcess): Promise<void> {
    const url = `${entry.role === 'gateway' ? this.gatewayUrlOf(entry) : `http://${LOOPBACK_HOST}:${entry.ports.http}`}/readyz`;
    const deadlineMs = Date.now() + this.options.readyTimeoutMs;
    for (;;) {
      if (entry.exitStatus !== null) {
        throw new Error(
          `${label(entry)} (pid ${entry.pid}) exited with ${describeExit(entry.exitStatus)} before it was ready; ${logTail(entry.logFile)}`,
        );
      }
      this.throwIfAborted();
      if (this.stopping) throw new Error(`the cluster is stopping; ${label(entry)} was not ready yet`);
      if ((await httpStatus(url, LIMITS.readinessRequestTimeoutMs)) === 200) return;
      if (Date.now() >= deadlineMs) {
        throw new Error(
          `${label(entry)} (pid ${entry.pid}) was not ready within ${this.options.readyTimeoutMs} ms (GET ${url}); ${logTail(entry.logFile)}`,
        );
      }
      await sleep(LIMITS.readinessPollIntervalMs);
    }
  }

  /** Stops the current incarnation if it runs: the launcher's stop for servers, SIGTERM then SIGKILL otherwise. */
  private async terminate(entry: TrackedProcess): Promise<void> {
    if (entry.exitStatus !== null) return;
    if (entry.stopServer) {
      await settleWithin(entry.stopServer(), LIMITS.serviceStopTimeoutMs);
    } else {
      signalQuietly(entry.pid, 'SIGTERM');
      signalQuietly(entry.pid, 'SIGCONT');
      await settleWithin(entry.exited, LIMITS.serviceStopTimeoutMs);
    }
    if (entry.exitStatus === null) {
      this.options.logger(`${label(entry)} (pid ${entry.pid}) did not stop within ${LIMITS.serviceStopTimeoutMs} ms; sending SIGKILL`);
      signalQuietly(entry.pid, 'SIGKILL');
    }
    await entry.exited;
  }

  private logReady(entry: TrackedProcess): void {
    const ports = Object.entries(entry.ports)
      .map(([name, port]) => `${name} ${port}`)
      .join(', ');
    this.options.logger(`${label(entry)} ready (pid ${entry.pid}, ${ports})`);
  }

  /** Rewrites cluster.json in one step (write, then rename), so a reader never sees half a file. */
  private writeClusterFile(): void {
    const gateway = this.tracked.find((entry) => entry.role === 'gateway');
    const content: ClusterFile = {
      processes: this.tracked.map((entry) => ({
        role: entry.role,
        nodeId: entry.nodeId,
        pid: entry.pid,
        ports: { ...entry.ports },
        running: entry.exitStatus === null,
        log: entry.logFile,
      })),
      endpoints: {
        gateway: gateway ? this.gatewayUrlOf(gateway) : '',
        nats: this.natsUrl,
        ...(this.natsTlsCaFile ? { natsTlsCaFile: this.natsTlsCaFile } : {}),
        s3: this.s3EndpointValue,
        s3Bucket: DEFAULTS.s3Bucket,
      },
      ...(this.secrets ? { secrets: { natsEnvFile: this.secrets.natsEnvFile, adminTokenFile: this.adminTokenFile, metricsTokenFile: this.secrets.metricsTokenFile } } : {}),
    };
    const path = this.clusterFile;
    const temporaryPath = `${path}.${process.pid}.tmp`;
    writeFileSync(temporaryPath, `${JSON.stringify(content, null, 2)}\n`);
    renameSync(temporaryPath, path);
  }

  private find(role: ClusterRole, nodeId: string | null): TrackedProcess {
    const entry = this.tracked.find((candidate) => candidate.role === role && candidate.nodeId === (nodeId ?? null));
    if (!entry) throw new Error(`the local cluster has no ${nodeId === null ? role : `${role} ${nodeId}`}`);
    return entry;
  }

  private throwIfAborted(): void {
    if (this.options.signal?.aborted) throw new Error('the start of the local cluster was interrupted');
  }

  private assertNotStopping(): void {
    if (this.stopping) throw new Error('the local cluster is stopping');
  }
}

/** The folder holding pnpm-workspace.yaml, walking up from `start`. */
export function findRepoRoot(start: string = __dirname): string {
  let directory = resolve(start);
  for (;;) {
    if (existsSync(join(directory, 'pnpm-workspace.yaml'))) return directory;
    const parent = dirname(directory);
    if (parent === directory) throw new Error(`no pnpm-workspace.yaml above ${start}: pass repoRoot`);
    directory = parent;
  }
}

export function appMainPath(repoRoot: string, role: ServiceRole): string {
  return join(repoRoot, 'apps', role, 'dist', 'main.js');
}

/**
 * The log file of a process: `nats.log` and `s3.log`; `data-node-2.log` for a numeric id; otherwise
 * the id alone (`coordinator-1.log`, `gateway-1.log`, `tiering-1.log`), since it already names the role.
 */
export function logFileName(role: ClusterRole, nodeId: string | null): string {
  if (nodeId === null) return `${role}.log`;
  return /^\d+$/.test(nodeId) ? `${role}-${nodeId}.log` : `${nodeId}.log`;
}

/** Reads a cluster.json written by a LocalCluster (for example by a running `mink up`). */
export function readClusterFile(dataDir: string): ClusterFile {
  return JSON.parse(readFileSync(join(dataDir, CLUSTER_FILE_NAME), 'utf8')) as ClusterFile;
}

/** The ports the options fix (0 or absent: picked free): the services bind them later, so no free pick may take one. */
export function fixedPortsOf(options: Pick<ResolvedOptions, 'gatewayPort' | 'grpcPort' | 'kafkaPort' | 'nodes' | 'natsPort' | 's3Port'>): number[] {
  const kafka = options.kafkaPort === 0 ? [] : Array.from({ length: options.nodes }, (_, index) => options.kafkaPort + index);
  return [options.gatewayPort, options.grpcPort, ...kafka, options.natsPort ?? 0, options.s3Port ?? 0].filter((port) => port !== 0);
}

function resolveOptions(options: LocalClusterOptions): ResolvedOptions {
  const dataDir = resolve(options.dataDir);
  const resolved: ResolvedOptions = {
    dataDir,
    nodes: options.nodes ?? DEFAULTS.nodes,
    coordinators: options.coordinators ?? DEFAULTS.coordinators,
    tieringWorkers: options.tieringWorkers ?? 1,
    gatewayPort: options.gatewayPort ?? DEFAULTS.gatewayPort,
    gatewayBindHost: options.gatewayBindHost ?? LOOPBACK_HOST,
    grpcPort: options.grpcPort ?? 0,
    kafkaPort: options.kafkaPort ?? DEFAULTS.kafkaPort,
    leaseTtlMs: options.leaseTtlMs ?? DEFAULTS.leaseTtlMs,
    coordinatorTickMs: options.coordinatorTickMs ?? DEFAULTS.coordinatorTickMs,
    natsPort: options.natsPort || undefined,
    natsCluster: options.natsCluster ?? 1,
    s3Port: options.s3Port || undefined,
    secure: options.secure ?? false,
    tls: options.tls,
    natsTls: options.natsTls,
    s3Latency: options.s3Latency,
    repoRoot: options.repoRoot ?? findRepoRoot(),
    logDir: resolve(options.logDir ?? join(dataDir, 'logs')),
    logLevel: options.logLevel ?? 'info',
    cpuProfileDir: options.cpuProfileDir === undefined ? undefined : resolve(options.cpuProfileDir),
    env: options.env ?? {},
    logger: options.logger ?? (() => undefined),
    readyTimeoutMs: options.readyTimeoutMs ?? LIMITS.serviceReadyTimeoutMs,
    signal: options.signal,
  };
  checkCount(resolved.nodes, 1, LIMITS.localDataNodesMax, 'nodes');
  checkCount(resolved.coordinators, 1, LIMITS.localCoordinatorsMax, 'coordinators');
  checkCount(resolved.tieringWorkers, 1, LIMITS.localTieringWorkersMax, 'tieringWorkers');
  for (const [name, port] of [
    ['gatewayPort', resolved.gatewayPort],
    ['grpcPort', resolved.grpcPort],
    ['kafkaPort', resolved.kafkaPort],
  ] as const) {
    checkCount(port, 0, 65_535, name);
  }
  if (resolved.kafkaPort !== 0) checkCount(resolved.kafkaPort + resolved.nodes - 1, 1, 65_535, 'kafkaPort + nodes - 1');
  if (resolved.natsCluster !== 1) {
    try {
      checkNatsClusterSize(resolved.natsCluster);
    } catch {
      throw new Error(`natsCluster must be 1 (one nats-server) or an odd number from 3 to ${LIMITS.localNatsServersMax} (a JetStream cluster), not ${resolved.natsCluster}`);
    }
    if (resolved.natsPort !== undefined) throw new Error('natsPort sets the port of a single nats-server; the servers of a NATS cluster get free ports');
  }
  return resolved;
}

function checkCount(value: number, minimum: number, maximum: number, what: string): void {
  if (!Number.isInteger(value) || value < minimum || value > maximum) {
    throw new Error(`${what} must be an integer from ${minimum} to ${maximum}, not ${value}`);
  }
}

function assertBuilt(repoRoot: string, role: ServiceRole): void {
  const path = appMainPath(repoRoot, role);
  if (!existsSync(path)) throw new Error(`${path} does not exist: run 'pnpm run build' first`);
}

/**
 * Two clusters on one data dir would corrupt each other's NATS and S3 files, so a start is refused while
 * a process listed as running in an existing cluster.json is still alive.
 */
function assertNoClusterRunning(dataDir: string): void {
  let file: ClusterFile;
  try {
    file = readClusterFile(dataDir);
  } catch {
    return;
  }
  const alive = (file.processes ?? []).filter((entry) => entry.running && isAlive(entry.pid));
  if (alive.length > 0) {
    const names = alive.map((entry) => `${label(entry)} pid ${entry.pid}`).join(', ');
    throw new Error(`a cluster still runs in ${dataDir} (${names}): stop it first`);
  }
}

/**
 * A single nats-server keeps its store in `nats/jetstream`, the servers of a NATS cluster in `nats/nats-1/…`:
 * starting a data dir in the other layout would start an empty metadata log next to the S3 data of the
 * first one, so it is refused.
 */
function assertSameNatsLayout(dataDir: string, natsCluster: number): void {
  const single = existsSync(join(dataDir, 'nats', 'jetstream'));
  const clustered = existsSync(join(dataDir, 'nats', 'nats-1'));
  if (natsCluster === 1 && clustered) {
    throw new Error(`${dataDir} holds the stores of a NATS cluster: start it with natsCluster (--nats-cluster) as before, or use another data dir`);
  }
  if (natsCluster !== 1 && single) {
    throw new Error(`${dataDir} holds the store of a single nats-server: start it without natsCluster (--nats-cluster 1), or use another data dir`);
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function describe(entry: TrackedProcess): ClusterProcessInfo {
  return {
    role: entry.role,
    nodeId: entry.nodeId,
    pid: entry.pid,
    ports: { ...entry.ports },
    running: entry.exitStatus === null,
    logFile: entry.logFile,
  };
}

function label(entry: { role: ClusterRole; nodeId: string | null }): string {
  return entry.nodeId === null ? entry.role : `${entry.role} ${entry.nodeId}`;
}

function describeExit(status: ExitStatus): string {
  return status.signal !== null ? `signal ${status.signal}` : `code ${status.code}`;
}

function range(count: number): number[] {
  return Array.from({ length: count }, (_, index) => index);
}

/** Waits for `promise` (ignoring its outcome) but no longer than `timeoutMs`, leaving no timer behind. */
async function settleWithin(promise: Promise<unknown>, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<void>((resolveTimeout) => {
    timer = setTimeout(resolveTimeout, timeoutMs);
  });
  try {
    await Promise.race([promise.then(noop, noop), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

function noop(): void {}

/** Sends a signal, ignoring a process that is already gone (it may exit between our check and the kill). */
function signalQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // ESRCH: nothing left to signal.
  }
}

/** The last lines of a log file, formatted for an error message. */
function logTail(logFile: string): string {
  let text: string;
  try {
    text = readFileSync(logFile, 'utf8');
  } catch {
    return `no log at ${logFile}`;
  }
  const lines = text.trimEnd().split('\n').slice(-LIMITS.logTailLinesMax);
  return `last ${lines.length} lines of ${logFile}:\n${lines.join('\n')}`;
}

/**
 * The status code of a GET, or 0 when the request fails or times out. Never keeps a connection open. An
 * https URL is this cluster's own gateway on loopback, asked only whether it is ready: its certificate is not
 * checked here (it may be made out to a public name, or self-signed).
 */
function httpStatus(url: string, timeoutMs: number): Promise<number> {
  return new Promise((resolveStatus) => {
    const onResponse = (response: IncomingMessage): void => {
      response.resume();
      resolveStatus(response.statusCode ?? 0);
    };
    const options = { agent: false, timeout: timeoutMs };
    const request = url.startsWith('https:') ? httpsGet(url, { ...options, rejectUnauthorized: false }, onResponse) : httpGet(url, options, onResponse);
    request.on('timeout', () => request.destroy());
    request.on('error', () => resolveStatus(0));
  });
}

/** `env` without its undefined entries, so a variable set to undefined is not passed on at all. */
function removeUndefined(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined));
}

/** `env` with `changes` applied: an undefined value removes the variable. */
function withEnvChanges(env: NodeJS.ProcessEnv, changes: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const changed = { ...env };
  for (const [name, value] of Object.entries(changes)) {
    if (value === undefined) delete changed[name];
    else changed[name] = value;
  }
  return changed;
}
