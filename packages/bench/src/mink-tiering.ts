import { stat } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { CliError, type CliIo } from '@mink/cli';
import { MinkClient, type TableClient } from '@mink/client';
import type { LocalCluster } from '@mink/devcluster';
import type { AppendBucketResult } from '@mink/protocol';
import type { ObjectStore } from '@mink/s3stream';
import { createBenchTable, waitForOpenBuckets } from './bench-cluster';
import { BENCH_BASELINES, BENCH_LIMITS, BENCH_PAYLOAD_CHARS, BENCH_TIERING, BENCH_TIERING_TABLE } from './bench-limits';
import { formatCount, formatSeconds } from './format';
import { arrowAppendWriter, scanRecordBatchOf } from './mink-scan';
import { readFrom } from './pk-restore';
import { readProcessUsage } from './process-usage';
import type { FreshnessLagResult, TieringCatchUpResult, TieringResult, TieringRoundLog } from './results';
import { ratePerSecond, summarizeLatencies } from './stats';
import {
  checkCaughtUp,
  describeCatchUp,
  describeLag,
  lagHalvesP50Ms,
  lagSeriesPlan,
  pacedCallStartMs,
  parseLakeProgress,
  parseTieringRounds,
  recordsBehind,
  roundsSettled,
  summarizeLag,
  summarizeRounds,
  tieredPrefix,
  type AcknowledgedAppend,
  type LagSample,
  type LakeProgress,
} from './tiering-figures';
import { benchRows, runWriteScenario } from './write-scenario';

/** What of the cluster the tiering figures use: endpoints, and the tiering workers' pids and log files. */
export type TieringCluster = Pick<LocalCluster, 'gatewayUrl' | 'natsUrl' | 'processes'>;

export interface TieringSettings {
  io: CliIo;
  cluster: TieringCluster;
  /** The run's S3 adapter: the load lists WAL objects with it. */
  store: ObjectStore;
  /** Rows the load appends with the lake off (its warm-up appends a few calls more). */
  rows: number;
  batchRows: number;
  /** Append calls of the load in flight, and at most as many of the freshness series. */
  concurrency: number;
  /** `--seconds`: caps the load and the freshness series; null for none. */
  seconds: number | null;
  signal: AbortSignal;
  /** Pids of the cluster's mink processes, for the load's CPU figures. */
  processIds: () => number[];
  progress: (line: string) => void;
  /** Prints the "[n/count]" line of each phase (`TIERING_PHASES` of them). */
  startPhase: (text: string) => void;
  /** Measures the raw S3 GET and PUT baselines the catch-up is compared with (each skipped when measured earlier in the run), and records them. */
  measureBaselines: () => Promise<void>;
}

/** Phases the tiering figures print: the load, the S3 baselines, the catch-up, the freshness series. */
export const TIERING_PHASES = 4;

/** `table.datalake.freshness` as the table property takes it. */
const FRESHNESS_PROPERTY_VALUE = `${BENCH_TIERING.freshnessMs / 1_000}s`;

/**
 * The tiering figures (issue "`pnpm bench`: tiering MB/s … lake freshness lag"):
 * 1. the tiering table is created with the lake off and `rows` rows appended through `appendArrow`, their
 *    acknowledgements kept (which records each bucket holds); the load's rows/s is the append ceiling of
 *    these rows in this run;
 * 2. raw S3 GET and PUT baselines, before any round runs;
 * 3. the lake is enabled with `PATCH /v1/tables/{t}` (freshness `BENCH_TIERING.freshnessMs`), and the
 *    table's description is read every `catchUpPollIntervalMs` until every lake offset is at its committed
 *    end; the tiering worker's log says what its rounds read and wrote and when;
 * 4. appends at `ceilingFraction` of the load's rows/s for `lagSeconds`, each acknowledgement kept with
 *    where it ends in each bucket; the lake offsets sampled every `lagSampleIntervalMs` give the newest
 *    acknowledgement the lake holds with all before it, and the lag is the time since.
 * Returns null when the signal aborted the figures before the table was loaded.
 */
export async function runTiering(settings: TieringSettings): Promise<TieringResult | null> {
  const { io, cluster, signal, progress, startPhase } = settings;
  const table = BENCH_TIERING_TABLE;
  startPhase(
    `tiering table: create ${table.name} ({id int64, payload string(${BENCH_PAYLOAD_CHARS})}, ${table.buckets} buckets, lake off) and append ` +
      `${formatCount(settings.rows)} rows through the TypeScript client (appendArrow)`,
  );
  await createBenchTable(io, cluster.gatewayUrl, table);
  if ((await waitForOpenBuckets(io, cluster.gatewayUrl, signal, undefined, table)) === null) return null;
  const client = await MinkClient.connect({ servers: cluster.natsUrl, name: 'mink-bench tiering' });
  try {
    const tableClient = client.table(table.name);
    const loaded = await loadTable(settings, tableClient);
    if (loaded === null) return null;
    const rows = loaded.ackedEnds.reduce((sum, end) => sum + end, 0);
    progress(`  ${formatCount(rows)} rows in ${table.name} (the load and its warm-up), ${formatCount(loaded.load.rowsPerSecond)} rows/s`);
    const result: TieringResult = { table: table.name, buckets: table.buckets, tieringWorkers: tieringWorkers(cluster).length, load: loaded.load, rows, catchUp: null, lag: null };
    if (signal.aborted) return result;

    startPhase('baselines of the tiering figures: raw S3 GET of 1 MiB, 4 in flight (a round reads its slices in parallel), and PUT of 1 MiB, 1 in flight (it stores its files one by one)');
    await settings.measureBaselines();
    if (signal.aborted) return result;

    startPhase(
      `enable the lake of ${table.name} (PATCH /v1/tables/${table.name}, freshness ${FRESHNESS_PROPERTY_VALUE}) and wait until it holds every row, ` +
        `at most ${formatSeconds(BENCH_TIERING.catchUpTimeoutMs)} s (${result.tieringWorkers} tiering worker${result.tieringWorkers === 1 ? '' : 's'})`,
    );
    result.catchUp = await measureCatchUp(settings, loaded.ackedEnds);
    progress(`  ${describeCatchUp(result.catchUp)}`);
    if (signal.aborted || result.catchUp.catchUpMs === null) return result;

    const seconds = Math.min(BENCH_TIERING.lagSeconds, settings.seconds ?? Infinity);
    startPhase(
      `freshness lag: appendArrow at ${BENCH_TIERING.ceilingFraction} × the load's ${formatCount(loaded.load.rowsPerSecond)} rows/s for ${seconds} s, ` +
        `reading the lake offsets every ${BENCH_TIERING.lagSampleIntervalMs} ms (freshness ${FRESHNESS_PROPERTY_VALUE})`,
    );
    result.lag = await measureLag(settings, tableClient, loaded, seconds);
    progress(`  ${describeLag(result.lag)}`);
    return result;
  } finally {
    await client.close();
  }
}

/** The loaded table: the load's figures, the records each bucket holds by the acknowledgements, and the first id not yet written. */
interface LoadedTable {
  load: TieringResult['load'];
  ackedEnds: number[];
  nextId: number;
}

/** Appends `rows` rows (ids from 0) through `appendArrow` with the write scenario of the append figures. Null when the signal stopped it before any call was acknowledged. */
async function loadTable(settings: TieringSettings, table: TableClient): Promise<LoadedTable | null> {
  const acknowledged: AppendBucketResult[] = [];
  const writer = arrowAppendWriter(table, acknowledged);
  const outcome = await runWriteScenario('tiering table load', writer, {
    rows: settings.rows,
    batchRows: settings.batchRows,
    concurrency: settings.concurrency,
    firstId: 0,
    payloadChars: BENCH_PAYLOAD_CHARS,
    deadlineMs: settings.seconds === null ? undefined : performance.now() + settings.seconds * 1_000,
    signal: settings.signal,
    store: settings.store,
    processIds: settings.processIds,
    progress: settings.progress,
  });
  if (outcome === null) return null;
  const ackedEnds = new Array<number>(BENCH_TIERING_TABLE.buckets).fill(0);
  for (const part of acknowledged) ackedEnds[part.bucket] = (ackedEnds[part.bucket] ?? 0) + part.count;
  // The warm-up wrote the ids after the measured rows (runWriteScenario); the freshness series goes on after those.
  return { load: outcome.result, ackedEnds, nextId: settings.rows + settings.batchRows * BENCH_BASELINES.warmupOperations };
}

/** The tiering workers of the cluster that are running: their pids and log files. */
function tieringWorkers(cluster: TieringCluster): { pid: number; logFile: string }[] {
  return cluster
    .processes()
    .filter((entry) => entry.role === 'tiering-worker' && entry.running)
    .map((entry) => ({ pid: entry.pid, logFile: entry.logFile }));
}

/** Where each worker's log ends now: the rounds of a phase are those logged after it. */
async function logMarks(workers: readonly { logFile: string }[]): Promise<Map<string, number>> {
  return new Map(await Promise.all(workers.map(async (worker) => [worker.logFile, (await stat(worker.logFile)).size] as const)));
}

/** The rounds the workers logged after `marks`, once every round up to `tieringEpoch` has an outcome there (or `logLineTimeoutMs` passed). */
async function roundsLoggedSince(marks: ReadonlyMap<string, number>, tieringEpoch: number): Promise<TieringRoundLog[]> {
  const deadlineMs = performance.now() + BENCH_TIERING.logLineTimeoutMs;
  for (;;) {
    const texts = await Promise.all([...marks].map(([file, fromBytes]) => readFrom(file, fromBytes)));
    const rounds = parseTieringRounds(texts.join('\n'), BENCH_TIERING_TABLE.name);
    if (roundsSettled(rounds, tieringEpoch) || performance.now() >= deadlineMs) return rounds;
    await sleep(BENCH_TIERING.catchUpPollIntervalMs);
  }
}

/** One `GET /v1/tables/{t}` of the tiering table, as its lake's progress. */
async function describeLake(io: CliIo, gatewayUrl: string): Promise<LakeProgress> {
  const response = await io.fetch(`${gatewayUrl}/v1/tables/${encodeURIComponent(BENCH_TIERING_TABLE.name)}`);
  const text = await response.text();
  if (!response.ok) throw new Error(`GET /v1/tables/${BENCH_TIERING_TABLE.name} answered HTTP ${response.status}: ${text.slice(0, 300)}`);
  return parseLakeProgress(JSON.parse(text), BENCH_TIERING_TABLE.buckets);
}

/** `PATCH /v1/tables/{t}` turning the lake on at the figures' freshness; any answer but 2xx stops the run. */
async function enableLake(io: CliIo, gatewayUrl: string): Promise<void> {
  const response = await io.fetch(`${gatewayUrl}/v1/tables/${encodeURIComponent(BENCH_TIERING_TABLE.name)}`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ properties: { 'table.datalake.enabled': 'true', 'table.datalake.freshness': FRESHNESS_PROPERTY_VALUE } }),
  });
  const text = await response.text();
  if (!response.ok) throw new CliError(`enabling the lake of ${BENCH_TIERING_TABLE.name} answered HTTP ${response.status}: ${text.slice(0, 300)}`);
}

/**
 * Enables the lake and waits until its offsets reach the committed ends; nothing is appended meanwhile, so
 * the ends do not move. The rounds' own account (stored bytes read, Parquet written, when each was taken
 * and committed) comes from the workers' logs; the worker's CPU from /proc.
 */
async function measureCatchUp(settings: TieringSettings, ackedEnds: readonly number[]): Promise<TieringCatchUpResult> {
  const { io, cluster, signal } = settings;
  const before = await describeLake(io, cluster.gatewayUrl);
  const records = before.committedEnds.reduce((sum, end) => sum + end, 0);
  const workers = tieringWorkers(cluster);
  const marks = await logMarks(workers);
  const usageBefore = readProcessUsage(workers.map((worker) => worker.pid));
  const enabledMs = performance.now();
  await enableLake(io, cluster.gatewayUrl);
  let progress = before;
  let catchUpMs: number | null = null;
  let stoppedBecause: string | null = null;
  let reportedMs = enabledMs;
  let failedRead: string | null = null;
  for (;;) {
    try {
      progress = await describeLake(io, cluster.gatewayUrl);
      failedRead = null;
    } catch (error) {
      // A gateway that does not answer once is waited for like a slow round; the timeout says so if it lasts.
      failedRead = error instanceof Error ? error.message : String(error);
    }
    const behind = recordsBehind(progress);
    const nowMs = performance.now();
    if (behind === 0) {
      catchUpMs = nowMs - enabledMs;
      break;
    }
    if (signal.aborted) {
      stoppedBecause = 'interrupted';
      break;
    }
    const round = progress.round === null ? 'no round in progress' : `round ${progress.round.tieringEpoch} in progress since ${formatSeconds(Date.now() - progress.round.startedAtMs)} s`;
    if (nowMs - enabledMs >= BENCH_TIERING.catchUpTimeoutMs) {
      stoppedBecause =
        `the lake still lacked ${formatCount(behind)} of ${formatCount(records)} records ${formatSeconds(BENCH_TIERING.catchUpTimeoutMs)} s after it was enabled (${round}` +
        (failedRead === null ? ')' : `; the last read of the table failed: ${failedRead})`);
      break;
    }
    if (nowMs - reportedMs >= 1_000) {
      settings.progress(`  after ${formatSeconds(nowMs - enabledMs)} s the lake holds ${formatCount(records - behind)} of ${formatCount(records)} records; ${round}`);
      reportedMs = nowMs;
    }
    await sleep(BENCH_TIERING.catchUpPollIntervalMs);
  }
  const usageAfter = readProcessUsage(workers.map((worker) => worker.pid));
  const rounds = summarizeRounds(await roundsLoggedSince(marks, progress.tieringEpoch));
  let checkFailure = catchUpMs === null ? null : checkCaughtUp(progress, ackedEnds);
  if (checkFailure === null && catchUpMs !== null && rounds.rows !== records) {
    checkFailure = `the rounds logged ${formatCount(rounds.rows)} rows tiered, the lake offsets moved over ${formatCount(records)} records`;
  }
  const megabytes = rounds.sourceBytes / 1e6;
  const cpuSeconds = usageAfter.cpuSeconds - usageBefore.cpuSeconds;
  return {
    records,
    rounds,
    catchUpMs,
    bytesPerSecond: rounds.spanMs === null ? null : ratePerSecond(rounds.sourceBytes, rounds.spanMs),
    rowsPerSecond: rounds.spanMs === null ? null : ratePerSecond(rounds.rows, rounds.spanMs),
    catchUpBytesPerSecond: catchUpMs === null || rounds.sourceBytes === 0 ? null : ratePerSecond(rounds.sourceBytes, catchUpMs),
    workerCpuSecondsPerMegabyte: megabytes > 0 && usageAfter.cpuSeconds > 0 ? cpuSeconds / megabytes : null,
    workerRssMaxBytes: usageAfter.rssMaxBytes > 0 ? usageAfter.rssMaxBytes : null,
    stoppedBecause,
    checkFailure,
  };
}

/**
 * The freshness series. Calls go out on a fixed schedule (an open loop, as a producer at a steady rate
 * sends), at most `concurrency` in flight: a call that would exceed it waits and is counted late. A sampler
 * reads the lake's progress meanwhile and computes each sample's lag from the acknowledgements so far; the
 * samples before the series' first committed round are warm-up (the lake had just caught up, so the lag
 * starts from zero rather than from a steady state). After the last call, the lake is waited for until it
 * holds every acknowledged append.
 */
async function measureLag(settings: TieringSettings, table: TableClient, loaded: LoadedTable, seconds: number): Promise<FreshnessLagResult> {
  const { io, cluster, signal } = settings;
  const plan = lagSeriesPlan(loaded.load.rowsPerSecond, BENCH_TIERING.ceilingFraction, seconds, settings.batchRows, BENCH_TIERING.lagCallsPerSecondMin);
  const rowsOfSeries = { rows: plan.calls * plan.rowsPerCall, batchRows: plan.rowsPerCall, firstId: loaded.nextId, payloadChars: BENCH_PAYLOAD_CHARS };
  const atStart = await describeLake(io, cluster.gatewayUrl);
  const workers = tieringWorkers(cluster);
  const marks = await logMarks(workers);
  const usageBefore = readProcessUsage(workers.map((worker) => worker.pid));
  const appends: AcknowledgedAppend[] = [];
  const samples: LagSample[] = [];
  let failedSamples = 0;
  let sending = true;
  let lastProgress = atStart;
  const startMs = performance.now();

  const sampler = (async (): Promise<number> => {
    let held = 0;
    let steady = false;
    for (let tick = 1; sending; tick++) {
      try {
        const progress = await describeLake(io, cluster.gatewayUrl);
        const nowMs = performance.now();
        lastProgress = progress;
        held = tieredPrefix(appends, held, progress.lakeOffsets);
        if (progress.tieredAtMs !== atStart.tieredAtMs) steady = true;
        const watermarkMs = held > 0 ? appends[held - 1]!.ackedAtMs : startMs;
        if (sending) samples.push({ atMs: nowMs - startMs, lagMs: nowMs - watermarkMs, steady });
        if (tick % 20 === 0) settings.progress(`  after ${formatSeconds(nowMs - startMs)} s: ${formatCount(appends.length)} appends acknowledged, lag now ${formatSeconds(nowMs - watermarkMs)} s`);
      } catch (error) {
        failedSamples++;
        if (failedSamples === 1) settings.progress(`  a sample failed: ${error instanceof Error ? error.message : String(error)}`);
      }
      await sleep(Math.max(0, startMs + tick * BENCH_TIERING.lagSampleIntervalMs - performance.now()));
    }
    return held;
  })();

  const inFlight = new Set<Promise<void>>();
  const ackMs: number[] = [];
  let calls = 0;
  let failedCalls = 0;
  let firstFailureMessage: string | null = null;
  let lateCalls = 0;
  let latestStartMs = 0;
  let rows = 0;
  let stoppedBecause: string | null = null;
  for (let index = 0; index < plan.calls; index++) {
    if (signal.aborted) {
      stoppedBecause = 'interrupted';
      break;
    }
    if (failedCalls > BENCH_LIMITS.failedCallsMax) {
      stoppedBecause = `${failedCalls} appends failed`;
      break;
    }
    const batch = scanRecordBatchOf(benchRows(rowsOfSeries, index));
    const dueMs = startMs + pacedCallStartMs(index, plan.rowsPerCall, plan.targetRowsPerSecond);
    await sleep(Math.max(0, dueMs - performance.now()));
    while (inFlight.size >= settings.concurrency) await Promise.race(inFlight);
    const sentMs = performance.now();
    if (sentMs - dueMs > plan.callIntervalMs) lateCalls++;
    latestStartMs = Math.max(latestStartMs, sentMs - dueMs);
    calls++;
    const call: Promise<void> = table.appendArrow(batch).then(
      (result) => {
        const ackedAtMs = performance.now();
        appends.push({ ackedAtMs, parts: result.buckets.map((part) => ({ bucket: part.bucket, endOffset: part.baseOffset + part.count })) });
        ackMs.push(ackedAtMs - sentMs);
        rows += result.appended;
      },
      (error: unknown) => {
        failedCalls++;
        firstFailureMessage ??= error instanceof Error ? error.message : String(error);
      },
    );
    inFlight.add(call);
    void call.finally(() => inFlight.delete(call));
  }
  await Promise.all(inFlight);
  const lastAckMs = appends.length === 0 ? null : appends[appends.length - 1]!.ackedAtMs;
  const elapsedMs = Math.max(1, (lastAckMs ?? performance.now()) - startMs);
  const usageAfter = readProcessUsage(workers.map((worker) => worker.pid));
  sending = false;
  let held = await sampler;

  let drainMs: number | null = null;
  const drainDeadlineMs = performance.now() + BENCH_TIERING.drainTimeoutMs;
  while (!signal.aborted) {
    try {
      lastProgress = await describeLake(io, cluster.gatewayUrl);
      held = tieredPrefix(appends, held, lastProgress.lakeOffsets);
    } catch {
      failedSamples++;
    }
    if (held === appends.length) {
      drainMs = performance.now() - (lastAckMs ?? startMs);
      break;
    }
    if (performance.now() >= drainDeadlineMs) break;
    await sleep(BENCH_TIERING.catchUpPollIntervalMs);
  }
  const rounds = summarizeRounds(await roundsLoggedSince(marks, lastProgress.tieringEpoch));
  const steadySamples = samples.filter((sample) => sample.steady).length;
  return {
    freshnessMs: BENCH_TIERING.freshnessMs,
    ceilingRowsPerSecond: loaded.load.rowsPerSecond,
    targetRowsPerSecond: plan.targetRowsPerSecond,
    rowsPerCall: plan.rowsPerCall,
    calls,
    acknowledgedCalls: appends.length,
    failedCalls,
    firstFailureMessage,
    callsInFlightMax: settings.concurrency,
    lateCalls,
    latestStartMs,
    rows,
    elapsedMs,
    rowsPerSecond: ratePerSecond(rows, elapsedMs),
    appendAck: ackMs.length === 0 ? null : summarizeLatencies(ackMs),
    sampleIntervalMs: BENCH_TIERING.lagSampleIntervalMs,
    samples: samples.length,
    warmupSamples: samples.length - steadySamples,
    failedSamples,
    lag: summarizeLag(samples),
    lagHalvesP50Ms: lagHalvesP50Ms(samples),
    rounds,
    drainMs,
    workerCpuShare: usageAfter.cpuSeconds > 0 ? (usageAfter.cpuSeconds - usageBefore.cpuSeconds) / (elapsedMs / 1_000) : null,
    stoppedBecause,
  };
}

