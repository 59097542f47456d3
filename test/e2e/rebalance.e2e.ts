/**
 * Rebalance on real processes: a node that joins gets nothing by itself (docs/ownership.md §2.3 ("Node joins")); a dry run
 * returns the plan and moves nothing; the real run moves buckets from nodes above 110 % of the mean
 * load to the new node, one LeadBucket per move, and every moved bucket is opened by its new leader.
 */
import { LocalCluster } from '@mink/devcluster';
import { eventually, http, temporaryDirectory } from './helpers';

jest.setTimeout(180_000);

async function openStatus(gateway: string, condition: (status: any) => boolean): Promise<any> {
  return eventually('cluster state', async () => {
    const status = (await http(gateway, 'GET', '/v1/cluster')).body;
    return status.buckets.length > 0 && status.buckets.every((bucket: any) => bucket.state === 'open') && condition(status) ? status : undefined;
  }, 60_000);
}

function loads(status: any): Record<string, number> {
  return Object.fromEntries(status.nodes.map((node: any) => [node.id, node.buckets]));
}

describe('rebalance on a real local cluster', () => {
  const directory = temporaryDirectory('rebalance');
  let cluster: LocalCluster | null = null;

  afterAll(async () => {
    await cluster?.stop();
    directory.remove();
  });

  it('leaves a joining node empty until a rebalance moves buckets to it', async () => {
    cluster = await LocalCluster.start({ dataDir: directory.path, nodes: 2, coordinators: 1, gatewayPort: 0, kafkaPort: 0, leaseTtlMs: 3_000, coordinatorTickMs: 500 });
    const gateway = cluster.gatewayUrl;
    expect((await http(gateway, 'POST', '/v1/tables', { name: 'spread', columns: [{ name: 'id', type: 'int64' }], buckets: 9 })).status).toBe(201);
    await openStatus(gateway, (status) => status.buckets.length === 9);

    await cluster.addDataNode();
    const joined = await openStatus(gateway, (status) => status.nodes.some((node: any) => node.id === '3' && node.live));
    expect(loads(joined)['3']).toBe(0);

    const dryRun = await http(gateway, 'POST', '/v1/cluster/rebalance?dryRun=true');
    expect(dryRun.status).toBe(200);
    expect(dryRun.body.dryRun).toBe(true);
    expect(dryRun.body.moves.length).toBe(3);
    expect(dryRun.body.moves.every((move: any) => move.to === '3' && move.table === 'spread')).toBe(true);
    expect(loads((await http(gateway, 'GET', '/v1/cluster')).body)['3']).toBe(0);
    // A dryRun that is not a boolean is refused, and moves nothing.
    const typo = await http(gateway, 'POST', '/v1/cluster/rebalance?dryRun=maybe');
    expect({ status: typo.status, code: typo.body.error?.code }).toEqual({ status: 400, code: 'InvalidArgument' });
    expect(loads((await http(gateway, 'GET', '/v1/cluster')).body)['3']).toBe(0);

    const applied = await http(gateway, 'POST', '/v1/cluster/rebalance');
    expect(applied.status).toBe(200);
    expect(applied.body.moves).toEqual(dryRun.body.moves);
    const balanced = await openStatus(gateway, (status) => loads(status)['3'] === 3);
    expect(Object.values(loads(balanced)).sort()).toEqual([3, 3, 3]);
    for (const move of applied.body.moves) {
      const bucket = balanced.buckets.find((candidate: any) => candidate.bucket === move.bucket);
      expect(bucket).toMatchObject({ leader: '3', state: 'open' });
    }
    // A second rebalance has nothing left to do.
    expect((await http(gateway, 'POST', '/v1/cluster/rebalance?dryRun=true')).body.moves).toEqual([]);
  });
});
