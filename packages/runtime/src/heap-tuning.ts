import { PerformanceObserver, constants as perfConstants } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
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

/**
 * Whether the limit a full collection of a `liveBytes` heap just set with `percentInEffect` lets the heap
 * grow by more than twice `growthBytesMax`, so that one more full collection should set it again with a
 * lowered percent. A heap that grows step by step (a few MB past the last collection's live size) never
 * needs one: a forced full collection is not incremental, and on a busy process it paused the event loop
 * for up to a second.
 */
export function collectAgainAfterLowering(liveBytes: number, percentInEffect: number, growthBytesMax: number = LIMITS.heapGrowthBytesMax): boolean {
  return (liveBytes * percentInEffect) / 100 > 2 * growthBytesMax;
}

/** The growing percent this process last gave V8 (null before `applyHeapGrowing` set one). */
let percentSet: number | null = null;
/** Whether the one full collection `applyHeapGrowing` may force has run. */
let collectedAgain = false;

/** The percent this process last gave V8, and whether it forced its one extra full collection. */
export function heapTuningNow(): { percent: number | null; collectedAgain: boolean } {
  return { percent: percentSet, collectedAgain };
}

/**
 * Sets V8's heap growing factor for the rest of this process's life, and after each full collection
 * lowers it for a large heap (heapGrowingPercentFor). V8 reads the flag when a full collection sets the
 * limit for the next one, so a percent lowered after a collection would only apply from the one after
 * next: a process that loads the view of 100 000 buckets (a live heap of 25 MB before, 100 MB after)
 * then had its next collection set at four times 100 MB and reached 530 MiB resident before it ran
 * (--trace-gc of a restarted data node). So when the limit just set lets the heap grow far more than
 * the cap (collectAgainAfterLowering), one more full collection runs at once to set it with the lowered
 * percent, at most once per process: in practice after the snapshot of a large view is loaded, in about
 * 100 ms.
 */
export function applyHeapGrowing(percent: number): void {
  const flag = heapGrowingFlagOf(percent);
  if (flag === null) return;
  setFlagsFromString(flag);
  percentSet = percent;
  const collect = fullCollection();
  const observer = new PerformanceObserver((list) => {
    if (!list.getEntries().some((entry) => (entry as { detail?: { kind?: number } }).detail?.kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR)) return;
    const liveBytes = getHeapStatistics().used_heap_size;
    const next = heapGrowingPercentFor(liveBytes, percent);
    if (next === percentSet) return;
    const inEffect = percentSet!;
    percentSet = next;
    setFlagsFromString(heapGrowingFlagOf(next)!);
    // Once per process: a forced collection is not incremental, and a data node growing its heap while it
    // reopened 33 000 buckets paused 0.4–0.8 s in a second one on two busy cores.
    if (collect !== null && !collectedAgain && next < inEffect && collectAgainAfterLowering(liveBytes, inEffect)) {
      collectedAgain = true;
      collect();
    }
  });
  observer.observe({ entryTypes: ['gc'] });
}

/** V8's full collection as a function (`--expose-gc` set at run time), or null where V8 refuses it. */
function fullCollection(): (() => void) | null {
  setFlagsFromString('--expose-gc');
  const collect = runInNewContext('gc') as unknown;
  return typeof collect === 'function' ? (collect as () => void) : null;
}
