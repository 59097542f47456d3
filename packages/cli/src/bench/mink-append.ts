import { MinkClient } from '@mink/client';
import type { ObjectStore } from '@mink/s3stream';
import { CliError, type CliIo } from '../io';
import { BENCH_BASELINES, BENCH_LIMITS, BENCH_TABLE } from './bench-limits';
import { runClosedLoop } from './closed-loop';
import { ProgressReporter } from './progress';
import type { AppendResult } from './results';
import { ratePerSecond, summarizeLatencies } from './stats';
import { listWalObjects, walObjectsWrittenSince } from './wal-objects';

/** One row of the bench table, as JSON sends it. */
export interface BenchRow {
  id: number;
  name: string;
  value: number;
}

/** What a mink scenario needs: the rows to send, how, and where progress lines go. */
export interface AppendScenarioSettings {
  rows: number;
  batchRows: number;
  concurrency: number;
  /** Ids of this scenario's rows start here, so two scenarios never write the same ids. */
  firstId: number;
  deadlineMs?: number;
  signal?: AbortSignal;
  /** Lists the WAL objects before and after, to report what the scenario wrote to S3. */
  store: ObjectStore;
  progress: (line: string) => void;
}

/** A batch ready to send, with the figures the result counts once it is acknowledged. */
interface PreparedBatch<Payload> {
  payload: Payload;
  rowCount: number;
  jsonBytes: number;
}

/** How one path turns rows into a request and sends it; `send` resolves once the rows are acknowledged. */
interface BatchAppender<Payload> {
  encode(rows: BenchRow[]): PreparedBatch<Payload>;
  send(batch: PreparedBatch<Payload>): Promise<void>;
}

/**
 * The rows of call `index`: consecutive ids, a name from a small set (so the string column compresses as
 * real data would) and a float. About 50 bytes of JSON per row.
 */
export function benchRows(settings: Pick<AppendScenarioSettings, 'rows' | 'batchRows' | 'firstId'>, index: number): BenchRow[] {
  const start = index * settings.batchRows;
  const count = Math.max(0, Math.min(settings.batchRows, settings.rows - start));
  return Array.from({ length: count }, (_, offset) => {
    const id = settings.firstId + start + offset;
    return { id, name: `sensor-${id % 1_000}`, value: (id % 10_007) / 7 };
  });
}

/** Append calls a scenario makes: the last one carries the remainder. */
export function appendCallCount(rows: number, batchRows: number): number {
  return Math.ceil(rows / batchRows);
}

/** `POST /v1/tables/{table}/append` with `{rows}` bodies, `concurrency` requests in flight. */
export async function runGatewayAppend(io: CliIo, gatewayUrl: string, settings: AppendScenarioSettings): Promise<AppendResult | null> {
  const url = `${gatewayUrl}/v1/tables/${encodeURIComponent(BENCH_TABLE.name)}/append`;
  const appender: BatchAppender<string> = {
    encode: (rows) => {
      const payload = JSON.stringify({ rows });
      return { payload, rowCount: rows.length, jsonBytes: Buffer.byteLength(payload) };
    },
    send: async (batch) => {
      const response = await io.fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: batch.payload });
      // The body is read in full either way, so the connection goes back to the pool.
      const text = await response.text();
      if (!response.ok) throw new Error(`HTTP ${response.status}: ${text.slice(0, 300)}`);
      const appended = (JSON.parse(text) as { appended?: unknown }).appended;
      if (appended !== batch.rowCount) throw new Error(`the gateway acknowledged ${String(appended)} rows of ${batch.rowCount}`);
    },
  };
  return runAppendScenario('gateway', appender, settings);
}

/** `MinkClient.table(name).append(rows)` over NATS, `concurrency` calls in flight on one client. */
export async function runClientAppend(natsUrl: string, settings: AppendScenarioSettings): Promise<AppendResult | null> {
  const client = await MinkClient.connect({ servers: natsUrl, name: 'mink-bench' });
  try {
    const table = client.table(BENCH_TABLE.name);
    const appender: BatchAppender<BenchRow[]> = {
      // The client sends the same rows as JSON; counting them the same way keeps MB/s comparable with the gateway's.
      encode: (rows) => ({ payload: rows, rowCount: rows.length, jsonBytes: Buffer.byteLength(JSON.stringify({ rows })) }),
      send: async (batch) => {
        const result = await table.append(batch.payload);
        if (result.appended !== batch.rowCount) throw new Error(`the client acknowledged ${result.appended} rows of ${batch.rowCount}`);
      },
    };
    return await runAppendScenario('client', appender, settings);
  } finally {
    await client.close();
  }
}

/**
 * Warms up, runs the measured calls with progress lines, and measures the WAL objects they produced.
 * Returns null when the signal stopped the scenario before any measured call succeeded.
 */
async function runAppendScenario<Payload>(path: AppendResult['path'], appender: BatchAppender<Payload>, settings: AppendScenarioSettings): Promise<AppendResult | null> {
  const calls = appendCallCount(settings.rows, settings.batchRows);
  // Warm-up calls (the first describe of the table, new connections) write ids after the measured ones,
  // so they are neither counted nor colliding with them.
  const warmupRows = { firstId: settings.firstId + settings.rows, rows: settings.batchRows * BENCH_BASELINES.warmupOperations, batchRows: settings.batchRows };
  await runClosedLoop(
    { prepare: (index) => appender.encode(benchRows(warmupRows, index)), send: (batch) => appender.send(batch) },
    { operations: BENCH_BASELINES.warmupOperations, concurrency: settings.concurrency, signal: settings.signal, failuresMax: BENCH_LIMITS.failedCallsMax },
  ).catch((error: unknown) => {
    throw new CliError(`${path} append failed while warming up: ${error instanceof Error ? error.message : String(error)}`);
  });

  const walBefore = await listWalObjects(settings.store);
  const progress = new ProgressReporter(`${path} append`, settings.rows, 'rows', settings.progress);
  let rows = 0;
  let jsonBytes = 0;
  const measured = await runClosedLoop<PreparedBatch<Payload>>(
    {
      prepare: (index) => appender.encode(benchRows(settings, index)),
      send: async (batch) => {
        await appender.send(batch);
        rows += batch.rowCount;
        jsonBytes += batch.jsonBytes;
        progress.add(batch.rowCount);
      },
    },
    { operations: calls, concurrency: settings.concurrency, deadlineMs: settings.deadlineMs, signal: settings.signal, failuresMax: BENCH_LIMITS.failedCallsMax },
  ).finally(() => progress.finish());
  if (measured.latenciesMs.length === 0 && settings.signal?.aborted) return null;
  if (measured.latenciesMs.length === 0) throw new CliError(`${path} append: no call succeeded (${measured.firstFailureMessage ?? 'none ran'})`);
  const walAfter = await listWalObjects(settings.store);
  return {
    path,
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
  };
}
