/** How long `eventually` polls, how often, and what ends it early. */
export interface EventuallyOptions {
  /** Give up after this long (default 30 s). */
  timeoutMs?: number;
  /** Wait this long between probes (default 200 ms; unit tests of in-process code poll every few ms). */
  intervalMs?: number;
  /** An aborted signal ends the polling at once with a failure, so a poll does not outlive the phase it serves. */
  signal?: AbortSignal;
}

/**
 * Polls `probe` until it returns a value other than `undefined` or `false`, and resolves with it; fails
 * naming `what` and the last error the probe threw once `timeoutMs` have passed (or the signal aborted).
 * The one polled wait of the tests: a condition to wait for, never a sleep that hopes it is long enough.
 * A boolean condition is a probe too: `eventually('the bucket is open', () => bucket.isOpen())`.
 */
export async function eventually<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  options: EventuallyOptions | number = {},
): Promise<T> {
  const { timeoutMs = 30_000, intervalMs = 200, signal } = typeof options === 'number' ? { timeoutMs: options } : options;
  const deadlineMs = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    if (signal?.aborted) throw new Error(`stopped waiting for ${what}${describeLast(last)}`);
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() >= deadlineMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${describeLast(last)}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

function describeLast(last: unknown): string {
  if (last === undefined) return '';
  return `: ${last instanceof Error ? last.message : String(last)}`;
}
