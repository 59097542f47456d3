import { acknowledgedIds, benchRows, cpuElsewhere, measuredWarmupCalls, writeCallCount } from './write-scenario';

describe('the rows of a write scenario', () => {
  const settings = { rows: 25, batchRows: 10, firstId: 100 };

  it('gives each call consecutive ids from the first id, the last call the remainder', () => {
    // Proves calls never overlap or leave gaps, so every id written is known from the call index alone.
    expect(writeCallCount(25, 10)).toBe(3);
    expect(writeCallCount(20, 10)).toBe(2);
    expect(benchRows(settings, 0).map((row) => row.id)).toEqual([100, 101, 102, 103, 104, 105, 106, 107, 108, 109]);
    expect(benchRows(settings, 2).map((row) => row.id)).toEqual([120, 121, 122, 123, 124]);
    expect(benchRows(settings, 3)).toEqual([]);
    expect(benchRows(settings, 0)[1]).toEqual({ id: 101, name: 'sensor-101', value: 101 / 7 });
  });

  it('warms a measured series up with a fifth of its calls, and never fewer than the baselines warm up with', () => {
    // Proves the append and put series warm up in proportion to what they measure (the default 200 append calls: 40).
    expect(measuredWarmupCalls(200_000, 1_000)).toBe(40);
    expect(measuredWarmupCalls(100_000, 1_000)).toBe(20);
    expect(measuredWarmupCalls(100_500, 1_000)).toBe(21);
    expect(measuredWarmupCalls(5_000, 1_000)).toBe(4);
    expect(measuredWarmupCalls(0, 1_000)).toBe(4);
  });

  it('lists the ids of the acknowledged calls only, in id order', () => {
    // Proves the lookups read only keys whose put was acknowledged, whatever order the calls finished in.
    expect(acknowledgedIds(settings, [2, 0])).toEqual([100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 120, 121, 122, 123, 124]);
    expect(acknowledgedIds(settings, [])).toEqual([]);
  });
});

describe('cpuElsewhere: the CPU of the servers and the load generator beside mink', () => {
  it.each([
    [
      'everything known: per MB, and cores busy = all CPU seconds over the elapsed seconds',
      { minkCpuSeconds: 2, serverCpuSeconds: 1, benchCpuSeconds: 0.5, megabytes: 50, elapsedMs: 2_000 },
      { serverCpuSecondsPerMegabyte: 0.02, benchCpuSecondsPerMegabyte: 0.01, coresBusy: 1.75 },
    ],
    [
      'servers unknown: no server figure and no cores busy',
      { minkCpuSeconds: 2, serverCpuSeconds: null, benchCpuSeconds: 0.5, megabytes: 50, elapsedMs: 2_000 },
      { serverCpuSecondsPerMegabyte: null, benchCpuSecondsPerMegabyte: 0.01, coresBusy: null },
    ],
    [
      'mink unknown: no cores busy',
      { minkCpuSeconds: null, serverCpuSeconds: 1, benchCpuSeconds: 0.5, megabytes: 50, elapsedMs: 2_000 },
      { serverCpuSecondsPerMegabyte: 0.02, benchCpuSecondsPerMegabyte: 0.01, coresBusy: null },
    ],
    [
      'nothing written, no time: nothing per MB or per second',
      { minkCpuSeconds: 0, serverCpuSeconds: 0, benchCpuSeconds: 0, megabytes: 0, elapsedMs: 0 },
      { serverCpuSecondsPerMegabyte: null, benchCpuSecondsPerMegabyte: null, coresBusy: null },
    ],
  ])('%s', (_name, usage, expected) => {
    expect(cpuElsewhere(usage)).toEqual(expected);
  });
});
