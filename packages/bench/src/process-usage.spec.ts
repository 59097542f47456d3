import { cpuTicksOfStat, peakResidentBytesOfStatus, readProcessUsage } from './process-usage';

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
});
