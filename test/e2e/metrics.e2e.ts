/**
 * Prometheus metrics of a real cluster (issue 14, item 3): after known appends, puts, lookups and scans
 * through the TypeScript client and one refused request, the data node's `/metrics` counts exactly those
 * rows per table and operation, with latency histograms, WAL upload and commit histograms and the PK
 * restores of its buckets; the gateway counts its HTTP answers by route; the coordinator counts every
 * bucket as open and shows its epoch.
 */
import { MinkClient } from '@mink/client';
import { LocalCluster } from '@mink/devcluster';
import { SUBJECTS } from '@mink/protocol';
import { requestJson } from '@mink/transport';
import { connect } from 'nats';
import { eventually, http, temporaryDirectory } from './helpers';

jest.setTimeout(300_000);

/** Every sample of a metric in Prometheus text whose labels include `labels`, as [labels, value]. */
function samples(text: string, name: string, labels: Record<string, string> = {}): [Record<string, string>, number][] {
  const found: [Record<string, string>, number][] = [];
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const own = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((pair) => [pair[1]!, pair[2]!]));
    if (Object.entries(labels).every(([key, value]) => own[key] === value)) found.push([own, Number(match[3])]);
  }
  return found;
}

function sum(text: string, name: string, labels: Record<string, string> = {}): number {
  return samples(text, name, labels).reduce((total, [, value]) => total + value, 0);
}

describe('metrics that matter', () => {
  const directory = temporaryDirectory('metrics');
  let cluster: LocalCluster | undefined;
  let client: MinkClient | undefined;

  afterAll(async () => {
    await client?.close().catch(() => undefined);
    await cluster?.stop().catch(() => undefined);
    directory.remove();
  });

  it('counts the rows, requests, latencies, WAL objects and restores of the data path, and the buckets by state', async () => {
    cluster = await LocalCluster.start({ dataDir: directory.path, nodes: 1, coordinators: 1, gatewayPort: 0, kafkaPort: 0 });
    const gateway = cluster.gatewayUrl;
    expect((await http(gateway, 'POST', '/v1/tables', { name: 'm_events', columns: [{ name: 'id', type: 'int64' }, { name: 'payload', type: 'string' }], bucketKey: ['id'], buckets: 4 })).status).toBe(201);
    expect((await http(gateway, 'POST', '/v1/tables', { name: 'm_users', columns: [{ name: 'id', type: 'int64' }, { name: 'name', type: 'string' }], primaryKey: ['id'], buckets: 2 })).status).toBe(201);
    await eventually('every bucket open', async () => {
      const status = (await http(gateway, 'GET', '/v1/cluster')).body;
      return status.buckets.length === 6 && status.buckets.every((bucket: any) => bucket.state === 'open') ? true : undefined;
    }, 60_000);

    client = await MinkClient.connect({ servers: cluster.natsUrl });
    const events = client.table('m_events');
    for (let start = 0; start < 1_000; start += 250) {
      await events.append(Array.from({ length: 250 }, (_, index) => ({ id: start + index, payload: `row ${start + index}` })));
    }
    const users = client.table('m_users');
    await users.put(Array.from({ length: 300 }, (_, id) => ({ id, name: `user ${id}` })));
    const { rows } = await users.lookup(Array.from({ length: 50 }, (_, id) => ({ id })));
    expect(rows.filter((row) => row !== null)).toHaveLength(50);
    let scanned = 0;
    for (let bucket = 0; bucket < 4; bucket++) {
      for (let offset = 0, end = 1; offset < end; ) {
        const page = await events.scan({ bucket, offset, limit: 10_000 });
        scanned += page.records.length;
        offset = page.nextOffset;
        end = page.highWatermark;
      }
    }
    expect(scanned).toBe(1_000);

    // One refused request, sent to the node as a client would: a put with a row of the wrong type.
    const nodeAddress = SUBJECTS.nodeAddress('1');
    const described = (await http(gateway, 'GET', '/v1/tables/m_users')).body;
    const nc = await connect({ servers: cluster.natsUrl });
    try {
      await expect(
        requestJson(nc, SUBJECTS.nodeRpc(nodeAddress), { op: 'put', table: 'm_users', tableId: described.tableId, partition: null, bucket: 0, rows: [{ id: 'not a number', name: 'x' }] }),
      ).rejects.toMatchObject({ code: 'InvalidArgument' });
    } finally {
      await nc.close();
    }

    const node = (await http(`http://127.0.0.1:${cluster.process('data-node', '1').ports.http}`, 'GET', '/metrics')).body as string;
    expect(sum(node, 'mink_bucket_rows_total', { table: 'm_events', op: 'append' })).toBe(1_000);
    expect(sum(node, 'mink_bucket_rows_total', { table: 'm_users', op: 'put' })).toBe(300);
    expect(sum(node, 'mink_bucket_rows_total', { table: 'm_users', op: 'lookup' })).toBe(50);
    expect(sum(node, 'mink_bucket_rows_total', { table: 'm_events', op: 'scan' })).toBe(1_000);
    // Per bucket: the 4 buckets of m_events each took some of the appends.
    expect(samples(node, 'mink_bucket_rows_total', { table: 'm_events', op: 'append' }).map(([labels]) => labels.bucket).sort()).toEqual(['0', '1', '2', '3']);
    expect(sum(node, 'mink_bucket_bytes_total', { table: 'm_events', op: 'append' })).toBeGreaterThan(1_000 * 8);
    expect(sum(node, 'mink_bucket_requests_total', { table: 'm_users', op: 'put', outcome: 'InvalidArgument' })).toBe(1);
    expect(sum(node, 'mink_bucket_requests_total', { table: 'm_users', op: 'put', outcome: 'ok' })).toBeGreaterThanOrEqual(2);
    // Every request counted is in the latency histogram too.
    expect(sum(node, 'mink_bucket_request_seconds_count')).toBe(sum(node, 'mink_bucket_requests_total'));
    expect(sum(node, 'mink_wal_upload_seconds_count', { outcome: 'ok' })).toBeGreaterThan(0);
    expect(sum(node, 'mink_wal_object_bytes_count')).toBe(sum(node, 'mink_wal_upload_seconds_count', { outcome: 'ok' }));
    expect(sum(node, 'mink_wal_commit_seconds_count', { outcome: 'ok' })).toBeGreaterThan(0);
    expect(samples(node, 'mink_wal_queued_bytes')).toHaveLength(1);
    // Each PK bucket restored its tablet (empty) when it opened here.
    expect(sum(node, 'mink_kv_restore_seconds_count')).toBe(2);
    // Every put row went through a group commit of its bucket; the refused put never reached one.
    expect(sum(node, 'mink_pk_group_operations_sum')).toBe(300);
    expect(sum(node, 'mink_pk_group_requests_count')).toBeGreaterThanOrEqual(2);
    expect(sum(node, 'mink_pk_group_requests_sum')).toBeGreaterThanOrEqual(sum(node, 'mink_pk_group_requests_count'));

    // The gateway counts its HTTP answers by route pattern and status.
    const gatewayMetrics = (await http(gateway, 'GET', '/metrics')).body as string;
    expect(sum(gatewayMetrics, 'mink_http_requests_total', { method: 'POST', route: '/v1/tables', status: '201' })).toBe(2);
    expect(sum(gatewayMetrics, 'mink_http_request_seconds_count', { method: 'GET', route: '/v1/tables/:name' })).toBe(1);

    const coordinator = (await http(`http://127.0.0.1:${cluster.process('coordinator', 'coordinator-1').ports.http}`, 'GET', '/metrics')).body as string;
    expect(sum(coordinator, 'mink_cluster_buckets', { state: 'open' })).toBe(6);
    expect(sum(coordinator, 'mink_cluster_buckets', { state: 'leader_dead' })).toBe(0);
    expect(sum(coordinator, 'mink_coordinator_epoch')).toBeGreaterThanOrEqual(1);
  });
});
