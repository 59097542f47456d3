/**
 * Runs an asynchronous round in the background every `intervalMs`, never two at once: the next round is
 * scheduled only when the previous one has finished, so a slow round delays the next one instead of
 * overlapping it. A round that throws is reported to `onError` and the schedule goes on.
 */
export class PeriodicRounds {
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;
  private running = false;

  constructor(
    private readonly round: () => Promise<unknown>,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Starts the schedule; the first round runs after `intervalMs`. Starting twice is a bug. */
  start(intervalMs: number): void {
    if (!(intervalMs > 0)) throw new Error(`a periodic round needs a positive interval, not ${intervalMs}`);
    if (this.running) throw new Error('periodic rounds are started once');
    this.running = true;
    this.schedule(intervalMs);
  }

  /** Stops the schedule and resolves once the round in flight, if any, has finished. */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    await this.inFlight;
  }

  private schedule(intervalMs: number): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.inFlight = this.round()
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
          this.inFlight = undefined;
          if (this.running) this.schedule(intervalMs);
        });
    }, intervalMs);
  }
}
