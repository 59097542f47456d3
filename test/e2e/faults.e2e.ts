/**
 * Faults on real processes under continuous append load, each ending with a scan of every bucket that
 * finds every acknowledged row exactly once: `kill -9` of a bucket leader (its buckets are re-led after
 * lease_ttl and opened by the new leader after fencing the dead incarnation), and `SIGSTOP` of a leader
 * past lease_ttl followed by `SIGCONT` (the resumed node finds itself fenced, registers a new
 * incarnation and does not acknowledge any write for the buckets it lost).
 */
import { connect } from 'nats';
import { MinkClient } from '@mink/client';
import { LocalCluster } from '@mink/devcluster';
import { MinkError, SUBJECTS } from '@mink/protocol';
import { requestJson } from '@mink/transport';
import { eventually, http, temporaryDirectory } from './helpers';
import { AppendLoad, expectAcknowledgedExactlyOnce, storedIds } from './load';

jest.setTimeout(300_000);

const BUCKETS = 8;
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

const sleep = (milliseconds: number) => new Promise((resolve) => setTimeout(resolve, milliseconds));

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
    const directory = temporaryDirectory('fault-kill');
    directories.push(directory);
    const { cluster, client } = await startLoadedCluster(directory.path, 'killed');
    clusters.push(cluster);
    clients.push(client);
    const before = (await http(cluster.gatewayUrl, 'GET', '/v1/cluster')).body;
    const victim = before.buckets.find((bucket: any) => bucket.table === 'killed' && bucket.bucket === 0).leader as string;
    const victimBuckets = before.buckets.filter((bucket: any) => bucket.leader === victim).map((bucket: any) => bucket.bucket);

    const load = new AppendLoad(client, 'killed');
    load.start();
    await sleep(1_500);
    const acknowledgedAtFault = load.acknowledged.size;
    cluster.kill('data-node', victim, 'SIGKILL');
    const after = await allOpen(cluster.gatewayUrl, 'killed', (status) =>
      status.buckets.every((bucket: any) => bucket.leader !== victim),
    );
    await sleep(1_500);
    await load.stop();

    for (const bucket of victimBuckets) {
      const now = after.buckets.find((candidate: any) => candidate.table === 'killed' && candidate.bucket === bucket);
      expect(now.leader).not.toBe(victim);
      expect(now.leaderEpoch).toBeGreaterThan(before.buckets.find((candidate: any) => candidate.bucket === bucket).leaderEpoch);
    }
    // Writes went on being acknowledged after the failover, including for the victim's buckets.
    expect(acknowledgedAtFault).toBeGreaterThan(0);
    expect(load.acknowledged.size).toBeGreaterThan(acknowledgedAtFault);
    expectAcknowledgedExactlyOnce(load, await storedIds(cluster.gatewayUrl, 'killed', BUCKETS));
  });

  it('a leader paused past lease_ttl is fenced, re-registers, and acknowledges nothing for lost buckets', async () => {
    const directory = temporaryDirectory('fault-pause');
    directories.push(directory);
    const { cluster, client } = await startLoadedCluster(directory.path, 'paused');
    clusters.push(cluster);
    clients.push(client);
    const before = (await http(cluster.gatewayUrl, 'GET', '/v1/cluster')).body;
    const victim = before.buckets.find((bucket: any) => bucket.table === 'paused' && bucket.bucket === 0).leader as string;
    const victimNode = before.nodes.find((node: any) => node.id === victim);

    const load = new AppendLoad(client, 'paused');
    load.start();
    await sleep(1_500);
    const acknowledgedAtFault = load.acknowledged.size;
    cluster.pause('data-node', victim);
    await allOpen(cluster.gatewayUrl, 'paused', (status) => status.buckets.every((bucket: any) => bucket.leader !== victim));
    cluster.resume('data-node', victim);

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
    await sleep(1_000);
    await load.stop();
    expect(acknowledgedAtFault).toBeGreaterThan(0);
    expect(load.acknowledged.size).toBeGreaterThan(acknowledgedAtFault);
    const stored = await storedIds(cluster.gatewayUrl, 'paused', BUCKETS);
    expect(stored.has(-1)).toBe(false);
    expectAcknowledgedExactlyOnce(load, stored);
  });
});
