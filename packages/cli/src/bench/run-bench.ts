import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, platform, release, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { LIMITS } from '@mink/config';
import type { LocalCluster, LocalClusterOptions } from '@mink/devcluster';
import { S3ObjectStore } from '@mink/s3stream';
import { CliError, type CliIo } from '../io';
import { deadlineAfter, JetStreamBaseline, measureS3Put } from './baselines';
import { createBenchTable, waitForOpenBuckets } from './bench-cluster';
import { BENCH_BASELINES, BENCH_CLUSTER, BENCH_FAILOVER, BENCH_TABLE } from './bench-limits';
import { runFailover } from './failover';
import { formatCount, formatMilliseconds, formatSize } from './format';
import { runClientAppend, runGatewayAppend } from './mink-append';
import { computeRatios } from './report';
import type { AppendResult, BaselineResult, BenchOptions, BenchResult, FailoverResult, MachineDescription } from './results';

/** Starts a cluster; LocalCluster.start outside tests. */
export type StartBenchCluster = (options: LocalClusterOptions) => Promise<LocalCluster>;

export interface BenchRunOptions extends BenchOptions {
  /** Leave the temporary folder (cluster data, logs, S3 objects) in place for inspection. */
  keep: boolean;
}

/** s3rver's built-in credentials and the region every mink service uses (README, Configuration). */
const S3_ACCESS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER', region: 'us-east-1' } as const;
/** Phases printed as "[n/phaseCount] …": six, and the failover scenario unless skipped. */
const PHASE_COUNT_WITHOUT_FAILOVER = 6;

export function describeMachine(): MachineDescription {
  const processors = cpus();
  return {
    cpus: processors.length,
    cpuModel: processors[0]?.model.trim() ?? 'unknown',
    totalMemoryBytes: totalmem(),
    platform: platform(),
    release: release(),
    nodeVersion: process.version,
    loadAverageAtStart: loadavg()[0] ?? 0,
  };
}

/**
 * One whole benchmark run: a local cluster in a temporary folder, the baselines, the two mink append
 * scenarios, an S3 baseline at the size of the WAL objects mink actually wrote, then (unless skipped) the
 * failover scenario, last because it kills and restarts data nodes. Progress goes to
 * stderr; the result is returned for the caller to print. The cluster is stopped and the folder removed
 * (unless `keep`) however the run ends. The first SIGINT or SIGTERM ends the current phase early, skips
 * the rest and returns partial figures with `interrupted`; a second one exits at once, and LocalCluster's
 * exit handler kills whatever is left.
 */
export async function runBench(options: BenchRunOptions, io: CliIo, startCluster: StartBenchCluster): Promise<BenchResult> {
  const startedMs = performance.now();
  const machine = describeMachine();
  const note = (line: string): void => io.writeError(`${line}\n`);
  let phase = 0;
  const phaseCount = PHASE_COUNT_WITHOUT_FAILOVER + (options.failover ? 1 : 0);
  const startPhase = (text: string): void => note(`[${++phase}/${phaseCount}] ${text}`);
  const interrupt = new AbortController();
  const onSignal = (signal: NodeJS.Signals): void => {
    if (interrupt.signal.aborted) {
      note(`${signal} again: exiting now`);
      process.exit(130);
    }
    note(`${signal}: finishing the calls in flight, then stopping the cluster…`);
    interrupt.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  const dataDir = mkdtempSync(join(tmpdir(), 'mink-bench-'));
  const baselines: BaselineResult[] = [];
  const appends: AppendResult[] = [];
  let averageWalObjectBytes: number | null = null;
  let failover: FailoverResult | null = null;
  let cluster: LocalCluster | null = null;
  let store: S3ObjectStore | null = null;
  try {
    startPhase(`starting a local cluster (${BENCH_CLUSTER.nodes} data nodes, ${BENCH_CLUSTER.coordinators} coordinators) in ${dataDir}`);
    try {
      cluster = await startCluster({
        dataDir,
        nodes: BENCH_CLUSTER.nodes,
        coordinators: BENCH_CLUSTER.coordinators,
        leaseTtlMs: BENCH_CLUSTER.leaseTtlMs,
        coordinatorTickMs: BENCH_CLUSTER.coordinatorTickMs,
        gatewayPort: 0,
        kafkaPort: 0,
        signal: interrupt.signal,
        logger: (line) => note(`  ${line}`),
      });
    } catch (error) {
      if (interrupt.signal.aborted) return finish();
      throw new CliError(`the cluster did not start: ${error instanceof Error ? error.message : String(error)}`);
    }
    await createBenchTable(io, cluster.gatewayUrl);
    const open = await waitForOpenBuckets(io, cluster.gatewayUrl, interrupt.signal);
    if (open === null) return finish();
    note(`  table ${BENCH_TABLE.name}: ${open} buckets open`);
    store = new S3ObjectStore({
      endpoint: cluster.s3Endpoint,
      bucket: cluster.s3Bucket,
      ...S3_ACCESS,
      maxConcurrency: options.concurrency,
      // One attempt: a retried PUT would hide its first failure inside a latency.
      maxAttempts: 1,
    });
    const record = (baseline: BaselineResult | null): void => {
      if (baseline === null) return;
      baselines.push(baseline);
      note(`  ${describeBaseline(baseline)}`);
    };
    const seriesModes = [1, options.concurrency].filter((concurrency, index, all) => all.indexOf(concurrency) === index);

    const measureS3PutSizes = async (sizesBytes: number[]): Promise<void> => {
      for (const sizeBytes of sizesBytes) {
        for (const concurrency of seriesModes) {
          if (interrupt.signal.aborted) return;
          const settings = { operations: BENCH_BASELINES.s3PutOperations, concurrency, deadlineMs: deadlineAfter(options.seconds), signal: interrupt.signal };
          record(await measureS3Put(store!, sizeBytes, settings, note));
        }
      }
    };

    if (!interrupt.signal.aborted) {
      startPhase(`baseline: raw S3 PUT of ${BENCH_BASELINES.s3PutBodySizesBytes.map(formatSize).join(' and ')}, ${BENCH_BASELINES.s3PutOperations} per series`);
      await measureS3PutSizes([...BENCH_BASELINES.s3PutBodySizesBytes]);
    }

    if (!interrupt.signal.aborted) {
      startPhase(`baseline: raw JetStream publish of ${formatSize(BENCH_BASELINES.jetStreamPayloadBytes)}, ${BENCH_BASELINES.jetStreamPublishOperations} per series`);
      const jetStream = await JetStreamBaseline.open(cluster.natsUrl);
      try {
        for (const concurrency of seriesModes) {
          if (interrupt.signal.aborted) break;
          const settings = { operations: BENCH_BASELINES.jetStreamPublishOperations, concurrency, deadlineMs: deadlineAfter(options.seconds), signal: interrupt.signal };
          record(await jetStream.measure(BENCH_BASELINES.jetStreamPayloadBytes, settings));
        }
      } finally {
        await jetStream.close();
      }
    }

    const scenario = (firstId: number) => ({
      rows: options.rows,
      batchRows: options.batchRows,
      concurrency: options.concurrency,
      firstId,
      deadlineMs: deadlineAfter(options.seconds),
      signal: interrupt.signal,
      store: store!,
      progress: note,
    });
    // Each scenario's ids (warm-up included) lie in their own range.
    const idRange = options.rows + options.batchRows * BENCH_BASELINES.warmupOperations;
    if (!interrupt.signal.aborted) {
      startPhase(`mink append through the gateway: POST ${cluster.gatewayUrl}/v1/tables/${BENCH_TABLE.name}/append`);
      const gateway = await runGatewayAppend(io, cluster.gatewayUrl, scenario(0));
      if (gateway !== null) appends.push(gateway);
    }
    if (!interrupt.signal.aborted) {
      startPhase(`mink append through the TypeScript client over ${cluster.natsUrl}`);
      const client = await runClientAppend(cluster.natsUrl, scenario(idRange));
      if (client !== null) appends.push(client);
    }

    const walObjects = appends.reduce((sum, append) => sum + append.wal.objects, 0);
    if (walObjects > 0) {
      averageWalObjectBytes = Math.max(1, Math.round(appends.reduce((sum, append) => sum + append.wal.bytes, 0) / walObjects));
    }
    if (!interrupt.signal.aborted && averageWalObjectBytes !== null) {
      startPhase(`baseline: raw S3 PUT of the average WAL object of this run (${formatSize(averageWalObjectBytes)})`);
      const alreadyMeasured = baselines.some((baseline) => baseline.kind === 's3-put' && baseline.payloadBytes === averageWalObjectBytes);
      if (!alreadyMeasured) await measureS3PutSizes([averageWalObjectBytes]);
    }
    if (options.failover && !interrupt.signal.aborted) {
      startPhase(
        `failover: kill -9, then SIGTERM, of the leader of one bucket, ${BENCH_FAILOVER.trialsPerFault} times each, ` +
          `while a probe appends to that bucket (restarting the node after each)`,
      );
      failover = await runFailover({ io, cluster, signal: interrupt.signal, progress: note });
    }
    return finish();
  } finally {
    store?.close();
    if (cluster !== null) {
      note('stopping the cluster');
      await cluster.stop();
    }
    if (options.keep) note(`kept ${dataDir} (cluster data, S3 objects, logs/)`);
    else rmSync(dataDir, { recursive: true, force: true });
    // Only now: a second Ctrl-C while the cluster stops must still reach onSignal, whose exit lets
    // LocalCluster's exit handler kill the processes (the default action of SIGINT would skip it).
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }

  function finish(): BenchResult {
    return {
      machine,
      options: { rows: options.rows, batchRows: options.batchRows, concurrency: options.concurrency, seconds: options.seconds, failover: options.failover },
      cluster: {
        nodes: BENCH_CLUSTER.nodes,
        coordinators: BENCH_CLUSTER.coordinators,
        buckets: BENCH_TABLE.buckets,
        leaseTtlMs: BENCH_CLUSTER.leaseTtlMs,
        coordinatorTickMs: BENCH_CLUSTER.coordinatorTickMs,
        dataDir,
        kept: options.keep,
      },
      baselines,
      appends,
      ratios: computeRatios({
        baselines,
        appends,
        concurrency: options.concurrency,
        averageWalObjectBytes,
        fullWalObjectBytes: LIMITS.walFlushBytes,
        jetStreamPayloadBytes: BENCH_BASELINES.jetStreamPayloadBytes,
      }),
      failover,
      // The stop of the cluster and the removal of the folder that follow are not counted.
      durationMs: performance.now() - startedMs,
      interrupted: interrupt.signal.aborted,
    };
  }
}

function describeBaseline(baseline: BaselineResult): string {
  return (
    `${baseline.label}, ${baseline.concurrency} in flight: ${formatCount(baseline.operationsPerSecond)} ops/s, ` +
    `p50 ${formatMilliseconds(baseline.latency.p50Ms)} ms, p99 ${formatMilliseconds(baseline.latency.p99Ms)} ms`
  );
}
