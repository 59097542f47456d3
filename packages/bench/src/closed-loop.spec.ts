import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { runClosedLoop, TooManyFailuresError } from './closed-loop';

describe('runClosedLoop', () => {
  it('runs every operation once with at most `concurrency` in flight', async () => {
    // Proves the loop is closed: the in-flight count never exceeds the bound, and every index runs exactly once.
    let inFlight = 0;
    let inFlightMax = 0;
    const sent: number[] = [];
    const result = await runClosedLoop(
      {
        prepare: (index) => index,
        send: async (index) => {
          inFlight += 1;
          inFlightMax = Math.max(inFlightMax, inFlight);
          await sleep(1);
          sent.push(index);
          inFlight -= 1;
        },
      },
      { operations: 20, concurrency: 3, failuresMax: 0 },
    );
    expect(inFlightMax).toBe(3);
    expect([...sent].sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, index) => index));
    expect(result).toEqual(expect.objectContaining({ failures: 0, stoppedEarly: false }));
    expect(result.latenciesMs).toHaveLength(20);
  });

  it('stops starting operations at the deadline but always runs the first', async () => {
    // Proves a time cap ends the series early, and that a deadline already passed still yields one sample.
    const result = await runClosedLoop({ prepare: (index) => index, send: () => sleep(1).then(() => undefined) }, { operations: 1_000, concurrency: 2, deadlineMs: performance.now() - 1, failuresMax: 0 });
    expect(result.stoppedEarly).toBe(true);
    expect(result.succeededIndexes).toEqual([0]);
  });

  it('counts failures up to the bound and throws past it', async () => {
    // Proves tolerated failures are reported with the first message, and one more ends the series.
    const failOdd = { prepare: (index: number) => index, send: async (index: number) => (index % 2 === 1 ? Promise.reject(new Error(`odd ${index}`)) : undefined) };
    const tolerated = await runClosedLoop(failOdd, { operations: 4, concurrency: 1, failuresMax: 2 });
    expect(tolerated).toEqual(expect.objectContaining({ failures: 2, firstFailureMessage: 'odd 1', succeededIndexes: [0, 2] }));
    await expect(runClosedLoop(failOdd, { operations: 10, concurrency: 1, failuresMax: 2 })).rejects.toBeInstanceOf(TooManyFailuresError);
  });

  it.each([
    [0, 1],
    [1, 0],
    [1.5, 1],
  ])('refuses %p operations with concurrency %p', async (operations, concurrency) => {
    // Proves a nonsensical series fails before running anything.
    await expect(runClosedLoop({ prepare: () => 0, send: async () => undefined }, { operations, concurrency, failuresMax: 0 })).rejects.toThrow();
  });
});
