/**
 * NATS faults under append and put load (issue 12 item 3), each test on a cluster of its own (3 data nodes,
 * 2 coordinators, lease_ttl 3 s):
 * - the only nats-server is killed with kill -9 and, after a fault of ~2 s, restarted on the same port and
 *   store: every mink process reconnects by itself and writes resume;
 * - a NATS cluster of three (metadata stream and KV buckets at 3 replicas): kill -9 of a server that is not
 *   the JetStream meta leader, during which writes go on; then, on another cluster, kill -9 of the meta
 *   leader, after which writes resume while it is still down.
 * Each ends with no mink process exited, every acknowledged append stored exactly once, and every
 * acknowledged put read back with its last acknowledged value. The stall of writes is printed.
 */
import { readFileSync } from 'node:fs';
import { MinkClient } from '@mink/client';
import { LocalCluster } from '@mink/devcluster';
import { eventually, exitSoFar, firstMinkProcessExit, http, SHORT_LEASE_CLUSTER, temporaryDirectory, unlessAProcessExits } from './helpers';
import { AcknowledgementClock, AppendLoad, expectAcknowledgedExactlyOnce, LOAD_COLUMNS, PUT_LOAD_COLUMNS, PutLoad, storedIds } from './load';

jest.setTimeout(420_000);

const BUCKETS = 8;
const APPEND_TABLE = 'nats_fault_appends';
const PUT_TABLE = 'nats_fault_puts';
/** How long the single nats-server stays dead: the fault's duration, not a synchronisation. */
const SINGLE_SERVER_OUTAGE_MS = 2_000;
/** The longest a test waits for writes to be acknowledged again. */
const RESUME_TIMEOUT_MS = 120_000;

/** How many lines of the logs of every process of `role` contain `text`. */
function logLines(cluster: LocalCluster, role: string, text: string): number {
  return cluster
    .processes()
    .filter((entry) => entry.role === role)
    .reduce((count, entry) => count + readFileSync(entry.logFile, 'utf8').split('\n').filter((line) => line.includes(text)).length, 0);
}

interface LoadedCluster {
  cluster: LocalCluster;
  client: MinkClient;
  appends: AppendLoad;
  puts: PutLoad;
  appendClock: AcknowledgementClock;
  putClock: AcknowledgementClock;
  exit: Promise<string>;
}

describe('NATS faults under append and put load', () => {
  const directories: { remove(): void }[] = [];
  const clusters: LocalCluster[] = [];
  const clients: MinkClient[] = [];
  const clocks: AcknowledgementClock[] = [];

  afterAll(async () => {
    for (const clock of clocks) clock.stop();
    for (const client of clients) await client.close().catch(() => undefined);
    for (const cluster of clusters) await cluster.stop().catch(() => undefined);
    for (const directory of directories) directory.remove();
  });

  async function startLoaded(name: string, natsCluster: number): Promise<LoadedCluster> {
    const directory = temporaryDirectory(name);
    directories.push(directory);
    const cluster = await LocalCluster.start({ dataDir: directory.path, ...SHORT_LEASE_CLUSTER, natsCluster });
    clusters.push(cluster);
    const exit = firstMinkProcessExit(cluster);
    const gateway = cluster.gatewayUrl;
    expect((await http(gateway, 'POST', '/v1/tables', { name: APPEND_TABLE, columns: LOAD_COLUMNS, bucketKey: ['id'], buckets: BUCKETS })).status).toBe(201);
    expect((await http(gateway, 'POST', '/v1/tables', { name: PUT_TABLE, columns: PUT_LOAD_COLUMNS, primaryKey: ['id'], buckets: BUCKETS })).status).toBe(201);
    await unlessAProcessExits(exit, (stop) =>
      eventually(
        'every bucket of both tables open',
        async () => {
          const status = (await http(gateway, 'GET', '/v1/cluster')).body;
          const open = status.buckets.filter((bucket: any) => [APPEND_TABLE, PUT_TABLE].includes(bucket.table) && bucket.state === 'open');
          return open.length === 2 * BUCKETS ? true : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 200, signal: stop },
      ),
    );
    // MINK_NATS_URL as the services have it: one URL, or every server of the NATS cluster.
    const client = await MinkClient.connect({ servers: cluster.natsUrl, name: `nats-faults ${name}` });
    clients.push(client);
    const appends = new AppendLoad(client, APPEND_TABLE);
    const puts = new PutLoad(client, PUT_TABLE);
    const appendClock = new AcknowledgementClock(() => appends.acknowledged.size);
    const putClock = new AcknowledgementClock(() => puts.acknowledgedCalls);
    clocks.push(appendClock, putClock);
    appends.start();
    puts.start();
    await unlessAProcessExits(exit, async () => {
      await appends.advance(200);
      await puts.advance(20);
    });
    return { cluster, client, appends, puts, appendClock, putClock, exit };
  }

  /** Resolves once both loads have had a write acknowledged after `sinceMs`; fails at once when a mink process exits. */
  async function writesAcknowledgedAfter(loaded: LoadedCluster, sinceMs: number, what: string, condition: () => boolean = () => true): Promise<number> {
    return unlessAProcessExits(loaded.exit, (stop) =>
      eventually(
        what,
        () => {
          const append = loaded.appendClock.firstIncreaseAfter(sinceMs);
          const put = loaded.putClock.firstIncreaseAfter(sinceMs);
          return append !== null && put !== null && condition() ? Math.max(append, put) : undefined;
        },
        { timeoutMs: RESUME_TIMEOUT_MS, intervalMs: 20, signal: stop },
      ),
    );
  }

  /** Stops the load and checks everything the test is about; returns the figures it printed. */
  async function stopAndCheck(loaded: LoadedCluster, label: string, faultAtMs: number, resumedAtMs: number) {
    const { cluster, appends, puts, appendClock, putClock } = loaded;
    // A little more load once writes are back, so that writes after the fault are checked too.
    await unlessAProcessExits(loaded.exit, async () => {
      await appends.advance(100);
      await puts.advance(10);
    });
    await appends.stop();
    await puts.stop();
    const figures = {
      appendStallSeconds: Number((appendClock.longestStallMs(faultAtMs, resumedAtMs) / 1_000).toFixed(1)),
      putStallSeconds: Number((putClock.longestStallMs(faultAtMs, resumedAtMs) / 1_000).toFixed(1)),
      acknowledgedAppendRows: appends.acknowledged.size,
      unacknowledgedAppendRows: appends.unacknowledged.size,
      acknowledgedPutCalls: puts.acknowledgedCalls,
      keysChecked: puts.acknowledged.size,
      unsettledKeys: puts.unsettled.size,
      // Not asserted: how much the fault disturbed ownership (liveness misjudged during the fault would show here).
      releadLines: logLines(cluster, 'coordinator', 're-leading orphaned buckets'),
      fencedIncarnations: logLines(cluster, 'data-node', 'this incarnation was fenced'),
      coordinatorLeaseLosses: logLines(cluster, 'coordinator', 'no longer the coordinator'),
    };
    // eslint-disable-next-line no-console
    console.log(`${label}: ${JSON.stringify(figures)}`);
    // No mink process exited at any point (nats-server itself was killed on purpose).
    expect(await exitSoFar(loaded.exit)).toBeNull();
    expect(cluster.processes().filter((entry) => entry.role !== 'nats' && !entry.running)).toEqual([]);
    expectAcknowledgedExactlyOnce(appends, await storedIds(cluster.gatewayUrl, APPEND_TABLE, BUCKETS));
    expect(await puts.mismatches()).toEqual([]);
    expect(puts.acknowledged.size).toBeGreaterThan(0);
    return figures;
  }

  it('kill -9 of the only nats-server and a restart on the same store: every process reconnects by itself, writes resume, nothing acknowledged is lost', async () => {
    const loaded = await startLoaded('nats-single', 1);
    const { cluster } = loaded;
    const before = cluster.process('nats');
    expect(before.nodeId).toBeNull();

    const killedAtMs = Date.now();
    cluster.kill('nats', null, 'SIGKILL');
    expect(await cluster.waitForExit('nats')).toEqual({ code: null, signal: 'SIGKILL' });
    // The fault's duration: NATS stays away this long (every mink process is cut off meanwhile).
    await new Promise((resolve) => setTimeout(resolve, SINGLE_SERVER_OUTAGE_MS));
    const restarted = await cluster.restart('nats');
    const restartedAtMs = Date.now();
    expect(restarted.ports).toEqual(before.ports);
    expect(restarted.pid).not.toBe(before.pid);

    const resumedAtMs = await writesAcknowledgedAfter(loaded, restartedAtMs, 'appends and puts acknowledged after the restart');
    // eslint-disable-next-line no-console
    console.log(`single nats-server: down ${((restartedAtMs - killedAtMs) / 1_000).toFixed(1)} s, writes acknowledged ${((resumedAtMs - restartedAtMs) / 1_000).toFixed(1)} s after the restart`);
    await stopAndCheck(loaded, 'single nats-server kill -9 + restart', killedAtMs, resumedAtMs);
  });

  it('a NATS cluster of three: kill -9 of a server that is not the JetStream meta leader; writes go on while it is down', async () => {
    const loaded = await startLoaded('nats-follower', 3);
    const { cluster } = loaded;
    expect(cluster.processes().filter((entry) => entry.role === 'nats').map((entry) => entry.nodeId)).toEqual(['nats-1', 'nats-2', 'nats-3']);
    const leader = await eventually('a JetStream meta leader', () => cluster.natsMetaLeader().then((name) => name ?? undefined), { timeoutMs: 30_000, intervalMs: 200 });
    const victim = ['nats-1', 'nats-2', 'nats-3'].find((name) => name !== leader)!;

    const killedAtMs = Date.now();
    cluster.kill('nats', victim, 'SIGKILL');
    await cluster.waitForExit('nats', victim);
    // Writes are acknowledged while the victim is still down.
    const resumedAtMs = await writesAcknowledgedAfter(loaded, killedAtMs, `appends and puts acknowledged with ${victim} down`, () => !cluster.process('nats', victim).running);
    // And go on being acknowledged while it stays down.
    await unlessAProcessExits(loaded.exit, async () => {
      await loaded.appends.advance(200);
      await loaded.puts.advance(20);
    });
    expect(cluster.process('nats', victim).running).toBe(false);
    // eslint-disable-next-line no-console
    console.log(`cluster, ${victim} (not the meta leader ${leader}) killed: writes acknowledged again ${((resumedAtMs - killedAtMs) / 1_000).toFixed(1)} s after the kill`);
    await cluster.restart('nats', victim);
    await stopAndCheck(loaded, `cluster, kill -9 of ${victim} (not the meta leader)`, killedAtMs, resumedAtMs);
  });

  it('a NATS cluster of three: kill -9 of the JetStream meta leader; writes resume while it is down', async () => {
    const loaded = await startLoaded('nats-leader', 3);
    const { cluster } = loaded;
    const leader = await eventually('a JetStream meta leader', () => cluster.natsMetaLeader().then((name) => name ?? undefined), { timeoutMs: 30_000, intervalMs: 200 });

    const killedAtMs = Date.now();
    cluster.kill('nats', leader, 'SIGKILL');
    await cluster.waitForExit('nats', leader);
    const newLeader = await eventually('a new JetStream meta leader', async () => {
      const current = await cluster.natsMetaLeader();
      return current !== null && current !== leader ? current : undefined;
    }, { timeoutMs: 60_000, intervalMs: 200 });
    const resumedAtMs = await writesAcknowledgedAfter(loaded, killedAtMs, `appends and puts acknowledged with the meta leader ${leader} down`, () => !cluster.process('nats', leader).running);
    // eslint-disable-next-line no-console
    console.log(`cluster, meta leader ${leader} killed (new leader ${newLeader}): writes acknowledged again ${((resumedAtMs - killedAtMs) / 1_000).toFixed(1)} s after the kill`);
    await cluster.restart('nats', leader);
    await stopAndCheck(loaded, `cluster, kill -9 of the meta leader ${leader}`, killedAtMs, resumedAtMs);
  });
});
