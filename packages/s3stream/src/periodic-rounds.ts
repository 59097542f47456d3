/**
 * Runs an asynchronous round in the background every `intervalMs`, never two at once: the next round is
 * scheduled only when the previous one has finished, so a slow round delays the next one instead of
 * overlapping it. A round can also be run on demand with `runOnce`; a call while any round is in flight
 * joins that round instead of starting a second one. A scheduled round that throws is reported to
 * `onError` and the schedule goes on.
 */
export class PeriodicRounds<Result = unknown> {
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<Result> | undefined;
  private running = false;

  constructor(
    private readonly round: () => Promise<Result>,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Runs a round now, or joins the one in flight; resolves with its result. */
  runOnce(): Promise<Result> {
    this.inFlight ??= this.round().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  /** Starts the schedule; the first round runs after `intervalMs`. Starting twice is a bug. */
  start(intervalMs: number): void {
    if (!(intervalMs > 0)) throw new Error(`a periodic round needs a positive interval, not ${intervalMs}`);
    if (this.running) throw new Error('periodic rounds are started once');
    this.running = true;
    this.schedule(intervalMs);
  }

  /** Stops the schedule and resolves once the round in flight, if any (scheduled or on demand), has finished. */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    await this.inFlight?.catch(() => undefined);
  }

  private schedule(intervalMs: number): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.runOnce()
        .then(
          () => undefined,
          (error: unknown) => {
            try {
              this.onError(error);
            } catch {
              // A reporter that throws must not stop the schedule it reports on.
            }
          },
        )
        .finally(() => {
          if (this.running) this.schedule(intervalMs);
        });
    }, intervalMs);
  }
}
