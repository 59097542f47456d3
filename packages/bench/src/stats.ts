/**
 * Summaries of latency samples. Percentiles use the nearest-rank method: the p-th percentile is the
 * smallest sample such that at least p of all samples are at or below it. It always returns a sample that
 * was measured (no interpolation), which is what a reader of "p99 = 120 ms" expects, and it is exact for
 * the small sample counts of the baselines.
 */

/** Latencies of one series of operations, in milliseconds. */
export interface LatencySummary {
  count: number;
  minimumMs: number;
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
  maximumMs: number;
}

/**
 * The nearest-rank percentile of `samples` (any order; not modified). `fraction` is in [0, 1]: 0.5 is the
 * median, 0.99 the 99th percentile, 0 the minimum and 1 the maximum. Throws on an empty series, a sample
 * that is not a finite number, or a fraction outside [0, 1], since any of them is a bug of the caller.
 */
export function percentile(samples: readonly number[], fraction: number): number {
  return percentileOfSorted(sortedCopy(samples), fraction);
}

/** Count, extremes, mean, p50 and p99 of a non-empty series of latencies. */
export function summarizeLatencies(samplesMs: readonly number[]): LatencySummary {
  const sorted = sortedCopy(samplesMs);
  const totalMs = sorted.reduce((sum, sample) => sum + sample, 0);
  return {
    count: sorted.length,
    minimumMs: sorted[0]!,
    p50Ms: percentileOfSorted(sorted, 0.5),
    p99Ms: percentileOfSorted(sorted, 0.99),
    meanMs: totalMs / sorted.length,
    maximumMs: sorted[sorted.length - 1]!,
  };
}

/** Events per second over an elapsed time; 0 when nothing was counted. */
export function ratePerSecond(count: number, elapsedMs: number): number {
  if (!(elapsedMs > 0)) throw new Error(`elapsed time must be positive, got ${elapsedMs} ms`);
  return (count * 1_000) / elapsedMs;
}

function sortedCopy(samples: readonly number[]): number[] {
  if (samples.length === 0) throw new Error('a percentile of an empty series is undefined');
  for (const sample of samples) {
    if (!Number.isFinite(sample)) throw new Error(`samples must be finite numbers, got ${sample}`);
  }
  return [...samples].sort((a, b) => a - b);
}

function percentileOfSorted(sorted: readonly number[], fraction: number): number {
  if (!(fraction >= 0 && fraction <= 1)) throw new Error(`percentile fraction must be in [0, 1], got ${fraction}`);
  // Rank 1 is the smallest sample; fraction 0 maps to it rather than to an undefined rank 0.
  const rank = Math.max(1, Math.ceil(fraction * sorted.length));
  return sorted[rank - 1]!;
}
