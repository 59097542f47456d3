import { open, stat } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { CliError, type CliIo } from '@mink/cli';
import { MinkClient } from '@mink/client';
import type { LocalCluster } from '@mink/devcluster';
import { createBenchTable, readClusterStatus, waitForOpenBuckets, type ClusterStatus } from './bench-cluster';
import { BENCH_LIMITS, BENCH_RESTORE, BENCH_RESTORE_TABLE } from './bench-limits';
import { runClosedLoop } from './closed-loop';
import { FAULT_LABELS } from './failover-figures';
import { FAULT_SIGNALS } from './failover';
import { formatCount, formatMegabytes, formatSeconds } from './format';
import { lastRestoredBucketLine, lookupKeyIds, restoreTrialOf, type RestoredBucketLine } from './pk-figures';
import { ProgressReporter } from './progress';
import type { FailoverFault, RestoreResult, RestoreTrial } from './results';
import { ratePerSecond } from './stats';
import { acknowledgedIds, benchRows, writeCallCount } from './write-scenario';

/** What of the cluster the scenario uses: its endpoints, its data nodes' log files, signals and restarts. */
export type RestoreCluster = Pick<LocalCluster, 'gatewayUrl' | 'natsUrl' | 'kill' | 'restart' | 'processes'>;

export interface RestoreSettings {
  io: CliIo;
  cluster: RestoreCluster;
  /** Keys to load before the first fault. */
  keys: number;
  /** Stops the load early (the restore is then of the keys loaded); the faults still follow. */
  deadlineMs?: number;
  /** Aborting it ends the scenario after the current wait; the trials so far are returned. */
  signal: AbortSignal;
  progress: (line: string) => void;
}

/** The restore table's only bucket. */
const RESTORED_BUCKET = 0;

/**
 * The restore scenario, on a one-bucket primary-key table so that one node restores every key at once:
 * 1. load `keys` keys through the client;
 * 2. SIGTERM the bucket's leader, which snapshots the tablet on its clean close, and time the restore on
 *    the next leader (from that snapshot, with next to nothing to replay);
 * 3. put `BENCH_RESTORE.keysAfterSnapshot` more keys, then kill -9 that leader, and time the restore on the
 *    next one (from the same snapshot, plus the replay of those keys' changelog).
 * Each restore's own figures come from the new leader's `'restored PK bucket'` log line; a lookup of keys
 * from before and after the snapshot then checks the bucket holds them, and the stopped node is restarted
 * so the cluster is whole again. Returns null when the signal aborted the scenario before the load ended.
 */
export async function runRestore(settings: RestoreSettings): Promise<RestoreResult | null> {
  const { io, cluster, signal, progress } = settings;
  await createBenchTable(io, cluster.gatewayUrl, BENCH_RESTORE_TABLE);
  if ((await waitForOpenBuckets(io, cluster.gatewayUrl, signal, undefined, BENCH_RESTORE_TABLE)) === null) return null;
  const load = await loadKeys(settings);
  if (load === null) return null;
  const result: RestoreResult = {
    table: BENCH_RESTORE_TABLE.name,
    keys: load.ids.length,
    loadElapsedMs: load.elapsedMs,
    loadKeysPerSecond: ratePerSecond(load.ids.length, load.elapsedMs),
    keysAfterSnapshot: 0,
    trials: [],
  };
  const record = (trial: RestoreTrial | null): boolean => {
    if (trial === null) return false;
    result.trials.push(trial);
    progress(`  ${describeTrial(trial)}`);
    return true;
  };

  if (!record(await runTrial(settings, 'sigterm', load.ids, []))) return result;
  if (signal.aborted) return result;
  // The new keys' ids follow every id the load could have written, so none of them is an update.
  const extraIds = await putKeys(cluster.natsUrl, settings.keys, BENCH_RESTORE.keysAfterSnapshot);
  result.keysAfterSnapshot = extraIds.length;
  progress(`  put ${formatCount(extraIds.length)} more keys after the snapshot`);
  record(await runTrial(settings, 'kill-9', load.ids, extraIds));
  return result;
}

/** Puts `settings.keys` new keys in calls of one PK write batch, with progress lines; null when the signal stopped it before any was put. */
async function loadKeys(settings: RestoreSettings): Promise<{ ids: number[]; elapsedMs: number } | null> {
  const rows = { rows: settings.keys, batchRows: BENCH_RESTORE.loadBatchRows, firstId: 0 };
  const client = await MinkClient.connect({ servers: settings.cluster.natsUrl, name: 'mink-bench-restore' });
  try {
    const table = client.table(BENCH_RESTORE_TABLE.name);
    const progress = new ProgressReporter(`load of ${BENCH_RESTORE_TABLE.name}`, settings.keys, 'keys', settings.progress);
    const loaded = await runClosedLoop(
      {
        prepare: (index) => benchRows(rows, index),
        send: async (batch) => {
          const written = (await table.put(batch)).written;
          if (written !== batch.length) throw new Error(`the client acknowledged ${written} rows of ${batch.length}`);
          progress.add(batch.length);
        },
      },
      {
        operations: writeCallCount(rows.rows, rows.batchRows),
        concurrency: BENCH_RESTORE.loadConcurrency,
        deadlineMs: settings.deadlineMs,
        signal: settings.signal,
        failuresMax: BENCH_LIMITS.failedCallsMax,
      },
    ).finally(() => progress.finish());
    if (settings.signal.aborted) return null;
    if (loaded.succeededIndexes.length === 0) throw new CliError(`the load of ${BENCH_RESTORE_TABLE.name} put nothing (${loaded.firstFailureMessage ?? 'no call ran'})`);
    return { ids: acknowledgedIds(rows, loaded.succeededIndexes), elapsedMs: loaded.elapsedMs };
  } finally {
    await client.close();
  }
}

/** Puts `count` new keys from `firstId` on, one PK write batch per call; every call must be acknowledged. */
async function putKeys(natsUrl: string, firstId: number, count: number): Promise<number[]> {
  const rows = { rows: count, batchRows: BENCH_RESTORE.loadBatchRows, firstId };
  const client = await MinkClient.connect({ servers: natsUrl, name: 'mink-bench-restore' });
  try {
    const table = client.table(BENCH_RESTORE_TABLE.name);
    const ids: number[] = [];
    for (let index = 0; index < writeCallCount(count, rows.batchRows); index++) {
      const batch = benchRows(rows, index);
      const written = (await table.put(batch)).written;
      if (written !== batch.length) throw new CliError(`a put of ${batch.length} keys to ${BENCH_RESTORE_TABLE.name} acknowledged ${written}`);
      ids.push(...batch.map((row) => row.id));
    }
    return ids;
  } finally {
    await client.close();
  }
}

/**
 * One fault on the bucket's leader: the time until another node reports it open, that node's log line of
 * the restore, a lookup that checks the restored keys, then the stopped node restarted. Returns null when
 * the signal aborted a wait (the node is then left as it is: the cluster is about to be stopped).
 */
async function runTrial(settings: RestoreSettings, fault: FailoverFault, loadedIds: readonly number[], extraIds: readonly number[]): Promise<RestoreTrial | null> {
  const { io, cluster, signal } = settings;
  const before = await readClusterStatus(io, cluster.gatewayUrl);
  const victimNodeId = leaderOf(before);
  const victimEpochBefore = before.nodes?.find((node) => node.id === victimNodeId)?.epoch ?? 0;
  // Where each data node's log ends now: the restore's line is the first of its kind after that.
  const logEnds = new Map<string, { file: string; bytes: number }>();
  for (const member of cluster.processes()) {
    if (member.role === 'data-node' && member.nodeId !== null) logEnds.set(member.nodeId, { file: member.logFile, bytes: (await stat(member.logFile)).size });
  }

  const signalMs = performance.now();
  cluster.kill('data-node', victimNodeId, FAULT_SIGNALS[fault]);
  const opened = await waitForLeaderOtherThan(settings, victimNodeId);
  if (opened === null) return null;
  const unavailableMs = opened.atMs - signalMs;
  const logEnd = logEnds.get(opened.nodeId);
  if (!logEnd) throw new CliError(`bucket ${RESTORED_BUCKET} of ${BENCH_RESTORE_TABLE.name} opened on ${opened.nodeId}, which is not a data node of this cluster`);
  const line = await restoredLine(logEnd.file, logEnd.bytes, signal);
  if (line === null) {
    if (signal.aborted) return null;
    throw new CliError(
      `data node ${opened.nodeId} opened bucket ${RESTORED_BUCKET} of ${BENCH_RESTORE_TABLE.name} but logged no 'restored PK bucket' line within ${BENCH_RESTORE.logLineTimeoutMs} ms (${logEnd.file})`,
    );
  }
  await checkRestoredKeys(cluster.natsUrl, loadedIds, extraIds, opened.nodeId);

  await cluster.restart('data-node', victimNodeId);
  const whole = await waitForOpenBuckets(
    io,
    cluster.gatewayUrl,
    signal,
    (status) => {
      const node = status.nodes?.find((candidate) => candidate.id === victimNodeId);
      return node?.live === true && (node.epoch ?? 0) > victimEpochBefore;
    },
    BENCH_RESTORE_TABLE,
  );
  const trial = restoreTrialOf({ fault, victimNodeId, newLeaderNodeId: opened.nodeId, keys: loadedIds.length + extraIds.length, unavailableMs }, line);
  return whole === null ? null : trial;
}

function leaderOf(status: ClusterStatus): string {
  const leader = status.buckets?.find((bucket) => bucket.table === BENCH_RESTORE_TABLE.name && bucket.bucket === RESTORED_BUCKET)?.leader;
  if (!leader) throw new CliError(`GET /v1/cluster names no leader for bucket ${RESTORED_BUCKET} of ${BENCH_RESTORE_TABLE.name}`);
  return leader;
}

/**
 * Polls GET /v1/cluster until the bucket is reported open on a node other than `victimNodeId`, and returns
 * that node and the `performance.now()` of the answer that said so; null when the signal aborted the wait.
 * A status query that fails (a node just died) is simply asked again.
 */
async function waitForLeaderOtherThan(settings: RestoreSettings, victimNodeId: string): Promise<{ nodeId: string; atMs: number } | null> {
  const deadlineMs = performance.now() + BENCH_RESTORE.restoreTimeoutMs;
  let lastSeen = 'no answer yet';
  while (performance.now() < deadlineMs) {
    if (settings.signal.aborted) return null;
    try {
      const status = await readClusterStatus(settings.io, settings.cluster.gatewayUrl);
      const atMs = performance.now();
      const bucket = status.buckets?.find((candidate) => candidate.table === BENCH_RESTORE_TABLE.name && candidate.bucket === RESTORED_BUCKET);
      if (bucket?.leader && bucket.leader !== victimNodeId && bucket.state === 'open') return { nodeId: bucket.leader, atMs };
      lastSeen = `leader ${bucket?.leader ?? 'none'}, ${bucket?.state ?? 'not listed'}`;
    } catch (error) {
      lastSeen = error instanceof Error ? error.message : String(error);
    }
    await sleep(BENCH_RESTORE.statusPollIntervalMs);
  }
  throw new CliError(`bucket ${RESTORED_BUCKET} of ${BENCH_RESTORE_TABLE.name} was not open on another node within ${BENCH_RESTORE.restoreTimeoutMs} ms of the fault of data node ${victimNodeId} (${lastSeen})`);
}

/** Waits for the restore's line in the log after byte `fromBytes`; null when it did not come in time or the signal aborted. */
async function restoredLine(file: string, fromBytes: number, signal: AbortSignal): Promise<RestoredBucketLine | null> {
  const deadlineMs = performance.now() + BENCH_RESTORE.logLineTimeoutMs;
  for (;;) {
    const line = lastRestoredBucketLine(await readFrom(file, fromBytes), BENCH_RESTORE_TABLE.name);
    if (line !== null) return line;
    if (signal.aborted || performance.now() >= deadlineMs) return null;
    await sleep(BENCH_RESTORE.statusPollIntervalMs);
  }
}

/** The text of a file from byte `fromBytes` to its current end. */
export async function readFrom(file: string, fromBytes: number): Promise<string> {
  const handle = await open(file, 'r');
  try {
    const { size } = await handle.stat();
    if (size <= fromBytes) return '';
    const buffer = Buffer.alloc(size - fromBytes);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, fromBytes);
    return buffer.subarray(0, bytesRead).toString('utf8');
  } finally {
    await handle.close();
  }
}

/**
 * Looks up keys written before the snapshot and after it on the restored bucket; any that is missing means
 * the restore lost acknowledged writes, which ends the run: its time would mean nothing.
 */
async function checkRestoredKeys(natsUrl: string, loadedIds: readonly number[], extraIds: readonly number[], nodeId: string): Promise<void> {
  const ids = [...lookupKeyIds(loadedIds, 0, BENCH_RESTORE.checkedKeys), ...(extraIds.length > 0 ? lookupKeyIds(extraIds, 0, BENCH_RESTORE.checkedKeys) : [])];
  const client = await MinkClient.connect({ servers: natsUrl, name: 'mink-bench-restore' });
  try {
    const { rows } = await client.table(BENCH_RESTORE_TABLE.name).lookup(ids.map((id) => ({ id })));
    const missing = ids.filter((id, index) => String((rows[index] as { id?: unknown } | null)?.id) !== String(id));
    if (missing.length > 0) {
      throw new CliError(`after the restore on data node ${nodeId}, ${missing.length} of ${ids.length} acknowledged keys of ${BENCH_RESTORE_TABLE.name} are missing (e.g. ${missing.slice(0, 5).join(', ')})`);
    }
  } finally {
    await client.close();
  }
}

function describeTrial(trial: RestoreTrial): string {
  const snapshot = trial.snapshotObject === null ? 'no snapshot' : `a ${formatMegabytes(trial.snapshotBytes)} MB snapshot`;
  return (
    `${FAULT_LABELS[trial.fault]} of data node ${trial.victimNodeId}: bucket open on data node ${trial.newLeaderNodeId} after ${formatSeconds(trial.unavailableMs)} s; ` +
    `restore of ${formatCount(trial.keys)} keys took ${formatCount(trial.restoreMs)} ms from ${snapshot} and ${formatCount(trial.replayedRecords)} replayed records`
  );
}
