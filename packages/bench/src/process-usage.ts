import { readFileSync } from 'node:fs';

/** CPU time and peak memory of a set of processes, read from Linux's /proc. */
export interface ProcessUsage {
  /** User + system CPU seconds of the processes still readable, summed. */
  cpuSeconds: number;
  /** The largest peak resident set (VmHWM) among them, in bytes. */
  rssMaxBytes: number;
}

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ; 100 on every Linux the project runs on). */
const TICKS_PER_SECOND = 100;

/** User + system CPU ticks from the text of /proc/<pid>/stat (fields 14 and 15, after the command in parentheses). */
export function cpuTicksOfStat(stat: string): number {
  const afterCommand = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // afterCommand[0] is field 3 (state), so field n is afterCommand[n - 3].
  const user = Number(afterCommand[14 - 3]);
  const system = Number(afterCommand[15 - 3]);
  if (!Number.isFinite(user) || !Number.isFinite(system)) throw new Error(`unreadable /proc stat line: ${stat.slice(0, 120)}`);
  return user + system;
}

/** Peak resident set in bytes from the text of /proc/<pid>/status (its VmHWM line, in kB); 0 when absent. */
export function peakResidentBytesOfStatus(status: string): number {
  const match = /^VmHWM:\s+(\d+)\s+kB$/m.exec(status);
  return match ? Number(match[1]) * 1024 : 0;
}

/** The usage of `pids` now; processes that are gone (or /proc on another OS) count nothing. */
export function readProcessUsage(pids: readonly number[]): ProcessUsage {
  let ticks = 0;
  let rssMaxBytes = 0;
  for (const pid of pids) {
    try {
      ticks += cpuTicksOfStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
      rssMaxBytes = Math.max(rssMaxBytes, peakResidentBytesOfStatus(readFileSync(`/proc/${pid}/status`, 'utf8')));
    } catch {
      // Exited, or no /proc: nothing to count.
    }
  }
  return { cpuSeconds: ticks / TICKS_PER_SECOND, rssMaxBytes };
}
