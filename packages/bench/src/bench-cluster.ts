import { setTimeout as sleep } from 'node:timers/promises';
import { CliError, type CliIo } from '@mink/cli';
import { BENCH_CLUSTER, BENCH_TABLE } from './bench-limits';

/** `GET /v1/cluster` (docs/http-api.md); only the fields the bench reads. */
export interface ClusterStatus {
  nodes?: { id?: string; epoch?: number; live?: boolean }[];
  buckets?: { table?: string; bucket?: number; leader?: string; state?: string; walSlices?: number }[];
  bucketStates?: { open?: number; opening?: number; unavailable?: number };
}

/** Answers whether a cluster status is the one a wait is for. */
export type ClusterCondition = (status: ClusterStatus) => boolean;

/** One `GET /v1/cluster`; without the per-bucket list when `listBuckets` is false (the nodes and the counts by state). */
export async function readClusterStatus(io: CliIo, gatewayUrl: string, { listBuckets = true }: { listBuckets?: boolean } = {}): Promise<ClusterStatus> {
  const response = await io.fetch(`${gatewayUrl}/v1/cluster${listBuckets ? '' : '?buckets=false'}`);
  const text = await response.text();
  if (!response.ok) throw new Error(`GET /v1/cluster answered HTTP ${response.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text) as ClusterStatus;
}

/** A table of the bench as `POST /v1/tables` takes it; the bench reads its name and bucket count. */
export interface BenchTableSpec {
  name: string;
  buckets: number;
}

/** `POST /v1/tables` for one of the bench's tables (the log table unless told); any answer but 201 stops the run. */
export async function createBenchTable(io: CliIo, gatewayUrl: string, table: BenchTableSpec = BENCH_TABLE): Promise<void> {
  const response = await io.fetch(`${gatewayUrl}/v1/tables`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(table),
  });
  const text = await response.text();
  if (response.status !== 201) throw new CliError(`creating table ${table.name} answered HTTP ${response.status}: ${text.slice(0, 300)}`);
}

/** `DELETE /v1/tables/{name}` of a bench table whose figures are taken; any answer but 2xx stops the run. */
export async function dropBenchTable(io: CliIo, gatewayUrl: string, table: BenchTableSpec): Promise<void> {
  const response = await io.fetch(`${gatewayUrl}/v1/tables/${encodeURIComponent(table.name)}`, { method: 'DELETE' });
  const text = await response.text();
  if (!response.ok) throw new CliError(`dropping table ${table.name} answered HTTP ${response.status}: ${text.slice(0, 300)}`);
}

/**
 * Polls `GET /v1/cluster` until every bucket of a bench table (the log table unless told) is reported
 * `open` by its leader (and `condition` holds, e.g. a restarted node is live again), so the first measured
 * call does not wait for a bucket to be opened. Returns how many were open, or null when the signal
 * aborted the wait.
 */
export async function waitForOpenBuckets(
  io: CliIo,
  gatewayUrl: string,
  signal: AbortSignal,
  condition: ClusterCondition = () => true,
  table: BenchTableSpec = BENCH_TABLE,
): Promise<number | null> {
  const deadlineMs = Date.now() + BENCH_CLUSTER.bucketsOpenTimeoutMs;
  let lastSeen = 'no answer yet';
  while (Date.now() < deadlineMs) {
    if (signal.aborted) return null;
    try {
      const status = await readClusterStatus(io, gatewayUrl);
      const buckets = (status.buckets ?? []).filter((bucket) => bucket.table === table.name);
      const open = buckets.filter((bucket) => bucket.state === 'open').length;
      const holds = condition(status);
      if (buckets.length === table.buckets && open === buckets.length && holds) return open;
      lastSeen = `${open} of ${table.buckets} buckets open${holds ? '' : ', the awaited condition not yet met'}`;
    } catch (error) {
      lastSeen = error instanceof Error ? error.message : String(error);
    }
    await sleep(BENCH_CLUSTER.bucketsOpenPollIntervalMs);
  }
  throw new CliError(`the buckets of ${table.name} did not open within ${BENCH_CLUSTER.bucketsOpenTimeoutMs} ms (${lastSeen})`);
}
