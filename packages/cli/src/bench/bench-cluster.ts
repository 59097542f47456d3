import { setTimeout as sleep } from 'node:timers/promises';
import { CliError, type CliIo } from '../io';
import { BENCH_CLUSTER, BENCH_TABLE } from './bench-limits';

/** `GET /v1/cluster` (README, HTTP API); only the fields the bench reads. */
export interface ClusterStatus {
  nodes?: { id?: string; epoch?: number; live?: boolean }[];
  buckets?: { table?: string; bucket?: number; leader?: string; state?: string }[];
}

/** Answers whether a cluster status is the one a wait is for. */
export type ClusterCondition = (status: ClusterStatus) => boolean;

/** One `GET /v1/cluster`. */
export async function readClusterStatus(io: CliIo, gatewayUrl: string): Promise<ClusterStatus> {
  const response = await io.fetch(`${gatewayUrl}/v1/cluster`);
  const text = await response.text();
  if (!response.ok) throw new Error(`GET /v1/cluster answered HTTP ${response.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text) as ClusterStatus;
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
 * Polls `GET /v1/cluster` until every bucket of the bench table is reported `open` by its leader (and
 * `condition` holds, e.g. a restarted node is live again), so the first measured append does not wait for a
 * bucket to be opened. Returns how many were open, or null when the signal aborted the wait.
 */
export async function waitForOpenBuckets(io: CliIo, gatewayUrl: string, signal: AbortSignal, condition: ClusterCondition = () => true): Promise<number | null> {
  const deadlineMs = Date.now() + BENCH_CLUSTER.bucketsOpenTimeoutMs;
  let lastSeen = 'no answer yet';
  while (Date.now() < deadlineMs) {
    if (signal.aborted) return null;
    try {
      const status = await readClusterStatus(io, gatewayUrl);
      const buckets = (status.buckets ?? []).filter((bucket) => bucket.table === BENCH_TABLE.name);
      const open = buckets.filter((bucket) => bucket.state === 'open').length;
      const holds = condition(status);
      if (buckets.length === BENCH_TABLE.buckets && open === buckets.length && holds) return open;
      lastSeen = `${open} of ${BENCH_TABLE.buckets} buckets open${holds ? '' : ', the awaited condition not yet met'}`;
    } catch (error) {
      lastSeen = error instanceof Error ? error.message : String(error);
    }
    await sleep(BENCH_CLUSTER.bucketsOpenPollIntervalMs);
  }
  throw new CliError(`the buckets of ${BENCH_TABLE.name} did not open within ${BENCH_CLUSTER.bucketsOpenTimeoutMs} ms (${lastSeen})`);
}
