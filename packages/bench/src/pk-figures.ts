import { FAULT_LABELS } from './failover-figures';
import { MEGABYTE_BYTES, formatCount, formatMegabytes, formatMilliseconds } from './format';
import { findBaseline, ratioOf } from './ratio';
import type { BaselineResult, LookupResult, Ratio, RestoreResult, RestoreTrial } from './results';

/** The message of the line a data node logs once it has restored a PK bucket (PkBucket.open). */
export const RESTORED_BUCKET_MESSAGE = 'restored PK bucket';

/** The fields of a `'restored PK bucket'` log line the bench reads. */
export interface RestoredBucketLine {
  table: string;
  bucket: number;
  /** The snapshot object restored, null when the bucket had none. */
  snapshot: string | null;
  snapshotBytes: number;
  /** The changelog was replayed over [replayedFrom, replayedTo). */
  replayedFrom: number;
  replayedTo: number;
  /** From the start of the open to the end of the replay. */
  ms: number;
  /** The GET of the snapshot alone (absent from lines of data nodes that did not time it). */
  downloadMs?: number;
}

/**
 * The last `'restored PK bucket'` line of `table` in a piece of a data node's log (pino's JSON lines,
 * mixed with whatever else the process printed), or null when there is none. Lines that are not JSON, or
 * whose fields do not have the types of that line, are skipped rather than trusted.
 */
export function lastRestoredBucketLine(logText: string, table: string): RestoredBucketLine | null {
  let last: RestoredBucketLine | null = null;
  for (const text of logText.split('\n')) {
    if (!text.includes(RESTORED_BUCKET_MESSAGE)) continue;
    let fields: Record<string, unknown>;
    try {
      fields = JSON.parse(text) as Record<string, unknown>;
    } catch {
      continue;
    }
    if (fields === null || typeof fields !== 'object' || fields.msg !== RESTORED_BUCKET_MESSAGE || fields.table !== table) continue;
    const { bucket, snapshot, snapshotBytes, replayedFrom, replayedTo, ms, downloadMs } = fields;
    const counts = [bucket, snapshotBytes, replayedFrom, replayedTo, ms];
    if (!counts.every((value) => typeof value === 'number' && Number.isFinite(value) && value >= 0)) continue;
    if (snapshot !== null && typeof snapshot !== 'string') continue;
    last = {
      table,
      bucket: bucket as number,
      snapshot,
      snapshotBytes: snapshotBytes as number,
      replayedFrom: replayedFrom as number,
      replayedTo: replayedTo as number,
      ms: ms as number,
      ...(typeof downloadMs === 'number' && Number.isFinite(downloadMs) && downloadMs >= 0 ? { downloadMs } : {}),
    };
  }
  return last;
}

/** What the bench itself knows of a restore trial; the rest comes from the new leader's log line. */
export type MeasuredRestore = Pick<RestoreTrial, 'fault' | 'victimNodeId' | 'newLeaderNodeId' | 'keys' | 'unavailableMs'>;

/** One restore trial: the measured unavailability and the new leader's own account of the restore. */
export function restoreTrialOf(measured: MeasuredRestore, line: RestoredBucketLine): RestoreTrial {
  if (line.replayedTo < line.replayedFrom) throw new Error(`a restore cannot replay backwards: [${line.replayedFrom}, ${line.replayedTo})`);
  const snapshotMegabytes = line.snapshotBytes / MEGABYTE_BYTES;
  return {
    ...measured,
    restoreMs: line.ms,
    snapshotObject: line.snapshot,
    snapshotBytes: line.snapshotBytes,
    replayedRecords: line.replayedTo - line.replayedFrom,
    msPerSnapshotMegabyte: line.snapshot === null || snapshotMegabytes === 0 ? null : line.ms / snapshotMegabytes,
    downloadMs: line.snapshot === null ? null : (line.downloadMs ?? null),
  };
}

/**
 * The position in [0, count) of the `sequence`-th key a lookup series reads: a 32-bit integer hash (the
 * finalizer of MurmurHash3) of the sequence number, so that consecutive keys fall in different buckets
 * and in different places of each tablet, yet every run reads the same keys. The modulo bias is
 * negligible for the key counts of a bench.
 */
export function scatteredIndex(sequence: number, count: number): number {
  if (!Number.isSafeInteger(sequence) || sequence < 0) throw new Error(`sequence must be a non-negative integer, got ${sequence}`);
  if (!Number.isSafeInteger(count) || count < 1) throw new Error(`count must be a positive integer, got ${count}`);
  let hash = sequence >>> 0;
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return (hash >>> 0) % count;
}

/** The ids lookup call `call` of `keysPerCall` keys reads, drawn from the ids written. */
export function lookupKeyIds(writtenIds: readonly number[], call: number, keysPerCall: number): number[] {
  if (writtenIds.length === 0) throw new Error('there are no written keys to look up');
  return Array.from({ length: keysPerCall }, (_, offset) => writtenIds[scatteredIndex(call * keysPerCall + offset, writtenIds.length)]!);
}

/**
 * Each lookup series' p50 and p99 against the p50 and p99 of raw NATS request/reply round trips of the same
 * request and reply sizes with the same number in flight, measured in the same run: what a lookup costs
 * beyond carrying its messages. A series whose baseline is missing is left out.
 */
export function lookupRatios(lookups: readonly LookupResult[], baselines: readonly BaselineResult[]): Ratio[] {
  const ratios: (Ratio | null)[] = [];
  for (const lookup of lookups) {
    const baseline = findBaseline(baselines, { kind: 'nats-request', payloadBytes: lookup.requestBytes, replyBytes: lookup.replyBytes, concurrency: lookup.concurrency });
    if (!baseline) continue;
    const name = `client lookup of ${formatCount(lookup.keysPerCall)} ${lookup.keysPerCall === 1 ? 'key' : 'keys'}, ${lookup.concurrency} in flight`;
    const sizes = `${formatCount(lookup.requestBytes)} B → ${formatCount(lookup.replyBytes)} B`;
    ratios.push(
      ratioOf(
        (quotient) => `${name}: ${formatCount(lookup.keysPerSecond)} keys/s, p50 ${formatMilliseconds(lookup.latency.p50Ms)} ms = ${quotient} × raw NATS request/reply p50 (${sizes})`,
        lookup.latency.p50Ms,
        baseline.latency.p50Ms,
      ),
      ratioOf(
        (quotient) => `${name}: p99 ${formatMilliseconds(lookup.latency.p99Ms)} ms = ${quotient} × raw NATS request/reply p99 (${sizes})`,
        lookup.latency.p99Ms,
        baseline.latency.p99Ms,
      ),
    );
  }
  return ratios.filter((entry): entry is Ratio => entry !== null);
}

/**
 * Each restore from a snapshot against the p50 of raw S3 GETs, one at a time, of an object of the
 * snapshot's size: the floor of downloading it. The restore's time also covers unpacking the snapshot
 * and replaying the changelog after it; where the log line times the download alone (`downloadMs`), a
 * second ratio compares just that. A trial without a snapshot or whose baseline is missing is left out.
 */
export function restoreRatios(restore: Pick<RestoreResult, 'trials'>, baselines: readonly BaselineResult[]): Ratio[] {
  const ratios: (Ratio | null)[] = [];
  for (const trial of restore.trials) {
    if (trial.snapshotObject === null) continue;
    const baseline = findBaseline(baselines, { kind: 's3-get', payloadBytes: trial.snapshotBytes, concurrency: 1 });
    if (!baseline) continue;
    ratios.push(
      ratioOf(
        (quotient) =>
          `${FAULT_LABELS[trial.fault]} restore of ${formatCount(trial.keys)} keys: ${formatCount(trial.restoreMs)} ms for a ${formatMegabytes(trial.snapshotBytes)} MB snapshot ` +
          `(${formatMilliseconds(trial.msPerSnapshotMegabyte ?? 0)} ms/MB) and ${formatCount(trial.replayedRecords)} replayed records = ${quotient} × ` +
          `raw S3 GET p50 of as many bytes (${formatMilliseconds(baseline.latency.p50Ms)} ms)`,
        trial.restoreMs,
        baseline.latency.p50Ms,
      ),
    );
    if (trial.downloadMs !== null) {
      ratios.push(
        ratioOf(
          (quotient) =>
            `${FAULT_LABELS[trial.fault]} restore: snapshot download ${formatMilliseconds(trial.downloadMs!)} ms = ${quotient} × raw S3 GET p50 of as many bytes; ` +
            `the other ${formatCount(trial.restoreMs - trial.downloadMs!)} ms unpack the snapshot, open the tablet and replay the changelog`,
          trial.downloadMs,
          baseline.latency.p50Ms,
        ),
      );
    }
  }
  return ratios.filter((entry): entry is Ratio => entry !== null);
}

/** The JSON sizes of one lookup call's request and reply. */
export interface LookupMessageBytes {
  requestBytes: number;
  replyBytes: number;
}

/**
 * The JSON bytes of one lookup call of `ids` as if it were one request and one reply: the request names the
 * table and carries the keys (an int64 id as a decimal string, the protobuf JSON mapping the client
 * sends), the reply carries the rows answered. A call whose keys fall in several buckets sends that many
 * smaller requests, whose sizes add up to about this.
 */
export function lookupMessageBytes(table: string, tableId: number, ids: readonly number[], rows: readonly unknown[]): LookupMessageBytes {
  const request = { op: 'lookup', table, tableId, partition: null, bucket: 0, keys: ids.map((id) => ({ id: String(id) })) };
  return { requestBytes: Buffer.byteLength(JSON.stringify(request)), replyBytes: Buffer.byteLength(JSON.stringify({ result: { rows } })) };
}

/** The mean request and reply size of some lookup calls, rounded to whole bytes; null for none. */
export function averageLookupMessageBytes(samples: readonly LookupMessageBytes[]): LookupMessageBytes | null {
  if (samples.length === 0) return null;
  const mean = (bytesOf: (sample: LookupMessageBytes) => number): number => Math.round(samples.reduce((sum, sample) => sum + bytesOf(sample), 0) / samples.length);
  return { requestBytes: mean((sample) => sample.requestBytes), replyBytes: mean((sample) => sample.replyBytes) };
}
