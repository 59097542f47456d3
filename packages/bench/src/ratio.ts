import { formatRatio } from './format';
import type { BaselineResult, Ratio } from './results';

/** What identifies a baseline series of a run: its kind, sizes and in-flight count. */
export interface BaselineKey {
  kind: BaselineResult['kind'];
  payloadBytes: number;
  /** Only request/reply series have one; when given, it must match too. */
  replyBytes?: number;
  concurrency: number;
}

/** The baseline series of a run that a ratio is taken against, or undefined when the run did not measure it. */
export function findBaseline(baselines: readonly BaselineResult[], key: BaselineKey): BaselineResult | undefined {
  return baselines.find(
    (baseline) =>
      baseline.kind === key.kind &&
      baseline.payloadBytes === key.payloadBytes &&
      baseline.concurrency === key.concurrency &&
      (key.replyBytes === undefined || baseline.replyBytes === key.replyBytes),
  );
}

/**
 * `value / baseline` with the sentence that states it, built by `text` from the formatted quotient; null
 * when the baseline is not positive or the value not finite, so a degenerate series prints no ratio.
 */
export function ratioOf(text: (formattedRatio: string) => string, value: number, baseline: number): Ratio | null {
  if (!(baseline > 0) || !Number.isFinite(value)) return null;
  const quotient = value / baseline;
  return { text: text(formatRatio(quotient)), value, baseline, ratio: quotient };
}

/**
 * "; goal ≥ 0.50 ×: met" or "; goal ≥ 0.50 ×: not met" for a throughput quotient with a minimum. A quotient
 * just below the goal can print as the goal itself ("0.10 × … goal ≥ 0.10 ×: not met"): the text then says
 * how far below it is.
 */
export function minimumGoalText(quotient: number, minimum: number): string {
  const shown = formatRatio(quotient) === formatRatio(minimum) && quotient < minimum ? ` (${quotient.toPrecision(2)} ×)` : '';
  return `; goal ≥ ${formatRatio(minimum)} ×: ${quotient >= minimum ? 'met' : `not met${shown}`}`;
}
