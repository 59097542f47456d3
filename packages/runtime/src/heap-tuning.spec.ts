import { spawnSync } from 'node:child_process';
import { DEFAULTS, LIMITS } from '@mink/config';
import { heapGrowingFlagOf } from './heap-tuning';

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
