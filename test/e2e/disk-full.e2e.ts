/**
 * A full local disk on a data node (issue 12 item 5): data node 1 keeps its KV tablets on a small tmpfs of
 * its own, which the test fills to the last byte under put and append load. Puts to the primary-key
 * buckets it leads fail with Unavailable (its tablets cannot grow), appends go on (log tables keep nothing
 * on local disk), no process exits, and once space returns the node takes puts again by itself; no
 * acknowledged put or append is lost. Mounting a tmpfs needs root: elsewhere the test is skipped, saying so.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmdirSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MinkClient } from '@mink/client';
import { LocalCluster } from '@mink/devcluster';
import { SHORT_LEASE_CLUSTER, eventually, firstProcessExit, http, temporaryDirectory, unlessAProcessExits } from './helpers';
import { AppendLoad, LOAD_COLUMNS, expectAcknowledgedExactlyOnce, storedIds } from './load';
import { PUT_LOAD_COLUMNS, PutLoad } from './put-load';

jest.setTimeout(600_000);

const BUCKETS = 3;
/** The tmpfs of data node 1's local folder: room for its tablets, soon filled by the test. */
const TMPFS_SIZE = '32m';

/** True when this process may mount a tmpfs (root on Linux); tried once on a scratch folder. */
function canMountTmpfs(): boolean {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return false;
  const probe = mkdtempSync(join(tmpdir(), 'mink-mount-probe-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', probe], { stdio: 'ignore' });
    execFileSync('umount', [probe], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  } finally {
    rmdirSync(probe);
  }
}

/** Writes zeros into `path` until the file system refuses (ENOSPC); returns the bytes written. */
function fillUp(path: string): number {
  const chunk = Buffer.alloc(64 * 1024);
  const descriptor = openSync(path, 'w');
  let written = 0;
  try {
    for (;;) {
      try {
        written += writeSync(descriptor, chunk);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOSPC') break;
        throw error;
      }
    }
    // The last partial pages: fill them byte-wise in smaller steps.
    for (let size = 4096; size >= 1; size = Math.floor(size / 2)) {
      try {
        for (;;) written += writeSync(descriptor, chunk.subarray(0, size));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
      }
    }
  } finally {
    closeSync(descriptor);
  }
  return written;
}

const mountable = canMountTmpfs();
if (!mountable) {
  // eslint-disable-next-line no-console
  console.warn('disk-full.e2e: skipped, mounting a tmpfs needs root on Linux');
}

describe('a full local disk on a data node', () => {
  const directory = temporaryDirectory('disk-full');
  const localFolder = join(directory.path, 'local', '1');
  let mounted = false;
  let cluster: LocalCluster | undefined;
  let client: MinkClient | undefined;
  /** The loads started, stopped first after the test whatever its outcome (running, they would keep Jest alive). */
  const loads: { stop(): Promise<void> }[] = [];

  afterAll(async () => {
    await Promise.all(loads.map((load) => load.stop()));
    await client?.close();
    await cluster?.stop();
    if (mounted) execFileSync('umount', ['-l', localFolder], { stdio: 'ignore' });
    directory.remove();
  });

  (mountable ? it : it.skip)('refuses puts to its buckets with Unavailable while full, exits no process, and takes them again once space returns', async () => {
    mkdirSync(localFolder, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${TMPFS_SIZE}`, 'tmpfs', localFolder]);
    mounted = true;
    cluster = await LocalCluster.start({ dataDir: directory.path, ...SHORT_LEASE_CLUSTER });
    const exit = firstProcessExit(cluster);
    const gateway = cluster.gatewayUrl;
    expect((await http(gateway, 'POST', '/v1/tables', { name: 'events', columns: LOAD_COLUMNS, bucketKey: ['id'], buckets: BUCKETS })).status).toBe(201);
    expect((await http(gateway, 'POST', '/v1/tables', { name: 'versions', columns: PUT_LOAD_COLUMNS, primaryKey: ['id'], buckets: BUCKETS })).status).toBe(201);
    const status = await eventually('every bucket open, one bucket of each table on each node', async () => {
      const answer = (await http(gateway, 'GET', '/v1/cluster')).body;
      const open = answer.buckets.length === 2 * BUCKETS && answer.buckets.every((bucket: any) => bucket.state === 'open');
      return open ? answer : undefined;
    });
    const ledByOne = status.buckets.filter((bucket: any) => bucket.table === 'versions' && bucket.leader === '1').length;
    expect(ledByOne).toBeGreaterThan(0);

    client = await MinkClient.connect({ servers: cluster.natsUrl });
    const appends = new AppendLoad(client, 'events', { lanes: 1, batchRows: 20, callsMax: 100_000, pauseMs: 50 });
    const puts = new PutLoad(client, 'versions', { lanes: 2, keysPerLane: 30, callsMax: 100_000, pauseMs: 20, freshKeys: true });
    loads.push(appends, puts);
    appends.start();
    puts.start();
    await unlessAProcessExits(exit, async () => {
      await appends.advance(100);
      await puts.advance(10);
    });

    // The disk fills up: not one byte is left for data node 1's tablets.
    const filler = join(localFolder, 'filler');
    const filled = fillUp(filler);
    const failedBefore = puts.failedCalls;
    await unlessAProcessExits(exit, (stop) => eventually('puts refused while the disk is full', () => puts.failedCalls > failedBefore + 3, { timeoutMs: 120_000, intervalMs: 100, signal: stop }));
    // Appends do not touch local disk: they go on being acknowledged.
    await unlessAProcessExits(exit, () => appends.advance(100));
    const fullErrors = puts.errors.slice(failedBefore);
    expect(fullErrors.filter((error) => !/Unavailable/.test(error)).slice(0, 5)).toEqual([]);

    // Space returns.
    unlinkSync(filler);
    const recoveryStartMs = Date.now();
    const acknowledgedBefore = puts.acknowledgedCalls;
    await unlessAProcessExits(exit, (stop) =>
      eventually('puts acknowledged again once space returned', () => puts.acknowledgedCalls >= acknowledgedBefore + 10, {
        timeoutMs: 120_000,
        intervalMs: 100,
        signal: stop,
      }),
    );
    const recoveryMs = Date.now() - recoveryStartMs;
    await appends.stop();
    await puts.stop();

    expect(await puts.violations()).toEqual([]);
    expectAcknowledgedExactlyOnce(appends, await storedIds(gateway, 'events', BUCKETS));
    expect(await Promise.race([exit, new Promise<string>((resolve) => setImmediate(() => resolve('none')))])).toBe('none');
    // eslint-disable-next-line no-console
    console.log(`disk full: ${filled} bytes of filler; ${puts.failedCalls} put calls refused in all; puts acknowledged again ${recoveryMs} ms after space returned`);
  });
});
