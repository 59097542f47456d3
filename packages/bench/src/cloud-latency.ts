import { renderTable } from '@mink/cli';
import { LIMITS } from '@mink/config';
import { describeS3Latency } from '@mink/devcluster';
import { formatMilliseconds } from './format';
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
 * The ack p99 a write path may have with this run's object store: twice one WAL object's PUT p99 plus one
 * commit's (a record may just miss an object and ride the next) and the WAL linger. Null without the
 * baselines it needs: the S3 PUT of a WAL object's size at the run's concurrency (else the largest PUT
 * measured) and the JetStream publish.
 */
export function ackP99GoalMs(baselines: readonly BaselineResult[], lingerMs: number = LIMITS.walLingerMs): { goalMs: number; putP99Ms: number; commitP99Ms: number } | null {
  const puts = baselines.filter((baseline) => baseline.kind === 's3-put' && baseline.operations > 0);
  const put = puts.find((baseline) => baseline.payloadBytes === LIMITS.walFlushBytes) ?? [...puts].sort((left, right) => right.payloadBytes - left.payloadBytes)[0];
  const commit = baselines.find((baseline) => baseline.kind === 'jetstream-publish' && baseline.operations > 0);
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
  const goal = ackP99GoalMs(result.baselines);
  const lines = [
    `cloud-like object storage: every S3 answer held back ${describeS3Latency(latency)} (--s3-latency; the baselines above include it)`,
    goal === null
      ? '  ack p99 goal: - (needs the S3 PUT and JetStream publish baselines)'
      : `  ack p99 goal: 2 × (S3 PUT p99 ${formatMilliseconds(goal.putP99Ms)} ms + commit p99 ${formatMilliseconds(goal.commitP99Ms)} ms) + linger ${LIMITS.walLingerMs} ms = ${formatMilliseconds(goal.goalMs)} ms`,
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
