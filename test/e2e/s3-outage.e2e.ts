/**
 * S3 answering 503 SlowDown for a minute (issue 12 item 5): every mink service reaches S3 through a proxy
 * that refuses every request while the test says so, under continuous append and put load. Writes fail
 * (nothing can be acknowledged that is not stored), no process exits, and once S3 answers again the cluster
 * takes writes by itself; every acknowledged append is stored exactly once and no acknowledged put is lost.
 */
import { MinkClient } from '@mink/client';
import { LocalCluster, freePort } from '@mink/devcluster';
import { S3FaultProxy } from '@mink/testing';
import { SHORT_LEASE_CLUSTER, eventually, firstProcessExit, http, temporaryDirectory, unlessAProcessExits } from './helpers';
import { AppendLoad, LOAD_COLUMNS, expectAcknowledgedExactlyOnce, storedIds } from './load';
import { PUT_LOAD_COLUMNS, PutLoad } from './put-load';

jest.setTimeout(600_000);

const BUCKETS = 4;
/** How long S3 refuses everything: "for a minute", as the issue puts it. */
const OUTAGE_MS = 60_000;
/** Calls already past their upload when the outage began may still be acknowledged within this long. */
const IN_FLIGHT_GRACE_MS = 5_000;

describe('S3 answering 503 SlowDown for a minute', () => {
  const directory = temporaryDirectory('s3-outage');
  let cluster: LocalCluster | undefined;
  let proxy: S3FaultProxy | undefined;
  let client: MinkClient | undefined;
  /** The loads started, stopped first after the test whatever its outcome (running, they would keep Jest alive). */
  const loads: { stop(): Promise<void> }[] = [];

  afterAll(async () => {
    await Promise.all(loads.map((load) => load.stop()));
    await client?.close();
    await cluster?.stop();
    await proxy?.close();
    directory.remove();
  });

  it('refuses writes with Unavailable while it lasts, exits no process, and takes writes again by itself, losing nothing acknowledged', async () => {
    const s3Port = await freePort();
    proxy = await S3FaultProxy.start({ targetPort: s3Port });
    cluster = await LocalCluster.start({ dataDir: directory.path, ...SHORT_LEASE_CLUSTER, s3Port, env: { MINK_S3_ENDPOINT: proxy.endpoint } });
    const exit = firstProcessExit(cluster);
    const gateway = cluster.gatewayUrl;
    expect((await http(gateway, 'POST', '/v1/tables', { name: 'events', columns: LOAD_COLUMNS, bucketKey: ['id'], buckets: BUCKETS })).status).toBe(201);
    expect((await http(gateway, 'POST', '/v1/tables', { name: 'versions', columns: PUT_LOAD_COLUMNS, primaryKey: ['id'], buckets: BUCKETS })).status).toBe(201);
    await eventually('every bucket open', async () => {
      const status = (await http(gateway, 'GET', '/v1/cluster')).body;
      return status.buckets.length === 2 * BUCKETS && status.buckets.every((bucket: any) => bucket.state === 'open') ? true : undefined;
    });

    client = await MinkClient.connect({ servers: cluster.natsUrl });
    const appends = new AppendLoad(client, 'events', { lanes: 2, batchRows: 20, callsMax: 100_000, pauseMs: 50 });
    const puts = new PutLoad(client, 'versions', { lanes: 2, keysPerLane: 20, callsMax: 100_000, pauseMs: 50 });
    loads.push(appends, puts);
    appends.start();
    puts.start();
    await unlessAProcessExits(exit, async () => {
      await appends.advance(200);
      await puts.advance(5);
    });

    // The outage: every S3 request of every service is answered 503 SlowDown.
    const errorsBefore = { appends: appends.errors.length, puts: puts.failedCalls };
    proxy.setMode('slowDown');
    const outageStartMs = Date.now();
    await unlessAProcessExits(exit, (stop) =>
      eventually('appends and puts refused during the outage', () => appends.errors.length > errorsBefore.appends && puts.failedCalls > errorsBefore.puts, {
        timeoutMs: OUTAGE_MS,
        intervalMs: 100,
        signal: stop,
      }),
    );
    await unlessAProcessExits(exit, (stop) =>
      eventually('the grace for calls past their upload when the outage began', () => Date.now() - outageStartMs >= IN_FLIGHT_GRACE_MS, { timeoutMs: OUTAGE_MS, intervalMs: 100, signal: stop }),
    );
    const acknowledgedInOutage = { appends: appends.acknowledged.size, puts: puts.acknowledgedCalls };
    // The fault lasts a minute: a duration of the fault, not a wait for something to happen.
    await unlessAProcessExits(exit, (stop) =>
      eventually('a minute of S3 outage', () => Date.now() - outageStartMs >= OUTAGE_MS, { timeoutMs: 2 * OUTAGE_MS, intervalMs: 250, signal: stop }),
    );
    // Nothing was acknowledged that S3 could not have stored.
    expect({ appends: appends.acknowledged.size, puts: puts.acknowledgedCalls }).toEqual(acknowledgedInOutage);
    const outageErrors = [...appends.errors.slice(errorsBefore.appends), ...puts.errors.slice(errorsBefore.puts)];
    expect(outageErrors.filter((error) => !/^UnavailableError|Unavailable/.test(error)).slice(0, 5)).toEqual([]);
    expect(proxy.seen.refused).toBeGreaterThan(0);

    proxy.setMode('forward');
    const recoveryStartMs = Date.now();
    await unlessAProcessExits(exit, async () => {
      await appends.advance(200, 120_000);
      await puts.advance(5, 120_000);
    });
    const recoveryMs = Date.now() - recoveryStartMs;
    await appends.stop();
    await puts.stop();

    expectAcknowledgedExactlyOnce(appends, await storedIds(gateway, 'events', BUCKETS));
    expect(await puts.violations()).toEqual([]);
    // No process exited at any point: the race above would have failed the phase, and nothing exited since.
    expect(await Promise.race([exit, new Promise<string>((resolve) => setImmediate(() => resolve('none')))])).toBe('none');
    // eslint-disable-next-line no-console
    console.log(`S3 outage of ${OUTAGE_MS} ms: ${proxy.seen.refused} requests refused; writes acknowledged again ${recoveryMs} ms after S3 answered`);
  });
});
