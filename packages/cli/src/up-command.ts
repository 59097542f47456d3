import { join, resolve } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { DEFAULTS, ENV, LIMITS } from '@mink/config';
import { LOCAL_CERTIFICATE_NAMES, LocalCluster, SECRETS_FOLDER_NAME, ensureServerTlsFiles, tlsFilesOf, type LocalClusterOptions } from '@mink/devcluster';
import { CliError, UsageError, printLine, type CliIo } from './io';
import { integerInRange, parseBindHost, parseDurationOption, parsePort } from './options';
import { securityLineOf } from './security-line';

/** Where `mink up` keeps its data when --data-dir is not given, relative to the working directory. */
export const DEFAULT_DATA_DIR = './.mink';

export interface UpFlags {
  nodes: number;
  coordinators: number;
  tieringWorkers: number;
  dataDir: string;
  gatewayPort: number;
  /** Address the gateway binds (`--gateway-host`, default 127.0.0.1). */
  gatewayHost: string;
  /** gRPC port of the gateway (`--grpc-port`, default `DEFAULTS.grpcPort`; 0: a free port). */
  grpcPort: number;
  kafkaPort: number;
  leaseTtl: number;
  coordinatorTick: number;
  natsPort?: number;
  /** nats-servers: 1 (default) or a JetStream cluster of 3 or 5 (`--nats-cluster`). */
  natsCluster?: number;
  s3Port?: number;
  logLevel: string;
  cpuProf?: string;
  /** The gateway's access tokens file (`--auth-tokens`, MINK_AUTH_TOKENS_FILE); absent: no credentials asked for. */
  authTokens?: string;
  /** `--secure`: NATS user and password for every server and service, and a generated admin token for the gateway. */
  secure?: boolean;
  /** `--tls-cert` and `--tls-key`: the gateway serves HTTPS and gRPC over TLS with this certificate and key. */
  tlsCert?: string;
  tlsKey?: string;
}

/** Starts a cluster; LocalCluster.start outside tests. */
export type StartCluster = (options: LocalClusterOptions) => Promise<LocalCluster>;

/** The options LocalCluster gets for the given flags. */
export function clusterOptionsFromFlags(flags: UpFlags): LocalClusterOptions {
  return {
    dataDir: resolve(flags.dataDir),
    nodes: flags.nodes,
    coordinators: flags.coordinators,
    tieringWorkers: flags.tieringWorkers,
    gatewayPort: flags.gatewayPort,
    gatewayBindHost: flags.gatewayHost,
    grpcPort: flags.grpcPort,
    kafkaPort: flags.kafkaPort,
    leaseTtlMs: flags.leaseTtl,
    coordinatorTickMs: flags.coordinatorTick,
    natsPort: flags.natsPort,
    natsCluster: flags.natsCluster ?? 1,
    s3Port: flags.s3Port,
    logLevel: flags.logLevel,
    ...(flags.cpuProf ? { cpuProfileDir: resolve(flags.cpuProf) } : {}),
    ...(flags.authTokens ? { env: { [ENV.authTokensFile]: resolve(flags.authTokens) } } : {}),
    ...(flags.secure ? { secure: true } : {}),
    ...(flags.tlsCert && flags.tlsKey ? { tls: { certFile: resolve(flags.tlsCert), keyFile: resolve(flags.tlsKey) } } : {}),
  };
}

/**
 * `--nats-cluster`: 1 (one nats-server, the default) or an odd count from 3 to `LIMITS.localNatsServersMax`.
 * JetStream needs a majority of its servers: 2 servers stop with either one gone (no better than 1), and 4
 * survive one loss like 3 do, so even counts only add a server to lose. Beyond 5 a stream cannot have a
 * replica on every server.
 */
export function parseNatsCluster(text: string): number {
  const value = /^\d+$/.test(text.trim()) ? Number(text.trim()) : Number.NaN;
  if (value === 1 || (Number.isSafeInteger(value) && value >= 3 && value <= LIMITS.localNatsServersMax && value % 2 === 1)) return value;
  throw new InvalidArgumentError(
    `expected 1 (one nats-server) or an odd count from 3 to ${LIMITS.localNatsServersMax}: JetStream needs a majority of its servers, so an even count survives no more failures than one server fewer.`,
  );
}

/** `mink up`: a whole local cluster in the foreground until Ctrl-C or SIGTERM. */
export function registerUpCommand(program: Command, io: CliIo, startCluster: StartCluster = (options) => LocalCluster.start(options)): void {
  program
    .command('up')
    .description('start a local cluster (nats-server, S3 server, coordinators, data nodes, gateway, tiering worker) until Ctrl-C')
    .option('--nodes <count>', 'data nodes', integerInRange(1, LIMITS.localDataNodesMax), DEFAULTS.nodes)
    .option('--coordinators <count>', 'coordinator replicas', integerInRange(1, LIMITS.localCoordinatorsMax), DEFAULTS.coordinators)
    .option('--tiering-workers <count>', 'tiering workers (lake tiering rounds)', integerInRange(1, LIMITS.localTieringWorkersMax), 1)
    .option('--data-dir <path>', 'folder for NATS and S3 data, logs and cluster.json; reuse it to keep every table', DEFAULT_DATA_DIR)
    .option('--gateway-port <port>', 'HTTP port of the gateway (0: a free port)', parsePort, DEFAULTS.gatewayPort)
    .option('--gateway-host <address>', 'address the gateway binds; 0.0.0.0 serves other machines (pair it with --auth-tokens). Every other service listens on loopback only', parseBindHost, '127.0.0.1')
    .option('--grpc-port <port>', 'gRPC port of the gateway, bound on the --gateway-host address (0: a free port)', parsePort, DEFAULTS.grpcPort)
    .option('--kafka-port <port>', 'Kafka port of data node 1; node n listens on this + n - 1 (0: free ports)', parsePort, DEFAULTS.kafkaPort)
    .addOption(new Option('--lease-ttl <duration>', 'node and coordinator lease TTL, e.g. 3s').argParser(parseDurationOption).default(DEFAULTS.leaseTtlMs, '30s'))
    .addOption(
      new Option('--coordinator-tick <duration>', 'interval of the coordinator loop, e.g. 500ms')
        .argParser(parseDurationOption)
        .default(DEFAULTS.coordinatorTickMs, '5s'),
    )
    .addOption(new Option('--nats-port <port>', 'client port of nats-server (a single one only)').argParser(parsePort).default(undefined, 'a free port'))
    .option(
      '--nats-cluster <servers>',
      'nats-servers: 1, or a JetStream cluster of 3 (or 5) on free loopback ports with the metadata stream and KV buckets at that many replicas',
      parseNatsCluster,
      1,
    )
    .addOption(new Option('--s3-port <port>', 'port of the S3 server').argParser(parsePort).default(undefined, 'a free port'))
    .option('--log-level <level>', 'log level of every service (MINK_LOG_LEVEL)', 'info')
    .option('--auth-tokens <file>', 'the gateway asks for bearer tokens with scopes from this JSON file (MINK_AUTH_TOKENS_FILE; see docs/operations.md "Authentication")')
    .option(
      '--secure',
      'NATS asks every process for a generated user and password over TLS (a generated CA), the gateway and Kafka (SASL over TLS, a generated CA) for bearer tokens (a generated admin token unless --auth-tokens), the internal routes for a cluster secret, /metrics for a token; secrets go to 0600 files in <data-dir>/secrets',
    )
    .option('--tls-cert <file>', 'PEM certificate (chain) of the gateway: it serves HTTPS and gRPC over TLS (MINK_TLS_CERT_FILE; with --tls-key)')
    .option('--tls-key <file>', 'PEM private key of --tls-cert (MINK_TLS_KEY_FILE)')
    .option('--cpu-prof <dir>', 'run every service under node --cpu-prof; each writes a .cpuprofile into this folder when it stops')
    .action(async (flags: UpFlags) => {
      await runUp(flags, io, startCluster);
    });
}

/**
 * `--secure`: NATS and the data nodes' Kafka listeners speak TLS too, each with a CA and a certificate for
 * loopback made in the secrets folder (kept for the next start; `tlsFilesOf`). Without it the options are
 * left as they are.
 */
export async function withGeneratedTls(options: LocalClusterOptions, flags: Pick<UpFlags, 'secure'>): Promise<LocalClusterOptions> {
  if (!flags.secure) return options;
  const secrets = join(options.dataDir, SECRETS_FOLDER_NAME);
  const natsTls = await ensureServerTlsFiles(secrets, 'nats', LOCAL_CERTIFICATE_NAMES);
  const kafkaTls = await ensureServerTlsFiles(secrets, 'kafka', LOCAL_CERTIFICATE_NAMES);
  const env = { ...options.env, [ENV.kafkaTlsCertFile]: kafkaTls.certFile, [ENV.kafkaTlsKeyFile]: kafkaTls.keyFile };
  return { ...options, natsTls, env };
}

/** The CA a Kafka client of a `--secure` cluster in `dataDir` trusts (SASL_SSL). */
export function kafkaCaFileOf(dataDir: string): string {
  return join(resolve(dataDir), SECRETS_FOLDER_NAME, tlsFilesOf('kafka').ca);
}

/**
 * Starts the cluster, prints its endpoints and waits for SIGINT or SIGTERM, then stops everything and
 * returns (exit code 0). A signal during the start interrupts it cleanly; a second signal while stopping
 * exits at once, and the exit handlers of LocalCluster kill whatever is left.
 */
export async function runUp(flags: UpFlags, io: CliIo, startCluster: StartCluster): Promise<void> {
  if ((flags.natsCluster ?? 1) > 1 && flags.natsPort !== undefined) {
    throw new UsageError('--nats-port sets the port of a single nats-server; with --nats-cluster every server gets a free port');
  }
  if ((flags.tlsCert === undefined) !== (flags.tlsKey === undefined)) throw new UsageError('--tls-cert and --tls-key go together: the certificate and its private key');
  const options = await withGeneratedTls(clusterOptionsFromFlags(flags), flags);
  const interrupt = new AbortController();
  let stopRequested: () => void = () => undefined;
  const stopSignal = new Promise<void>((resolveStop) => {
    stopRequested = resolveStop;
  });
  const onSignal = (signal: NodeJS.Signals): void => {
    if (interrupt.signal.aborted) {
      io.writeError(`${signal} again: killing every process now\n`);
      process.exit(130);
    }
    printLine(io, `${signal}: stopping the cluster…`);
    interrupt.abort();
    stopRequested();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    printLine(io, `starting a local mink cluster in ${options.dataDir}`);
    let cluster: LocalCluster;
    try {
      cluster = await startCluster({ ...options, signal: interrupt.signal, logger: (line) => printLine(io, line) });
    } catch (error) {
      if (interrupt.signal.aborted) {
        printLine(io, 'stopped');
        return;
      }
      throw new CliError(`the cluster did not start: ${error instanceof Error ? error.message : String(error)}`);
    }
    printEndpoints(io, cluster, flags);
    await stopSignal;
    await cluster.stop();
    printLine(io, 'stopped');
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
}

/** The endpoints `mink up` prints once the cluster is up: every NATS URL among them. */
export function printEndpoints(io: CliIo, cluster: LocalCluster, flags: UpFlags): void {
  const kafka = cluster
    .processes()
    .filter((entry) => entry.role === 'data-node')
    .map((entry) => `127.0.0.1:${entry.ports.kafka} (node ${entry.nodeId})`)
    .join(', ');
  const natsServers = cluster.processes().filter((entry) => entry.role === 'nats');
  const nats: [string, string][] =
    natsServers.length <= 1
      ? [['nats', cluster.natsUrl]]
      : natsServers.map((entry, index) => [
          index === 0 ? 'nats' : '',
          `nats://127.0.0.1:${entry.ports.client} (${entry.nodeId}, monitoring http://127.0.0.1:${entry.ports.monitor}/jsz)`,
        ]);
  if (natsServers.length > 1) nats.push(['', `MINK_NATS_URL=${cluster.natsUrl} (JetStream cluster, ${natsServers.length} replicas)`]);
  // Secrets are never printed: only the files that hold them, and how to use those.
  if (cluster.natsEnvFile) nats.push(['', `user and password in ${cluster.natsEnvFile} (${ENV.natsUser}, ${ENV.natsPassword}: set -a; . ${cluster.natsEnvFile}; set +a)`]);
  if (cluster.natsTlsCaFile) nats.push(['', `TLS: trust the CA in ${cluster.natsTlsCaFile} (${ENV.natsTlsCaFile}; MinkClient.connect({ tls: { caFile } }))`]);
  const rows: [string, string][] = [
    ['gateway', cluster.gatewayUrl],
    ['grpc', `${cluster.gatewayGrpcAddress} (mink.v1.Mink, grpc.health.v1, reflection)`],
    ['console', `${cluster.gatewayUrl}/console`],
    ...nats,
    ['s3', `${cluster.s3Endpoint} (bucket ${cluster.s3Bucket}, path-style, credentials S3RVER/S3RVER)`],
    ...(cluster.adminTokenFile ? [['token', `admin token in ${cluster.adminTokenFile}: MINK_TOKEN=$(cat ${cluster.adminTokenFile}) mink table list`] as [string, string]] : []),
    ...(flags.tlsCert ? [['tls', `${resolve(flags.tlsCert)}; MINK_GATEWAY_URL=${cluster.gatewayUrl} (add MINK_TLS_CA_FILE=<the CA's PEM> for a self-signed or private CA)`] as [string, string]] : []),
    // The generated admin token is also the password of the Kafka user 'admin' (SASL PLAIN or SCRAM).
    [
      'kafka',
      flags.secure
        ? `${kafka}; SASL_SSL (trust ${kafkaCaFileOf(flags.dataDir)}), PLAIN or SCRAM-SHA-256/512, user admin, password ${cluster.adminTokenFile ? `$(cat ${cluster.adminTokenFile})` : 'a token of --auth-tokens'}`
        : cluster.adminTokenFile
          ? `${kafka}; SASL PLAIN or SCRAM-SHA-256/512, user admin, password $(cat ${cluster.adminTokenFile})`
          : kafka,
    ],
    ['data dir', cluster.dataDir],
    ['cluster.json', cluster.clusterFile],
    ['logs', cluster.logDir],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  printLine(io, '');
  const natsLine = natsServers.length > 1 ? `, ${natsServers.length} clustered nats-servers` : '';
  printLine(io, `mink is up: ${flags.coordinators} coordinator(s), ${flags.nodes} data node(s), a gateway and ${flags.tieringWorkers} tiering worker(s)${natsLine}`);
  printLine(io, securityLineOf(flags));
  for (const [label, value] of rows) printLine(io, `  ${label.padEnd(width)}  ${value}`);
  printLine(io, 'Ctrl-C to stop');
}
