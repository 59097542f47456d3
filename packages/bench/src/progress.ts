import { performance } from 'node:perf_hooks';
import { PROGRESS_INTERVAL_MS } from './bench-limits';
import { formatCount } from './format';

/**
 * Prints "gateway append: 12 000 / 200 000 rows, 25 000 rows/s" every `PROGRESS_INTERVAL_MS` while a
 * scenario runs, and once more when it stops. The rate is the average since the start, which is what the
 * final figure will be. Lines go to stderr so `--json` leaves stdout to the result.
 */
export class ProgressReporter {
  private done = 0;
  private readonly startedMs = performance.now();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly label: string,
    private readonly total: number,
    private readonly unit: string,
    private readonly write: (line: string) => void,
  ) {
    this.timer = setInterval(() => this.print(), PROGRESS_INTERVAL_MS);
    // A forgotten reporter must not keep the process alive.
    this.timer.unref();
  }

  add(count: number): void {
    this.done += count;
  }

  /** Stops the periodic lines and prints the last one. */
  finish(): void {
    clearInterval(this.timer);
    this.print();
  }

  private print(): void {
    const elapsedMs = performance.now() - this.startedMs;
    const rate = elapsedMs > 0 ? (this.done * 1_000) / elapsedMs : 0;
    this.write(`  ${this.label}: ${formatCount(this.done)} / ${formatCount(this.total)} ${this.unit}, ${formatCount(rate)} ${this.unit}/s`);
  }
}
