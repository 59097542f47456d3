import type { CliIo } from './io';
import { MEGABYTE_BYTES, formatCount, formatMegabytes } from './format';

/** Where a bulk load stands: rows and input bytes done so far, the input's size when known, time taken. */
export interface LoadProgress {
  rows: number;
  bytes: number;
  /** Bytes of the whole input; null when unknown (standard input). */
  totalBytes: number | null;
  elapsedMs: number;
}

/** "12 000 rows · 3.1 of 10.2 MB (30 %) · 2.4 MB/s · ETA 3 s"; without a known size, no share and no ETA. */
export function formatProgress(progress: LoadProgress): string {
  const seconds = progress.elapsedMs / 1_000;
  const rate = seconds > 0 ? progress.bytes / MEGABYTE_BYTES / seconds : 0;
  const parts = [`${formatCount(progress.rows)} rows`];
  if (progress.totalBytes !== null && progress.totalBytes > 0) {
    const share = Math.min(100, Math.floor((progress.bytes / progress.totalBytes) * 100));
    parts.push(`${formatMegabytes(progress.bytes)} of ${formatMegabytes(progress.totalBytes)} MB (${share} %)`);
  } else {
    parts.push(`${formatMegabytes(progress.bytes)} MB`);
  }
  parts.push(`${rate.toFixed(1)} MB/s`);
  if (progress.totalBytes !== null && rate > 0 && progress.bytes < progress.totalBytes) {
    parts.push(`ETA ${formatDuration((progress.totalBytes - progress.bytes) / MEGABYTE_BYTES / rate)}`);
  }
  return parts.join(' · ');
}

/** "appended 120 000 rows (30.2 MB) to events in 12.3 s: 9 756 rows/s, 2.5 MB/s". */
export function formatLoadSummary(verb: string, table: string, progress: LoadProgress): string {
  const seconds = Math.max(progress.elapsedMs, 1) / 1_000;
  return (
    `${verb} ${formatCount(progress.rows)} rows (${formatMegabytes(progress.bytes)} MB) to ${table} in ${seconds.toFixed(1)} s: ` +
    `${formatCount(Math.round(progress.rows / seconds))} rows/s, ${(progress.bytes / MEGABYTE_BYTES / seconds).toFixed(1)} MB/s`
  );
}


function formatDuration(seconds: number): string {
  if (seconds < 60) return `${Math.ceil(seconds)} s`;
  const minutes = Math.floor(seconds / 60);
  return `${minutes} min ${Math.ceil(seconds - minutes * 60)} s`;
}

/** How often the progress line is redrawn on a terminal, and how often a line is printed elsewhere (a log). */
export const PROGRESS_INTERVALS = { terminalMs: 200, logMs: 5_000 } as const;

/**
 * The progress of a bulk load on standard error: on a terminal one line redrawn in place at most every
 * `terminalMs`; elsewhere (a file, a CI log) a line every `logMs`, so logs are not flooded.
 */
export class ProgressReporter {
  private lastShownMs = Number.NEGATIVE_INFINITY;
  private drawn = false;

  constructor(
    private readonly io: Pick<CliIo, 'writeError'>,
    private readonly terminal: boolean,
    private readonly now: () => number,
  ) {}

  update(progress: LoadProgress): void {
    const at = this.now();
    if (at - this.lastShownMs < (this.terminal ? PROGRESS_INTERVALS.terminalMs : PROGRESS_INTERVALS.logMs)) return;
    this.lastShownMs = at;
    if (this.terminal) {
      this.io.writeError(`\r\x1b[2K${formatProgress(progress)}`);
      this.drawn = true;
    } else {
      this.io.writeError(`${formatProgress(progress)}\n`);
    }
  }

  /** Clears the line drawn on a terminal, before the summary or an error is printed. */
  finish(): void {
    if (this.drawn) this.io.writeError('\r\x1b[2K');
    this.drawn = false;
  }
}
