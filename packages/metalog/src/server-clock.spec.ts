import type { KvEntry } from 'nats';
import { LIMITS } from '@mink/config';
import { ServerClock } from './server-clock';

/** A KV whose gets miss `misses` times after the put (a lagging replica), then find the entry stamped `stampMs`. */
function laggingKv(misses: number, stampMs: number) {
  let gets = 0;
  return {
    gets: () => gets,
    kv: {
      put: jest.fn(async () => 1),
      get: jest.fn(async () => (++gets > misses ? ({ created: new Date(stampMs) } as KvEntry) : null)),
    },
  };
}

describe('ServerClock', () => {
  it('refuses to guess before it has seen any stamp', () => {
    // Proves liveness is never judged with an unknown clock.
    const clock = new ServerClock();
    expect(clock.hasEstimate()).toBe(false);
    expect(() => clock.serverNowMs(0)).toThrow(/before any sample/);
  });

  it('uses the tightest lower bound among recent samples, so ages are never over-estimated', () => {
    // Proves an old entry (a loose bound) does not drag the estimate back and a fresh one sets it.
    const clock = new ServerClock(4);
    // Server time runs 1_000_000 ms ahead of the local monotonic clock.
    clock.observe(1_000_000 + 100 - 60_000, 100); // an entry written a minute before it was received
    clock.observe(1_000_000 + 200 - 5, 200); // an entry received 5 ms after the server stamped it
    expect(clock.serverNowMs(300)).toBe(1_000_000 + 300 - 5);
    expect(clock.ageMs(1_000_000 + 250, 300)).toBe(45);
  });

  it.each([0, 1, LIMITS.serverClockProbeReadsMax - 1])('takes its sample once a read finds the write, after %d misses', async (misses) => {
    // Proves a replica that has not stored the probe's write yet (a cluster of NATS servers) does not fail the probe.
    const clock = new ServerClock();
    const { kv, gets } = laggingKv(misses, 5_000_000);
    await clock.probe(kv, 'clock', 0);
    expect(kv.put).toHaveBeenCalledTimes(1);
    expect(gets()).toBe(misses + 1);
    expect(clock.hasEstimate()).toBe(true);
    expect(clock.serverNowMs(1_000)).toBeGreaterThan(5_000_000 - 1_000_000);
  });

  it('fails the probe when no read finds the write', async () => {
    const clock = new ServerClock();
    const { kv, gets } = laggingKv(Infinity, 0);
    await expect(clock.probe(kv, 'clock', 0)).rejects.toThrow(`the clock probe clock could not be read back after ${LIMITS.serverClockProbeReadsMax} reads`);
    expect(gets()).toBe(LIMITS.serverClockProbeReadsMax);
    expect(clock.hasEstimate()).toBe(false);
  });

  it('forgets samples beyond its bound so it follows a drifting server clock', () => {
    // Proves the estimate is the max over the last samplesMax samples, not over all time.
    const clock = new ServerClock(2);
    clock.observe(10_000, 0); // offset bound 10_000
    clock.observe(9_000, 0); // the server clock was stepped back by a second
    expect(clock.serverNowMs(0)).toBe(10_000);
    clock.observe(9_000, 0);
    expect(clock.serverNowMs(0)).toBe(9_000);
  });
});
