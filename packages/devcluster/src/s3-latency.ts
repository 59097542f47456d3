import { parseDurationMs } from '@mink/config';

/**
 * The first-byte latency the local S3 server adds to every answer when it stands in for a cloud object
 * store (bin/s3-latency.js): log-normal with this median and 99th percentile; equal, a fixed delay.
 */
export interface S3Latency {
  medianMs: number;
  p99Ms: number;
}

/** The longest latency a local S3 server may be given: beyond it requests would meet the clients' timeouts. */
export const S3_LATENCY_MAX_MS = 10_000;

/**
 * Parses `--s3-latency`: `<median>` (a fixed delay, e.g. `20ms`) or `<median>:<p99>` (log-normal, e.g.
 * `20ms:80ms`), each a duration as `parseDurationMs` reads it; 0 < median ≤ p99 ≤ 10 s.
 */
export function parseS3Latency(text: string): S3Latency {
  const parts = text.split(':');
  if (parts.length > 2) throw new Error(`--s3-latency: '${text}' is not <median> or <median>:<p99> (e.g. 20ms or 20ms:80ms)`);
  const medianMs = parseDurationMs(parts[0]!, '--s3-latency median');
  const p99Ms = parts.length === 2 ? parseDurationMs(parts[1]!, '--s3-latency p99') : medianMs;
  if (p99Ms < medianMs) throw new Error(`--s3-latency: the p99 (${p99Ms} ms) must not be below the median (${medianMs} ms)`);
  if (p99Ms > S3_LATENCY_MAX_MS) throw new Error(`--s3-latency: at most ${S3_LATENCY_MAX_MS / 1000} s`);
  return { medianMs, p99Ms };
}

/** How a latency reads in a report: "20 ms" or "20 ms median, 80 ms p99 (log-normal)". */
export function describeS3Latency(latency: S3Latency): string {
  return latency.p99Ms === latency.medianMs ? `${latency.medianMs} ms` : `${latency.medianMs} ms median, ${latency.p99Ms} ms p99 (log-normal)`;
}

/** The arguments of bin/s3rver-main.js that ask for `latency`. */
export function s3LatencyArguments(latency: S3Latency | undefined): string[] {
  return latency === undefined ? [] : ['--latency-median-ms', String(latency.medianMs), '--latency-p99-ms', String(latency.p99Ms)];
}
