import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { CliError, type CliIo } from '@mink/cli';
import { MinkClient, type TableClient } from '@mink/client';
import type { LocalCluster } from '@mink/devcluster';
import { readClusterStatus, waitForOpenBuckets, type ClusterStatus } from './bench-cluster';
import { BENCH_CLUSTER, BENCH_FAILOVER, BENCH_PAYLOAD_CHARS, BENCH_TABLE } from './bench-limits';
import { FAULT_LABELS, measureTrial, summarizeFailover } from './failover-figures';
import { formatSeconds } from './format';
import type { FailoverFault, FailoverResult, FailoverTrial } from './results';

/** What of the cluster the scenario uses: its endpoints, signals and restarts of data nodes. */
export type FailoverCluster = Pick<LocalCluster, 'gatewayUrl' | 'natsUrl' | 'kill' | 'restart'>;

export interface FailoverSettings {
  io: CliIo;
  cluster: FailoverCluster;
  /** Aborting it ends the scenario after the current trial's waits; the figures so far are returned. */
  signal: AbortSignal;
  progress: (line: string) => void;
}

/** The signal each fault sends to the leader. */
export const FAULT_SIGNALS: Readonly<Record<FailoverFault, NodeJS.Signals>> = { 'kill-9': 'SIGKILL', sigterm: 'SIGTERM' };

/** The probe's row; its bucket key decides which bucket is measured. */
const PROBE_ROW = { id: BENCH_FAILOVER.probeRowId, name: 'failover-probe', value: 0 } as const;

/**
 * Appends one row at a time to one bucket through the client (which retries `Unavailable`, timeouts and
 * redirects itself) and records when each append was acknowledged. A call that fails outright is counted
 * and the probe goes on.
 */
class BucketProbe {
  readonly acknowledgedAtMs: number[] = [];
  failedCalls = 0;
  private stopped = false;
  private running: Promise<void> | null = null;
  private afterNextAcknowledgement: (() => void) | null = null;

  constructor(
    private readonly table: TableClient,
    private readonly bucket: number,
  ) {}

  start(): void {
    this.running = this.loop();
  }

  /** Stops after the call in flight, which may still be retrying inside the client. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }

  /**
   * Runs `action` `BENCH_FAILOVER.faultAfterCallStartMs` after the call that follows the next
   * acknowledgement has started: with a call of the probe in flight at the leader.
   */
  whileNextCallInFlight(action: () => void): void {
    this.afterNextAcknowledgement = () => {
      // The loop sleeps the probe interval, then starts the call.
      setTimeout(action, BENCH_FAILOVER.probeIntervalMs + BENCH_FAILOVER.faultAfterCallStartMs);
    };
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      try {
        const result = await this.table.append([PROBE_ROW]);
        const acknowledgedMs = performance.now();
        const bucket = result.buckets[0]?.bucket;
        // The row's bucket key is fixed, so any other bucket would be a bug of the client or the bench.
        if (bucket !== this.bucket) throw new CliError(`the failover probe's row went to bucket ${String(bucket)} instead of ${this.bucket}`);
        this.acknowledgedAtMs.push(acknowledgedMs);
        const action = this.afterNextAcknowledgement;
        this.afterNextAcknowledgement = null;
        action?.();
      } catch (error) {
        if (error instanceof CliError) throw error;
        this.failedCalls += 1;
      }
      await sleep(BENCH_FAILOVER.probeIntervalMs);
    }
  }
}

/**
 * Appends rows with random ids (so every bucket) from `BENCH_FAILOVER.loadCallers` loops until stopped,
 * counting acknowledged rows and calls that failed outright: the load a leader dies under.
 */
class AppendLoad {
  rows = 0;
  failedCalls = 0;
  private stopped = false;
  private running: Promise<void>[] = [];

  constructor(private readonly table: TableClient) {}

  start(): void {
    const payload = 'x'.repeat(BENCH_PAYLOAD_CHARS);
    this.running = Array.from({ length: BENCH_FAILOVER.loadCallers }, async () => {
      while (!this.stopped) {
        const rows = Array.from({ length: BENCH_FAILOVER.loadRowsPerCall }, (_, index) => ({ id: Math.floor(Math.random() * 1e12), name: 'load', value: index, payload }));
        try {
          const result = await this.table.append(rows);
          this.rows += result.appended;
        } catch {
          this.failedCalls += 1;
        }
      }
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.running);
  }
}

/**
 * The failover scenario: for each fault (`kill -9`, then SIGTERM) and each trial, a probe appends to one
 * bucket of the bench table while a load appends to all of them, the bucket's current leader gets the
 * signal while a probe call is in flight there, and the trial measures the time until the next
 * acknowledged append of the probe and the longest gap between its acknowledgements.
 * The node is then restarted and every bucket waited open, so each trial starts from a whole cluster.
 * Returns null when the signal aborted the scenario before any trial ended.
 */
export async function runFailover(settings: FailoverSettings): Promise<FailoverResult | null> {
  const { io, cluster, signal, progress } = settings;
  const detectionBoundMs = BENCH_CLUSTER.leaseTtlMs + BENCH_CLUSTER.coordinatorTickMs;
  const bucket = await probedBucket(cluster.natsUrl);
  progress(`  probing bucket ${bucket} (the bucket of id ${BENCH_FAILOVER.probeRowId}); lease_ttl + coordinator_tick = ${formatSeconds(detectionBoundMs)} s`);
  const trialsByFault = new Map<FailoverFault, FailoverTrial[]>();
  for (const fault of ['kill-9', 'sigterm'] as const) {
    for (let trial = 1; trial <= BENCH_FAILOVER.trialsPerFault; trial++) {
      if (signal.aborted) break;
      const result = await runTrial(settings, fault, bucket);
      if (result === null) break;
      trialsByFault.set(fault, [...(trialsByFault.get(fault) ?? []), result]);
      progress(`  ${FAULT_LABELS[fault]} ${trial}/${BENCH_FAILOVER.trialsPerFault}: ${describeTrial(result)}`);
      if (result.unavailableMs === null) {
        throw new CliError(`bucket ${bucket} accepted no append within ${BENCH_FAILOVER.recoveryTimeoutMs} ms of ${FAULT_LABELS[fault]} of data node ${result.victimNodeId}`);
      }
    }
  }
  if (trialsByFault.size === 0) return null;
  return {
    bucket,
    probeIntervalMs: BENCH_FAILOVER.probeIntervalMs,
    leaseTtlMs: BENCH_CLUSTER.leaseTtlMs,
    coordinatorTickMs: BENCH_CLUSTER.coordinatorTickMs,
    detectionBoundMs,
    faults: [...trialsByFault].map(([fault, trials]) => summarizeFailover(fault, trials, detectionBoundMs)),
  };
}

/** The bucket the probe's row hashes to, read from the result of one append of it. */
async function probedBucket(natsUrl: string): Promise<number> {
  const client = await MinkClient.connect({ servers: natsUrl, name: 'mink-bench-failover' });
  try {
    const result = await client.table(BENCH_TABLE.name).append([PROBE_ROW]);
    const bucket = result.buckets[0]?.bucket;
    if (bucket === undefined) throw new CliError('the failover probe could not find its bucket: the append reported none');
    return bucket;
  } finally {
    await client.close();
  }
}

/**
 * One fault on the current leader of `bucket`, measured by a probe, then the node restarted. Returns null
 * when the signal aborted the trial before the bucket recovered (the node is then left as it is: the
 * cluster is about to be stopped).
 */
async function runTrial(settings: FailoverSettings, fault: FailoverFault, bucket: number): Promise<FailoverTrial | null> {
  const { io, cluster, signal } = settings;
  const before = await readClusterStatus(io, cluster.gatewayUrl);
  const victimNodeId = leaderOf(before, bucket);
  const victimEpochBefore = before.nodes?.find((node) => node.id === victimNodeId)?.epoch ?? 0;
  // A client per trial: a fresh writer id, so a call that failed outright in an earlier trial leaves no
  // hole in the writer's sequence.
  const client = await MinkClient.connect({ servers: cluster.natsUrl, name: 'mink-bench-failover' });
  const loadClient = await MinkClient.connect({ servers: cluster.natsUrl, name: 'mink-bench-failover-load' });
  const load = new AppendLoad(loadClient.table(BENCH_TABLE.name));
  let trial: FailoverTrial;
  try {
    load.start();
    const probe = new BucketProbe(client.table(BENCH_TABLE.name), bucket);
    probe.start();
    try {
      const ready = await waitUntil(() => probe.acknowledgedAtMs.length >= BENCH_FAILOVER.probeAcknowledgementsBeforeFault, signal);
      if (signal.aborted) return null;
      if (!ready) throw new CliError(`the failover probe got fewer than ${BENCH_FAILOVER.probeAcknowledgementsBeforeFault} appends to bucket ${bucket} acknowledged before the fault`);
      const signalMs = await new Promise<number>((resolve) => {
        probe.whileNextCallInFlight(() => {
          const sentMs = performance.now();
          cluster.kill('data-node', victimNodeId, FAULT_SIGNALS[fault]);
          resolve(sentMs);
        });
      });
      const recovered = await waitUntil(() => probe.acknowledgedAtMs.some((time) => time > signalMs), signal);
      if (!recovered && signal.aborted) return null;
      if (recovered) await sleep(BENCH_FAILOVER.probeAfterRecoveryMs);
      await probe.stop();
      await load.stop();
      trial = { fault, victimNodeId, ...measureTrial(probe.acknowledgedAtMs, signalMs), failedCalls: probe.failedCalls, loadRows: load.rows, loadFailedCalls: load.failedCalls };
    } finally {
      await probe.stop();
    }
  } finally {
    await load.stop();
    await Promise.all([client.close(), loadClient.close()]);
  }
  if (trial.unavailableMs === null) return trial;
  await cluster.restart('data-node', victimNodeId);
  await waitForOpenBuckets(io, cluster.gatewayUrl, signal, (status) => {
    const node = status.nodes?.find((candidate) => candidate.id === victimNodeId);
    return node?.live === true && (node.epoch ?? 0) > victimEpochBefore;
  });
  return trial;
}

function leaderOf(status: ClusterStatus, bucket: number): string {
  const leader = status.buckets?.find((candidate) => candidate.table === BENCH_TABLE.name && candidate.bucket === bucket)?.leader;
  if (!leader) throw new CliError(`GET /v1/cluster names no leader for bucket ${bucket} of ${BENCH_TABLE.name}`);
  return leader;
}

/**
 * Polls `condition` every probe interval until it holds (true), `BENCH_FAILOVER.recoveryTimeoutMs` passes
 * (false) or the signal aborts (false).
 */
async function waitUntil(condition: () => boolean, signal: AbortSignal): Promise<boolean> {
  const deadlineMs = performance.now() + BENCH_FAILOVER.recoveryTimeoutMs;
  while (!condition()) {
    if (signal.aborted || performance.now() >= deadlineMs) return false;
    await sleep(BENCH_FAILOVER.probeIntervalMs);
  }
  return true;
}

function describeTrial(trial: FailoverTrial): string {
  const head = `data node ${trial.victimNodeId}`;
  if (trial.unavailableMs === null) return `${head}: no append acknowledged within ${BENCH_FAILOVER.recoveryTimeoutMs} ms`;
  return (
    `${head}: next append acknowledged after ${formatSeconds(trial.unavailableMs)} s, longest gap ${formatSeconds(trial.longestGapMs ?? 0)} s` +
    (trial.failedCalls > 0 ? `, ${trial.failedCalls} calls failed` : '') +
    `; load: ${trial.loadRows} rows acknowledged` +
    (trial.loadFailedCalls > 0 ? `, ${trial.loadFailedCalls} calls failed` : '')
  );
}
