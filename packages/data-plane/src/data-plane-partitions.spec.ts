import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NatsConnection } from 'nats';
import { TableClient } from '@mink/client';
import { bucketId, getIn, partitionStartMs, type TableSpec } from '@mink/meta';
import { MetaStore } from '@mink/metalog';
import { InvalidArgumentError, MinkError, NotFoundError, SUBJECTS, toErrorBody, type AppendBucketRequest, type DeleteBucketRequest, type PutBucketRequest, type ScanRequest } from '@mink/protocol';
import { bucketOfRow, columnsInTableOrder, encodeRows } from '@mink/records';
import type { ClusterMember } from '@mink/runtime';
import { InMemoryObjectStore, StreamReader, WalWriter } from '@mink/s3stream';
import { InMemoryMetaLog } from '@mink/testing';
import { answeringMultiMessages, WithBinary, decodeRequest, encodeJson, encodeWithBinary } from '@mink/transport';

import type { BucketSync } from './bucket-sync';
import { DataPlane } from './data-plane';
import { NodeRequestHandler } from './node-request-handler';
import { PkBucket } from './pk-bucket';
import type { PkBuckets } from './pk-buckets';

/**
 * The data path of partitioned tables on a real DataPlane: a metadata view built by the real state machine
 * (a log table partitioned by the hour, a PK table partitioned by the day, an unpartitioned table), the
 * real WAL writer and stream reader over an in-memory object store, real KV tablets, and a real TableClient
 * whose NATS connection hands each request to this node's NodeRequestHandler as the NATS server would.
 * Assertions are on what the streams of each partition's buckets hold.
 */

const HOUR_A = '2026120110';
const HOUR_B = '2026120111';
const HOUR_MISSING = '2026120113';
const DAY_A = '20261201';
const DAY_B = '20261202';
const BUCKETS = 2;
const SILENT = { info: () => undefined, warn: () => undefined };

const CLICKS: TableSpec = {
  name: 'clicks',
  columns: [
    { name: 'ts', type: 'timestamp' },
    { name: 'user', type: 'string' },
    { name: 'amount', type: 'float64' },
  ],
  bucketKey: ['user'],
  buckets: BUCKETS,
  partition: { column: 'ts', unit: 'hour', retain: 24 },
};
const VISITS: TableSpec = {
  name: 'visits',
  columns: [
    { name: 'day', type: 'string' },
    { name: 'user', type: 'string' },
    { name: 'seq', type: 'int64' },
    { name: 'page', type: 'string' },
  ],
  primaryKey: ['day', 'user', 'seq'],
  bucketKey: ['user'],
  buckets: BUCKETS,
  partition: { column: 'day', unit: 'day' },
};
const PLAIN: TableSpec = { name: 'plain', columns: [{ name: 'x', type: 'int64' }], buckets: 1 };

interface Node {
  meta: MetaStore;
  data: DataPlane;
  client: (table: string) => TableClient;
  pkBuckets: PkBucket[];
  wal: WalWriter;
  folder: string;
}

/**
 * Node 1 of a one-node cluster: the three tables, partitions HOUR_A and HOUR_B of clicks and DAY_A and DAY_B
 * of visits created with CreatePartition (as the lease holder does), every bucket led and opened by node 1.
 */
async function startNode(): Promise<Node> {
  const meta = await MetaStore.open(new InMemoryMetaLog());
  await meta.start();
  await meta.proposeOrThrow({ type: 'RegisterNode', nodeId: '1', address: SUBJECTS.nodeAddress('1'), http: '127.0.0.1:9001' });
  const { epoch: coordinatorEpoch } = await meta.proposeOrThrow({ type: 'RegisterCoordinator', coordinatorId: 'c' });
  const store = new InMemoryObjectStore();
  const reader = new StreamReader({ store, meta });
  const wal = new WalWriter({ nodeId: '1', nodeEpoch: 1, store, meta, lingerMs: 1 });
  const folder = await mkdtemp(join(tmpdir(), 'mink-data-plane-partitions-'));
  const pkBuckets: PkBucket[] = [];
  const addresses: { table: TableSpec; partition: string | null }[] = [
    { table: CLICKS, partition: HOUR_A },
    { table: CLICKS, partition: HOUR_B },
    { table: VISITS, partition: DAY_A },
    { table: VISITS, partition: DAY_B },
    { table: PLAIN, partition: null },
  ];
  for (const spec of [CLICKS, VISITS, PLAIN]) await meta.proposeOrThrow({ type: 'CreateTable', coordinatorEpoch: coordinatorEpoch!, spec, createdAtMs: 0 });
  for (const { table, partition } of addresses) {
    if (partition !== null) await meta.proposeOrThrow({ type: 'CreatePartition', coordinatorEpoch: coordinatorEpoch!, table: table.name, partition });
    const tableId = getIn(meta.view.tables, table.name)!.id;
    for (let bucket = 0; bucket < table.buckets; bucket++) {
      const address = { tableId, partition, bucket };
      const { leaderEpoch } = await meta.proposeOrThrow({ type: 'LeadBucket', coordinatorEpoch: coordinatorEpoch!, ...address, leader: '1' });
      const { streamEpoch } = await meta.proposeOrThrow({ type: 'OpenStream', nodeId: '1', nodeEpoch: 1, ...address, leaderEpoch: leaderEpoch! });
      if (table.primaryKey) {
        const deps = { nodeId: '1', nodeEpoch: 1, meta, objectStore: store, wal, reader, directory: join(folder, `${partition}-${bucket}`), logger: SILENT, nowMs: () => 1_000 };
        pkBuckets.push(await PkBucket.open(deps, address, streamEpoch!));
      }
    }
  }
  const nc = { info: { max_payload: 8 << 20 } } as unknown as NatsConnection;
  const member = { get view() { return meta.view; }, nc } as unknown as ClusterMember;
  const sync = { isOpen: () => true, streamEpochOf: (id: string) => getIn(meta.view.buckets, id)!.stream.epoch } as unknown as BucketSync;
  const pk = { get: (id: string) => pkBuckets.find((bucket) => bucketId(bucket.address.tableId, bucket.address.partition, bucket.address.bucket) === id) } as unknown as PkBuckets;
  const data = new DataPlane(member, { nodeId: '1', nodeEpoch: 1 }, sync, wal, reader, pk);
  const handler = new NodeRequestHandler('1', 1, sync, data);
  // Every subject reaches this node, which answers as serveJson does.
  const clientConnection = {
    info: nc.info,
    request: answeringMultiMessages(async (_subject: string, payload: Uint8Array) => {
      try {
        const result = await handler.handle(decodeRequest(payload));
        return { data: result instanceof WithBinary ? encodeWithBinary({ result: result.result }, result.bytes) : encodeJson({ result }) };
      } catch (error) {
        return { data: encodeJson(toErrorBody(error)) };
      }
    }),
  } as unknown as NatsConnection;
  return { meta, data, client: (table) => new TableClient(clientConnection, table), pkBuckets, wal, folder };
}

/** How many records the stream of bucket `bucket` of `partition` of `table` holds. */
function recordsIn(node: Node, table: string, partition: string | null, bucket: number): number {
  return getIn(node.meta.view.buckets, bucketId(getIn(node.meta.view.tables, table)!.id, partition, bucket))!.stream.endOffset;
}

function recordsInTable(node: Node, table: string, partitions: (string | null)[]): number {
  return partitions.reduce((sum, partition) => sum + recordsIn(node, table, partition, 0) + recordsIn(node, table, partition, 1), 0);
}

const click = (hour: string, user: string, minute: number) => ({ ts: partitionStartMs('hour', hour)! + minute * 60_000, user, amount: minute });
const bucketOfUser = (user: string) => bucketOfRow({ user }, ['user'], BUCKETS);

describe('DataPlane on partitioned tables', () => {
  let node: Node;

  beforeEach(async () => {
    node = await startNode();
  });

  afterEach(async () => {
    await Promise.all(node.pkBuckets.map((bucket) => bucket.close({ finalSnapshot: false })));
    await node.wal.close();
    await rm(node.folder, { recursive: true, force: true });
  });

  it('describes a partitioned table with its spec and the leaders of each live partition, and an unpartitioned one as before', () => {
    const clicks = node.data.describeTable('clicks');
    // Each bucket's leader at the leader epoch the view records for that bucket of that partition.
    const leaderOf = (table: string, partition: string | null, bucket: number) => ({
      node: '1',
      address: SUBJECTS.nodeAddress('1'),
      leaderEpoch: getIn(node.meta.view.buckets, bucketId(getIn(node.meta.view.tables, table)!.id, partition, bucket))!.leaderEpoch,
      http: '127.0.0.1:9001',
    });
    expect(clicks).toMatchObject({ table: 'clicks', buckets: BUCKETS, leaders: [], partition: { column: 'ts', unit: 'hour', retain: 24 } });
    expect(clicks.partitions).toEqual([
      { name: HOUR_A, leaders: [leaderOf('clicks', HOUR_A, 0), leaderOf('clicks', HOUR_A, 1)] },
      { name: HOUR_B, leaders: [leaderOf('clicks', HOUR_B, 0), leaderOf('clicks', HOUR_B, 1)] },
    ]);
    const plain = node.data.describeTable('plain');
    expect(plain.leaders).toEqual([leaderOf('plain', null, 0)]);
    expect(Object.keys(plain)).toEqual(['table', 'tableId', 'kind', 'columns', 'primaryKey', 'bucketKey', 'buckets', 'leaders']);
  });

  it('stores the rows of hour A and hour B in their partitions\' buckets, where scans of each partition read them back', async () => {
    // Proves client and node together: each partition bucket's stream grows by exactly its rows, and the
    // scan of a partition's bucket returns those rows and no other hour's.
    const clicks = node.client('clicks');
    const rows = ['ann', 'bob', 'cy', 'dee'].flatMap((user, index) => [click(HOUR_A, user, index), click(HOUR_B, user, 30 + index), click(HOUR_B, user, 40 + index)]);
    const result = await clicks.append(rows);
    expect(result.appended).toBe(rows.length);
    for (const hour of [HOUR_A, HOUR_B]) {
      for (let bucket = 0; bucket < BUCKETS; bucket++) {
        const expected = rows.filter((row) => row.ts >= partitionStartMs('hour', hour)! && row.ts < partitionStartMs('hour', hour)! + 3_600_000 && bucketOfUser(row.user) === bucket);
        expect(recordsIn(node, 'clicks', hour, bucket)).toBe(expected.length);
        const scanned = await clicks.scan({ partition: hour, bucket, offset: 0, limit: 100 });
        expect(scanned.records.map((record) => record.row)).toEqual(expected.map((row) => ({ ts: row.ts, user: row.user, amount: row.amount })));
      }
    }
  });

  it('refuses a write with a row of a partition that does not exist as InvalidArgument naming it, and writes none of its rows', async () => {
    const error = await node.client('clicks').append([click(HOUR_A, 'ann', 1), click(HOUR_MISSING, 'bob', 1)]).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as Error).message).toMatch(new RegExp(`^partition '${HOUR_MISSING}' of table 'clicks' does not exist \\(row 1 belongs to it`));
    // The table-addressed write, split by the node, refuses it the same way.
    await expect(node.data.appendTable({ op: 'appendTable', table: 'clicks', rows: [click(HOUR_B, 'ann', 1), click(HOUR_MISSING, 'ann', 2)] })).rejects.toThrow(
      `partition '${HOUR_MISSING}' of table 'clicks' does not exist (row 1 belongs to it`,
    );
    expect(recordsInTable(node, 'clicks', [HOUR_A, HOUR_B])).toBe(0);
  });

  it('splits a table-addressed append by partition and bucket', async () => {
    const rows = [click(HOUR_A, 'ann', 1), click(HOUR_B, 'ann', 2), click(HOUR_B, 'bob', 3)];
    const result = await node.data.appendTable({ op: 'appendTable', table: 'clicks', rows });
    expect(result.appended).toBe(3);
    expect(result.buckets.map(({ partition, bucket, count }) => [partition, bucket, count])).toEqual(
      bucketOfUser('ann') === bucketOfUser('bob')
        ? [[HOUR_A, bucketOfUser('ann'), 1], [HOUR_B, bucketOfUser('ann'), 2]]
        : [[HOUR_A, bucketOfUser('ann'), 1], ...[[HOUR_B, bucketOfUser('ann'), 1], [HOUR_B, bucketOfUser('bob'), 1]].sort((a, b) => (a[1] as number) - (b[1] as number))],
    );
    expect(recordsIn(node, 'clicks', HOUR_A, bucketOfUser('ann'))).toBe(1);
    expect(recordsInTable(node, 'clicks', [HOUR_B])).toBe(2);
  });

  it('refuses an append to a partition\'s bucket of a row of another partition, writing nothing', async () => {
    // Proves the leader's own check: a misrouted row would be invisible to scans of its partition.
    const bucket = bucketOfUser('ann');
    const request: AppendBucketRequest = {
      op: 'append',
      table: 'clicks',
      tableId: getIn(node.meta.view.tables, 'clicks')!.id,
      partition: HOUR_A,
      bucket,
      batch: encodeRows(CLICKS.columns, [{ ts: click(HOUR_A, 'ann', 1).ts, user: 'ann', amount: 1 }, { ts: click(HOUR_B, 'ann', 1).ts, user: 'ann', amount: 2 }]),
    };
    await expect(node.data.append(request)).rejects.toThrow(`row 1 belongs to partition '${HOUR_B}' of table 'clicks', not to partition '${HOUR_A}'`);
    expect(recordsInTable(node, 'clicks', [HOUR_A, HOUR_B])).toBe(0);
  });

  it.each<[string, Partial<ScanRequest>, new (message: string) => MinkError, string]>([
    ['a partition that does not exist', { table: 'clicks', partition: HOUR_MISSING }, NotFoundError, `partition '${HOUR_MISSING}' of table 'clicks' does not exist`],
    ['no partition of a partitioned table', { table: 'clicks', partition: null }, InvalidArgumentError, "table 'clicks' is partitioned by 'ts': a request for it names a partition"],
    ['a partition of an unpartitioned table', { table: 'plain', partition: HOUR_A }, InvalidArgumentError, `table 'plain' is not partitioned: a request for it names no partition, got "${HOUR_A}"`],
  ])('answers a scan of %s with an error naming it', async (_case, address, type, message) => {
    const request = { op: 'scan', bucket: 0, offset: 0, limit: 10, ...address } as ScanRequest;
    const error = await node.data.scan(request).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(type);
    expect((error as Error).message).toBe(message);
  });

  it('puts, looks up and deletes rows of a partitioned PK table in the partition their key names', async () => {
    // Proves the PK round trip: the same user and seq on two days are two rows, each in its day's bucket.
    const visits = node.client('visits');
    await visits.put([
      { day: DAY_A, user: 'ann', seq: 1, page: '/a' },
      { day: DAY_B, user: 'ann', seq: 1, page: '/b' },
    ]);
    expect(recordsIn(node, 'visits', DAY_A, bucketOfUser('ann'))).toBe(1);
    expect(recordsIn(node, 'visits', DAY_B, bucketOfUser('ann'))).toBe(1);
    const keys = [
      { day: DAY_B, user: 'ann', seq: 1 },
      { day: DAY_A, user: 'ann', seq: 1 },
      { day: '20261203', user: 'ann', seq: 1 },
    ];
    expect((await visits.lookup(keys, { columns: ['page'] })).rows).toEqual([{ page: '/b' }, { page: '/a' }, null]);
    expect((await visits.prefixLookup([{ user: 'ann', day: DAY_B }], { columns: ['page'] })).results).toEqual([{ rows: [{ page: '/b' }], truncated: false }]);
    await visits.delete([{ day: DAY_A, user: 'ann', seq: 1 }]);
    expect((await visits.lookup(keys, { columns: ['page'] })).rows).toEqual([{ page: '/b' }, null, null]);
    const changelog = await visits.scan({ partition: DAY_A, bucket: bucketOfUser('ann'), offset: 0, limit: 10 });
    expect(changelog.records.map((record) => record.changeType)).toEqual(['+I', '-D']);
  });

  it('refuses a put to a partition\'s bucket of a row of another partition, writing nothing', async () => {
    const request: PutBucketRequest = {
      op: 'put',
      table: 'visits',
      tableId: getIn(node.meta.view.tables, 'visits')!.id,
      partition: DAY_A,
      bucket: bucketOfUser('ann'),
      rows: [{ day: DAY_B, user: 'ann', seq: 1, page: '/b' }],
    };
    await expect(node.data.put(request)).rejects.toThrow(`row 0 belongs to partition '${DAY_B}' of table 'visits', not to partition '${DAY_A}'`);
    expect(recordsInTable(node, 'visits', [DAY_A, DAY_B])).toBe(0);
  });

  it('takes a put\'s rows and a delete\'s keys as Arrow batches of their columns in table order, and refuses a bad batch writing nothing', async () => {
    // Proves the leader's binary PK path: whole and partial puts and deletes read from Arrow columns mean what
    // their JSON forms mean, and a batch is refused, unwritten, when it comes with JSON rows, holds other
    // columns, lacks a key value or belongs to another partition.
    const address = { table: 'visits', tableId: getIn(node.meta.view.tables, 'visits')!.id, partition: DAY_A, bucket: bucketOfUser('ann') };
    const columns = getIn(node.meta.view.tables, 'visits')!.columns;
    const keyColumns = columnsInTableOrder(columns, ['day', 'user', 'seq']);
    const partial = columnsInTableOrder(columns, ['page', 'seq', 'user', 'day']);
    const refusals: [PutBucketRequest | DeleteBucketRequest, string][] = [
      [{ op: 'put', ...address, batch: encodeRows(columns, [{ day: DAY_A, user: 'ann', seq: 1n, page: '/a' }]), rows: [] }, 'a put carries rows or a batch, not both'],
      [{ op: 'put', ...address, batch: encodeRows(keyColumns, [{ day: DAY_A, user: 'ann', seq: 1n }]) }, "batch: the schema has 3 fields, the table 4 columns"],
      [{ op: 'put', ...address, batch: encodeRows(columns, [{ day: DAY_A, user: 'ann', seq: null, page: '/a' }]) }, "row 0, column 'seq': a value is required, got null"],
      [{ op: 'put', ...address, batch: encodeRows(columns, [{ day: DAY_B, user: 'ann', seq: 1n, page: '/b' }]) }, `row 0 belongs to partition '${DAY_B}' of table 'visits', not to partition '${DAY_A}'`],
      [{ op: 'put', ...address, batch: new Uint8Array([1, 2, 3]) }, 'batch: not a readable Arrow IPC stream'],
      [{ op: 'delete', ...address, batch: encodeRows(keyColumns, [{ day: DAY_A, user: 'ann', seq: 1n }]), keys: [] }, 'a delete carries keys or a batch, not both'],
    ];
    for (const [request, message] of refusals) {
      const refused = await (request.op === 'put' ? node.data.put(request) : node.data.delete(request)).then(
        () => null,
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(InvalidArgumentError);
      expect((refused as Error).message).toContain(message);
    }
    expect(recordsInTable(node, 'visits', [DAY_A, DAY_B])).toBe(0);

    await node.data.put({ op: 'put', ...address, batch: encodeRows(columns, [{ day: DAY_A, user: 'ann', seq: 1n, page: '/a' }, { day: DAY_A, user: 'ann', seq: 2n, page: null }]) });
    await node.data.put({ op: 'put', ...address, columns: ['page', 'seq', 'user', 'day'], batch: encodeRows(partial, [{ day: DAY_A, user: 'ann', seq: 2n, page: '/two' }]) });
    await node.data.delete({ op: 'delete', ...address, batch: encodeRows(keyColumns, [{ day: DAY_A, user: 'ann', seq: 1n }]) });
    // New keys only (their batches become the changelog as they are), in two requests at once; then a new key and an update together.
    const visit = (seq: bigint, page: string) => ({ day: DAY_A, user: 'ann', seq, page });
    await Promise.all([
      node.data.put({ op: 'put', ...address, batch: encodeRows(columns, [visit(3n, '/3'), visit(4n, '/4')]) }),
      node.data.put({ op: 'put', ...address, batch: encodeRows(columns, [visit(5n, '/5')]) }),
    ]);
    await node.data.put({ op: 'put', ...address, batch: encodeRows(columns, [visit(6n, '/6'), visit(2n, '/2b')]) });
    const keys = [1, 2, 3, 4, 5, 6].map((seq) => ({ day: DAY_A, user: 'ann', seq }));
    expect((await node.client('visits').lookup(keys, { columns: ['page'] })).rows).toEqual([null, { page: '/2b' }, { page: '/3' }, { page: '/4' }, { page: '/5' }, { page: '/6' }]);
    const changelog = await node.client('visits').scan({ partition: DAY_A, bucket: address.bucket, offset: 0, limit: 20 });
    expect(changelog.records.map((record) => [record.changeType, record.row.seq, record.row.page])).toEqual([
      ['+I', '1', '/a'],
      ['+I', '2', null],
      ['-U', '2', null],
      ['+U', '2', '/two'],
      ['-D', '1', '/a'],
      ['+I', '3', '/3'],
      ['+I', '4', '/4'],
      ['+I', '5', '/5'],
      ['+I', '6', '/6'],
      ['-U', '2', '/two'],
      ['+U', '2', '/2b'],
    ]);
    expect(changelog.records.every((record) => record.row.day === DAY_A && record.row.user === 'ann')).toBe(true);
  });

  it('keeps the Kafka paths to unpartitioned tables', async () => {
    await expect(node.data.readRecordBatches('clicks', 0, 0, 1 << 20)).rejects.toThrow("partitioned table 'clicks' is not readable or writable as a topic");
    expect(node.data.serves('clicks', 0)).toBe(false);
    expect(node.data.serves('plain', 0)).toBe(true);
  });
});
