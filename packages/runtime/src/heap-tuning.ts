import { setFlagsFromString } from 'node:v8';

/**
 * The V8 flag for `MINK_HEAP_GROWING_PERCENT` (see `DEFAULTS.heapGrowingPercent` in @mink/config), or null
 * for 0: V8 keeps its own growing factor.
 */
export function heapGrowingFlagOf(percent: number): string | null {
  if (!Number.isSafeInteger(percent) || percent < 0) throw new Error(`a heap growing percent is a whole number from 0, got ${percent}`);
  return percent === 0 ? null : `--heap-growing-percent=${percent}`;
}

/**
 * Sets V8's heap growing factor for the rest of this process's life. V8 reads it each time it sets the
 * limit for the next full collection, so setting it as a service starts applies from its first one on.
 */
export function applyHeapGrowing(percent: number): void {
  const flag = heapGrowingFlagOf(percent);
  if (flag !== null) setFlagsFromString(flag);
}
