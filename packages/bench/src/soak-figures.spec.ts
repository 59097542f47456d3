import { callsDue, renderSoak, soakGrowthOf, type SoakResult, type SoakSample } from './soak-figures';

const MiB = 1_048_576;

/** Samples every 5 s for `minutes`, all processes together at `rss(atMs)` MiB, split between a data node and a gateway. */
function samplesOf(minutes: number, rss: (atMs: number) => number): SoakSample[] {
  return Array.from({ length: (minutes * 60) / 5 + 1 }, (_unused, index) => {
    const atMs = index * 5_000;
    const bytes = rss(atMs) * MiB;
    return { atMs, rssBytes: bytes, anonBytes: bytes / 2, roles: { 'data-node': bytes * 0.75, gateway: bytes * 0.25 } };
  });
}

describe('soakGrowthOf', () => {
  it.each<[string, number, (atMs: number) => number, number | null]>([
    ['flat after the warm-up', 10, (atMs) => (atMs < 60_000 ? 500 + atMs / 1_000 : 600), 0],
    // Medians of samples every 5 s: at 87.5 s in the warm window [60 s, 120 s), at 572.5 s in the last minute.
    ['a steady leak of 10 MiB a minute', 10, (atMs) => 600 + (atMs / 60_000) * 10, (572.5 / 6 - 87.5 / 6) / (600 + 87.5 / 6)],
    ['a sawtooth (collections) around a flat level: medians, not the last sample', 10, (atMs) => 600 + ((atMs / 5_000) % 2 === 0 ? 40 : -40), 0],
    ['too short: the end window overlaps the warm one', 2, () => 600, null],
  ])('%s', (_name, minutes, rss, expected) => {
    // Proves the growth is counted from the minute after the warm-up to the last minute, by medians.
    const growth = soakGrowthOf(samplesOf(minutes, rss), 60_000, 60_000);
    if (expected === null) {
      expect(growth).toBeNull();
      return;
    }
    expect(growth!.ratio).toBeCloseTo(expected, 6);
    expect(growth!.roles.map((role) => role.role)).toEqual(['data-node', 'gateway']);
    expect(growth!.roles[0]!.ratio).toBeCloseTo(expected, 6);
  });

  it('has nothing to say without samples', () => {
    expect(soakGrowthOf([], 60_000, 60_000)).toBeNull();
  });
});

describe('callsDue', () => {
  it.each([
    // elapsed ms, rows/s, batch rows, sent → due
    [0, 5_000, 100, 0, 0],
    [1_000, 5_000, 100, 0, 50],
    [1_000, 5_000, 100, 50, 0],
    [1_010, 5_000, 100, 50, 0],
    [1_020, 5_000, 100, 50, 1],
    [60_000, 5_000, 100, 2_990, 10],
    [500, 5_000, 100, 40, 0],
  ])('at %i ms, %i rows/s in calls of %i with %i sent: %i due', (elapsedMs, rate, batch, sent, due) => {
    // Proves the pace: rows/s ÷ batch calls a second, counted from the start, never negative when ahead.
    expect(callsDue(elapsedMs, rate, batch, sent)).toBe(due);
  });
});

describe('renderSoak', () => {
  const soak = (growthRatio: number | null): SoakResult => ({
    minutes: 10,
    rowsPerSecondOffered: 5_000,
    rows: 2_990_000,
    rowsPerSecond: 4_983.3,
    errors: 0,
    firstError: null,
    latency: { count: 29_900, minimumMs: 20, p50Ms: 61.2, p99Ms: 140.4, meanMs: 70, maximumMs: 300 },
    lastMinuteLatency: null,
    samples: [],
    growth:
      growthRatio === null
        ? null
        : { warmBytes: 600 * MiB, endBytes: 600 * MiB * (1 + growthRatio), ratio: growthRatio, warmAnonBytes: 300 * MiB, endAnonBytes: 310 * MiB, roles: [{ role: 'gateway', warmBytes: 150 * MiB, endBytes: 160 * MiB, ratio: 1 / 15 }] },
  });

  it.each<[number | null, RegExp]>([
    [0.02, /together: 600 MiB → 612 MiB, \+2\.0 %.*goal at most \+5\.0 %: met/],
    [0.08, /\+8\.0 %.*: missed/],
    [null, /too short to tell/],
  ])('growth %p', (ratio, line) => {
    // Proves the section states the load carried and the verdict against the goal.
    const text = renderSoak(soak(ratio), 0.05).join('\n');
    expect(text).toMatch(/4983 rows\/s acknowledged of 5000 offered, 2990000 rows, 0 errors/);
    expect(text).toMatch(line);
    expect(text).toMatch(/ack latency per call: p50 61 ms, p99 140 ms; in the last minute none/);
  });
});
