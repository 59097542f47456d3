import { DEFAULTS, LIMITS } from './limits';
import { parseDurationMs } from './duration';
import { currentHostFacts, resolveProcessIdentity, type HostFacts } from './host-identity';
import { readSecretFile, type ReadBoundedFile, type Secret } from './secret-file';

/**
 * Configuration shared by every service, read from environment variables. The same names are used by
 * `mink up`, docker-compose and the tests (docs/architecture.md §12).
 */
export interface ServiceConfig {
  /** `MINK_NATS_URL` as given: one NATS URL, or several separated by commas (the servers of one NATS cluster). */
  natsUrl: string;
  /** The servers of `natsUrl`, one URL each: every NATS connection of the process is given all of them. */
  natsServers: string[];
  /**
   * Replicas of the metadata stream and of every KV bucket mink creates (heartbeats, coordinator lease, view
   * snapshot pointer), 1 to `LIMITS.metaReplicasMax`; 3 on a 3-server NATS cluster, so one server may fail.
   * Only applies when the stream or bucket is created: an existing one keeps its replicas.
   */
  metaReplicas: number;
  s3Endpoint: string;
  s3Bucket: string;
  s3Region: string;
  s3AccessKeyId: string;
  s3SecretAccessKey: string;
  /** Identity of this process: data node id ("1", "2", …) or coordinator id ("coordinator-1"); `MINK_NODE_ID=auto`: the hostname. */
  nodeId: string;
  leaseTtlMs: number;
  coordinatorTickMs: number;
  /** HTTP port for /healthz, /readyz and /metrics (and the API on the gateway); 0 picks a free port. */
  httpPort: number;
  /**
   * Address the HTTP listener (API on the gateway; health, metrics and internal scans elsewhere) binds:
   * loopback when the advertised host is a loopback one, else every interface; `MINK_HTTP_BIND_HOST`
   * overrides it. A local cluster is thus reachable from this machine only unless told otherwise.
   */
  httpBindHost: string;
  /**
   * The timeouts of the service's HTTP server (see LIMITS.httpHeadersTimeoutMs and the two after it): a
   * connection is closed when its request headers, or its whole request, have not arrived within the first
   * two, or when it stays idle between requests for the third. The header timeout is at most the request one.
   */
  httpHeadersTimeoutMs: number;
  httpRequestTimeoutMs: number;
  httpKeepAliveTimeoutMs: number;
  /** Connections the service's HTTP server keeps open at once; one beyond them is dropped at once (LIMITS.httpConnectionsMax). */
  httpConnectionsMax: number;
  /** The gateway's gRPC port (only the gateway listens on it); 0 picks a free port. */
  grpcPort: number;
  /**
   * Address the gateway's gRPC listener binds, by the same rule as `httpBindHost`: loopback when the
   * advertised host is a loopback one, else every interface; `MINK_GRPC_BIND_HOST` overrides it.
   */
  grpcBindHost: string;
  /** Host name other processes and clients use to reach this one; `MINK_ADVERTISED_HOST=auto`: the machine's one non-loopback IPv4 address. */
  advertisedHost: string;
  kafkaPort: number;
  /**
   * Address the Kafka listener binds: loopback when the advertised host is a loopback one (a local cluster
   * is reachable from this machine only), else every interface; `MINK_KAFKA_BIND_HOST` overrides it.
   */
  kafkaBindHost: string;
  /**
   * Whether a Kafka Metadata or Produce request naming a topic that does not exist creates it (Kafka's
   * auto.create.topics.enable, on by default), with `kafkaDefaultPartitions` partitions.
   */
  kafkaAutoCreateTopics: boolean;
  /** Partitions of a topic created automatically or by CreateTopics with the broker default (-1), as Kafka's num.partitions. */
  kafkaDefaultPartitions: number;
  /**
   * How long a Kafka consumer group keeps its committed offsets once it has no members (Kafka's
   * offsets.retention.minutes, 7 days by default), counted from its last commit or member.
   */
  kafkaOffsetsRetentionMs: number;
  /**
   * Members one Kafka consumer group may have, counting member ids handed out and not yet joined (Kafka's
   * group.max.size); a join beyond it is refused with GROUP_MAX_SIZE_REACHED. At most, and by default,
   * LIMITS.kafkaGroupMembersMax.
   */
  kafkaGroupMaxSize: number;
  metaStream: string;
  /** The coordinator lease holder snapshots the metadata view every this many applied commands (at least 1). */
  metaSnapshotEveryCommands: number;
  logLevel: string;
  /**
   * Local folder for a data node's KV tablets. They are caches of what object storage holds (snapshot plus
   * changelog), so the folder is emptied at start; empty means a folder under the OS temporary directory.
   */
  dataDir: string;
  /** How often a PK bucket's leader snapshots its KV tablet to object storage. */
  kvSnapshotIntervalMs: number;
  /** Append requests the gateway keeps in flight per bucket (1 to LIMITS.writerBatchesRemembered). */
  appendsInFlightPerBucket: number;
  /** Bytes of a bucket's waiting appends the gateway sends beside a request in flight (1 to LIMITS.appendRequestBytesMax; smaller ones wait and merge). */
  pipelinedAppendBytesMin: number;
  /** WAL objects a data node uploads at once (committed in order). */
  walUploadsInFlight: number;
  /**
   * A data node's in-memory caches, each bounded by bytes (0 turns it off; /metrics shows what each holds as
   * `mink_cache_bytes{cache}`): committed batches kept for tail reads and compaction (`stream_tail`), what
   * GETs and prefetch fetched (`stream_read`), Parquet files of lake reads (`lake_files`).
   */
  streamTailCacheBytes: number;
  streamReadCacheBytes: number;
  lakeFileCacheBytes: number;
  /**
   * V8's heap growing factor as a percentage over 100 (`--heap-growing-percent`): after a full collection
   * the next one starts once the heap has grown by this much. 0 leaves V8's own choice. See
   * `DEFAULTS.heapGrowingPercent` for why mink sets it.
   */
  heapGrowingPercent: number;
  /**
   * For tests: moves the clock the coordinator's partition loop plans with (which partitions are current,
   * due ahead or past retain) by this many milliseconds, positive or negative. Nothing else uses it.
   */
  partitionClockOffsetMs: number;
  /**
   * For fault tests (`MINK_TEST_CRASH_AT`): a data node kills itself with SIGKILL, as `kill -9` would, when its
   * WAL reaches this point for this many times (counted over the process's life); null in production.
   */
  crashAt: CrashPoint | null;
  /**
   * The gateway's access tokens (a JSON file, see docs/operations.md "Authentication"); empty: the gateway asks for no
   * credentials. Only the gateway reads it.
   */
  authTokensFile: string;
  /**
   * `MINK_ALLOW_UNAUTHENTICATED=true`: a gateway bound beyond loopback may start without a tokens file (it
   * refuses to otherwise, see `unauthenticatedExposureOf`). Off by default.
   */
  allowUnauthenticated: boolean;
  /**
   * The user and password of every NATS connection of the process (`MINK_NATS_USER`, `MINK_NATS_PASSWORD`),
   * for NATS servers with an authorization block; null: connect without credentials. The password is never
   * logged: nothing logs the config, and the NATS client never puts it in an error.
   */
  natsCredentials: NatsCredentials | null;
  /**
   * TLS of every NATS connection of the process (`MINK_NATS_TLS_CA_FILE`, and for a server that asks for a
   * client certificate `MINK_NATS_TLS_CERT_FILE` with `MINK_NATS_TLS_KEY_FILE`): with it, a connection speaks
   * TLS and trusts the servers' certificates signed by the CA file (besides the system's authorities); null:
   * plain text, unless a server asks for TLS (nats.js then tries it with the system's authorities).
   */
  natsTls: NatsTlsFiles | null;
  /**
   * The gateway's TLS certificate chain and private key (PEM files, `MINK_TLS_CERT_FILE`, `MINK_TLS_KEY_FILE`):
   * both set, its HTTP API serves HTTPS and its gRPC listener TLS; both empty, plain text. Only the gateway
   * reads them.
   */
  tls: TlsFiles | null;
  /**
   * The Kafka listener's TLS certificate chain and private key (`MINK_KAFKA_TLS_CERT_FILE`,
   * `MINK_KAFKA_TLS_KEY_FILE`): both set, a data node's Kafka listener speaks TLS (clients' SSL and SASL_SSL);
   * both empty, plain TCP. Only data nodes read them.
   */
  kafkaTls: TlsFiles | null;
  /**
   * A CA a data node signs its own Kafka certificate with at start (`MINK_KAFKA_TLS_CA_FILE`,
   * `MINK_KAFKA_TLS_CA_KEY_FILE`), for its advertised host, its hostname and `MINK_KAFKA_TLS_EXTRA_NAMES`:
   * TLS for nodes whose address is known only when they start (replicas of one compose service). Null: none.
   * Not together with `kafkaTls`. Only data nodes read it.
   */
  kafkaTlsIssuer: KafkaTlsIssuer | null;
  /**
   * The secret the processes of one cluster share (read from the file `MINK_CLUSTER_SECRET_FILE` names): a
   * data node then answers its internal routes (`/internal/…`, the scan pages of INTERNAL_SCAN_PATH) only
   * to a caller sending `Authorization: Cluster <secret>`, and the gateway and data nodes send it on their
   * own scans. Null (unset or empty): the internal routes ask for nothing, and nothing is sent.
   */
  clusterSecret: Secret | null;
  /**
   * The token `/metrics` asks for (read from the file `MINK_METRICS_TOKEN_FILE` names): a scrape then sends
   * `Authorization: Bearer <token>`; null: `/metrics` is open. `/healthz` and `/readyz` are always open.
   */
  metricsToken: Secret | null;
}

/** The points a fault test may stop a data node at: a WAL object's life (`WalPoint` of @mink/s3stream, prefixed). */
export const CRASH_POINTS = ['wal-uploading', 'wal-uploaded', 'wal-committed'] as const;

/** Where a data node of a fault test kills itself: the `occurrence`-th time (from 1) its WAL reaches `point`. */
export interface CrashPoint {
  point: (typeof CRASH_POINTS)[number];
  occurrence: number;
}

/**
 * `MINK_TEST_CRASH_AT` as `<point>:<occurrence>` (`wal-uploaded:20`), or null when unset or empty. A value of
 * another shape is refused, naming the points, so a fault test never runs without the fault it asked for.
 */
export function parseCrashPoint(value: string | undefined, name: string = ENV.testCrashAt): CrashPoint | null {
  if (value === undefined || value === '') return null;
  const match = /^([a-z-]+):([1-9][0-9]{0,8})$/.exec(value);
  const point = CRASH_POINTS.find((known) => known === match?.[1]);
  if (!match || point === undefined) throw new Error(`${name}: '${value}' is not <point>:<occurrence> with a point of ${CRASH_POINTS.join(', ')} and an occurrence from 1`);
  return { point, occurrence: Number(match[2]) };
}

/** A NATS user and its password (a NATS server's `authorization { user, password }`). */
export interface NatsCredentials {
  user: string;
  password: string;
}

/**
 * The PEM files of a NATS client's TLS: the CA that signed the servers' certificates, and the client's own
 * certificate and key for servers that verify clients (mutual TLS); each may be absent, cert and key together.
 */
export interface NatsTlsFiles {
  caFile?: string;
  certFile?: string;
  keyFile?: string;
}

/** Where a TLS server finds its PEM certificate chain and private key. */
export interface TlsFiles {
  certFile: string;
  keyFile: string;
}

/** The environment variable names, in one place. */
export const ENV = {
  natsUrl: 'MINK_NATS_URL',
  s3Endpoint: 'MINK_S3_ENDPOINT',
  s3Bucket: 'MINK_S3_BUCKET',
  s3Region: 'MINK_S3_REGION',
  s3AccessKeyId: 'MINK_S3_ACCESS_KEY_ID',
  s3SecretAccessKey: 'MINK_S3_SECRET_ACCESS_KEY',
  nodeId: 'MINK_NODE_ID',
  leaseTtlMs: 'MINK_LEASE_TTL_MS',
  coordinatorTickMs: 'MINK_COORDINATOR_TICK_MS',
  httpPort: 'MINK_HTTP_PORT',
  advertisedHost: 'MINK_ADVERTISED_HOST',
  httpBindHost: 'MINK_HTTP_BIND_HOST',
  httpHeadersTimeoutMs: 'MINK_HTTP_HEADERS_TIMEOUT_MS',
  httpRequestTimeoutMs: 'MINK_HTTP_REQUEST_TIMEOUT_MS',
  httpKeepAliveTimeoutMs: 'MINK_HTTP_KEEP_ALIVE_TIMEOUT_MS',
  httpConnectionsMax: 'MINK_HTTP_CONNECTIONS_MAX',
  grpcPort: 'MINK_GRPC_PORT',
  grpcBindHost: 'MINK_GRPC_BIND_HOST',
  kafkaPort: 'MINK_KAFKA_PORT',
  kafkaBindHost: 'MINK_KAFKA_BIND_HOST',
  kafkaAutoCreateTopics: 'MINK_KAFKA_AUTO_CREATE_TOPICS',
  kafkaDefaultPartitions: 'MINK_KAFKA_DEFAULT_PARTITIONS',
  kafkaOffsetsRetentionMs: 'MINK_KAFKA_OFFSETS_RETENTION_MS',
  kafkaGroupMaxSize: 'MINK_KAFKA_GROUP_MAX_SIZE',
  metaStream: 'MINK_META_STREAM',
  metaReplicas: 'MINK_META_REPLICAS',
  metaSnapshotEveryCommands: 'MINK_META_SNAPSHOT_EVERY',
  logLevel: 'MINK_LOG_LEVEL',
  dataDir: 'MINK_DATA_DIR',
  kvSnapshotIntervalMs: 'MINK_KV_SNAPSHOT_INTERVAL',
  appendsInFlightPerBucket: 'MINK_APPENDS_IN_FLIGHT',
  pipelinedAppendBytesMin: 'MINK_PIPELINED_APPEND_BYTES',
  walUploadsInFlight: 'MINK_WAL_UPLOADS_IN_FLIGHT',
  streamTailCacheBytes: 'MINK_STREAM_TAIL_CACHE_BYTES',
  streamReadCacheBytes: 'MINK_STREAM_READ_CACHE_BYTES',
  lakeFileCacheBytes: 'MINK_LAKE_FILE_CACHE_BYTES',
  heapGrowingPercent: 'MINK_HEAP_GROWING_PERCENT',
  partitionClockOffsetMs: 'MINK_PARTITION_CLOCK_OFFSET_MS',
  testCrashAt: 'MINK_TEST_CRASH_AT',
  authTokensFile: 'MINK_AUTH_TOKENS_FILE',
  allowUnauthenticated: 'MINK_ALLOW_UNAUTHENTICATED',
  natsUser: 'MINK_NATS_USER',
  natsPassword: 'MINK_NATS_PASSWORD',
  natsTlsCaFile: 'MINK_NATS_TLS_CA_FILE',
  natsTlsCertFile: 'MINK_NATS_TLS_CERT_FILE',
  natsTlsKeyFile: 'MINK_NATS_TLS_KEY_FILE',
  tlsCertFile: 'MINK_TLS_CERT_FILE',
  kafkaTlsCertFile: 'MINK_KAFKA_TLS_CERT_FILE',
  kafkaTlsKeyFile: 'MINK_KAFKA_TLS_KEY_FILE',
  kafkaTlsCaFile: 'MINK_KAFKA_TLS_CA_FILE',
  kafkaTlsCaKeyFile: 'MINK_KAFKA_TLS_CA_KEY_FILE',
  kafkaTlsExtraNames: 'MINK_KAFKA_TLS_EXTRA_NAMES',
  tlsKeyFile: 'MINK_TLS_KEY_FILE',
  clusterSecretFile: 'MINK_CLUSTER_SECRET_FILE',
  metricsTokenFile: 'MINK_METRICS_TOKEN_FILE',
  /** Clients only (the `mink` commands): a PEM file of the CA that signed the gateway's certificate, trusted besides the system's. */
  tlsCaFile: 'MINK_TLS_CA_FILE',
} as const;

function integer(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined || value === '') return fallback;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0) throw new Error(`${name}: '${value}' is not a non-negative integer`);
  return parsed;
}

function positiveInteger(value: string | undefined, fallback: number, name: string): number {
  const parsed = integer(value, fallback, name);
  if (parsed < 1) throw new Error(`${name}: '${value}' is not a positive integer`);
  return parsed;
}

function boundedInteger(value: string | undefined, fallback: number, min: number, max: number, name: string): number {
  const parsed = integer(value, fallback, name);
  if (parsed < min || parsed > max) throw new Error(`${name}: '${value}' is not an integer from ${min} to ${max}`);
  return parsed;
}

/** A whole number of milliseconds, negative allowed, written in decimal digits with an optional leading minus. */
function signedInteger(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined || value === '') return fallback;
  const parsed = Number(value);
  if (!/^-?\d+$/.test(value) || !Number.isSafeInteger(parsed)) throw new Error(`${name}: '${value}' is not an integer`);
  return parsed;
}

/** `true` or `false` (any case), the fallback when unset or empty; anything else is refused, naming the variable. */
function flag(value: string | undefined, fallback: boolean, name: string): boolean {
  if (value === undefined || value === '') return fallback;
  const normalized = value.trim().toLowerCase();
  if (normalized === 'true') return true;
  if (normalized === 'false') return false;
  throw new Error(`${name}: '${value}' is not true or false`);
}

function duration(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined || value === '') return fallback;
  return parseDurationMs(value, name);
}

/** The loopback address of a loopback advertised host (127.0.0.0/8, localhost, ::1), else every interface. */
export function defaultBindHostFor(advertisedHost: string): string {
  const host = advertisedHost.toLowerCase();
  if (host === '::1' || host === '[::1]') return '::1';
  if (host === 'localhost' || /^127\.\d+\.\d+\.\d+$/.test(host)) return '127.0.0.1';
  return '0.0.0.0';
}

/** A bind address from its variable, or the default for the advertised host; an empty value is refused. */
function bindHost(value: string | undefined, advertisedHost: string | undefined, name: string): string {
  if (value === undefined) return defaultBindHostFor(advertisedHost ?? '127.0.0.1');
  if (value.trim() === '') throw new Error(`${name} must be an address to bind (e.g. 127.0.0.1 or 0.0.0.0), got an empty value`);
  return value.trim();
}

/**
 * The NATS servers of a `MINK_NATS_URL` value: one URL or several separated by commas
 * (`nats://127.0.0.1:4301,nats://127.0.0.1:4302`), spaces around each ignored. An empty list or an empty
 * entry (a doubled or trailing comma) is refused, naming `name`.
 */
export function parseNatsServers(value: string, name: string = ENV.natsUrl): string[] {
  const servers = value.split(',').map((entry) => entry.trim());
  if (servers.some((entry) => entry === '')) {
    throw new Error(`${name}: '${value}' must be one NATS URL or several separated by commas, with no empty entry`);
  }
  if (servers.some((entry) => /\s/.test(entry))) throw new Error(`${name}: '${value}' holds a URL with a space in it`);
  return servers;
}

/**
 * Two variables that are set together or not at all (a user without a password, a certificate without its
 * key); empty counts as unset. Returns both values, or null for neither. The error names the variables,
 * never a value, since one of them may be a secret.
 */
function pair(env: NodeJS.ProcessEnv, first: string, second: string): [string, string] | null {
  const firstValue = env[first] ?? '';
  const secondValue = env[second] ?? '';
  if (firstValue === '' && secondValue === '') return null;
  if (firstValue === '' || secondValue === '') throw new Error(`${first} and ${second} are set together or not at all; ${firstValue === '' ? first : second} is missing`);
  return [firstValue, secondValue];
}

/** `MINK_NATS_USER` and `MINK_NATS_PASSWORD`, or null when neither is set. */
export function readNatsCredentials(env: NodeJS.ProcessEnv): NatsCredentials | null {
  const values = pair(env, ENV.natsUser, ENV.natsPassword);
  return values === null ? null : { user: values[0], password: values[1] };
}

/**
 * `MINK_NATS_TLS_CA_FILE`, and `MINK_NATS_TLS_CERT_FILE` with `MINK_NATS_TLS_KEY_FILE` (together or not at all),
 * or null when none is set. The files are read by nats.js when it connects: one it cannot read fails the connect.
 */
export function readNatsTlsFiles(env: NodeJS.ProcessEnv): NatsTlsFiles | null {
  const caFile = env[ENV.natsTlsCaFile] ?? '';
  const client = readTlsFilePair(env, ENV.natsTlsCertFile, ENV.natsTlsKeyFile);
  if (caFile === '' && client === null) return null;
  return { ...(caFile === '' ? {} : { caFile }), ...(client ?? {}) };
}

/** The TLS option of a nats.js `connect` for `files` (every NATS connection of mink takes it from here); none for null. */
export function natsTlsOptions(files: NatsTlsFiles | null | undefined): { tls?: NatsTlsFiles } {
  return files ? { tls: { ...files } } : {};
}

/** `MINK_TLS_CERT_FILE` and `MINK_TLS_KEY_FILE`, or null when neither is set. */
export function readTlsFiles(env: NodeJS.ProcessEnv): TlsFiles | null {
  return readTlsFilePair(env, ENV.tlsCertFile, ENV.tlsKeyFile);
}

/** A certificate and key file named by the variables `certVariable` and `keyVariable`, or null when neither is set. */
export function readTlsFilePair(env: NodeJS.ProcessEnv, certVariable: string, keyVariable: string): TlsFiles | null {
  const values = pair(env, certVariable, keyVariable);
  return values === null ? null : { certFile: values[0], keyFile: values[1] };
}

/** The CA a data node issues its own Kafka certificate with (ServiceConfig.kafkaTlsIssuer). */
export interface KafkaTlsIssuer {
  caFile: string;
  caKeyFile: string;
  /** Names the certificate holds besides the advertised host and the hostname (`DNS:` or `IP:` entries, or bare names). */
  extraNames: string[];
}

/**
 * The Kafka listener's TLS: a certificate and key (`MINK_KAFKA_TLS_CERT_FILE`, `MINK_KAFKA_TLS_KEY_FILE`), or a CA
 * to issue one with (`MINK_KAFKA_TLS_CA_FILE`, `MINK_KAFKA_TLS_CA_KEY_FILE`, `MINK_KAFKA_TLS_EXTRA_NAMES`), or
 * neither; both kinds at once, or extra names without a CA, stop the start naming the variables.
 */
export function readKafkaTls(env: NodeJS.ProcessEnv): { kafkaTls: TlsFiles | null; kafkaTlsIssuer: KafkaTlsIssuer | null } {
  const kafkaTls = readTlsFilePair(env, ENV.kafkaTlsCertFile, ENV.kafkaTlsKeyFile);
  const ca = pair(env, ENV.kafkaTlsCaFile, ENV.kafkaTlsCaKeyFile);
  const extraNames = (env[ENV.kafkaTlsExtraNames] ?? '').split(',').map((name) => name.trim()).filter((name) => name !== '');
  if (kafkaTls !== null && ca !== null) {
    throw new Error(`${ENV.kafkaTlsCertFile} and ${ENV.kafkaTlsCaFile} are set together: give the Kafka listener a certificate or a CA to issue one with, not both`);
  }
  if (ca === null && extraNames.length > 0) throw new Error(`${ENV.kafkaTlsExtraNames} is set without ${ENV.kafkaTlsCaFile}: the names go into a certificate the node issues itself`);
  return { kafkaTls, kafkaTlsIssuer: ca === null ? null : { caFile: ca[0], caKeyFile: ca[1], extraNames } };
}

/**
 * The authentication options of a nats.js `connect` for `credentials` (`user` and `pass`); none for null.
 * Every NATS connection of mink (services, clients, the local cluster's readiness checks) takes them from here.
 */
export function natsAuthOptions(credentials: NatsCredentials | null | undefined): { user?: string; pass?: string } {
  return credentials ? { user: credentials.user, pass: credentials.password } : {};
}

const DEFAULT_NATS_URL = 'nats://127.0.0.1:4222';

/**
 * The configuration of this process from `env`. `MINK_NODE_ID=auto` and `MINK_ADVERTISED_HOST=auto` are derived
 * from `host` (this machine's hostname and network interfaces; see `resolveProcessIdentity`), and every
 * value below that follows the advertised host follows the derived one. The secret files
 * (`MINK_CLUSTER_SECRET_FILE`, `MINK_METRICS_TOKEN_FILE`) are read here, with `readFile`, so one that cannot
 * be used stops the start before anything connects.
 */
export function readServiceConfig(
  env: NodeJS.ProcessEnv = process.env,
  defaults: { httpPort?: number } = {},
  host: () => HostFacts = currentHostFacts,
  readFile?: ReadBoundedFile,
): ServiceConfig {
  const identity = resolveProcessIdentity({ nodeId: env[ENV.nodeId] ?? '1', advertisedHost: env[ENV.advertisedHost] }, host, ENV);
  const httpHeadersTimeoutMs = duration(env[ENV.httpHeadersTimeoutMs], LIMITS.httpHeadersTimeoutMs, ENV.httpHeadersTimeoutMs);
  const httpRequestTimeoutMs = duration(env[ENV.httpRequestTimeoutMs], LIMITS.httpRequestTimeoutMs, ENV.httpRequestTimeoutMs);
  // Node.js refuses a header timeout above the request timeout: the request would be cut before its headers could be.
  if (httpHeadersTimeoutMs > httpRequestTimeoutMs) {
    throw new Error(`${ENV.httpHeadersTimeoutMs} (${httpHeadersTimeoutMs} ms) must not exceed ${ENV.httpRequestTimeoutMs} (${httpRequestTimeoutMs} ms)`);
  }
  return {
    natsUrl: env[ENV.natsUrl] ?? DEFAULT_NATS_URL,
    natsServers: parseNatsServers(env[ENV.natsUrl] ?? DEFAULT_NATS_URL),
    s3Endpoint: env[ENV.s3Endpoint] ?? 'http://127.0.0.1:9000',
    s3Bucket: env[ENV.s3Bucket] ?? DEFAULTS.s3Bucket,
    s3Region: env[ENV.s3Region] ?? 'us-east-1',
    s3AccessKeyId: env[ENV.s3AccessKeyId] ?? 'S3RVER',
    s3SecretAccessKey: env[ENV.s3SecretAccessKey] ?? 'S3RVER',
    nodeId: identity.nodeId,
    leaseTtlMs: duration(env[ENV.leaseTtlMs], DEFAULTS.leaseTtlMs, ENV.leaseTtlMs),
    coordinatorTickMs: duration(env[ENV.coordinatorTickMs], DEFAULTS.coordinatorTickMs, ENV.coordinatorTickMs),
    httpPort: integer(env[ENV.httpPort], defaults.httpPort ?? 0, ENV.httpPort),
    httpBindHost: bindHost(env[ENV.httpBindHost], identity.advertisedHost, ENV.httpBindHost),
    httpHeadersTimeoutMs,
    httpRequestTimeoutMs,
    httpKeepAliveTimeoutMs: duration(env[ENV.httpKeepAliveTimeoutMs], LIMITS.httpKeepAliveTimeoutMs, ENV.httpKeepAliveTimeoutMs),
    httpConnectionsMax: positiveInteger(env[ENV.httpConnectionsMax], LIMITS.httpConnectionsMax, ENV.httpConnectionsMax),
    grpcPort: integer(env[ENV.grpcPort], DEFAULTS.grpcPort, ENV.grpcPort),
    grpcBindHost: bindHost(env[ENV.grpcBindHost], identity.advertisedHost, ENV.grpcBindHost),
    advertisedHost: identity.advertisedHost ?? '127.0.0.1',
    kafkaPort: integer(env[ENV.kafkaPort], DEFAULTS.kafkaPort, ENV.kafkaPort),
    kafkaBindHost: bindHost(env[ENV.kafkaBindHost], identity.advertisedHost, ENV.kafkaBindHost),
    kafkaAutoCreateTopics: flag(env[ENV.kafkaAutoCreateTopics], true, ENV.kafkaAutoCreateTopics),
    kafkaDefaultPartitions: boundedInteger(env[ENV.kafkaDefaultPartitions], 1, 1, LIMITS.bucketsPerTableMax, ENV.kafkaDefaultPartitions),
    kafkaOffsetsRetentionMs: duration(env[ENV.kafkaOffsetsRetentionMs], DEFAULTS.kafkaOffsetsRetentionMs, ENV.kafkaOffsetsRetentionMs),
    kafkaGroupMaxSize: boundedInteger(env[ENV.kafkaGroupMaxSize], LIMITS.kafkaGroupMembersMax, 1, LIMITS.kafkaGroupMembersMax, ENV.kafkaGroupMaxSize),
    metaStream: env[ENV.metaStream] ?? DEFAULTS.metaStream,
    metaReplicas: boundedInteger(env[ENV.metaReplicas], 1, 1, LIMITS.metaReplicasMax, ENV.metaReplicas),
    metaSnapshotEveryCommands: positiveInteger(env[ENV.metaSnapshotEveryCommands], DEFAULTS.metaSnapshotEveryCommands, ENV.metaSnapshotEveryCommands),
    logLevel: env[ENV.logLevel] ?? 'info',
    dataDir: env[ENV.dataDir] ?? '',
    kvSnapshotIntervalMs: duration(env[ENV.kvSnapshotIntervalMs], DEFAULTS.kvSnapshotIntervalMs, ENV.kvSnapshotIntervalMs),
    appendsInFlightPerBucket: boundedInteger(env[ENV.appendsInFlightPerBucket], LIMITS.writerRequestsInFlightMax, 1, LIMITS.writerBatchesRemembered, ENV.appendsInFlightPerBucket),
    pipelinedAppendBytesMin: boundedInteger(env[ENV.pipelinedAppendBytesMin], LIMITS.appendRequestBytesPipelined, 1, LIMITS.appendRequestBytesMax, ENV.pipelinedAppendBytesMin),
    walUploadsInFlight: boundedInteger(env[ENV.walUploadsInFlight], LIMITS.walUploadsInFlightMax, 1, LIMITS.walUploadsInFlightLimit, ENV.walUploadsInFlight),
    streamTailCacheBytes: boundedInteger(env[ENV.streamTailCacheBytes], LIMITS.streamCacheBytesMax, 0, LIMITS.cacheBytesLimit, ENV.streamTailCacheBytes),
    streamReadCacheBytes: boundedInteger(env[ENV.streamReadCacheBytes], LIMITS.streamReadCacheBytesMax, 0, LIMITS.cacheBytesLimit, ENV.streamReadCacheBytes),
    lakeFileCacheBytes: boundedInteger(env[ENV.lakeFileCacheBytes], LIMITS.lakeReadCacheBytesMax, 0, LIMITS.cacheBytesLimit, ENV.lakeFileCacheBytes),
    heapGrowingPercent: boundedInteger(env[ENV.heapGrowingPercent], DEFAULTS.heapGrowingPercent, 0, LIMITS.heapGrowingPercentMax, ENV.heapGrowingPercent),
    partitionClockOffsetMs: signedInteger(env[ENV.partitionClockOffsetMs], 0, ENV.partitionClockOffsetMs),
    crashAt: parseCrashPoint(env[ENV.testCrashAt]),
    authTokensFile: env[ENV.authTokensFile] ?? '',
    allowUnauthenticated: flag(env[ENV.allowUnauthenticated], false, ENV.allowUnauthenticated),
    natsCredentials: readNatsCredentials(env),
    natsTls: readNatsTlsFiles(env),
    tls: readTlsFiles(env),
    ...readKafkaTls(env),
    clusterSecret: readSecretFile(env[ENV.clusterSecretFile], ENV.clusterSecretFile, readFile),
    metricsToken: readSecretFile(env[ENV.metricsTokenFile], ENV.metricsTokenFile, readFile),
  };
}
