import { DEFAULTS, LIMITS } from './limits';
import { ENV, natsAuthOptions, parseCrashPoint, readServiceConfig } from './env';

describe('readServiceConfig: MINK_META_SNAPSHOT_EVERY', () => {
  it('reads the snapshot interval of the metadata view, defaulting to DEFAULTS.metaSnapshotEveryCommands', () => {
    // Proves the variable reaches the config as a number and its absence gives the documented default (1000).
    expect(ENV.metaSnapshotEveryCommands).toBe('MINK_META_SNAPSHOT_EVERY');
    expect(readServiceConfig({}).metaSnapshotEveryCommands).toBe(DEFAULTS.metaSnapshotEveryCommands);
    expect(DEFAULTS.metaSnapshotEveryCommands).toBe(10_000);
    expect(readServiceConfig({ MINK_META_SNAPSHOT_EVERY: '250' }).metaSnapshotEveryCommands).toBe(250);
  });

  it.each(['0', '-5', '2.5', 'often'])('refuses %p, since a snapshot every zero or a fraction of commands means nothing', (value) => {
    // Proves a bad interval stops the service at start instead of disabling snapshots silently.
    expect(() => readServiceConfig({ MINK_META_SNAPSHOT_EVERY: value })).toThrow('MINK_META_SNAPSHOT_EVERY');
  });
});

describe('readServiceConfig: the data node caches (MINK_STREAM_TAIL_CACHE_BYTES, MINK_STREAM_READ_CACHE_BYTES, MINK_LAKE_FILE_CACHE_BYTES)', () => {
  it('defaults to the LIMITS bounds (128, 64 and 64 MiB) and reads 0 (off) up to 16 GiB', () => {
    // Proves an operator can fit a data node's caches to a memory budget without a build.
    expect(readServiceConfig({})).toMatchObject({ streamTailCacheBytes: 134_217_728, streamReadCacheBytes: 67_108_864, lakeFileCacheBytes: 67_108_864 });
    expect(readServiceConfig({ MINK_STREAM_TAIL_CACHE_BYTES: '0', MINK_STREAM_READ_CACHE_BYTES: '1048576', MINK_LAKE_FILE_CACHE_BYTES: '17179869184' })).toMatchObject({
      streamTailCacheBytes: 0,
      streamReadCacheBytes: 1_048_576,
      lakeFileCacheBytes: 17_179_869_184,
    });
  });

  it.each([
    ['MINK_STREAM_TAIL_CACHE_BYTES', '-1'],
    ['MINK_STREAM_READ_CACHE_BYTES', '64MiB'],
    ['MINK_LAKE_FILE_CACHE_BYTES', '17179869185'],
  ])('refuses %s=%p at start, naming the variable', (name, value) => {
    // Proves a negative, unitful or too large bound stops the service instead of being read as something else.
    expect(() => readServiceConfig({ [name]: value })).toThrow(name);
  });
});

describe('readServiceConfig: MINK_APPENDS_IN_FLIGHT, MINK_PIPELINED_APPEND_BYTES and MINK_WAL_UPLOADS_IN_FLIGHT', () => {
  it('defaults to LIMITS.writerRequestsInFlightMax (5), LIMITS.appendRequestBytesPipelined (256 KiB) and LIMITS.walUploadsInFlightMax (4), and reads values in range', () => {
    // Proves the pipelining knobs reach the config, so the gateway and data nodes can be tuned without a build.
    expect(readServiceConfig({})).toMatchObject({ appendsInFlightPerBucket: 5, pipelinedAppendBytesMin: 262_144, walUploadsInFlight: 4 });
    expect(readServiceConfig({ MINK_APPENDS_IN_FLIGHT: '1', MINK_PIPELINED_APPEND_BYTES: '1', MINK_WAL_UPLOADS_IN_FLIGHT: '16' })).toMatchObject({
      appendsInFlightPerBucket: 1,
      pipelinedAppendBytesMin: 1,
      walUploadsInFlight: 16,
    });
    expect(readServiceConfig({ MINK_PIPELINED_APPEND_BYTES: '524288' })).toMatchObject({ pipelinedAppendBytesMin: 524_288 });
  });

  it.each([
    ['MINK_APPENDS_IN_FLIGHT', '0'],
    ['MINK_APPENDS_IN_FLIGHT', '6'],
    ['MINK_PIPELINED_APPEND_BYTES', '0'],
    ['MINK_PIPELINED_APPEND_BYTES', '524289'],
    ['MINK_PIPELINED_APPEND_BYTES', '256KiB'],
    ['MINK_WAL_UPLOADS_IN_FLIGHT', '0'],
    ['MINK_WAL_UPLOADS_IN_FLIGHT', '65'],
    ['MINK_WAL_UPLOADS_IN_FLIGHT', 'many'],
  ])('refuses %s=%p at start, naming the variable', (name, value) => {
    // Proves a window the writer sequences cannot cover (more than 5 appends), bytes beyond one request or a nonsense count stops the service.
    expect(() => readServiceConfig({ [name]: value })).toThrow(name);
  });
});

describe('readServiceConfig: MINK_HEAP_GROWING_PERCENT', () => {
  it('defaults to DEFAULTS.heapGrowingPercent (300) and reads 0 to LIMITS.heapGrowingPercentMax', () => {
    // Proves the GC tuning reaches every service's config and can be turned off (0) or changed without a build.
    expect(readServiceConfig({}).heapGrowingPercent).toBe(300);
    expect(readServiceConfig({ MINK_HEAP_GROWING_PERCENT: '0' }).heapGrowingPercent).toBe(0);
    expect(readServiceConfig({ MINK_HEAP_GROWING_PERCENT: '1000' }).heapGrowingPercent).toBe(1000);
  });

  it.each(['-1', '1001', '3.5', 'lots'])('refuses %p at start, naming the variable', (value) => {
    expect(() => readServiceConfig({ MINK_HEAP_GROWING_PERCENT: value })).toThrow('MINK_HEAP_GROWING_PERCENT');
  });
});

describe('readServiceConfig: the bind addresses of the HTTP, Kafka and gRPC listeners', () => {
  it.each([
    [undefined, '127.0.0.1'],
    ['127.0.0.1', '127.0.0.1'],
    ['127.0.1.1', '127.0.0.1'],
    ['localhost', '127.0.0.1'],
    ['::1', '::1'],
    ['10.1.2.3', '0.0.0.0'],
    ['broker-1.example', '0.0.0.0'],
  ])('binds loopback only for a loopback advertised host: %s -> %s', (advertised, bind) => {
    // Proves secure by default: a process advertised on loopback (every process of `mink up`) listens on loopback only.
    const config = readServiceConfig(advertised === undefined ? {} : { MINK_ADVERTISED_HOST: advertised });
    expect({ http: config.httpBindHost, kafka: config.kafkaBindHost, grpc: config.grpcBindHost }).toEqual({ http: bind, kafka: bind, grpc: bind });
  });

  it('takes MINK_HTTP_BIND_HOST and MINK_KAFKA_BIND_HOST as they are, each on its own', () => {
    expect(readServiceConfig({ MINK_ADVERTISED_HOST: '127.0.0.1', MINK_KAFKA_BIND_HOST: '0.0.0.0' })).toMatchObject({ kafkaBindHost: '0.0.0.0', httpBindHost: '127.0.0.1' });
    expect(readServiceConfig({ MINK_ADVERTISED_HOST: '127.0.0.1', MINK_HTTP_BIND_HOST: ' 0.0.0.0 ' })).toMatchObject({ kafkaBindHost: '127.0.0.1', httpBindHost: '0.0.0.0' });
    expect(readServiceConfig({ MINK_ADVERTISED_HOST: '127.0.0.1', MINK_GRPC_BIND_HOST: '0.0.0.0' })).toMatchObject({ grpcBindHost: '0.0.0.0', httpBindHost: '127.0.0.1' });
  });

  it('reads MINK_GRPC_PORT, 50051 by default and 0 for a free port', () => {
    // Proves the gateway's gRPC port follows DESIGN's default and takes 0 like the other ports.
    expect(readServiceConfig({}).grpcPort).toBe(50051);
    expect(readServiceConfig({ MINK_GRPC_PORT: '0' }).grpcPort).toBe(0);
    expect(() => readServiceConfig({ MINK_GRPC_PORT: 'fifty' })).toThrow("MINK_GRPC_PORT: 'fifty' is not a non-negative integer");
  });

  it.each(['MINK_HTTP_BIND_HOST', 'MINK_KAFKA_BIND_HOST', 'MINK_GRPC_BIND_HOST'])('refuses an empty %s at start, naming it', (name) => {
    // Proves a blank variable (a templating slip) does not silently fall back to a default address.
    expect(() => readServiceConfig({ [name]: ' ' })).toThrow(name);
  });
});

describe('readServiceConfig: MINK_PARTITION_CLOCK_OFFSET_MS', () => {
  it.each<[string | undefined, number]>([
    [undefined, 0],
    ['', 0],
    ['0', 0],
    ['7200000', 7_200_000],
    ['-1800000', -1_800_000],
  ])('reads %p as an offset of %d ms', (value, offsetMs) => {
    // Proves the test-only clock offset of the partition loop defaults to none and may move the clock either way.
    expect(ENV.partitionClockOffsetMs).toBe('MINK_PARTITION_CLOCK_OFFSET_MS');
    expect(readServiceConfig(value === undefined ? {} : { MINK_PARTITION_CLOCK_OFFSET_MS: value }).partitionClockOffsetMs).toBe(offsetMs);
  });

  it.each(['1.5', '1e3', 'soon', ' 5', '+5', '0x10', '-', '99999999999999999999'])('refuses %p at start, naming the variable', (value) => {
    // Proves a typo stops the coordinator instead of planning partitions with a clock nobody asked for.
    expect(() => readServiceConfig({ MINK_PARTITION_CLOCK_OFFSET_MS: value })).toThrow("MINK_PARTITION_CLOCK_OFFSET_MS: '" + value + "' is not an integer");
  });
});

describe('readServiceConfig: MINK_TEST_CRASH_AT', () => {
  it.each<[string | undefined, ReturnType<typeof parseCrashPoint>]>([
    [undefined, null],
    ['', null],
    ['wal-uploading:1', { point: 'wal-uploading', occurrence: 1 }],
    ['wal-uploaded:20', { point: 'wal-uploaded', occurrence: 20 }],
    ['wal-committed:300', { point: 'wal-committed', occurrence: 300 }],
  ])('reads %p as %p', (value, expected) => {
    // Proves production runs without a crash point, and a fault test gets exactly the point and occurrence it named.
    expect(ENV.testCrashAt).toBe('MINK_TEST_CRASH_AT');
    expect(readServiceConfig(value === undefined ? {} : { MINK_TEST_CRASH_AT: value }).crashAt).toEqual(expected);
  });

  it.each(['wal-uploaded', 'wal-uploaded:0', 'wal-uploaded:-1', 'wal-uploaded:1.5', 'wal-flushed:3', 'WAL-UPLOADED:3', ' wal-uploaded:3', 'wal-uploaded:3:4'])('refuses %p at start, naming the variable and the points', (value) => {
    // Proves a fault test with a typo in its crash point fails to start instead of running without its fault.
    expect(() => readServiceConfig({ MINK_TEST_CRASH_AT: value })).toThrow(`MINK_TEST_CRASH_AT: '${value}' is not <point>:<occurrence> with a point of wal-uploading, wal-uploaded, wal-committed`);
  });
});

describe('readServiceConfig: MINK_NATS_URL with one or several servers', () => {
  it.each<[string | undefined, string[]]>([
    [undefined, ['nats://127.0.0.1:4222']],
    ['nats://127.0.0.1:4301', ['nats://127.0.0.1:4301']],
    ['nats://127.0.0.1:4301,nats://127.0.0.1:4302,nats://127.0.0.1:4303', ['nats://127.0.0.1:4301', 'nats://127.0.0.1:4302', 'nats://127.0.0.1:4303']],
    [' nats://a:4222 , nats://b:4222 ', ['nats://a:4222', 'nats://b:4222']],
    ['127.0.0.1:4301,127.0.0.1:4302', ['127.0.0.1:4301', '127.0.0.1:4302']],
  ])('reads %p as the servers %p', (value, servers) => {
    // Proves a comma-separated list reaches every NATS connection as an array, and one URL stays one server.
    expect(ENV.natsUrl).toBe('MINK_NATS_URL');
    const config = readServiceConfig(value === undefined ? {} : { MINK_NATS_URL: value });
    expect(config.natsServers).toEqual(servers);
    expect(config.natsUrl).toBe(value ?? 'nats://127.0.0.1:4222');
  });

  it.each(['', ',', 'nats://a:4222,', 'nats://a:4222,,nats://b:4222', 'nats://a :4222'])('refuses %p at start, naming the variable', (value) => {
    // Proves a templating slip (an empty entry) stops the service instead of connecting to fewer servers than meant.
    expect(() => readServiceConfig({ MINK_NATS_URL: value })).toThrow('MINK_NATS_URL');
  });
});

describe('readServiceConfig: MINK_META_REPLICAS', () => {
  it.each<[string | undefined, number]>([
    [undefined, 1],
    ['', 1],
    ['1', 1],
    ['2', 2],
    ['3', 3],
    ['5', 5],
  ])('reads %p as %d replicas of the metadata stream and KV buckets', (value, replicas) => {
    // Proves the default stays one replica (one embedded server) and a clustered NATS can ask for up to 5.
    expect(ENV.metaReplicas).toBe('MINK_META_REPLICAS');
    expect(readServiceConfig(value === undefined ? {} : { MINK_META_REPLICAS: value }).metaReplicas).toBe(replicas);
  });

  it.each(['0', '6', '-1', '2.5', 'three'])('refuses %p at start, naming the variable and the range', (value) => {
    // Proves JetStream's bound (at most 5 replicas) and nonsense stop the service before it creates anything.
    expect(() => readServiceConfig({ MINK_META_REPLICAS: value })).toThrow(/MINK_META_REPLICAS/);
    if (/^\d+$/.test(value)) expect(() => readServiceConfig({ MINK_META_REPLICAS: value })).toThrow('is not an integer from 1 to 5');
  });
});

describe('readServiceConfig: NATS credentials and the gateway TLS files', () => {
  it('reads MINK_NATS_USER with MINK_NATS_PASSWORD, and none when neither is set or both are empty', () => {
    // Proves a service connects with credentials exactly when both variables are given.
    expect(readServiceConfig({}).natsCredentials).toBeNull();
    expect(readServiceConfig({ MINK_NATS_USER: '', MINK_NATS_PASSWORD: '' }).natsCredentials).toBeNull();
    expect(readServiceConfig({ MINK_NATS_USER: 'mink', MINK_NATS_PASSWORD: 'p4ss-w0rd' }).natsCredentials).toEqual({ user: 'mink', password: 'p4ss-w0rd' });
  });

  it.each([
    [{ MINK_NATS_USER: 'mink' }, 'MINK_NATS_PASSWORD is missing'],
    [{ MINK_NATS_PASSWORD: 'only-a-secret-1234' }, 'MINK_NATS_USER is missing'],
    [{ MINK_TLS_CERT_FILE: '/etc/mink/cert.pem' }, 'MINK_TLS_KEY_FILE is missing'],
    [{ MINK_TLS_KEY_FILE: '/etc/mink/key.pem' }, 'MINK_TLS_CERT_FILE is missing'],
  ])('refuses half a pair %p, naming the missing variable and never a value', (env, message) => {
    // Proves a half-configured secret stops the start (rather than connecting in the clear) and the error leaks no secret.
    let error: Error | undefined;
    try {
      readServiceConfig(env);
    } catch (thrown) {
      error = thrown as Error;
    }
    expect(error?.message).toContain(message);
    expect(error?.message).not.toContain('only-a-secret-1234');
  });

  it('reads MINK_TLS_CERT_FILE with MINK_TLS_KEY_FILE, and none without them', () => {
    expect(readServiceConfig({}).tls).toBeNull();
    expect(readServiceConfig({ MINK_TLS_CERT_FILE: '/c.pem', MINK_TLS_KEY_FILE: '/k.pem' }).tls).toEqual({ certFile: '/c.pem', keyFile: '/k.pem' });
  });

  it('gives nats.js user and pass for credentials, and nothing without them', () => {
    expect(natsAuthOptions({ user: 'u', password: 'p' })).toEqual({ user: 'u', pass: 'p' });
    expect(natsAuthOptions(null)).toEqual({});
    expect(natsAuthOptions(undefined)).toEqual({});
  });
});

describe('readServiceConfig: MINK_KAFKA_AUTO_CREATE_TOPICS and MINK_KAFKA_DEFAULT_PARTITIONS', () => {
  it.each<[Record<string, string>, boolean, number]>([
    [{}, true, 1],
    [{ MINK_KAFKA_AUTO_CREATE_TOPICS: 'false' }, false, 1],
    [{ MINK_KAFKA_AUTO_CREATE_TOPICS: 'TRUE', MINK_KAFKA_DEFAULT_PARTITIONS: '6' }, true, 6],
  ])('%p: auto-creation %p, %p partitions', (env, autoCreate, partitions) => {
    // Proves topics are created on first use by default, as Kafka's auto.create.topics.enable, with num.partitions 1.
    const config = readServiceConfig(env);
    expect([config.kafkaAutoCreateTopics, config.kafkaDefaultPartitions]).toEqual([autoCreate, partitions]);
  });

  it.each([
    [{ MINK_KAFKA_AUTO_CREATE_TOPICS: 'yes' }, "MINK_KAFKA_AUTO_CREATE_TOPICS: 'yes' is not true or false"],
    [{ MINK_KAFKA_DEFAULT_PARTITIONS: '0' }, 'MINK_KAFKA_DEFAULT_PARTITIONS'],
    [{ MINK_KAFKA_DEFAULT_PARTITIONS: '5000' }, 'MINK_KAFKA_DEFAULT_PARTITIONS'],
  ])('refuses %p at start, naming the variable', (env, message) => {
    expect(() => readServiceConfig(env)).toThrow(message);
  });
});

describe('readServiceConfig: MINK_KAFKA_GROUP_MAX_SIZE', () => {
  it.each<[Record<string, string>, number]>([
    [{}, LIMITS.kafkaGroupMembersMax],
    [{ MINK_KAFKA_GROUP_MAX_SIZE: '3' }, 3],
  ])('%p: %p members', (env, members) => {
    expect(readServiceConfig(env).kafkaGroupMaxSize).toBe(members);
  });

  it.each(['0', String(LIMITS.kafkaGroupMembersMax + 1), 'many'])('refuses %p, naming the variable', (value) => {
    // A group may not be capped beyond what the coordinator is built to hold, nor at nothing.
    expect(() => readServiceConfig({ MINK_KAFKA_GROUP_MAX_SIZE: value })).toThrow('MINK_KAFKA_GROUP_MAX_SIZE');
  });
});

describe('readServiceConfig: MINK_KAFKA_OFFSETS_RETENTION_MS', () => {
  it.each<[Record<string, string>, number]>([
    [{}, 7 * 24 * 3_600_000],
    [{ MINK_KAFKA_OFFSETS_RETENTION_MS: '2h' }, 7_200_000],
    [{ MINK_KAFKA_OFFSETS_RETENTION_MS: '1500' }, 1_500],
  ])('%p: %p ms', (env, retentionMs) => {
    // Proves a member-less group's offsets are kept Kafka's 7 days unless told otherwise.
    expect(readServiceConfig(env).kafkaOffsetsRetentionMs).toBe(retentionMs);
  });

  it('refuses a value that is not a duration, naming the variable', () => {
    expect(() => readServiceConfig({ MINK_KAFKA_OFFSETS_RETENTION_MS: 'soon' })).toThrow('MINK_KAFKA_OFFSETS_RETENTION_MS');
  });
});

describe('readServiceConfig: MINK_HTTP_HEADERS_TIMEOUT_MS, MINK_HTTP_REQUEST_TIMEOUT_MS and MINK_HTTP_KEEP_ALIVE_TIMEOUT_MS', () => {
  it('defaults to the LIMITS (10 s, 120 s, 65 s) and reads durations', () => {
    // Proves every service's HTTP timeouts reach its config, and tests can shorten them without a build.
    expect(readServiceConfig({})).toMatchObject({
      httpHeadersTimeoutMs: LIMITS.httpHeadersTimeoutMs,
      httpRequestTimeoutMs: LIMITS.httpRequestTimeoutMs,
      httpKeepAliveTimeoutMs: LIMITS.httpKeepAliveTimeoutMs,
    });
    expect([LIMITS.httpHeadersTimeoutMs, LIMITS.httpRequestTimeoutMs, LIMITS.httpKeepAliveTimeoutMs]).toEqual([10_000, 120_000, 65_000]);
    expect(readServiceConfig({ MINK_HTTP_HEADERS_TIMEOUT_MS: '1500', MINK_HTTP_REQUEST_TIMEOUT_MS: '3s', MINK_HTTP_KEEP_ALIVE_TIMEOUT_MS: '2s' })).toMatchObject({
      httpHeadersTimeoutMs: 1_500,
      httpRequestTimeoutMs: 3_000,
      httpKeepAliveTimeoutMs: 2_000,
    });
  });

  it.each([
    ['MINK_HTTP_HEADERS_TIMEOUT_MS', { MINK_HTTP_HEADERS_TIMEOUT_MS: '0' }],
    ['MINK_HTTP_REQUEST_TIMEOUT_MS', { MINK_HTTP_REQUEST_TIMEOUT_MS: 'never' }],
    ['MINK_HTTP_KEEP_ALIVE_TIMEOUT_MS', { MINK_HTTP_KEEP_ALIVE_TIMEOUT_MS: '-1' }],
    // Node.js cuts a request at its request timeout, so a longer header timeout could never apply.
    ['MINK_HTTP_HEADERS_TIMEOUT_MS', { MINK_HTTP_HEADERS_TIMEOUT_MS: '20s', MINK_HTTP_REQUEST_TIMEOUT_MS: '10s' }],
    ['MINK_HTTP_HEADERS_TIMEOUT_MS', { MINK_HTTP_HEADERS_TIMEOUT_MS: '130s' }],
  ])('refuses %s in %p at start, naming the variable', (name, env) => {
    // Proves a timeout that is zero, not a duration, or above the request timeout stops the service instead of leaving connections unbounded.
    expect(() => readServiceConfig(env)).toThrow(name);
  });
});
