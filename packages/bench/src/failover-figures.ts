import { formatRatio, formatSeconds } from './format';
import type { FailoverFault, FailoverSummary, FailoverTrial, SpreadMs } from './results';
import { percentile } from './stats';

/** What the probe's acknowledgements say about one fault. */
export interface TrialFigures {
  /** Signal to first acknowledgement after it; null when none came. */
  unavailableMs: number | null;
  /** Longest time between consecutive acknowledgements from the last one before the signal on; null when none came after it. */
  longestGapMs: number | null;
}

/** The names faults are printed under. */
export const FAULT_LABELS: Readonly<Record<FailoverFault, string>> = { 'kill-9': 'kill -9', sigterm: 'SIGTERM' };

/**
 * The unavailability and longest gap of one trial, from the times (any order, `performance.now()`
 * milliseconds) at which the probe's appends were acknowledged and the time the signal was sent. An
 * acknowledgement at exactly the signal's time counts as before it (the signal goes while a call is in
 * flight, so the acknowledgement of that call comes after it). With no acknowledgement before the signal,
 * the gap is counted from the signal.
 */
export function measureTrial(acknowledgedAtMs: readonly number[], signalMs: number): TrialFigures {
  const sorted = [...acknowledgedAtMs].sort((a, b) => a - b);
  const after = sorted.filter((time) => time > signalMs);
  if (after.length === 0) return { unavailableMs: null, longestGapMs: null };
  const before = sorted.filter((time) => time <= signalMs);
  let previousMs = before.length > 0 ? before[before.length - 1]! : signalMs;
  let longestGapMs = 0;
  for (const time of after) {
    longestGapMs = Math.max(longestGapMs, time - previousMs);
    previousMs = time;
  }
  return { unavailableMs: after[0]! - signalMs, longestGapMs };
}

/** Min, median (nearest rank, so a measured trial) and max; null for no samples. */
export function spreadOf(samplesMs: readonly number[]): SpreadMs | null {
  if (samplesMs.length === 0) return null;
  return { minimumMs: percentile(samplesMs, 0), medianMs: percentile(samplesMs, 0.5), maximumMs: percentile(samplesMs, 1) };
}

/**
 * The trials of one fault: the spread of the recovered ones and the median unavailability as a ratio to
 * `lease_ttl + coordinator_tick` (`detectionBoundMs`), the longest a dead leader can go unnoticed. Trials that
 * never recovered are kept in `trials` and left out of the figures.
 */
export function summarizeFailover(fault: FailoverFault, trials: readonly FailoverTrial[], detectionBoundMs: number): FailoverSummary {
  if (!(detectionBoundMs > 0)) throw new Error(`the detection bound must be positive, got ${detectionBoundMs} ms`);
  const label = FAULT_LABELS[fault];
  const unavailable = spreadOf(trials.flatMap((trial) => (trial.unavailableMs === null ? [] : [trial.unavailableMs])));
  const longestGap = spreadOf(trials.flatMap((trial) => (trial.longestGapMs === null ? [] : [trial.longestGapMs])));
  const ratio =
    unavailable === null
      ? null
      : {
          text: `${label}: median ${formatSeconds(unavailable.medianMs)} s = ${formatRatio(unavailable.medianMs / detectionBoundMs)} × (lease_ttl + coordinator_tick)`,
          value: unavailable.medianMs,
          baseline: detectionBoundMs,
          ratio: unavailable.medianMs / detectionBoundMs,
        };
  return { fault, label, trials: [...trials], unavailable, longestGap, ratio };
}
