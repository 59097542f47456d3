import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const WATCHDOG = join(__dirname, '..', 'support', 'exit-watchdog.js');

/** A Node.js process that starts the unit tier's exit watchdog (2 s) and then runs `body`. */
function runWithWatchdog(body: string): { status: number | null; stderr: string; stdout: string } {
  const script = `require(${JSON.stringify(WATCHDOG)}).startExitWatchdog(2);\n${body}`;
  const result = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 30_000 });
  return { status: result.status, stderr: result.stderr, stdout: result.stdout };
}

describe('the unit tier exit watchdog (test/support/exit-watchdog.js)', () => {
  it('ends a process that a forgotten server keeps alive, with status 1 and the handle named', () => {
    // Proves a leaked handle fails the tier with its cause within the watchdog's time, instead of hanging CI.
    const result = runWithWatchdog(`require('node:net').createServer().listen(0, '127.0.0.1');`);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('still running 2 s after its last test finished');
    expect(result.stderr).toContain('TCPServerWrap');
    expect(result.stderr).toMatch(/libuv handle: \{"type":"tcp"/);
  });

  it('names a forgotten interval among the active resources', () => {
    const result = runWithWatchdog(`setInterval(() => {}, 1000);`);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('"Timeout"');
  });

  it('keeps nothing alive itself: a process with nothing left open ends at once, with its own status', () => {
    // Proves the watchdog's timer is unref'd: it neither delays a clean exit nor changes its status.
    const result = runWithWatchdog(`setTimeout(() => { console.log('done'); process.exitCode = 0; }, 100);`);
    expect(result).toEqual({ status: 0, stderr: '', stdout: 'done\n' });
  });
});
