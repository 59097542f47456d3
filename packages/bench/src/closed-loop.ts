import { performance } from 'node:perf_hooks';

/**
 * One kind of operation a closed loop repeats. `prepare` builds the input of operation `index` (rows, a
 * key) outside the timed section; `send` is the timed call. `send` resolves when the operation is
 * acknowledged and rejects when it failed.
 */
export interface ClosedLoopOperation<Input> {
  prepare(index: number): Input;
  send(input: Input): Promise<void>;
}

export interface ClosedLoopOptions {
  /** Operations to run in all; fewer when the deadline passes or the signal aborts first. */
  operations: number;
  /** Operations in flight at once; each of that many workers starts its next operation when its last one ends. */
  concurrency: number;
  /** `performance.now()` after which no new operation starts (those in flight finish). */
  deadlineMs?: number;
  /** Aborting it stops new operations, as the deadline does. */
  signal?: AbortSignal;
  /** Failed operations tolerated; one more ends the loop with `TooManyFailuresError`. */
  failuresMax: number;
  /** Called after each successful operation with its index, e.g. to count rows for progress lines. */
  onSuccess?: (index: number) => void;
}

export interface ClosedLoopResult {
  /** Latency of each successful operation in completion order, milliseconds. */
  latenciesMs: number[];
  /** Indexes of the successful operations. */
  succeededIndexes: number[];
  failures: number;
  /** Message of the first failure, to show why a series was incomplete. */
  firstFailureMessage: string | null;
  /** From the start of the first operation to the end of the last. */
  elapsedMs: number;
  /** True when the deadline or the signal stopped the loop before every operation ran. */
  stoppedEarly: boolean;
}

/** More operations failed than a series tolerates; the figures would not mean anything. */
export class TooManyFailuresError extends Error {
  constructor(
    readonly failures: number,
    readonly firstFailureMessage: string,
  ) {
    super(`${failures} operations failed; the first: ${firstFailureMessage}`);
    this.name = 'TooManyFailuresError';
  }
}

/**
 * Runs `operation` `options.operations` times with `options.concurrency` in flight (a closed loop: load
 * never exceeds what the system acknowledges, so latencies measure the system rather than a queue in the
 * benchmark). Operation indexes are handed out in increasing order; operation 0 starts even when the
 * deadline has already passed (so a series always has a sample) but not when the signal has aborted.
 * Failures are counted rather than retried.
 */
export async function runClosedLoop<Input>(operation: ClosedLoopOperation<Input>, options: ClosedLoopOptions): Promise<ClosedLoopResult> {
  if (!Number.isSafeInteger(options.operations) || options.operations < 1) throw new Error(`operations must be a positive integer, got ${options.operations}`);
  if (!Number.isSafeInteger(options.concurrency) || options.concurrency < 1) throw new Error(`concurrency must be a positive integer, got ${options.concurrency}`);
  const latenciesMs: number[] = [];
  const succeededIndexes: number[] = [];
  let failures = 0;
  let firstFailureMessage: string | null = null;
  let nextIndex = 0;
  let stoppedEarly = false;
  let tooManyFailures: TooManyFailuresError | null = null;

  const mayStartAnother = (): boolean => {
    if (nextIndex >= options.operations || tooManyFailures !== null) return false;
    const deadlinePassed = options.deadlineMs !== undefined && nextIndex > 0 && performance.now() >= options.deadlineMs;
    if (deadlinePassed || options.signal?.aborted) {
      stoppedEarly = true;
      return false;
    }
    return true;
  };

  const worker = async (): Promise<void> => {
    while (mayStartAnother()) {
      const index = nextIndex++;
      const input = operation.prepare(index);
      const startedMs = performance.now();
      try {
        await operation.send(input);
        latenciesMs.push(performance.now() - startedMs);
        succeededIndexes.push(index);
        options.onSuccess?.(index);
      } catch (error) {
        failures += 1;
        firstFailureMessage ??= error instanceof Error ? error.message : String(error);
        if (failures > options.failuresMax) tooManyFailures = new TooManyFailuresError(failures, firstFailureMessage);
      }
    }
  };

  const startedMs = performance.now();
  await Promise.all(Array.from({ length: Math.min(options.concurrency, options.operations) }, () => worker()));
  const elapsedMs = performance.now() - startedMs;
  if (tooManyFailures !== null) throw tooManyFailures;
  return { latenciesMs, succeededIndexes, failures, firstFailureMessage, elapsedMs, stoppedEarly };
}
