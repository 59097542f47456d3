import { setTimeout as sleep } from 'node:timers/promises';
import { CliError, type CliIo } from '../io';
import { BENCH_CLUSTER, BENCH_TABLE } from './bench-limits';

/** Bucket states of `GET /v1/cluster` (README, HTTP API); only the fields read here. */
interface ClusterStatus {
  buckets?: { table?: string; bucket?: number; state?: string }[];
}

/** `POST /v1/tables` for the bench's log table; any answer but 201 stops the run. */
export async function createBenchTable(io: CliIo, gatewayUrl: string): Promise<void> {
  const response = await io.fetch(`${gatewayUrl}/v1/tables`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(BENCH_TABLE),
  });
  const text = await response.text();
  if (response.status !== 201) throw new CliError(`creating table ${BENCH_TABLE.name} answered HTTP ${response.status}: ${text.slice(0, 300)}`);
}

/**
 * Polls `GET /v1/cluster` until every bucket of the bench table is reported `open` by its leader, so the
 * first measured append does not wait for a bucket to be opened. Returns how many were open, or null when
 * the signal aborted the wait.
 */
export async function waitForOpenBuckets(io: CliIo, gatewayUrl: string, signal: AbortSignal): Promise<number | null> {
  const deadlineMs = Date.now() + BENCH_CLUSTER.bucketsOpenTimeoutMs;
  let lastSeen = 'no answer yet';
  while (Date.now() < deadlineMs) {
    if (signal.aborted) return null;
    try {
      const response = await io.fetch(`${gatewayUrl}/v1/cluster`);
      const status = (await response.json()) as ClusterStatus;
      const buckets = (status.buckets ?? []).filter((bucket) => bucket.table === BENCH_TABLE.name);
      const open = buckets.filter((bucket) => bucket.state === 'open').length;
      if (buckets.length === BENCH_TABLE.buckets && open === buckets.length) return open;
      lastSeen = `${open} of ${BENCH_TABLE.buckets} buckets open`;
    } catch (error) {
      lastSeen = error instanceof Error ? error.message : String(error);
    }
    await sleep(BENCH_CLUSTER.bucketsOpenPollIntervalMs);
  }
  throw new CliError(`the buckets of ${BENCH_TABLE.name} did not open within ${BENCH_CLUSTER.bucketsOpenTimeoutMs} ms (${lastSeen})`);
}
