import { renderTable } from '@mink/cli';
import { LIMITS } from '@mink/config';
import { describeS3Latency } from '@mink/devcluster';
import { BENCH_BASELINES } from './bench-limits';
import { formatMilliseconds } from './format';
import { findBaseline } from './ratio';
import type { BaselineResult, BenchResult } from './results';
import type { LatencySummary } from './stats';

/**
 * Produce latencies that object-storage-native streaming systems publish for their own setups (cloud S3,
 * their own clients and loads): the reference the issue names, printed beside mink's figures taken with
 * `--s3-latency`, never compared as a ratio (different machines, loads and stores).
 */
export const PUBLISHED_PRODUCE_LATENCIES: readonly { system: string; p50Ms: number | null; p99Ms: number }[] = [
  { system: 'WarpStream (published)', p50Ms: null, p99Ms: 400 },
  { system: 'Bufstream (published)', p50Ms: 260, p99Ms: 500 },
];

/** One acknowledged-write series of the run: its label and its per-call latency. */
export interface AckSeries {
  label: string;
  latency: LatencySummary;
}

/**
 * The ack p99 a write path may have with this run's object store, as the write-path ratios take it: twice a
 * full WAL object's PUT p99 plus one commit's (a record may just miss an object and ride the next), both at
 * the run's concurrency, plus the WAL linger. Null without those two baselines.
 */
export function ackP99GoalMs(baselines: readonly BaselineResult[], concurrency: number, lingerMs: number = LIMITS.walLingerMs): { goalMs: number; putP99Ms: number; commitP99Ms: number } | null {
  const put = findBaseline(baselines, { kind: 's3-put', payloadBytes: LIMITS.walFlushBytes, concurrency });
  const commit = findBaseline(baselines, { kind: 'jetstream-publish', payloadBytes: BENCH_BASELINES.jetStreamPayloadBytes, concurrency });
  if (put === undefined || commit === undefined) return null;
  return { goalMs: 2 * (put.latency.p99Ms + commit.latency.p99Ms) + lingerMs, putP99Ms: put.latency.p99Ms, commitP99Ms: commit.latency.p99Ms };
}

/** The write series of a result whose acknowledgements are compared: every mink append path, and Kafka's idempotent produce. */
export function ackSeriesOf(result: Pick<BenchResult, 'appends' | 'kafka'>): AckSeries[] {
  const appends = result.appends.filter((append) => append.path !== 'floor' && append.calls > 0).map((append) => ({ label: `${append.path} append`, latency: append.latency }));
  const produce = result.kafka !== null && result.kafka.produce.sends > 0 ? [{ label: 'Kafka produce (kafkajs, idempotent)', latency: result.kafka.produce.latency }] : [];
  return [...appends, ...produce];
}

/**
 * The section of a run with `--s3-latency`: the latency the S3 server added, the ack p50/p99 of each write
 * path against the goal of `ackP99GoalMs`, and the published figures beside them. Empty without the option.
 */
export function renderCloudLatency(result: Pick<BenchResult, 'options' | 'baselines' | 'appends' | 'kafka'>): string[] {
  const latency = result.options.s3Latency;
  if (latency === undefined) return [];
  const goal = ackP99GoalMs(result.baselines, result.options.concurrency);
  const lines = [
    `cloud-like object storage: every S3 answer held back ${describeS3Latency(latency)} (--s3-latency; the baselines above include it)`,
    goal === null
      ? '  ack p99 goal: - (needs the S3 PUT and JetStream publish baselines)'
      : `  ack p99 goal: 2 × (S3 PUT p99 ${formatMilliseconds(goal.putP99Ms)} ms + JetStream publish p99 ${formatMilliseconds(goal.commitP99Ms)} ms, ${result.options.concurrency} in flight) + linger ${LIMITS.walLingerMs} ms = ${formatMilliseconds(goal.goalMs)} ms`,
  ];
  const rows = ackSeriesOf(result).map((series) => [
    series.label,
    formatMilliseconds(series.latency.p50Ms),
    formatMilliseconds(series.latency.p99Ms),
    goal === null ? '-' : series.latency.p99Ms <= goal.goalMs ? 'met' : `missed by ${formatMilliseconds(series.latency.p99Ms - goal.goalMs)} ms`,
  ]);
  for (const published of PUBLISHED_PRODUCE_LATENCIES) rows.push([published.system, published.p50Ms === null ? '-' : String(published.p50Ms), String(published.p99Ms), '(their setup, not this run)']);
  lines.push(
    renderTable(['ACKNOWLEDGED WRITES', 'P50 MS', 'P99 MS', 'P99 GOAL'], rows)
      .split('\n')
      .map((line) => `  ${line}`)
      .join('\n'),
  );
  return lines;
}
