import { cpuByRole, cpuTicksOfStat, peakResidentBytesOfStatus, readProcessUsage, readRoleUsage, type RoleUsageSample } from './process-usage';

describe('process usage from /proc', () => {
  it('reads user + system ticks after a command name holding spaces and parentheses', () => {
    // Proves the fields are counted from the last ')' so a name like "node (x) y" cannot shift them.
    const stat = '4242 (node (x) y) S 1 4242 4242 0 -1 4194304 1000 0 0 0 250 75 0 0 20 0 11 0 100 1000000 5000';
    expect(cpuTicksOfStat(stat)).toBe(325);
  });

  it('reads the peak resident set in bytes', () => {
    // Proves VmHWM (peak), not VmRSS (now), is the figure taken.
    expect(peakResidentBytesOfStatus('Name:\tnode\nVmHWM:\t  123456 kB\nVmRSS:\t  100000 kB\n')).toBe(123456 * 1024);
    expect(peakResidentBytesOfStatus('Name:\tnode\n')).toBe(0);
  });

  it('counts this process and skips one that does not exist', () => {
    // Proves real /proc files parse and a gone pid costs nothing.
    const usage = readProcessUsage([process.pid, 2 ** 22 + 1]);
    expect(usage.cpuSeconds).toBeGreaterThan(0);
    expect(usage.rssMaxBytes).toBeGreaterThan(1024 * 1024);
  });

  it('reads the main thread of this process apart from the whole of it, and skips one that does not exist', () => {
    // Proves the main thread is read from its own task file: it used CPU, and no more than the whole process.
    const started = Date.now();
    while (Date.now() - started < 60) Math.sqrt(started);
    const [sample, ...others] = readRoleUsage([
      { role: 'load generator', pid: process.pid },
      { role: 'gone', pid: 2 ** 22 + 1 },
    ]);
    expect(others).toEqual([]);
    expect(sample).toMatchObject({ role: 'load generator', pid: process.pid });
    expect(sample!.mainThreadCpuSeconds).toBeGreaterThan(0);
    expect(sample!.mainThreadCpuSeconds).toBeLessThanOrEqual(sample!.cpuSeconds);
  });
});

describe('cpuByRole', () => {
  const sample = (role: string, pid: number, cpuSeconds: number, mainThreadCpuSeconds: number): RoleUsageSample => ({ role, pid, cpuSeconds, mainThreadCpuSeconds });

  it('sums the processes of a role between two readings, per MB, in the order roles appear', () => {
    // Proves processes of one role are added up, the main threads' share is of the role's total, and
    // the order is the second reading's.
    const before = [sample('data-node', 11, 10, 8), sample('data-node', 12, 20, 15), sample('s3', 3, 5, 1)];
    const after = [sample('s3', 3, 7, 2), sample('data-node', 11, 13, 10), sample('data-node', 12, 22, 16)];
    expect(cpuByRole(before, after, 10)).toEqual([
      { role: 's3', processes: 1, cpuSecondsPerMegabyte: 0.2, mainThreadShare: 0.5 },
      { role: 'data-node', processes: 2, cpuSecondsPerMegabyte: 0.5, mainThreadShare: 0.6 },
    ]);
  });

  it('leaves out a process read only once (restarted, or started in between), and a role with no CPU has no share', () => {
    // Proves a new pid never brings its whole CPU since it started into the figure.
    const before = [sample('data-node', 11, 10, 8), sample('gateway', 20, 4, 4)];
    const after = [sample('data-node', 99, 50, 40), sample('gateway', 20, 4, 4)];
    expect(cpuByRole(before, after, 2)).toEqual([{ role: 'gateway', processes: 1, cpuSecondsPerMegabyte: 0, mainThreadShare: null }]);
  });

  it('gives nothing for no megabytes, and never a share above one', () => {
    // Proves a scenario that acknowledged nothing prints no figures, and tick rounding cannot make a main
    // thread use more than its process.
    expect(cpuByRole([sample('s3', 3, 1, 1)], [sample('s3', 3, 2, 2)], 0)).toEqual([]);
    expect(cpuByRole([sample('s3', 3, 1, 1)], [sample('s3', 3, 1.5, 1.6)], 1)).toEqual([{ role: 's3', processes: 1, cpuSecondsPerMegabyte: 0.5, mainThreadShare: 1 }]);
  });
});
