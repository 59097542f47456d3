import type { NatsConnection } from 'nats';
import { LIMITS } from '@mink/config';
import { partitionNameAt, partitionOfValue, partitionStartMs, type ColumnSpec, type ColumnType, type PartitionSpec } from '@mink/meta';
import {
  InvalidArgumentError,
  MinkError,
  NotLeaderError,
  SUBJECTS,
  toErrorBody,
  type AppendBucketRequest,
  type BucketLeader,
  type DeleteBucketRequest,
  type LookupBucketRequest,
  type PrefixLookupBucketRequest,
  type PutBucketRequest,
  type ScanRequest,
  type TableRoute,
} from '@mink/protocol';
import { Float64, Int64, RecordBatch, TimestampMillisecond, Utf8, makeData, vectorFromArray } from 'apache-arrow';
import { bucketOfRow, columnsInTableOrder, decodeBatch, decodeRowsStream, encodeBatch, encodeScanPage, rowsToJson, stampBatch, validateRows, type Row } from '@mink/records';
import { answeringMultiMessages, decodeRequest, encodeJson, encodeWithBinary } from '@mink/transport';

import { TableClient } from './table-client';

/**
 * TableClient on partitioned tables against a fake NATS connection that plays the data nodes of every
 * partition: it answers describeTable from a route whose partitions the test creates as it goes, serves
 * each bucket of each partition from its own store, and records every request. Each partition's buckets
 * are led by nodes of their own, and a request that reaches a node other than its bucket's leader, or a
 * row or key whose partition column or bucket key belongs elsewhere, fails the test: routing mistakes
 * cannot pass unseen.
 */

const HOUR_A = '2026120110';
const HOUR_B = '2026120111';
const HOUR_MISSING = '2026120113';
const BUCKETS = 2;

const CLICKS_COLUMNS: ColumnSpec[] = [
  { name: 'ts', type: 'timestamp' },
  { name: 'user', type: 'string' },
  { name: 'amount', type: 'float64' },
];
const CLICKS_PARTITION: PartitionSpec = { column: 'ts', unit: 'hour', retain: 24 };

const VISITS_COLUMNS: ColumnSpec[] = [
  { name: 'day', type: 'string' },
  { name: 'user', type: 'string' },
  { name: 'seq', type: 'int64' },
  { name: 'page', type: 'string' },
];
const VISITS_PARTITION: PartitionSpec = { column: 'day', unit: 'day' };
const DAY_A = '20261201';
const DAY_B = '20261202';

/** Node `p{index}-{bucket}` leads bucket `bucket` of the index-th partition, so each partition has nodes of its own. */
function leadersOfPartition(index: number): BucketLeader[] {
  return Array.from({ length: BUCKETS }, (_, bucket) => ({ node: `p${index}-${bucket}`, address: SUBJECTS.nodeAddress(`p${index}-${bucket}`), leaderEpoch: 1 }));
}

/** The route of a partitioned table bucketed by 'user', with `partitions` live (see leadersOfPartition). */
function partitionedRoute(table: Pick<TableRoute, 'table' | 'tableId' | 'kind' | 'columns' | 'primaryKey' | 'partition'>, partitions: string[]): TableRoute {
  return { ...table, bucketKey: ['user'], buckets: BUCKETS, leaders: [], partitions: partitions.map((name, index) => ({ name, leaders: leadersOfPartition(index) })) };
}

const clicksRoute = (partitions: string[]) => partitionedRoute({ table: 'clicks', tableId: 11, kind: 'log', columns: CLICKS_COLUMNS, primaryKey: [], partition: CLICKS_PARTITION }, partitions);
const visitsRoute = (partitions: string[]) =>
  partitionedRoute({ table: 'visits', tableId: 12, kind: 'pk', columns: VISITS_COLUMNS, primaryKey: ['day', 'user', 'seq'], partition: VISITS_PARTITION }, partitions);

type BucketRequest = AppendBucketRequest | ScanRequest | PutBucketRequest | DeleteBucketRequest | LookupBucketRequest | PrefixLookupBucketRequest;

/** One bucket of one partition as a data node keeps it: appended batches in offset order, or the KV rows of a PK bucket. */
interface FakeBucket {
  batches: { startOffset: number; payload: Uint8Array }[];
  rows: Row[];
  kv: Map<string, Record<string, unknown>>;
}

class FakePartitionedCluster {
  readonly received: { subject: string; request: BucketRequest }[] = [];
  readonly buckets = new Map<string, FakeBucket>();
  describes = 0;
  /** Answers requests instead of the leaders (once each) while set; undefined lets one through. */
  intercept: ((subject: string, request: BucketRequest) => unknown) | null = null;

  constructor(
    public route: TableRoute,
    /** The route the next describes answer after this many of them (a partition created meanwhile), if set. */
    private readonly later?: { afterDescribes: number; route: TableRoute },
  ) {}

  readonly nc = {
    request: answeringMultiMessages(async (subject: string, data: Uint8Array) => {
      const body = decodeRequest(data) as { op: string };
      try {
        if (body.op === 'describeTable') {
          this.describes++;
          if (this.later && this.describes > this.later.afterDescribes) this.route = this.later.route;
          return { data: encodeJson({ result: structuredClone(this.route) }) };
        }
        const request = body as BucketRequest;
        this.received.push({ subject, request });
        const intercepted = this.intercept?.(subject, request);
        if (intercepted !== undefined) return { data: encodeJson({ result: intercepted }) };
        const answer = this.serve(subject, request);
        if (request.op === 'scan') {
          const { metadata, bytes } = answer as { metadata: object; bytes: Uint8Array[] };
          return { data: encodeWithBinary({ result: metadata }, bytes) };
        }
        return { data: encodeJson({ result: answer }) };
      } catch (error) {
        return { data: encodeJson(toErrorBody(error)) };
      }
    }),
  } as unknown as NatsConnection;

  /** The rows stored in bucket `bucket` of `partition`, in offset order. */
  rowsOf(partition: string, bucket: number): Row[] {
    return this.buckets.get(`${partition}/${bucket}`)?.rows ?? [];
  }

  /** The data node's part: checks that the request reached its bucket's leader and that every row belongs there, then serves it. */
  private serve(subject: string, request: BucketRequest): unknown {
    const columns = this.route.columns as ColumnSpec[];
    const leader = this.route.partitions?.find((partition) => partition.name === request.partition)?.leaders[request.bucket];
    if (!leader) throw new MinkError('NotFound', `partition '${request.partition}' of table '${this.route.table}' does not exist`);
    if (SUBJECTS.nodeRpc(leader.address) !== subject) throw new Error(`bucket ${request.bucket} of partition ${request.partition} asked at ${subject}`);
    const key = `${request.partition}/${request.bucket}`;
    const bucket: FakeBucket = this.buckets.get(key) ?? { batches: [], rows: [], kv: new Map() };
    this.buckets.set(key, bucket);
    const spec = this.route.partition!;
    const partitionType = columns.find((column) => column.name === spec.column)!.type as ColumnType;
    const checkPlacement = (rows: Row[], withPartition = true) => {
      for (const row of rows) {
        if (withPartition) expect(partitionOfValue(spec, partitionType, row[spec.column])).toEqual({ partition: request.partition });
        expect(bucketOfRow(row, this.route.bucketKey, BUCKETS)).toBe(request.bucket);
      }
    };
    const keyOf = (row: Row) => JSON.stringify(this.route.primaryKey.map((name) => String(row[name])));
    switch (request.op) {
      case 'append': {
        const stamped = stampBatch(columns, request.batch!, 1_000, LIMITS.appendRowsPerRequestMax);
        const rows = decodeBatch(columns, stamped.payload).rows;
        checkPlacement(rows);
        const baseOffset = bucket.rows.length;
        bucket.batches.push({ startOffset: baseOffset, payload: stamped.payload });
        bucket.rows.push(...rows);
        return { bucket: request.bucket, partition: request.partition, baseOffset, count: rows.length };
      }
      case 'scan': {
        const page = encodeScanPage({ columns, changelog: false }, bucket.batches, request.offset, request.limit, 1 << 20);
        return { metadata: { records: page.records, nextOffset: page.nextOffset, highWatermark: bucket.rows.length, startOffset: 0 }, bytes: page.stream };
      }
      case 'put': {
        // As the data node reads a put: an Arrow batch of the put's columns in table order.
        const rows = decodeRowsStream(columnsInTableOrder(columns, request.columns), request.batch!, { rowCountMax: LIMITS.pkBatchOperationsMax, required: this.route.primaryKey });
        checkPlacement(rows);
        for (const row of rows) bucket.kv.set(keyOf(row), row);
        return { bucket: request.bucket, partition: request.partition, operations: rows.length, baseOffset: 0, count: rows.length };
      }
      case 'delete': {
        const keys = decodeRowsStream(columnsInTableOrder(columns, this.route.primaryKey), request.batch!, { rowCountMax: LIMITS.pkBatchOperationsMax, required: this.route.primaryKey });
        checkPlacement(keys);
        for (const row of keys) bucket.kv.delete(keyOf(row));
        return { bucket: request.bucket, partition: request.partition, operations: keys.length, baseOffset: 0, count: keys.length };
      }
      case 'lookup': {
        const keys = validateRows(columns, request.keys, { allowedColumns: this.route.primaryKey });
        checkPlacement(keys);
        return { rows: keys.map((row) => bucket.kv.get(keyOf(row)) ?? null).map((row) => (row ? project(rowsToJson(columns, [row])[0]!, request.columns) : null)) };
      }
      case 'prefixLookup': {
        // As the data node: a prefix holds exactly the bucket key, and the partition is the request's.
        const prefixes = validateRows(columns, request.prefixes, { allowedColumns: this.route.bucketKey, required: this.route.bucketKey });
        checkPlacement(prefixes, false);
        return {
          results: prefixes.map((prefix) => ({
            rows: rowsToJson(columns, [...bucket.kv.values()].filter((row) => this.route.bucketKey.every((name) => row[name] === prefix[name]))).map((row) => project(row, request.columns)),
            truncated: false,
          })),
        };
      }
    }
  }
}

function project(row: Record<string, unknown>, columns: string[] | undefined): Record<string, unknown> {
  return columns === undefined ? row : Object.fromEntries(columns.map((name) => [name, row[name] ?? null]));
}

const hourStart = (name: string) => partitionStartMs('hour', name)!;
const click = (hour: string, user: string, minute: number) => ({ ts: hourStart(hour) + minute * 60_000, user, amount: minute });
const USERS = ['ann', 'bob', 'cy', 'dee', 'eve', 'fay'];

describe('TableClient appends to a partitioned log table', () => {
  it('routes each row to its partition and bucket, and a scan of each partition reads back exactly its rows', async () => {
    // Proves rows split by the partition column first and the bucket key second: the fake nodes check every
    // row, and the scans of each partition's buckets hold what the route says they should, nothing else.
    const cluster = new FakePartitionedCluster(clicksRoute([HOUR_A, HOUR_B]));
    const client = new TableClient(cluster.nc, 'clicks');
    const rows = USERS.flatMap((user, index) => [click(HOUR_A, user, index), click(HOUR_B, user, index + 30)]);
    const result = await client.append(rows);

    expect(result.appended).toBe(rows.length);
    const expectedTargets = [HOUR_A, HOUR_B].flatMap((hour) => [...new Set(USERS.map((user) => bucketOfRow({ user }, ['user'], BUCKETS)))].sort().map((bucket) => ({ partition: hour, bucket })));
    expect(result.buckets.map(({ partition, bucket }) => ({ partition, bucket }))).toEqual(expectedTargets);
    for (const hour of [HOUR_A, HOUR_B]) {
      for (let bucket = 0; bucket < BUCKETS; bucket++) {
        const expected = rows.filter((row) => partitionNameAt('hour', row.ts) === hour && bucketOfRow({ user: row.user }, ['user'], BUCKETS) === bucket);
        const scanned = await client.scan({ partition: hour, bucket, offset: 0, limit: 100 });
        expect(scanned.records.map((record) => record.row)).toEqual(expected.map((row) => ({ ts: row.ts, user: row.user, amount: row.amount })));
        expect(cluster.rowsOf(hour, bucket)).toHaveLength(expected.length);
      }
    }
    const appends = cluster.received.filter(({ request }) => request.op === 'append').map(({ request }) => request as AppendBucketRequest);
    expect(appends.every((request) => request.table === 'clicks' && request.tableId === 11 && [HOUR_A, HOUR_B].includes(request.partition!))).toBe(true);
  });

  it('fails a call with a row of a partition that does not exist, naming it, after asking for the route once more, and sends nothing', async () => {
    // Proves a missing partition is InvalidArgument naming the partition, the table, the row and the live
    // partitions; the good rows of the call are not written either.
    const cluster = new FakePartitionedCluster(clicksRoute([HOUR_A, HOUR_B]));
    const client = new TableClient(cluster.nc, 'clicks');
    const error = await client.append([click(HOUR_A, 'ann', 1), click(HOUR_MISSING, 'bob', 2), click(HOUR_B, 'cy', 3)]).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as Error).message).toBe(
      `partition '${HOUR_MISSING}' of table 'clicks' does not exist (row 1 belongs to it; it is not created yet or was dropped): its partitions are '${HOUR_A}', '${HOUR_B}'`,
    );
    expect(cluster.describes).toBe(2);
    expect(cluster.received).toEqual([]);
  });

  it('writes a row of a partition created after the route was cached: the second look at the route finds it', async () => {
    // Proves the one re-describe: the lease holder created the partition a moment ago.
    const cluster = new FakePartitionedCluster(clicksRoute([HOUR_A]), { afterDescribes: 1, route: clicksRoute([HOUR_A, HOUR_B]) });
    const client = new TableClient(cluster.nc, 'clicks');
    await client.append([click(HOUR_A, 'ann', 1)]);
    const result = await client.append([click(HOUR_B, 'ann', 2)]);
    expect(result.buckets).toEqual([{ partition: HOUR_B, bucket: bucketOfRow({ user: 'ann' }, ['user'], BUCKETS), baseOffset: 0, count: 1 }]);
    expect(cluster.describes).toBe(2);
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    ['no partition value', { user: 'ann', amount: 1 }, /^row 1 of table 'clicks': partition column 'ts' must hold a value$/],
    ['an instant past the year 9999', { ts: 253_402_300_800_000, user: 'ann' }, /^row 1 of table 'clicks': partition column 'ts' holds 253402300800000, outside the years 1970 to 9999$/],
  ])('refuses a row with %s, naming the row and the reason, and sends nothing', async (_case, row, message) => {
    const cluster = new FakePartitionedCluster(clicksRoute([HOUR_A]));
    const client = new TableClient(cluster.nc, 'clicks');
    await expect(client.append([click(HOUR_A, 'ann', 1), row])).rejects.toThrow(message);
    expect(cluster.received).toEqual([]);
  });

  it('keeps a writer and sequence per bucket of each partition', async () => {
    // Proves idempotent writers are per partition bucket: bucket 0 of two partitions each start at sequence 0
    // under different writer ids (one stream each), and the next append to one of them continues its sequence.
    const cluster = new FakePartitionedCluster(clicksRoute([HOUR_A, HOUR_B]));
    const client = new TableClient(cluster.nc, 'clicks');
    await client.append([click(HOUR_A, 'ann', 1), click(HOUR_B, 'ann', 2)]);
    await client.append([click(HOUR_A, 'ann', 3)]);
    const writers = cluster.received.map(({ request }) => ({ partition: request.partition, ...(request as AppendBucketRequest).writer! }));
    expect(writers.map(({ partition, seq }) => [partition, seq])).toEqual([
      [HOUR_A, 0],
      [HOUR_B, 0],
      [HOUR_A, 1],
    ]);
    expect(writers[0]!.id).not.toBe(writers[1]!.id);
    expect(writers[2]!.id).toBe(writers[0]!.id);
  });

  it('answers appendEncoded with null without calling encode, so the gateway takes the general path', async () => {
    const cluster = new FakePartitionedCluster(clicksRoute([HOUR_A]));
    const client = new TableClient(cluster.nc, 'clicks');
    const encode = jest.fn(() => null);
    await expect(client.appendEncoded(encode)).resolves.toBeNull();
    expect(encode).not.toHaveBeenCalled();
    expect(cluster.received).toEqual([]);
  });

  it('splits an Arrow batch by partition and bucket, and sends nothing when a row has no partition', async () => {
    // Proves appendArrow reads the partition column of the batch: each part lands in its partition's bucket.
    const cluster = new FakePartitionedCluster(clicksRoute([HOUR_A, HOUR_B]));
    const client = new TableClient(cluster.nc, 'clicks');
    const rows = [click(HOUR_A, 'ann', 1), click(HOUR_B, 'bob', 2), click(HOUR_A, 'cy', 3), click(HOUR_B, 'ann', 4)];
    const batchOf = (clicks: { ts: number; user: string; amount: number }[]) =>
      new RecordBatch({
        ts: makeData({ type: new TimestampMillisecond('UTC'), length: clicks.length, data: BigInt64Array.from(clicks, (each) => BigInt(each.ts)) }),
        user: vectorFromArray(clicks.map((each) => each.user), new Utf8()).data[0]!,
        amount: makeData({ type: new Float64(), length: clicks.length, data: Float64Array.from(clicks, (each) => each.amount) }),
      });
    const result = await client.appendArrow(batchOf(rows));
    expect(result.appended).toBe(4);
    for (const row of rows) {
      expect(cluster.rowsOf(partitionNameAt('hour', row.ts), bucketOfRow({ user: row.user }, ['user'], BUCKETS))).toContainEqual({ ts: row.ts, user: row.user, amount: row.amount });
    }
    const sent = cluster.received.length;
    await expect(client.appendArrow(batchOf([click(HOUR_MISSING, 'ann', 1)]))).rejects.toThrow(`partition '${HOUR_MISSING}' of table 'clicks' does not exist`);
    expect(cluster.received).toHaveLength(sent);
  });

  it('refuses a write to a partition dropped after the route was cached, reads nothing from it, and answers a scan of it NotFound', async () => {
    // Proves a stale route ends as a fresh one would: the node's NotFound makes the client look again, and
    // the partition's absence is then InvalidArgument for a write (the 400 of a missing partition), an
    // empty answer for a lookup, and NotFound for a scan.
    const cluster = new FakePartitionedCluster(clicksRoute([HOUR_A, HOUR_B]));
    const client = new TableClient(cluster.nc, 'clicks');
    await client.describe();
    cluster.route = clicksRoute([HOUR_A]);
    await expect(client.append([click(HOUR_B, 'ann', 1)])).rejects.toThrow(
      new InvalidArgumentError(`partition '${HOUR_B}' of table 'clicks' does not exist (it is not created yet or was dropped): its partition is '${HOUR_A}'`),
    );
    expect(cluster.rowsOf(HOUR_B, bucketOfRow({ user: 'ann' }, ['user'], BUCKETS))).toEqual([]);
    cluster.route = clicksRoute([HOUR_A, HOUR_B]);
    await client.describe(true);
    cluster.route = clicksRoute([HOUR_A]);
    await expect(client.scan({ partition: HOUR_B, bucket: 0 })).rejects.toThrow(new RegExp(`^partition '${HOUR_B}' of table 'clicks' does not exist$`));
  });

  it('follows a NotLeader redirect of one partition\'s bucket without touching the same bucket of another partition', async () => {
    const cluster = new FakePartitionedCluster(clicksRoute([HOUR_A, HOUR_B]));
    const client = new TableClient(cluster.nc, 'clicks');
    const bucket = bucketOfRow({ user: 'ann' }, ['user'], BUCKETS);
    const stale = clicksRoute([HOUR_A, HOUR_B]);
    (client as unknown as { route: TableRoute }).route = stale;
    // The leader of HOUR_B's bucket moved to node n9; HOUR_A's did not.
    cluster.route.partitions![1]!.leaders[bucket] = { node: 'n9', address: SUBJECTS.nodeAddress('n9'), leaderEpoch: 2 };
    cluster.intercept = (subject, request) => {
      if (request.partition === HOUR_B && subject !== SUBJECTS.nodeRpc(SUBJECTS.nodeAddress('n9'))) {
        throw new NotLeaderError('moved', { table: 'clicks', partition: HOUR_B, bucket, node: 'n9', to: SUBJECTS.nodeAddress('n9'), leaderEpoch: 2 });
      }
      return undefined;
    };
    await client.append([click(HOUR_B, 'ann', 1)]);
    await client.append([click(HOUR_A, 'ann', 2)]);
    expect(stale.partitions![1]!.leaders[bucket]!.node).toBe('n9');
    expect(stale.partitions![0]!.leaders[bucket]!.node).toBe(`p0-${bucket}`);
    expect(cluster.rowsOf(HOUR_B, bucket)).toHaveLength(1);
    expect(cluster.rowsOf(HOUR_A, bucket)).toHaveLength(1);
  });
});

describe('TableClient scans of partitioned and unpartitioned tables', () => {
  it.each<[string, TableRoute, { partition?: string }, string, RegExp]>([
    ['a partitioned table without a partition', clicksRoute([HOUR_A]), {}, 'InvalidArgument', /^table 'clicks' is partitioned by 'ts': a scan must name a partition$/],
    ['a partitioned table with a name of another unit', clicksRoute([HOUR_A]), { partition: '20261201' }, 'InvalidArgument', /partition must be a partition name of unit 'hour'/],
    ['an unpartitioned table with a partition', { ...clicksRoute([]), partition: undefined, partitions: undefined, leaders: leadersOfPartition(0) }, { partition: HOUR_A }, 'InvalidArgument', /^table 'clicks' is not partitioned/],
    ['a partition that does not exist', clicksRoute([HOUR_A]), { partition: HOUR_MISSING }, 'NotFound', new RegExp(`^partition '${HOUR_MISSING}' of table 'clicks' does not exist$`)],
  ])('refuses a scan of %s', async (_case, route, options, code, message) => {
    const cluster = new FakePartitionedCluster(route);
    const error = await new TableClient(cluster.nc, 'clicks').scan({ ...options, bucket: 0 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(MinkError);
    expect((error as MinkError).code).toBe(code);
    expect((error as MinkError).message).toMatch(message);
    expect(cluster.received).toEqual([]);
  });
});

describe('TableClient on a partitioned primary-key table', () => {
  const visit = (day: string, user: string, seq: number, page: string) => ({ day, user, seq, page });

  it('puts, looks up and deletes rows in the partition their key names', async () => {
    // Proves a key picks its partition from its partition column: the fake nodes check each row and key, and
    // a key of another day with the same user and seq is another row.
    const cluster = new FakePartitionedCluster(visitsRoute([DAY_A, DAY_B]));
    const client = new TableClient(cluster.nc, 'visits');
    const put = await client.put([visit(DAY_A, 'ann', 1, '/a'), visit(DAY_B, 'ann', 1, '/b'), visit(DAY_A, 'bob', 2, '/c')]);
    expect(put.written).toBe(3);
    expect(put.buckets.map((bucket) => bucket.partition)).toEqual([DAY_A, ...(bucketOfRow({ user: 'ann' }, ['user'], BUCKETS) === bucketOfRow({ user: 'bob' }, ['user'], BUCKETS) ? [] : [DAY_A]), DAY_B]);
    const keys = [
      { day: DAY_B, user: 'ann', seq: 1 },
      { day: DAY_A, user: 'ann', seq: 1 },
      { day: DAY_A, user: 'bob', seq: 2 },
      { day: DAY_B, user: 'bob', seq: 2 },
    ];
    expect((await client.lookup(keys, { columns: ['page'] })).rows).toEqual([{ page: '/b' }, { page: '/a' }, { page: '/c' }, null]);
    await client.delete([{ day: DAY_A, user: 'ann', seq: 1 }]);
    expect((await client.lookup(keys)).rows.map((row) => row?.page ?? null)).toEqual(['/b', null, '/c', null]);
  });

  it('answers null for a key of a partition that does not exist, and refuses a put or delete there', async () => {
    // Proves reads of a missing partition find nothing without asking a node, while writes there fail whole.
    const cluster = new FakePartitionedCluster(visitsRoute([DAY_A]));
    const client = new TableClient(cluster.nc, 'visits');
    await client.put([visit(DAY_A, 'ann', 1, '/a')]);
    const before = cluster.received.length;
    expect((await client.lookup([{ day: DAY_B, user: 'ann', seq: 1 }, { day: DAY_A, user: 'ann', seq: 1 }])).rows).toEqual([null, { day: DAY_A, user: 'ann', seq: '1', page: '/a' }]);
    expect(cluster.received.slice(before).map(({ request }) => request.partition)).toEqual([DAY_A]);
    await expect(client.put([visit(DAY_A, 'bob', 1, '/x'), visit(DAY_B, 'ann', 1, '/b')])).rejects.toThrow(`partition '${DAY_B}' of table 'visits' does not exist (row 1 belongs to it`);
    await expect(client.delete([{ day: DAY_B, user: 'ann', seq: 1 }])).rejects.toThrow(`partition '${DAY_B}' of table 'visits' does not exist (key 0 belongs to it`);
    expect(cluster.received.slice(before).map(({ request }) => request.op)).toEqual(['lookup']);
    expect(cluster.buckets.get(`${DAY_A}/${bucketOfRow({ user: 'bob' }, ['user'], BUCKETS)}`)?.kv.size ?? 0).toBe(bucketOfRow({ user: 'bob' }, ['user'], BUCKETS) === bucketOfRow({ user: 'ann' }, ['user'], BUCKETS) ? 1 : 0);
  });

  it('answers null for a key of a partition dropped after the route was cached', async () => {
    const cluster = new FakePartitionedCluster(visitsRoute([DAY_A, DAY_B]));
    const client = new TableClient(cluster.nc, 'visits');
    await client.put([visit(DAY_A, 'ann', 1, '/a'), visit(DAY_B, 'ann', 1, '/b')]);
    cluster.route = visitsRoute([DAY_A]);
    expect((await client.lookup([{ day: DAY_B, user: 'ann', seq: 1 }, { day: DAY_A, user: 'ann', seq: 1 }], { columns: ['page'] })).rows).toEqual([null, { page: '/a' }]);
  });

  it('looks a prefix up in the partition its partition column names, and refuses a prefix without that column', async () => {
    // Proves the prefix's partition column picks the partition and is not sent (the leader looks up the
    // bucket-key prefix), and that leaving it out is InvalidArgument naming the column.
    const cluster = new FakePartitionedCluster(visitsRoute([DAY_A, DAY_B]));
    const client = new TableClient(cluster.nc, 'visits');
    await client.put([visit(DAY_A, 'ann', 1, '/a1'), visit(DAY_A, 'ann', 2, '/a2'), visit(DAY_B, 'ann', 3, '/b3')]);
    const { results } = await client.prefixLookup([{ user: 'ann', day: DAY_B }, { user: 'ann', day: DAY_A }, { user: 'ann', day: '20261203' }], { columns: ['seq'] });
    expect(results.map((result) => result.rows.map((row) => row.seq))).toEqual([['3'], ['1', '2'], []]);
    const sent = cluster.received.filter(({ request }) => request.op === 'prefixLookup').map(({ request }) => request as PrefixLookupBucketRequest);
    expect(sent.map((request) => [request.partition, request.prefixes])).toEqual([
      [DAY_B, [{ user: 'ann' }]],
      [DAY_A, [{ user: 'ann' }]],
    ]);
    await expect(client.prefixLookup([{ user: 'ann' }])).rejects.toThrow(
      "prefix 0 of a prefix lookup in table 'visits' has no partition column 'day': on a partitioned table a prefix holds the bucket key ('user') and the partition column, which picks the partition",
    );
  });
});
