import { ProgressReporter, PROGRESS_INTERVALS, formatLoadSummary, formatProgress } from './progress';

describe('formatProgress', () => {
  it.each<[string, Parameters<typeof formatProgress>[0], string]>([
    ['a file half read', { rows: 12_000, bytes: 5_000_000, totalBytes: 10_000_000, elapsedMs: 2_000 }, '12 000 rows · 5.0 of 10.0 MB (50 %) · 2.5 MB/s · ETA 2 s'],
    ['a long way to go', { rows: 1_000, bytes: 1_000_000, totalBytes: 301_000_000, elapsedMs: 1_000 }, '1 000 rows · 1.0 of 301.0 MB (0 %) · 1.0 MB/s · ETA 5 min 0 s'],
    ['standard input (no size, no ETA)', { rows: 3, bytes: 2_500_000, totalBytes: null, elapsedMs: 1_000 }, '3 rows · 2.5 MB · 2.5 MB/s'],
    ['the very start', { rows: 0, bytes: 0, totalBytes: 10, elapsedMs: 0 }, '0 rows · 0.0 of 0.0 MB (0 %) · 0.0 MB/s'],
  ])('%s', (_name, progress, expected) => {
    expect(formatProgress(progress)).toBe(expected);
  });

  it('sums a load up', () => {
    expect(formatLoadSummary('appended', 'events', { rows: 120_000, bytes: 30_200_000, totalBytes: null, elapsedMs: 12_300 })).toBe(
      'appended 120 000 rows (30.2 MB) to events in 12.3 s: 9 756 rows/s, 2.5 MB/s',
    );
  });
});

describe('ProgressReporter', () => {
  const progress = { rows: 1, bytes: 1, totalBytes: null, elapsedMs: 1 };
  it.each<[string, boolean, number, number]>([
    ['redraws one line in place on a terminal', true, PROGRESS_INTERVALS.terminalMs, 3],
    ['prints a line now and then elsewhere', false, PROGRESS_INTERVALS.logMs, 3],
  ])('%s', (_name, terminal, intervalMs, expected) => {
    let clock = 0;
    const written: string[] = [];
    const reporter = new ProgressReporter({ writeError: (text) => void written.push(text) }, terminal, () => clock);
    for (let step = 0; step <= 2 * intervalMs; step += intervalMs / 4) {
      clock = step;
      reporter.update(progress);
    }
    reporter.finish();
    const lines = written.filter((text) => text.includes('rows'));
    expect(lines).toHaveLength(expected);
    if (terminal) {
      expect(lines.every((text) => text.startsWith('\r\x1b[2K') && !text.endsWith('\n'))).toBe(true);
      expect(written.at(-1)).toBe('\r\x1b[2K');
    } else {
      expect(lines.every((text) => text.endsWith('\n'))).toBe(true);
    }
  });
});
