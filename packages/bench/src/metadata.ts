import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect } from 'nats';
import type { CliIo } from '@mink/cli';
import { DEFAULTS } from '@mink/config';
import type { LocalCluster } from '@mink/devcluster';
import { readClusterStatus, type ClusterStatus } from './bench-cluster';
import { BENCH_LIMITS, BENCH_METADATA } from './bench-limits';
import { runClosedLoop, TooManyFailuresError, type ClosedLoopOperation } from './closed-loop';
import { formatCount, formatSeconds } from './format';
import { classifyCreateAnswer, epochBumps, tablesForStage } from './metadata-figures';
import { bucketsInDataNodeLogLines, describeExit, MetadataMonitor } from './metadata-monitor';
import { ProgressReporter } from './progress';
import type { DataNodeState, MetadataResult, MetadataStageResult } from './results';
import { ratePerSecond, summarizeLatencies } from './stats';

/** The line a data node logs, once a second, with how many buckets it took over from dead incarnations of other nodes (BucketEventsLog). */
export const TAKEOVER_MESSAGE = 'buckets taken over';

export interface MetadataSettings {
  io: CliIo;
  /** The cluster as it is now (a restart replaces it). */
  cluster: () => LocalCluster;
  /** Stops every process and starts them again on the same data dir; resolves with both durations once all are ready. */
  restartCluster: () => Promise<{ stopMs: number; startMs: number }>;
  /** The bucket count each stage creates tables until, increasing. */
  stageBuckets: readonly number[];
  leaseTtlMs: number;
  /** --seconds: a further cap on each stage's creates. */
  createSecondsMax: number | null;
  /** Aborting it ends the current wait; the figures so far are returned. */
  signal: AbortSignal;
  progress: (line: string) => void;
  /** Prints the "[n/count]" line of each stage. */
  startPhase: (text: string) => void;
}

/**
 * The metadata scenario: for each stage, tables of `BENCH_METADATA.bucketsPerTable` buckets are created
 * through `POST /v1/tables` of the gateway with `BENCH_METADATA.createsInFlight` in flight until the bench's
 * tables hold the stage's bucket count (a 503 with Retry-After is retried after it), then GET /v1/cluster
 * is polled until every bucket is open, and the whole cluster is restarted on its data dir and polled
 * again. Meanwhile a monitor watches heartbeats, /metrics and the metadata log's tails. A stage that ends
 * short (a process exited, a deadline passed, too many creates failed) ends the scenario.
 */
export async function runMetadata(settings: MetadataSettings): Promise<MetadataResult> {
  const stages: MetadataStageResult[] = [];
  let bucketsCreated = 0;
  let tablesNamed = 0;
  for (const [index, targetBuckets] of settings.stageBuckets.entries()) {
    if (settings.signal.aborted) break;
    const tables = tablesForStage(targetBuckets, bucketsCreated, BENCH_METADATA.bucketsPerTable);
    settings.startPhase(
      `metadata stage ${index + 1}/${settings.stageBuckets.length}: create ${formatCount(tables)} tables of ${BENCH_METADATA.bucketsPerTable} buckets through the gateway, ` +
        `${BENCH_METADATA.createsInFlight} in flight, until ${formatCount(targetBuckets)} buckets; wait until every bucket is open; restart the whole cluster and wait again`,
    );
    const stage = await runStage(settings, targetBuckets, tables, tablesNamed, bucketsCreated);
    stages.push(stage);
    tablesNamed += tables;
    bucketsCreated += stage.bucketsCreated;
    const stoppedBecause = stage.stoppedBecause ?? stage.restart?.stoppedBecause ?? null;
    if (stoppedBecause !== null) {
      settings.progress(`  stage ended short (${stoppedBecause}); ${index + 1 < settings.stageBuckets.length ? 'the later stages are skipped' : 'no stage follows'}`);
      break;
    }
  }
  return { bucketsPerTable: BENCH_METADATA.bucketsPerTable, createsInFlight: BENCH_METADATA.createsInFlight, stages };
}

async function runStage(settings: MetadataSettings, targetBuckets: number, tables: number, firstTableIndex: number, bucketsBefore: number): Promise<MetadataStageResult> {
  const { io, progress } = settings;
  const cluster = settings.cluster();
  const stop = new AbortController();
  let stoppedBecause: string | null = null;
  const stopStage = (reason: string): void => {
    if (stoppedBecause !== null) return;
    stoppedBecause = reason;
    stop.abort();
  };
  const onInterrupt = (): void => stopStage('interrupted');
  settings.signal.addEventListener('abort', onInterrupt);
  const takeoversBefore = bucketsInDataNodeLogLines(cluster, TAKEOVER_MESSAGE, readLog);
  const nodesBefore = dataNodesOf(await readClusterStatus(io, cluster.gatewayUrl, { listBuckets: false }).catch(() => null));
  const seqBefore = await lastMetaSeq(cluster.natsUrl);
  const monitor = await MetadataMonitor.start(cluster, (line) => {
    progress(`  ${line}`);
    stopStage('a process exited');
  });

  let retriedUnavailable = 0;
  let created = 0;
  const reporter = new ProgressReporter(`stage ${formatCount(targetBuckets)}: table creates`, tables, 'tables', progress);
  const operation: ClosedLoopOperation<string> = {
    prepare: (index) => `${BENCH_METADATA.tableNamePrefix}${String(firstTableIndex + index).padStart(5, '0')}`,
    send: async (name) => {
      for (;;) {
        const response = await io.fetch(`${cluster.gatewayUrl}/v1/tables`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ name, columns: BENCH_METADATA.columns, buckets: BENCH_METADATA.bucketsPerTable }),
        });
        const text = await response.text();
        const answer = classifyCreateAnswer(response.status, response.headers.get('retry-after'));
        if (answer.kind === 'created') return;
        if (answer.kind === 'failed') throw new Error(`creating ${name} answered HTTP ${response.status}: ${text.slice(0, 300)}`);
        retriedUnavailable += 1;
        await sleep(answer.afterMs, undefined, { signal: stop.signal });
      }
    },
  };
  const createCapMs = Math.min(BENCH_METADATA.createTimeoutMs, (settings.createSecondsMax ?? Number.POSITIVE_INFINITY) * 1_000);
  const startedMs = performance.now();
  let createLatency: MetadataStageResult['createLatency'] = null;
  let failedCreates = 0;
  let firstFailureMessage: string | null = null;
  try {
    const loop = await runClosedLoop(operation, {
      operations: tables,
      concurrency: BENCH_METADATA.createsInFlight,
      deadlineMs: startedMs + createCapMs,
      signal: stop.signal,
      failuresMax: BENCH_LIMITS.failedCallsMax,
      onSuccess: () => {
        created += 1;
        reporter.add(1);
      },
    });
    failedCreates = loop.failures;
    firstFailureMessage = loop.firstFailureMessage;
    if (loop.latenciesMs.length > 0) createLatency = summarizeLatencies(loop.latenciesMs);
    if (loop.stoppedEarly) stopStage(`the creates were stopped after ${formatSeconds(createCapMs)} s`);
    else if (loop.failures > 0) stopStage(`${loop.failures} creates failed`);
  } catch (error) {
    if (!(error instanceof TooManyFailuresError)) throw error;
    failedCreates = error.failures;
    firstFailureMessage = error.firstFailureMessage;
    stopStage(`more than ${BENCH_LIMITS.failedCallsMax} creates failed`);
  } finally {
    reporter.finish();
  }
  const createElapsedMs = performance.now() - startedMs;
  const bucketsCreated = created * BENCH_METADATA.bucketsPerTable;
  const benchBuckets = bucketsBefore + bucketsCreated;

  let allOpenMs: number | null = null;
  let metaLogEntries: number | null = null;
  let lastStatus: ClusterStatus | null = null;
  if (stoppedBecause === null) {
    const opened = await waitUntilEveryBucketOpen(io, cluster, benchBuckets, BENCH_METADATA.openTimeoutMs, stop.signal, startedMs, `stage ${formatCount(targetBuckets)}`, progress);
    lastStatus = opened.status;
    if (opened.allOpenAtMs !== null) {
      allOpenMs = opened.allOpenAtMs - startedMs;
      metaLogEntries = (await lastMetaSeq(cluster.natsUrl)) - seqBefore;
    } else {
      stopStage(opened.stoppedBecause ?? 'not every bucket opened');
    }
  }
  const health = await monitor.stop(settings.leaseTtlMs);
  settings.signal.removeEventListener('abort', onInterrupt);
  lastStatus ??= await readClusterStatus(io, cluster.gatewayUrl, { listBuckets: false }).catch(() => null);
  const stage: MetadataStageResult = {
    targetBuckets,
    tablesAsked: tables,
    tablesCreated: created,
    bucketsCreated,
    clusterBuckets: bucketCountOf(lastStatus),
    retriedUnavailable,
    failedCreates,
    firstFailureMessage,
    createElapsedMs,
    tableCreatesPerSecond: created > 0 ? ratePerSecond(created, createElapsedMs) : null,
    createLatency,
    allOpenMs,
    bucketsOpenedPerSecond: allOpenMs === null ? null : ratePerSecond(bucketsCreated, allOpenMs),
    metaLogEntries,
    commandsPerTableCreate: metaLogEntries === null || created === 0 ? null : metaLogEntries / created,
    applyCommandsPerSecond: metaLogEntries === null || allOpenMs === null ? null : ratePerSecond(metaLogEntries, allOpenMs),
    health,
    nodes: dataNodesOf(lastStatus),
    epochBumps: epochBumps(nodesBefore, dataNodesOf(lastStatus)),
    takeovers: bucketsInDataNodeLogLines(cluster, TAKEOVER_MESSAGE, readLog) - takeoversBefore,
    exitedProcesses: monitor.exitedProcesses(),
    restart: null,
    stoppedBecause,
  };
  if (stoppedBecause !== null || settings.signal.aborted) return stage;

  progress(`  stage ${formatCount(targetBuckets)}: every bucket open after ${formatSeconds(allOpenMs!)} s; restarting the whole cluster on its data dir`);
  let restarted: { stopMs: number; startMs: number };
  try {
    restarted = await settings.restartCluster();
  } catch (error) {
    const reason = `the restarted cluster did not start: ${error instanceof Error ? error.message : String(error)}`;
    stage.restart = { stopMs: 0, startMs: 0, allOpenMs: null, buckets: 0, bucketsOpenedPerSecond: null, exitedProcesses: [], nodes: [], stoppedBecause: reason };
    return stage;
  }
  // The wait counts from the moment the processes were started again, not from when they were all ready.
  const startedAgainAtMs = performance.now() - restarted.startMs;
  const reopened = await waitUntilEveryBucketOpen(io, settings.cluster(), benchBuckets, BENCH_METADATA.restartOpenTimeoutMs, settings.signal, startedAgainAtMs, `stage ${formatCount(targetBuckets)} restart`, progress);
  const reopenedMs = reopened.allOpenAtMs === null ? null : reopened.allOpenAtMs - startedAgainAtMs;
  const reopenedBuckets = bucketCountOf(reopened.status);
  stage.restart = {
    ...restarted,
    allOpenMs: reopenedMs,
    buckets: reopenedBuckets,
    bucketsOpenedPerSecond: reopenedMs === null ? null : ratePerSecond(reopenedBuckets, reopenedMs),
    exitedProcesses: reopened.exitedProcesses,
    nodes: dataNodesOf(reopened.status),
    stoppedBecause: reopened.stoppedBecause,
  };
  return stage;
}

interface OpenWait {
  /** `performance.now()` of the poll that first saw every bucket open; null when none did. */
  allOpenAtMs: number | null;
  /** The `performance.now()` the wait counts from. */
  startedAtMs: number;
  status: ClusterStatus | null;
  exitedProcesses: string[];
  stoppedBecause: string | null;
}

/**
 * Polls GET /v1/cluster until the bench's tables hold `benchBuckets` buckets and every bucket of the
 * cluster is open, printing a progress line per poll; ends early when a process of the cluster exits,
 * the signal aborts or `timeoutMs` passes.
 */
async function waitUntilEveryBucketOpen(
  io: CliIo,
  cluster: LocalCluster,
  benchBuckets: number,
  timeoutMs: number,
  signal: AbortSignal,
  startedAtMs: number,
  label: string,
  progress: (line: string) => void,
): Promise<OpenWait> {
  const deadlineMs = performance.now() + timeoutMs;
  let status: ClusterStatus | null = null;
  let lastError = '';
  const result = (allOpenAtMs: number | null, stoppedBecause: string | null, exitedProcesses: string[] = []): OpenWait => ({ allOpenAtMs, startedAtMs, status, exitedProcesses, stoppedBecause });
  for (;;) {
    const exited = cluster.processes().filter((entry) => !entry.running).map(describeExit);
    if (exited.length > 0) return result(null, 'a process exited', exited);
    if (signal.aborted) return result(null, 'interrupted');
    if (performance.now() >= deadlineMs) return result(null, `not every bucket was open within ${formatSeconds(timeoutMs)} s${lastError ? ` (${lastError})` : ''}`);
    try {
      // The counts by state, not the list: at 100 000 buckets the list is a 15 MB answer that cost the gateway
      // about a second of CPU per poll, competing with the very opening it timed.
      status = await readClusterStatus(io, cluster.gatewayUrl, { listBuckets: false });
      const total = bucketCountOf(status);
      const open = status.bucketStates?.open ?? 0;
      const polledAtMs = performance.now();
      progress(`  ${label}: ${formatCount(open)} / ${formatCount(total)} buckets open, ${formatSeconds(polledAtMs - startedAtMs)} s`);
      if (total >= benchBuckets && open === total) return result(polledAtMs, null);
      lastError = '';
    } catch (error) {
      lastError = error instanceof Error ? error.message : String(error);
    }
    await sleep(BENCH_METADATA.statusPollIntervalMs, undefined, { signal }).catch(() => undefined);
  }
}

/** Every bucket of the cluster, whatever its state, from the counts of a GET /v1/cluster answer. */
function bucketCountOf(status: ClusterStatus | null): number {
  const states = status?.bucketStates;
  return (states?.open ?? 0) + (states?.opening ?? 0) + (states?.unavailable ?? 0);
}

/** The last sequence of the metadata log, from its JetStream stream info. */
async function lastMetaSeq(natsUrl: string): Promise<number> {
  const connection = await connect({ servers: natsUrl, name: 'mink-bench-metadata' });
  try {
    return (await (await connection.jetstreamManager()).streams.info(DEFAULTS.metaStream)).state.last_seq;
  } finally {
    await connection.close();
  }
}

/** The data nodes of a GET /v1/cluster answer; `buckets` is the count of buckets each leads (docs/http-api.md). */
function dataNodesOf(status: ClusterStatus | null): DataNodeState[] {
  return (status?.nodes ?? []).map((node) => ({
    id: node.id ?? '?',
    epoch: node.epoch ?? 0,
    live: node.live ?? false,
    buckets: (node as { buckets?: number }).buckets ?? 0,
  }));
}

function readLog(file: string): string {
  return readFileSync(file, 'utf8');
}
