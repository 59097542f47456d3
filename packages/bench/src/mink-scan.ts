import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Int64, RecordBatch, Utf8, makeData, vectorFromArray } from 'apache-arrow';
import { CliError, type CliIo } from '@mink/cli';
import { MinkClient, type TableClient } from '@mink/client';
import { LIMITS } from '@mink/config';
import type { LocalCluster } from '@mink/devcluster';
import type { AppendBucketResult, ScanPage } from '@mink/protocol';
import type { ObjectStore } from '@mink/s3stream';
import { createBenchTable, readClusterStatus, waitForOpenBuckets, type ClusterStatus } from './bench-cluster';
import { BENCH_LIMITS, BENCH_PAYLOAD_CHARS, BENCH_SCAN, BENCH_SCAN_TABLE, BENCH_SCAN_WARMUP, BENCH_SCAN_WARMUP_TABLE, STREAM_KEY_PREFIX } from './bench-limits';
import { runClosedLoop, TooManyFailuresError } from './closed-loop';
import { formatCount, formatMegabytes, formatMegabytesPerSecond, formatSeconds, formatSize } from './format';
import type { CompactionWait, LongPollResult, ScanCache, ScanFormat, ScanFormatSkipped, ScanResult, ScanRestart, ScanSeriesResult } from './results';
import {
  HIGH_WATERMARK_HEADER,
  NEXT_OFFSET_HEADER,
  SCAN_FORMAT_LABELS,
  SCAN_FORMATS,
  SCAN_MEDIA_TYPES,
  checkBucketScan,
  compactedBucket,
  compactionComplete,
  countReplyRows,
  describeCompaction,
  judgeLongPoll,
  offsetHeader,
  parseJsonScanReply,
  parseStreamObjectKey,
  servesFormat,
  tileBatches,
  type AppendedBatch,
  type LongPollReply,
  type ScannedPage,
  type StreamObjectRange,
} from './scan-figures';
import { ratePerSecond, summarizeLatencies } from './stats';
import { HttpLoad } from './http-load';
import { payloadOf, runWriteScenario, type BatchWriter, type BenchRow } from './write-scenario';

/** What of the cluster the scan figures use: endpoints, the data nodes and their restarts. */
export type ScanCluster = Pick<LocalCluster, 'gatewayUrl' | 'natsUrl' | 'restart' | 'processes'>;

export interface ScanSettings {
  io: CliIo;
  cluster: ScanCluster;
  /** The run's S3 adapter: the load lists WAL objects with it, the compaction wait lists stream objects. */
  store: ObjectStore;
  /** Rows the load appends (its warm-up appends a few calls more). */
  rows: number;
  batchRows: number;
  /** Append calls of the load in flight. */
  concurrency: number;
  longPolls: number;
  /** Stops the load early; the scans then read what was loaded. */
  deadlineMs?: number;
  /** Aborting it ends the current phase; the figures so far are returned. */
  signal: AbortSignal;
  /** Pids of the cluster's mink processes, for the load's CPU figures. */
  processIds: () => number[];
  progress: (line: string) => void;
  /** Prints the "[n/count]" line of each phase (`SCAN_PHASES` of them). */
  startPhase: (text: string) => void;
  /** Measures the raw S3 GET baseline (`getBodyBytes`, `scansInFlight` in flight) the scans are compared with, and records it. */
  measureGetBaseline: () => Promise<void>;
}

/** Phases the scan figures print: the load, the compaction wait, the GET baseline, one per format, the long polls. */
export const SCAN_PHASES = 3 + SCAN_FORMATS.length + 1;

/**
 * The scan figures (issue "Read path at the speed of S3", item 5):
 * 1. the scan table is created and `rows` rows appended through the client's `appendArrow`, and the
 *    acknowledgements kept: they say which records each bucket holds, in which batches;
 * 2. background compaction is waited for until it has moved every batch it will into stream objects
 *    (listed by key), with a deadline; a table it did not compact in time is reported, and scanned anyway;
 * 3. raw S3 GETs of 1 MiB, as many in flight as scans, on the same S3 server;
 * 4. for each format, one short untimed request per bucket (so the gateway has run that format's code),
 *    then every data node is restarted (caches cold) and every bucket is scanned from 0 to its
 *    high watermark through the gateway (for `client-arrow`, through the TypeScript client's reads from the
 *    leaders), `scansInFlight` buckets at a time, then at once again (hot); the rows of every reply are
 *    counted after the series and must be the rows appended;
 * 5. long polls: a scan waiting at the high watermark of one bucket, woken by an append through the client.
 * Returns null when the signal aborted the scenario before the table was loaded.
 */
export async function runScan(settings: ScanSettings): Promise<ScanResult | null> {
  const { io, cluster, signal, progress, startPhase } = settings;
  startPhase(
    `scan table: create ${BENCH_SCAN_TABLE.name} ({id int64, payload string(${BENCH_PAYLOAD_CHARS})}, ${BENCH_SCAN_TABLE.buckets} buckets) and append ` +
      `${formatCount(settings.rows)} rows through the TypeScript client (appendArrow)`,
  );
  await createBenchTable(io, cluster.gatewayUrl, BENCH_SCAN_TABLE);
  if ((await waitForOpenBuckets(io, cluster.gatewayUrl, signal, undefined, BENCH_SCAN_TABLE)) === null) return null;
  await createBenchTable(io, cluster.gatewayUrl, BENCH_SCAN_WARMUP_TABLE);
  if ((await waitForOpenBuckets(io, cluster.gatewayUrl, signal, undefined, BENCH_SCAN_WARMUP_TABLE)) === null) return null;
  await loadWarmupTable(settings);
  const loaded = await loadTable(settings);
  if (loaded === null) return null;
  const recordsByBucket = new Map([...loaded.batchesByBucket].map(([bucket, batches]) => [bucket, batches.reduce((sum, batch) => sum + batch.count, 0)]));
  const rows = [...recordsByBucket.values()].reduce((sum, records) => sum + records, 0);
  progress(`  ${formatCount(rows)} rows in ${BENCH_SCAN_TABLE.name} (the load and its warm-up), ${formatCount(loaded.load.rowsPerSecond)} rows/s`);
  const result: ScanResult = {
    table: BENCH_SCAN_TABLE.name,
    buckets: BENCH_SCAN_TABLE.buckets,
    load: loaded.load,
    rows,
    compaction: { complete: false, waitedMs: 0, timeoutMs: BENCH_SCAN.compactionTimeoutMs, buckets: [] },
    restarts: [],
    series: [],
    skipped: [],
    longPoll: null,
  };
  if (signal.aborted) return result;

  startPhase(
    `wait until background compaction (a round every ${formatSeconds(LIMITS.compactionIntervalMs)} s) has moved the rows of ${BENCH_SCAN_TABLE.name} ` +
      `into stream objects, at most ${formatSeconds(BENCH_SCAN.compactionTimeoutMs)} s`,
  );
  const compaction = await waitForCompaction(settings, loaded.tableId, loaded.batchesByBucket);
  if (compaction === null) return result;
  result.compaction = compaction;
  if (compaction.complete) progress(`  compaction done after ${formatSeconds(compaction.waitedMs)} s: ${describeCompaction(compaction.buckets)}`);
  else progress(`  COMPACTION DID NOT FINISH within ${formatSeconds(compaction.timeoutMs)} s: ${describeCompaction(compaction.buckets)}; the scans read the rest from WAL objects`);

  startPhase(`baseline: raw S3 GET of ${formatSize(BENCH_SCAN.getBodyBytes)}, ${BENCH_SCAN.scansInFlight} in flight, ${BENCH_SCAN.getOperations} GETs, on the cluster's S3 server`);
  await settings.measureGetBaseline();

  for (const format of SCAN_FORMATS) {
    if (signal.aborted) return result;
    const accept = SCAN_MEDIA_TYPES[format];
    const how =
      format === 'client-arrow'
        ? `with the TypeScript client's scanPages (Arrow pages from each bucket leader's HTTP route, no gateway)`
        : `as ${SCAN_FORMAT_LABELS[format]} (Accept: ${accept}) through the gateway`;
    startPhase(
      `scan ${how}: one untimed request of ${formatCount(BENCH_SCAN.warmupPageRecords)} records per bucket, restart every data node, ` +
        `then scan the ${BENCH_SCAN_TABLE.buckets} buckets ` +
        `(${BENCH_SCAN.scansInFlight} in flight, requests of ${formatCount(BENCH_SCAN.pageRecords)} records) cold, then at once again hot`,
    );
    const refused = await warmUpFormat(settings, format, [...recordsByBucket.keys()]);
    if (refused !== null) {
      result.skipped.push(refused);
      progress(`  ${SCAN_FORMAT_LABELS[format]} NOT MEASURED: ${refused.reason}`);
      continue;
    }
    const restart = await restartDataNodes(settings, format);
    if (restart === null) return result;
    result.restarts.push(restart);
    progress(`  data nodes restarted and buckets rebalanced in ${formatSeconds(restart.restartMs)} s; buckets led: ${describeLeaders(restart.bucketsByLeader)}`);
    if ((await waitForOpenBuckets(io, cluster.gatewayUrl, signal, undefined, BENCH_SCAN_WARMUP_TABLE)) === null) return result;
    for (let round = 0; round < BENCH_SCAN_WARMUP.rounds; round++) {
      const warmupRefused = await warmUpFormat(settings, format, BUCKET_NUMBERS, BENCH_SCAN_WARMUP_TABLE.name, Math.min(BENCH_SCAN_WARMUP.rows, LIMITS.scanRecordsMax));
      if (warmupRefused !== null) throw new CliError(`scanning ${BENCH_SCAN_WARMUP_TABLE.name} after the restart failed: ${warmupRefused.reason}`);
    }
    progress(`  scanned ${BENCH_SCAN_WARMUP_TABLE.name} ${BENCH_SCAN_WARMUP.rounds} times (code warm, ${BENCH_SCAN_TABLE.name} still uncached)`);
    for (const cache of ['cold', 'hot'] as const) {
      const outcome = await scanSeries(settings, format, cache, recordsByBucket);
      if (outcome === null) return result;
      if ('reason' in outcome) {
        result.skipped.push(outcome);
        progress(`  ${SCAN_FORMAT_LABELS[format]} NOT MEASURED: ${outcome.reason}`);
        break;
      }
      result.series.push(outcome);
      progress(`  ${describeSeries(outcome)}`);
    }
  }

  if (signal.aborted) return result;
  startPhase(
    `long polls: ${formatCount(settings.longPolls)} scans waiting (wait=${BENCH_SCAN.longPollWaitMs / 1_000}s) at the high watermark of one bucket, ` +
      `each woken by an append of ${BENCH_SCAN.longPollBatchRows} rows through the TypeScript client ${BENCH_SCAN.longPollParkMs} ms after it was sent`,
  );
  result.longPoll = await runLongPolls(settings);
  return result;
}

/** The loaded table: its id (for stream object keys), the load's figures and each bucket's batches in offset order. */
interface LoadedTable {
  tableId: number;
  load: ScanResult['load'];
  batchesByBucket: Map<number, AppendedBatch[]>;
}

/**
 * Appends `rows` rows (ids from 0, a 200-character payload each) through `appendArrow` with the write
 * scenario of the append figures, keeping every bucket's acknowledged batches. Null when the signal stopped
 * the load before any call was acknowledged.
 */
async function loadTable(settings: ScanSettings): Promise<LoadedTable | null> {
  const client = await MinkClient.connect({ servers: settings.cluster.natsUrl, name: 'mink-bench scan load' });
  try {
    const table = client.table(BENCH_SCAN_TABLE.name);
    const acknowledged: AppendBucketResult[] = [];
    const writer = arrowAppendWriter(table, acknowledged);
    const outcome = await runWriteScenario('scan table load', writer, {
      rows: settings.rows,
      batchRows: settings.batchRows,
      concurrency: settings.concurrency,
      firstId: 0,
      payloadChars: BENCH_PAYLOAD_CHARS,
      deadlineMs: settings.deadlineMs,
      signal: settings.signal,
      store: settings.store,
      processIds: settings.processIds,
      progress: settings.progress,
    });
    if (outcome === null) return null;
    const { tableId } = await table.describe();
    const batchesByBucket = new Map<number, AppendedBatch[]>();
    for (let bucket = 0; bucket < BENCH_SCAN_TABLE.buckets; bucket++) {
      const batches = acknowledged.filter((entry) => entry.bucket === bucket);
      try {
        batchesByBucket.set(bucket, tileBatches(bucket, batches));
      } catch (error) {
        throw new CliError(
          `the rows of ${BENCH_SCAN_TABLE.name} are not known exactly (${outcome.result.failedCalls} load calls failed): ${error instanceof Error ? error.message : String(error)}`,
        );
      }
    }
    return { tableId, load: outcome.result, batchesByBucket };
  } finally {
    await client.close();
  }
}

/**
 * The write scenario's writer of a `{id, payload}` table loaded through the client's `appendArrow`: each call
 * one Arrow record batch, its JSON size counted as the append figures count it, every acknowledged bucket
 * part pushed to `acknowledged`.
 */
export function arrowAppendWriter(table: Pick<TableClient, 'appendArrow'>, acknowledged: AppendBucketResult[]): BatchWriter<RecordBatch> {
  return {
    encode: (rows) => ({ payload: scanRecordBatchOf(rows), rowCount: rows.length, jsonBytes: Buffer.byteLength(JSON.stringify({ rows: rows.map(scanRowOf) })) }),
    send: async (batch) => {
      const result = await table.appendArrow(batch.payload);
      if (result.appended !== batch.rowCount) throw new Error(`the client acknowledged ${result.appended} rows of ${batch.rowCount}`);
      acknowledged.push(...result.buckets);
    },
  };
}

/** A row of the scan table as JSON sends it: the bench row's id and payload. */
export function scanRowOf(row: BenchRow): { id: number; payload: string } {
  return { id: row.id, payload: row.payload ?? '' };
}

/** The rows as one Arrow record batch of the scan table's columns (id int64, payload utf8), in table order; the tiering table has the same columns. */
export function scanRecordBatchOf(rows: BenchRow[]): RecordBatch {
  return new RecordBatch({
    id: makeData({ type: new Int64(), length: rows.length, data: BigInt64Array.from(rows, (row) => BigInt(row.id)) }),
    payload: vectorFromArray(rows.map((row) => row.payload ?? ''), new Utf8()).data[0]!,
  });
}

/**
 * Lists the table's stream objects every `compactionPollIntervalMs` until compaction has moved all the
 * batches it will (`compactionComplete`) or `compactionTimeoutMs` has passed; a progress line whenever the
 * count of moved records changes. Null when the signal aborted the wait.
 */
async function waitForCompaction(settings: ScanSettings, tableId: number, batchesByBucket: ReadonlyMap<number, AppendedBatch[]>): Promise<CompactionWait | null> {
  const startedMs = performance.now();
  const deadlineMs = startedMs + BENCH_SCAN.compactionTimeoutMs;
  let lastMoved = -1;
  for (;;) {
    const listed = await settings.store.list(`${STREAM_KEY_PREFIX}${tableId}-`);
    const objects = listed.map((entry) => parseStreamObjectKey(entry.key)).filter((range): range is StreamObjectRange => range !== null && range.tableId === tableId);
    const status = await readClusterStatus(settings.io, settings.cluster.gatewayUrl);
    // A bucket the status does not name counts as not compacted yet.
    const walSlicesOf = (bucket: number): number =>
      status.buckets?.find((entry) => entry.table === BENCH_SCAN_TABLE.name && entry.bucket === bucket)?.walSlices ?? Number.POSITIVE_INFINITY;
    const buckets = [...batchesByBucket].map(([bucket, batches]) => compactedBucket(bucket, batches, objects, walSlicesOf(bucket)));
    const waitedMs = performance.now() - startedMs;
    const complete = compactionComplete(buckets);
    if (complete || waitedMs >= BENCH_SCAN.compactionTimeoutMs) return { complete, waitedMs, timeoutMs: BENCH_SCAN.compactionTimeoutMs, buckets };
    const moved = buckets.reduce((sum, bucket) => sum + bucket.recordsInStreamObjects, 0);
    if (moved !== lastMoved) settings.progress(`  compaction after ${formatSeconds(waitedMs)} s: ${describeCompaction(buckets)}`);
    lastMoved = moved;
    if (settings.signal.aborted) return null;
    await sleep(Math.min(BENCH_SCAN.compactionPollIntervalMs, Math.max(0, deadlineMs - performance.now())));
  }
}

/**
 * Restarts every data node one at a time (SIGTERM, then the same process again), waiting after each until
 * it is live at a new epoch and every bucket of the scan table is open; then rebalances, since each restart
 * handed its buckets to the others, and waits until every bucket is open where the rebalance put it. Every
 * process is then new, so no cache holds the scan table's data. Null when the signal aborted a wait.
 */
async function restartDataNodes(settings: ScanSettings, format: ScanFormat): Promise<ScanRestart | null> {
  const { io, cluster, signal } = settings;
  const startedMs = performance.now();
  const nodeIds = cluster
    .processes()
    .filter((entry) => entry.role === 'data-node' && entry.nodeId !== null)
    .map((entry) => entry.nodeId!);
  for (const nodeId of nodeIds) {
    const epochBefore = (await readClusterStatus(io, cluster.gatewayUrl)).nodes?.find((node) => node.id === nodeId)?.epoch ?? 0;
    await cluster.restart('data-node', nodeId);
    const open = await waitForOpenBuckets(
      io,
      cluster.gatewayUrl,
      signal,
      (status) => {
        const node = status.nodes?.find((candidate) => candidate.id === nodeId);
        return node?.live === true && (node.epoch ?? 0) > epochBefore;
      },
      BENCH_SCAN_TABLE,
    );
    if (open === null) return null;
  }
  const response = await io.fetch(`${cluster.gatewayUrl}/v1/cluster/rebalance`, { method: 'POST' });
  const text = await response.text();
  if (!response.ok) throw new CliError(`POST /v1/cluster/rebalance answered HTTP ${response.status}: ${text.slice(0, 300)}`);
  if ((await waitForOpenBuckets(io, cluster.gatewayUrl, signal, undefined, BENCH_SCAN_TABLE)) === null) return null;
  const status = await readClusterStatus(io, cluster.gatewayUrl);
  return { format, restartMs: performance.now() - startedMs, bucketsByLeader: bucketsByLeader(status) };
}

/** How many buckets of the scan table each data node leads. */
function bucketsByLeader(status: ClusterStatus): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const bucket of status.buckets ?? []) {
    if (bucket.table !== BENCH_SCAN_TABLE.name || !bucket.leader) continue;
    counts[bucket.leader] = (counts[bucket.leader] ?? 0) + 1;
  }
  return counts;
}

/**
 * One untimed request of `warmupPageRecords` records per bucket in `format`, read to its end. Returns why
 * the format is not served (another Content-Type, an error status), so no restart is spent on it, or null.
 */
async function warmUpFormat(
  settings: ScanSettings,
  format: ScanFormat,
  buckets: readonly number[],
  table: string = BENCH_SCAN_TABLE.name,
  records: number = BENCH_SCAN.warmupPageRecords,
): Promise<ScanFormatSkipped | null> {
  const accept = SCAN_MEDIA_TYPES[format];
  if (format === 'client-arrow') return warmUpClient(settings, buckets, table, records);
  for (const bucket of buckets) {
    const url = `${settings.cluster.gatewayUrl}/v1/tables/${encodeURIComponent(table)}/scan?bucket=${bucket}&offset=0&limit=${records}`;
    const response = await settings.io.fetch(url, { headers: { accept, 'accept-encoding': 'identity' } });
    const text = await response.text();
    if (!response.ok) return { format, accept, reason: `GET …/scan?bucket=${bucket}&offset=0 answered HTTP ${response.status}: ${text.slice(0, 300)}` };
    const answeredType = response.headers.get('content-type');
    if (!servesFormat(format, answeredType)) return { format, accept, reason: `the gateway answered Content-Type ${answeredType ?? '(none)'} to Accept: ${accept}` };
  }
  return null;
}

/** `warmUpFormat` of the client's reads: `records` records of each bucket through `scanArrow`; why it failed, or null. */
async function warmUpClient(settings: ScanSettings, buckets: readonly number[], table: string, records: number): Promise<ScanFormatSkipped | null> {
  const client = await MinkClient.connect({ servers: settings.cluster.natsUrl, name: 'mink-bench scan warm-up' });
  let bucket: number | undefined;
  try {
    for (bucket of buckets) await client.table(table).scanArrow({ bucket, offset: 0, limit: records });
    return null;
  } catch (error) {
    return { format: 'client-arrow', accept: SCAN_MEDIA_TYPES['client-arrow'], reason: `scanArrow of bucket ${String(bucket)} failed: ${error instanceof Error ? error.message : String(error)}` };
  } finally {
    await client.close();
  }
}

const BUCKET_NUMBERS = Array.from({ length: BENCH_SCAN_WARMUP_TABLE.buckets }, (_, bucket) => bucket);

/** Appends the warm-up table's rows through the gateway (their payloads as long as the scan table's). */
async function loadWarmupTable(settings: ScanSettings): Promise<void> {
  const payload = 'w'.repeat(BENCH_PAYLOAD_CHARS);
  for (let start = 0; start < BENCH_SCAN_WARMUP.rows; start += BENCH_SCAN_WARMUP.callRows) {
    const rows = Array.from({ length: BENCH_SCAN_WARMUP.callRows }, (_, index) => ({ id: String(start + index), payload }));
    const response = await settings.io.fetch(`${settings.cluster.gatewayUrl}/v1/tables/${BENCH_SCAN_WARMUP_TABLE.name}/append`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ rows }),
    });
    const text = await response.text();
    if (!response.ok) throw new CliError(`appending to ${BENCH_SCAN_WARMUP_TABLE.name} answered HTTP ${response.status}: ${text.slice(0, 300)}`);
  }
}

/** A reply body as received, and what its headers (or, failing them, its JSON body) said. */
interface ReceivedPage {
  offset: number;
  nextOffset: number;
  body: Uint8Array;
}

/** A format the gateway does not serve as asked: the series stops, and the format is reported as not measured. */
class FormatNotServed extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FormatNotServed';
  }
}

/**
 * One series: every bucket scanned from offset 0 to its high watermark, one request of `pageRecords` at a
 * time per bucket and `scansInFlight` buckets at a time, timed from the first request to the last byte of
 * the last reply. Each next request asks for the `Mink-Next-Offset` of the reply before (without the header,
 * a JSON body is parsed for `nextOffset` while timed, and the series says so). The bodies are kept whole and
 * their rows counted after the series, so counting does not slow it down. `client-arrow` reads the same
 * through the TypeScript client's `scanPages` (each page one IPC stream, counted the same way). Returns the
 * series, the reason the format was not measured, or null when the signal stopped the series.
 */
async function scanSeries(
  settings: ScanSettings,
  format: ScanFormat,
  cache: ScanCache,
  recordsByBucket: ReadonlyMap<number, number>,
): Promise<ScanSeriesResult | ScanFormatSkipped | null> {
  const { cluster, signal } = settings;
  const accept = SCAN_MEDIA_TYPES[format];
  const http = new HttpLoad(BENCH_SCAN.scansInFlight);
  const buckets = [...recordsByBucket.keys()];
  const pagesByBucket = new Map<number, ReceivedPage[]>(buckets.map((bucket) => [bucket, []]));
  let contentType = '';
  let parsedWhileTimed = false;
  const scanBucket = async (bucket: number): Promise<void> => {
    const pages = pagesByBucket.get(bucket)!;
    let offset = 0;
    // An interrupted series is dropped whole, so a bucket may stop between two pages.
    while (!signal.aborted) {
      const url = `${cluster.gatewayUrl}/v1/tables/${encodeURIComponent(BENCH_SCAN_TABLE.name)}/scan?bucket=${bucket}&offset=${offset}&limit=${BENCH_SCAN.pageRecords}`;
      const response = await http.send(url, { headers: { accept, 'accept-encoding': 'identity' } });
      const body = response.body;
      if (response.status < 200 || response.status > 299) throw new FormatNotServed(`GET …/scan?bucket=${bucket}&offset=${offset} answered HTTP ${response.status}: ${Buffer.from(body).toString('utf8').slice(0, 300)}`);
      const answeredType = response.headers.get('content-type');
      if (!servesFormat(format, answeredType)) throw new FormatNotServed(`the gateway answered Content-Type ${answeredType ?? '(none)'} to Accept: ${accept}`);
      contentType = answeredType ?? '';
      let nextOffset = offsetHeader(response.headers, NEXT_OFFSET_HEADER);
      let highWatermark = offsetHeader(response.headers, HIGH_WATERMARK_HEADER);
      if (nextOffset === null || highWatermark === null) {
        if (format !== 'json') throw new FormatNotServed(`the ${SCAN_FORMAT_LABELS[format]} reply has no ${NEXT_OFFSET_HEADER} and ${HIGH_WATERMARK_HEADER} headers to page with`);
        const reply = parseJsonScanReply(body);
        parsedWhileTimed = true;
        nextOffset = reply.nextOffset;
        highWatermark = reply.highWatermark;
      }
      pages.push({ offset, nextOffset, body });
      if (nextOffset >= highWatermark) return;
      if (nextOffset <= offset) throw new Error(`bucket ${bucket}: the reply at offset ${offset} advanced to ${nextOffset}, below the high watermark ${highWatermark}`);
      offset = nextOffset;
    }
  };
  // The client's reads: connected, and its route to the table known, before the series is timed.
  const client = format === 'client-arrow' ? await MinkClient.connect({ servers: cluster.natsUrl, name: 'mink-bench scan' }) : null;
  const table = client?.table(BENCH_SCAN_TABLE.name);
  await table?.describe();
  const scanBucketThroughClient = async (bucket: number): Promise<void> => {
    const pages = pagesByBucket.get(bucket)!;
    let offset = 0;
    while (!signal.aborted) {
      let last: ScanPage | undefined;
      // One request of `pageRecords` records: the client reads it as pages of the leader's, each one IPC stream.
      for await (const page of table!.scanPages({ bucket, offset, limit: BENCH_SCAN.pageRecords })) {
        pages.push({ offset: last?.nextOffset ?? offset, nextOffset: page.nextOffset, body: page.batch });
        last = page;
      }
      if (last === undefined || last.nextOffset >= last.highWatermark) return;
      if (last.nextOffset <= offset) throw new Error(`bucket ${bucket}: the scan from offset ${offset} advanced to ${last.nextOffset}, below the high watermark ${last.highWatermark}`);
      offset = last.nextOffset;
    }
  };
  if (client !== null) contentType = SCAN_MEDIA_TYPES['client-arrow'];
  let elapsedMs: number;
  try {
    const run = await runClosedLoop(
      { prepare: (index) => buckets[index]!, send: client === null ? scanBucket : scanBucketThroughClient },
      { operations: buckets.length, concurrency: BENCH_SCAN.scansInFlight, signal, failuresMax: 0 },
    );
    if (run.stoppedEarly || signal.aborted) return null;
    elapsedMs = run.elapsedMs;
  } catch (error) {
    if (!(error instanceof TooManyFailuresError)) throw error;
    if (signal.aborted) return null;
    return { format, accept, reason: error.firstFailureMessage };
  } finally {
    http.close();
    await client?.close();
  }

  const countingMs = performance.now();
  let rows = 0;
  let bodyBytes = 0;
  let requests = 0;
  let rowCheckFailure: string | null = null;
  for (const [bucket, received] of pagesByBucket) {
    const pages: ScannedPage[] = [];
    for (const page of received) {
      let pageRows: number;
      try {
        pageRows = countReplyRows(format, page.body, page.nextOffset);
      } catch (error) {
        rowCheckFailure ??= `bucket ${bucket}: the reply at offset ${page.offset} could not be read: ${error instanceof Error ? error.message : String(error)}`;
        pageRows = 0;
      }
      pages.push({ offset: page.offset, nextOffset: page.nextOffset, rows: pageRows });
      rows += pageRows;
      bodyBytes += page.body.byteLength;
      requests += 1;
    }
    rowCheckFailure ??= checkBucketScan(bucket, pages, recordsByBucket.get(bucket)!);
  }
  const countMs = performance.now() - countingMs;
  const rowsExpected = [...recordsByBucket.values()].reduce((sum, records) => sum + records, 0);
  return {
    format,
    cache,
    accept,
    contentType,
    scansInFlight: BENCH_SCAN.scansInFlight,
    pageRecords: BENCH_SCAN.pageRecords,
    buckets: buckets.length,
    requests,
    bodyBytes,
    rows,
    rowsExpected,
    elapsedMs,
    bytesPerSecond: ratePerSecond(bodyBytes, elapsedMs),
    rowsPerSecond: ratePerSecond(rows, elapsedMs),
    countMs,
    rowCheckFailure,
    parsedWhileTimed,
  };
}

/**
 * The long polls, on the bucket the row id `longPollRowId` hashes to (every row of a poll's append has that
 * id, so the client sends the whole batch to that bucket). Each poll: a JSON scan at the bucket's high
 * watermark with `wait`, a pause so it is parked, an append of `longPollBatchRows` rows timed until its
 * ack, then the time from that ack until the scan's reply had arrived whole. A poll that the gateway did
 * not hold stops the series (it cannot measure anything); other failures are counted, and more than
 * `BENCH_LIMITS.failedCallsMax` stop it.
 */
async function runLongPolls(settings: ScanSettings): Promise<LongPollResult> {
  const { io, cluster, signal } = settings;
  const client = await MinkClient.connect({ servers: cluster.natsUrl, name: 'mink-bench long poll' });
  try {
    const table = client.table(BENCH_SCAN_TABLE.name);
    const rowsOf = (poll: number): { id: number; payload: string }[] =>
      Array.from({ length: BENCH_SCAN.longPollBatchRows }, (_, index) => ({ id: BENCH_SCAN.longPollRowId, payload: payloadOf(poll * BENCH_SCAN.longPollBatchRows + index, BENCH_PAYLOAD_CHARS) }));
    // An untimed first append finds the bucket and its high watermark, and opens the client's route and connection.
    const first = (await table.append(rowsOf(settings.longPolls))).buckets;
    if (first.length !== 1) throw new CliError(`the long polls' rows went to ${first.length} buckets instead of one`);
    const bucket = first[0]!.bucket;
    let highWatermark = first[0]!.baseOffset + first[0]!.count;
    settings.progress(`  polling bucket ${bucket} (the bucket of id ${BENCH_SCAN.longPollRowId}) from offset ${formatCount(highWatermark)}`);
    const deliveryMs: number[] = [];
    const ackMs: number[] = [];
    let failures = 0;
    let firstFailureMessage: string | null = null;
    let stoppedBecause: string | null = null;
    let iterations = 0;
    for (let poll = 0; poll < settings.longPolls; poll++) {
      if (signal.aborted) {
        stoppedBecause = 'interrupted';
        break;
      }
      iterations += 1;
      const url =
        `${cluster.gatewayUrl}/v1/tables/${encodeURIComponent(BENCH_SCAN_TABLE.name)}/scan?bucket=${bucket}&offset=${highWatermark}` +
        `&limit=${BENCH_SCAN.longPollBatchRows}&wait=${BENCH_SCAN.longPollWaitMs / 1_000}s`;
      const reply = longPoll(io, url);
      await sleep(BENCH_SCAN.longPollParkMs);
      const sentMs = performance.now();
      let appended: AppendBucketResult | undefined;
      let appendFailure: string | null = null;
      try {
        const buckets = (await table.append(rowsOf(poll))).buckets;
        appended = buckets.length === 1 ? buckets[0] : undefined;
        if (appended === undefined) appendFailure = `a long poll's append went to ${buckets.length} buckets`;
      } catch (error) {
        appendFailure = `a long poll's append failed: ${error instanceof Error ? error.message : String(error)}`;
      }
      const acknowledgedMs = performance.now();
      const answered = await reply;
      if (appended !== undefined && (appended.bucket !== bucket || appended.baseOffset !== highWatermark)) {
        throw new CliError(`a long poll's append went to bucket ${appended.bucket} at offset ${appended.baseOffset} instead of bucket ${bucket} at ${highWatermark}: something else writes to it`);
      }
      const verdict =
        appendFailure !== null
          ? { kind: 'failed' as const, message: appendFailure }
          : judgeLongPoll(answered, sentMs, highWatermark, BENCH_SCAN.longPollBatchRows);
      if (appended !== undefined) highWatermark = appended.baseOffset + appended.count;
      if (verdict.kind === 'delivered') {
        ackMs.push(acknowledgedMs - sentMs);
        deliveryMs.push(answered.answeredAtMs - acknowledgedMs);
        continue;
      }
      if (verdict.kind === 'not-held') {
        stoppedBecause = verdict.message;
        break;
      }
      failures += 1;
      firstFailureMessage ??= verdict.message;
      // The append may have failed after writing: the next poll asks at the offset the bucket reports now.
      if (appended === undefined) highWatermark = await currentHighWatermark(io, cluster.gatewayUrl, bucket);
      if (failures > BENCH_LIMITS.failedCallsMax) {
        stoppedBecause = `${failures} long polls failed`;
        break;
      }
    }
    const result: LongPollResult = {
      bucket,
      iterations,
      delivered: deliveryMs.length,
      failures,
      firstFailureMessage,
      delivery: deliveryMs.length === 0 ? null : summarizeLatencies(deliveryMs),
      appendAck: ackMs.length === 0 ? null : summarizeLatencies(ackMs),
      deliveryP99GoalMs: BENCH_SCAN.longPollDeliveryP99GoalMs,
      stoppedBecause,
    };
    settings.progress(`  ${formatCount(result.delivered)} of ${formatCount(iterations)} long polls delivered${stoppedBecause === null ? '' : `; stopped: ${stoppedBecause}`}`);
    return result;
  } finally {
    await client.close();
  }
}

/** Sends one long poll; resolves (never rejects) once its reply has arrived whole, or the request failed. */
async function longPoll(io: CliIo, url: string): Promise<LongPollReply> {
  try {
    const response = await io.fetch(url, { headers: { accept: SCAN_MEDIA_TYPES.json }, signal: AbortSignal.timeout(BENCH_SCAN.longPollTimeoutMs) });
    const text = await response.text();
    return { answeredAtMs: performance.now(), status: response.status, text };
  } catch (error) {
    return { answeredAtMs: performance.now(), status: 0, text: error instanceof Error ? error.message : String(error) };
  }
}

/** The high watermark of a bucket, from a scan of no wait at offset 0 of one record. */
async function currentHighWatermark(io: CliIo, gatewayUrl: string, bucket: number): Promise<number> {
  const response = await io.fetch(`${gatewayUrl}/v1/tables/${encodeURIComponent(BENCH_SCAN_TABLE.name)}/scan?bucket=${bucket}&offset=0&limit=1`, {
    headers: { accept: SCAN_MEDIA_TYPES.json },
  });
  const text = await response.text();
  if (!response.ok) throw new CliError(`the high watermark of bucket ${bucket} could not be read: HTTP ${response.status}: ${text.slice(0, 300)}`);
  return parseJsonScanReply(text).highWatermark;
}

function describeLeaders(bucketsByLeaderId: Record<string, number>): string {
  return Object.entries(bucketsByLeaderId)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([node, buckets]) => `${node}:${buckets}`)
    .join(' ');
}

function describeSeries(series: ScanSeriesResult): string {
  return (
    `${SCAN_FORMAT_LABELS[series.format]} ${series.cache}: ${formatCount(series.rows)} rows, ${formatMegabytes(series.bodyBytes)} MB in ${formatCount(series.requests)} replies ` +
    `in ${formatSeconds(series.elapsedMs)} s: ${formatMegabytesPerSecond(series.bytesPerSecond)} MB/s, ${formatCount(series.rowsPerSecond)} rows/s` +
    (series.rowCheckFailure === null ? '' : `; ROW CHECK FAILED: ${series.rowCheckFailure}`)
  );
}
