import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, platform, release, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { CliError, type CliIo } from '@mink/cli';
import { LIMITS } from '@mink/config';
import type { LocalCluster, LocalClusterOptions } from '@mink/devcluster';
import { S3ObjectStore } from '@mink/s3stream';
import { deadlineAfter, JetStreamBaseline, measureS3Get, measureS3Put, NatsRequestBaseline } from './baselines';
import { createBenchTable, dropBenchTable, waitForOpenBuckets } from './bench-cluster';
import {
  BENCH_BASELINES,
  BENCH_CLUSTER,
  BENCH_MEMORY,
  BENCH_FAILOVER,
  BENCH_FLOOR,
  BENCH_KAFKA,
  BENCH_LOOKUP,
  BENCH_METADATA,
  BENCH_PAYLOAD_CHARS,
  BENCH_PK_TABLE,
  BENCH_RESTORE,
  BENCH_RESTORE_TABLE,
  BENCH_SCAN,
  BENCH_SCAN_TABLE,
  BENCH_SCAN_WARMUP_TABLE,
  BENCH_SOAK,
  BENCH_TABLE,
  BENCH_TIERING_TABLE,
} from './bench-limits';
import { runFailover } from './failover';
import { formatCount, formatMilliseconds, formatSize } from './format';
import { kafkaRatios } from './kafka-figures';
import { runMetadata } from './metadata';
import { metadataRatios } from './metadata-figures';
import { measureApplyCost } from './apply-cost';
import { readBucketRequests } from './bucket-requests';
import { runClientAppend, runClientArrowAppend, runGatewayAppend } from './mink-append';
import { FloorWritePath, runFloorAppend } from './write-floor';
import { KAFKA_PHASES, runKafka } from './mink-kafka';
import { runClientLookups, runClientPut } from './mink-pk';
import { runScan, SCAN_PHASES } from './mink-scan';
import { runTiering, TIERING_PHASES } from './mink-tiering';
import { MemoryWatch } from './memory-watch';
import { runSoak } from './soak';
import type { SoakResult } from './soak-figures';
import type { RoleProcess } from './process-usage';
import { lookupRatios, restoreRatios } from './pk-figures';
import { findBaseline } from './ratio';
import { runRestore } from './pk-restore';
import { averageWalObjectBytes, computeRatios, type WriteRatioInput } from './report';
import { scanRatios } from './scan-figures';
import { tieringRatios } from './tiering-figures';
import { measuredWarmupCalls } from './write-scenario';
import type {
  AppendResult,
  BaselineResult,
  BenchFigures,
  BenchOptions,
  BenchResult,
  FailoverResult,
  KafkaResult,
  LookupResult,
  MachineDescription,
  MetadataResult,
  PutResult,
  RestoreResult,
  ScanResult,
  TieringResult,
} from './results';

/** Starts a cluster; LocalCluster.start outside tests. */
export type StartBenchCluster = (options: LocalClusterOptions) => Promise<LocalCluster>;

export interface BenchRunOptions extends BenchOptions {
  /** Leave the temporary folder (cluster data, logs, S3 objects) in place for inspection. */
  keep: boolean;
  /** Run every mink process under `node --cpu-prof`, writing profiles into `profiles/` of the kept folder. */
  profile?: boolean;
}

/** s3rver's built-in credentials and the region every mink service uses (docs/operations.md, Configuration). */
const S3_ACCESS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER', region: 'us-east-1' } as const;

/**
 * Phases a run of `figures` prints as "[n/count] …": starting the cluster; for any write or Kafka figures
 * the S3 PUT baseline and, after the writes, the S3 PUT of their average WAL objects; for write, Kafka or
 * metadata figures the JetStream baseline; for append or Kafka figures the floor write path (once for
 * both); the three append scenarios; the put, the lookups, their NATS baseline, the restore and its S3 GET
 * baseline; the Kafka topic, idempotent produce, transactional produce, consume and S3 GET baseline; the
 * scan figures' load, compaction wait, S3 GET baseline, one phase per format and the long polls; the
 * tiering figures' load, S3 baselines, catch-up and freshness series; the failover scenario; one phase per
 * metadata stage.
 */
export function phaseCount(figures: readonly BenchFigures[], metadataStages: number = BENCH_METADATA.stageBuckets.length): number {
  const has = (group: BenchFigures): boolean => figures.includes(group);
  const writes = has('append') || has('pk');
  return (
    1 +
    (writes ? 2 : has('kafka') ? 1 : 0) +
    (writes || has('kafka') || has('metadata') ? 1 : 0) +
    (has('append') || has('kafka') ? 1 : 0) +
    (has('append') ? 3 : 0) +
    (has('pk') ? 5 : 0) +
    (has('kafka') ? KAFKA_PHASES : 0) +
    (has('scan') ? SCAN_PHASES : 0) +
    (has('tiering') ? TIERING_PHASES : 0) +
    (has('soak') ? 1 : 0) +
    (has('failover') ? 1 : 0) +
    (has('metadata') ? metadataStages : 0)
  );
}

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
 * One whole benchmark run of the selected figures: a local cluster in a temporary folder, the baselines,
 * the two mink append scenarios, the put of new keys into a primary-key table, S3 baselines at the size of
 * the WAL objects those writes actually produced, lookups of the keys put with their NATS request/reply
 * baseline, the restore of a primary-key bucket with its S3 GET baseline, the scans of a compacted log table
 * in each format against raw S3 GETs and the long polls (which restart every data node), the tiering of a
 * loaded table into the lake against raw S3 GET and PUT and the lake's freshness under appends, then the failover
 * scenario, last because it kills and restarts data nodes. Progress goes to stderr; the result is returned
 * for the caller to print. The cluster is stopped and the folder removed (unless `keep`) however the run
 * ends. The first SIGINT or SIGTERM ends the current phase early, skips the rest and returns partial figures
 * with `interrupted`; a second one exits at once, and LocalCluster's exit handler kills whatever is left.
 */
export async function runBench(options: BenchRunOptions, io: CliIo, startCluster: StartBenchCluster): Promise<BenchResult> {
  const startedMs = performance.now();
  const machine = describeMachine();
  const note = (line: string): void => io.writeError(`${line}\n`);
  const selected = (group: BenchFigures): boolean => options.figures.includes(group);
  let phase = 0;
  const phases = phaseCount(options.figures, options.metadataBuckets.length);
  const startPhase = (text: string): void => note(`[${++phase}/${phases}] ${text}`);
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
  let put: PutResult | null = null;
  const lookups: LookupResult[] = [];
  let restore: RestoreResult | null = null;
  let failover: FailoverResult | null = null;
  let metadata: MetadataResult | null = null;
  let scan: ScanResult | null = null;
  let kafka: KafkaResult | null = null;
  let tiering: TieringResult | null = null;
  let soak: SoakResult | null = null;
  let cluster: LocalCluster | null = null;
  /** The resident memory of all mink processes together, sampled over the whole run once the cluster is up. */
  let memoryWatch: MemoryWatch | null = null;
  /** The cluster's mink processes (not its NATS and S3 servers) running now, with their roles. */
  const minkProcesses = (): RoleProcess[] =>
    (cluster?.processes() ?? []).filter((entry) => entry.running && entry.role !== 'nats' && entry.role !== 's3').map((entry) => ({ role: entry.role, pid: entry.pid }));
  /** The baselines' store: one attempt per request, so a retried PUT or GET cannot hide its first failure inside a latency. */
  let store: S3ObjectStore | null = null;
  /** Everything else the bench reads or lists (WAL objects, stream objects): retried like a data node retries. */
  let listStore: S3ObjectStore | null = null;
  try {
    startPhase(`starting a local cluster (${BENCH_CLUSTER.nodes} data nodes, ${BENCH_CLUSTER.coordinators} coordinators) in ${dataDir}`);
    const clusterOptions: LocalClusterOptions = {
      dataDir,
      nodes: BENCH_CLUSTER.nodes,
      coordinators: BENCH_CLUSTER.coordinators,
      tieringWorkers: BENCH_CLUSTER.tieringWorkers,
      leaseTtlMs: BENCH_CLUSTER.leaseTtlMs,
      coordinatorTickMs: BENCH_CLUSTER.coordinatorTickMs,
      gatewayPort: 0,
      kafkaPort: 0,
      signal: interrupt.signal,
      logger: (line) => note(`  ${line}`),
      ...(options.profile ? { cpuProfileDir: join(dataDir, 'profiles') } : {}),
      ...(options.s3Latency ? { s3Latency: options.s3Latency } : {}),
    };
    try {
      cluster = await startCluster(clusterOptions);
    } catch (error) {
      if (interrupt.signal.aborted) return finish();
      throw new CliError(`the cluster did not start: ${error instanceof Error ? error.message : String(error)}`);
    }
    memoryWatch = new MemoryWatch(minkProcesses, BENCH_MEMORY.sampleIntervalMs);
    // The log table is there for the append, PK and failover groups (the failover probe appends to it); the
    // metadata stages start from an empty cluster when run alone, and the scan, Kafka and tiering figures create their own.
    const logTable = options.figures.some((group) => group !== 'metadata' && group !== 'scan' && group !== 'kafka' && group !== 'tiering');
    const tables = logTable ? [BENCH_TABLE, ...(selected('pk') ? [BENCH_PK_TABLE] : [])] : [];
    for (const table of tables) {
      await createBenchTable(io, cluster.gatewayUrl, table);
      const open = await waitForOpenBuckets(io, cluster.gatewayUrl, interrupt.signal, undefined, table);
      if (open === null) return finish();
      note(`  table ${table.name}: ${open} buckets open`);
    }
    store = new S3ObjectStore({
      endpoint: cluster.s3Endpoint,
      bucket: cluster.s3Bucket,
      ...S3_ACCESS,
      maxConcurrency: options.concurrency,
      // One attempt: a retried PUT would hide its first failure inside a latency.
      maxAttempts: 1,
    });
    // An idle keep-alive connection that s3rver closed fails the next request with ECONNRESET; listings are
    // not timed, so they take the usual retries rather than end the run.
    listStore = new S3ObjectStore({ endpoint: cluster.s3Endpoint, bucket: cluster.s3Bucket, ...S3_ACCESS, maxConcurrency: options.concurrency });
    const record = (baseline: BaselineResult | null): void => {
      if (baseline === null) return;
      baselines.push(baseline);
      note(`  ${describeBaseline(baseline)}`);
    };
    const seriesModes = [1, options.concurrency].filter((concurrency, index, all) => all.indexOf(concurrency) === index);
    const seriesSettings = (operations: number, concurrency: number) => ({ operations, concurrency, deadlineMs: deadlineAfter(options.seconds), signal: interrupt.signal });

    const measureS3PutSizes = async (sizesBytes: number[], modes: readonly number[] = seriesModes): Promise<void> => {
      for (const sizeBytes of sizesBytes) {
        for (const concurrency of modes) {
          if (interrupt.signal.aborted) return;
          const alreadyMeasured = baselines.some((baseline) => baseline.kind === 's3-put' && baseline.payloadBytes === sizeBytes && baseline.concurrency === concurrency);
          if (!alreadyMeasured) record(await measureS3Put(store!, sizeBytes, seriesSettings(BENCH_BASELINES.s3PutOperations, concurrency), note));
        }
      }
    };

    const writes = selected('append') || selected('pk');
    if (writes && !interrupt.signal.aborted) {
      startPhase(`baseline: raw S3 PUT of ${BENCH_BASELINES.s3PutBodySizesBytes.map(formatSize).join(' and ')}, ${BENCH_BASELINES.s3PutOperations} per series`);
      await measureS3PutSizes([...BENCH_BASELINES.s3PutBodySizesBytes]);
    } else if (selected('kafka') && !interrupt.signal.aborted) {
      // The Kafka figures compare with full WAL objects put with as many in flight as sends.
      startPhase(`baseline: raw S3 PUT of ${formatSize(LIMITS.walFlushBytes)}, ${options.concurrency} in flight, ${BENCH_BASELINES.s3PutOperations} PUTs`);
      await measureS3PutSizes([LIMITS.walFlushBytes], [options.concurrency]);
    }

    if ((writes || selected('kafka') || selected('metadata')) && !interrupt.signal.aborted) {
      startPhase(`baseline: raw JetStream publish of ${formatSize(BENCH_BASELINES.jetStreamPayloadBytes)}, ${BENCH_BASELINES.jetStreamPublishOperations} per series`);
      // The metadata stages compare with as many publishes in flight as they have creates in flight; the
      // Kafka figures' ack bound with as many as sends in flight.
      const publishModes = [
        ...new Set([
          ...(writes ? seriesModes : []),
          ...(selected('kafka') ? [options.concurrency] : []),
          ...(selected('metadata') ? [1, BENCH_METADATA.createsInFlight] : []),
        ]),
      ];
      const jetStream = await JetStreamBaseline.open(cluster.natsUrl);
      try {
        for (const concurrency of publishModes) {
          if (interrupt.signal.aborted) break;
          record(await jetStream.measure(BENCH_BASELINES.jetStreamPayloadBytes, seriesSettings(BENCH_BASELINES.jetStreamPublishOperations, concurrency)));
        }
      } finally {
        await jetStream.close();
      }
    }

    // The cluster's mink processes, whose CPU time and memory the write scenarios report.
    const minkProcessIds = (): number[] => minkProcesses().map((entry) => entry.pid);
    const serverProcessIds = (): number[] => (cluster?.processes() ?? []).filter((entry) => entry.running && (entry.role === 'nats' || entry.role === 's3')).map((entry) => entry.pid);
    const processRoles = () => (cluster?.processes() ?? []).filter((entry) => entry.running).map((entry) => ({ role: entry.role, pid: entry.pid }));
    // The bucket requests the data nodes answered, of one table and operation (see bucket-requests.ts).
    const dataNodeMetricsUrls = (): string[] =>
      (cluster?.processes() ?? []).filter((entry) => entry.running && entry.role === 'data-node').map((entry) => `http://127.0.0.1:${entry.ports.http}/metrics`);
    const scenario = (rows: number, firstId: number, payloadChars = 0, requestsOf: { table: string; op: 'append' | 'put' } = { table: BENCH_TABLE.name, op: 'append' }) => ({
      rows,
      payloadChars,
      batchRows: options.batchRows,
      concurrency: options.concurrency,
      firstId,
      deadlineMs: deadlineAfter(options.seconds),
      signal: interrupt.signal,
      store: listStore!,
      progress: note,
      processIds: minkProcessIds,
      serverProcessIds,
      processRoles,
      warmupCalls: measuredWarmupCalls(rows, options.batchRows),
      bucketRequests: () => readBucketRequests(dataNodeMetricsUrls(), requestsOf.table, requestsOf.op),
    });
    // Each append scenario's ids (warm-up included) lie in their own range.
    const idRange = options.rows + options.batchRows * measuredWarmupCalls(options.rows, options.batchRows);
    // The floor write path: what the append paths and the Kafka produce series are compared with, measured once for both.
    if ((selected('append') || selected('kafka')) && !interrupt.signal.aborted) {
      // First, so no compaction or deletion of mink's appends falls into it; mink's processes idle beside it.
      startPhase(
        `baseline: the floor write path (${BENCH_FLOOR.leaders} leader processes that only upload and commit) under the append scenarios' load` +
          (selected('kafka') ? `; the Kafka produce series' records/s are compared with its rows/s` : ''),
      );
      const floor = await FloorWritePath.open({
        natsUrl: cluster.natsUrl,
        s3Endpoint: cluster.s3Endpoint,
        s3Bucket: cluster.s3Bucket,
        s3Region: S3_ACCESS.region,
        s3AccessKeyId: S3_ACCESS.accessKeyId,
        s3SecretAccessKey: S3_ACCESS.secretAccessKey,
      });
      try {
        const floorRoles = () => [...processRoles(), ...floor.processIds.map((pid) => ({ role: 'floor leader', pid }))];
        const result = await runFloorAppend(floor, { ...scenario(options.rows, 3 * idRange, BENCH_PAYLOAD_CHARS), processIds: () => floor.processIds, processRoles: floorRoles, bucketRequests: undefined });
        if (result !== null) appends.push(result);
      } finally {
        await floor.close(listStore!, note);
      }
    }
    if (selected('append') && !interrupt.signal.aborted) {
      startPhase(`mink append through the gateway: POST ${cluster.gatewayUrl}/v1/tables/${BENCH_TABLE.name}/append`);
      const gateway = await runGatewayAppend(cluster.gatewayUrl, scenario(options.rows, 0, BENCH_PAYLOAD_CHARS));
      if (gateway !== null) appends.push(gateway);
    }
    if (selected('append') && !interrupt.signal.aborted) {
      startPhase(`mink append through the TypeScript client over ${cluster.natsUrl}`);
      const client = await runClientAppend(cluster.natsUrl, scenario(options.rows, idRange, BENCH_PAYLOAD_CHARS));
      if (client !== null) appends.push(client);
    }
    if (selected('append') && !interrupt.signal.aborted) {
      startPhase(`mink append of Arrow record batches through the TypeScript client (appendArrow) over ${cluster.natsUrl}`);
      const arrow = await runClientArrowAppend(cluster.natsUrl, scenario(options.rows, 2 * idRange, BENCH_PAYLOAD_CHARS));
      if (arrow !== null) appends.push(arrow);
    }
    let writtenIds: number[] = [];
    if (selected('pk') && !interrupt.signal.aborted) {
      startPhase(`mink put of ${formatCount(options.pkKeys)} new keys into PK table ${BENCH_PK_TABLE.name} (${BENCH_PK_TABLE.buckets} buckets) through the TypeScript client`);
      const outcome = await runClientPut(cluster.natsUrl, scenario(options.pkKeys, 0, BENCH_PAYLOAD_CHARS, { table: BENCH_PK_TABLE.name, op: 'put' }));
      if (outcome !== null) ({ put, writtenIds } = outcome);
    }

    if (writes && !interrupt.signal.aborted) {
      const sizes = [averageWalObjectBytes(minkAppends()), averageWalObjectBytes(put === null ? [] : [put])].filter((size): size is number => size !== null);
      startPhase(`baseline: raw S3 PUT of the average WAL object of each write scenario of this run (${sizes.length === 0 ? 'none written' : sizes.map(formatSize).join(', ')})`);
      await measureS3PutSizes([...new Set(sizes)]);
    }

    if (selected('pk') && writtenIds.length > 0 && !interrupt.signal.aborted) {
      startPhase(`mink lookup of the keys put, through the TypeScript client: ${formatCount(BENCH_LOOKUP.singleKeyCalls)} calls of 1 key and ${formatCount(BENCH_LOOKUP.batchCalls)} of ${BENCH_LOOKUP.batchKeys} per series`);
      for (const [keysPerCall, calls] of [
        [1, BENCH_LOOKUP.singleKeyCalls],
        [BENCH_LOOKUP.batchKeys, BENCH_LOOKUP.batchCalls],
      ] as const) {
        for (const concurrency of seriesModes) {
          if (interrupt.signal.aborted) break;
          const lookup = await runClientLookups(cluster.natsUrl, { writtenIds, keysPerCall, calls, concurrency, deadlineMs: deadlineAfter(options.seconds), signal: interrupt.signal, progress: note });
          if (lookup !== null) lookups.push(lookup);
        }
      }
    }
    if (selected('pk') && !interrupt.signal.aborted) {
      startPhase(`baseline: raw NATS request/reply to a responder process, at the request and reply sizes of each lookup series`);
      if (lookups.length > 0) {
        const nats = await NatsRequestBaseline.open(cluster.natsUrl);
        try {
          for (const lookup of lookups) {
            if (interrupt.signal.aborted) break;
            const operations = Math.max(lookup.calls, BENCH_BASELINES.natsRequestOperationsMin);
            record(await nats.measure(lookup.requestBytes, lookup.replyBytes, seriesSettings(operations, lookup.concurrency)));
          }
        } finally {
          await nats.close();
        }
      }
    }

    if (selected('pk') && !interrupt.signal.aborted) {
      startPhase(
        `restore: drop ${BENCH_PK_TABLE.name}, load ${formatCount(options.restoreKeys)} keys into PK table ${BENCH_RESTORE_TABLE.name} (1 bucket), SIGTERM its leader, ` +
          `put ${formatCount(BENCH_RESTORE.keysAfterSnapshot)} more keys, kill -9 the new leader; restarting each node after; drop the table`,
      );
      // Its buckets would be restored alongside the measured one after each fault, on the same node.
      await dropBenchTable(io, cluster.gatewayUrl, BENCH_PK_TABLE);
      note(`  dropped table ${BENCH_PK_TABLE.name}, so the restored node restores no other PK bucket at the same time`);
      restore = await runRestore({ io, cluster, keys: options.restoreKeys, deadlineMs: deadlineAfter(options.seconds), signal: interrupt.signal, progress: note });
      if (!interrupt.signal.aborted) {
        // A bucket of a million keys moving along with the probed log bucket changes what the failover figures measure.
        await dropBenchTable(io, cluster.gatewayUrl, BENCH_RESTORE_TABLE);
        note(`  dropped table ${BENCH_RESTORE_TABLE.name}, so the failover figures measure log buckets alone, as before`);
      }
    }
    if (selected('pk') && !interrupt.signal.aborted) {
      const snapshotSizes = [...new Set((restore?.trials ?? []).filter((trial) => trial.snapshotObject !== null).map((trial) => trial.snapshotBytes))];
      startPhase(
        `baseline: raw S3 GET of the restored snapshot's size (${snapshotSizes.length === 0 ? 'none restored' : snapshotSizes.map(formatSize).join(', ')}), ` +
          `${BENCH_BASELINES.s3GetOperations} one at a time`,
      );
      for (const sizeBytes of snapshotSizes) {
        if (interrupt.signal.aborted) break;
        record(await measureS3Get(store, sizeBytes, seriesSettings(BENCH_BASELINES.s3GetOperations, 1), note));
      }
    }

    // The raw S3 GET baseline of the Kafka consume series and the scans, measured once per run.
    const measureScanGetBaseline = async (): Promise<void> => {
      const key = { kind: 's3-get', payloadBytes: BENCH_SCAN.getBodyBytes, concurrency: BENCH_SCAN.scansInFlight } as const;
      if (findBaseline(baselines, key) !== undefined) {
        note(`  raw S3 GET of ${formatSize(key.payloadBytes)}, ${key.concurrency} in flight: measured earlier in this run`);
        return;
      }
      record(await measureS3Get(store!, key.payloadBytes, seriesSettings(BENCH_SCAN.getOperations, key.concurrency), note));
    };

    if (selected('kafka') && !interrupt.signal.aborted) {
      kafka = await runKafka({
        cluster,
        records: options.kafkaRecords,
        sendsInFlight: options.concurrency,
        idempotent: BENCH_KAFKA.idempotent,
        seconds: options.seconds,
        signal: interrupt.signal,
        processIds: minkProcessIds,
        progress: note,
        startPhase,
        measureGetBaseline: measureScanGetBaseline,
        deleteTopic: selected('scan') || selected('failover') || selected('metadata'),
      });
    }

    if (selected('scan') && !interrupt.signal.aborted) {
      scan = await runScan({
        io,
        cluster,
        store: listStore!,
        rows: options.scanRows,
        batchRows: options.batchRows,
        concurrency: options.concurrency,
        longPolls: options.longPolls,
        deadlineMs: deadlineAfter(options.seconds),
        signal: interrupt.signal,
        processIds: minkProcessIds,
        progress: note,
        startPhase,
        measureGetBaseline: measureScanGetBaseline,
      });
      if ((selected('failover') || selected('metadata')) && scan !== null && !interrupt.signal.aborted) {
        // Its buckets would move along with the probed bucket and count among the metadata stages' buckets.
        await dropBenchTable(io, cluster.gatewayUrl, BENCH_SCAN_TABLE);
        await dropBenchTable(io, cluster.gatewayUrl, BENCH_SCAN_WARMUP_TABLE);
        note(`  dropped tables ${BENCH_SCAN_TABLE.name} and ${BENCH_SCAN_WARMUP_TABLE.name}, so the figures that follow see the same tables as before the scan figures`);
      }
    }

    if (selected('tiering') && !interrupt.signal.aborted) {
      tiering = await runTiering({
        io,
        cluster,
        store: listStore!,
        rows: options.tieringRows,
        batchRows: options.batchRows,
        concurrency: options.concurrency,
        seconds: options.seconds,
        signal: interrupt.signal,
        processIds: minkProcessIds,
        progress: note,
        startPhase,
        measureBaselines: async () => {
          await measureScanGetBaseline();
          // A round stores its data files one after the other.
          await measureS3PutSizes([LIMITS.walFlushBytes], [1]);
        },
      });
      if ((selected('failover') || selected('metadata')) && tiering !== null && !interrupt.signal.aborted) {
        // Its buckets would move along with the probed bucket, and its rounds would go on during the failover trials.
        await dropBenchTable(io, cluster.gatewayUrl, BENCH_TIERING_TABLE);
        note(`  dropped table ${BENCH_TIERING_TABLE.name}, so the figures that follow see the same tables as before the tiering figures`);
      }
    }

    if (selected('soak') && !interrupt.signal.aborted) {
      startPhase(`soak: ${options.soakRowsPerSecond} rows/s offered through the gateway for ${options.soakMinutes} min, mink's resident memory sampled every ${BENCH_SOAK.sampleIntervalMs / 1_000} s`);
      soak = await runSoak({
        gatewayUrl: cluster.gatewayUrl,
        minutes: options.soakMinutes,
        rowsPerSecond: options.soakRowsPerSecond,
        batchRows: BENCH_SOAK.batchRows,
        firstId: 4 * idRange,
        processes: minkProcesses,
        signal: interrupt.signal,
        progress: note,
      });
    }

    if (selected('failover') && !interrupt.signal.aborted) {
      startPhase(
        `failover: kill -9, then SIGTERM, of the leader of one bucket, ${BENCH_FAILOVER.trialsPerFault} times each, ` +
          `while a probe appends to that bucket (restarting the node after each)`,
      );
      // The restore moved buckets between nodes; the probe's bucket must be served before its first trial.
      if ((await waitForOpenBuckets(io, cluster.gatewayUrl, interrupt.signal)) !== null) {
        failover = await runFailover({ io, cluster, signal: interrupt.signal, progress: note });
      }
    }

    if (selected('metadata') && !interrupt.signal.aborted) {
      metadata = await runMetadata({
        io,
        cluster: () => {
          if (cluster === null) throw new Error('the cluster is not running');
          return cluster;
        },
        restartCluster: async () => {
          const stoppingMs = performance.now();
          await cluster?.stop();
          cluster = null;
          const startingMs = performance.now();
          cluster = await startCluster(clusterOptions);
          return { stopMs: startingMs - stoppingMs, startMs: performance.now() - startingMs };
        },
        stageBuckets: options.metadataBuckets,
        leaseTtlMs: BENCH_CLUSTER.leaseTtlMs,
        createSecondsMax: options.seconds,
        signal: interrupt.signal,
        progress: note,
        startPhase,
      });
      // Item 4 of the write-path issue: what one CommitWal costs every process at these view sizes.
      if (!interrupt.signal.aborted) {
        metadata.applyCosts = [
          ...options.metadataBuckets.map((buckets) => measureApplyCost(buckets, buckets * BENCH_METADATA.applyCostObjectsPerBucket)),
          // Streams written by many short-lived clients remember writers up to the bound.
          measureApplyCost(BENCH_METADATA.applyCostWritersBuckets, BENCH_METADATA.applyCostWritersBuckets * BENCH_METADATA.applyCostObjectsPerBucket, undefined, undefined, LIMITS.writersPerStreamMax),
          // Streams with a long history: a slice per packed MiB (or per larger batch) stays for the table's retention.
          measureApplyCost(BENCH_METADATA.applyCostLongHistoryBuckets, BENCH_METADATA.applyCostLongHistoryBuckets * BENCH_METADATA.applyCostLongHistorySlices),
        ];
      }
    }
    return finish();
  } finally {
    store?.close();
    listStore?.close();
    if (cluster !== null) {
      note('stopping the cluster');
      await cluster.stop();
    }
    if (options.keep) note(`kept ${dataDir} (cluster data, S3 objects, logs/${options.profile ? ', CPU profiles in profiles/' : ''})`);
    else rmSync(dataDir, { recursive: true, force: true });
    // Only now: a second Ctrl-C while the cluster stops must still reach onSignal, whose exit lets
    // LocalCluster's exit handler kill the processes (the default action of SIGINT would skip it).
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }

  /** The append scenarios of mink's paths, without the floor write path. */
  function minkAppends(): AppendResult[] {
    return appends.filter((append) => append.path !== 'floor');
  }

  function finish(): BenchResult {
    const writeInputs: WriteRatioInput[] = [
      ...appends.map((append) => ({ name: `${append.path} append`, write: append, averageWalObjectBytes: averageWalObjectBytes(append.path === 'floor' ? [append] : minkAppends()) })),
      ...(put === null ? [] : [{ name: 'client put', write: put, averageWalObjectBytes: averageWalObjectBytes([put]) }]),
    ];
    return {
      machine,
      options: {
        rows: options.rows,
        batchRows: options.batchRows,
        concurrency: options.concurrency,
        seconds: options.seconds,
        figures: options.figures,
        pkKeys: options.pkKeys,
        restoreKeys: options.restoreKeys,
        metadataBuckets: options.metadataBuckets,
        scanRows: options.scanRows,
        longPolls: options.longPolls,
        kafkaRecords: options.kafkaRecords,
        tieringRows: options.tieringRows,
        soakMinutes: options.soakMinutes,
        soakRowsPerSecond: options.soakRowsPerSecond,
        ...(options.s3Latency ? { s3Latency: options.s3Latency } : {}),
      },
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
      put,
      lookups,
      restore,
      ratios: [
        ...computeRatios({
          baselines,
          writes: writeInputs,
          concurrency: options.concurrency,
          fullWalObjectBytes: LIMITS.walFlushBytes,
          jetStreamPayloadBytes: BENCH_BASELINES.jetStreamPayloadBytes,
          lingerMs: LIMITS.walLingerMs,
        }),
        ...lookupRatios(lookups, baselines),
        ...(restore === null ? [] : restoreRatios(restore, baselines)),
        ...(kafka === null ? [] : kafkaRatios(kafka, baselines, appends.find((append) => append.path === 'floor') ?? null)),
        ...(scan === null ? [] : scanRatios(scan.series, baselines)),
        ...(tiering === null ? [] : tieringRatios(tiering, baselines)),
        ...(metadata === null ? [] : metadataRatios(metadata.stages, baselines, BENCH_BASELINES.jetStreamPayloadBytes, BENCH_CLUSTER.leaseTtlMs)),
      ],
      failover,
      metadata,
      scan,
      kafka,
      tiering,
      soak,
      memory: memoryWatch?.stop() ?? null,
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
