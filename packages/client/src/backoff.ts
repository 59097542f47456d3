import { LIMITS } from '@mink/config';

/**
 * Bounded exponential backoff with full jitter. `random` is injected so tests are reproducible.
 */
export function backoffDelayMs(attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(LIMITS.clientBackoffMaxMs, LIMITS.clientBackoffInitialMs * 2 ** attempt);
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

export function sleep(milliseconds: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, milliseconds));
}
