import { LIMITS } from './limits';

/** How long to wait between attempts of a request; every field is a bound from `LIMITS` or a test's override. */
export interface BackoffPolicy {
  /** Ceiling of the wait before the second attempt. */
  initialMs: number;
  /** Ceiling of any wait, however many attempts failed. */
  maxMs: number;
}

/**
 * The wait after `failedAttempts` failures (1 for the wait before the second attempt). The ceiling doubles per
 * failure up to `maxMs`; the wait is drawn between half the ceiling and the ceiling ("equal jitter"), so
 * clients that failed together spread out, yet none comes back at once to a store that asked it to slow down.
 * `random` returns a number in [0, 1), like Math.random, and is a parameter so tests can pin it.
 */
export function backoffDelayMs(failedAttempts: number, policy: BackoffPolicy, random: () => number): number {
  if (!Number.isSafeInteger(failedAttempts) || failedAttempts < 1) throw new Error(`failedAttempts must be at least 1, got ${failedAttempts}`);
  // Capping the exponent keeps 2 ** n finite for absurd attempt counts; the min() below bounds the result anyway.
  const ceilingMs = Math.min(policy.maxMs, policy.initialMs * 2 ** Math.min(failedAttempts - 1, 30));
  const halfMs = ceilingMs / 2;
  return Math.floor(halfMs + random() * halfMs);
}

/** The client's retries of bucket and coordinator requests (`LIMITS.clientBackoff*`). */
export const CLIENT_BACKOFF: BackoffPolicy = { initialMs: LIMITS.clientBackoffInitialMs, maxMs: LIMITS.clientBackoffMaxMs };

/** The metadata store's retries of a proposal whose append failed transiently (`LIMITS.proposeBackoff*`). */
export const PROPOSE_BACKOFF: BackoffPolicy = { initialMs: LIMITS.proposeBackoffInitialMs, maxMs: LIMITS.proposeBackoffMaxMs };

/** The object store's retries of a transiently failed S3 request (`LIMITS.objectStoreBackoff*`). */
export const OBJECT_STORE_BACKOFF: BackoffPolicy = { initialMs: LIMITS.objectStoreBackoffInitialMs, maxMs: LIMITS.objectStoreBackoffMaxMs };

/** Resolves after `durationMs`. */
export function sleep(durationMs: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, durationMs));
}
