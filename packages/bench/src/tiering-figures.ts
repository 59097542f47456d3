import { LIMITS } from '@mink/config';
import { BENCH_SCAN } from './bench-limits';
import { formatCount, formatMegabytesPerSecond, formatRatio, formatSeconds, formatSize } from './format';
import { findBaseline, ratioOf } from './ratio';
import type { BaselineResult, FreshnessLagResult, Ratio, TieringCatchUpResult, TieringResult, TieringRoundLog, TieringRoundsSummary } from './results';
import { summarizeLatencies, type LatencySummary } from './stats';

/**
 * The pure side of the tiering figures: the lake's progress read from `GET /v1/tables/{t}`, the rounds read
 * from the tiering worker's log, the freshness watermark of acknowledged appends against the lake offsets,
 * the pacing of the freshness series, and the ratios against the baselines of the same run. The cluster
 * side is mink-tiering.ts.
 */

/** The messages of the tiering worker's log lines the figures read (packages/tiering, run by apps/tiering-worker; the spec checks they are still logged). */
export const TIERING_LOG_MESSAGES = {
  taken: 'tiering round taken',
  committedToLake: 'tiering round committed to the lake, not yet to the metadata log',
  committed: 'tiering round committed',
  failed: 'tiering round failed',
  fenced: 'tiering round fenced before its commit',
  notCommitted: 'tiering round not committed',
} as const;

/** A table's lake as `GET /v1/tables/{t}` shows it, with each bucket's committed end; arrays are indexed by bucket. */
export interface LakeProgress {
  committedEnds: number[];
  /** The offset below which the lake holds every record of each bucket: 0 before the first round. */
  lakeOffsets: number[];
  /** The newest round started; 0 before the first. */
  tieringEpoch: number;
  /** When the newest round committed (epoch ms); null before the first. */
  tieredAtMs: number | null;
  /** The round in progress, or null. */
  round: { tieringEpoch: number; startedAtMs: number } | null;
}

const isOffset = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;

/**
 * The lake's progress in the body of `GET /v1/tables/{t}` of a table of `buckets` buckets: each bucket's
 * `stream.endOffset` from `bucketLeaders` and its `offset` from `lake.offsets` (a table whose lake has not
 * been started has no `lake`: every offset 0). Throws on a body that does not describe every bucket, since
 * a progress read from it would be made up.
 */
export function parseLakeProgress(body: unknown, buckets: number): LakeProgress {
  if (!Number.isSafeInteger(buckets) || buckets < 1) throw new Error(`a table has at least one bucket, not ${buckets}`);
  const table = body as { bucketLeaders?: unknown; lake?: unknown } | null;
  if (table === null || typeof table !== 'object' || !Array.isArray(table.bucketLeaders)) throw new Error('the table description has no bucketLeaders');
  const committedEnds = new Array<number | undefined>(buckets).fill(undefined);
  for (const leader of table.bucketLeaders as { bucket?: unknown; stream?: { endOffset?: unknown } }[]) {
    const bucket = leader?.bucket;
    const end = leader?.stream?.endOffset;
    if (!isOffset(bucket) || bucket >= buckets || !isOffset(end)) throw new Error(`the table description has a malformed bucket: ${JSON.stringify(leader).slice(0, 200)}`);
    committedEnds[bucket] = end;
  }
  const missing = committedEnds.findIndex((end) => end === undefined);
  if (missing >= 0) throw new Error(`the table description lacks bucket ${missing}`);
  const lakeOffsets = new Array<number>(buckets).fill(0);
  const lake = table.lake as { offsets?: unknown; tieringEpoch?: unknown; tieredAt?: unknown; round?: unknown } | undefined;
  if (lake === undefined) return { committedEnds: committedEnds as number[], lakeOffsets, tieringEpoch: 0, tieredAtMs: null, round: null };
  if (lake === null || typeof lake !== 'object' || !Array.isArray(lake.offsets) || !isOffset(lake.tieringEpoch)) throw new Error('the table description has a malformed lake');
  for (const entry of lake.offsets as { bucket?: unknown; offset?: unknown }[]) {
    if (!isOffset(entry?.bucket) || entry.bucket >= buckets || !isOffset(entry.offset)) throw new Error(`the lake has a malformed offset: ${JSON.stringify(entry).slice(0, 200)}`);
    lakeOffsets[entry.bucket] = entry.offset;
  }
  const tieredAtMs = lake.tieredAt === null || lake.tieredAt === undefined ? null : Date.parse(String(lake.tieredAt));
  if (tieredAtMs !== null && !Number.isFinite(tieredAtMs)) throw new Error(`the lake's tieredAt is not a time: ${String(lake.tieredAt)}`);
  const round = lake.round as { tieringEpoch?: unknown; startedAt?: unknown } | null | undefined;
  let roundInProgress: LakeProgress['round'] = null;
  if (round !== null && round !== undefined) {
    const startedAtMs = Date.parse(String(round.startedAt));
    if (!isOffset(round.tieringEpoch) || !Number.isFinite(startedAtMs)) throw new Error(`the lake has a malformed round: ${JSON.stringify(round).slice(0, 200)}`);
    roundInProgress = { tieringEpoch: round.tieringEpoch, startedAtMs };
  }
  return { committedEnds: committedEnds as number[], lakeOffsets, tieringEpoch: lake.tieringEpoch, tieredAtMs, round: roundInProgress };
}

/** Records committed but not yet in the lake, over every bucket. */
export function recordsBehind(progress: LakeProgress): number {
  return progress.committedEnds.reduce((sum, end, bucket) => sum + Math.max(0, end - (progress.lakeOffsets[bucket] ?? 0)), 0);
}

/**
 * Why the lake offsets, once caught up, do not equal the committed ends, or the committed ends the ends the
 * appends were acknowledged up to (`ackedEnds`, by bucket); null when all three agree. A committed end
 * beyond the acknowledged one is a call that failed but was written; a lake offset beyond the committed end
 * would be a lake holding records the log never committed.
 */
export function checkCaughtUp(progress: LakeProgress, ackedEnds: readonly number[]): string | null {
  for (let bucket = 0; bucket < progress.committedEnds.length; bucket++) {
    const end = progress.committedEnds[bucket]!;
    const lake = progress.lakeOffsets[bucket]!;
    const acked = ackedEnds[bucket] ?? 0;
    if (lake !== end) return `bucket ${bucket}: the lake offset is ${lake}, the committed end ${end}`;
    if (end !== acked) return `bucket ${bucket}: the committed end is ${end}, but the appends were acknowledged up to ${acked}`;
  }
  return null;
}

/** One acknowledged append of the freshness series: when its ack arrived (bench clock) and where each bucket's part of it ends. */
export interface AcknowledgedAppend {
  ackedAtMs: number;
  parts: { bucket: number; endOffset: number }[];
}

/**
 * How many of `appends` (in the order their acks arrived) the lake holds as a prefix: the first `from` are
 * known to be held already (lake offsets only grow), and the walk stops at the first append some part of
 * which lies beyond its bucket's lake offset. The lake then holds every append acknowledged up to the ack of
 * the last one of the prefix, which is the freshness watermark: a later append held while an earlier one is
 * not does not move it.
 */
export function tieredPrefix(appends: readonly AcknowledgedAppend[], from: number, lakeOffsets: readonly number[]): number {
  if (!Number.isSafeInteger(from) || from < 0 || from > appends.length) throw new Error(`prefix ${from} is outside the ${appends.length} appends`);
  let held = from;
  while (held < appends.length && appends[held]!.parts.every((part) => part.endOffset <= (lakeOffsets[part.bucket] ?? 0))) held++;
  return held;
}

/** When the freshness series' call `index` is due, in ms after the series started: calls of `rowsPerCall` rows spread evenly at `rowsPerSecond`. */
export function pacedCallStartMs(index: number, rowsPerCall: number, rowsPerSecond: number): number {
  if (!Number.isSafeInteger(index) || index < 0) throw new Error(`call ${index} is not a call of the series`);
  if (!(rowsPerCall >= 1) || !(rowsPerSecond > 0)) throw new Error(`a series needs rows per call (${rowsPerCall}) and a positive rate (${rowsPerSecond})`);
  return (index * rowsPerCall * 1_000) / rowsPerSecond;
}

/** The freshness series: its rate, calls and rows per call. */
export interface LagSeriesPlan {
  targetRowsPerSecond: number;
  rowsPerCall: number;
  calls: number;
  /** The time between two calls. */
  callIntervalMs: number;
}

/**
 * Appends at `fraction` of `ceilingRowsPerSecond` for `seconds`: calls of `batchRows` rows, or fewer so that
 * at least `callsPerSecondMin` calls go out per second (a low rate in big calls would bunch its rows).
 */
export function lagSeriesPlan(ceilingRowsPerSecond: number, fraction: number, seconds: number, batchRows: number, callsPerSecondMin: number): LagSeriesPlan {
  if (!(ceilingRowsPerSecond > 0) || !Number.isFinite(ceilingRowsPerSecond)) throw new Error(`the append ceiling must be a positive rate, not ${ceilingRowsPerSecond}`);
  if (!(fraction > 0 && fraction <= 1)) throw new Error(`the fraction of the ceiling must be in (0, 1], not ${fraction}`);
  if (!(seconds > 0)) throw new Error(`the series must last some time, not ${seconds} s`);
  if (!Number.isSafeInteger(batchRows) || batchRows < 1 || !(callsPerSecondMin > 0)) throw new Error(`calls need rows (${batchRows}) and a rate (${callsPerSecondMin}/s)`);
  const targetRowsPerSecond = ceilingRowsPerSecond * fraction;
  const rowsPerCall = Math.max(1, Math.min(batchRows, Math.floor(targetRowsPerSecond / callsPerSecondMin)));
  const calls = Math.max(1, Math.round((targetRowsPerSecond * seconds) / rowsPerCall));
  return { targetRowsPerSecond, rowsPerCall, calls, callIntervalMs: (rowsPerCall * 1_000) / targetRowsPerSecond };
}

/** A field of a log line that must be a count (a whole number, at least 0). */
function count(fields: Record<string, unknown>, name: string): number | null {
  const value = fields[name];
  return isOffset(value) ? value : null;
}

/** The message of a logged error (pino's `err`) or rejection. */
function messageOf(fields: Record<string, unknown>): string {
  for (const name of ['err', 'rejection']) {
    const value = fields[name] as { message?: unknown } | undefined;
    if (value && typeof value === 'object' && typeof value.message === 'string') return value.message;
  }
  return 'no message logged';
}

/**
 * The rounds of `table` in a tiering worker's log text (pino JSON lines; anything else is skipped), by
 * tiering epoch. A round's figures come from its Iceberg commit line (`sourceBytes` is the stored batches it
 * read), its outcome and end from the line after the log commit, or from a failure, fence or refusal.
 */
export function parseTieringRounds(logText: string, table: string): TieringRoundLog[] {
  const rounds = new Map<number, TieringRoundLog>();
  for (const text of logText.split('\n')) {
    if (!text.includes('tiering round')) continue;
    let fields: Record<string, unknown>;
    try {
      fields = JSON.parse(text) as Record<string, unknown>;
    } catch {
      continue;
    }
    if (fields === null || typeof fields !== 'object' || fields.table !== table) continue;
    const tieringEpoch = count(fields, 'tieringEpoch');
    const timeMs = count(fields, 'time');
    if (tieringEpoch === null || timeMs === null) continue;
    const round = rounds.get(tieringEpoch) ?? {
      tieringEpoch,
      takenAtMs: null,
      endedAtMs: null,
      outcome: 'in-progress',
      rows: 0,
      sourceBytes: 0,
      parquetBytes: 0,
      files: 0,
      message: null,
    };
    switch (fields.msg) {
      case TIERING_LOG_MESSAGES.taken:
        round.takenAtMs = timeMs;
        break;
      case TIERING_LOG_MESSAGES.committedToLake:
        round.rows = count(fields, 'rows') ?? 0;
        round.sourceBytes = count(fields, 'sourceBytes') ?? 0;
        round.parquetBytes = count(fields, 'bytes') ?? 0;
        round.files = count(fields, 'files') ?? 0;
        break;
      case TIERING_LOG_MESSAGES.committed:
        round.outcome = 'committed';
        round.endedAtMs = timeMs;
        break;
      case TIERING_LOG_MESSAGES.failed:
      case TIERING_LOG_MESSAGES.fenced:
      case TIERING_LOG_MESSAGES.notCommitted:
        round.outcome = fields.msg === TIERING_LOG_MESSAGES.failed ? 'failed' : fields.msg === TIERING_LOG_MESSAGES.fenced ? 'fenced' : 'not-committed';
        round.endedAtMs = timeMs;
        round.message = messageOf(fields);
        break;
      default:
        continue;
    }
    rounds.set(tieringEpoch, round);
  }
  return [...rounds.values()].sort((left, right) => left.tieringEpoch - right.tieringEpoch);
}

/** True when every round of `rounds` up to `tieringEpoch` has an outcome in the log (the lake may show a commit before its line is written). */
export function roundsSettled(rounds: readonly TieringRoundLog[], tieringEpoch: number): boolean {
  return rounds.every((round) => round.tieringEpoch > tieringEpoch || round.outcome !== 'in-progress');
}

/** The committed rounds summed, the others counted, and the span from the first taken to the last committed. */
export function summarizeRounds(rounds: readonly TieringRoundLog[]): TieringRoundsSummary {
  const committed = rounds.filter((round) => round.outcome === 'committed');
  const problems = rounds.filter((round) => round.outcome !== 'committed' && round.outcome !== 'in-progress');
  const sum = (field: 'rows' | 'sourceBytes' | 'parquetBytes' | 'files'): number => committed.reduce((total, round) => total + round[field], 0);
  const taken = rounds.map((round) => round.takenAtMs).filter((time): time is number => time !== null);
  const ended = committed.map((round) => round.endedAtMs).filter((time): time is number => time !== null);
  const durations = committed.filter((round) => round.takenAtMs !== null && round.endedAtMs !== null).map((round) => round.endedAtMs! - round.takenAtMs!);
  const spanMs = taken.length > 0 && ended.length > 0 ? Math.max(...ended) - Math.min(...taken) : null;
  return {
    committed: committed.length,
    notCommitted: problems.length,
    firstProblem: problems.length === 0 ? null : `round ${problems[0]!.tieringEpoch} ${problems[0]!.outcome}: ${problems[0]!.message ?? 'no message logged'}`,
    rows: sum('rows'),
    sourceBytes: sum('sourceBytes'),
    parquetBytes: sum('parquetBytes'),
    files: sum('files'),
    spanMs: spanMs !== null && spanMs > 0 ? spanMs : null,
    busyMs: durations.reduce((total, durationMs) => total + durationMs, 0),
    roundMs: durations.length === 0 ? null : summarizeLatencies(durations),
  };
}

/** One sample of the freshness series: when it was read (ms after the series started) and the lag it found. */
export interface LagSample {
  atMs: number;
  lagMs: number;
  /** False for samples before the series' first round committed (warm-up: the lake had caught up just before the series). */
  steady: boolean;
}

/** The lag of the steady samples; null when there are none. */
export function summarizeLag(samples: readonly LagSample[]): LatencySummary | null {
  const steady = samples.filter((sample) => sample.steady).map((sample) => sample.lagMs);
  return steady.length === 0 ? null : summarizeLatencies(steady);
}

/**
 * The median lag of the first half of the steady samples (in time order) and of the second half; the
 * middle sample of an odd count goes to the second. Null without steady samples; one sample is both halves.
 */
export function lagHalvesP50Ms(samples: readonly LagSample[]): [number, number] | null {
  const steady = samples.filter((sample) => sample.steady);
  if (steady.length === 0) return null;
  if (steady.length === 1) return [steady[0]!.lagMs, steady[0]!.lagMs];
  const middle = Math.floor(steady.length / 2);
  const median = (part: readonly LagSample[]): number => summarizeLatencies(part.map((sample) => sample.lagMs)).p50Ms;
  return [median(steady.slice(0, middle)), median(steady.slice(middle))];
}

/**
 * S3's bound on one worker's tiering, in bytes of stored batches per second: a worker that did nothing but
 * GET the stored batches at `getBytesPerSecond` and PUT the Parquet (`parquetPerStoredByte` of their size)
 * at `putBytesPerSecond`, one after the other, would tier at 1 / (1/GET + (Parquet/stored)/PUT).
 */
export function s3TieringBoundBytesPerSecond(getBytesPerSecond: number, putBytesPerSecond: number, parquetPerStoredByte: number): number {
  if (!(getBytesPerSecond > 0) || !(putBytesPerSecond > 0) || !(parquetPerStoredByte >= 0)) {
    throw new Error(`the bound needs positive rates and a non-negative Parquet share (GET ${getBytesPerSecond}, PUT ${putBytesPerSecond}, share ${parquetPerStoredByte})`);
  }
  return 1 / (1 / getBytesPerSecond + parquetPerStoredByte / putBytesPerSecond);
}

/** The baselines the tiering throughput is compared with. */
export interface TieringRatioSettings {
  /** Raw S3 GETs: the scan figures' 1 MiB, 4 in flight (a round's read fetches its slices in parallel). */
  getBodyBytes: number;
  getsInFlight: number;
  /** Raw S3 PUTs of a full WAL object one at a time (a round stores its data files one after the other). */
  putBodyBytes: number;
  putsInFlight: number;
}

export const TIERING_RATIO_SETTINGS: TieringRatioSettings = {
  getBodyBytes: BENCH_SCAN.getBodyBytes,
  getsInFlight: BENCH_SCAN.scansInFlight,
  putBodyBytes: LIMITS.walFlushBytes,
  putsInFlight: 1,
};

/**
 * The tiering figures against the baselines of the same run:
 * - catch-up MB/s (stored batches read by the worker's rounds, over the rounds' span) against raw S3 GET
 *   MB/s, against raw S3 PUT MB/s, and against S3's bound on a worker that only copies
 *   (`s3TieringBoundBytesPerSecond`, with this run's Parquet-to-stored ratio);
 * - the freshness lag's p99 (with p50 and max in the text) against the configured freshness.
 * A catch-up that failed its check, or whose baselines are missing, has no ratio.
 */
export function tieringRatios(tiering: TieringResult, baselines: readonly BaselineResult[], settings: TieringRatioSettings = TIERING_RATIO_SETTINGS): Ratio[] {
  const ratios: (Ratio | null)[] = [];
  const catchUp = tiering.catchUp;
  const get = findBaseline(baselines, { kind: 's3-get', payloadBytes: settings.getBodyBytes, concurrency: settings.getsInFlight });
  const put = findBaseline(baselines, { kind: 's3-put', payloadBytes: settings.putBodyBytes, concurrency: settings.putsInFlight });
  if (catchUp !== null && catchUp.checkFailure === null && catchUp.bytesPerSecond !== null && catchUp.rowsPerSecond !== null) {
    const rate = catchUp.bytesPerSecond;
    const head = `tiering: ${formatMegabytesPerSecond(rate)} MB/s of stored batches, ${formatCount(catchUp.rowsPerSecond)} rows/s (the worker's rounds)`;
    const getName = `raw S3 GET MB/s (${formatSize(settings.getBodyBytes)}, ${settings.getsInFlight} in flight)`;
    const putName = `raw S3 PUT MB/s (${formatSize(settings.putBodyBytes)}, ${settings.putsInFlight} in flight)`;
    if (get) ratios.push(ratioOf((quotient) => `${head} = ${quotient} × ${getName}`, rate, get.bytesPerSecond));
    if (put) ratios.push(ratioOf((quotient) => `${head} = ${quotient} × ${putName}`, rate, put.bytesPerSecond));
    if (get && put && catchUp.rounds.sourceBytes > 0) {
      const parquetShare = catchUp.rounds.parquetBytes / catchUp.rounds.sourceBytes;
      const bound = s3TieringBoundBytesPerSecond(get.bytesPerSecond, put.bytesPerSecond, parquetShare);
      ratios.push(
        ratioOf(
          (quotient) =>
            `${head} = ${quotient} × S3's bound on a worker that only copies, ${formatMegabytesPerSecond(bound)} MB/s = 1 / (1/GET + ${formatRatio(parquetShare)}/PUT) ` +
            `(GET and PUT as above; ${formatRatio(parquetShare)} = Parquet bytes / stored bytes)`,
          rate,
          bound,
        ),
      );
    }
  }
  const lag = tiering.lag;
  if (lag !== null && lag.lag !== null) {
    ratios.push(
      ratioOf(
        (quotient) =>
          `tiering freshness lag at ${formatCount(lag.rowsPerSecond)} rows/s: p99 ${formatSeconds(lag.lag!.p99Ms)} s = ${quotient} × table.datalake.freshness ${formatSeconds(lag.freshnessMs)} s ` +
          `(p50 ${formatSeconds(lag.lag!.p50Ms)} s, max ${formatSeconds(lag.lag!.maximumMs)} s)`,
        lag.lag.p99Ms,
        lag.freshnessMs,
      ),
    );
  }
  return ratios.filter((entry): entry is Ratio => entry !== null);
}

/** "200 000 rows, 44.8 MB of stored batches in 1 round (1 file per bucket): 12.1 MB/s over the rounds, 9.5 MB/s from enabling the lake" for a progress line. */
export function describeCatchUp(catchUp: TieringCatchUpResult): string {
  const rounds = catchUp.rounds;
  return (
    `${formatCount(rounds.rows)} rows, ${formatSize(rounds.sourceBytes)} of stored batches → ${formatSize(rounds.parquetBytes)} of Parquet in ${formatCount(rounds.files)} files, ` +
    `${formatCount(rounds.committed)} rounds committed` +
    (rounds.notCommitted > 0 ? `, ${formatCount(rounds.notCommitted)} not (${rounds.firstProblem})` : '') +
    (catchUp.bytesPerSecond === null ? '' : `: ${formatMegabytesPerSecond(catchUp.bytesPerSecond)} MB/s over the rounds`) +
    (catchUp.catchUpMs === null ? '' : `; caught up ${formatSeconds(catchUp.catchUpMs)} s after the lake was enabled`) +
    (catchUp.catchUpBytesPerSecond === null ? '' : ` (${formatMegabytesPerSecond(catchUp.catchUpBytesPerSecond)} MB/s)`) +
    (catchUp.stoppedBecause === null ? '' : `; STOPPED: ${catchUp.stoppedBecause}`) +
    (catchUp.checkFailure === null ? '' : `; CHECK FAILED: ${catchUp.checkFailure}`)
  );
}

/** "lag p50 2.9 s, p99 4.1 s, max 4.3 s over 112 samples; 11 rounds" for a progress line. */
export function describeLag(lag: FreshnessLagResult): string {
  return (
    `${formatCount(lag.rows)} rows in ${formatCount(lag.acknowledgedCalls)} calls at ${formatCount(lag.rowsPerSecond)} rows/s (target ${formatCount(lag.targetRowsPerSecond)}); ` +
    (lag.lag === null
      ? 'no steady sample'
      : `lag p50 ${formatSeconds(lag.lag.p50Ms)} s, p99 ${formatSeconds(lag.lag.p99Ms)} s, max ${formatSeconds(lag.lag.maximumMs)} s over ${formatCount(lag.lag.count)} samples`) +
    (lag.lagHalvesP50Ms === null ? '' : ` (p50 ${formatSeconds(lag.lagHalvesP50Ms[0])} s, then ${formatSeconds(lag.lagHalvesP50Ms[1])} s)`) +
    `; ${formatCount(lag.rounds.committed)} rounds committed` +
    (lag.rounds.notCommitted > 0 ? `, ${formatCount(lag.rounds.notCommitted)} not (${lag.rounds.firstProblem})` : '') +
    (lag.drainMs === null ? '; the lake did not catch up after the last append' : `; the lake held the last append ${formatSeconds(lag.drainMs)} s after its ack`) +
    (lag.stoppedBecause === null ? '' : `; STOPPED: ${lag.stoppedBecause}`)
  );
}
