import { Client as GrpcClient, credentials, status as GrpcStatus, type Client, type Metadata, type ServiceError } from '@grpc/grpc-js';
import { LIMITS } from '@mink/config';
import { parseAccessPolicy, type GatewayService } from '@mink/http-api';
import { InvalidArgumentError, MinkError, NotFoundError } from '@mink/protocol';
import { InFlightBytes, internalErrorMessage } from '@mink/runtime';
import { bearerMetadata, callClientStreaming, callUnary, collectServerStream, listReflectedServices, openGatewayGrpcClients, reflectedFilesOfSymbol, type GatewayGrpcClients } from './grpc-client';
import { encodeBatch, encodeScanPage } from '@mink/records';
import { eventually } from '@mink/testing';
import { GrpcGateway } from './grpc-gateway';

/**
 * The gRPC listener over a recording GatewayService, with a real grpc-js client: every method checks the
 * bearer token with the HTTP API's rule and scopes before it reaches the service, failures carry the mink
 * code in trailing metadata, health follows readiness and stays open, as does reflection.
 */

/** One token per scope, named after it. */
const TOKEN_OF_SCOPE = { admin: 'grpc-admin-token-0001', write: 'grpc-write-token-0001', read: 'grpc-read-token-00001' } as const;
const { admin: ADMIN, write: WRITER, read: READER } = TOKEN_OF_SCOPE;
/** A read token for the table `events` alone. */
const EVENTS_READER = 'grpc-events-read-token-1';
const POLICY = parseAccessPolicy(
  JSON.stringify({
    tokens: [...Object.entries(TOKEN_OF_SCOPE).map(([scope, token]) => ({ name: scope, token, scopes: [scope] })), { name: 'events-reader', token: EVENTS_READER, scopes: ['read'], tables: ['events'] }],
  }),
  'tokens.json',
);

type Call = (client: Client, metadata: Metadata) => Promise<unknown>;

const unary =
  (method: string, request: object): Call =>
  (client, metadata) =>
    callUnary(client, method, request, metadata);

/** Every method of mink.v1.Mink with a request, the scope it needs, and the service call it makes. */
const METHODS: [string, Call, 'read' | 'write' | 'admin', string][] = [
  ['CreateTable', unary('CreateTable', { name: 'events', columns: [{ name: 'id', type: 'int64' }] }), 'admin', 'createTable'],
  ['ListTables', unary('ListTables', {}), 'read', 'listTables'],
  ['DescribeTable', unary('DescribeTable', { name: 'events' }), 'read', 'describeTable'],
  ['AlterTable', unary('AlterTable', { name: 'events', set: { 'table.log.ttl': '1d' } }), 'admin', 'alterTable'],
  ['DropTable', unary('DropTable', { name: 'events' }), 'admin', 'dropTable'],
  ['Append', (client, metadata) => callClientStreaming(client, 'Append', [{ table: 'events', rowsJson: '[{"id":"1"}]' }], metadata), 'write', 'append'],
  ['Put', unary('Put', { table: 'events', rowsJson: '[{"id":"1"}]' }), 'write', 'put'],
  ['Delete', unary('Delete', { table: 'events', keysJson: '[{"id":"1"}]' }), 'write', 'delete'],
  ['Lookup', unary('Lookup', { table: 'events', keysJson: '[{"id":"1"}]' }), 'read', 'lookup'],
  ['PrefixLookup', unary('PrefixLookup', { table: 'events', prefixesJson: '[{"id":"1"}]' }), 'read', 'prefixLookup'],
  ['Scan', (client, metadata) => collectServerStream(client, 'Scan', { table: 'events', bucket: 0 }, metadata), 'read', 'openScan'],
  ['ClusterStatus', unary('ClusterStatus', {}), 'read', 'clusterStatus'],
  ['Rebalance', unary('Rebalance', { dryRun: true }), 'admin', 'rebalance'],
  ['KafkaGroups', unary('KafkaGroups', {}), 'read', 'kafkaGroups'],
];

/** GET /v1/cluster's answer: a table with a lake never tiered, one without, and a bucket of each kind. */
const CLUSTER_STATUS = {
  coordinator: { node: 'coordinator-1', epoch: 2 },
  nodes: [],
  bucketStates: { open: 2, opening: 0, unavailable: 0 },
  tables: [
    { table: 'events', buckets: 1, endOffset: 9_007_199_254_740_000, bytes: 4_096, lakeOffset: 0, tieredAt: null },
    { table: 'users', buckets: 1, endOffset: 3, bytes: 120 },
  ],
  buckets: [
    { table: 'events', bucket: 0, leader: '1', leaderEpoch: 1, streamEpoch: 1, state: 'open', startOffset: 0, endOffset: 9_007_199_254_740_000, bytes: 4_096, walSlices: 2, lakeOffset: 0 },
    { table: 'users', bucket: 0, leader: null, leaderEpoch: 1, streamEpoch: 1, state: 'open', startOffset: 1, endOffset: 3, bytes: 120, walSlices: 0 },
  ],
};

/** GET /v1/kafka/groups's answer: a lag near 2^53, a committed offset beyond the end, a topic dropped since. */
const KAFKA_GROUPS = {
  groups: [
    {
      group: 'billing',
      state: 'Stable',
      members: 2,
      lag: 9_007_199_254_739_997,
      partitions: [
        { topic: 'orders', partition: 0, committedOffset: 3, endOffset: 9_007_199_254_740_000, lag: 9_007_199_254_739_997 },
        { topic: 'orders', partition: 1, committedOffset: 7, endOffset: 5, lag: -2 },
        { topic: 'gone', partition: 0, committedOffset: 4, endOffset: null, lag: null },
      ],
    },
  ],
  unavailableBuckets: 1,
  truncated: false,
};

/** A page of one record at offset 5 whose int64 is beyond 2^53. */
const STORED = [{ startOffset: 5, payload: encodeBatch([{ name: 'id', type: 'int64' }], [{ id: 9_007_199_254_740_993n }], 1_764_655_200_000) }];
const ENCODED = encodeScanPage({ columns: [{ name: 'id', type: 'int64' }], changelog: false }, STORED, 5, 100, 1 << 20);
const SCAN_PAGE = { records: ENCODED.records, nextOffset: ENCODED.nextOffset, highWatermark: 6, startOffset: 0, batch: new Uint8Array(Buffer.concat(ENCODED.stream)) };

const TABLE = {
  name: 'events',
  tableId: 3,
  kind: 'log',
  columns: [{ name: 'id', type: 'int64' }],
  primaryKey: [],
  bucketKey: [],
  buckets: 1,
  properties: {},
  createdAt: '2026-12-02T06:00:00.000Z',
};

describe('GrpcGateway', () => {
  const calls: string[] = [];
  /** What ClusterStatus and KafkaGroups asked the service for. */
  const queries: object[] = [];
  let ready = false;
  const record =
    <T>(name: string, answer: T) =>
    async (...args: unknown[]) => {
      calls.push(name);
      if (name === 'put' && (args[1] as { rows: unknown[] }).rows.length === 0) throw new InvalidArgumentError('put body: rows is empty');
      return answer;
    };
  const service = {
    createTable: record('createTable', TABLE),
    listTables: () => (calls.push('listTables'), { tables: [TABLE] }),
    describeTable: (name: string) => {
      calls.push('describeTable');
      if (name !== 'events') throw new NotFoundError(`table '${name}' does not exist`);
      return TABLE;
    },
    alterTable: record('alterTable', TABLE),
    dropTable: record('dropTable', { dropped: 'events' }),
    append: record('append', { appended: 1, buckets: [{ bucket: 0, baseOffset: 9_007_199_254_740_000, count: 1 }] }),
    put: record('put', { written: 1, buckets: [{ bucket: 0, operations: 1, baseOffset: 0, count: 1 }] }),
    delete: record('delete', { written: 1, buckets: [{ bucket: 0, operations: 1, baseOffset: 1, count: 1 }] }),
    lookup: record('lookup', { rows: [{ id: '1' }, null] }),
    prefixLookup: record('prefixLookup', { results: [{ rows: [{ id: '1' }], truncated: false }] }),
    openScan: async () => {
      calls.push('openScan');
      return { first: SCAN_PAGE, rest: (async function* () {})(), offset: 5, limit: 1000 };
    },
    clusterStatus: async (query: { listBuckets: boolean; table?: string }) => {
      calls.push('clusterStatus');
      queries.push(query);
      if (query.table === 'missing') throw new NotFoundError("table 'missing' does not exist");
      return CLUSTER_STATUS;
    },
    kafkaGroups: async (query: { group?: string }) => {
      calls.push('kafkaGroups');
      queries.push(query);
      return KAFKA_GROUPS;
    },
    rebalance: record('rebalance', { moves: [{ table: 'events', bucket: 0, from: null, to: '2' }], dryRun: true }),
  } as unknown as GatewayService;

  let guarded: GrpcGateway;
  let open: GrpcGateway;
  let guardedClients: GatewayGrpcClients;
  let openClients: GatewayGrpcClients;
  let guardedClient: Client;
  let openClient: Client;
  let openPort = 0;

  beforeAll(async () => {
    guarded = new GrpcGateway({ gateway: service, policy: POLICY, isReady: () => ready });
    open = new GrpcGateway({ gateway: service, policy: null, isReady: () => true });
    guardedClients = openGatewayGrpcClients(`127.0.0.1:${await guarded.listen('127.0.0.1', 0)}`);
    openPort = await open.listen('127.0.0.1', 0);
    openClients = openGatewayGrpcClients(`127.0.0.1:${openPort}`);
    guardedClient = guardedClients.mink;
    openClient = openClients.mink;
  });
  afterAll(async () => {
    guardedClients.close();
    openClients.close();
    await guarded.stop(1_000);
    await open.stop(1_000);
  });
  beforeEach(() => {
    calls.length = 0;
    queries.length = 0;
  });

  const withToken = bearerMetadata;

  it.each(METHODS)('%s: UNAUTHENTICATED without a token or with an unknown one, PERMISSION_DENIED or served by scope', async (_method, call, scope, serviceCall) => {
    // Proves every method is guarded, and a refused call never reaches the service.
    for (const token of [undefined, 'unknown-token-0000000001']) {
      const refused = await call(guardedClient, withToken(token)).catch((error: ServiceError) => error);
      expect([(refused as ServiceError).code, (refused as ServiceError).metadata.get('mink-error-code')]).toEqual([GrpcStatus.UNAUTHENTICATED, ['Unauthenticated']]);
    }
    expect(calls).toEqual([]);
    for (const token of [ADMIN, WRITER, READER]) {
      const allowed = token === ADMIN || (token === WRITER && scope === 'write') || (token === READER && scope === 'read');
      const outcome = await call(guardedClient, withToken(token)).then(
        () => 'served',
        (error: ServiceError) => `${GrpcStatus[error.code]} ${String(error.metadata.get('mink-error-code'))}`,
      );
      expect([token, outcome]).toEqual([token, allowed ? 'served' : 'PERMISSION_DENIED PermissionDenied']);
    }
    expect(calls.filter((name) => name === serviceCall)).toHaveLength(scope === 'admin' ? 1 : 2);
    // No policy: no token asked for.
    await expect(call(openClient, withToken())).resolves.toBeDefined();
  });

  it('answers in the messages of mink.proto: uint64 as exact decimal strings, nulls as empty strings, rows as JSON', async () => {
    const appended = await METHODS.find(([name]) => name === 'Append')![1](openClient, withToken());
    expect(appended).toEqual({ appended: '1', messages: '1', ranges: [{ bucket: 0, partition: '', baseOffset: '9007199254740000', count: '1' }] });
    expect(await unary('Lookup', { table: 'events', keysJson: '[{"id":"1"},{"id":"2"}]' })(openClient, withToken())).toEqual({ rowsJson: '[{"id":"1"},null]' });
    expect(await unary('Rebalance', { dryRun: true })(openClient, withToken())).toEqual({ moves: [{ table: 'events', partition: '', bucket: 0, from: '', to: '2' }], dryRun: true });
    const described = (await unary('DescribeTable', { name: 'events' })(openClient, withToken())) as { tableId: string; descriptionJson: string; kind: string };
    expect([described.tableId, described.kind, JSON.parse(described.descriptionJson)]).toEqual(['3', 'log', TABLE]);
    expect(await METHODS.find(([name]) => name === 'Scan')![1](openClient, withToken())).toEqual([
      { recordsJson: '[{"offset":5,"timestamp":1764655200000,"row":{"id":"9007199254740993"}}]', arrowIpc: Buffer.alloc(0), records: '1', nextOffset: '6', highWatermark: '6' },
    ]);
    const [arrow] = await collectServerStream(openClient, 'Scan', { table: 'events', format: 'SCAN_FORMAT_ARROW' });
    expect([arrow.recordsJson, Buffer.compare(arrow.arrowIpc, Buffer.from(SCAN_PAGE.batch))]).toEqual(['', 0]);
  });

  it('refuses bad input with INVALID_ARGUMENT naming the field, and an unknown table with NOT_FOUND, before any write', async () => {
    const failureOf = (call: Promise<unknown>) => call.then(() => null, (error: ServiceError) => [GrpcStatus[error.code], error.details, error.metadata.get('mink-error-code')[0]]);
    expect(await failureOf(unary('Put', { table: 'events', rowsJson: '{"id":1}' })(openClient, withToken()))).toEqual(['INVALID_ARGUMENT', 'rows_json must be a JSON array, got object', 'InvalidArgument']);
    expect(await failureOf(unary('Put', { table: 'events', rowsJson: '[{"id":' })(openClient, withToken()))).toEqual(['INVALID_ARGUMENT', expect.stringContaining('rows_json: is not valid JSON'), 'InvalidArgument']);
    expect(await failureOf(unary('Put', { rowsJson: '[]' })(openClient, withToken()))).toEqual(['INVALID_ARGUMENT', 'table is required', 'InvalidArgument']);
    expect(await failureOf(unary('Put', { table: 'events', rowsJson: '[]' })(openClient, withToken()))).toEqual(['INVALID_ARGUMENT', 'put body: rows is empty', 'InvalidArgument']);
    expect(await failureOf(unary('DescribeTable', { name: 'missing' })(openClient, withToken()))).toEqual(['NOT_FOUND', "table 'missing' does not exist", 'NotFound']);
    expect(await failureOf(unary('AlterTable', { name: 'events' })(openClient, withToken()))).toEqual(['INVALID_ARGUMENT', 'set or remove must name at least one property', 'InvalidArgument']);
    expect(calls).toEqual(['put', 'describeTable']);
  });

  it('answers ClusterStatus with the table totals and bucket figures of GET /v1/cluster, and KafkaGroups with each lag', async () => {
    // Proves int64 values near 2^53 and negative ones arrive exact, and that null and absent differ where they mean different things.
    const status = await unary('ClusterStatus', {})(openClient, withToken());
    expect(status).toMatchObject({
      tables: [
        { table: 'events', buckets: 1, endOffset: '9007199254740000', bytes: '4096', lakeOffset: '0', tieredAt: '' },
        { table: 'users', buckets: 1, endOffset: '3', bytes: '120', tieredAt: '' },
      ],
      buckets: [
        { table: 'events', partition: '', bucket: 0, leader: '1', state: 'open', startOffset: '0', endOffset: '9007199254740000', bytes: '4096', walSlices: 2, lakeOffset: '0' },
        { table: 'users', partition: '', bucket: 0, leader: '', state: 'open', startOffset: '1', endOffset: '3', bytes: '120', walSlices: 0 },
      ],
    });
    const [withLake, withoutLake] = (status as { tables: object[] }).tables;
    expect(['lakeOffset' in withLake!, 'lakeOffset' in withoutLake!, 'lakeOffset' in (status as { buckets: object[] }).buckets[1]!]).toEqual([true, false, false]);
    // toMatchObject: proto-loader's client adds the synthetic oneof of each proto3 optional set (`_lag: 'lag'`).
    const groups = (await unary('KafkaGroups', { group: 'billing' })(openClient, withToken())) as { groups: { partitions: object[] }[] };
    expect(groups).toMatchObject({
      groups: [
        {
          group: 'billing',
          state: 'Stable',
          members: 2,
          lag: '9007199254739997',
          partitions: [
            { topic: 'orders', partition: 0, committedOffset: '3', endOffset: '9007199254740000', lag: '9007199254739997' },
            { topic: 'orders', partition: 1, committedOffset: '7', endOffset: '5', lag: '-2' },
            { topic: 'gone', partition: 0, committedOffset: '4' },
          ],
        },
      ],
      unavailableBuckets: 1,
      truncated: false,
    });
    expect(['endOffset' in groups.groups[0]!.partitions[2]!, 'lag' in groups.groups[0]!.partitions[2]!]).toEqual([false, false]);
    expect(queries).toEqual([{ listBuckets: true }, { group: 'billing' }]);
  });

  it('checks ClusterStatus.table and KafkaGroups.group as the HTTP API checks ?table= and ?group=', async () => {
    // Proves the same pure checks as GET /v1/cluster and GET /v1/kafka/groups: a bad filter never reaches the service, an unknown table is its NotFound.
    const failureOf = (call: Promise<unknown>) => call.then(() => null, (error: ServiceError) => [GrpcStatus[error.code], error.details, error.metadata.get('mink-error-code')[0]]);
    await unary('ClusterStatus', { table: 'events' })(openClient, withToken());
    expect(await failureOf(unary('ClusterStatus', { table: '' })(openClient, withToken()))).toEqual(['INVALID_ARGUMENT', 'table must not be empty', 'InvalidArgument']);
    expect(await failureOf(unary('ClusterStatus', { table: '9 bad<b>' })(openClient, withToken()))).toEqual(['INVALID_ARGUMENT', expect.stringMatching(/^table '9 bad<b>' is invalid/), 'InvalidArgument']);
    expect(await failureOf(unary('ClusterStatus', { table: 'events', omitBuckets: true })(openClient, withToken()))).toEqual([
      'INVALID_ARGUMENT',
      'table lists the buckets of that table; it cannot go with omit_buckets',
      'InvalidArgument',
    ]);
    expect(await failureOf(unary('ClusterStatus', { table: 'missing' })(openClient, withToken()))).toEqual(['NOT_FOUND', "table 'missing' does not exist", 'NotFound']);
    expect(await failureOf(unary('KafkaGroups', { group: '' })(openClient, withToken()))).toEqual(['INVALID_ARGUMENT', 'group must be one group id, got ""', 'InvalidArgument']);
    expect(queries).toEqual([{ listBuckets: true, table: 'events' }, { listBuckets: true, table: 'missing' }]);
  });

  it('refuses ClusterStatus and KafkaGroups to a token limited to some tables, even when the filter names one of them', async () => {
    // Proves the same rule as the HTTP routes: both answers name every table or group, so only a token for all tables reads them.
    for (const [method, request] of [
      ['ClusterStatus', { table: 'events' }],
      ['KafkaGroups', {}],
      ['DescribeTable', { name: 'events' }],
    ] as const) {
      const outcome = await callUnary(guardedClient, method, request, withToken(EVENTS_READER)).then(
        () => 'served',
        (error: ServiceError) => GrpcStatus[error.code],
      );
      expect([method, outcome]).toEqual([method, method === 'DescribeTable' ? 'served' : 'PERMISSION_DENIED']);
    }
    expect(calls).toEqual(['describeTable']);
  });

  it('refuses bytes that are not the request message with INVALID_ARGUMENT, not INTERNAL', async () => {
    // Proves grpc-js's INTERNAL for an undecodable request is replaced: a caller's bad bytes are its own mistake.
    const raw = new GrpcClient(`127.0.0.1:${openPort}`, credentials.createInsecure());
    // A field tag (field 1, varint) with no value after it.
    const undecodable = Buffer.from([0x08]);
    const failure = await new Promise<ServiceError>((resolve) =>
      raw.makeUnaryRequest('/mink.v1.Mink/DescribeTable', (bytes: Buffer) => bytes, (bytes: Buffer) => bytes, undecodable, (error) => resolve(error!)),
    );
    raw.close();
    expect([GrpcStatus[failure.code], failure.details, failure.metadata.get('mink-error-code')]).toEqual([
      'INVALID_ARGUMENT',
      expect.stringContaining('DescribeTable: the request is not a valid message of its type'),
      ['InvalidArgument'],
    ]);
    expect(calls).toEqual([]);
  });

  it('answers health without a token: NOT_SERVING until ready, then SERVING; NOT_FOUND for an unknown service', async () => {
    const check = (service: string) => callUnary(guardedClients.health, 'Check', { service });
    ready = false;
    expect(await check('')).toEqual({ status: 'NOT_SERVING' });
    ready = true;
    expect(await check('')).toEqual({ status: 'SERVING' });
    expect(await check('mink.v1.Mink')).toEqual({ status: 'SERVING' });
    await expect(check('other.Service')).rejects.toMatchObject({ code: GrpcStatus.NOT_FOUND });
  });

  it('sends a health Watch the status now and again when readiness changes', async () => {
    ready = false;
    const watch = (guardedClients.health as unknown as { Watch: (request: object) => NodeJS.ReadableStream & { cancel(): void } }).Watch({ service: '' });
    const statuses: string[] = [];
    watch.on('data', (message: { status: string }) => statuses.push(message.status));
    watch.on('error', () => undefined);
    await eventually('the first status', () => statuses.length === 1);
    ready = true;
    await eventually('the status after the change', () => statuses.length === 2);
    watch.cancel();
    expect(statuses).toEqual(['NOT_SERVING', 'SERVING']);
  });

  it('lists its services by reflection without a token', async () => {
    expect(await listReflectedServices(guardedClients.reflection)).toEqual(['grpc.health.v1.Health', 'mink.v1.Mink']);
  });

  it.each([
    ['mink.v1.Mink.KafkaGroups', 'KafkaGroupsResponse'],
    ['mink.v1.KafkaGroupsRequest.group', 'KafkaGroupsRequest'],
    ['mink.v1.ClusterStatusRequest.table', 'ClusterStatusRequest'],
    ['mink.v1.ClusterStatusResponse.tables', 'TableTotals'],
    ['mink.v1.BucketStatus.end_offset', 'lake_offset'],
    ['mink.v1.PartitionLag.committed_offset', 'committed_offset'],
    ['mink.v1.RebalanceRequest.dry_run', 'dry_run'],
  ])('describes %s by reflection, from the proto it serves', async (symbol, named) => {
    // Proves reflection serves the same mink.proto as the methods: a client generated from it knows each new field and method.
    const files = await reflectedFilesOfSymbol(guardedClients.reflection, symbol);
    expect(files).not.toBeNull();
    expect(Buffer.concat(files!).includes(named)).toBe(true);
  });

  it('answers reflection of a symbol the proto does not declare with no file, a field by its JavaScript name included', async () => {
    // Proves the descriptors are the .proto's: grpcurl's `{"dry_run": true}` names a field reflection knows.
    expect(await reflectedFilesOfSymbol(guardedClients.reflection, 'mink.v1.Mink.NoSuchMethod')).toBeNull();
    expect(await reflectedFilesOfSymbol(guardedClients.reflection, 'mink.v1.BucketStatus.endOffset')).toBeNull();
  });
});

describe('GrpcGateway under exhaustion', () => {
  // Proves the listener's bounds: a call without an issued token is refused before its messages are decoded,
  // the bytes of messages handlers hold count against one bound (RESOURCE_EXHAUSTED past it) and are given
  // back when the call ends, and an internal error answers its id only while the log gets the error.
  const logged: { err: unknown; method: string; errorId: string }[] = [];
  const logger = { error: (object: object) => void logged.push(object as (typeof logged)[number]) };
  let releasePut: (() => void) | null = null;
  const puts: unknown[] = [];
  const service = {
    put: async (_table: string, body: unknown) => {
      puts.push(body);
      if (puts.length === 1) await new Promise<void>((resolve) => (releasePut = resolve));
      return { written: 1, buckets: [] };
    },
    append: async () => ({ appended: 1, buckets: [] }),
    listTables: async () => {
      throw new TypeError("Cannot read properties of undefined (reading 'leader') at wal/1/3/17");
    },
    describeTable: async () => {
      throw new MinkError('Internal', "S3 refused GetObject of 'wal/1/3/17': AccessDenied");
    },
  } as unknown as GatewayService;
  // Room for one Put message of the test, not two.
  const inFlight = new InFlightBytes(100);
  let gateway: GrpcGateway;
  let clients: GatewayGrpcClients;
  let port = 0;

  beforeAll(async () => {
    gateway = new GrpcGateway({ gateway: service, policy: POLICY, isReady: () => true, logger, inFlight });
    port = await gateway.listen('127.0.0.1', 0);
    clients = openGatewayGrpcClients(`127.0.0.1:${port}`);
  });
  afterAll(async () => {
    clients.close();
    await gateway.stop(1_000);
  });

  it('refuses a call without an issued token before decoding its message', async () => {
    // Bytes that are no request would be INVALID_ARGUMENT if they were decoded; unauthenticated, they never are.
    const raw = new GrpcClient(`127.0.0.1:${port}`, credentials.createInsecure());
    const failure = await new Promise<ServiceError>((resolve) =>
      raw.makeUnaryRequest('/mink.v1.Mink/DescribeTable', (bytes: Buffer) => bytes, (bytes: Buffer) => bytes, Buffer.from([0x08]), (error) => resolve(error!)),
    );
    raw.close();
    expect([GrpcStatus[failure.code], failure.metadata.get('mink-error-code')]).toEqual(['UNAUTHENTICATED', ['Unauthenticated']]);
  });

  it('ends a call RESOURCE_EXHAUSTED while other calls hold the bytes, and serves it once they are given back', async () => {
    const message = { table: 'events', rowsJson: `[{"id":"${'1'.repeat(40)}"}]` };
    const first = callUnary(clients.mink, 'Put', message, bearerMetadata(WRITER));
    await eventually('the first Put at the service', () => puts.length === 1);
    expect(inFlight.heldBytes).toBeGreaterThan(50);
    const refused = await callUnary(clients.mink, 'Put', message, bearerMetadata(WRITER)).catch((error: ServiceError) => error);
    expect([GrpcStatus[(refused as ServiceError).code], (refused as ServiceError).metadata.get('mink-error-code'), (refused as ServiceError).metadata.get('mink-retry-after-ms')]).toEqual([
      'RESOURCE_EXHAUSTED',
      ['Unavailable'],
      [String(LIMITS.grpcInFlightRetryAfterMs)],
    ]);
    expect(puts).toHaveLength(1);
    releasePut!();
    await first;
    await eventually('the bytes given back', () => inFlight.heldBytes === 0);
    await expect(callUnary(clients.mink, 'Put', message, bearerMetadata(WRITER))).resolves.toBeDefined();
    // A streamed Append gives each message's bytes back as it goes, and all of them at its end.
    const messages = Array.from({ length: 5 }, () => ({ table: 'events', rowsJson: '[{"id":"1"}]' }));
    await expect(callClientStreaming(clients.mink, 'Append', messages, bearerMetadata(WRITER))).resolves.toMatchObject({ appended: '5', messages: '5' });
    await eventually('the bytes given back', () => inFlight.heldBytes === 0);
  });

  it('answers an internal error with its id only, and logs the error under that id', async () => {
    // Proves neither a bug's message nor an Internal error from a data node reaches the caller.
    for (const [method, request] of [
      ['ListTables', {}],
      ['DescribeTable', { name: 'events' }],
    ] as const) {
      logged.length = 0;
      const failure = (await callUnary(clients.mink, method, request, bearerMetadata(ADMIN)).catch((error: ServiceError) => error)) as ServiceError;
      const errorId = String(failure.metadata.get('mink-error-id')[0]);
      expect([GrpcStatus[failure.code], failure.details, failure.metadata.get('mink-error-code')]).toEqual(['INTERNAL', internalErrorMessage(errorId), ['Internal']]);
      expect(failure.details).not.toMatch(/wal|S3|leader/);
      expect(logged).toEqual([{ err: expect.any(Error), method, errorId }]);
      expect(String((logged[0]!.err as Error).message)).toMatch(/wal\/1\/3\/17/);
    }
  });
});
