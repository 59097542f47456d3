import { renderTable } from '@mink/cli';
import { FAULT_LABELS } from './failover-figures';
import { BENCH_FAILOVER, BENCH_KAFKA, BENCH_MEMORY, BENCH_SOAK } from './bench-limits';
import { renderCloudLatency } from './cloud-latency';
import { renderMemory } from './memory-watch';
import { renderSoak } from './soak-figures';
import { formatCount, formatMegabytes, formatMegabytesPerSecond, formatMilliseconds, formatRatio, formatSeconds, formatSize } from './format';
import { findBaseline, ratioOf } from './ratio';
import type {
  ApplyCostResult,
  BaselineResult,
  BenchResult,
  FailoverResult,
  KafkaProduceResult,
  KafkaResult,
  LongPollResult,
  LookupResult,
  MetadataResult,
  Ratio,
  RestoreResult,
  ScanResult,
  SpreadMs,
  TieringResult,
  TieringRoundsSummary,
  WriteScenarioResult,
} from './results';
import { describeCompaction, SCAN_FORMAT_LABELS } from './scan-figures';
import { consumeLabelOf } from './kafka-figures';
import { memoryPerBucket } from './metadata-figures';

/** One write scenario as the ratios see it. */
export interface WriteRatioInput {
  /** "gateway append", "client append", "client put". */
  name: string;
  write: WriteScenarioResult;
  /** Size of the S3 PUT baseline standing for this scenario's average WAL object; null when none was measured. */
  averageWalObjectBytes: number | null;
}

export interface RatioInputs {
  baselines: readonly BaselineResult[];
  writes: readonly WriteRatioInput[];
  /** The in-flight count of the concurrent series (the run's --concurrency). */
  concurrency: number;
  /** Size of the S3 baseline standing for a full WAL object (`LIMITS.walFlushBytes`). */
  fullWalObjectBytes: number;
  jetStreamPayloadBytes: number;
  /** The WAL writer's linger (`LIMITS.walLingerMs`), part of the ack bound of the write-path issue. */
  lingerMs?: number;
}

/**
 * Pairs of write scenarios whose rows per second are compared: the cost of the HTTP hop, and of a put over
 * an append; and each append path against the floor write path, the least work the write contract needs
 * (write-floor.ts), i.e. the share of what this machine allows at this load that the path reaches.
 */
const RATE_COMPARISONS: readonly (readonly [string, string])[] = [
  ['gateway append', 'client append'],
  ['client arrow append', 'client append'],
  ['client put', 'client append'],
  ['gateway append', 'floor append'],
  ['client append', 'floor append'],
  ['client arrow append', 'floor append'],
];

/**
 * The size of the average WAL object of some write scenarios (a whole number of bytes, at least 1), the
 * size their S3 PUT baseline is measured at; null when they wrote none.
 */
export function averageWalObjectBytes(writes: readonly WriteScenarioResult[]): number | null {
  const objects = writes.reduce((sum, write) => sum + write.wal.objects, 0);
  if (objects === 0) return null;
  return Math.max(1, Math.round(writes.reduce((sum, write) => sum + write.wal.bytes, 0) / objects));
}

/**
 * Each write figure divided by the baseline that bounds it from below in the same run:
 * - the median ack against one sequential PUT of an average WAL object plus one sequential JetStream
 *   publish, since an append or put is acknowledged after its object is uploaded and its `CommitWal` applied;
 * - the p99 ack against the p99 of a sequential PUT of a full WAL object;
 * - the WAL bytes written per second against raw PUTs of the same size with the same concurrency;
 * - the gateway's append rows per second against the client's (the cost of the HTTP hop), and the client's
 *   put rows per second against its append rows per second (the cost of keeping a primary key).
 * A ratio whose baseline is missing (an interrupted run, a group of figures not selected) is left out.
 */
export function computeRatios(inputs: RatioInputs): Ratio[] {
  const ratios: (Ratio | null)[] = [];
  const { baselines, concurrency } = inputs;
  const jetStreamSequential = findBaseline(baselines, { kind: 'jetstream-publish', payloadBytes: inputs.jetStreamPayloadBytes, concurrency: 1 });
  const fullPutSequential = findBaseline(baselines, { kind: 's3-put', payloadBytes: inputs.fullWalObjectBytes, concurrency: 1 });
  const fullPutConcurrent = findBaseline(baselines, { kind: 's3-put', payloadBytes: inputs.fullWalObjectBytes, concurrency });
  const jetStreamConcurrent = findBaseline(baselines, { kind: 'jetstream-publish', payloadBytes: inputs.jetStreamPayloadBytes, concurrency });
  for (const { name, write, averageWalObjectBytes: averageSize } of inputs.writes) {
    const averagePutSequential = averageSize === null ? undefined : findBaseline(baselines, { kind: 's3-put', payloadBytes: averageSize, concurrency: 1 });
    const averagePutConcurrent = averageSize === null ? undefined : findBaseline(baselines, { kind: 's3-put', payloadBytes: averageSize, concurrency });
    if (averagePutSequential && jetStreamSequential) {
      ratios.push(
        ratioOf(
          (quotient) =>
            `${name}: ${formatCount(write.rowsPerSecond)} rows/s, p50 ack ${formatMilliseconds(write.latency.p50Ms)} ms = ${quotient} × ` +
            `(S3 PUT p50 (avg WAL object, ${formatSize(averageSize!)}) + JetStream publish p50)`,
          write.latency.p50Ms,
          averagePutSequential.latency.p50Ms + jetStreamSequential.latency.p50Ms,
        ),
      );
    }
    if (fullPutSequential) {
      ratios.push(
        ratioOf(
          (quotient) => `${name}: p99 ack ${formatMilliseconds(write.latency.p99Ms)} ms = ${quotient} × raw S3 PUT p99 (${formatSize(inputs.fullWalObjectBytes)})`,
          write.latency.p99Ms,
          fullPutSequential.latency.p99Ms,
        ),
      );
    }
    if (fullPutConcurrent) {
      // The write-path issue's throughput goal: rows sent per second (as JSON bytes) against raw full-object PUTs.
      ratios.push(
        ratioOf(
          (quotient) =>
            `${name}: ${formatMegabytesPerSecond(write.payloadBytesPerSecond)} MB/s of rows (JSON bytes) = ${quotient} × raw S3 PUT MB/s ` +
            `(${formatSize(inputs.fullWalObjectBytes)}, ${concurrency} in flight)`,
          write.payloadBytesPerSecond,
          fullPutConcurrent.bytesPerSecond,
        ),
      );
      if (jetStreamConcurrent && inputs.lingerMs !== undefined) {
        // Its latency goal: p99 ack within 2 × (raw S3 PUT p99 + JetStream publish p99) + linger, both at this run's concurrency.
        const boundMs = 2 * (fullPutConcurrent.latency.p99Ms + jetStreamConcurrent.latency.p99Ms) + inputs.lingerMs;
        ratios.push(
          ratioOf(
            (quotient) =>
              `${name}: p99 ack ${formatMilliseconds(write.latency.p99Ms)} ms = ${quotient} × (2 × (S3 PUT p99 + JetStream publish p99, ${concurrency} in flight) + linger ${inputs.lingerMs} ms = ${formatMilliseconds(boundMs)} ms)`,
            write.latency.p99Ms,
            boundMs,
          ),
        );
      }
    }
    if (averagePutConcurrent && write.wal.objects > 0) {
      ratios.push(
        ratioOf(
          (quotient) =>
            `${name}: WAL writes ${formatMegabytesPerSecond(write.wal.bytesPerSecond)} MB/s = ${quotient} × raw S3 PUT MB/s ` +
            `(avg WAL object, ${concurrency} in flight)`,
          write.wal.bytesPerSecond,
          averagePutConcurrent.bytesPerSecond,
        ),
      );
    }
  }
  for (const [numeratorName, denominatorName] of RATE_COMPARISONS) {
    const numerator = inputs.writes.find((input) => input.name === numeratorName);
    const denominator = inputs.writes.find((input) => input.name === denominatorName);
    if (numerator && denominator) {
      ratios.push(
        ratioOf((quotient) => `${numeratorName} rows/s = ${quotient} × ${denominatorName} rows/s`, numerator.write.rowsPerSecond, denominator.write.rowsPerSecond),
      );
    }
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
  const logTable = options.figures.some((group) => group !== 'metadata' && group !== 'scan' && group !== 'kafka' && group !== 'tiering');
  lines.push(
    `cluster: ${cluster.nodes} data nodes, ${cluster.coordinators} coordinators, lease_ttl ${formatSeconds(cluster.leaseTtlMs)} s, ` +
      `coordinator_tick ${formatSeconds(cluster.coordinatorTickMs)} s` +
      (!logTable
        ? ''
        : `, one log table of ${cluster.buckets} buckets; ${formatCount(options.rows)} rows per append scenario in calls of ${formatCount(options.batchRows)} rows, ` +
          `${options.concurrency} in flight`) +
      (options.seconds === null ? '' : `, at most ${options.seconds} s per scenario`),
  );
  lines.push(`figures: ${options.figures.join(', ')}`);
  if (options.figures.includes('pk')) {
    lines.push(
      `pk: ${formatCount(options.pkKeys)} keys put in calls of ${formatCount(options.batchRows)} rows, then looked up; ` +
        `${formatCount(options.restoreKeys)} keys loaded into a one-bucket table whose restore is timed`,
    );
  }
  if (options.figures.includes('kafka')) {
    lines.push(
      `kafka: ${formatCount(options.kafkaRecords)} records produced through kafkajs to one topic by idempotent producers, as many again by transactional ones, ` +
        `then all consumed from the beginning (read_committed) twice: committing every ${formatSeconds(BENCH_KAFKA.consumeCommitIntervalMs)} s, and after every batch; the floor write path is measured under the append scenarios' load to compare their records/s with`,
    );
  }
  if (options.figures.includes('scan')) {
    lines.push(
      `scan: ${formatCount(options.scanRows)} rows appended to a log table of {id, payload} in calls of ${formatCount(options.batchRows)} rows, then scanned as JSON, NDJSON ` +
        `and Arrow, cold and hot; ${formatCount(options.longPolls)} long polls`,
    );
  }
  if (options.figures.includes('tiering')) {
    lines.push(
      `tiering: ${formatCount(options.tieringRows)} rows appended to a log table of {id, payload} with the lake off, then the lake enabled and its catch-up timed; ` +
        `then appends at half the load's rows/s while the lake's freshness lag is sampled`,
    );
  }
  if (options.figures.includes('metadata')) {
    lines.push(`metadata: stages until ${options.metadataBuckets.map(formatCount).join(', ')} buckets of tables created through the gateway`);
  }
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
    lines.push(
      '',
      'mink append (latency per append call, until acknowledged; CPU s/MB = CPU seconds of all mink processes per MB of JSON rows, RSS max = their largest peak RSS; ' +
        'floor: not mink, leader processes that only upload and commit (the floor write path), their CPU and RSS in those columns)',
    );
    lines.push(...renderWrites(result.appends.map((append) => ({ label: append.path, write: append }))));
  }
  if (result.put !== null) {
    lines.push('', `mink put of new keys into PK table ${result.put.table} of ${result.put.buckets} buckets (latency per put call, until acknowledged)`);
    lines.push(...renderWrites([{ label: result.put.path, write: result.put }]));
  }
  if (result.lookups.length > 0) lines.push('', ...renderLookups(result.lookups));
  if (result.restore !== null) lines.push('', ...renderRestore(result.restore));
  if (result.kafka !== null) lines.push('', ...renderKafka(result.kafka));
  if (result.scan !== null) lines.push('', ...renderScan(result.scan));
  if (result.tiering !== null) lines.push('', ...renderTiering(result.tiering));
  if (result.soak) lines.push('', ...renderSoak(result.soak, BENCH_SOAK.growthGoal));
  const cloud = renderCloudLatency(result);
  if (cloud.length > 0) lines.push('', ...cloud);
  const memory = renderMemory(result.memory, BENCH_MEMORY.togetherGoalBytes);
  if (memory.length > 0) lines.push('', ...memory);
  if (result.ratios.length > 0) {
    lines.push('', 'ratios against the baselines of this run');
    for (const entry of result.ratios) lines.push(`  ${entry.text}`);
  }
  if (result.failover !== null) lines.push('', ...renderFailover(result.failover));
  if (result.metadata !== null) lines.push('', ...renderMetadata(result.metadata, cluster.leaseTtlMs), ...renderApplyCosts(result.metadata.applyCosts ?? []));
  lines.push('', `run took ${formatCount(result.durationMs / 1_000)} s${result.interrupted ? ' (interrupted: figures are partial)' : ''}`);
  return `${lines.join('\n')}\n`;
}

/** A table of write scenarios (append or put), one row each, then the first failure of each that had one. */
function renderWrites(writes: readonly { label: string; write: WriteScenarioResult }[]): string[] {
  const lines = [
    indent(
      renderTable(
        ['PATH', 'ROWS', 'CALLS', 'ROWS/S', 'JSON MB/S', 'P50 MS', 'P99 MS', 'MAX MS', 'WAL OBJECTS', 'AVG WAL OBJECT', 'WAL MB/S', 'CPU S/MB', 'RSS MAX'],
        writes.map(({ label, write }) => [
          label,
          formatCount(write.rows) + (write.stoppedEarly ? ' (stopped early)' : ''),
          formatCount(write.calls) + (write.failedCalls > 0 ? ` (${write.failedCalls} failed)` : ''),
          formatCount(write.rowsPerSecond),
          formatMegabytesPerSecond(write.payloadBytesPerSecond),
          formatMilliseconds(write.latency.p50Ms),
          formatMilliseconds(write.latency.p99Ms),
          formatMilliseconds(write.latency.maximumMs),
          formatCount(write.wal.objects),
          write.wal.objects > 0 ? formatSize(write.wal.averageObjectBytes) : '-',
          formatMegabytesPerSecond(write.wal.bytesPerSecond),
          write.cpuSecondsPerMegabyte == null ? '-' : write.cpuSecondsPerMegabyte.toFixed(2),
          write.rssMaxBytes == null ? '-' : formatSize(write.rssMaxBytes),
        ]),
      ),
    ),
  ];
  for (const { label, write } of writes) {
    const elsewhere = cpuElsewhereLine(write);
    if (elsewhere !== null) lines.push(`  ${label}: ${elsewhere}`);
    const byRole = cpuByRoleLine(write);
    if (byRole !== null) lines.push(`  ${label}: ${byRole}`);
    const travelled = requestShapeLine(write);
    if (travelled !== null) lines.push(`  ${label}: ${travelled}`);
  }
  for (const { label, write } of writes) {
    if (write.firstFailureMessage !== null) lines.push(`  ${label}: first failure: ${write.firstFailureMessage}`);
  }
  return lines;
}

/** Where else a write scenario's CPU went, and how many cores everything kept busy; null when none of it is known. */
export function cpuElsewhereLine(write: Pick<WriteScenarioResult, 'serverCpuSecondsPerMegabyte' | 'benchCpuSecondsPerMegabyte' | 'coresBusy'>): string | null {
  const parts: string[] = [];
  if (write.serverCpuSecondsPerMegabyte != null) parts.push(`S3 + NATS servers ${write.serverCpuSecondsPerMegabyte.toFixed(3)}`);
  if (write.benchCpuSecondsPerMegabyte != null) parts.push(`load generator ${write.benchCpuSecondsPerMegabyte.toFixed(3)}`);
  if (parts.length === 0) return null;
  const busy = write.coresBusy == null ? '' : `; all processes kept ${write.coresBusy.toFixed(2)} cores busy`;
  return `CPU s/MB outside mink: ${parts.join(', ')}${busy}`;
}

/**
 * The CPU of each role per MB of rows (a role of several processes counted together, with their count),
 * and the share of it on the main threads; null when it is unknown. Beside the totals, this says which
 * process to profile first and how much of its CPU a profile of its JavaScript can show.
 */
export function cpuByRoleLine(write: Pick<WriteScenarioResult, 'cpuByRole'>): string | null {
  if (write.cpuByRole == null || write.cpuByRole.length === 0) return null;
  const parts = write.cpuByRole.map(({ role, processes, cpuSecondsPerMegabyte, mainThreadShare }) => {
    const count = processes > 1 ? ` ×${processes}` : '';
    const share = mainThreadShare === null ? '' : ` (${Math.round(mainThreadShare * 100)} %)`;
    return `${role}${count} ${cpuSecondsPerMegabyte.toFixed(3)}${share}`;
  });
  return `CPU s/MB by role (main threads' share): ${parts.join(', ')}`;
}

/**
 * How a write scenario's rows reached S3: the bucket requests the data nodes answered and the WAL objects
 * they wrote, each per call; null when the requests are unknown. Most of a data node's CPU under small
 * calls goes per request and per object, so these explain the throughput beside them.
 */
export function requestShapeLine(write: Pick<WriteScenarioResult, 'bucketRequests' | 'calls' | 'rows' | 'wal'>): string | null {
  if (write.bucketRequests == null || write.calls === 0) return null;
  const rowsPerRequest = write.bucketRequests === 0 ? '-' : formatCount(Math.round(write.rows / write.bucketRequests));
  return (
    `${formatCount(write.bucketRequests)} bucket requests (${(write.bucketRequests / write.calls).toFixed(2)} per call, ${rowsPerRequest} rows each), ` +
    `${formatCount(write.wal.objects)} WAL objects (${(write.wal.objects / write.calls).toFixed(2)} per call)`
  );
}

/** The lookup section: one row per series, with the message sizes its NATS request/reply baseline was measured at. */
function renderLookups(lookups: readonly LookupResult[]): string[] {
  const lines = [
    `mink lookup of keys the put wrote, through the client (latency per lookup call; a call of several keys sends one request per bucket they fall in)`,
    indent(
      renderTable(
        ['KEYS/CALL', 'IN FLIGHT', 'CALLS', 'CALLS/S', 'KEYS/S', 'P50 MS', 'P99 MS', 'MAX MS', 'REQUEST', 'REPLY'],
        lookups.map((lookup) => [
          formatCount(lookup.keysPerCall),
          String(lookup.concurrency),
          formatCount(lookup.calls) + (lookup.failedCalls > 0 ? ` (${lookup.failedCalls} failed)` : '') + (lookup.stoppedEarly ? ' (stopped early)' : ''),
          formatCount(lookup.callsPerSecond),
          formatCount(lookup.keysPerSecond),
          formatMilliseconds(lookup.latency.p50Ms),
          formatMilliseconds(lookup.latency.p99Ms),
          formatMilliseconds(lookup.latency.maximumMs),
          `${formatCount(lookup.requestBytes)} B`,
          `${formatCount(lookup.replyBytes)} B`,
        ]),
      ),
    ),
  ];
  for (const lookup of lookups) {
    if (lookup.firstFailureMessage !== null) lines.push(`  ${lookup.keysPerCall} keys/call: first failure: ${lookup.firstFailureMessage}`);
  }
  return lines;
}

/** The restore section: how the table was loaded, then one row per fault with the new leader's own account of the restore. */
function renderRestore(restore: RestoreResult): string[] {
  return [
    `restore of the one bucket of PK table ${restore.table}: ${formatCount(restore.keys)} keys put at ${formatCount(restore.loadKeysPerSecond)} keys/s, ` +
      `SIGTERM of its leader (which snapshots on a clean close), then ${formatCount(restore.keysAfterSnapshot)} more keys and kill -9 of the new leader ` +
      `(unavailable = from the signal until GET /v1/cluster shows the bucket open elsewhere; restore = the new leader's 'restored PK bucket' log line: ` +
      `snapshot download, unpacking and changelog replay together)`,
    indent(
      renderTable(
        ['FAULT', 'LEADER', 'NEW LEADER', 'UNAVAILABLE S', 'RESTORE MS', 'SNAPSHOT MB', 'MS/MB', 'REPLAYED RECORDS'],
        restore.trials.map((trial) => [
          FAULT_LABELS[trial.fault],
          trial.victimNodeId,
          trial.newLeaderNodeId,
          formatSeconds(trial.unavailableMs),
          formatCount(trial.restoreMs),
          trial.snapshotObject === null ? '-' : formatMegabytes(trial.snapshotBytes),
          trial.msPerSnapshotMegabyte === null ? '-' : formatMilliseconds(trial.msPerSnapshotMegabyte),
          formatCount(trial.replayedRecords),
        ]),
      ),
    ),
  ];
}

/**
 * The scan section: the load and how far compaction got, one row per series (the row check of a series that
 * failed it is spelled out below the table), the formats not measured and why, then the long polls.
 */
export function renderScan(scan: ScanResult): string[] {
  const compaction = scan.compaction;
  const lines = [
    `scan of log table ${scan.table} (${scan.buckets} buckets, ${formatCount(scan.rows)} rows loaded through client appendArrow at ${formatCount(scan.load.rowsPerSecond)} rows/s; ` +
      `each series scans every bucket from offset 0 to its high watermark through the gateway; MB = reply bodies; cold = right after every data node was restarted)`,
    compaction.complete
      ? `  compaction: ${describeCompaction(compaction.buckets)}, after ${formatSeconds(compaction.waitedMs)} s`
      : `  COMPACTION DID NOT FINISH within ${formatSeconds(compaction.timeoutMs)} s: ${describeCompaction(compaction.buckets)}; the scans read the rest from WAL objects`,
  ];
  if (scan.series.length > 0) {
    lines.push(
      indent(
        renderTable(
          ['FORMAT', 'CACHE', 'IN FLIGHT', 'REQUESTS', 'ROWS', 'MB', 'S', 'MB/S', 'ROWS/S', 'COUNT MS', 'ROWS CHECK'],
          scan.series.map((series) => [
            SCAN_FORMAT_LABELS[series.format],
            series.cache,
            String(series.scansInFlight),
            formatCount(series.requests),
            formatCount(series.rows),
            formatMegabytes(series.bodyBytes),
            formatSeconds(series.elapsedMs),
            formatMegabytesPerSecond(series.bytesPerSecond),
            formatCount(series.rowsPerSecond),
            formatCount(series.countMs),
            series.rowCheckFailure === null ? 'ok' : 'FAILED',
          ]),
        ),
      ),
    );
  }
  for (const series of scan.series) {
    const name = `${SCAN_FORMAT_LABELS[series.format]} ${series.cache}`;
    if (series.rowCheckFailure !== null) lines.push(`  ${name}: ROW CHECK FAILED, no ratio: ${series.rowCheckFailure}`);
    if (series.parsedWhileTimed) lines.push(`  ${name}: the replies had no Mink-Next-Offset header, so each JSON body was parsed while timed to find the next offset`);
  }
  for (const skipped of scan.skipped) lines.push(`  ${SCAN_FORMAT_LABELS[skipped.format]} (Accept: ${skipped.accept}) not measured: ${skipped.reason}`);
  if (scan.restarts.length > 0) {
    lines.push(
      `  data nodes restarted before each cold series: ` +
        scan.restarts.map((restart) => `${SCAN_FORMAT_LABELS[restart.format]} ${formatSeconds(restart.restartMs)} s (buckets led ${ledPerNode(Object.entries(restart.bucketsByLeader).map(([id, buckets]) => ({ id, buckets })))})`).join(', '),
    );
  }
  if (scan.longPoll !== null) lines.push(...renderLongPoll(scan.longPoll));
  return lines;
}

/**
 * The Kafka section: one row per series (produce, transactional produce, consume) with the check of its
 * records, the consumer's group join (not part of its MB/s), the first failure of a series that had one,
 * and what kafkajs logged as errors.
 */
export function renderKafka(kafka: KafkaResult): string[] {
  const { produce, transactionalProduce } = kafka;
  const consumeSeries = [kafka.consume, kafka.consumeEveryBatch].filter((series) => series !== null);
  const cpu = (value: number | null): string => (value === null ? '-' : value.toFixed(2));
  const lines = [
    `kafka through the data nodes' Kafka listeners (${kafka.brokers.join(', ')}): topic ${kafka.topic} of ${kafka.partitions} partitions; ` +
      `${kafka.producers} kafkajs producers (acks ${kafka.acks}, ${kafka.idempotent ? 'idempotent' : 'NOT idempotent'}), ${kafka.sendsInFlight} sends in flight, ` +
      `each of ${formatCount(kafka.recordsPerSend)} records (key ${kafka.keyBytes} B + value ${kafka.valueBytes} B, ${formatSize(kafka.recordsPerSend * (kafka.keyBytes + kafka.valueBytes))}) ` +
      `to one partition` +
      (transactionalProduce === null
        ? ''
        : `; then ${kafka.producers} transactional producers send as many in the same sends, ${transactionalProduce.sendsPerTransaction} per transaction, ` +
          `${transactionalProduce.transactionsInFlight} transactions in flight`) +
      `; then a kafkajs consumer (read_committed) in a new group reads every partition from the beginning, committing every ${formatSeconds(BENCH_KAFKA.consumeCommitIntervalMs)} s ` +
      `(the Java consumer's default), and another in a new group, committing after every batch (kafkajs's default) (MB = keys + values; latency: produce per send until acked, ` +
      `transactional produce per transaction until its commit is acked, consume per fetch answered; CPU S/MB = all mink processes, BENCH CPU S/MB = the bench process, which runs kafkajs)`,
  ];
  const produceRow = (label: string, series: KafkaProduceResult, requests: string): string[] => [
    label,
    formatCount(series.records) + (series.stoppedEarly ? ' (stopped early)' : ''),
    requests,
    formatMegabytes(series.bytes),
    formatSeconds(series.elapsedMs),
    formatMegabytesPerSecond(series.bytesPerSecond),
    formatCount(series.recordsPerSecond),
    formatMilliseconds(series.latency.p50Ms),
    formatMilliseconds(series.latency.p99Ms),
    formatMilliseconds(series.latency.maximumMs),
    cpu(series.cpuSecondsPerMegabyte),
    cpu(series.benchCpuSecondsPerMegabyte),
    series.rssMaxBytes === null ? '-' : formatSize(series.rssMaxBytes),
    series.offsetCheckFailure === null ? 'ok' : 'FAILED',
  ];
  const rows: string[][] = [produceRow('produce', produce, formatCount(produce.sends) + (produce.failedSends > 0 ? ` (${produce.failedSends} failed)` : ''))];
  if (transactionalProduce !== null) {
    rows.push(
      produceRow(
        'transactional produce',
        transactionalProduce,
        `${formatCount(transactionalProduce.sends)} in ${formatCount(transactionalProduce.transactions)} txns` +
          (transactionalProduce.failedTransactions > 0 ? ` (${transactionalProduce.failedTransactions} failed)` : ''),
      ),
    );
  }
  for (const consume of consumeSeries) {
    rows.push([
      consume.commitIntervalMs === null ? 'consume, commit every batch' : `consume, commit every ${formatSeconds(consume.commitIntervalMs)} s`,
      `${formatCount(consume.records)} of ${formatCount(consume.recordsExpected)}`,
      `${formatCount(consume.fetches)} fetches`,
      formatMegabytes(consume.bytes),
      formatSeconds(consume.elapsedMs),
      formatMegabytesPerSecond(consume.bytesPerSecond),
      formatCount(consume.recordsPerSecond),
      consume.fetchLatency === null ? '-' : formatMilliseconds(consume.fetchLatency.p50Ms),
      consume.fetchLatency === null ? '-' : formatMilliseconds(consume.fetchLatency.p99Ms),
      consume.fetchLatency === null ? '-' : formatMilliseconds(consume.fetchLatency.maximumMs),
      cpu(consume.cpuSecondsPerMegabyte),
      cpu(consume.benchCpuSecondsPerMegabyte),
      consume.rssMaxBytes === null ? '-' : formatSize(consume.rssMaxBytes),
      consume.checkFailure === null ? 'ok' : 'FAILED',
    ]);
  }
  lines.push(
    indent(renderTable(['SERIES', 'RECORDS', 'REQUESTS', 'MB', 'S', 'MB/S', 'MSG/S', 'P50 MS', 'P99 MS', 'MAX MS', 'CPU S/MB', 'BENCH CPU S/MB', 'RSS MAX', 'RECORDS CHECK'], rows)),
  );
  if (produce.firstFailureMessage !== null) lines.push(`  produce: first failure: ${produce.firstFailureMessage}`);
  if (produce.offsetCheckFailure !== null) lines.push(`  produce: OFFSETS CHECK FAILED, no ratio: ${produce.offsetCheckFailure}`);
  if (transactionalProduce !== null) {
    lines.push(
      `  transactional produce: ${formatCount(transactionalProduce.offsetsBetweenBatches)} offsets between the acknowledged batches, where at most ` +
        `${formatCount(transactionalProduce.transactionMarkers)} transaction markers may sit (one per transaction and partition, the warm-up's included; ` +
        `a partition's last marker follows its last batch)`,
    );
    if (transactionalProduce.firstFailureMessage !== null) lines.push(`  transactional produce: first failure: ${transactionalProduce.firstFailureMessage}`);
    if (transactionalProduce.offsetCheckFailure !== null) lines.push(`  transactional produce: OFFSETS CHECK FAILED, no ratio: ${transactionalProduce.offsetCheckFailure}`);
  }
  for (const consume of consumeSeries) {
    const label = consumeLabelOf(consume);
    lines.push(
      `  ${label}: group ${consume.groupId} joined in ${formatMilliseconds(consume.joinMs)} ms (not part of its MB/s); ` +
        `${formatCount(consume.fetches)} fetches answered with records, ${formatCount(consume.waitedFetches)} waited out the max wait; ${formatCount(consume.commits)} commit${consume.commits === 1 ? '' : 's'}`,
    );
    if (consume.stoppedBecause !== null) lines.push(`  ${label}: STOPPED before every record was read: ${consume.stoppedBecause}`);
    if (consume.checkFailure !== null) lines.push(`  ${label}: RECORDS CHECK FAILED, no ratio: ${consume.checkFailure}`);
  }
  if (kafka.clientErrors > 0) lines.push(`  kafkajs logged ${formatCount(kafka.clientErrors)} errors; the first: ${kafka.firstClientErrors.join(' | ')}`);
  return lines;
}

/**
 * The tiering section: the load, then one row per measured stretch (the worker's rounds of the catch-up, the
 * catch-up from enabling the lake, the rounds of the freshness series) and the freshness lag with how it
 * was measured; problems (rounds not committed, failed checks, stops) spelled out below.
 */
export function renderTiering(tiering: TieringResult): string[] {
  const lines = [
    `tiering of log table ${tiering.table} (${tiering.buckets} buckets, ${formatCount(tiering.rows)} rows loaded through client appendArrow at ${formatCount(tiering.load.rowsPerSecond)} rows/s ` +
      `with the lake off; ${tiering.tieringWorkers} tiering worker${tiering.tieringWorkers === 1 ? '' : 's'}; STORED MB = bytes of the stored Arrow batches the rounds read, ` +
      `as the worker logs them; rounds = from the first round taken to the last committed, by the worker's log; catch-up = from the PATCH enabling the lake until ` +
      `GET /v1/tables/{t} showed every lake offset at its committed end; busy = the rounds' own times added up, without the freshness waits between them)`,
  ];
  const cpu = (value: number | null): string => (value === null ? '-' : value.toFixed(2));
  const rows: string[][] = [];
  const roundsRow = (label: string, rounds: TieringRoundsSummary, elapsedMs: number | null, cpuText: string): string[] => [
    label,
    formatCount(rounds.committed) + (rounds.notCommitted > 0 ? ` (+${rounds.notCommitted} not committed)` : ''),
    formatCount(rounds.rows),
    formatMegabytes(rounds.sourceBytes),
    formatMegabytes(rounds.parquetBytes),
    formatCount(rounds.files),
    elapsedMs === null ? '-' : formatSeconds(elapsedMs),
    elapsedMs === null || elapsedMs <= 0 ? '-' : formatMegabytesPerSecond((rounds.sourceBytes * 1_000) / elapsedMs),
    elapsedMs === null || elapsedMs <= 0 ? '-' : formatCount((rounds.rows * 1_000) / elapsedMs),
    rounds.roundMs === null ? '-' : `${formatSeconds(rounds.roundMs.p50Ms)} / ${formatSeconds(rounds.roundMs.maximumMs)}`,
    cpuText,
  ];
  const { catchUp, lag } = tiering;
  if (catchUp !== null) {
    rows.push(roundsRow('catch-up: rounds', catchUp.rounds, catchUp.rounds.spanMs, cpu(catchUp.workerCpuSecondsPerMegabyte)));
    rows.push(roundsRow('catch-up: from enabling', catchUp.rounds, catchUp.catchUpMs, '-'));
  }
  // Rounds of the freshness series wait a freshness between them: their MB/s is over the time they ran.
  if (lag !== null) rows.push(roundsRow('freshness series: rounds, busy', lag.rounds, lag.rounds.busyMs > 0 ? lag.rounds.busyMs : null, '-'));
  if (rows.length > 0) {
    lines.push(indent(renderTable(['SERIES', 'ROUNDS', 'ROWS', 'STORED MB', 'PARQUET MB', 'FILES', 'S', 'MB/S', 'ROWS/S', 'ROUND S P50 / MAX', 'WORKER CPU S/MB'], rows)));
  }
  if (catchUp !== null) {
    if (catchUp.workerRssMaxBytes !== null) lines.push(`  tiering worker peak RSS ${formatSize(catchUp.workerRssMaxBytes)}`);
    if (catchUp.rounds.firstProblem !== null) lines.push(`  catch-up: ${catchUp.rounds.notCommitted} rounds not committed; the first: ${catchUp.rounds.firstProblem}`);
    if (catchUp.stoppedBecause !== null) lines.push(`  catch-up: STOPPED: ${catchUp.stoppedBecause}`);
    if (catchUp.checkFailure !== null) lines.push(`  catch-up: CHECK FAILED, no ratio: ${catchUp.checkFailure}`);
  }
  if (lag !== null) {
    lines.push(
      `  freshness lag (table.datalake.freshness ${formatSeconds(lag.freshnessMs)} s; appendArrow at ${formatCount(lag.targetRowsPerSecond)} rows/s = ${formatRatio(lag.targetRowsPerSecond / lag.ceilingRowsPerSecond)} × the load's ` +
        `${formatCount(lag.ceilingRowsPerSecond)} rows/s, ${formatCount(lag.rowsPerCall)} rows per call, at most ${lag.callsInFlightMax} in flight; the lake offsets read every ` +
        `${formatMilliseconds(lag.sampleIntervalMs)} ms; lag = now − the ack of the newest append the lake holds together with every append acknowledged before it):`,
    );
    lines.push(
      `    ${formatCount(lag.rows)} rows in ${formatCount(lag.acknowledgedCalls)} of ${formatCount(lag.calls)} calls in ${formatSeconds(lag.elapsedMs)} s = ${formatCount(lag.rowsPerSecond)} rows/s` +
        (lag.appendAck === null ? '' : `, ack p50 ${formatMilliseconds(lag.appendAck.p50Ms)} ms, p99 ${formatMilliseconds(lag.appendAck.p99Ms)} ms`) +
        (lag.lateCalls > 0 ? `, ${formatCount(lag.lateCalls)} calls sent late (up to ${formatMilliseconds(lag.latestStartMs)} ms)` : ''),
    );
    lines.push(
      `    lag ` +
        (lag.lag === null
          ? 'not measured: no sample after the first round of the series committed'
          : `p50 ${formatSeconds(lag.lag.p50Ms)} s, p99 ${formatSeconds(lag.lag.p99Ms)} s, max ${formatSeconds(lag.lag.maximumMs)} s over ${formatCount(lag.lag.count)} samples`) +
        (lag.lagHalvesP50Ms === null ? '' : `, p50 ${formatSeconds(lag.lagHalvesP50Ms[0])} s in their first half and ${formatSeconds(lag.lagHalvesP50Ms[1])} s in the second`) +
        ` (${formatCount(lag.warmupSamples)} warm-up samples before the series' first round committed left out` +
        (lag.failedSamples > 0 ? `, ${formatCount(lag.failedSamples)} failed` : '') +
        `); ` +
        (lag.drainMs === null ? 'the lake did NOT hold every append in time after the last one' : `the lake held the last append ${formatSeconds(lag.drainMs)} s after its ack`) +
        (lag.workerCpuShare === null ? '' : `; the tiering worker used ${formatRatio(lag.workerCpuShare)} of a core`),
    );
    if (lag.firstFailureMessage !== null) lines.push(`  freshness series: ${lag.failedCalls} appends failed; the first: ${lag.firstFailureMessage}`);
    if (lag.rounds.firstProblem !== null) lines.push(`  freshness series: ${lag.rounds.notCommitted} rounds not committed; the first: ${lag.rounds.firstProblem}`);
    if (lag.stoppedBecause !== null) lines.push(`  freshness series: STOPPED: ${lag.stoppedBecause}`);
  }
  return lines;
}

/** The long-poll lines: delivery after the ack and the append's ack, with the delivery goal. */
function renderLongPoll(longPoll: LongPollResult): string[] {
  const head =
    `long polls of bucket ${longPoll.bucket} (a JSON scan with wait at its high watermark, woken by an append of one batch through the client; ` +
    `delivery = from the append's ack to the scan's reply, negative when the reply came first): ${formatCount(longPoll.delivered)} of ${formatCount(longPoll.iterations)} delivered`;
  const lines = [head];
  if (longPoll.delivery !== null && longPoll.appendAck !== null) {
    const met = longPoll.delivery.p99Ms <= longPoll.deliveryP99GoalMs;
    lines.push(
      `  delivery p50 ${formatMilliseconds(longPoll.delivery.p50Ms)} ms, p99 ${formatMilliseconds(longPoll.delivery.p99Ms)} ms, max ${formatMilliseconds(longPoll.delivery.maximumMs)} ms ` +
        `(goal p99 ≤ ${formatCount(longPoll.deliveryP99GoalMs)} ms: ${met ? 'met' : 'not met'}); append ack p50 ${formatMilliseconds(longPoll.appendAck.p50Ms)} ms, ` +
        `p99 ${formatMilliseconds(longPoll.appendAck.p99Ms)} ms`,
    );
  }
  if (longPoll.failures > 0) lines.push(`  ${formatCount(longPoll.failures)} long polls failed; the first: ${longPoll.firstFailureMessage ?? '?'}`);
  if (longPoll.stoppedBecause !== null) lines.push(`  the long polls stopped early: ${longPoll.stoppedBecause}`);
  return lines;
}

/** The failover section: a table of the trials' spread per fault, then each median as a ratio to lease_ttl + coordinator_tick. */
function renderFailover(failover: FailoverResult): string[] {
  const spread = (value: SpreadMs | null): string[] =>
    value === null ? ['-', '-', '-'] : [formatSeconds(value.minimumMs), formatSeconds(value.medianMs), formatSeconds(value.maximumMs)];
  const lines = [
    `failover of bucket ${failover.bucket} (unavailable = from the signal to its leader until the next acknowledged append; ` +
      `probe: one row, ${failover.probeIntervalMs} ms between appends, the signal sent while a probe call is in flight; ` +
      `load: appends of ${BENCH_FAILOVER.loadRowsPerCall} rows to every bucket from ${BENCH_FAILOVER.loadCallers} callers; lease_ttl ${formatSeconds(failover.leaseTtlMs)} s + ` +
      `coordinator_tick ${formatSeconds(failover.coordinatorTickMs)} s = ${formatSeconds(failover.detectionBoundMs)} s)`,
    indent(
      renderTable(
        ['FAULT', 'TRIALS', 'UNAVAILABLE MIN S', 'MEDIAN S', 'MAX S', 'LONGEST GAP MIN S', 'MEDIAN S', 'MAX S', 'FAILED CALLS', 'LOAD ROWS', 'LOAD FAILED CALLS'],
        failover.faults.map((summary) => [
          summary.label,
          String(summary.trials.length),
          ...spread(summary.unavailable),
          ...spread(summary.longestGap),
          formatCount(summary.trials.reduce((sum, trial) => sum + trial.failedCalls, 0)),
          formatCount(summary.trials.reduce((sum, trial) => sum + trial.loadRows, 0)),
          formatCount(summary.trials.reduce((sum, trial) => sum + trial.loadFailedCalls, 0)),
        ]),
      ),
    ),
  ];
  for (const summary of failover.faults) {
    if (summary.ratio !== null) lines.push(`  ${summary.ratio.text}`);
  }
  return lines;
}

/** The apply-cost lines of the metadata section. */
function renderApplyCosts(costs: readonly ApplyCostResult[]): string[] {
  return costs.map(
    (cost) =>
      `  apply of one CommitWal of ${cost.rangesPerCommit} ranges at ${formatCount(cost.buckets)} buckets (${formatCount(cost.slicesPerStream)} slices per stream) and ${formatCount(cost.liveObjects)} live objects` +
      `${cost.writersPerStream > 0 ? `, ${formatCount(cost.writersPerStream)} writers remembered per stream` : ''}: ` +
      `${cost.msPerCommitWal.toFixed(2)} ms per process (mean of ${formatCount(cost.commits)})`,
  );
}

/** The metadata section: creation and opening per stage, the health of the metadata plane meanwhile, and the restart after each stage. */
function renderMetadata(metadata: MetadataResult, leaseTtlMs: number): string[] {
  const optional = (value: number | null, format: (value: number) => string = formatCount): string => (value === null ? '-' : format(value));
  const stages = metadata.stages;
  const lines = [
    `metadata stages: tables of ${metadata.bucketsPerTable} buckets created through the gateway, ${metadata.createsInFlight} in flight (all open = from the first create ` +
      `until GET /v1/cluster showed every bucket open; after creates = from the last create answered until then; log entries = growth of the metadata log's last seq meanwhile; ` +
      `apply = log entries / all open)`,
    indent(
      renderTable(
        ['BUCKETS', 'TABLES', 'CREATES/S', 'P50 MS', 'P99 MS', '503 RETRIED', 'FAILED', 'ALL OPEN S', 'AFTER CREATES S', 'BUCKETS OPENED/S', 'LOG ENTRIES', 'ENTRIES/CREATE', 'APPLY/S'],
        stages.map((stage) => [
          formatCount(stage.targetBuckets),
          `${formatCount(stage.tablesCreated)} / ${formatCount(stage.tablesAsked)}`,
          optional(stage.tableCreatesPerSecond, formatMilliseconds),
          optional(stage.createLatency?.p50Ms ?? null, formatMilliseconds),
          optional(stage.createLatency?.p99Ms ?? null, formatMilliseconds),
          formatCount(stage.retriedUnavailable),
          formatCount(stage.failedCreates),
          optional(stage.allOpenMs, formatSeconds),
          optional(stage.allOpenMs === null ? null : Math.max(0, stage.allOpenMs - stage.createElapsedMs), formatSeconds),
          optional(stage.bucketsOpenedPerSecond),
          optional(stage.metaLogEntries),
          optional(stage.commandsPerTableCreate, formatMilliseconds),
          optional(stage.applyCommandsPerSecond),
        ]),
      ),
    ),
    `health of the metadata plane during each stage (heartbeat every ${formatSeconds(stages[0]?.health.heartbeatIntervalMs ?? 0)} s, lease_ttl ${formatSeconds(leaseTtlMs)} s; ` +
      `apply lag = age of the oldest log entry the slowest tail had not taken, read once a second; epoch bumps = data node epochs gained during the stage: takeovers or re-registrations)`,
    indent(
      renderTable(
        ['BUCKETS', 'LONGEST HEARTBEAT GAP S', 'OF', 'EVENT LOOP STALL MS', 'OF', 'TAIL BACKLOG', 'APPLY LAG S', 'TAKEOVERS', 'EPOCH BUMPS', 'EXITED'],
        stages.map((stage) => [
          formatCount(stage.targetBuckets),
          optional(stage.health.longestHeartbeatGap?.gapMs ?? null, formatSeconds),
          stage.health.longestHeartbeatGap?.key ?? '-',
          optional(stage.health.longestEventLoopStall?.ms ?? null),
          stage.health.longestEventLoopStall?.process ?? '-',
          optional(stage.health.largestTailBacklogEntries),
          optional(stage.health.longestApplyLagMs, formatSeconds),
          formatCount(stage.takeovers),
          formatCount(stage.epochBumps) + (stage.nodes.every((node) => node.live) ? '' : ` (not live: ${stage.nodes.filter((node) => !node.live).map((node) => node.id).join(', ')})`),
          formatCount(stage.exitedProcesses.length),
        ]),
      ),
    ),
    'whole-cluster restart after each stage (all open = from starting the processes again until every bucket was open; led per node = buckets each data node leads before and after)',
    indent(
      renderTable(
        ['BUCKETS', 'STOP S', 'START S', 'ALL OPEN S', 'BUCKETS OPENED/S', 'LED PER NODE BEFORE', 'AFTER'],
        stages.map((stage) => [
          formatCount(stage.restart?.buckets ?? stage.clusterBuckets),
          optional(stage.restart?.stopMs ?? null, formatSeconds),
          optional(stage.restart?.startMs ?? null, formatSeconds),
          optional(stage.restart?.allOpenMs ?? null, formatSeconds),
          optional(stage.restart?.bucketsOpenedPerSecond ?? null),
          ledPerNode(stage.nodes),
          ledPerNode(stage.restart?.nodes ?? []),
        ]),
      ),
    ),
  ];
  const metricValue = (value: number): string => (Number.isInteger(value) ? formatCount(value) : formatMilliseconds(value));
  const exposed = stages.flatMap((stage) =>
    stage.health.exposedMetrics.map((metric) => `${formatCount(stage.targetBuckets)} buckets: ${metric.name} up to ${metricValue(metric.value)} (${metric.process})`),
  );
  lines.push(...exposed.map((line) => `  ${line}`));
  const missing = [...new Set(stages.flatMap((stage) => stage.health.missingMetrics))];
  if (missing.length > 0) lines.push(`  not exposed by any process: ${missing.join(', ')}`);
  for (const stage of stages) {
    const name = `${formatCount(stage.targetBuckets)} buckets`;
    const memory = memoryPerBucket(stage.health.memory, stage.bucketsCreated);
    if (memory !== null) {
      const { largest, heapGrowth } = memory;
      lines.push(
        `  ${name}: largest process at the end ${largest.process}, ${formatSize(largest.rssBytes)} resident` +
          (largest.heapUsedBytes === null ? '' : ` (V8 heap in use ${formatSize(largest.heapUsedBytes)})`) +
          (heapGrowth === null
            ? ''
            : `; heap in use grew most in ${heapGrowth.process}, by ${formatSize(Math.max(0, heapGrowth.bytes))} over ${formatCount(stage.bucketsCreated)} buckets created: ` +
              `${formatCount(Math.max(0, heapGrowth.bytesPerBucket))} B per bucket, garbage not yet collected included`),
      );
    }
    if (stage.firstFailureMessage !== null) lines.push(`  ${name}: first failed create: ${stage.firstFailureMessage}`);
    for (const exited of [...stage.exitedProcesses, ...(stage.restart?.exitedProcesses ?? [])]) lines.push(`  ${name}: ${exited}`);
    if (stage.stoppedBecause !== null) lines.push(`  ${name}: stage ended short: ${stage.stoppedBecause}`);
    if (stage.restart?.stoppedBecause) lines.push(`  ${name}: restart ended short: ${stage.restart.stoppedBecause}`);
  }
  return lines;
}

/** "1:5 333 2:5 333 3:5 334": how many buckets each data node leads; "-" when unknown. */
function ledPerNode(nodes: readonly { id: string; buckets: number }[]): string {
  return nodes.length === 0 ? '-' : nodes.map((node) => `${node.id}:${formatCount(node.buckets)}`).join(' ');
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n');
}
