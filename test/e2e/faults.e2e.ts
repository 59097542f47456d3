/**
 * Faults on real processes under continuous append load, each ending with a scan of every bucket that
 * finds every acknowledged row exactly once: `kill -9` of a bucket leader (its buckets are re-led after
 * lease_ttl and opened by the new leader after fencing the dead incarnation), and `SIGSTOP` of a leader
 * past lease_ttl followed by `SIGCONT` (the resumed node finds itself fenced, registers a new
 * incarnation and does not acknowledge any write for the buckets it lost).
 */
import { readFileSync } from 'node:fs';
import { connect } from 'nats';
import { MinkClient } from '@mink/client';
import { sleep } from '@mink/config';
import { LocalCluster } from '@mink/devcluster';
import type { ColumnSpec } from '@mink/meta';
import { MinkError, SUBJECTS } from '@mink/protocol';
import { bucketOfRow, validateRows } from '@mink/records';
import { requestJson } from '@mink/transport';
import { eventually, http, temporaryDirectory } from './helpers';
import { AppendLoad, expectAcknowledgedExactlyOnce, storedIds } from './load';
import { PUT_LOAD_COLUMNS, PutLoad } from './put-load';

jest.setTimeout(300_000);

const BUCKETS = 8;
const PK_COLUMNS: ColumnSpec[] = [
  { name: 'id', type: 'int64' },
  { name: 'value', type: 'string' },
];
const LEASE_TTL_MS = 3_000;

async function startLoadedCluster(dataDir: string, table: string) {
  const cluster = await LocalCluster.start({ dataDir, nodes: 3, coordinators: 2, gatewayPort: 0, kafkaPort: 0, leaseTtlMs: LEASE_TTL_MS, coordinatorTickMs: 500 });
  const created = await http(cluster.gatewayUrl, 'POST', '/v1/tables', {
    name: table,
    columns: [
      { name: 'id', type: 'int64' },
      { name: 'lane', type: 'string' },
    ],
    bucketKey: ['id'],
    buckets: BUCKETS,
  });
  expect(created.status).toBe(201);
  await allOpen(cluster.gatewayUrl, table);
  const client = await MinkClient.connect({ servers: cluster.natsUrl });
  return { cluster, client };
}

async function allOpen(gateway: string, table: string, condition: (status: any) => boolean = () => true): Promise<any> {
  return eventually(`every bucket of ${table} open`, async () => {
    const status = (await http(gateway, 'GET', '/v1/cluster')).body;
    const buckets = status.buckets.filter((bucket: any) => bucket.table === table);
    return buckets.length === BUCKETS && buckets.every((bucket: any) => bucket.state === 'open') && condition(status) ? status : undefined;
  }, 60_000);
}


describe('faults under append load', () => {
  const directories: { remove(): void }[] = [];
  const clusters: LocalCluster[] = [];
  const clients: MinkClient[] = [];

  afterAll(async () => {
    for (const client of clients) await client.close().catch(() => undefined);
    for (const cluster of clusters) await cluster.stop().catch(() => undefined);
    for (const directory of directories) directory.remove();
  });

  it('kill -9 of a bucket leader loses no acknowledged write', async () => {
    const { cluster, client } = await loaded('killed');
    // A primary-key table beside it takes puts that the client pipelines (5 calls in flight per lane, each
    // putting the lane's keys with the next version), so a put retried after the kill must not land behind
    // a later one of the same key.
    expect((await http(cluster.gatewayUrl, 'POST', '/v1/tables', { name: 'killed_pk', columns: PUT_LOAD_COLUMNS, primaryKey: ['id'], buckets: BUCKETS })).status).toBe(201);
    await allOpen(cluster.gatewayUrl, 'killed_pk');
    const before = (await http(cluster.gatewayUrl, 'GET', '/v1/cluster')).body;
    const victim = before.buckets.find((bucket: any) => bucket.table === 'killed' && bucket.bucket === 0).leader as string;
    const victimBuckets = before.buckets.filter((bucket: any) => bucket.table === 'killed' && bucket.leader === victim).map((bucket: any) => bucket.bucket);
    expect(before.buckets.filter((bucket: any) => bucket.table === 'killed_pk' && bucket.leader === victim).length).toBeGreaterThan(0);

    const load = new AppendLoad(client, 'killed');
    const puts = new PutLoad(client, 'killed_pk', { lanes: 2, keysPerLane: 16, callsMax: 20_000, pauseMs: 2, inFlight: 5 });
    load.start();
    puts.start();
    await load.advance(200);
    await puts.advance(100);
    const acknowledgedAtFault = load.acknowledged.size;
    const putsAtFault = puts.acknowledgedCalls;
    cluster.kill('data-node', victim, 'SIGKILL');
    const after = await allOpen(cluster.gatewayUrl, 'killed', (status) =>
      status.buckets.every((bucket: any) => bucket.leader !== victim),
    );
    // Writes are acknowledged again after the failover (every bucket takes some of each 20-row call).
    await load.advance(200);
    await puts.advance(100);
    await load.stop();
    await puts.stop();
    expect(puts.acknowledgedCalls).toBeGreaterThan(putsAtFault);
    expect(await puts.violations()).toEqual([]);

    for (const bucket of victimBuckets) {
      const now = after.buckets.find((candidate: any) => candidate.table === 'killed' && candidate.bucket === bucket);
      expect(now.leader).not.toBe(victim);
      expect(now.leaderEpoch).toBeGreaterThan(before.buckets.find((candidate: any) => candidate.bucket === bucket).leaderEpoch);
    }
    // The new leaders replayed the dead node's WAL slices of the taken-over streams into stream objects.
    await eventually('the WAL of taken-over streams replayed', async () => {
      const logs = cluster.processes().filter((entry) => entry.role === 'data-node' && entry.nodeId !== victim).map((entry) => readFileSync(entry.logFile, 'utf8'));
      return logs.some((text) => /"objects":[1-9][0-9]*,"msg":"replayed the WAL of a taken-over stream/.test(text)) ? true : undefined;
    }, 30_000);
    // Writes went on being acknowledged after the failover, including for the victim's buckets.
    expect(acknowledgedAtFault).toBeGreaterThan(0);
    expect(load.acknowledged.size).toBeGreaterThan(acknowledgedAtFault);
    expectAcknowledgedExactlyOnce(load, await storedIds(cluster.gatewayUrl, 'killed', BUCKETS));
  });

  it('a leader paused past lease_ttl is fenced, re-registers, and acknowledges nothing for lost buckets', async () => {
    const { cluster, client } = await loaded('paused');
    const before = (await http(cluster.gatewayUrl, 'GET', '/v1/cluster')).body;
    const victim = before.buckets.find((bucket: any) => bucket.table === 'paused' && bucket.bucket === 0).leader as string;
    const victimNode = before.nodes.find((node: any) => node.id === victim);

    // A PK table too, with a key in a bucket the victim leads: after the takeover the key gets a new value.
    const created = await http(cluster.gatewayUrl, 'POST', '/v1/tables', {
      name: 'paused_pk',
      columns: PK_COLUMNS,
      primaryKey: ['id'],
      buckets: BUCKETS,
    });
    expect(created.status).toBe(201);
    const pkStatus = await allOpen(cluster.gatewayUrl, 'paused_pk');
    const victimBuckets = new Set<number>(pkStatus.buckets.filter((bucket: any) => bucket.table === 'paused_pk' && bucket.leader === victim).map((bucket: any) => bucket.bucket));
    expect(victimBuckets.size).toBeGreaterThan(0);
    const pk = client.table('paused_pk');
    const keys = Array.from({ length: 64 }, (_, id) => ({ id }));
    const keysOfBucket = (bucket: number) =>
      keys.filter(({ id }) => bucketOfRow(validateRows(PK_COLUMNS, [{ id }], { allowedColumns: ['id'] })[0]!, ['id'], BUCKETS) === bucket);
    expect([...victimBuckets].flatMap(keysOfBucket).length).toBeGreaterThan(0);
    await pk.put(keys.map(({ id }) => ({ id, value: 'before' })));

    const load = new AppendLoad(client, 'paused');
    load.start();
    await load.advance(200);
    const acknowledgedAtFault = load.acknowledged.size;
    cluster.pause('data-node', victim);
    await allOpen(cluster.gatewayUrl, 'paused', (status) => status.buckets.every((bucket: any) => bucket.leader !== victim));
    await allOpen(cluster.gatewayUrl, 'paused_pk', (status) => status.buckets.every((bucket: any) => bucket.table !== 'paused_pk' || bucket.leader !== victim));
    await pk.put(keys.map(({ id }) => ({ id, value: 'after' })));
    // Asked of one node that is not paused: the queue group of all nodes would hand about one request in
    // three to the frozen node, whose subscription NATS still counts, and wait out the request timeout.
    const bystander = before.nodes.find((node: any) => node.id !== victim);
    const route = await requestJson<any>(client.nc, SUBJECTS.nodeRpc(bystander.address), { op: 'describeTable', table: 'paused_pk' });
    cluster.resume('data-node', victim);
    // Lookups sent straight to the resumed node for its old buckets never see the value it had: it refuses
    // (lease lapsed, catching up) or redirects once it has caught up.
    const answers: string[] = [];
    for (let attempt = 0; attempt < 200 && answers.at(-1) !== 'NotLeader'; attempt++) {
      for (const bucket of victimBuckets) {
        const answer = await requestJson<any>(client.nc, SUBJECTS.nodeRpc(victimNode.address), {
          op: 'lookup', table: 'paused_pk', tableId: route.tableId, partition: null, bucket, keys: keysOfBucket(bucket),
        }).then((result) => JSON.stringify(result.rows), (error: MinkError) => error.code);
        answers.push(answer);
      }
      if (answers.at(-1) !== 'NotLeader') await sleep(20);
    }
    expect(answers.filter((answer) => answer.includes('before'))).toEqual([]);
    expect(answers.at(-1)).toBe('NotLeader');
    expect((await pk.lookup(keys)).rows.map((row) => row?.value)).toEqual(keys.map(() => 'after'));

    // The resumed node sees its epoch moved on and registers a fresh incarnation.
    const resumed = await eventually('the paused node re-registered', async () => {
      const status = (await http(cluster.gatewayUrl, 'GET', '/v1/cluster')).body;
      const node = status.nodes.find((candidate: any) => candidate.id === victim);
      return node.live && node.epoch > victimNode.epoch + 1 ? status : undefined;
    }, 60_000);
    expect(resumed.buckets.every((bucket: any) => bucket.leader !== victim)).toBe(true);

    // Writes sent straight to it for a bucket it lost are never acknowledged: it redirects.
    const nc = await connect({ servers: cluster.natsUrl });
    try {
      const route = await requestJson<any>(nc, SUBJECTS.anyNodeRpc, { op: 'describeTable', table: 'paused' });
      const answer = await requestJson(nc, SUBJECTS.nodeRpc(victimNode.address), {
        op: 'append', table: 'paused', tableId: route.tableId, partition: null, bucket: 0, rows: [{ id: -1, lane: 'direct' }],
      }).catch((error) => error);
      expect(answer).toBeInstanceOf(MinkError);
      expect(['NotLeader', 'Unavailable', 'Fenced']).toContain((answer as MinkError).code);
    } finally {
      await nc.close();
    }
    await load.advance(200);
    await load.stop();
    expect(acknowledgedAtFault).toBeGreaterThan(0);
    expect(load.acknowledged.size).toBeGreaterThan(acknowledgedAtFault);
    const stored = await storedIds(cluster.gatewayUrl, 'paused', BUCKETS);
    expect(stored.has(-1)).toBe(false);
    expectAcknowledgedExactlyOnce(load, stored);
  });

  async function loaded(name: string) {
    const directory = temporaryDirectory(name);
    directories.push(directory);
    const started = await startLoadedCluster(directory.path, name);
    clusters.push(started.cluster);
    clients.push(started.client);
    return { ...started, directory };
  }

  it('kill -9 of the coordinator lease holder: the other replica takes over and still re-leads a dead node', async () => {
    const { cluster, client } = await loaded('coordinator');
    const before = (await http(cluster.gatewayUrl, 'GET', '/v1/cluster')).body;
    const holder = before.coordinator.node as string;
    const load = new AppendLoad(client, 'coordinator');
    load.start();
    await load.advance(200);
    cluster.kill('coordinator', holder, 'SIGKILL');
    // A data node dies while the lease changes hands; its buckets must still be re-led.
    const victim = before.buckets.find((bucket: any) => bucket.table === 'coordinator' && bucket.bucket === 0).leader as string;
    cluster.kill('data-node', victim, 'SIGKILL');
    const after = await allOpen(cluster.gatewayUrl, 'coordinator', (status) =>
      status.coordinator.node !== holder && status.buckets.every((bucket: any) => bucket.leader !== victim),
    );
    expect(after.coordinator.epoch).toBeGreaterThan(before.coordinator.epoch);
    await load.advance(200);
    await load.stop();
    expectAcknowledgedExactlyOnce(load, await storedIds(cluster.gatewayUrl, 'coordinator', BUCKETS));
  });

  it('a killed data node restarts with a higher epoch and no bucket is led twice', async () => {
    const { cluster, client } = await loaded('restart');
    const before = (await http(cluster.gatewayUrl, 'GET', '/v1/cluster')).body;
    const victim = before.buckets.find((bucket: any) => bucket.table === 'restart' && bucket.bucket === 0).leader as string;
    const epochBefore = before.nodes.find((node: any) => node.id === victim).epoch;
    const load = new AppendLoad(client, 'restart');
    load.start();
    await load.advance(200);
    cluster.kill('data-node', victim, 'SIGKILL');
    await cluster.waitForExit('data-node', victim);
    await cluster.restart('data-node', victim);
    const after = await allOpen(cluster.gatewayUrl, 'restart', (status) => {
      const node = status.nodes.find((candidate: any) => candidate.id === victim);
      return node.live && node.epoch > epochBefore;
    });
    // Each node reports open exactly the buckets the view says it leads: no bucket is served twice.
    const nc = await connect({ servers: cluster.natsUrl });
    try {
      const openBy = new Map<string, string[]>();
      for (const node of after.nodes) {
        const status = await requestJson<any>(nc, SUBJECTS.nodeRpc(node.address), { op: 'status' });
        for (const id of status.buckets.open) openBy.set(id, [...(openBy.get(id) ?? []), node.id]);
      }
      const route = await requestJson<any>(nc, SUBJECTS.anyNodeRpc, { op: 'describeTable', table: 'restart' });
      for (const bucket of after.buckets.filter((candidate: any) => candidate.table === 'restart')) {
        expect({ bucket: bucket.bucket, servedBy: openBy.get(`${route.tableId}//${bucket.bucket}`) }).toEqual({ bucket: bucket.bucket, servedBy: [bucket.leader] });
      }
    } finally {
      await nc.close();
    }
    await load.advance(200);
    await load.stop();
    expectAcknowledgedExactlyOnce(load, await storedIds(cluster.gatewayUrl, 'restart', BUCKETS));
  });

  it('stopping and starting the whole cluster keeps every acknowledged row', async () => {
    const { cluster, client, directory } = await loaded('whole');
    const load = new AppendLoad(client, 'whole');
    load.start();
    await load.advance(400);
    await load.stop();
    await client.close();
    await cluster.stop();
    const restarted = await LocalCluster.start({ dataDir: directory.path, nodes: 3, coordinators: 2, gatewayPort: 0, kafkaPort: 0, leaseTtlMs: LEASE_TTL_MS, coordinatorTickMs: 500 });
    clusters.push(restarted);
    await allOpen(restarted.gatewayUrl, 'whole');
    expect(load.acknowledged.size).toBeGreaterThan(0);
    expectAcknowledgedExactlyOnce(load, await storedIds(restarted.gatewayUrl, 'whole', BUCKETS));
  });

  it('SIGTERM of a data node gives its buckets up at once instead of after lease_ttl', async () => {
    const directory = temporaryDirectory('sigterm');
    directories.push(directory);
    // A long lease_ttl: buckets that move before it expires were given up, not detected as orphans.
    const cluster = await LocalCluster.start({ dataDir: directory.path, nodes: 3, coordinators: 1, gatewayPort: 0, kafkaPort: 0, leaseTtlMs: 60_000, coordinatorTickMs: 500 });
    clusters.push(cluster);
    expect((await http(cluster.gatewayUrl, 'POST', '/v1/tables', { name: 'graceful', columns: [{ name: 'id', type: 'int64' }], buckets: BUCKETS })).status).toBe(201);
    const before = await allOpen(cluster.gatewayUrl, 'graceful');
    const victim = before.buckets[0].leader as string;
    // The coordinator must have seen the victim alive since it took the lease (one tick after the start).
    const coordinatorHttp = cluster.processes().find((entry) => entry.role === 'coordinator')!.ports.http;
    await eventually('the lease holder has seen all 3 data nodes alive', async () => {
      const metrics = await (await fetch(`http://127.0.0.1:${coordinatorHttp}/metrics`)).text();
      return /^mink_coordinator_nodes_seen_live(\{[^}]*\})? 3$/m.test(metrics) ? true : undefined;
    }, { timeoutMs: 30_000, intervalMs: 100 });
    const stoppedAt = Date.now();
    cluster.kill('data-node', victim, 'SIGTERM');
    await cluster.waitForExit('data-node', victim);
    await eventually('buckets of the stopped node re-led and open', async () => {
      const status = (await http(cluster.gatewayUrl, 'GET', '/v1/cluster')).body;
      const buckets = status.buckets.filter((bucket: any) => bucket.table === 'graceful');
      return buckets.every((bucket: any) => bucket.leader !== victim && bucket.state === 'open') ? status : undefined;
    }, 40_000);
    // Well before lease_ttl (60 s) would have declared the node dead.
    expect(Date.now() - stoppedAt).toBeLessThan(30_000);
  });
});
