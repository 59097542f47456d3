import type { LatencySummary } from './stats';

/**
 * The result object of one `mink bench` run, printed as is by `--json`. Every figure of a run is measured
 * on the same machine and the same servers, so the ratios between them mean more than any absolute figure
 * on a shared, noisy machine.
 */

/** One measured series of a baseline: raw S3 PUTs or raw JetStream publishes. */
export interface BaselineResult {
  kind: 's3-put' | 'jetstream-publish';
  /** e.g. "S3 PUT 256 KiB". */
  label: string;
  payloadBytes: number;
  /** Operations in flight at once; 1 for the sequential series. */
  concurrency: number;
  operations: number;
  failures: number;
  elapsedMs: number;
  operationsPerSecond: number;
  /** Payload bytes acknowledged per second. */
  bytesPerSecond: number;
  latency: LatencySummary;
}

/** What the WAL objects written during one scenario amounted to, read from a listing of the bucket. */
export interface WalObjectsWritten {
  objects: number;
  bytes: number;
  /** bytes / objects; 0 when none was written. */
  averageObjectBytes: number;
  /** WAL bytes per second of the scenario's elapsed time. */
  bytesPerSecond: number;
}

/** One mink append scenario: through the gateway's HTTP API or through the TypeScript client. */
export interface AppendResult {
  path: 'gateway' | 'client';
  /** Rows acknowledged. */
  rows: number;
  /** Append calls acknowledged, and failed. */
  calls: number;
  failedCalls: number;
  firstFailureMessage: string | null;
  /** True when --seconds or Ctrl-C stopped the scenario before every row was sent. */
  stoppedEarly: boolean;
  elapsedMs: number;
  rowsPerSecond: number;
  /** Bytes of JSON rows (the gateway's request bodies; the same rows as JSON for the client) acknowledged per second. */
  payloadBytesPerSecond: number;
  /** Per append call, from sending it until its acknowledgement. */
  latency: LatencySummary;
  wal: WalObjectsWritten;
}

/** A figure of mink divided by a baseline of the same run. */
export interface Ratio {
  /** The full sentence as printed, e.g. "client append: p99 ack 120 ms = 3.1 × raw S3 PUT p99 (1 MiB)". */
  text: string;
  /** The mink figure, the baseline figure and their quotient. */
  value: number;
  baseline: number;
  ratio: number;
}

/** How a failover trial stops the leader of the probed bucket. */
export type FailoverFault = 'kill-9' | 'sigterm';

/** One fault of the failover scenario and what the probe saw of it. */
export interface FailoverTrial {
  fault: FailoverFault;
  /** The data node that led the probed bucket and received the signal. */
  victimNodeId: string;
  /**
   * From the signal until the first append to the bucket acknowledged after it; null when none was
   * acknowledged within `BENCH_FAILOVER.recoveryTimeoutMs`.
   */
  unavailableMs: number | null;
  /** The longest time between two consecutive acknowledged appends, from the last one before the signal to the end of the trial. */
  longestGapMs: number | null;
  /** Probe calls that failed outright (the client's own retries ran out) during the trial. */
  failedCalls: number;
}

/** Minimum, median and maximum of the trials of one fault that recovered. */
export interface SpreadMs {
  minimumMs: number;
  medianMs: number;
  maximumMs: number;
}

/** The trials of one fault summarized. */
export interface FailoverSummary {
  fault: FailoverFault;
  /** "kill -9" or "SIGTERM". */
  label: string;
  trials: FailoverTrial[];
  /** Null when no trial recovered. */
  unavailable: SpreadMs | null;
  longestGap: SpreadMs | null;
  /** Median unavailability against `lease_ttl + coordinator_tick`, e.g. "kill -9: median 3.9 s = 1.1 × (lease_ttl + coordinator_tick)". */
  ratio: Ratio | null;
}

/** The failover scenario: unavailability of one bucket when its leader dies or stops, against the cluster's detection bound. */
export interface FailoverResult {
  /** The bucket of the bench table the probe appended to. */
  bucket: number;
  probeIntervalMs: number;
  leaseTtlMs: number;
  coordinatorTickMs: number;
  /** lease_ttl + coordinator_tick: how long a dead leader can go unnoticed before its buckets are re-led. */
  detectionBoundMs: number;
  faults: FailoverSummary[];
}

export interface MachineDescription {
  cpus: number;
  cpuModel: string;
  totalMemoryBytes: number;
  platform: string;
  release: string;
  nodeVersion: string;
  /** One-minute load average when the run started: a busy shared machine shows here. */
  loadAverageAtStart: number;
}

export interface BenchOptions {
  rows: number;
  batchRows: number;
  concurrency: number;
  /** The time cap of each scenario, or null for none. */
  seconds: number | null;
  /** Run the failover scenario after the append scenarios. */
  failover: boolean;
}

export interface BenchResult {
  machine: MachineDescription;
  options: BenchOptions;
  cluster: { nodes: number; coordinators: number; buckets: number; leaseTtlMs: number; coordinatorTickMs: number; dataDir: string; kept: boolean };
  baselines: BaselineResult[];
  appends: AppendResult[];
  ratios: Ratio[];
  /** Null when skipped (`--no-failover`) or interrupted before it ran. */
  failover: FailoverResult | null;
  /** Wall time of the whole run, cluster start and stop included. */
  durationMs: number;
  /** True when Ctrl-C ended the run early; the figures cover what had been measured. */
  interrupted: boolean;
}
