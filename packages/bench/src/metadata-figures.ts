import { commaSeparated } from '@mink/cli';
import { BENCH_METADATA } from './bench-limits';
import { formatCount, formatRatio, formatSeconds } from './format';
import { findBaseline, ratioOf } from './ratio';
import type { BaselineResult, MetadataStageResult, ProcessMemory, Ratio } from './results';

/**
 * The pure parts of the metadata scenario: what a create's answer asks for, how many tables a stage
 * creates, the longest gap between heartbeats, a metric read from Prometheus text, and the ratios of a
 * stage's figures to the run's JetStream publish baseline.
 */

/** prom-client's default metric: the longest event-loop delay since the previous scrape. */
export const EVENT_LOOP_STALL_METRIC = 'nodejs_eventloop_lag_max_seconds';
/**
 * Gauges about the metadata plane the bench reads where a process exposes them: how many log entries its
 * view is behind (every process), and its longest heartbeat delay past schedule since the previous scrape
 * (data nodes). The report names those no process exposed.
 */
export const HEARTBEAT_DELAY_METRIC = 'mink_heartbeat_delay_max_ms';
export const METADATA_PLANE_METRICS = ['mink_meta_apply_lag_entries', HEARTBEAT_DELAY_METRIC] as const;
/** The sequence of the last log entry a process applied: two readings give its apply rate. */
export const APPLIED_SEQ_METRIC = 'mink_meta_applied_seq';
/** prom-client's resident memory of the process and V8 heap in use, read for the memory per bucket. */
export const RSS_METRIC = 'process_resident_memory_bytes';
export const HEAP_USED_METRIC = 'nodejs_heap_size_used_bytes';

/** What a stage's memory readings say about memory per bucket (memoryPerBucket). */
export interface MemoryPerBucket {
  /** The process with the largest resident memory at the stage's last scrape. */
  largest: { process: string; rssBytes: number; heapUsedBytes: number | null };
  /**
   * The process whose heap in use grew the most from the stage's first scrape to its last, and that growth
   * per bucket the stage created (garbage not collected yet included, so an upper bound of what a bucket costs).
   */
  heapGrowth: { process: string; bytes: number; bytesPerBucket: number } | null;
}

/**
 * The memory figures of a stage that created `bucketsCreated` buckets, from each process's first and last
 * reading; null when no process showed its resident memory at the end.
 */
export function memoryPerBucket(memory: readonly ProcessMemory[], bucketsCreated: number): MemoryPerBucket | null {
  let largest: MemoryPerBucket['largest'] | null = null;
  let heapGrowth: MemoryPerBucket['heapGrowth'] = null;
  for (const { process, first, last } of memory) {
    if (last.rssBytes !== null && (largest === null || last.rssBytes > largest.rssBytes)) largest = { process, rssBytes: last.rssBytes, heapUsedBytes: last.heapUsedBytes };
    if (first.heapUsedBytes === null || last.heapUsedBytes === null || bucketsCreated <= 0) continue;
    const bytes = last.heapUsedBytes - first.heapUsedBytes;
    if (heapGrowth === null || bytes > heapGrowth.bytes) heapGrowth = { process, bytes, bytesPerBucket: bytes / bucketsCreated };
  }
  return largest === null ? null : { largest, heapGrowth };
}

/** What to do with one answer of `POST /v1/tables`. */
export type CreateAnswer = { kind: 'created' } | { kind: 'retry'; afterMs: number } | { kind: 'failed' };

/**
 * 201 is a create; 503 with a `Retry-After` of a positive number of seconds is admission control asking
 * to be called again after that long (docs/architecture.md §12: `Unavailable` carries `Retry-After`); anything else,
 * including a 503 without a usable `Retry-After`, is a failed create.
 */
export function classifyCreateAnswer(status: number, retryAfterHeader: string | null): CreateAnswer {
  if (status === 201) return { kind: 'created' };
  const retryAfterSeconds = retryAfterHeader === null || retryAfterHeader.trim() === '' ? Number.NaN : Number(retryAfterHeader);
  if (status === 503 && Number.isFinite(retryAfterSeconds) && retryAfterSeconds > 0) return { kind: 'retry', afterMs: retryAfterSeconds * 1_000 };
  return { kind: 'failed' };
}

/** Tables of `bucketsPerTable` a stage creates so that the bench's tables hold at least `targetBuckets`, given those already created. */
export function tablesForStage(targetBuckets: number, bucketsAlreadyCreated: number, bucketsPerTable: number): number {
  if (!Number.isInteger(bucketsPerTable) || bucketsPerTable < 1) throw new Error(`buckets per table must be a positive integer, got ${bucketsPerTable}`);
  return Math.max(0, Math.ceil((targetBuckets - bucketsAlreadyCreated) / bucketsPerTable));
}

/**
 * Parses `--metadata-buckets`: a comma-separated list of bucket counts, one stage each, strictly
 * increasing (each stage creates tables until the bench's tables hold that many buckets), each from one
 * table's worth to `BENCH_METADATA.bucketTargetMax`. Throws an Error naming the problem.
 */
export function parseStageBuckets(text: string): number[] {
  const parts = commaSeparated(text);
  if (parts.length === 0) throw new Error('expected a comma-separated list of bucket counts, e.g. 1600,16000');
  const targets = parts.map((part) => {
    const value = /^\d+$/.test(part) ? Number(part) : Number.NaN;
    if (!Number.isSafeInteger(value) || value < BENCH_METADATA.bucketsPerTable || value > BENCH_METADATA.bucketTargetMax) {
      throw new Error(`'${part}' is not a bucket count from ${BENCH_METADATA.bucketsPerTable} to ${BENCH_METADATA.bucketTargetMax}`);
    }
    return value;
  });
  targets.forEach((target, index) => {
    if (index > 0 && target <= targets[index - 1]!) throw new Error(`stages must grow: ${target} follows ${targets[index - 1]}`);
  });
  return targets;
}

/**
 * Epochs the data nodes gained between two readings of GET /v1/cluster: each is a takeover of a node
 * thought dead (which registers it at epoch + 1) or a fenced node registering again. A node first seen in
 * the second reading counts from epoch 1, its first registration.
 */
export function epochBumps(before: readonly { id: string; epoch: number }[], after: readonly { id: string; epoch: number }[]): number {
  return after.reduce((sum, node) => sum + Math.max(0, node.epoch - (before.find((earlier) => earlier.id === node.id)?.epoch ?? 1)), 0);
}

/** The longest gap between consecutive heartbeats of one process (a heartbeat key), by the times the NATS server stamped on them. */
export interface HeartbeatGap {
  key: string;
  gapMs: number;
}

/**
 * Tracks, per heartbeat key, the time between consecutive writes as stamped by the NATS server (the
 * clock liveness is judged by). A gap longer than the heartbeat interval is a late heartbeat; one of
 * `lease_ttl` or more gets the process declared dead. Writes may be reported out of order across keys but
 * must come in order for one key, as a KV watch delivers them.
 */
export class HeartbeatGaps {
  private readonly lastAtMs = new Map<string, number>();
  private longestGap: HeartbeatGap | null = null;

  record(key: string, createdAtMs: number): void {
    const previousMs = this.lastAtMs.get(key);
    this.lastAtMs.set(key, createdAtMs);
    if (previousMs === undefined) return;
    const gapMs = createdAtMs - previousMs;
    if (this.longestGap === null || gapMs > this.longestGap.gapMs) this.longestGap = { key, gapMs };
  }

  /** The longest gap seen across every key, or null before any key has written twice. */
  longest(): HeartbeatGap | null {
    return this.longestGap;
  }
}

/**
 * The largest value of any sample of metric `name` (whatever its labels) in a Prometheus text exposition,
 * or null when the metric has no sample. Comment lines and other metrics (including `name_sum` and the
 * like) are skipped; a sample whose value does not parse is ignored.
 */
export function largestSample(exposition: string, name: string): number | null {
  let largest: number | null = null;
  for (const line of exposition.split('\n')) {
    if (line.startsWith('#') || !line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== ' ' && rest[0] !== '{') continue;
    const afterLabels = rest[0] === '{' ? rest.slice(rest.lastIndexOf('}') + 1) : rest;
    const value = Number(afterLabels.trim().split(/\s+/)[0]);
    if (Number.isFinite(value) && (largest === null || value > largest)) largest = value;
  }
  return largest;
}

/**
 * Each stage's throughput figures against the raw JetStream publish rate measured in the same run with as
 * many publishes in flight as creates (a table create is at least one command published to the metadata
 * log, and every bucket opened is at least one more), and its delays against `lease_ttl`, the bound past
 * which a late heartbeat makes a process dead. A ratio whose figure or baseline is missing is left out.
 */
export function metadataRatios(stages: readonly MetadataStageResult[], baselines: readonly BaselineResult[], payloadBytes: number, leaseTtlMs: number): Ratio[] {
  const ratios: (Ratio | null)[] = [];
  const publish = findBaseline(baselines, { kind: 'jetstream-publish', payloadBytes, concurrency: BENCH_METADATA.createsInFlight });
  const versusPublish = (label: string, value: number | null, unit: string): void => {
    if (publish === undefined || value === null || !(publish.operationsPerSecond > 0)) return;
    const quotient = value / publish.operationsPerSecond;
    // A metadata rate is a small fraction of the publish rate: two significant digits rather than "0.00".
    const formatted = quotient < 0.01 ? quotient.toPrecision(2) : formatRatio(quotient);
    ratios.push({
      text: `${label} ${formatCount(value)} ${unit}/s = ${formatted} × raw JetStream publishes/s (${BENCH_METADATA.createsInFlight} in flight)`,
      value,
      baseline: publish.operationsPerSecond,
      ratio: quotient,
    });
  };
  const versusLease = (label: string, valueMs: number | null): void => {
    if (valueMs === null) return;
    ratios.push(ratioOf((quotient) => `${label} ${formatSeconds(valueMs)} s = ${quotient} × lease_ttl`, valueMs, leaseTtlMs));
  };
  for (const stage of stages) {
    const name = `${formatCount(stage.targetBuckets)} buckets:`;
    versusPublish(`${name} table creates`, stage.tableCreatesPerSecond, 'tables');
    versusPublish(`${name} buckets opened`, stage.bucketsOpenedPerSecond, 'buckets');
    versusPublish(`${name} metadata log applied`, stage.applyCommandsPerSecond, 'commands');
    versusPublish(`${name} slowest process (${stage.health.slowestApply?.process}) applied`, stage.health.slowestApply?.commandsPerSecond ?? null, 'commands');
    versusPublish(`${name} buckets reopened after a whole-cluster restart`, stage.restart?.bucketsOpenedPerSecond ?? null, 'buckets');
    versusLease(`${name} longest heartbeat gap`, stage.health.longestHeartbeatGap?.gapMs ?? null);
    versusLease(`${name} longest apply lag (oldest entry not yet taken by a process's tail)`, stage.health.longestApplyLagMs);
    versusLease(`${name} longest heartbeat delay past schedule (${HEARTBEAT_DELAY_METRIC})`, stage.health.exposedMetrics.find((metric) => metric.name === HEARTBEAT_DELAY_METRIC)?.value ?? null);
  }
  return ratios.filter((ratio): ratio is Ratio => ratio !== null);
}
