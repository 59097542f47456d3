import { CliError } from '@mink/cli';
import { MinkClient } from '@mink/client';
import { BENCH_BASELINES, BENCH_LIMITS, BENCH_LOOKUP, BENCH_PK_TABLE } from './bench-limits';
import { runClosedLoop } from './closed-loop';
import { averageLookupMessageBytes, lookupKeyIds, lookupMessageBytes, type LookupMessageBytes } from './pk-figures';
import { ProgressReporter } from './progress';
import type { LookupResult, PutResult } from './results';
import { ratePerSecond, summarizeLatencies } from './stats';
import { acknowledgedIds, runWriteScenario, type BatchWriter, type BenchRow, type WriteScenarioSettings } from './write-scenario';

/** The put scenario's figures and the ids it wrote, which the lookups read. */
export interface PutOutcome {
  put: PutResult;
  writtenIds: number[];
}

/**
 * `MinkClient.table(name).put(rows)` of new keys into the bench's primary-key table, `concurrency` calls in
 * flight on one client (which sends each bucket's share of a call in call order, as it does for appends).
 */
export async function runClientPut(natsUrl: string, settings: WriteScenarioSettings): Promise<PutOutcome | null> {
  const client = await MinkClient.connect({ servers: natsUrl, name: 'mink-bench' });
  try {
    const table = client.table(BENCH_PK_TABLE.name);
    const writer: BatchWriter<BenchRow[]> = {
      // Counted as the gateway's `{rows}` body, so JSON MB/s compares with the append figures.
      encode: (rows) => ({ payload: rows, rowCount: rows.length, jsonBytes: Buffer.byteLength(JSON.stringify({ rows })) }),
      send: async (batch) => {
        const result = await table.put(batch.payload);
        if (result.written !== batch.rowCount) throw new Error(`the client acknowledged ${result.written} rows of ${batch.rowCount}`);
      },
    };
    const outcome = await runWriteScenario('client put', writer, settings);
    if (outcome === null) return null;
    return {
      put: { path: 'client', table: BENCH_PK_TABLE.name, buckets: BENCH_PK_TABLE.buckets, ...outcome.result },
      writtenIds: acknowledgedIds(settings, outcome.acknowledgedCalls),
    };
  } finally {
    await client.close();
  }
}

export interface LookupSeriesSettings {
  /** Ids the put scenario wrote; every key looked up is one of them, so each must come back with its row. */
  writtenIds: readonly number[];
  keysPerCall: number;
  calls: number;
  concurrency: number;
  deadlineMs?: number;
  signal?: AbortSignal;
  progress: (line: string) => void;
}

/**
 * One series of `MinkClient.table(name).lookup(keys)` calls of keys the put wrote, `concurrency` in flight on
 * one client. A call that answers a key with no row, or with another key's row, counts as failed: the
 * figure must come from lookups that found what they looked for. Returns null when the signal stopped the
 * series before any call succeeded.
 */
export async function runClientLookups(natsUrl: string, settings: LookupSeriesSettings): Promise<LookupResult | null> {
  const client = await MinkClient.connect({ servers: natsUrl, name: 'mink-bench' });
  try {
    const table = client.table(BENCH_PK_TABLE.name);
    const { tableId } = await table.describe();
    const label = `client lookup of ${settings.keysPerCall} ${settings.keysPerCall === 1 ? 'key' : 'keys'}, ${settings.concurrency} in flight`;
    const sized: LookupMessageBytes[] = [];
    const lookUp = async (ids: number[]): Promise<void> => {
      const { rows } = await table.lookup(ids.map((id) => ({ id })));
      if (rows.length !== ids.length) throw new Error(`a lookup of ${ids.length} keys answered ${rows.length} rows`);
      ids.forEach((id, index) => {
        const row = rows[index] as { id?: unknown } | null;
        if (row === null || String(row.id) !== String(id)) throw new Error(`key ${id} was put, but its lookup answered ${JSON.stringify(row)}`);
      });
      if (sized.length < BENCH_LOOKUP.sizedCalls) sized.push(lookupMessageBytes(BENCH_PK_TABLE.name, tableId, ids, rows));
    };
    // Warm-up calls read keys past those of the measured calls, through the same client.
    await runClosedLoop(
      { prepare: (index) => lookupKeyIds(settings.writtenIds, settings.calls + index, settings.keysPerCall), send: lookUp },
      { operations: BENCH_BASELINES.warmupOperations, concurrency: settings.concurrency, signal: settings.signal, failuresMax: BENCH_LIMITS.failedCallsMax },
    ).catch((error: unknown) => {
      throw new CliError(`${label} failed while warming up: ${error instanceof Error ? error.message : String(error)}`);
    });
    sized.length = 0;

    const progress = new ProgressReporter(label, settings.calls, 'calls', settings.progress);
    const measured = await runClosedLoop(
      { prepare: (index) => lookupKeyIds(settings.writtenIds, index, settings.keysPerCall), send: lookUp },
      {
        operations: settings.calls,
        concurrency: settings.concurrency,
        deadlineMs: settings.deadlineMs,
        signal: settings.signal,
        failuresMax: BENCH_LIMITS.failedCallsMax,
        onSuccess: () => progress.add(1),
      },
    ).finally(() => progress.finish());
    if (measured.latenciesMs.length === 0 && settings.signal?.aborted) return null;
    const sizes = averageLookupMessageBytes(sized);
    if (measured.latenciesMs.length === 0 || sizes === null) throw new CliError(`${label}: no call succeeded (${measured.firstFailureMessage ?? 'none ran'})`);
    const callsPerSecond = ratePerSecond(measured.latenciesMs.length, measured.elapsedMs);
    return {
      table: BENCH_PK_TABLE.name,
      keysPerCall: settings.keysPerCall,
      concurrency: settings.concurrency,
      calls: measured.latenciesMs.length,
      failedCalls: measured.failures,
      firstFailureMessage: measured.firstFailureMessage,
      stoppedEarly: measured.stoppedEarly,
      elapsedMs: measured.elapsedMs,
      callsPerSecond,
      keysPerSecond: callsPerSecond * settings.keysPerCall,
      latency: summarizeLatencies(measured.latenciesMs),
      ...sizes,
    };
  } finally {
    await client.close();
  }
}
