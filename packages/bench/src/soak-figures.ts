import { formatSize } from './format';
import type { LatencySummary } from './stats';

/** One sample of all mink processes together: milliseconds since the soak began, RSS and its anonymous part summed, and each role's summed RSS. */
export interface SoakSample {
  atMs: number;
  rssBytes: number;
  anonBytes: number;
  roles: Record<string, number>;
}

export interface SoakResult {
  minutes: number;
  rowsPerSecondOffered: number;
  /** Rows acknowledged, and the rate that makes over the soak's time. */
  rows: number;
  rowsPerSecond: number;
  errors: number;
  firstError: string | null;
  /** Acknowledgement latency of the calls, over the whole soak and over its last minute (null without calls). */
  latency: LatencySummary | null;
  lastMinuteLatency: LatencySummary | null;
  samples: SoakSample[];
  growth: SoakGrowth | null;
}

/** What the memory did between the warm window (the minute after the warm-up) and the last minute: medians of the samples in each. */
export interface SoakGrowth {
  warmBytes: number;
  endBytes: number;
  /** (end - warm) / warm: 0.05 is the goal's 5 %. */
  ratio: number;
  warmAnonBytes: number;
  endAnonBytes: number;
  /** Per role, the same medians of that role's RSS summed over its processes. */
  roles: { role: string; warmBytes: number; endBytes: number; ratio: number }[];
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((left, right) => left - right);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/**
 * The growth of `samples` (in time order) from the warm window, [warmupMs, warmupMs + windowMs), to the last
 * `windowMs` of the soak: medians in each, so one sample taken just before or after a collection moves
 * neither end. Null when either window holds no sample or the windows overlap (a soak too short to tell).
 */
export function soakGrowthOf(samples: readonly SoakSample[], warmupMs: number, windowMs: number): SoakGrowth | null {
  if (samples.length === 0) return null;
  const lastAtMs = samples[samples.length - 1]!.atMs;
  const endFromMs = lastAtMs - windowMs;
  if (endFromMs < warmupMs + windowMs) return null;
  const warm = samples.filter((sample) => sample.atMs >= warmupMs && sample.atMs < warmupMs + windowMs);
  const end = samples.filter((sample) => sample.atMs > endFromMs);
  if (warm.length === 0 || end.length === 0) return null;
  const warmBytes = median(warm.map((sample) => sample.rssBytes));
  const endBytes = median(end.map((sample) => sample.rssBytes));
  const roleNames = [...new Set(samples.flatMap((sample) => Object.keys(sample.roles)))];
  return {
    warmBytes,
    endBytes,
    ratio: (endBytes - warmBytes) / warmBytes,
    warmAnonBytes: median(warm.map((sample) => sample.anonBytes)),
    endAnonBytes: median(end.map((sample) => sample.anonBytes)),
    roles: roleNames.map((role) => {
      const roleWarm = median(warm.map((sample) => sample.roles[role] ?? 0));
      const roleEnd = median(end.map((sample) => sample.roles[role] ?? 0));
      return { role, warmBytes: roleWarm, endBytes: roleEnd, ratio: roleWarm > 0 ? (roleEnd - roleWarm) / roleWarm : 0 };
    }),
  };
}

/** Calls due at `elapsedMs` into a soak offering `rowsPerSecond` in calls of `batchRows`, of which `sent` were sent: how many to send now. */
export function callsDue(elapsedMs: number, rowsPerSecond: number, batchRows: number, sent: number): number {
  return Math.max(0, Math.floor((elapsedMs / 1_000) * (rowsPerSecond / batchRows)) - sent);
}


/** The report's soak section: the load it carried, and the memory of mink's processes from the warm window to the end against the goal. */
export function renderSoak(soak: SoakResult, goal: number): string[] {
  const lines = [
    `mink soak (appends through the gateway for ${soak.minutes} min; resident memory of all mink processes together, medians of the minute after the first and of the last minute)`,
    `  load: ${Math.round(soak.rowsPerSecond)} rows/s acknowledged of ${soak.rowsPerSecondOffered} offered, ${soak.rows} rows, ${soak.errors} errors${soak.firstError === null ? '' : ` (first: ${soak.firstError})`}`,
  ];
  const latency = (summary: LatencySummary | null): string => (summary === null ? 'none' : `p50 ${summary.p50Ms.toFixed(0)} ms, p99 ${summary.p99Ms.toFixed(0)} ms`);
  lines.push(`  ack latency per call: ${latency(soak.latency)}; in the last minute ${latency(soak.lastMinuteLatency)}`);
  const { growth } = soak;
  if (growth === null) {
    lines.push('  memory: too short to tell (the first minute is warm-up, then a minute on each side)');
    return lines;
  }
  const percent = (ratio: number): string => `${ratio >= 0 ? '+' : ''}${(ratio * 100).toFixed(1)} %`;
  lines.push(
    `  together: ${formatSize(growth.warmBytes)} → ${formatSize(growth.endBytes)}, ${percent(growth.ratio)} (anonymous ${formatSize(growth.warmAnonBytes)} → ${formatSize(growth.endAnonBytes)}), ` +
      `goal at most ${percent(goal)}: ${growth.ratio <= goal ? 'met' : 'missed'}`,
  );
  for (const role of growth.roles) lines.push(`  ${role.role}: ${formatSize(role.warmBytes)} → ${formatSize(role.endBytes)}, ${percent(role.ratio)}`);
  return lines;
}
