/**
 * The foundation end to end, on real processes (nats-server, s3rver, two coordinators, three data nodes,
 * gateway, tiering worker): a table of 8 buckets is spread 3/3/2 and every bucket is opened by its
 * leader at its leader epoch; bad schemas get clear 400s and duplicates 409; coordinator actions sent to
 * the replica that does not hold the lease are forwarded; a restarted data node comes back with a
 * higher node epoch and re-opens its buckets at fresh leader epochs; and a whole-cluster restart on the
 * same data dir keeps every table; every line the services logged meanwhile is a JSON record.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from 'nats';
import { LocalCluster } from '@mink/devcluster';
import { SUBJECTS } from '@mink/protocol';
import { requestJson } from '@mink/transport';
import { eventually, http, temporaryDirectory } from './helpers';

jest.setTimeout(240_000);

const LEASE_TTL_MS = 3_000;
const TICK_MS = 500;

async function startCluster(dataDir: string): Promise<LocalCluster> {
  return LocalCluster.start({ dataDir, nodes: 3, coordinators: 2, gatewayPort: 0, kafkaPort: 0, leaseTtlMs: LEASE_TTL_MS, coordinatorTickMs: TICK_MS });
}

/** Waits until every bucket of `table` is open on its leader at its leader epoch; returns the cluster view. */
async function allOpen(gateway: string, table: string) {
  return eventually(`every bucket of ${table} open`, async () => {
    const cluster = (await http(gateway, 'GET', '/v1/cluster')).body;
    const described = (await http(gateway, 'GET', `/v1/tables/${table}`)).body;
    const buckets = cluster.buckets.filter((bucket: any) => bucket.table === table);
    if (buckets.length === 0 || !buckets.every((bucket: any) => bucket.state === 'open')) return undefined;
    const streamsAtLeaderEpoch = described.bucketLeaders.every(
      (bucket: any) => bucket.stream.state === 'open' && bucket.stream.epoch === bucket.leaderEpoch && bucket.stream.node === bucket.leader,
    );
    return streamsAtLeaderEpoch ? { cluster, described } : undefined;
  });
}

describe('foundation on a real local cluster', () => {
  const directory = temporaryDirectory('foundation');
  let cluster: LocalCluster | null = null;

  afterAll(async () => {
    await cluster?.stop();
    directory.remove();
  });

  it('assigns, opens, validates, forwards, restarts a node and restarts the cluster', async () => {
    cluster = await startCluster(directory.path);
    const gateway = cluster.gatewayUrl;

    for (const path of ['/healthz', '/readyz']) expect((await http(gateway, 'GET', path)).status).toBe(200);
    expect((await http(gateway, 'GET', '/metrics')).body).toContain('process_cpu_user_seconds_total');

    const created = await http(gateway, 'POST', '/v1/tables', {
      name: 'events',
      columns: [
        { name: 'id', type: 'int64' },
        { name: 'payload', type: 'string' },
      ],
      buckets: 8,
    });
    expect(created.status).toBe(201);
    expect(created.body.name).toBe('events');
    expect(created.body.bucketLeaders).toHaveLength(8);

    const { cluster: view } = await allOpen(gateway, 'events');
    const loads = new Map<string, number>();
    for (const bucket of view.buckets) loads.set(bucket.leader, (loads.get(bucket.leader) ?? 0) + 1);
    expect([...loads.values()].sort()).toEqual([2, 3, 3]);
    expect(view.nodes.map((node: any) => node.id)).toEqual(['1', '2', '3']);
    expect(view.nodes.every((node: any) => node.live && node.epoch >= 1)).toBe(true);
    expect(view.coordinator.node).toMatch(/^coordinator-/);
    expect(view.bucketStates).toEqual({ open: 8, opening: 0, unavailable: 0 });
    // Without the per-bucket list (what a poller of 100 000 buckets asks for): the nodes and the counts only.
    const summary = (await http(gateway, 'GET', '/v1/cluster?buckets=false')).body;
    const totals = [{ table: 'events', buckets: 8, endOffset: 0, bytes: 0 }];
    expect(summary).toEqual({ coordinator: view.coordinator, nodes: view.nodes, bucketStates: { open: 8, opening: 0, unavailable: 0 }, tables: totals });
    const typo = await http(gateway, 'GET', '/v1/cluster?buckets=no');
    expect([typo.status, typo.body.error?.code, typo.body.error?.message]).toEqual([400, 'InvalidArgument', 'buckets must be true or false, got "no"']);
    // One table's buckets (what the console lists for the table it shows); a bad or missing table is refused.
    const ofEvents = (await http(gateway, 'GET', '/v1/cluster?table=events')).body;
    expect(ofEvents).toEqual({ ...view, tables: totals });
    const refusals = await Promise.all(['table=', 'table=9%20bad', 'table=events&table=events', 'table=events&buckets=false', 'table=missing'].map((query) => http(gateway, 'GET', `/v1/cluster?${query}`)));
    expect(refusals.map((refusal) => [refusal.status, refusal.body.error?.code])).toEqual([
      [400, 'InvalidArgument'],
      [400, 'InvalidArgument'],
      [400, 'InvalidArgument'],
      [400, 'InvalidArgument'],
      [404, 'NotFound'],
    ]);

    // Validation: every bad schema is a 400 naming the problem; nothing is created.
    const bad: [unknown, RegExp][] = [
      [{ name: 'x', columns: [{ name: 'a', type: 'varchar' }], buckets: 1 }, /unknown type 'varchar'/],
      [{ name: 'x', columns: [{ name: 'a', type: 'int32' }, { name: 'a', type: 'string' }], buckets: 1 }, /duplicate column 'a'/],
      [{ name: 'x', columns: [{ name: 'a', type: 'int32' }], primaryKey: ['b'], buckets: 1 }, /'b'/],
      [{ name: 'x', columns: [{ name: 'a', type: 'int32' }], buckets: 0 }, /buckets/],
      [{ name: 'x', columns: [{ name: 'a', type: 'int32' }], buckets: 2000 }, /buckets/],
      [{ name: '9 bad name', columns: [{ name: 'a', type: 'int32' }], buckets: 1 }, /name/],
      ['{not json', /./],
    ];
    for (const [body, message] of bad) {
      const response = await http(gateway, 'POST', '/v1/tables', body);
      expect({ body, status: response.status, code: response.body.error?.code }).toEqual({ body, status: 400, code: 'InvalidArgument' });
      expect(response.body.error.message).toMatch(message);
    }
    const duplicate = await http(gateway, 'POST', '/v1/tables', { name: 'events', columns: [{ name: 'a', type: 'int32' }], buckets: 1 });
    expect(duplicate.status).toBe(409);
    expect(duplicate.body.error.code).toBe('Conflict');
    expect((await http(gateway, 'GET', '/v1/tables/missing')).status).toBe(404);
    expect((await http(gateway, 'GET', '/v1/tables')).body.tables.map((table: any) => table.name)).toEqual(['events']);

    // A coordinator action sent straight to the replica that does not hold the lease is forwarded.
    const nc = await connect({ servers: cluster.natsUrl });
    try {
      const holder = view.coordinator.node as string;
      const other = holder === 'coordinator-1' ? 'coordinator-2' : 'coordinator-1';
      const result = await requestJson<any>(nc, SUBJECTS.coordinatorDirect(other), {
        op: 'createTable',
        spec: { name: 'forwarded', columns: [{ name: 'k', type: 'string' }], primaryKey: ['k'], buckets: 2 },
      });
      expect(result.name).toBe('forwarded');
      expect(result.leaders).toHaveLength(2);
    } finally {
      await nc.close();
    }
    expect((await http(gateway, 'DELETE', '/v1/tables/forwarded')).status).toBe(200);
    expect((await http(gateway, 'GET', '/v1/tables/forwarded')).status).toBe(404);

    // A restarted data node registers a higher epoch and re-opens its buckets at fresh leader epochs.
    const before = (await http(gateway, 'GET', '/v1/cluster')).body;
    const epochBefore = before.nodes.find((node: any) => node.id === '2').epoch;
    const bucketsOfTwo = before.buckets.filter((bucket: any) => bucket.leader === '2');
    expect(bucketsOfTwo.length).toBeGreaterThan(0);
    await cluster.kill('data-node', '2', 'SIGKILL');
    await cluster.restart('data-node', '2');
    const after = await eventually('node 2 back with a higher epoch and its buckets open again', async () => {
      const { cluster: now } = await allOpen(gateway, 'events');
      const node = now.nodes.find((candidate: any) => candidate.id === '2');
      return node.epoch > epochBefore && node.live ? now : undefined;
    });
    for (const bucket of bucketsOfTwo) {
      const now = after.buckets.find((candidate: any) => candidate.bucket === bucket.bucket && candidate.table === 'events');
      // Still led by node 2 (it came back within lease_ttl or was re-led) and never by two nodes at one epoch.
      expect(now.leaderEpoch).toBeGreaterThan(bucket.leaderEpoch);
      expect(now.state).toBe('open');
    }

    // Restart the whole cluster on the same data dir: the table and its buckets are still there.
    await cluster.stop();
    cluster = await startCluster(directory.path);
    const restarted = cluster.gatewayUrl;
    expect((await http(restarted, 'GET', '/v1/tables')).body.tables.map((table: any) => table.name)).toEqual(['events']);
    const { described } = await allOpen(restarted, 'events');
    expect(described.bucketLeaders).toHaveLength(8);

    // Every line the mink services wrote, over two starts and a kill -9, is a pino JSON record: no library
    // printed plain text among them (the AWS SDK's nine-line notice about Node.js 22 did until 2026-12-07).
    const logDir = join(directory.path, 'logs');
    const serviceLogs = readdirSync(logDir).filter((name) => /^(coordinator|data-node|gateway|tiering)/.test(name));
    expect(serviceLogs.length).toBeGreaterThanOrEqual(7);
    for (const name of serviceLogs) {
      const notJson = readFileSync(join(logDir, name), 'utf8')
        .split('\n')
        .filter((line) => line !== '' && !isLogRecord(line));
      expect({ name, notJson: notJson.slice(0, 3) }).toEqual({ name, notJson: [] });
    }
  });
});

function isLogRecord(line: string): boolean {
  try {
    const record = JSON.parse(line) as { level?: unknown; time?: unknown; msg?: unknown };
    return typeof record.level === 'number' && typeof record.time === 'number' && typeof record.msg === 'string';
  } catch {
    return false;
  }
}
