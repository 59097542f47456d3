import { readFileSync } from 'node:fs';
import { formatSize } from './format';
import type { RoleProcess } from './process-usage';

/** The resident memory of one process from /proc/<pid>/status, in bytes: all of it, and its anonymous, file-backed and shared parts. */
export interface ResidentMemory {
  rssBytes: number;
  /** Private memory: V8's heap, Buffers and ArrayBuffers, native allocations. */
  anonBytes: number;
  /** Pages of mapped files (the node binary, shared libraries): the same pages for every process of one binary. */
  fileBytes: number;
  shmemBytes: number;
  /**
   * Proportional set size (/proc/<pid>/smaps_rollup): the private pages plus each shared page divided by the
   * processes mapping it, so a sum over processes counts the node binary once; 0 where unreadable.
   */
  pssBytes: number;
}

/** VmRSS, RssAnon, RssFile and RssShmem of the text of /proc/<pid>/status (kB lines), in bytes; null without VmRSS. */
export function residentMemoryOfStatus(status: string): ResidentMemory | null {
  const field = (name: string): number | null => {
    const match = new RegExp(`^${name}:\\s+(\\d+)\\s+kB$`, 'm').exec(status);
    return match ? Number(match[1]) * 1024 : null;
  };
  const rssBytes = field('VmRSS');
  if (rssBytes === null) return null;
  return { rssBytes, anonBytes: field('RssAnon') ?? 0, fileBytes: field('RssFile') ?? 0, shmemBytes: field('RssShmem') ?? 0, pssBytes: 0 };
}

/** The Pss line of the text of /proc/<pid>/smaps_rollup, in bytes; 0 without one. */
export function proportionalBytesOfSmapsRollup(text: string): number {
  const match = /^Pss:\s+(\d+)\s+kB$/m.exec(text);
  return match ? Number(match[1]) * 1024 : 0;
}

/** One reading of every watched process: when, and each process's resident memory. */
export interface MemorySample {
  atMs: number;
  processes: (RoleProcess & ResidentMemory)[];
}

/** What a run's memory came to: the peak of all processes together, and each role's peak process. */
export interface MemoryFigures {
  samples: number;
  /** The largest sum of every process's RSS in one sample, with the parts of that same sample. */
  together: ResidentMemory & { processes: number; atMs: number } | null;
  /** Per role, in the order roles first appear: how many processes, and the largest RSS one of them had in any sample. */
  roles: { role: string; processes: number; rssMaxBytes: number; anonMaxBytes: number }[];
  /** The sum of every process's RSS in the first and the last sample: what the run left behind. */
  firstTogetherBytes: number | null;
  lastTogetherBytes: number | null;
}

/** The figures of `samples` (see MemoryFigures); a sample with no process counts for nothing. */
export function memoryFiguresOf(samples: readonly MemorySample[]): MemoryFigures {
  const sum = (sample: MemorySample, part: keyof ResidentMemory): number => sample.processes.reduce((total, entry) => total + entry[part], 0);
  const counted = samples.filter((sample) => sample.processes.length > 0);
  let together: MemoryFigures['together'] = null;
  const roles = new Map<string, { pids: Set<number>; rssMaxBytes: number; anonMaxBytes: number }>();
  for (const sample of counted) {
    const rssBytes = sum(sample, 'rssBytes');
    if (together === null || rssBytes > together.rssBytes) {
      together = {
        rssBytes,
        anonBytes: sum(sample, 'anonBytes'),
        fileBytes: sum(sample, 'fileBytes'),
        shmemBytes: sum(sample, 'shmemBytes'),
        pssBytes: sum(sample, 'pssBytes'),
        processes: sample.processes.length,
        atMs: sample.atMs,
      };
    }
    for (const entry of sample.processes) {
      const role = roles.get(entry.role) ?? { pids: new Set<number>(), rssMaxBytes: 0, anonMaxBytes: 0 };
      role.pids.add(entry.pid);
      role.rssMaxBytes = Math.max(role.rssMaxBytes, entry.rssBytes);
      role.anonMaxBytes = Math.max(role.anonMaxBytes, entry.anonBytes);
      roles.set(entry.role, role);
    }
  }
  return {
    samples: counted.length,
    together,
    roles: [...roles].map(([role, { pids, rssMaxBytes, anonMaxBytes }]) => ({ role, processes: pids.size, rssMaxBytes, anonMaxBytes })),
    firstTogetherBytes: counted.length > 0 ? sum(counted[0]!, 'rssBytes') : null,
    lastTogetherBytes: counted.length > 0 ? sum(counted[counted.length - 1]!, 'rssBytes') : null,
  };
}

/** Reads the resident memory of `processes` now; a process that is gone (or /proc on another OS) gives none. */
export function readResidentMemory(processes: readonly RoleProcess[], now = Date.now()): MemorySample {
  const read: MemorySample['processes'] = [];
  for (const entry of processes) {
    try {
      const memory = residentMemoryOfStatus(readFileSync(`/proc/${entry.pid}/status`, 'utf8'));
      if (memory === null) continue;
      memory.pssBytes = proportionalBytesOfSmapsRollup(readFileSync(`/proc/${entry.pid}/smaps_rollup`, 'utf8'));
      read.push({ ...entry, ...memory });
    } catch {
      // Exited, or no /proc.
    }
  }
  return { atMs: now, processes: read };
}

/**
 * Samples the resident memory of the processes `watched` names every `intervalMs` until stopped: what all of
 * mink's processes hold together under the bench's load (issue 43's memory goal), not only each one's peak.
 */
export class MemoryWatch {
  private readonly samples: MemorySample[] = [];
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly watched: () => RoleProcess[], intervalMs: number) {
    this.sample();
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.timer.unref();
  }

  /** Stops sampling after one last sample, and returns the figures of them all. */
  stop(): MemoryFigures {
    clearInterval(this.timer);
    this.sample();
    return memoryFiguresOf(this.samples);
  }

  private sample(): void {
    this.samples.push(readResidentMemory(this.watched()));
  }
}

/**
 * The report's memory section: the peak of all mink processes together against `goalBytes` (with its
 * anonymous and file-backed parts: file pages are the node binary's, the same pages in every process), what
 * the run left at its end, and each role's largest process. Empty without figures.
 */
export function renderMemory(figures: MemoryFigures | null | undefined, goalBytes: number): string[] {
  if (!figures || figures.together === null) return [];
  const { together } = figures;
  const lines = [
    `mink memory (resident memory of all mink processes together, sampled every second over the run; ${figures.samples} samples)`,
    `  together at peak: ${formatSize(together.rssBytes)} in ${together.processes} processes (anonymous ${formatSize(together.anonBytes)}, file-backed ${formatSize(together.fileBytes)}; ` +
      `proportional ${formatSize(together.pssBytes)}, which counts shared pages once), ` +
      `goal ${formatSize(goalBytes)}: ${together.rssBytes <= goalBytes ? 'met' : `missed by ${(together.rssBytes / goalBytes).toFixed(2)} ×`}`,
    `  together at the first and last sample: ${formatSize(figures.firstTogetherBytes ?? 0)}, ${formatSize(figures.lastTogetherBytes ?? 0)}`,
  ];
  for (const role of figures.roles) {
    lines.push(`  ${role.role}: ${role.processes} process${role.processes === 1 ? '' : 'es'}, largest ${formatSize(role.rssMaxBytes)} (anonymous ${formatSize(role.anonMaxBytes)})`);
  }
  return lines;
}
