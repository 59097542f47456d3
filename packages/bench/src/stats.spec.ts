import { percentile, ratePerSecond, summarizeLatencies } from './stats';

const ONE_TO_HUNDRED = Array.from({ length: 100 }, (_, index) => index + 1);

describe('percentile', () => {
  it.each<[string, number[], number, number]>([
    ['the median of an odd series', [3, 1, 2], 0.5, 2],
    ['the lower middle of an even series', [4, 1, 3, 2], 0.5, 2],
    ['p99 of 1..100', ONE_TO_HUNDRED, 0.99, 99],
    ['p50 of 1..100', ONE_TO_HUNDRED, 0.5, 50],
    ['p99 of ten samples, which is the maximum', [10, 9, 8, 7, 6, 5, 4, 3, 2, 1], 0.99, 10],
    ['fraction 0, the minimum', [5, 7, 6], 0, 5],
    ['fraction 1, the maximum', [5, 7, 6], 1, 7],
    ['a single sample at any fraction', [42], 0.99, 42],
    ['repeated samples', [1, 1, 1, 9], 0.75, 1],
  ])('returns %s', (_case, samples, fraction, expected) => {
    // Proves the nearest-rank rule: the smallest measured sample with at least that fraction at or below it.
    expect(percentile(samples, fraction)).toBe(expected);
  });

  it('leaves the caller’s array in its order', () => {
    // Proves the samples are sorted in a copy, so a caller can keep recording into its array.
    const samples = [3, 1, 2];
    percentile(samples, 0.5);
    expect(samples).toEqual([3, 1, 2]);
  });

  it.each<[string, number[], number]>([
    ['an empty series', [], 0.5],
    ['a fraction above 1', [1], 1.01],
    ['a negative fraction', [1], -0.1],
    ['a fraction that is not a number', [1], Number.NaN],
    ['a sample that is not a number', [1, Number.NaN], 0.5],
    ['an infinite sample', [1, Number.POSITIVE_INFINITY], 0.5],
  ])('refuses %s', (_case, samples, fraction) => {
    // Proves a caller's bug fails loudly instead of printing a made-up latency.
    expect(() => percentile(samples, fraction)).toThrow();
  });
});

describe('summarizeLatencies', () => {
  it('gives count, extremes, mean, p50 and p99', () => {
    // Proves every field of the summary on a series whose answers are known.
    expect(summarizeLatencies([...ONE_TO_HUNDRED].reverse())).toEqual({ count: 100, minimumMs: 1, p50Ms: 50, p99Ms: 99, meanMs: 50.5, maximumMs: 100 });
  });

  it('refuses an empty series', () => {
    // Proves a scenario that completed nothing cannot report a latency.
    expect(() => summarizeLatencies([])).toThrow(/empty/);
  });
});

describe('ratePerSecond', () => {
  it.each<[number, number, number]>([
    [1_000, 1_000, 1_000],
    [50, 250, 200],
    [0, 10, 0],
  ])('counts %p events in %p ms as %p per second', (count, elapsedMs, expected) => {
    // Proves the conversion from a count over milliseconds to a rate per second.
    expect(ratePerSecond(count, elapsedMs)).toBe(expected);
  });

  it.each([0, -1, Number.NaN])('refuses an elapsed time of %p ms', (elapsedMs) => {
    // Proves a rate is never divided by a zero or negative time.
    expect(() => ratePerSecond(1, elapsedMs)).toThrow();
  });
});
