import { tableFromIPC } from 'apache-arrow';
import { LIMITS } from '@mink/config';
import { BENCH_SCAN, STREAM_KEY_PREFIX } from './bench-limits';
import { formatCount, formatMegabytesPerSecond, formatSize } from './format';
import { findBaseline, minimumGoalText, ratioOf } from './ratio';
import type { BaselineResult, CompactedBucket, Ratio, RatioGoal, ScanCache, ScanFormat, ScanSeriesResult } from './results';

/**
 * The pure parts of the scan figures: what each format is asked for with, how its rows are counted, the
 * checks that the rows scanned are the rows appended, how far compaction has got from the stream objects'
 * keys, the verdict on one long poll, and the ratios against raw S3 GETs with the issue's goals.
 */

/** Every format, in the order a run scans them. */
export const SCAN_FORMATS: readonly ScanFormat[] = ['json', 'ndjson', 'arrow', 'client-arrow'];

/**
 * The Accept header of each format's requests, which is also the Content-Type its replies must carry (the
 * client's pages are Arrow IPC streams too).
 */
export const SCAN_MEDIA_TYPES: Readonly<Record<ScanFormat, string>> = {
  json: 'application/json',
  ndjson: 'application/x-ndjson',
  arrow: 'application/vnd.apache.arrow.stream',
  'client-arrow': 'application/vnd.apache.arrow.stream',
};

export const SCAN_FORMAT_LABELS: Readonly<Record<ScanFormat, string>> = { json: 'JSON', ndjson: 'NDJSON', arrow: 'Arrow', 'client-arrow': 'Arrow via the TS client' };

/** The headers every scan reply carries, whatever its format (Headers.get is case-insensitive). */
export const NEXT_OFFSET_HEADER = 'Mink-Next-Offset';
export const HIGH_WATERMARK_HEADER = 'Mink-High-Watermark';

/** True when a reply's Content-Type (parameters such as `; charset=utf-8` aside) is the one `format` asked for. */
export function servesFormat(format: ScanFormat, contentType: string | null): boolean {
  const mediaType = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  return mediaType === SCAN_MEDIA_TYPES[format];
}

/**
 * An offset header as a non-negative safe integer, or null when the reply has none. A header that is there
 * but is not such a number throws: paging on it would scan the wrong records.
 */
export function offsetHeader(headers: { get(name: string): string | null }, name: string): number | null {
  const text = headers.get(name);
  if (text === null) return null;
  const value = /^\d+$/.test(text.trim()) ? Number(text.trim()) : Number.NaN;
  if (!Number.isSafeInteger(value)) throw new Error(`the ${name} header is not an offset: '${text}'`);
  return value;
}

/** A JSON scan reply, as far as the bench reads it. */
interface JsonScanReply {
  records: unknown[];
  nextOffset: number;
  highWatermark: number;
}

/** Parses a JSON scan reply and checks the fields the bench reads; throws on anything else. */
export function parseJsonScanReply(body: Uint8Array | string): JsonScanReply {
  const text = typeof body === 'string' ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
  const reply = JSON.parse(text) as Partial<JsonScanReply> | null;
  if (reply === null || typeof reply !== 'object' || !Array.isArray(reply.records)) throw new Error('a JSON scan reply must be an object with a records array');
  if (!Number.isSafeInteger(reply.nextOffset) || !Number.isSafeInteger(reply.highWatermark)) throw new Error('a JSON scan reply must have integer nextOffset and highWatermark');
  return reply as JsonScanReply;
}

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;

/**
 * The rows of one scan reply body: JSON `records.length`, NDJSON non-empty lines, Arrow the `numRows` of
 * the IPC stream read by apache-arrow. A body that is not a reply of its format throws.
 */
export function countRows(format: ScanFormat, body: Uint8Array): number {
  switch (format) {
    case 'json':
      return parseJsonScanReply(body).records.length;
    case 'ndjson':
      return countLines(body);
    case 'arrow':
    case 'client-arrow':
      if (body.byteLength === 0) throw new Error('an Arrow scan reply must hold at least a schema');
      return tableFromIPC(body).numRows;
  }
}

/**
 * The rows of one reply that said `nextOffset` in its header: `countRows`, and for JSON, whose body states
 * its next offset too, the check that body and header agree.
 */
export function countReplyRows(format: ScanFormat, body: Uint8Array, nextOffset: number): number {
  if (format !== 'json') return countRows(format, body);
  const reply = parseJsonScanReply(body);
  if (reply.nextOffset !== nextOffset) throw new Error(`its body says nextOffset ${reply.nextOffset}, its header ${nextOffset}`);
  return reply.records.length;
}

/** Lines holding anything but a carriage return; the last line needs no newline. */
function countLines(body: Uint8Array): number {
  let lines = 0;
  let lineHasText = false;
  for (const byte of body) {
    if (byte === NEWLINE) {
      if (lineHasText) lines++;
      lineHasText = false;
    } else if (byte !== CARRIAGE_RETURN) {
      lineHasText = true;
    }
  }
  return lineHasText ? lines + 1 : lines;
}

/** One reply of a bucket's scan: the offset asked for, the next offset answered and the rows counted in it. */
export interface ScannedPage {
  offset: number;
  nextOffset: number;
  rows: number;
}

/**
 * Why the pages of one bucket's scan (in request order) are not exactly the `records` appended to it, or
 * null when they are: the first page asks for offset 0, each later one for the previous next offset, every
 * page holds one row per offset it advanced over (a log table has no gaps), and the last next offset is the
 * bucket's record count.
 */
export function checkBucketScan(bucket: number, pages: readonly ScannedPage[], records: number): string | null {
  let offset = 0;
  let rows = 0;
  for (const [index, page] of pages.entries()) {
    if (page.offset !== offset) return `bucket ${bucket}: request ${index + 1} asked for offset ${page.offset} instead of ${offset}`;
    if (page.nextOffset < page.offset) return `bucket ${bucket}: the reply at offset ${page.offset} went back to ${page.nextOffset}`;
    if (page.rows !== page.nextOffset - page.offset) {
      return `bucket ${bucket}: the reply at offset ${page.offset} held ${formatCount(page.rows)} rows but advanced ${formatCount(page.nextOffset - page.offset)} offsets`;
    }
    offset = page.nextOffset;
    rows += page.rows;
  }
  if (offset !== records || rows !== records) return `bucket ${bucket}: ${formatCount(rows)} rows received up to offset ${formatCount(offset)}, but ${formatCount(records)} were appended`;
  return null;
}

/** One acknowledged batch of an append to a bucket (`AppendBucketResult`): one slice of its stream. */
export interface AppendedBatch {
  baseOffset: number;
  count: number;
}

/**
 * The batches of one bucket in offset order, checked to tile [0, records) with neither gap nor overlap, so
 * the acknowledgements account for every record the bucket holds. A retried batch acknowledged twice
 * (`duplicate`) is one batch. Throws when they do not tile: a call failed after some of its rows were
 * written, and the rows a scan should return are then unknown.
 */
export function tileBatches(bucket: number, batches: readonly AppendedBatch[]): AppendedBatch[] {
  const byOffset = new Map<number, AppendedBatch>();
  for (const batch of batches) {
    const seen = byOffset.get(batch.baseOffset);
    if (seen !== undefined && seen.count !== batch.count) throw new Error(`bucket ${bucket}: two batches at offset ${batch.baseOffset} of ${seen.count} and ${batch.count} records`);
    byOffset.set(batch.baseOffset, batch);
  }
  const sorted = [...byOffset.values()].sort((a, b) => a.baseOffset - b.baseOffset);
  let end = 0;
  for (const batch of sorted) {
    if (!(batch.count > 0)) throw new Error(`bucket ${bucket}: a batch at offset ${batch.baseOffset} of ${batch.count} records`);
    if (batch.baseOffset !== end) throw new Error(`bucket ${bucket}: the acknowledged batches ${batch.baseOffset > end ? 'leave a gap' : 'overlap'} at offset ${end}`);
    end = batch.baseOffset + batch.count;
  }
  return sorted;
}

/** What the key of a stream object says: its stream and the records [startOffset, endOffset) it holds. */
export interface StreamObjectRange {
  tableId: number;
  partition: string | null;
  bucket: number;
  startOffset: number;
  endOffset: number;
  nodeEpoch: number;
  /** Absent in keys written before stream epochs were part of them. */
  streamEpoch?: number;
}

/**
 * Reads a key written by `streamObjectKey` of @mink/s3stream (`streams/{tableId}-{partition or _}-{bucket}/
 * {start}-{end}-{nodeEpoch}-{streamEpoch}`, or without the stream epoch as older keys are); null for any
 * other key. A partition name may hold `-`, the numbers never do, so the bucket is the last number before
 * the `/`.
 */
export function parseStreamObjectKey(key: string): StreamObjectRange | null {
  if (!key.startsWith(STREAM_KEY_PREFIX)) return null;
  const match = /^(\d+)-(.+)-(\d+)\/(\d+)-(\d+)-(\d+)(?:-(\d+))?$/.exec(key.slice(STREAM_KEY_PREFIX.length));
  if (match === null) return null;
  const [tableId, partition, bucket, startOffset, endOffset, nodeEpoch] = [match[1]!, match[2]!, match[3]!, match[4]!, match[5]!, match[6]!];
  const numbers = [tableId, bucket, startOffset, endOffset, nodeEpoch, match[7] ?? '0'].map(Number);
  if (!numbers.every(Number.isSafeInteger) || numbers[3]! <= numbers[2]!) return null;
  return {
    tableId: numbers[0]!,
    partition: partition === '_' ? null : partition,
    bucket: numbers[1]!,
    startOffset: numbers[2]!,
    endOffset: numbers[3]!,
    nodeEpoch: numbers[4]!,
    ...(match[7] === undefined ? {} : { streamEpoch: numbers[5]! }),
  };
}

/**
 * How far compaction has got with one bucket: a batch counts as moved when a stream object of the bucket
 * covers it whole (compaction moves whole slices). Objects of other streams are ignored. A listing may name
 * an object whose commit has not applied yet, or was rejected and is about to be deleted; both are rare and
 * brief, and the scans that follow read whatever the view names. `walSlices` is the bucket's count of slices
 * in WAL objects from GET /v1/cluster: the client merges batches, so batches and slices differ.
 */
export function compactedBucket(bucket: number, batches: readonly AppendedBatch[], objects: readonly StreamObjectRange[], walSlices: number): CompactedBucket {
  const own = objects.filter((object) => object.bucket === bucket && object.partition === null);
  let records = 0;
  let recordsInStreamObjects = 0;
  let walBatches = 0;
  for (const batch of batches) {
    const end = batch.baseOffset + batch.count;
    records = Math.max(records, end);
    if (own.some((object) => object.startOffset <= batch.baseOffset && end <= object.endOffset)) recordsInStreamObjects += batch.count;
    else walBatches++;
  }
  return { bucket, records, batches: batches.length, recordsInStreamObjects, walBatches, walSlices, streamObjects: own.length };
}

/**
 * True when compaction has done all it will do without more appends: a data node compacts a stream once it
 * has `slicesMin` slices in WAL objects, so fewer than that stay in them for good.
 */
export function compactionComplete(buckets: readonly CompactedBucket[], slicesMin: number = LIMITS.compactionSlicesMin): boolean {
  return buckets.every((bucket) => bucket.walSlices < slicesMin);
}

/** "203 000 of 204 000 records in 16 stream objects, at most 7 batches left in WAL objects per bucket". */
export function describeCompaction(buckets: readonly CompactedBucket[]): string {
  const records = buckets.reduce((sum, bucket) => sum + bucket.records, 0);
  const moved = buckets.reduce((sum, bucket) => sum + bucket.recordsInStreamObjects, 0);
  const objects = buckets.reduce((sum, bucket) => sum + bucket.streamObjects, 0);
  const walBatchesMax = Math.max(0, ...buckets.map((bucket) => bucket.walBatches));
  const walSlicesMax = Math.max(0, ...buckets.map((bucket) => bucket.walSlices));
  return (
    `${formatCount(moved)} of ${formatCount(records)} records in ${formatCount(objects)} stream objects, ` +
    `at most ${formatCount(walSlicesMax)} slices (${formatCount(walBatchesMax)} appended batches) left in WAL objects per bucket`
  );
}

/**
 * The issues' goal for a series, as a fraction of raw S3 GET MB/s: Arrow cold ≥ 0.5 ×, Arrow hot ≥ 0.8 ×,
 * JSON ≥ 0.1 ×, all through the gateway; none for the others.
 */
export function scanGoalMinimum(format: ScanFormat, cache: ScanCache): number | null {
  if (format === 'arrow') return cache === 'cold' ? BENCH_SCAN.goals.arrowColdMin : BENCH_SCAN.goals.arrowHotMin;
  if (format === 'json') return BENCH_SCAN.goals.jsonMin;
  return null;
}

/**
 * Each scan series' MB/s of reply bodies against the MB/s of raw S3 GETs of `getBodyBytes` with as many in
 * flight as the series had scans, measured in the same run, with the issue's goal where it set one. A series
 * whose rows did not check out, or whose baseline is missing, has no ratio: its MB/s would not mean anything.
 */
export function scanRatios(series: readonly ScanSeriesResult[], baselines: readonly BaselineResult[], getBodyBytes: number = BENCH_SCAN.getBodyBytes): Ratio[] {
  const ratios: Ratio[] = [];
  for (const entry of series) {
    if (entry.rowCheckFailure !== null) continue;
    const baseline = findBaseline(baselines, { kind: 's3-get', payloadBytes: getBodyBytes, concurrency: entry.scansInFlight });
    if (!baseline) continue;
    const minimum = scanGoalMinimum(entry.format, entry.cache);
    const goalText = (quotient: number): string => (minimum === null ? '' : minimumGoalText(quotient, minimum));
    const ratio = ratioOf(
      (quotient) =>
        `scan ${SCAN_FORMAT_LABELS[entry.format]} ${entry.cache}: ${formatMegabytesPerSecond(entry.bytesPerSecond)} MB/s, ${formatCount(entry.rowsPerSecond)} rows/s = ` +
        `${quotient} × raw S3 GET MB/s (${formatSize(getBodyBytes)}, ${entry.scansInFlight} in flight)${goalText(entry.bytesPerSecond / baseline.bytesPerSecond)}`,
      entry.bytesPerSecond,
      baseline.bytesPerSecond,
    );
    if (ratio === null) continue;
    const goal: RatioGoal | undefined = minimum === null ? undefined : { minimum, met: ratio.ratio >= minimum };
    ratios.push(goal === undefined ? ratio : { ...ratio, goal });
  }
  return ratios;
}

/** What the bench saw of one long poll. */
export interface LongPollReply {
  /** `performance.now()` when the reply had arrived whole. */
  answeredAtMs: number;
  /** HTTP status; 0 when the request failed without one. */
  status: number;
  text: string;
}

/** The verdict on one long poll: delivered, not held at all (the gateway does not wait), or failed. */
export type LongPollVerdict = { kind: 'delivered' } | { kind: 'not-held'; message: string } | { kind: 'failed'; message: string };

/**
 * Judges one long poll at `offset` that an append of `records` records at that offset, sent at
 * `appendSentAtMs`, should have woken: the reply must hold exactly those records, starting at `offset`. A
 * reply with no records that came before the append was even sent means the scan was never held.
 */
export function judgeLongPoll(reply: LongPollReply, appendSentAtMs: number, offset: number, records: number): LongPollVerdict {
  if (reply.status !== 200) return { kind: 'failed', message: `the long poll answered ${reply.status === 0 ? 'nothing' : `HTTP ${reply.status}`}: ${reply.text.slice(0, 300)}` };
  let parsed: JsonScanReply;
  try {
    parsed = parseJsonScanReply(reply.text);
  } catch (error) {
    return { kind: 'failed', message: `the long poll's reply is not a scan reply: ${error instanceof Error ? error.message : String(error)}` };
  }
  const offsets = parsed.records.map((record) => (record as { offset?: unknown } | null)?.offset);
  if (offsets.length === 0 && reply.answeredAtMs < appendSentAtMs) {
    return { kind: 'not-held', message: 'a scan with wait answered at once with no records, before the append was sent: the gateway does not hold scans' };
  }
  if (offsets.length === 0) return { kind: 'failed', message: `the long poll at offset ${offset} answered no records although ${records} were appended there` };
  if (reply.answeredAtMs < appendSentAtMs) return { kind: 'failed', message: `the long poll at offset ${offset} answered records before the append was sent` };
  if (offsets[0] !== offset || offsets.length !== records) {
    return { kind: 'failed', message: `the long poll at offset ${offset} answered ${offsets.length} records from offset ${String(offsets[0])} instead of ${records} from ${offset}` };
  }
  return { kind: 'delivered' };
}
