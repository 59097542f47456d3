/**
 * Retention on a real local cluster (docs/architecture.md §9): a log table with `table.log.ttl` of 15 s is appended to;
 * the coordinator lease holder's retention loop trims its streams once their records are older than the
 * TTL, so a scan's start moves up (a scan from 0 begins at the stream's start), the stream objects nothing
 * points into any more are deleted from S3 by the garbage collector after its grace period, and appends
 * and scans of new records go on. A table with the lake on is never trimmed beyond what its lake holds.
 */
import { LocalCluster } from '@mink/devcluster';
import { S3ObjectStore } from '@mink/s3stream';
import { SHORT_LEASE_CLUSTER, eventually, http, temporaryDirectory } from './helpers';

jest.setTimeout(300_000);

interface StreamOf {
  bucket: number;
  stream: { startOffset: number; endOffset: number };
}

describe('retention on a real local cluster', () => {
  const directory = temporaryDirectory('retention');
  let cluster: LocalCluster;

  beforeAll(async () => {
    cluster = await LocalCluster.start({ dataDir: directory.path, ...SHORT_LEASE_CLUSTER });
  });

  afterAll(async () => {
    await cluster?.stop();
    if (process.env.MINK_E2E_KEEP) console.log('kept', directory.path);
    else directory.remove();
  });

  async function streamsOf(table: string): Promise<StreamOf[]> {
    const described = await http(cluster.gatewayUrl, 'GET', `/v1/tables/${table}`);
    expect(described.status).toBe(200);
    return described.body.bucketLeaders;
  }

  it('trims streams past their TTL, moves the scan start, deletes the released objects and keeps serving new records', async () => {
    const created = await http(cluster.gatewayUrl, 'POST', '/v1/tables', {
      name: 'shortlived',
      columns: [{ name: 'id', type: 'int64' }],
      buckets: 1,
      // Long enough for compaction (every 10 s) to write the bucket's stream object first.
      properties: { 'table.log.ttl': '15s' },
    });
    expect(created.status).toBe(201);
    const tableId = created.body.tableId as number;
    for (let batch = 0; batch < 20; batch++) {
      const rows = Array.from({ length: 50 }, (_, index) => ({ id: batch * 50 + index }));
      expect((await http(cluster.gatewayUrl, 'POST', '/v1/tables/shortlived/append', { rows })).status).toBe(200);
    }
    const store = new S3ObjectStore({ endpoint: cluster.s3Endpoint, bucket: 'mink', region: 'us-east-1', accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' });
    const prefix = `streams/${tableId}-_-0/`;
    // Compaction writes the bucket's stream object(s) before retention releases them.
    const compactedObjects = await eventually('a stream object of the bucket', async () => {
      const listed = await store.list(prefix);
      return listed.length > 0 ? listed : undefined;
    }, { timeoutMs: 60_000, intervalMs: 500 });
    const compacted = compactedObjects.map((object) => object.key);

    // Every record is older than 15 s some seconds later: the stream starts at its end.
    const trimmed = await eventually('the stream trimmed to its end', async () => {
      const [bucket] = await streamsOf('shortlived');
      return bucket!.stream.startOffset === 1_000 && bucket!.stream.endOffset === 1_000 ? bucket : undefined;
    }, { timeoutMs: 60_000, intervalMs: 500 });
    expect(trimmed.stream).toMatchObject({ startOffset: 1_000, endOffset: 1_000 });
    const empty = await http(cluster.gatewayUrl, 'GET', '/v1/tables/shortlived/scan?bucket=0&offset=0&limit=100');
    expect(empty.status).toBe(200);
    expect(empty.body.records).toEqual([]);
    expect(Number(empty.body.highWatermark)).toBe(1_000);

    // New records are appended and read after the trimmed ones.
    expect((await http(cluster.gatewayUrl, 'POST', '/v1/tables/shortlived/append', { rows: [{ id: 5_000 }] })).status).toBe(200);
    const fresh = await http(cluster.gatewayUrl, 'GET', '/v1/tables/shortlived/scan?bucket=0&offset=0&limit=100');
    expect(fresh.body.records.map((record: { offset: string | number; row: { id: string } }) => [Number(record.offset), record.row.id])).toEqual([[1_000, '5000']]);

    // The objects the trimmed slices pointed into are deleted once the garbage collector's grace period is over.
    await eventually('the released stream objects deleted', async () => {
      const listed = new Set((await store.list(prefix)).map((object) => object.key));
      return compacted.every((key) => !listed.has(key)) ? true : undefined;
    }, { timeoutMs: 120_000, intervalMs: 1_000 });
    // The coordinators count what their collector deleted, in bytes too: at least the stream objects above
    // (the WAL objects compaction released went the same way).
    const streamObjectBytes = compactedObjects.reduce((sum, object) => sum + object.size, 0);
    expect(streamObjectBytes).toBeGreaterThan(0);
    await eventually(`at least the ${streamObjectBytes} bytes of the stream objects counted as deleted`, async () => {
      let total = 0;
      for (const coordinator of cluster.processes().filter((process) => process.role === 'coordinator' && process.running)) {
        const metrics = (await http(`http://127.0.0.1:${coordinator.ports.http}`, 'GET', '/metrics')).body as string;
        total += Number(/^mink_gc_bytes_deleted_total(?:\{[^}]*\})? (\S+)$/m.exec(metrics)?.[1] ?? 0);
      }
      return total >= streamObjectBytes ? total : undefined;
    });
  });

  it('never trims a lake table beyond what its lake holds', async () => {
    // Freshness 1 h: no tiering round is due during the test, so the lake holds nothing and nothing may go.
    const created = await http(cluster.gatewayUrl, 'POST', '/v1/tables', {
      name: 'laked',
      columns: [{ name: 'id', type: 'int64' }],
      buckets: 1,
      properties: { 'table.log.ttl': '1s', 'table.datalake.enabled': 'true', 'table.datalake.freshness': '1h' },
    });
    expect(created.status).toBe(201);
    expect((await http(cluster.gatewayUrl, 'POST', '/v1/tables/laked/append', { rows: [{ id: 1 }, { id: 2 }] })).status).toBe(200);
    // A plain table created after it, with the same TTL, is trimmed: the retention loop has run over both.
    expect((await http(cluster.gatewayUrl, 'POST', '/v1/tables', { name: 'witness', columns: [{ name: 'id', type: 'int64' }], buckets: 1, properties: { 'table.log.ttl': '1s' } })).status).toBe(201);
    expect((await http(cluster.gatewayUrl, 'POST', '/v1/tables/witness/append', { rows: [{ id: 1 }] })).status).toBe(200);
    await eventually('the witness trimmed', async () => ((await streamsOf('witness'))[0]!.stream.startOffset === 1 ? true : undefined), { timeoutMs: 60_000, intervalMs: 500 });
    expect((await streamsOf('laked'))[0]!.stream).toMatchObject({ startOffset: 0, endOffset: 2 });
    const scan = await http(cluster.gatewayUrl, 'GET', '/v1/tables/laked/scan?bucket=0&offset=0');
    expect(scan.body.records.map((record: { row: { id: string } }) => record.row.id)).toEqual(['1', '2']);
  });

  it('changes a table\'s retention with PATCH /v1/tables/{name}, and refuses properties that cannot change', async () => {
    const created = await http(cluster.gatewayUrl, 'POST', '/v1/tables', { name: 'kept', columns: [{ name: 'id', type: 'int64' }], buckets: 1, properties: { 'table.log.ttl': '0' } });
    expect(created.status).toBe(201);
    expect((await http(cluster.gatewayUrl, 'POST', '/v1/tables/kept/append', { rows: [{ id: 1 }, { id: 2 }, { id: 3 }] })).status).toBe(200);

    const badValue = await http(cluster.gatewayUrl, 'PATCH', '/v1/tables/kept', { properties: { 'table.log.ttl': 'soon' } });
    expect(badValue.status).toBe(400);
    expect(badValue.body.error.message).toContain("property 'table.log.ttl': 'soon' is not a duration");
    const fixed = await http(cluster.gatewayUrl, 'PATCH', '/v1/tables/kept', { properties: { 'table.log.format': 'kafka' } });
    expect(fixed.status).toBe(400);
    expect(fixed.body.error.message).toContain("property 'table.log.format' cannot be changed");
    expect((await http(cluster.gatewayUrl, 'PATCH', '/v1/tables/missing', { properties: { 'table.log.ttl': '1s' } })).status).toBe(404);

    const altered = await http(cluster.gatewayUrl, 'PATCH', '/v1/tables/kept', { properties: { 'table.log.ttl': '1s' } });
    expect(altered.status).toBe(200);
    expect(altered.body.properties).toEqual({ 'table.log.ttl': '1s' });
    // Kept forever until now, trimmed once the new TTL has passed.
    await eventually('the stream trimmed under its new TTL', async () => ((await streamsOf('kept'))[0]!.stream.startOffset === 3 ? true : undefined), { timeoutMs: 60_000, intervalMs: 500 });
  });
});
