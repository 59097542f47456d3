/**
 * The metadata plane under load (issue 15): on 3 data nodes with lease_ttl 3 s and a 500 ms coordinator
 * tick, 200 tables of 16 buckets (3 200 buckets) are created through the gateway, 10 creates in flight,
 * while appends run on another table. No process may exit, no node may take over another's buckets (no
 * "buckets taken over" line, every node still at the epoch it registered with),
 * every acknowledged append must be stored at the offsets its answer gave, and every bucket must open.
 * Then the whole cluster is stopped and started again on the same data dir: every bucket opens again and
 * the acknowledged rows are still there. A create answered 503 Unavailable with Retry-After (admission
 * control) is retried after it; any other answer fails the test.
 */
import { readFileSync } from 'node:fs';
import { MinkClient } from '@mink/client';
import { LocalCluster, type LocalClusterOptions } from '@mink/devcluster';
import { eventually, firstProcessExit, http, SHORT_LEASE_CLUSTER, temporaryDirectory, unlessAProcessExits } from './helpers';
import { AppendLoad, LOAD_COLUMNS, createTablesInFlight, expectAcknowledgedAtTheirOffsets, expectAcknowledgedExactlyOnce, storedIds, storedRows } from './load';

jest.setTimeout(900_000);

const TABLES = 200;
const BUCKETS_PER_TABLE = 16;
const CREATES_IN_FLIGHT = 10;
const LOAD_TABLE = 'appended';
const LOAD_BUCKETS = 8;
const EVERY_BUCKET = TABLES * BUCKETS_PER_TABLE + LOAD_BUCKETS;
/** Bounds of the phases: generous, since CI runs this on two cores beside the rest of the suite. */
const CREATES_TIMEOUT_MS = 300_000;
const ALL_OPEN_TIMEOUT_MS = 240_000;
/** GET /v1/cluster of 3 200 buckets asks every node for its status: poll it once a second, not five times. */
const STATUS_POLL_INTERVAL_MS = 1_000;
/** The line a data node writes, once a second at most, counting the buckets it took over from a dead incarnation of another node. */
const TAKEOVER_LINE = 'buckets taken over';

const tableName = (index: number): string => `burst_${String(index).padStart(3, '0')}`;

describe('the metadata plane under a burst of table creates', () => {
  const directory = temporaryDirectory('metadata-load');
  /** Lines LocalCluster logs when a process exits other than by the cluster's own stop. */
  const exits: string[] = [];
  const options: LocalClusterOptions = {
    dataDir: directory.path,
    ...SHORT_LEASE_CLUSTER,
    logger: (line) => {
      if (line.includes(' exited with ')) exits.push(line);
    },
  };
  let cluster: LocalCluster | null = null;
  let client: MinkClient | null = null;
  let load: AppendLoad | null = null;

  afterAll(async () => {
    // Closing the client first ends appends still retrying against a cluster that fell over.
    const loadStopped = load?.stop();
    await client?.close().catch(() => undefined);
    await loadStopped;
    await cluster?.stop();
    directory.remove();
  });

  /** Polls GET /v1/cluster until every bucket of every table is open; returns that status. */
  async function everyBucketOpen(gateway: string, exit: Promise<string>): Promise<any> {
    return unlessAProcessExits(exit, (stop) =>
      eventually(
        `all ${EVERY_BUCKET} buckets open`,
        async () => {
          const status = (await http(gateway, 'GET', '/v1/cluster')).body;
          const open = status.buckets.filter((bucket: any) => bucket.state === 'open').length;
          return status.buckets.length === EVERY_BUCKET && open === EVERY_BUCKET ? status : undefined;
        },
        { timeoutMs: ALL_OPEN_TIMEOUT_MS, intervalMs: STATUS_POLL_INTERVAL_MS, signal: stop },
      ),
    );
  }

  function takeoverLines(running: LocalCluster): string[] {
    return running
      .processes()
      .filter((entry) => entry.role === 'data-node')
      .flatMap((entry) => readFileSync(entry.logFile, 'utf8').split('\n').filter((line) => line.includes(TAKEOVER_LINE)));
  }

  it('creates 3 200 buckets 10 tables at a time under append load with no exit, no takeover and no lost append, and opens them all again after a whole-cluster restart', async () => {
    cluster = await LocalCluster.start(options);
    const exit = firstProcessExit(cluster);
    const gateway = cluster.gatewayUrl;

    const loadTable = await http(gateway, 'POST', '/v1/tables', { name: LOAD_TABLE, columns: LOAD_COLUMNS, bucketKey: ['id'], buckets: LOAD_BUCKETS });
    expect(loadTable.status).toBe(201);
    client = await MinkClient.connect({ servers: cluster.natsUrl });
    load = new AppendLoad(client, LOAD_TABLE, { lanes: 2, batchRows: 20, callsMax: 20_000, pauseMs: 50 });
    load.start();
    await unlessAProcessExits(exit, (stop) => eventually('a first acknowledged append', async () => (load!.acknowledged.size > 0 ? true : undefined), { timeoutMs: 60_000, intervalMs: 200, signal: stop }));

    const burst = await unlessAProcessExits(exit, (stop) =>
      createTablesInFlight(gateway, {
        count: TABLES,
        inFlight: CREATES_IN_FLIGHT,
        body: (index) => ({ name: tableName(index), columns: [{ name: 'id', type: 'int64' }], buckets: BUCKETS_PER_TABLE }),
        deadlineMs: Date.now() + CREATES_TIMEOUT_MS,
        stop,
      }),
    );
    expect(burst.failures.slice(0, 10)).toEqual([]);
    expect(burst.created).toHaveLength(TABLES);
    const acknowledgedAfterBurst = load.acknowledged.size;

    const opened = await everyBucketOpen(gateway, exit);
    // Appends were still acknowledged once the burst was over.
    await unlessAProcessExits(exit, (stop) =>
      eventually('appends acknowledged after the burst', async () => (load!.acknowledged.size > acknowledgedAfterBurst ? true : undefined), { timeoutMs: 60_000, intervalMs: 200, signal: stop }),
    );
    await load.stop();

    expect(exits).toEqual([]);
    // Each data node is still the incarnation it registered at start (a takeover registers the dead node at epoch + 1).
    const { body: status } = await http(gateway, 'GET', '/v1/cluster');
    expect(status.nodes.map((node: any) => ({ id: node.id, epoch: node.epoch, live: node.live }))).toEqual(
      ['1', '2', '3'].map((id) => ({ id, epoch: 1, live: true })),
    );
    expect(takeoverLines(cluster).slice(0, 5)).toEqual([]);
    expect(new Set(opened.buckets.map((bucket: any) => bucket.table)).size).toBe(TABLES + 1);
    expect(load.acknowledged.size).toBeGreaterThan(acknowledgedAfterBurst);
    expectAcknowledgedAtTheirOffsets(load, await storedRows(gateway, LOAD_TABLE, LOAD_BUCKETS, ['id', 'lane']));
    expectAcknowledgedExactlyOnce(load, await storedIds(gateway, LOAD_TABLE, LOAD_BUCKETS));

    // A whole-cluster restart on the same data dir: every bucket opens again and every acknowledged row is back.
    await client.close();
    client = null;
    await cluster.stop();
    cluster = null;
    cluster = await LocalCluster.start(options);
    const exitAfterRestart = firstProcessExit(cluster);
    const restartedGateway = cluster.gatewayUrl;
    await everyBucketOpen(restartedGateway, exitAfterRestart);
    expect(exits).toEqual([]);
    const tables = (await http(restartedGateway, 'GET', '/v1/tables')).body.tables.map((table: any) => table.name);
    expect(tables).toEqual([LOAD_TABLE, ...Array.from({ length: TABLES }, (_, index) => tableName(index))].sort());
    expectAcknowledgedAtTheirOffsets(load, await storedRows(restartedGateway, LOAD_TABLE, LOAD_BUCKETS, ['id', 'lane']));
    expectAcknowledgedExactlyOnce(load, await storedIds(restartedGateway, LOAD_TABLE, LOAD_BUCKETS));
  });
});
