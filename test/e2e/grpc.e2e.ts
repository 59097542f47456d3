/**
 * The gateway's gRPC API on a real local cluster (issue 14 item 1), with a real @grpc/grpc-js client: every
 * operation of the HTTP API through mink.proto, a client-streaming Append read back exactly by Scan, a
 * following Scan that receives a record appended after it started, errors as gRPC statuses with the mink code
 * in trailing metadata, bearer tokens with the HTTP API's scopes, health and reflection without a token,
 * `ports.grpc` in cluster.json, ClusterStatus's table totals and table filter and KafkaGroups equal to what
 * GET /v1/cluster and GET /v1/kafka/groups answer (offsets committed by a kafkajs admin), with the same
 * refusals, and a following Scan ended as UNAVAILABLE when the gateway stops on SIGTERM (which exits 0).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { Kafka, logLevel, type SASLOptions } from 'kafkajs';
import { status as GrpcStatus, type Client, type ClientReadableStream, type Metadata, type ServiceError } from '@grpc/grpc-js';
import { ENV } from '@mink/config';
import { LocalCluster, readClusterFile } from '@mink/devcluster';
import { bearerMetadata, callClientStreaming, callUnary, collectServerStream, listReflectedServices, openGatewayGrpcClients, type GatewayGrpcClients } from '@mink/grpc-api';
import { eventually, http, kafkaBrokersOf, temporaryDirectory } from './helpers';

jest.setTimeout(240_000);

const ADMIN = 'grpc-admin-secret-7c1e9a';
const READER = 'grpc-reader-secret-3b8d2f';
/** A read token for the table `events` alone. */
const EVENTS_READER = 'grpc-events-reader-secret-5a0c4e';

/** Past 2^53: exact only if int64 travels as a string end to end. */
const BIG_ID = '9007199254740993';

/**
 * A reply without the fields proto-loader's client adds for each proto3 `optional` that is set (`_lag: 'lag'`,
 * the synthetic oneof naming it), so that it compares with the HTTP answer field for field.
 */
function withoutSyntheticOneofs(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value, (key, field: unknown) => (key.startsWith('_') ? undefined : field)));
}

interface ScanMessage {
  recordsJson: string;
  records: string;
  nextOffset: string;
  highWatermark: string;
}

describe('gRPC on the gateway of a real local cluster', () => {
  const directory = temporaryDirectory('grpc');
  let cluster: LocalCluster | null = null;
  let clients: GatewayGrpcClients | null = null;
  const admin = () => bearerMetadata(ADMIN);

  afterAll(async () => {
    clients?.close();
    await cluster?.stop();
    directory.remove();
  });

  /** The failure a call ended with, as [status name, mink code], or 'served'. */
  async function outcomeOf(call: Promise<unknown>): Promise<string | [string, string]> {
    return call.then(
      () => 'served',
      (error: ServiceError) => [GrpcStatus[error.code]!, String(error.metadata.get('mink-error-code')[0])],
    );
  }

  /** Every record of bucket 0 of `table` from `offset`, read by plain Scans. */
  async function scanAll(table: string, offset = 0): Promise<{ offset: number; row: Record<string, unknown> }[]> {
    const messages = await collectServerStream<ScanMessage>(clients!.mink, 'Scan', { table, bucket: 0, offset: String(offset), limit: '1000' }, admin());
    return messages.flatMap((message) => JSON.parse(message.recordsJson));
  }

  /** A server-streaming Scan kept open: the messages so far, and how it ended (null: at its end, else its error). */
  function openStream(client: Client, request: object): { call: ClientReadableStream<ScanMessage>; messages: ScanMessage[]; end: Promise<ServiceError | null> } {
    const call = (client as unknown as { Scan: (request: object, metadata: Metadata) => ClientReadableStream<ScanMessage> }).Scan(request, admin());
    const messages: ScanMessage[] = [];
    call.on('data', (message: ScanMessage) => messages.push(message));
    const end = new Promise<ServiceError | null>((resolve) => {
      call.on('error', resolve);
      call.on('end', () => resolve(null));
    });
    return { call, messages, end };
  }

  async function waitOpen(table: string, buckets: number): Promise<void> {
    await eventually(`every bucket of ${table} open`, async () => {
      const status = await callUnary(clients!.mink, 'ClusterStatus', {}, admin());
      const own = status.buckets.filter((bucket: { table: string }) => bucket.table === table);
      return own.length === buckets && own.every((bucket: { state: string }) => bucket.state === 'open');
    }, 60_000);
  }

  it('serves every operation over gRPC, with tokens, errors, health, reflection and a following scan', async () => {
    const tokensFile = join(directory.path, 'tokens.json');
    writeFileSync(
      tokensFile,
      JSON.stringify({
        tokens: [
          { name: 'ops', token: ADMIN, scopes: ['admin'] },
          { name: 'analyst', token: READER, scopes: ['read'] },
          { name: 'events-analyst', token: EVENTS_READER, scopes: ['read'], tables: ['events'] },
        ],
      }),
    );
    const dataDir = join(directory.path, 'cluster');
    cluster = await LocalCluster.start({
      dataDir,
      nodes: 1,
      coordinators: 1,
      gatewayPort: 0,
      grpcPort: 0,
      kafkaPort: 0,
      leaseTtlMs: 3_000,
      coordinatorTickMs: 500,
      env: { [ENV.authTokensFile]: tokensFile },
    });

    // cluster.json shows the gateway's gRPC port, the one it listens on.
    const gateway = readClusterFile(dataDir).processes.find((entry) => entry.role === 'gateway')!;
    expect(gateway.ports.grpc).toBeGreaterThan(0);
    expect(cluster.gatewayGrpcAddress).toBe(`127.0.0.1:${gateway.ports.grpc}`);
    clients = openGatewayGrpcClients(cluster.gatewayGrpcAddress);
    const { mink } = clients;

    // Health and reflection need no token; the gateway is ready, so SERVING.
    expect(await callUnary(clients.health, 'Check', { service: '' })).toEqual({ status: 'SERVING' });
    expect(await callUnary(clients.health, 'Check', { service: 'mink.v1.Mink' })).toEqual({ status: 'SERVING' });
    expect(await listReflectedServices(clients.reflection)).toEqual(['grpc.health.v1.Health', 'mink.v1.Mink']);

    // Without a token, or with an unknown one: UNAUTHENTICATED.
    expect(await outcomeOf(callUnary(mink, 'ListTables', {}))).toEqual(['UNAUTHENTICATED', 'Unauthenticated']);
    expect(await outcomeOf(callUnary(mink, 'ListTables', {}, bearerMetadata('guessed-secret-00000000')))).toEqual(['UNAUTHENTICATED', 'Unauthenticated']);

    // A log table, filled by one client-streaming Append of three messages.
    const created = await callUnary(mink, 'CreateTable', { name: 'events', columns: [{ name: 'id', type: 'int64' }, { name: 'name', type: 'string' }], buckets: 1 }, admin());
    expect(created).toMatchObject({ name: 'events', kind: 'log', buckets: 1, columns: [{ name: 'id', type: 'int64' }, { name: 'name', type: 'string' }] });
    expect(JSON.parse(created.descriptionJson)).toMatchObject({ name: 'events', bucketLeaders: [expect.objectContaining({ bucket: 0 })] });
    expect(await outcomeOf(callUnary(mink, 'CreateTable', { name: 'events', columns: [{ name: 'id', type: 'int64' }], buckets: 1 }, admin()))).toEqual(['ALREADY_EXISTS', 'Conflict']);
    await waitOpen('events', 1);
    const batches = [
      [{ id: '1', name: 'a' }, { id: '2', name: 'b' }],
      [{ id: BIG_ID, name: 'c' }],
      [{ id: 4, name: 'd' }, { id: '5', name: null }, { id: '-6', name: 'f' }],
    ];
    const summary = await callClientStreaming(mink, 'Append', batches.map((rows, index) => ({ table: index === 1 ? '' : 'events', rowsJson: JSON.stringify(rows) })), admin());
    expect(summary).toEqual({
      appended: '6',
      messages: '3',
      ranges: [
        { bucket: 0, partition: '', baseOffset: '0', count: '2' },
        { bucket: 0, partition: '', baseOffset: '2', count: '1' },
        { bucket: 0, partition: '', baseOffset: '3', count: '3' },
      ],
    });

    // Scan reads back exactly those rows, int64 as strings.
    const expectedRows = batches.flat().map((row) => ({ id: String(row.id), name: row.name }));
    const scanned = await scanAll('events');
    expect(scanned.map((record) => [record.offset, record.row])).toEqual(expectedRows.map((row, offset) => [offset, row]));
    const [page] = await collectServerStream<ScanMessage>(mink, 'Scan', { table: 'events', bucket: 0, offset: '4', limit: '1' }, admin());
    expect([JSON.parse(page!.recordsJson).map((record: { row: unknown }) => record.row), page!.records, page!.nextOffset, page!.highWatermark]).toEqual([[expectedRows[4]], '1', '5', '6']);

    // A following Scan receives the last stored record, then, once it waits at the end, a record appended after it started.
    const follow = openStream(mink, { table: 'events', bucket: 0, offset: '5', limit: '2', follow: true });
    await eventually('the following scan sent the stored record', () => follow.messages.length === 1);
    await callClientStreaming(mink, 'Append', [{ table: 'events', rowsJson: '[{"id":"7","name":"late"}]' }], admin());
    expect(await follow.end).toBeNull();
    expect(follow.messages.flatMap((message) => JSON.parse(message.recordsJson)).map((record: { offset: number; row: unknown }) => [record.offset, record.row])).toEqual([
      [5, expectedRows[5]],
      [6, { id: '7', name: 'late' }],
    ]);

    // A following Scan without a limit goes on until the client cancels it.
    const cancelled = openStream(mink, { table: 'events', bucket: 0, offset: '0', follow: true });
    await eventually('the cancelled scan sent every stored record', () => cancelled.messages.reduce((sum, message) => sum + Number(message.records), 0) === 7);
    cancelled.call.cancel();
    expect((await cancelled.end)?.code).toBe(GrpcStatus.CANCELLED);

    // Bad input: INVALID_ARGUMENT naming what is wrong, and nothing appended.
    const badRows = await callClientStreaming(mink, 'Append', [{ table: 'events', rowsJson: '{"id":1}' }], admin()).catch((error: ServiceError) => error);
    expect([(badRows as ServiceError).code, (badRows as ServiceError).details, (badRows as ServiceError).metadata.get('mink-error-code')]).toEqual([
      GrpcStatus.INVALID_ARGUMENT,
      'message 1: rows_json must be a JSON array, got object',
      ['InvalidArgument'],
    ]);
    const wrongType = await callClientStreaming(mink, 'Append', [{ table: 'events', rowsJson: '[{"id":"x","name":"bad"}]' }], admin()).catch((error: ServiceError) => error);
    expect([(wrongType as ServiceError).code, (wrongType as ServiceError).details]).toEqual([GrpcStatus.INVALID_ARGUMENT, expect.stringContaining('message 1: ')]);
    expect(await outcomeOf(collectServerStream(mink, 'Scan', { table: 'events', bucket: 0, waitMs: 60_000 }, admin()))).toEqual(['INVALID_ARGUMENT', 'InvalidArgument']);

    // The read-only token may scan but not append; its refused append writes nothing.
    expect(await outcomeOf(callClientStreaming(mink, 'Append', [{ table: 'events', rowsJson: '[{"id":"8","name":"no"}]' }], bearerMetadata(READER)))).toEqual(['PERMISSION_DENIED', 'PermissionDenied']);
    expect(await outcomeOf(callUnary(mink, 'DropTable', { name: 'events' }, bearerMetadata(READER)))).toEqual(['PERMISSION_DENIED', 'PermissionDenied']);
    const afterRefusals = await collectServerStream<ScanMessage>(mink, 'Scan', { table: 'events', bucket: 0 }, bearerMetadata(READER));
    expect(afterRefusals.flatMap((message) => JSON.parse(message.recordsJson)).map((record: { row: { id: string } }) => record.row.id)).toEqual(['1', '2', BIG_ID, '4', '5', '-6', '7']);

    // Unknown table: NOT_FOUND with the mink code in trailing metadata.
    const missing = await callUnary(mink, 'DescribeTable', { name: 'missing' }, admin()).catch((error: ServiceError) => error);
    expect([(missing as ServiceError).code, (missing as ServiceError).details, (missing as ServiceError).metadata.get('mink-error-code')]).toEqual([
      GrpcStatus.NOT_FOUND,
      "table 'missing' does not exist",
      ['NotFound'],
    ]);
    expect(await outcomeOf(collectServerStream(mink, 'Scan', { table: 'missing', bucket: 0 }, admin()))).toEqual(['NOT_FOUND', 'NotFound']);

    // A PK table: put, lookup, prefix lookup, delete.
    await callUnary(
      mink,
      'CreateTable',
      { name: 'users', columns: [{ name: 'tenant', type: 'string' }, { name: 'id', type: 'int64' }, { name: 'email', type: 'string' }], primaryKey: ['tenant', 'id'], bucketKey: ['tenant'], buckets: 2 },
      admin(),
    );
    await waitOpen('users', 2);
    const users = [
      { tenant: 'acme', id: '1', email: 'a@acme' },
      { tenant: 'acme', id: BIG_ID, email: 'b@acme' },
      { tenant: 'globex', id: '1', email: 'a@globex' },
    ];
    const put = await callUnary(mink, 'Put', { table: 'users', rowsJson: JSON.stringify(users) }, admin());
    expect(put.written).toBe('3');
    expect(put.buckets.reduce((sum: number, bucket: { count: string }) => sum + Number(bucket.count), 0)).toBe(3);
    const looked = await callUnary(mink, 'Lookup', { table: 'users', keysJson: JSON.stringify([{ tenant: 'acme', id: BIG_ID }, { tenant: 'acme', id: '2' }]) }, admin());
    expect(JSON.parse(looked.rowsJson)).toEqual([users[1], null]);
    const projected = await callUnary(mink, 'Lookup', { table: 'users', keysJson: '[{"tenant":"globex","id":"1"}]', columns: ['email'] }, admin());
    expect(JSON.parse(projected.rowsJson)).toEqual([{ email: 'a@globex' }]);
    const prefixed = await callUnary(mink, 'PrefixLookup', { table: 'users', prefixesJson: '[{"tenant":"acme"},{"tenant":"initech"}]' }, admin());
    expect(prefixed.results.map((result: { rowsJson: string; truncated: boolean }) => [JSON.parse(result.rowsJson).sort((a: { id: string }, b: { id: string }) => a.id.length - b.id.length), result.truncated])).toEqual([
      [[users[0], users[1]], false],
      [[], false],
    ]);
    const deleted = await callUnary(mink, 'Delete', { table: 'users', keysJson: '[{"tenant":"acme","id":"1"}]' }, admin());
    expect(deleted.written).toBe('1');
    expect(JSON.parse((await callUnary(mink, 'Lookup', { table: 'users', keysJson: '[{"tenant":"acme","id":"1"},{"tenant":"globex","id":"1"}]' }, admin())).rowsJson)).toEqual([null, users[2]]);
    expect(await outcomeOf(callUnary(mink, 'Put', { table: 'users', rowsJson: '[{"tenant":"acme"}]' }, admin()))).toEqual(['INVALID_ARGUMENT', 'InvalidArgument']);

    // Describe, list, alter, drop.
    const described = await callUnary(mink, 'DescribeTable', { name: 'users' }, admin());
    expect(described).toMatchObject({ name: 'users', kind: 'pk', primaryKey: ['tenant', 'id'], bucketKey: ['tenant'], buckets: 2 });
    expect(JSON.parse(described.descriptionJson).bucketLeaders).toHaveLength(2);
    const listed = await callUnary(mink, 'ListTables', {}, bearerMetadata(READER));
    expect(listed.tables.map((table: { name: string; kind: string }) => [table.name, table.kind])).toEqual([
      ['events', 'log'],
      ['users', 'pk'],
    ]);
    const altered = await callUnary(mink, 'AlterTable', { name: 'events', set: { 'table.log.ttl': '2d' } }, admin());
    expect(altered.properties).toMatchObject({ 'table.log.ttl': '2d' });
    const restored = await callUnary(mink, 'AlterTable', { name: 'events', remove: ['table.log.ttl'] }, admin());
    expect(restored.properties['table.log.ttl']).not.toBe('2d');
    expect(await outcomeOf(callUnary(mink, 'AlterTable', { name: 'events', set: { 'no.such.property': 'x' } }, admin()))).toEqual(['INVALID_ARGUMENT', 'InvalidArgument']);
    expect(await callUnary(mink, 'DropTable', { name: 'users' }, admin())).toEqual({ dropped: 'users' });
    expect(await outcomeOf(callUnary(mink, 'DescribeTable', { name: 'users' }, admin()))).toEqual(['NOT_FOUND', 'NotFound']);

    // Cluster status and a dry-run rebalance.
    const status = await callUnary(mink, 'ClusterStatus', {}, admin());
    expect(status.coordinator.node).toBe('coordinator-1');
    expect(status.nodes.map((node: { id: string; live: boolean }) => [node.id, node.live])).toEqual([['1', true]]);
    expect(status.buckets).toEqual([
      { table: 'events', partition: '', bucket: 0, leader: '1', leaderEpoch: expect.any(String), streamEpoch: expect.any(String), state: 'open', startOffset: '0', endOffset: '7', bytes: expect.any(String), walSlices: expect.any(Number) },
    ]);
    expect(status.bucketStates).toEqual({ open: 1, opening: 0, unavailable: 0 });
    const withoutBuckets = await callUnary(mink, 'ClusterStatus', { omitBuckets: true }, admin());
    expect([withoutBuckets.buckets, withoutBuckets.bucketStates, withoutBuckets.nodes]).toEqual([[], { open: 1, opening: 0, unavailable: 0 }, status.nodes]);
    expect(await callUnary(mink, 'Rebalance', { dryRun: true }, admin())).toEqual({ moves: [], dryRun: true });
    expect(await outcomeOf(callUnary(mink, 'Rebalance', { dryRun: true }, bearerMetadata(READER)))).toEqual(['PERMISSION_DENIED', 'PermissionDenied']);

    // A Kafka topic of two partitions, produced to, and a group whose offsets a kafkajs admin commits.
    const kafka = new Kafka({ brokers: kafkaBrokersOf(cluster), logLevel: logLevel.NOTHING, sasl: { mechanism: 'plain', username: 'ops', password: ADMIN } as SASLOptions });
    const kafkaAdmin = kafka.admin();
    await kafkaAdmin.connect();
    try {
      await kafkaAdmin.createTopics({ topics: [{ topic: 'orders', numPartitions: 2 }], waitForLeaders: true });
      const producer = kafka.producer();
      await producer.connect();
      await producer.send({ topic: 'orders', acks: -1, messages: Array.from({ length: 7 }, (_, index) => ({ partition: index % 2, key: `k${index}`, value: `v${index}` })) });
      await producer.disconnect();
      await kafkaAdmin.setOffsets({ groupId: 'billing', topic: 'orders', partitions: [{ partition: 0, offset: '1' }, { partition: 1, offset: '3' }] });
    } finally {
      await kafkaAdmin.disconnect();
    }
    await waitOpen('orders', 2);
    const viaHttp = async (path: string, token = READER) => http(cluster!.gatewayUrl, 'GET', path, undefined, token);

    // ClusterStatus's table totals are GET /v1/cluster's `tables`, int64 as strings, a null tiered_at empty.
    const totalsAsGrpc = (tables: { table: string; buckets: number; endOffset: number; bytes: number; lakeOffset?: number; tieredAt?: string | null }[]) =>
      tables.map((totals) => ({ table: totals.table, buckets: totals.buckets, endOffset: String(totals.endOffset), bytes: String(totals.bytes), ...(totals.lakeOffset === undefined ? {} : { lakeOffset: String(totals.lakeOffset) }), tieredAt: totals.tieredAt ?? '' }));
    // Read one after the other, the two answers may straddle a change of the figures: they are read again until equal.
    const totals = await eventually('ClusterStatus totals equal to GET /v1/cluster tables', async () => {
      const grpcTables = withoutSyntheticOneofs((await callUnary(mink, 'ClusterStatus', { omitBuckets: true }, bearerMetadata(READER))).tables);
      const httpTables = totalsAsGrpc((await viaHttp('/v1/cluster?buckets=false')).body.tables);
      return isDeepStrictEqual(grpcTables, httpTables) ? (grpcTables as { table: string; endOffset: string }[]) : undefined;
    });
    expect(totals.map((each) => [each.table, each.endOffset])).toEqual([
      ['__consumer_offsets', expect.any(String)],
      ['events', '7'],
      ['orders', '7'],
    ]);

    // The filter lists one table's buckets, as ?table= does, with the totals of every table still there.
    const ordersOnly = await callUnary(mink, 'ClusterStatus', { table: 'orders' }, bearerMetadata(READER));
    const ordersViaHttp = (await viaHttp('/v1/cluster?table=orders')).body;
    expect(ordersOnly.buckets.map((bucket: { table: string; bucket: number; endOffset: string }) => [bucket.table, bucket.bucket, bucket.endOffset])).toEqual(
      ordersViaHttp.buckets.map((bucket: { table: string; bucket: number; endOffset: number }) => [bucket.table, bucket.bucket, String(bucket.endOffset)]),
    );
    expect(ordersOnly.buckets.map((bucket: { bucket: number; endOffset: string }) => [bucket.bucket, bucket.endOffset])).toEqual([
      [0, '4'],
      [1, '3'],
    ]);
    expect(ordersOnly.tables.map((each: { table: string }) => each.table)).toEqual(['__consumer_offsets', 'events', 'orders']);

    // A bad filter is INVALID_ARGUMENT where HTTP says 400, a table that does not exist NOT_FOUND where it says 404.
    for (const [request, path, expected] of [
      [{ table: '' }, '/v1/cluster?table=', ['INVALID_ARGUMENT', 'InvalidArgument', 400]],
      [{ table: 'bad name' }, '/v1/cluster?table=bad%20name', ['INVALID_ARGUMENT', 'InvalidArgument', 400]],
      [{ table: 'events', omitBuckets: true }, '/v1/cluster?buckets=false&table=events', ['INVALID_ARGUMENT', 'InvalidArgument', 400]],
      [{ table: 'users' }, '/v1/cluster?table=users', ['NOT_FOUND', 'NotFound', 404]],
    ] as const) {
      expect([request, ...(await outcomeOf(callUnary(mink, 'ClusterStatus', request, bearerMetadata(READER)))), (await viaHttp(path)).status]).toEqual([request, ...expected]);
    }

    // KafkaGroups is GET /v1/kafka/groups, lags as int64 strings: billing committed 1 and 3 of 4 and 3 records.
    const groupsAsGrpc = (answer: { groups: { group: string; state: string; members: number; lag: number; partitions: { topic: string; partition: number; committedOffset: number; endOffset: number | null; lag: number | null }[] }[]; unavailableBuckets: number; truncated: boolean }) => ({
      groups: answer.groups.map((group) => ({
        group: group.group,
        state: group.state,
        members: group.members,
        lag: String(group.lag),
        partitions: group.partitions.map((partition) => ({
          topic: partition.topic,
          partition: partition.partition,
          committedOffset: String(partition.committedOffset),
          ...(partition.endOffset === null ? {} : { endOffset: String(partition.endOffset) }),
          ...(partition.lag === null ? {} : { lag: String(partition.lag) }),
        })),
      })),
      unavailableBuckets: answer.unavailableBuckets,
      truncated: answer.truncated,
    });
    const groups = await eventually('GET /v1/kafka/groups lists billing', async () => {
      const answer = (await viaHttp('/v1/kafka/groups')).body;
      return answer.groups?.length === 1 ? answer : undefined;
    }, 60_000);
    expect(groups.groups[0]).toMatchObject({ group: 'billing', state: 'Empty', members: 0, lag: 3 });
    expect(withoutSyntheticOneofs(await callUnary(mink, 'KafkaGroups', {}, bearerMetadata(READER)))).toEqual(groupsAsGrpc(groups));
    expect(withoutSyntheticOneofs(await callUnary(mink, 'KafkaGroups', { group: 'billing' }, bearerMetadata(READER)))).toEqual(groupsAsGrpc((await viaHttp('/v1/kafka/groups?group=billing')).body));
    expect((await callUnary(mink, 'KafkaGroups', { group: 'nobody' }, bearerMetadata(READER))).groups).toEqual([]);
    expect([...(await outcomeOf(callUnary(mink, 'KafkaGroups', { group: '' }, bearerMetadata(READER)))), (await viaHttp('/v1/kafka/groups?group=')).status]).toEqual(['INVALID_ARGUMENT', 'InvalidArgument', 400]);

    // Both name every table or group: a token for some tables is refused them, over gRPC as over HTTP.
    for (const [method, request, path] of [
      ['ClusterStatus', { table: 'events' }, '/v1/cluster?table=events'],
      ['KafkaGroups', {}, '/v1/kafka/groups'],
    ] as const) {
      expect([method, ...(await outcomeOf(callUnary(mink, method, request, bearerMetadata(EVENTS_READER)))), (await viaHttp(path, EVENTS_READER)).status]).toEqual([method, 'PERMISSION_DENIED', 'PermissionDenied', 403]);
    }

    // SIGTERM: a following scan ends as UNAVAILABLE at once, and the gateway exits 0.
    const tail = openStream(mink, { table: 'events', bucket: 0, offset: '6', follow: true });
    await eventually('the tailing scan sent the last record and waits for more', () => tail.messages.length === 1);
    const gatewayExit = cluster.waitForExit('gateway', 'gateway-1');
    const restarted = cluster.restart('gateway', 'gateway-1');
    const ended = await tail.end;
    expect([ended?.code, ended?.metadata.get('mink-error-code')]).toEqual([GrpcStatus.UNAVAILABLE, ['Unavailable']]);
    expect(await gatewayExit).toEqual({ code: 0, signal: null });
    await restarted;
    expect(await callUnary(clients.health, 'Check', { service: '' })).toEqual({ status: 'SERVING' });
    expect((await scanAll('events')).length).toBe(7);
  });
});
