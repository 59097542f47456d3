import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { connect, type JetStreamManager, type KvEntry, type NatsConnection, type QueuedIterator } from 'nats';
import { DEFAULTS, LIMITS } from '@mink/config';
import type { ClusterProcessInfo, LocalCluster } from '@mink/devcluster';
import { BENCH_METADATA } from './bench-limits';
import { APPLIED_SEQ_METRIC, EVENT_LOOP_STALL_METRIC, HEAP_USED_METRIC, HeartbeatGaps, largestSample, METADATA_PLANE_METRICS, RSS_METRIC } from './metadata-figures';
import type { MemoryReading, MetadataHealth } from './results';

/** The KV bucket every process heartbeats into (`HEARTBEAT_BUCKET` of @mink/metalog; the spec checks they agree). */
export const HEARTBEAT_BUCKET_NAME = 'mink_heartbeats';
/** Heartbeat keys are `hb.{role}.{nodeId}` (`heartbeatKey` of @mink/metalog). */
const HEARTBEAT_KEYS = 'hb.>';
/** What of a local cluster the monitor reads: its NATS server and its processes (ports, logs, whether they run). */
export type MonitoredCluster = Pick<LocalCluster, 'natsUrl' | 'processes'>;

/**
 * Watches the metadata plane of a running cluster from outside while a stage runs: every heartbeat as the
 * NATS server stores it (the longest gap per process), every process's /metrics once per
 * `BENCH_METADATA.monitorIntervalMs` (event-loop stalls, and the metadata-plane gauges where they exist),
 * and the consumers of the metadata log (how far the slowest tail is behind). It also notices a process
 * that exits and calls `onExit` once with a line naming it and quoting its fatal log line.
 */
export class MetadataMonitor {
  private readonly gaps = new HeartbeatGaps();
  private readonly largestByMetric = new Map<string, { process: string; value: number }>();
  /** Per process, the first and the last reading of its applied sequence. */
  private readonly appliedByProcess = new Map<string, { first: AppliedReading; last: AppliedReading }>();
  /** Per process, its memory at the first and the last scrape. */
  private readonly memoryByProcess = new Map<string, { first: MemoryReading; last: MemoryReading }>();
  private largestBacklog: number | null = null;
  private longestApplyLagMs: number | null = null;
  private readonly exited = new Map<number, string>();
  private timer: NodeJS.Timeout | null = null;
  private sampling: Promise<void> | null = null;
  private watching: Promise<void> | null = null;

  private constructor(
    private readonly cluster: MonitoredCluster,
    private readonly connection: NatsConnection,
    private readonly manager: JetStreamManager,
    private readonly heartbeats: QueuedIterator<KvEntry>,
    private readonly onExit: (line: string) => void,
  ) {}

  static async start(cluster: MonitoredCluster, onExit: (line: string) => void): Promise<MetadataMonitor> {
    const connection = await connect({ servers: cluster.natsUrl, name: 'mink-bench-metadata' });
    try {
      const manager = await connection.jetstreamManager();
      const kv = await connection.jetstream().views.kv(HEARTBEAT_BUCKET_NAME, { bindOnly: true });
      const heartbeats = await kv.watch({ key: HEARTBEAT_KEYS });
      const monitor = new MetadataMonitor(cluster, connection, manager, heartbeats, onExit);
      monitor.watching = monitor.watchHeartbeats();
      monitor.timer = setInterval(() => {
        monitor.sampling ??= monitor.sample().finally(() => (monitor.sampling = null));
      }, BENCH_METADATA.monitorIntervalMs);
      return monitor;
    } catch (error) {
      await connection.close();
      throw error;
    }
  }

  /** Processes that exited since the monitor started, one line each. */
  exitedProcesses(): string[] {
    return [...this.exited.values()];
  }

  /** Stops watching and returns what was seen; takes one last sample first. */
  async stop(leaseTtlMs: number): Promise<MetadataHealth> {
    if (this.timer !== null) clearInterval(this.timer);
    await this.sampling;
    await this.sample();
    this.heartbeats.stop();
    await this.watching;
    await this.connection.close();
    const stall = this.largestByMetric.get(EVENT_LOOP_STALL_METRIC);
    return {
      heartbeatIntervalMs: leaseTtlMs / LIMITS.heartbeatsPerLeaseTtl,
      longestHeartbeatGap: this.gaps.longest(),
      longestEventLoopStall: stall === undefined ? null : { process: stall.process, ms: stall.value * 1_000 },
      largestTailBacklogEntries: this.largestBacklog,
      longestApplyLagMs: this.longestApplyLagMs,
      slowestApply: slowestApplyRate(this.appliedByProcess),
      exposedMetrics: METADATA_PLANE_METRICS.flatMap((name) => {
        const largest = this.largestByMetric.get(name);
        return largest === undefined ? [] : [{ name, ...largest }];
      }),
      missingMetrics: METADATA_PLANE_METRICS.filter((name) => !this.largestByMetric.has(name)),
      memory: [...this.memoryByProcess].map(([process, readings]) => ({ process, ...readings })),
    };
  }

  private async watchHeartbeats(): Promise<void> {
    for await (const entry of this.heartbeats) {
      if (entry.operation === 'PUT') this.gaps.record(entry.key, entry.created.getTime());
    }
  }

  /** One round: exits, /metrics of every running service, the consumers of the metadata log. A failed read is skipped. */
  private async sample(): Promise<void> {
    const processes = this.cluster.processes();
    for (const entry of processes) {
      if (!entry.running && !this.exited.has(entry.pid)) {
        const line = describeExit(entry);
        this.exited.set(entry.pid, line);
        this.onExit(line);
      }
    }
    await Promise.all([
      ...processes.filter((entry) => entry.running && entry.role !== 'nats' && entry.role !== 's3').map((entry) => this.scrape(entry)),
      this.readTails().catch(() => undefined),
    ]);
  }

  private async scrape(entry: ClusterProcessInfo): Promise<void> {
    let text: string;
    try {
      const response = await fetch(`http://127.0.0.1:${entry.ports.http}/metrics`, { signal: AbortSignal.timeout(BENCH_METADATA.monitorRequestTimeoutMs) });
      if (!response.ok) return;
      text = await response.text();
    } catch {
      // A process too busy to answer within the timeout shows in the next scrape's stall figure.
      return;
    }
    const appliedSeq = largestSample(text, APPLIED_SEQ_METRIC);
    if (appliedSeq !== null) {
      const reading = { atMs: performance.now(), seq: appliedSeq };
      const readings = this.appliedByProcess.get(processLabel(entry));
      if (readings === undefined) this.appliedByProcess.set(processLabel(entry), { first: reading, last: reading });
      else readings.last = reading;
    }
    const memory: MemoryReading = { rssBytes: largestSample(text, RSS_METRIC), heapUsedBytes: largestSample(text, HEAP_USED_METRIC) };
    const memoryReadings = this.memoryByProcess.get(processLabel(entry));
    if (memoryReadings === undefined) this.memoryByProcess.set(processLabel(entry), { first: memory, last: memory });
    else memoryReadings.last = memory;
    for (const name of [EVENT_LOOP_STALL_METRIC, ...METADATA_PLANE_METRICS]) {
      const value = largestSample(text, name);
      const largest = this.largestByMetric.get(name);
      if (value !== null && (largest === undefined || value > largest.value)) this.largestByMetric.set(name, { process: processLabel(entry), value });
    }
  }

  /**
   * Every process tails the log with an ordered consumer; the one with the most entries pending is the
   * slowest tail, and the age of its next entry is how far behind the log it is.
   */
  private async readTails(): Promise<void> {
    let slowest: { pending: number; nextSeq: number } | null = null;
    for await (const consumer of this.manager.consumers.list(DEFAULTS.metaStream)) {
      if (slowest === null || consumer.num_pending > slowest.pending) slowest = { pending: consumer.num_pending, nextSeq: consumer.delivered.stream_seq + 1 };
    }
    if (slowest === null) return;
    this.largestBacklog = Math.max(this.largestBacklog ?? 0, slowest.pending);
    let lagMs = 0;
    if (slowest.pending > 0) {
      const next = await this.manager.streams.getMessage(DEFAULTS.metaStream, { seq: slowest.nextSeq });
      lagMs = Math.max(0, Date.now() - next.time.getTime());
    }
    this.longestApplyLagMs = Math.max(this.longestApplyLagMs ?? 0, lagMs);
  }
}

interface AppliedReading {
  atMs: number;
  seq: number;
}

/** The process that applied log entries the slowest between its first and last reading (at least a second apart). */
function slowestApplyRate(readings: ReadonlyMap<string, { first: AppliedReading; last: AppliedReading }>): MetadataHealth['slowestApply'] {
  let slowest: MetadataHealth['slowestApply'] = null;
  for (const [process, { first, last }] of readings) {
    const elapsedMs = last.atMs - first.atMs;
    if (elapsedMs < 1_000) continue;
    const commandsPerSecond = ((last.seq - first.seq) * 1_000) / elapsedMs;
    if (slowest === null || commandsPerSecond < slowest.commandsPerSecond) slowest = { process, commandsPerSecond };
  }
  return slowest;
}

/** "data-node 2", "coordinator-1", "gateway-1". */
export function processLabel(entry: Pick<ClusterProcessInfo, 'role' | 'nodeId'>): string {
  if (entry.nodeId === null) return entry.role;
  return /^\d+$/.test(entry.nodeId) ? `${entry.role} ${entry.nodeId}` : entry.nodeId;
}

/** "data-node 2 (pid 123) exited; uncaught exception: LogPurgedError: …", quoting the last fatal line of its log. */
export function describeExit(entry: ClusterProcessInfo): string {
  return `${processLabel(entry)} (pid ${entry.pid}) exited; ${lastFatalLine(entry.logFile) ?? 'no fatal line at the end of its log'}`;
}

/** The message and error of the last fatal (pino level 60) line near the end of a log file, or null when there is none. */
export function lastFatalLine(logFile: string): string | null {
  let text: string;
  try {
    const size = statSync(logFile).size;
    const length = Math.min(size, BENCH_METADATA.logTailBytes);
    const buffer = Buffer.alloc(length);
    const descriptor = openSync(logFile, 'r');
    try {
      readSync(descriptor, buffer, 0, length, size - length);
    } finally {
      closeSync(descriptor);
    }
    text = buffer.toString('utf8');
  } catch {
    return null;
  }
  const line = text
    .split('\n')
    .reverse()
    .find((candidate) => candidate.includes('"level":60'));
  if (line === undefined) return null;
  try {
    const parsed = JSON.parse(line) as { msg?: string; err?: { type?: string; message?: string } };
    return `${parsed.msg ?? 'fatal'}: ${parsed.err?.type ?? 'Error'}: ${parsed.err?.message ?? ''}`.trim();
  } catch {
    return line.slice(0, 300);
  }
}

/**
 * The buckets the data nodes' logs (whole, across restarts) count in their lines `message`: the sum of the
 * `buckets` of each such JSON line (BucketEventsLog writes one per second with how many buckets it covers).
 */
export function bucketsInDataNodeLogLines(cluster: Pick<LocalCluster, 'processes'>, message: string, read: (file: string) => string): number {
  return cluster
    .processes()
    .filter((entry) => entry.role === 'data-node')
    .reduce((count, entry) => {
      let text = '';
      try {
        text = read(entry.logFile);
      } catch {
        // No log yet.
      }
      return count + bucketsInLogText(text, message);
    }, 0);
}

/** The sum of `buckets` over the JSON lines of `text` whose `msg` is `message` (a line cut short or not JSON counts none). */
export function bucketsInLogText(text: string, message: string): number {
  let buckets = 0;
  for (const line of text.split('\n')) {
    if (!line.includes(message)) continue;
    try {
      const parsed = JSON.parse(line) as { msg?: unknown; buckets?: unknown };
      if (parsed.msg === message && typeof parsed.buckets === 'number') buckets += parsed.buckets;
    } catch {
      // A line still being written.
    }
  }
  return buckets;
}
