import 'reflect-metadata';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { NatsConnection } from 'nats';
import { MinkClient } from '@mink/client';
import { LIMITS } from '@mink/config';
import { partitionStartMs, type ColumnSpec, type TableSpec } from '@mink/meta';
import { MetaStore } from '@mink/metalog';
import { MinkError, SUBJECTS, toErrorBody, type AppendBucketRequest, type ScanRequest, type TableRoute } from '@mink/protocol';
import { bucketOfRow, decodeBatch, encodeScanPage, stampBatch, type Row } from '@mink/records';
import type { ClusterMember } from '@mink/runtime';
import { GatewayService } from '@mink/http-api';
import { InMemoryMetaLog } from '@mink/testing';
import { answeringMultiMessages, decodeRequest, encodeJson, encodeWithBinary } from '@mink/transport';

import { startGatewayOver } from './gateway-app.fixture';

/**
 * The HTTP API on a partitioned table, through the gateway's real routes, service and MinkClient: the data
 * node is a fake NATS connection that keeps each bucket of each partition apart, so an append must reach
 * the bucket of its row's partition to be read back by the scan of that partition. The view is built by the
 * real state machine, partitions created with CreatePartition as the lease holder does.
 */

const HOUR_A = '2026120110';
const HOUR_B = '2026120111';
const HOUR_MISSING = '2026120113';
const BUCKETS = 2;
const COLUMNS: ColumnSpec[] = [
  { name: 'ts', type: 'timestamp' },
  { name: 'user', type: 'string' },
];
const CLICKS: TableSpec = { name: 'clicks', columns: COLUMNS, bucketKey: ['user'], buckets: BUCKETS, partition: { column: 'ts', unit: 'hour' } };
const PLAIN: TableSpec = { name: 'plain', columns: COLUMNS, bucketKey: ['user'], buckets: BUCKETS };

/** Buckets of each partition, as a data node stores them: appended batches and their rows. */
class FakeDataNode {
  readonly appends: AppendBucketRequest[] = [];
  readonly stored = new Map<string, { batches: { startOffset: number; payload: Uint8Array }[]; rows: Row[] }>();

  constructor(private readonly routes: Record<string, TableRoute>) {}

  readonly nc = {
    request: answeringMultiMessages(async (_subject: string, data: Uint8Array) => {
      const body = decodeRequest(data) as { op: string; table: string };
      try {
        const route = this.routes[body.table];
        if (!route) throw new MinkError('NotFound', `table '${body.table}' does not exist`);
        if (body.op === 'describeTable') return { data: encodeJson({ result: route }) };
        const request = body as AppendBucketRequest | ScanRequest;
        if ((request.partition !== null) !== (route.partition !== undefined)) throw new Error(`partition ${request.partition} sent for table '${route.table}'`);
        const key = `${request.partition}/${request.bucket}`;
        const bucket = this.stored.get(key) ?? { batches: [], rows: [] };
        this.stored.set(key, bucket);
        if (request.op === 'append') {
          this.appends.push(request);
          const stamped = stampBatch(COLUMNS, request.batch!, 1_000, LIMITS.appendRowsPerRequestMax);
          const rows = decodeBatch(COLUMNS, stamped.payload).rows;
          const baseOffset = bucket.rows.length;
          bucket.batches.push({ startOffset: baseOffset, payload: stamped.payload });
          bucket.rows.push(...rows);
          return { data: encodeJson({ result: { bucket: request.bucket, ...(request.partition ? { partition: request.partition } : {}), baseOffset, count: rows.length } }) };
        }
        const page = encodeScanPage({ columns: COLUMNS, changelog: false }, bucket.batches, request.offset, request.limit, 1 << 20);
        return { data: encodeWithBinary({ result: { records: page.records, nextOffset: page.nextOffset, highWatermark: bucket.rows.length, startOffset: 0 } }, page.stream) };
      } catch (error) {
        return { data: encodeJson(toErrorBody(error)) };
      }
    }),
  } as unknown as NatsConnection;
}

function routeOf(spec: TableSpec, tableId: number, partitions?: string[]): TableRoute {
  const leaders = Array.from({ length: BUCKETS }, () => ({ node: '1', address: SUBJECTS.nodeAddress('1'), leaderEpoch: 1 }));
  return {
    table: spec.name,
    tableId,
    kind: 'log',
    columns: COLUMNS,
    primaryKey: [],
    bucketKey: ['user'],
    buckets: BUCKETS,
    leaders: partitions ? [] : leaders,
    ...(partitions ? { partition: spec.partition!, partitions: partitions.map((name) => ({ name, leaders })) } : {}),
  };
}

const at = (hour: string, minute: number) => partitionStartMs('hour', hour)! + minute * 60_000;

describe('gateway on a partitioned table', () => {
  let app: NestFastifyApplication;
  let node: FakeDataNode;

  beforeAll(async () => {
    const meta = await MetaStore.open(new InMemoryMetaLog());
    await meta.start();
    await meta.proposeOrThrow({ type: 'RegisterNode', nodeId: '1' });
    const { epoch: coordinatorEpoch } = await meta.proposeOrThrow({ type: 'RegisterCoordinator', coordinatorId: 'c' });
    const { tableId: clicksId } = await meta.proposeOrThrow({ type: 'CreateTable', coordinatorEpoch: coordinatorEpoch!, spec: CLICKS, createdAtMs: 0 });
    const { tableId: plainId } = await meta.proposeOrThrow({ type: 'CreateTable', coordinatorEpoch: coordinatorEpoch!, spec: PLAIN, createdAtMs: 0 });
    for (const partition of [HOUR_A, HOUR_B]) {
      await meta.proposeOrThrow({ type: 'CreatePartition', coordinatorEpoch: coordinatorEpoch!, table: 'clicks', partition });
      for (let bucket = 0; bucket < BUCKETS; bucket++) {
        await meta.proposeOrThrow({ type: 'LeadBucket', coordinatorEpoch: coordinatorEpoch!, tableId: clicksId!, partition, bucket, leader: '1' });
      }
    }
    node = new FakeDataNode({ clicks: routeOf(CLICKS, clicksId!, [HOUR_A, HOUR_B]), plain: routeOf(PLAIN, plainId!) });
    const member = { get view() { return meta.view; }, store: meta } as unknown as ClusterMember;
    const service = new GatewayService(member, MinkClient.over(node.nc, { scanOverHttp: false }));
    app = await startGatewayOver(service);
  });

  afterAll(async () => {
    await app.close();
  });

  async function call(method: 'GET' | 'POST', url: string, payload?: unknown): Promise<{ status: number; body: any }> {
    const response = await app.getHttpAdapter().getInstance().inject({
      method,
      url,
      ...(payload === undefined ? {} : { payload: Buffer.from(JSON.stringify(payload)), headers: { 'content-type': 'application/json' } }),
    });
    return { status: response.statusCode, body: response.json() };
  }

  it('appends rows of two hours to their partitions, and scans each partition\'s bucket back with ?partition=', async () => {
    // Proves the append route takes the general path for a partitioned table (its one-pass reader does not
    // know partitions) and that the client routes it: every bucket of every partition scans back its rows.
    const rows = ['ann', 'bob', 'cy'].flatMap((user, index) => [{ ts: at(HOUR_A, index), user }, { ts: at(HOUR_B, index), user }]);
    const appended = await call('POST', '/v1/tables/clicks/append', { rows });
    expect(appended.status).toBe(200);
    expect(appended.body.appended).toBe(rows.length);
    expect(new Set(appended.body.buckets.map((bucket: { partition: string }) => bucket.partition))).toEqual(new Set([HOUR_A, HOUR_B]));
    for (const hour of [HOUR_A, HOUR_B]) {
      for (let bucket = 0; bucket < BUCKETS; bucket++) {
        const scanned = await call('GET', `/v1/tables/clicks/scan?partition=${hour}&bucket=${bucket}`);
        expect(scanned.status).toBe(200);
        const expected = rows.filter((row) => row.ts >= at(hour, 0) && row.ts < at(hour, 60) && bucketOfRow({ user: row.user }, ['user'], BUCKETS) === bucket);
        expect(scanned.body.records.map((record: { row: unknown }) => record.row)).toEqual(expected);
      }
    }
  });

  it('answers 400 naming the partition for a row of a partition that does not exist, and writes nothing', async () => {
    const before = node.appends.length;
    const response = await call('POST', '/v1/tables/clicks/append', { rows: [{ ts: at(HOUR_A, 5), user: 'ann' }, { ts: at(HOUR_MISSING, 5), user: 'bob' }] });
    expect(response.status).toBe(400);
    expect(response.body.error).toEqual({
      code: 'InvalidArgument',
      message: `partition '${HOUR_MISSING}' of table 'clicks' does not exist (row 1 belongs to it; it is not created yet or was dropped): its partitions are '${HOUR_A}', '${HOUR_B}'`,
    });
    expect(node.appends).toHaveLength(before);
  });

  it.each<[string, string, number, RegExp]>([
    ['a partitioned table without a partition', '/v1/tables/clicks/scan?bucket=0', 400, /^table 'clicks' is partitioned by 'ts': a scan must name a partition$/],
    ['an unpartitioned table with a partition', `/v1/tables/plain/scan?partition=${HOUR_A}&bucket=0`, 400, /^table 'plain' is not partitioned/],
    ['a partition that does not exist', `/v1/tables/clicks/scan?partition=${HOUR_MISSING}&bucket=0`, 404, new RegExp(`^partition '${HOUR_MISSING}' of table 'clicks' does not exist$`)],
    ['an offset in hexadecimal', '/v1/tables/plain/scan?bucket=0&offset=0x10', 400, /^query parameter 'offset' must be a non-negative integer, got '0x10'$/],
    ['a bucket in exponent notation', '/v1/tables/plain/scan?bucket=1e0', 400, /^query parameter 'bucket' must be a non-negative integer, got '1e0'$/],
    ['a limit with spaces', '/v1/tables/plain/scan?bucket=0&limit=%205', 400, /^query parameter 'limit' must be a non-negative integer/],
    ['an empty column name in the projection', '/v1/tables/plain/scan?bucket=0&columns=id,,ts', 400, /^query parameter 'columns' has an empty column name at position 2/],
  ])('answers a scan of %s with an error', async (_case, url, status, message) => {
    const response = await call('GET', url);
    expect(response.status).toBe(status);
    expect(response.body.error.message).toMatch(message);
  });

  it('scans an unpartitioned table without a partition, an empty one included', async () => {
    const response = await call('GET', '/v1/tables/plain/scan?bucket=0&partition=');
    expect(response).toEqual({ status: 200, body: { records: [], nextOffset: 0, highWatermark: 0 } });
  });

  it('describes and lists a partitioned table with its spec, its partitions, and the leader of each bucket of each', async () => {
    const described = await call('GET', '/v1/tables/clicks');
    expect(described.body).toMatchObject({ partition: { column: 'ts', unit: 'hour' }, partitions: [HOUR_A, HOUR_B] });
    expect(described.body.bucketLeaders.map((bucket: { partition: string; bucket: number; leader: string }) => [bucket.partition, bucket.bucket, bucket.leader])).toEqual([
      [HOUR_A, 0, '1'],
      [HOUR_A, 1, '1'],
      [HOUR_B, 0, '1'],
      [HOUR_B, 1, '1'],
    ]);
    const listed = await call('GET', '/v1/tables');
    expect(listed.body.tables.find((table: { name: string }) => table.name === 'clicks')).toMatchObject({ partition: { column: 'ts', unit: 'hour' }, partitions: [HOUR_A, HOUR_B] });
    expect(listed.body.tables.find((table: { name: string }) => table.name === 'plain')).not.toHaveProperty('partitions');
  });
});
