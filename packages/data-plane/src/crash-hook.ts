import type { CrashPoint } from '@mink/config';
import type { WalPoint } from '@mink/s3stream';

/**
 * The WAL hook of a fault test's crash point (`MINK_TEST_CRASH_AT`): it calls `crash` the `occurrence`-th time
 * the WAL reaches the point, counted over the hook's life (one per process, shared by its incarnations), and
 * never again. `crash` kills the process with SIGKILL, so nothing after that point runs: the test gets a
 * `kill -9` at a chosen moment of a WAL object's life instead of at a moment chosen by timing.
 */
export function crashHookOf(crashAt: CrashPoint, crash: () => void): (point: WalPoint) => void {
  let seen = 0;
  return (point) => {
    if (`wal-${point}` !== crashAt.point) return;
    seen++;
    if (seen === crashAt.occurrence) crash();
  };
}
