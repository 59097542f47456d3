import { PerformanceObserver, constants as perfConstants } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { LIMITS } from '@mink/config';

/**
 * The V8 flag for `MINK_HEAP_GROWING_PERCENT` (see `DEFAULTS.heapGrowingPercent` in @mink/config), or null
 * for 0: V8 keeps its own growing factor.
 */
export function heapGrowingFlagOf(percent: number): string | null {
  if (!Number.isSafeInteger(percent) || percent < 0) throw new Error(`a heap growing percent is a whole number from 0, got ${percent}`);
  return percent === 0 ? null : `--heap-growing-percent=${percent}`;
}

/**
 * The growing percent for a heap of `liveBytes` after a full collection: the configured percent, lowered
 * so that the heap grows by at most `growthBytesMax` before the next one, never below `percentMin`, in
 * steps of 10 (so a heap that hovers does not reset the flag at every collection). 0 stays 0: V8's own
 * factor, which mink then leaves alone.
 */
export function heapGrowingPercentFor(
  liveBytes: number,
  configuredPercent: number,
  growthBytesMax: number = LIMITS.heapGrowthBytesMax,
  percentMin: number = LIMITS.heapGrowingPercentMin,
): number {
  if (configuredPercent === 0 || !(liveBytes > 0)) return configuredPercent;
  const capped = Math.floor((100 * growthBytesMax) / liveBytes / 10) * 10;
  return Math.min(configuredPercent, Math.max(percentMin, capped));
}

/** The growing percent this process last gave V8 (null before `applyHeapGrowing` set one). */
let percentSet: number | null = null;

export function heapGrowingPercentNow(): number | null {
  return percentSet;
}

/**
 * Sets V8's heap growing factor for the rest of this process's life, and after each full collection
 * lowers it for a large heap (heapGrowingPercentFor). V8 reads the flag each time it sets the limit for
 * the next full collection, so a change made after one collection applies from the one after it.
 */
export function applyHeapGrowing(percent: number): void {
  const flag = heapGrowingFlagOf(percent);
  if (flag === null) return;
  setFlagsFromString(flag);
  percentSet = percent;
  const observer = new PerformanceObserver((list) => {
    if (!list.getEntries().some((entry) => (entry as { detail?: { kind?: number } }).detail?.kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR)) return;
    const next = heapGrowingPercentFor(getHeapStatistics().used_heap_size, percent);
    if (next === percentSet) return;
    percentSet = next;
    setFlagsFromString(heapGrowingFlagOf(next)!);
  });
  observer.observe({ entryTypes: ['gc'] });
}
