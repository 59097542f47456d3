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

/** One process to watch and the role it plays (a cluster role, or `load generator` for the bench itself). */
export interface RoleProcess {
  role: string;
  pid: number;
}

/** A reading of one process's CPU time: the whole process, and its main thread (the rest are V8's GC and compiler threads and libuv's pool). */
export interface RoleUsageSample extends RoleProcess {
  cpuSeconds: number;
  mainThreadCpuSeconds: number;
}

/** The CPU one role's processes used between two readings, per MB of rows, and the part of it their main threads used. */
export interface RoleCpuFigure {
  role: string;
  /** Processes of the role read both times (one restarted in between is left out: its pid changed). */
  processes: number;
  cpuSecondsPerMegabyte: number;
  /** The main threads' share of `cpuSecondsPerMegabyte`, between 0 and 1; null when the role used no CPU. */
  mainThreadShare: number | null;
}

/** Readings of `processes` now; a process that is gone (or /proc on another OS) gives none. */
export function readRoleUsage(processes: readonly RoleProcess[]): RoleUsageSample[] {
  const samples: RoleUsageSample[] = [];
  for (const { role, pid } of processes) {
    try {
      const cpuSeconds = cpuTicksOfStat(readFileSync(`/proc/${pid}/stat`, 'utf8')) / TICKS_PER_SECOND;
      // A process's main thread is the task whose id is the process id.
      const mainThreadCpuSeconds = cpuTicksOfStat(readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8')) / TICKS_PER_SECOND;
      samples.push({ role, pid, cpuSeconds, mainThreadCpuSeconds });
    } catch {
      // Exited, or no /proc: nothing to count.
    }
  }
  return samples;
}

/**
 * The CPU of each role between two readings, per MB of rows, in the order roles first appear in `after`:
 * only processes read both times count (a pid is one incarnation). Empty when `megabytes` is not positive.
 */
export function cpuByRole(before: readonly RoleUsageSample[], after: readonly RoleUsageSample[], megabytes: number): RoleCpuFigure[] {
  if (!(megabytes > 0)) return [];
  const earlier = new Map(before.map((sample) => [sample.pid, sample]));
  const byRole = new Map<string, { processes: number; cpuSeconds: number; mainThreadCpuSeconds: number }>();
  for (const sample of after) {
    const first = earlier.get(sample.pid);
    if (first === undefined || first.role !== sample.role) continue;
    const figure = byRole.get(sample.role) ?? { processes: 0, cpuSeconds: 0, mainThreadCpuSeconds: 0 };
    figure.processes += 1;
    figure.cpuSeconds += Math.max(0, sample.cpuSeconds - first.cpuSeconds);
    figure.mainThreadCpuSeconds += Math.max(0, sample.mainThreadCpuSeconds - first.mainThreadCpuSeconds);
    byRole.set(sample.role, figure);
  }
  return [...byRole].map(([role, { processes, cpuSeconds, mainThreadCpuSeconds }]) => ({
    role,
    processes,
    cpuSecondsPerMegabyte: cpuSeconds / megabytes,
    mainThreadShare: cpuSeconds > 0 ? Math.min(1, mainThreadCpuSeconds / cpuSeconds) : null,
  }));
}
