import { CliError } from '@mink/cli';
import type { ObjectStore } from '@mink/s3stream';
import { BENCH_BASELINES, BENCH_LIMITS } from './bench-limits';
import { runClosedLoop } from './closed-loop';
import { formatCount } from './format';
import { ProgressReporter } from './progress';
import type { WriteScenarioResult } from './results';
import { ratePerSecond, summarizeLatencies } from './stats';
import { cpuByRole, readProcessUsage, readRoleUsage, type ProcessUsage, type RoleProcess } from './process-usage';
import { listWalObjects, walObjectsWrittenSince } from './wal-objects';
import { requestsBetween } from './bucket-requests';

/** One row of the bench tables, as JSON sends it. */
export interface BenchRow {
  id: number;
  name: string;
  value: number;
  /** Only in the log table's rows (`payloadChars` > 0). */
  payload?: string;
}

/** What a write scenario needs: the rows to send, how, and where progress lines go. */
export interface WriteScenarioSettings {
  rows: number;
  batchRows: number;
  concurrency: number;
  /** Ids of this scenario's rows start here, so two scenarios never write the same ids. */
  firstId: number;
  /** Characters of a `payload` string in each row; 0 or absent sends rows without one. */
  payloadChars?: number;
  deadlineMs?: number;
  signal?: AbortSignal;
  /** Lists the WAL objects before and after, to report what the scenario wrote to S3. */
  store: ObjectStore;
  /** Where the objects the scenario writes are listed; mink's WAL (`WAL_KEY_PREFIX`) when absent. */
  walKeyPrefix?: string;
  /** Pids of the cluster's mink processes, whose CPU time and memory the scenario reports. */
  processIds?: () => number[];
  /** Pids of the cluster's S3 and NATS servers, whose CPU time the scenario reports beside mink's and its own. */
  serverProcessIds?: () => number[];
  /** Every process of the cluster with its role (servers included), whose CPU the scenario reports role by role beside the load generator's. */
  processRoles?: () => RoleProcess[];
  progress: (line: string) => void;
  /** Untimed calls before the measured ones (their ids follow the measured rows); `BENCH_BASELINES.warmupOperations` when absent. */
  warmupCalls?: number;
  /** The bucket requests of the scenario's table and operation the data nodes have answered so far (see bucket-requests.ts); null when unknown. */
  bucketRequests?: () => Promise<number | null>;
}

/** A batch ready to send, with the figures the result counts once it is acknowledged. */
export interface PreparedBatch<Payload> {
  payload: Payload;
  rowCount: number;
  jsonBytes: number;
}

/** How one path turns rows into a request and sends it; `send` resolves once the rows are acknowledged. */
export interface BatchWriter<Payload> {
  encode(rows: BenchRow[]): PreparedBatch<Payload>;
  send(batch: PreparedBatch<Payload>): Promise<void>;
}

/** A scenario's figures, and which of its calls were acknowledged (their rows are `benchRows(settings, index)`). */
export interface WriteScenarioOutcome {
  result: WriteScenarioResult;
  acknowledgedCalls: number[];
}

/**
 * The rows of call `index`: consecutive ids, a name from a small set (so the string column compresses as
 * real data would) and a float, about 50 bytes of JSON per row; with `payloadChars`, a payload string of
 * that length that differs per row.
 */
export function benchRows(settings: Pick<WriteScenarioSettings, 'rows' | 'batchRows' | 'firstId' | 'payloadChars'>, index: number): BenchRow[] {
  const start = index * settings.batchRows;
  const count = Math.max(0, Math.min(settings.batchRows, settings.rows - start));
  const payloadChars = settings.payloadChars ?? 0;
  return Array.from({ length: count }, (_, offset) => {
    const id = settings.firstId + start + offset;
    const row: BenchRow = { id, name: `sensor-${id % 1_000}`, value: (id % 10_007) / 7 };
    if (payloadChars > 0) row.payload = payloadOf(id, payloadChars);
    return row;
  });
}

/** A string of `chars` characters that starts with the id, so no two rows carry the same payload. */
export function payloadOf(id: number, chars: number): string {
  const head = `${id}:`;
  return (head + 'abcdefghijklmnopqrstuvwxyz0123456789'.repeat(Math.ceil(chars / 36))).slice(0, chars);
}

/** The warm-up calls of a measured append or put series of `rows` (see BENCH_BASELINES.measuredWriteWarmupShare). */
export function measuredWarmupCalls(rows: number, batchRows: number): number {
  return Math.max(BENCH_BASELINES.warmupOperations, Math.ceil(writeCallCount(rows, batchRows) * BENCH_BASELINES.measuredWriteWarmupShare));
}

/** Calls a scenario makes: the last one carries the remainder. */
export function writeCallCount(rows: number, batchRows: number): number {
  return Math.ceil(rows / batchRows);
}

/** The ids of the rows of the acknowledged calls, in call order. */
export function acknowledgedIds(settings: Pick<WriteScenarioSettings, 'rows' | 'batchRows' | 'firstId'>, acknowledgedCalls: readonly number[]): number[] {
  return [...acknowledgedCalls].sort((a, b) => a - b).flatMap((index) => benchRows(settings, index).map((row) => row.id));
}

/**
 * Warms up, runs the measured calls with progress lines, and measures the WAL objects they produced.
 * `label` names the scenario in progress lines and errors ("client put"). Returns null when the signal
 * stopped the scenario before any measured call succeeded.
 */
export async function runWriteScenario<Payload>(label: string, writer: BatchWriter<Payload>, settings: WriteScenarioSettings): Promise<WriteScenarioOutcome | null> {
  const calls = writeCallCount(settings.rows, settings.batchRows);
  // Warm-up calls (the first describe of the table, new connections) write ids after the measured ones,
  // so they are neither counted nor colliding with them.
  const warmupCalls = settings.warmupCalls ?? BENCH_BASELINES.warmupOperations;
  const warmupRows = {
    firstId: settings.firstId + settings.rows,
    rows: settings.batchRows * warmupCalls,
    batchRows: settings.batchRows,
    payloadChars: settings.payloadChars,
  };
  await runClosedLoop(
    { prepare: (index) => writer.encode(benchRows(warmupRows, index)), send: (batch) => writer.send(batch) },
    { operations: warmupCalls, concurrency: settings.concurrency, signal: settings.signal, failuresMax: BENCH_LIMITS.failedCallsMax },
  ).catch((error: unknown) => {
    throw new CliError(`${label} failed while warming up: ${error instanceof Error ? error.message : String(error)}`);
  });

  // Every measured batch is built before the clock starts, as a producer already holds its records (and as
  // Kafka's producer-perf-test does): building rows, JSON or Arrow in this process while the cluster runs
  // beside it on the same cores would charge the load generator's CPU to mink's figures.
  settings.progress(`${label}: preparing ${formatCount(calls)} calls`);
  const prepared: (PreparedBatch<Payload> | undefined)[] = Array.from({ length: calls }, (_, index) => writer.encode(benchRows(settings, index)));
  const walBefore = await listWalObjects(settings.store, settings.walKeyPrefix);
  const requestsBefore = settings.bucketRequests ? await settings.bucketRequests() : null;
  const usageBefore = settings.processIds ? readProcessUsage(settings.processIds()) : null;
  const serverUsageBefore = settings.serverProcessIds ? readProcessUsage(settings.serverProcessIds()) : null;
  const rolesUsageBefore = settings.processRoles ? readRoleUsage(withLoadGenerator(settings.processRoles())) : null;
  const benchUsageBefore = process.cpuUsage();
  const progress = new ProgressReporter(label, settings.rows, 'rows', settings.progress);
  let rows = 0;
  let jsonBytes = 0;
  const measured = await runClosedLoop<PreparedBatch<Payload>>(
    {
      prepare: (index) => {
        const batch = prepared[index]!;
        prepared[index] = undefined; // sent once; its memory goes back as the run goes on
        return batch;
      },
      send: async (batch) => {
        await writer.send(batch);
        rows += batch.rowCount;
        jsonBytes += batch.jsonBytes;
        progress.add(batch.rowCount);
      },
    },
    { operations: calls, concurrency: settings.concurrency, deadlineMs: settings.deadlineMs, signal: settings.signal, failuresMax: BENCH_LIMITS.failedCallsMax },
  ).finally(() => progress.finish());
  if (measured.latenciesMs.length === 0 && settings.signal?.aborted) return null;
  if (measured.latenciesMs.length === 0) throw new CliError(`${label}: no call succeeded (${measured.firstFailureMessage ?? 'none ran'})`);
  const usageAfter = settings.processIds ? readProcessUsage(settings.processIds()) : null;
  const serverUsageAfter = settings.serverProcessIds ? readProcessUsage(settings.serverProcessIds()) : null;
  const benchUsage = process.cpuUsage(benchUsageBefore);
  const rolesUsageAfter = settings.processRoles ? readRoleUsage(withLoadGenerator(settings.processRoles())) : null;
  const walAfter = await listWalObjects(settings.store, settings.walKeyPrefix);
  const requestsAfter = settings.bucketRequests ? await settings.bucketRequests() : null;
  const megabytes = jsonBytes / 1e6;
  const minkCpuSeconds = cpuSecondsBetween(usageBefore, usageAfter);
  return {
    result: {
      rows,
      calls: measured.latenciesMs.length,
      failedCalls: measured.failures,
      firstFailureMessage: measured.firstFailureMessage,
      stoppedEarly: measured.stoppedEarly,
      elapsedMs: measured.elapsedMs,
      rowsPerSecond: ratePerSecond(rows, measured.elapsedMs),
      payloadBytesPerSecond: ratePerSecond(jsonBytes, measured.elapsedMs),
      latency: summarizeLatencies(measured.latenciesMs),
      wal: walObjectsWrittenSince(walBefore, walAfter, measured.elapsedMs),
      bucketRequests: requestsBetween(requestsBefore, requestsAfter),
      cpuSecondsPerMegabyte: minkCpuSeconds !== null && megabytes > 0 ? minkCpuSeconds / megabytes : null,
      rssMaxBytes: usageAfter && usageAfter.rssMaxBytes > 0 ? usageAfter.rssMaxBytes : null,
      cpuByRole: rolesUsageBefore && rolesUsageAfter && rolesUsageAfter.length > 0 ? cpuByRole(rolesUsageBefore, rolesUsageAfter, megabytes) : null,
      ...cpuElsewhere({
        minkCpuSeconds,
        serverCpuSeconds: cpuSecondsBetween(serverUsageBefore, serverUsageAfter),
        benchCpuSeconds: (benchUsage.user + benchUsage.system) / 1e6,
        megabytes,
        elapsedMs: measured.elapsedMs,
      }),
    },
    acknowledgedCalls: measured.succeededIndexes,
  };
}

/** The role the bench's own process is reported under. */
const LOAD_GENERATOR_ROLE = 'load generator';

/** The cluster's processes and this one, the load generator (it runs the client of the client paths). */
function withLoadGenerator(processes: readonly RoleProcess[]): RoleProcess[] {
  return [...processes, { role: LOAD_GENERATOR_ROLE, pid: process.pid }];
}

/** The CPU seconds processes used between two readings; null when either is missing or /proc gave nothing. */
function cpuSecondsBetween(before: ProcessUsage | null, after: ProcessUsage | null): number | null {
  return before && after && after.cpuSeconds > 0 ? after.cpuSeconds - before.cpuSeconds : null;
}

/**
 * The CPU of the S3 and NATS servers and of the load generator per MB of JSON rows, and the cores all of
 * them and mink's processes kept busy on average; each null where its inputs are unknown.
 */
export function cpuElsewhere(usage: {
  minkCpuSeconds: number | null;
  serverCpuSeconds: number | null;
  benchCpuSeconds: number;
  megabytes: number;
  elapsedMs: number;
}): { serverCpuSecondsPerMegabyte: number | null; benchCpuSecondsPerMegabyte: number | null; coresBusy: number | null } {
  const { minkCpuSeconds, serverCpuSeconds, benchCpuSeconds, megabytes, elapsedMs } = usage;
  return {
    serverCpuSecondsPerMegabyte: serverCpuSeconds !== null && megabytes > 0 ? serverCpuSeconds / megabytes : null,
    benchCpuSecondsPerMegabyte: megabytes > 0 ? benchCpuSeconds / megabytes : null,
    coresBusy: minkCpuSeconds !== null && serverCpuSeconds !== null && elapsedMs > 0 ? (minkCpuSeconds + serverCpuSeconds + benchCpuSeconds) / (elapsedMs / 1_000) : null,
  };
}
