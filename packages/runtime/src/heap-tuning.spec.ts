import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { DEFAULTS, LIMITS } from '@mink/config';
import { collectAgainAfterLowering, heapGrowingFlagOf, heapGrowingPercentFor } from './heap-tuning';

describe('heapGrowingFlagOf', () => {
  it.each([
    [0, null],
    [1, '--heap-growing-percent=1'],
    [DEFAULTS.heapGrowingPercent, '--heap-growing-percent=300'],
    [LIMITS.heapGrowingPercentMax, '--heap-growing-percent=1000'],
  ])('%p -> %p', (percent, flag) => {
    // Proves 0 leaves V8's own factor (no flag at all) and any other percent becomes the V8 flag as given.
    expect(heapGrowingFlagOf(percent)).toBe(flag);
  });

  it.each([-1, 2.5, Number.NaN])('refuses %p', (percent) => {
    expect(() => heapGrowingFlagOf(percent)).toThrow('heap growing percent');
  });

  it('names a flag this Node.js accepts at run time', () => {
    // Proves the flag is set after start without complaint: V8 prints "unrecognized flag" for one it does
    // not know (a Node.js upgrade that dropped it would show here, not as a silent loss of the tuning).
    const flag = heapGrowingFlagOf(DEFAULTS.heapGrowingPercent)!;
    const known = spawnSync(process.execPath, ['-e', `require('node:v8').setFlagsFromString(${JSON.stringify(flag)})`], { encoding: 'utf8' });
    const unknown = spawnSync(process.execPath, ['-e', `require('node:v8').setFlagsFromString('--heap-growing-percent-of-nothing=1')`], { encoding: 'utf8' });
    expect(unknown.stderr).toContain('unrecognized flag');
    expect({ status: known.status, stderr: known.stderr }).toEqual({ status: 0, stderr: '' });
  });
});

describe('heapGrowingPercentFor', () => {
  const MiB = 1024 * 1024;
  it.each([
    ['a small heap keeps the configured percent', 30 * MiB, 300, 300],
    ['a heap at growthBytesMax / percent keeps it', (128 * MiB) / 3, 300, 300],
    ['the view of 100 000 buckets (~160 MiB live) grows by at most 128 MiB', 160 * MiB, 300, 80],
    ['in steps of 10, rounded down', 150 * MiB, 300, 80],
    ['never below the minimum, however large the heap', 2_000 * MiB, 300, LIMITS.heapGrowingPercentMin],
    ['a configured percent below the cap stays', 160 * MiB, 50, 50],
    ['0 (V8 decides) stays 0', 160 * MiB, 0, 0],
    ['no heap figure yet: the configured percent', 0, 300, 300],
  ])('%s', (_case, liveBytes, configured, expected) => {
    // Proves the growth between full collections is bounded in bytes for a large heap and untouched for a small one.
    expect(heapGrowingPercentFor(liveBytes, configured, 128 * MiB, LIMITS.heapGrowingPercentMin)).toBe(expected);
  });
});

describe('collectAgainAfterLowering', () => {
  const MiB = 1024 * 1024;
  it.each([
    ['a view of 100 000 buckets just loaded at 300 %: 300 MiB of room', 100 * MiB, 300, true],
    ['a heap grown step by step, collected at 80 %', 160 * MiB, 80, false],
    ['room of exactly twice the cap', 128 * MiB, 200, false],
    ['a small heap at 300 %', 30 * MiB, 300, false],
  ])('%s -> %p', (_case, liveBytes, percentInEffect, expected) => {
    // Proves a forced full collection is kept for a jump, when the limit V8 just set is far above the cap.
    expect(collectAgainAfterLowering(liveBytes, percentInEffect, 128 * MiB)).toBe(expected);
  });
});

describe('applyHeapGrowing', () => {
  it('lowers the percent after a full collection of a large heap, in a real process', () => {
    // Proves the wiring: V8 reports its full collections to the observer, which sets the capped percent (on
    // the built module, as the services run it).
    const script = `
      const { applyHeapGrowing, heapTuningNow } = require(${JSON.stringify(join(__dirname, '../dist/heap-tuning.js'))});
      applyHeapGrowing(300);
      const before = heapTuningNow();
      globalThis.kept = Array.from({ length: 1_500_000 }, (_, index) => ({ index, name: 'row ' + index }));
      gc();
      setTimeout(() => console.log(JSON.stringify({ before, after: heapTuningNow() })), 100);
    `;
    const child = spawnSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8' });
    expect(child.stderr).toBe('');
    const { before, after } = JSON.parse(child.stdout) as { before: { percent: number; collectedAgain: boolean }; after: { percent: number; collectedAgain: boolean } };
    expect(before).toEqual({ percent: 300, collectedAgain: false });
    expect(after.percent).toBeLessThan(300);
    expect(after.percent).toBeGreaterThanOrEqual(LIMITS.heapGrowingPercentMin);
    // About 150 MB live at 300 % left room for 450 MB: one more full collection set the limit again.
    expect(after.collectedAgain).toBe(true);
  });
});
