/**
 * Log tables end to end on real processes, NATS and s3rver: 100 000 rows appended through the gateway
 * into a table of 8 buckets are scanned back exactly once, in per-bucket offset order, with int64 values
 * exact; projection works; a bad row is a 400 naming row and column and writes nothing; a node that
 * does not lead a bucket answers NotLeader with the leader's address, and a table-addressed write sent
 * to any node is split and forwarded; after the whole cluster is stopped and started again on the same
 * data dir, the scan returns the same rows. Arrow record batches appended through the TypeScript client
 * (`appendArrow`) are stored once, split across buckets, with values exact.
 */
import { Bool, Int64, RecordBatch, Utf8, vectorFromArray } from 'apache-arrow';
import { connect } from 'nats';
import { MinkClient } from '@mink/client';
import { LocalCluster } from '@mink/devcluster';
import { MinkError, SUBJECTS } from '@mink/protocol';
import { requestJson } from '@mink/transport';
import { S3ObjectStore } from '@mink/s3stream';
import { eventually, http, temporaryDirectory } from './helpers';

jest.setTimeout(600_000);

const ROWS = 100_000;
const BATCH = 5_000;
const BUCKETS = 8;
const BIG = '9007199254740993'; // 2^53 + 1: not representable as a JSON number
const ARROW_ROWS = 1_000;

async function startCluster(dataDir: string): Promise<LocalCluster> {
  return LocalCluster.start({ dataDir, nodes: 3, coordinators: 2, gatewayPort: 0, kafkaPort: 0, leaseTtlMs: 3_000, coordinatorTickMs: 500 });
}

async function waitOpen(gateway: string, table: string): Promise<any> {
  return eventually(`buckets of ${table} open`, async () => {
    const cluster = (await http(gateway, 'GET', '/v1/cluster')).body;
    const buckets = cluster.buckets.filter((bucket: any) => bucket.table === table);
    return buckets.length === BUCKETS && buckets.every((bucket: any) => bucket.state === 'open') ? cluster : undefined;
  });
}

/** Scans every bucket from offset 0 to its high watermark; returns the records per bucket. */
async function scanAll(gateway: string, table: string, columns?: string): Promise<Map<number, any[]>> {
  const result = new Map<number, any[]>();
  for (let bucket = 0; bucket < BUCKETS; bucket++) {
    const records: any[] = [];
    let offset = 0;
    for (;;) {
      const query = `bucket=${bucket}&offset=${offset}&limit=10000${columns ? `&columns=${columns}` : ''}`;
      const response = await http(gateway, 'GET', `/v1/tables/${table}/scan?${query}`);
      expect(response.status).toBe(200);
      records.push(...response.body.records);
      offset = response.body.nextOffset;
      if (offset >= response.body.highWatermark) break;
      expect(response.body.records.length).toBeGreaterThan(0);
    }
    result.set(bucket, records);
  }
  return result;
}

function checkExactlyOnce(scanned: Map<number, any[]>): Map<string, number> {
  const seen = new Map<string, number>();
  for (const [bucket, records] of scanned) {
    records.forEach((record, index) => {
      // Per-bucket offsets are contiguous from 0, in order.
      expect(record.offset).toBe(index);
      const id = record.row.id as string;
      expect(seen.has(id)).toBe(false);
      seen.set(id, bucket);
    });
  }
  return seen;
}

describe('log tables on a real local cluster', () => {
  const directory = temporaryDirectory('log-table');
  let cluster: LocalCluster | null = null;

  afterAll(async () => {
    await cluster?.stop();
    directory.remove();
  });

  it('appends 100 000 rows, scans them back exactly once, and keeps them across a restart', async () => {
    cluster = await startCluster(directory.path);
    const gateway = cluster.gatewayUrl;
    const created = await http(gateway, 'POST', '/v1/tables', {
      name: 'events',
      columns: [
        { name: 'id', type: 'int64' },
        { name: 'name', type: 'string' },
        { name: 'big', type: 'int64' },
        { name: 'ok', type: 'boolean' },
      ],
      bucketKey: ['id'],
      buckets: BUCKETS,
    });
    expect(created.status).toBe(201);
    const clusterView = await waitOpen(gateway, 'events');

    let appended = 0;
    for (let start = 0; start < ROWS; start += BATCH) {
      const rows = Array.from({ length: BATCH }, (_, index) => ({ id: start + index, name: `row-${start + index}`, big: BIG, ok: index % 2 === 0 }));
      const response = await http(gateway, 'POST', '/v1/tables/events/append', { rows });
      expect(response.status).toBe(200);
      expect(response.body.appended).toBe(BATCH);
      expect(response.body.buckets.reduce((sum: number, part: any) => sum + part.count, 0)).toBe(BATCH);
      appended += response.body.appended;
    }
    expect(appended).toBe(ROWS);

    const scanned = await scanAll(gateway, 'events');
    const seen = checkExactlyOnce(scanned);
    expect(seen.size).toBe(ROWS);
    for (let id = 0; id < ROWS; id += 9_973) expect(seen.has(String(id))).toBe(true);
    const sample = scanned.get(0)![0];
    expect(sample.row).toEqual({ id: sample.row.id, name: `row-${sample.row.id}`, big: BIG, ok: Number(sample.row.id) % 2 === 0 });
    expect(typeof sample.timestamp).toBe('number');

    // Projection returns only the named columns.
    const projected = await http(gateway, 'GET', '/v1/tables/events/scan?bucket=1&offset=0&limit=5&columns=id,big');
    expect(projected.body.records.map((record: any) => Object.keys(record.row))).toEqual(Array(5).fill(['id', 'big']));

    // A bad row is rejected with 400 naming row and column, and nothing of the request is written.
    const watermarks = async () => Promise.all(Array.from({ length: BUCKETS }, async (_, bucket) => (await http(gateway, 'GET', `/v1/tables/events/scan?bucket=${bucket}&offset=0&limit=1`)).body.highWatermark));
    const before = await watermarks();
    const bad = await http(gateway, 'POST', '/v1/tables/events/append', { rows: [{ id: 1, name: 'fine' }, { id: 'not a number', name: 'x' }] });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('InvalidArgument');
    expect(bad.body.error.message).toMatch(/row 1, column 'id'/);
    expect(await watermarks()).toEqual(before);

    // Routing over NATS: NotLeader with the leader's address from a non-leader; table-addressed writes to any node.
    const nc = await connect({ servers: cluster.natsUrl });
    try {
      const bucketZero = clusterView.buckets.find((bucket: any) => bucket.table === 'events' && bucket.bucket === 0);
      const leader = clusterView.nodes.find((node: any) => node.id === bucketZero.leader);
      const other = clusterView.nodes.find((node: any) => node.id !== bucketZero.leader);
      const route = await requestJson<any>(nc, SUBJECTS.anyNodeRpc, { op: 'describeTable', table: 'events' });
      const error = await requestJson(nc, SUBJECTS.nodeRpc(other.address), {
        op: 'append', table: 'events', tableId: route.tableId, partition: null, bucket: 0, rows: [{ id: -1 }],
      }).catch((caught) => caught);
      expect(error).toBeInstanceOf(MinkError);
      expect((error as MinkError).code).toBe('NotLeader');
      expect((error as MinkError).details?.redirect).toMatchObject({ bucket: 0, node: leader.id, to: leader.address });
      const forwarded = await requestJson<any>(nc, SUBJECTS.nodeRpc(other.address), {
        op: 'appendTable', table: 'events', rows: Array.from({ length: 64 }, (_, index) => ({ id: ROWS + index, name: 'forwarded' })),
      });
      expect(forwarded.appended).toBe(64);
      expect(forwarded.buckets.reduce((sum: number, part: any) => sum + part.count, 0)).toBe(64);
    } finally {
      await nc.close();
    }
    // Arrow from the TypeScript client: a record batch spanning buckets is split and stored once, values exact.
    const client = await MinkClient.connect({ servers: cluster.natsUrl });
    try {
      const ids = Array.from({ length: ARROW_ROWS }, (_, index) => ROWS + 64 + index);
      const batch = new RecordBatch({
        id: vectorFromArray(ids.map(BigInt), new Int64()).data[0]!,
        name: vectorFromArray(ids.map((id) => `arrow-${id}`), new Utf8()).data[0]!,
        big: vectorFromArray(ids.map(() => BigInt(BIG)), new Int64()).data[0]!,
        ok: vectorFromArray(ids.map((id) => id % 3 === 0), new Bool()).data[0]!,
      });
      const result = await client.table('events').appendArrow(batch);
      expect(result.appended).toBe(ARROW_ROWS);
      expect(result.buckets.length).toBeGreaterThan(1);
      expect(result.buckets.reduce((sum, part) => sum + part.count, 0)).toBe(ARROW_ROWS);
    } finally {
      await client.close();
    }
    const afterForward = checkExactlyOnce(await scanAll(gateway, 'events', 'id'));
    expect(afterForward.size).toBe(ROWS + 64 + ARROW_ROWS);
    const arrowRow = [...(await scanAll(gateway, 'events')).values()].flat().find((record) => record.row.id === String(ROWS + 64 + 9));
    expect(arrowRow.row).toEqual({ id: String(ROWS + 73), name: `arrow-${ROWS + 73}`, big: BIG, ok: (ROWS + 73) % 3 === 0 });

    // Background compaction rewrites the WAL slices into per-stream objects; scans return the same rows.
    const store = new S3ObjectStore({ endpoint: cluster.s3Endpoint, bucket: 'mink', region: 'us-east-1', accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' });
    await eventually('stream objects written by compaction', async () => ((await store.list('streams/')).length >= BUCKETS ? true : undefined), { timeoutMs: 60_000, intervalMs: 1_000 });
    const afterCompaction = checkExactlyOnce(await scanAll(gateway, 'events', 'id'));
    expect([...afterCompaction.entries()].sort()).toEqual([...afterForward.entries()].sort());

    // Stop the whole cluster and start it again on the same data dir: the same rows come back.
    await cluster.stop();
    cluster = await startCluster(directory.path);
    await waitOpen(cluster.gatewayUrl, 'events');
    const restarted = await scanAll(cluster.gatewayUrl, 'events', 'id');
    expect([...checkExactlyOnce(restarted).entries()].sort()).toEqual([...afterForward.entries()].sort());
  });
});
