import { backoffDelayMs } from './backoff';

const POLICY = { initialMs: 100, maxMs: 1_000 };

describe('backoffDelayMs', () => {
  it.each([
    // failedAttempts, random, expected wait: the ceiling doubles (100, 200, 400, 800, then 1000 capped) and the wait lies in [ceiling/2, ceiling).
    [1, 0, 50],
    [1, 0.999, 99],
    [2, 0, 100],
    [3, 0.5, 300],
    [4, 0, 400],
    [5, 0, 500],
    [5, 0.999, 999],
    [60, 0.5, 750],
  ])('after %p failures with random %p waits %p ms', (failedAttempts, random, expectedMs) => {
    // Proves exponential growth, the cap, and equal jitter's floor of half the ceiling, as data.
    expect(backoffDelayMs(failedAttempts, POLICY, () => random)).toBe(expectedMs);
  });

  it.each([0, -1, 1.5])('refuses %p failed attempts', (failedAttempts) => {
    // Proves a caller's off-by-one (asking for the wait before the first attempt) fails loudly.
    expect(() => backoffDelayMs(failedAttempts, POLICY, () => 0)).toThrow();
  });
});
