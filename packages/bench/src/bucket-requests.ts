/**
 * How many bucket requests the data nodes answered during a write scenario, read from their own counters
 * (`mink_bucket_requests_total` on /metrics): with the scenario's calls and WAL objects it shows how the
 * rows travelled, e.g. how many calls' rows the client merged into one request of a bucket. Most of a data
 * node's CPU under small calls goes per request and per WAL object rather than per byte, so these counts
 * explain the throughput figures beside them.
 */
import { BENCH_METADATA } from './bench-limits';

const REQUESTS_METRIC = 'mink_bucket_requests_total';

/**
 * The sum of the `mink_bucket_requests_total` samples of `table` and `op` (every bucket and outcome) in a
 * Prometheus text exposition; 0 when there are none. Other metrics, comments and unreadable samples are skipped.
 */
export function bucketRequestsInExposition(exposition: string, table: string, op: string): number {
  let total = 0;
  for (const line of exposition.split('\n')) {
    if (!line.startsWith(`${REQUESTS_METRIC}{`)) continue;
    const labelsEnd = line.lastIndexOf('}');
    if (labelsEnd < 0) continue;
    const labels = labelsOf(line.slice(REQUESTS_METRIC.length + 1, labelsEnd));
    if (labels.get('table') !== table || labels.get('op') !== op) continue;
    const value = Number(line.slice(labelsEnd + 1).trim().split(/\s+/)[0]);
    if (Number.isFinite(value)) total += value;
  }
  return total;
}

/** The label pairs of a sample (`a="x",b="y"`), with `\"`, `\\` and `\n` unescaped as the text format writes them. */
function labelsOf(text: string): Map<string, string> {
  const labels = new Map<string, string>();
  for (const match of text.matchAll(/([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
    labels.set(match[1]!, match[2]!.replace(/\\(.)/g, (_, escaped: string) => (escaped === 'n' ? '\n' : escaped)));
  }
  return labels;
}

/**
 * The requests answered between two readings, or null when either is missing or the count went down (a
 * data node restarted in between and its counters began again).
 */
export function requestsBetween(before: number | null, after: number | null): number | null {
  return before === null || after === null || after < before ? null : after - before;
}

/** The bucket requests of `table` and `op` the data nodes at `metricsUrls` have answered so far; null when one of them does not answer. */
export async function readBucketRequests(metricsUrls: readonly string[], table: string, op: string): Promise<number | null> {
  try {
    const counts = await Promise.all(
      metricsUrls.map(async (url) => {
        const response = await fetch(url, { signal: AbortSignal.timeout(BENCH_METADATA.monitorRequestTimeoutMs) });
        if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
        return bucketRequestsInExposition(await response.text(), table, op);
      }),
    );
    return counts.reduce((sum, count) => sum + count, 0);
  } catch {
    return null;
  }
}
