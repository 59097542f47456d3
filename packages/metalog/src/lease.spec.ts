import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { connect, type NatsConnection } from 'nats';
import { startNatsServer, type NatsServerHandle } from '@mink/devcluster';
import { CoordinatorLease, runLease } from './lease';
import { eventually } from '@mink/testing';

const LEASE_TTL_MS = 1_000;

async function sleep(durationMs: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, durationMs));
}

describe('CoordinatorLease', () => {
  let dataDir: string;
  let server: NatsServerHandle;
  let connectionA: NatsConnection;
  let connectionB: NatsConnection;
  let bucketCounter = 0;

  /** Two contenders for one fresh lease bucket, each on its own connection like two coordinator processes. */
  async function contenders(): Promise<[CoordinatorLease, CoordinatorLease]> {
    bucketCounter += 1;
    const bucket = `lease_${bucketCounter}`;
    return [
      await CoordinatorLease.open(connectionA, 'coordinator-a', LEASE_TTL_MS, { bucket }),
      await CoordinatorLease.open(connectionB, 'coordinator-b', LEASE_TTL_MS, { bucket }),
    ];
  }

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'mink-lease-'));
    server = await startNatsServer({ dataDir });
    connectionA = await connect({ servers: server.url });
    connectionB = await connect({ servers: server.url });
  });

  afterAll(async () => {
    await connectionA?.close();
    await connectionB?.close();
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('lets exactly one of two concurrent contenders hold the lease', async () => {
    // Proves compare-and-set on create: both try at once, one wins, and both agree on who it is.
    const [a, b] = await contenders();
    const results = await Promise.all([a.tryAcquire(), b.tryAcquire()]);
    expect(results.filter(Boolean)).toHaveLength(1);
    const winner = results[0] ? a : b;
    const loser = results[0] ? b : a;
    expect(winner.isHeld()).toBe(true);
    expect(loser.isHeld()).toBe(false);
    expect(await loser.tryAcquire()).toBe(false);
    expect(await winner.renew()).toBe(true);
    expect(await loser.holder()).toMatchObject({ id: winner.holderId });
    expect((await loser.holder())!.ageMs).toBeLessThan(LEASE_TTL_MS);
  });

  it('hands the lease over only after the holder stops renewing for a ttl, and the holder stops first', async () => {
    // Proves a paused holder stops acting (isHeld false) before the other contender can take over, and its renew then fails.
    const [a, b] = await contenders();
    expect(await a.tryAcquire()).toBe(true);
    const lastRenewSentAtMs = performance.now();
    expect(await a.renew()).toBe(true);

    let takenOverAtMs: number | null = null;
    while (takenOverAtMs === null) {
      if (await b.tryAcquire()) takenOverAtMs = performance.now();
      else await sleep(50);
      expect(performance.now() - lastRenewSentAtMs).toBeLessThan(5 * LEASE_TTL_MS);
    }
    expect(takenOverAtMs - lastRenewSentAtMs).toBeGreaterThanOrEqual(LEASE_TTL_MS);
    // The stale holder already considers itself expired when the other one took over.
    expect(a.isHeld(takenOverAtMs)).toBe(false);
    expect(b.isHeld()).toBe(true);
    expect(await a.renew()).toBe(false);
    expect(a.isHeld()).toBe(false);
    expect(await b.holder()).toMatchObject({ id: 'coordinator-b' });
  }, 15_000);

  it('gives the lease to the other contender at once on release', async () => {
    // Proves a clean shutdown does not make the cluster wait a ttl for the next coordinator.
    const [a, b] = await contenders();
    expect(await a.tryAcquire()).toBe(true);
    expect(await b.tryAcquire()).toBe(false);
    await a.release();
    expect(a.isHeld()).toBe(false);
    expect(await a.holder()).toBeNull();
    expect(await b.tryAcquire()).toBe(true);
  });

  it('runs a lease loop that reports acquisition and loss, and releases on stop', async () => {
    // Proves runLease renews in the background, hands over when stopped, and calls back on each change.
    const [a, b] = await contenders();
    const events: string[] = [];
    const runnerA = runLease({ lease: a, onAcquired: () => void events.push('a acquired'), onLost: () => void events.push('a lost') });
    await eventually('coordinator a to hold the lease', () => runnerA.isHeld(), { timeoutMs: 5_000, intervalMs: 10 });
    const runnerB = runLease({ lease: b, onAcquired: () => void events.push('b acquired'), onLost: () => void events.push('b lost') });
    // A renews every ttl/5, so B never gets it while A runs, even across several ttls.
    await sleep(2 * LEASE_TTL_MS);
    expect(runnerB.isHeld()).toBe(false);
    expect(a.isHeld()).toBe(true);

    await runnerA.stop();
    await eventually('coordinator b to hold the lease', () => runnerB.isHeld(), { timeoutMs: LEASE_TTL_MS, intervalMs: 10 });
    await runnerB.stop();
    expect(events).toEqual(['a acquired', 'a lost', 'b acquired', 'b lost']);
  }, 15_000);

  it('reports the loss when somebody else took the lease over while the loop runs', async () => {
    // Proves a holder whose renew fails on a stale revision calls onLost and stops claiming the lease.
    const [a, b] = await contenders();
    const events: string[] = [];
    const runnerA = runLease({ lease: a, onAcquired: () => void events.push('acquired'), onLost: () => void events.push('lost') });
    await eventually('coordinator a to hold the lease', () => runnerA.isHeld(), { timeoutMs: 5_000, intervalMs: 10 });
    // An operator wipes the key and another coordinator grabs it at once.
    const kv = await connectionB.jetstream().views.kv(`lease_${bucketCounter}`);
    await kv.delete(a.key);
    expect(await b.tryAcquire()).toBe(true);
    await eventually('coordinator a to see it lost the lease', () => !runnerA.isHeld(), { timeoutMs: LEASE_TTL_MS, intervalMs: 10 });
    expect(a.isHeld()).toBe(false);
    await runnerA.stop();
    expect(events).toEqual(['acquired', 'lost']);
    expect(await a.holder()).toMatchObject({ id: 'coordinator-b' });
  });
});
