import { renderTable } from '../render';
import { formatCount, formatMegabytesPerSecond, formatMilliseconds, formatRatio, formatSeconds, formatSize } from './format';
import type { AppendResult, BaselineResult, BenchResult, FailoverResult, Ratio, SpreadMs } from './results';

/** The baselines ratios are taken against, found in a run's series by kind, size and concurrency. */
function findBaseline(baselines: readonly BaselineResult[], kind: BaselineResult['kind'], payloadBytes: number, concurrency: number): BaselineResult | undefined {
  return baselines.find((baseline) => baseline.kind === kind && baseline.payloadBytes === payloadBytes && baseline.concurrency === concurrency);
}

function ratio(text: (formattedRatio: string) => string, value: number, baseline: number): Ratio | null {
  if (!(baseline > 0) || !Number.isFinite(value)) return null;
  const quotient = value / baseline;
  return { text: text(formatRatio(quotient)), value, baseline, ratio: quotient };
}

export interface RatioInputs {
  baselines: readonly BaselineResult[];
  appends: readonly AppendResult[];
  /** The in-flight count of the concurrent series (the run's --concurrency). */
  concurrency: number;
  /** Size of the S3 baseline standing for the run's average WAL object; null when none was measured. */
  averageWalObjectBytes: number | null;
  /** Size of the S3 baseline standing for a full WAL object (`LIMITS.walFlushBytes`). */
  fullWalObjectBytes: number;
  jetStreamPayloadBytes: number;
}

/**
 * Each mink figure divided by the baseline that bounds it from below in the same run:
 * - the median ack against one sequential PUT of an average WAL object plus one sequential JetStream
 *   publish, since an append is acknowledged after its object is uploaded and its `CommitWal` applied;
 * - the p99 ack against the p99 of a sequential PUT of a full WAL object;
 * - the WAL bytes written per second against raw PUTs of the same size with the same concurrency;
 * - the gateway's rows per second against the client's, the cost of the HTTP hop.
 * A ratio whose baseline is missing (an interrupted run) is left out.
 */
export function computeRatios(inputs: RatioInputs): Ratio[] {
  const ratios: (Ratio | null)[] = [];
  const { baselines, concurrency } = inputs;
  const jetStreamSequential = findBaseline(baselines, 'jetstream-publish', inputs.jetStreamPayloadBytes, 1);
  const fullPutSequential = findBaseline(baselines, 's3-put', inputs.fullWalObjectBytes, 1);
  const averageSize = inputs.averageWalObjectBytes;
  const averagePutSequential = averageSize === null ? undefined : findBaseline(baselines, 's3-put', averageSize, 1);
  const averagePutConcurrent = averageSize === null ? undefined : findBaseline(baselines, 's3-put', averageSize, concurrency);
  for (const append of inputs.appends) {
    const name = `${append.path} append`;
    if (averagePutSequential && jetStreamSequential) {
      ratios.push(
        ratio(
          (quotient) =>
            `${name}: ${formatCount(append.rowsPerSecond)} rows/s, p50 ack ${formatMilliseconds(append.latency.p50Ms)} ms = ${quotient} × ` +
            `(S3 PUT p50 (avg WAL object, ${formatSize(averageSize!)}) + JetStream publish p50)`,
          append.latency.p50Ms,
          averagePutSequential.latency.p50Ms + jetStreamSequential.latency.p50Ms,
        ),
      );
    }
    if (fullPutSequential) {
      ratios.push(
        ratio(
          (quotient) => `${name}: p99 ack ${formatMilliseconds(append.latency.p99Ms)} ms = ${quotient} × raw S3 PUT p99 (${formatSize(inputs.fullWalObjectBytes)})`,
          append.latency.p99Ms,
          fullPutSequential.latency.p99Ms,
        ),
      );
    }
    if (averagePutConcurrent && append.wal.objects > 0) {
      ratios.push(
        ratio(
          (quotient) =>
            `${name}: WAL writes ${formatMegabytesPerSecond(append.wal.bytesPerSecond)} MB/s = ${quotient} × raw S3 PUT MB/s ` +
            `(avg WAL object, ${concurrency} in flight)`,
          append.wal.bytesPerSecond,
          averagePutConcurrent.bytesPerSecond,
        ),
      );
    }
  }
  const gateway = inputs.appends.find((append) => append.path === 'gateway');
  const client = inputs.appends.find((append) => append.path === 'client');
  if (gateway && client) {
    ratios.push(
      ratio((quotient) => `gateway append rows/s = ${quotient} × client append rows/s`, gateway.rowsPerSecond, client.rowsPerSecond),
    );
  }
  return ratios.filter((entry): entry is Ratio => entry !== null);
}

/** The human-readable report: machine, settings, the two tables of figures, then the ratios. */
export function renderReport(result: BenchResult): string {
  const { machine, options, cluster } = result;
  const lines: string[] = [];
  lines.push(
    `machine: ${machine.cpus} cpus (${machine.cpuModel}), ${formatSize(machine.totalMemoryBytes)} memory, node ${machine.nodeVersion}, ` +
      `${machine.platform} ${machine.release}, load average ${machine.loadAverageAtStart.toFixed(2)} at start`,
  );
  lines.push(
    `cluster: ${cluster.nodes} data nodes, ${cluster.coordinators} coordinators, lease_ttl ${formatSeconds(cluster.leaseTtlMs)} s, ` +
      `coordinator_tick ${formatSeconds(cluster.coordinatorTickMs)} s, one log table of ${cluster.buckets} buckets; ` +
      `${formatCount(options.rows)} rows per scenario in calls of ${formatCount(options.batchRows)} rows, ${options.concurrency} in flight` +
      (options.seconds === null ? '' : `, at most ${options.seconds} s per scenario`),
  );
  if (result.baselines.length > 0) {
    lines.push('', 'baselines (same run, same servers)');
    lines.push(
      indent(
        renderTable(
          ['SERIES', 'IN FLIGHT', 'OPS', 'OPS/S', 'MB/S', 'P50 MS', 'P99 MS', 'MAX MS'],
          result.baselines.map((baseline) => [
            baseline.label,
            String(baseline.concurrency),
            formatCount(baseline.operations) + (baseline.failures > 0 ? ` (${baseline.failures} failed)` : ''),
            formatCount(baseline.operationsPerSecond),
            formatMegabytesPerSecond(baseline.bytesPerSecond),
            formatMilliseconds(baseline.latency.p50Ms),
            formatMilliseconds(baseline.latency.p99Ms),
            formatMilliseconds(baseline.latency.maximumMs),
          ]),
        ),
      ),
    );
  }
  if (result.appends.length > 0) {
    lines.push('', 'mink append (latency per append call, until acknowledged)');
    lines.push(
      indent(
        renderTable(
          ['PATH', 'ROWS', 'CALLS', 'ROWS/S', 'JSON MB/S', 'P50 MS', 'P99 MS', 'MAX MS', 'WAL OBJECTS', 'AVG WAL OBJECT', 'WAL MB/S'],
          result.appends.map((append) => [
            append.path,
            formatCount(append.rows) + (append.stoppedEarly ? ' (stopped early)' : ''),
            formatCount(append.calls) + (append.failedCalls > 0 ? ` (${append.failedCalls} failed)` : ''),
            formatCount(append.rowsPerSecond),
            formatMegabytesPerSecond(append.payloadBytesPerSecond),
            formatMilliseconds(append.latency.p50Ms),
            formatMilliseconds(append.latency.p99Ms),
            formatMilliseconds(append.latency.maximumMs),
            formatCount(append.wal.objects),
            append.wal.objects > 0 ? formatSize(append.wal.averageObjectBytes) : '-',
            formatMegabytesPerSecond(append.wal.bytesPerSecond),
          ]),
        ),
      ),
    );
    for (const append of result.appends) {
      if (append.firstFailureMessage !== null) lines.push(`  ${append.path}: first failure: ${append.firstFailureMessage}`);
    }
  }
  if (result.ratios.length > 0) {
    lines.push('', 'ratios against the baselines of this run');
    for (const entry of result.ratios) lines.push(`  ${entry.text}`);
  }
  if (result.failover !== null) lines.push('', ...renderFailover(result.failover));
  lines.push('', `run took ${formatCount(result.durationMs / 1_000)} s${result.interrupted ? ' (interrupted: figures are partial)' : ''}`);
  return `${lines.join('\n')}\n`;
}

/** The failover section: a table of the trials' spread per fault, then each median as a ratio to lease_ttl + coordinator_tick. */
function renderFailover(failover: FailoverResult): string[] {
  const spread = (value: SpreadMs | null): string[] =>
    value === null ? ['-', '-', '-'] : [formatSeconds(value.minimumMs), formatSeconds(value.medianMs), formatSeconds(value.maximumMs)];
  const lines = [
    `failover of bucket ${failover.bucket} (unavailable = from the signal to its leader until the next acknowledged append; ` +
      `probe: one row, ${failover.probeIntervalMs} ms between appends; lease_ttl ${formatSeconds(failover.leaseTtlMs)} s + ` +
      `coordinator_tick ${formatSeconds(failover.coordinatorTickMs)} s = ${formatSeconds(failover.detectionBoundMs)} s)`,
    indent(
      renderTable(
        ['FAULT', 'TRIALS', 'UNAVAILABLE MIN S', 'MEDIAN S', 'MAX S', 'LONGEST GAP MIN S', 'MEDIAN S', 'MAX S', 'FAILED CALLS'],
        failover.faults.map((summary) => [
          summary.label,
          String(summary.trials.length),
          ...spread(summary.unavailable),
          ...spread(summary.longestGap),
          formatCount(summary.trials.reduce((sum, trial) => sum + trial.failedCalls, 0)),
        ]),
      ),
    ),
  ];
  for (const summary of failover.faults) {
    if (summary.ratio !== null) lines.push(`  ${summary.ratio.text}`);
  }
  return lines;
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n');
}
