/**
 * A rolling restart, as operators do it all the time (issue 41): every data node of a 3-node local cluster
 * in turn gets SIGTERM (its buckets are handed off at the next coordinator tick), starts again and is ready
 * before the next one goes, while appends run through the gateway's HTTP API and through the TypeScript
 * client. No client sees an error: a bucket in hand-off (Fenced, Unavailable, NotLeader) is retried within
 * a bound by the client and the gateway instead of surfaced. Every acknowledged row is stored exactly once.
 */
import { MinkClient } from '@mink/client';
import { LocalCluster } from '@mink/devcluster';
import { SHORT_LEASE_CLUSTER, eventually, http, temporaryDirectory } from './helpers';
import { AppendLoad, LOAD_COLUMNS, expectAcknowledgedExactlyOnce, gatewayAppender, storedIds } from './load';

jest.setTimeout(300_000);

const BUCKETS = 6;

describe('a rolling SIGTERM restart of every data node under appends', () => {
  const directory = temporaryDirectory('rolling');
  let cluster: LocalCluster;
  let client: MinkClient;

  beforeAll(async () => {
    cluster = await LocalCluster.start({ dataDir: directory.path, ...SHORT_LEASE_CLUSTER });
    client = await MinkClient.connect({ servers: cluster.natsUrl });
  });

  afterAll(async () => {
    await client?.close().catch(() => undefined);
    await cluster?.stop();
    if (process.env.MINK_E2E_KEEP) console.log('kept', directory.path);
    else directory.remove();
  });

  it('hands no client an error, through the gateway nor the TypeScript client, and stores every acknowledged row once', async () => {
    for (const table of ['over_http', 'over_client']) {
      expect((await http(cluster.gatewayUrl, 'POST', '/v1/tables', { name: table, columns: LOAD_COLUMNS, buckets: BUCKETS })).status).toBe(201);
    }
    await eventually('every bucket open', async () => {
      const status = (await http(cluster.gatewayUrl, 'GET', '/v1/cluster')).body;
      const buckets = status.buckets as { state: string }[];
      return buckets.length === 2 * BUCKETS && buckets.every((bucket) => bucket.state === 'open');
    }, 60_000);
    const loads = [
      new AppendLoad(gatewayAppender(cluster.gatewayUrl), 'over_http', { lanes: 8, batchRows: 20, callsMax: 100_000, pauseMs: 0 }),
      new AppendLoad(client, 'over_client', { lanes: 8, batchRows: 20, callsMax: 100_000, pauseMs: 0 }),
    ];
    for (const load of loads) load.start();
    let moved = 0;
    try {
      for (const load of loads) await load.advance(200);
      const nodes = cluster.processes().filter((each) => each.role === 'data-node').map((each) => each.nodeId!);
      // Twice round: after each restart the buckets are rebalanced onto the restarted node, so the next
      // restart of every node hands buckets off again (and the moves are hand-offs under load too).
      for (const node of [...nodes, ...nodes]) {
        await cluster.restart('data-node', node);
        const rebalanced = await http(cluster.gatewayUrl, 'POST', '/v1/cluster/rebalance');
        expect(rebalanced.status).toBe(200);
        moved += (rebalanced.body.moves as unknown[]).length;
        // The node is back and the cluster has moved on: both loads acknowledged more since.
        for (const load of loads) await load.advance(200);
      }
    } finally {
      for (const load of loads) await load.stop();
    }
    expect({ http: loads[0]!.errors, client: loads[1]!.errors }).toEqual({ http: [], client: [] });
    // The test did what it says: buckets were moved back onto restarted nodes, and handed off again.
    expect(moved).toBeGreaterThan(0);
    expectAcknowledgedExactlyOnce(loads[0]!, await storedIds(cluster.gatewayUrl, 'over_http', BUCKETS));
    expectAcknowledgedExactlyOnce(loads[1]!, await storedIds(cluster.gatewayUrl, 'over_client', BUCKETS));
  });
});
