/**
 * What the console derives from the gateway's answers, as pure functions of them (no DOM, no clock, no
 * fetch) so that they are tested on their own: per-table figures and rates from two polls of
 * `GET /v1/cluster` taken at known times, the buckets whose leader changed between two polls, and the
 * text forms of counts, rates and sizes.
 */

/** A node as `GET /v1/cluster` reports it. */
export interface NodeStatus {
  id: string;
  epoch: number;
  live: boolean;
  address: string;
  kafka: string;
  http: string;
  /** Buckets this node leads. */
  buckets: number;
}

/** A bucket as `GET /v1/cluster` reports it. */
export interface BucketStatus {
  table: string;
  partition?: string;
  bucket: number;
  leader: string | null;
  leaderEpoch: number;
  streamEpoch: number;
  state: string;
  startOffset: number;
  endOffset: number;
  bytes: number;
  /** Only for a table with a lake. */
  lakeOffset?: number;
}

/** A table's figures summed over its buckets, as `GET /v1/cluster` reports them (`tables`). */
export interface TableTotals {
  table: string;
  buckets: number;
  /** Sum of the buckets' end offsets: every record the table ever committed. */
  endOffset: number;
  bytes: number;
  /** Only for a table with a lake: the sum of its buckets' lake offsets. */
  lakeOffset?: number;
  /** Only for a table with a lake: when its last tiering round committed (ISO time), null before the first. */
  tieredAt?: string | null;
}

/**
 * The body of `GET /v1/cluster?buckets=false` (the summary the page polls) or `GET /v1/cluster?table=`
 * (the same with the buckets of one table).
 */
export interface ClusterStatus {
  coordinator: { node: string | null; epoch: number };
  nodes: NodeStatus[];
  bucketStates: { open: number; opening: number; unavailable: number };
  tables: TableTotals[];
  buckets?: BucketStatus[];
}

/** One poll of `GET /v1/cluster` and when its answer arrived (ms on any clock that does not go back). */
export interface ClusterSample {
  atMs: number;
  status: Pick<ClusterStatus, 'tables'>;
}

/** A table's figures. */
export interface TableFigures {
  table: string;
  buckets: number;
  /** Records ever committed: the sum of the buckets' end offsets. */
  records: number;
  /** Records committed per second between the two polls; null without an earlier poll that knew the table, or when the sum went down (the table was dropped and created again). */
  recordsPerSecond: number | null;
  /** Bytes the stored records take in object storage. */
  bytes: number;
  /** Sum of the buckets' lake offsets, null for a table without a lake. */
  lakeOffset: number | null;
}

/** The identity of a bucket across polls: table, partition (empty for none) and number. */
export function bucketKey(bucket: Pick<BucketStatus, 'table' | 'partition' | 'bucket'>): string {
  return `${bucket.table}/${bucket.partition ?? ''}/${bucket.bucket}`;
}

/**
 * The per-table figures of `current`, in its order, each table's rate measured from the oldest poll of
 * `earlier` (oldest first, taken before `current`) that knew it: a table created a poll ago has a rate at
 * once, one that has been there longer is measured over the whole window.
 */
export function tableFigures(earlier: readonly ClusterSample[], current: ClusterSample): TableFigures[] {
  const before = new Map<string, { atMs: number; endOffset: number }>();
  for (const sample of earlier) {
    for (const totals of sample.status.tables) if (!before.has(totals.table)) before.set(totals.table, { atMs: sample.atMs, endOffset: totals.endOffset });
  }
  return current.status.tables.map((totals) => {
    const previous = before.get(totals.table);
    const elapsedSeconds = previous === undefined ? 0 : (current.atMs - previous.atMs) / 1000;
    const grown = previous === undefined ? -1 : totals.endOffset - previous.endOffset;
    return {
      table: totals.table,
      buckets: totals.buckets,
      records: totals.endOffset,
      recordsPerSecond: elapsedSeconds > 0 && grown >= 0 ? grown / elapsedSeconds : null,
      bytes: totals.bytes,
      lakeOffset: totals.lakeOffset ?? null,
    };
  });
}

/** The keys of the buckets of `current` whose leader is not the one `earlier` reported (a bucket new in `current` has not moved). */
export function movedBuckets(earlier: readonly BucketStatus[] | null, current: readonly BucketStatus[]): Set<string> {
  const moved = new Set<string>();
  if (earlier === null) return moved;
  const leaders = new Map(earlier.map((bucket) => [bucketKey(bucket), bucket.leader]));
  for (const bucket of current) {
    const key = bucketKey(bucket);
    if (leaders.has(key) && leaders.get(key) !== bucket.leader) moved.add(key);
  }
  return moved;
}

/** A whole count in groups of three digits: 1234567 → "1 234 567" (as the `mink` command prints counts). */
export function formatCount(value: number): string {
  return Math.round(value).toLocaleString('en-US').replace(/,/g, ' ');
}

/** A rate per second, or a dash when there is none yet. */
export function formatRate(perSecond: number | null): string {
  if (perSecond === null) return '–';
  return perSecond > 0 && perSecond < 10 ? `${perSecond.toFixed(1)}/s` : `${formatCount(perSecond)}/s`;
}

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'] as const;

/** A size in binary units, three significant figures from KiB up: 0 → "0 B", 1536 → "1.50 KiB". */
export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  if (unit === 0) return `${value} B`;
  const decimals = value < 10 ? 2 : value < 100 ? 1 : 0;
  return `${value.toFixed(decimals)} ${BYTE_UNITS[unit]}`;
}

/** A record of a scan (`GET /v1/tables/{name}/scan`), as its JSON answer gives it. */
export interface ScannedRecord {
  offset: number;
  timestamp: number;
  changeType?: string;
  row: Record<string, unknown>;
}

/**
 * The scan that reads the last `count` records of a bucket whose stream stores offsets
 * [startOffset, endOffset): where it starts and how many it asks for; null when the bucket stores none.
 */
export function recentScanOf(bucket: Pick<BucketStatus, 'startOffset' | 'endOffset'>, count: number): { offset: number; limit: number } | null {
  if (bucket.endOffset <= bucket.startOffset || count <= 0) return null;
  const offset = Math.max(bucket.startOffset, bucket.endOffset - count);
  return { offset, limit: bucket.endOffset - offset };
}

/**
 * The text the page shows of a scanned row: its JSON as the scan gives it, except that a Kafka topic's
 * record (`{key, value, headers}` with key and value base64, headers a JSON string of base64 values) shows
 * key, value and header values as text when they are UTF-8, as a Kafka console does, and as `base64:…`
 * when they are not.
 */
export function rowText(row: Record<string, unknown>, kafkaFormat: boolean): string {
  if (!kafkaFormat) return JSON.stringify(row);
  let headers: unknown = row.headers;
  try {
    const parsed = typeof row.headers === 'string' ? (JSON.parse(row.headers) as unknown) : null;
    if (Array.isArray(parsed)) headers = parsed.map((header: { key?: unknown; value?: unknown }) => ({ key: header.key, value: bytesText(header.value) }));
  } catch {
    // Not the JSON a topic's headers are: shown as they came.
  }
  return JSON.stringify({ key: bytesText(row.key), value: bytesText(row.value), headers });
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** Base64 bytes as the UTF-8 text they hold, `base64:…` when they are not UTF-8, null as null. */
function bytesText(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  try {
    return UTF8.decode(Uint8Array.from(atob(value), (character) => character.charCodeAt(0)));
  } catch {
    return `base64:${value}`;
  }
}

/** One point of a table's throughput: the records/s between two consecutive polls, at the later one. */
export interface ThroughputPoint {
  atMs: number;
  recordsPerSecond: number;
}

/**
 * A table's records/s between each two consecutive polls of `history` (oldest first) taken in the
 * `windowMs` before the newest poll, at the later poll's time. A pair that does not both know the table,
 * whose sum went down (the table was dropped and created again) or that took no time gives no point.
 */
export function throughputSeries(history: readonly ClusterSample[], table: string, windowMs: number): ThroughputPoint[] {
  const newest = history.at(-1);
  if (newest === undefined) return [];
  const points: ThroughputPoint[] = [];
  for (let index = 1; index < history.length; index++) {
    const earlier = history[index - 1]!;
    const later = history[index]!;
    if (later.atMs < newest.atMs - windowMs) continue;
    const before = earlier.status.tables.find((totals) => totals.table === table);
    const after = later.status.tables.find((totals) => totals.table === table);
    const elapsedMs = later.atMs - earlier.atMs;
    if (before === undefined || after === undefined || elapsedMs <= 0 || after.endOffset < before.endOffset) continue;
    points.push({ atMs: later.atMs, recordsPerSecond: ((after.endOffset - before.endOffset) * 1000) / elapsedMs });
  }
  return points;
}

/**
 * The `points` attribute of an SVG polyline that draws `series` in a box `width` × `height`: time across,
 * the window (`windowMs` up to `endMs`) spanning the width; records/s up, the series' peak at the top and
 * zero along the bottom (a series of zeros lies on the bottom). Coordinates have one decimal.
 */
export function sparklinePoints(series: readonly ThroughputPoint[], endMs: number, windowMs: number, width: number, height: number): string {
  const peak = Math.max(0, ...series.map((point) => point.recordsPerSecond));
  const round = (value: number) => Math.round(value * 10) / 10;
  return series
    .map((point) => {
      const x = round((width * (point.atMs - (endMs - windowMs))) / windowMs);
      const y = round(peak === 0 ? height : height - (point.recordsPerSecond / peak) * height);
      return `${x},${y}`;
    })
    .join(' ');
}

/** The default of `table.datalake.freshness` (docs/lake.md): a round is due every 3 minutes. */
export const LAKE_FRESHNESS_DEFAULT_MS = 3 * 60_000;

/**
 * A duration as table properties write it (`500ms`, `1s`, `3m`, `1h`, `7d`, bare milliseconds), in ms;
 * null for text that is none of these.
 */
export function durationTextMs(text: string): number | null {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/.exec(text);
  if (match === null) return null;
  const unitMs = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[(match[2] ?? 'ms') as 'ms' | 's' | 'm' | 'h' | 'd'];
  return Number(match[1]) * unitMs;
}

/** How far a table's lake is behind its stream. */
export interface LakeFreshness {
  /** Records committed to the stream that the lake does not hold yet. */
  behind: number;
  /** Time since the last tiering round committed; null before the first. */
  ageMs: number | null;
  /** Records are waiting and the last round is older than twice the table's freshness target (or there was none). */
  stale: boolean;
}

/**
 * The freshness of a table's lake at `nowMs` (epoch ms, the clock `tieredAt` is on) against its target
 * `freshnessMs` (`table.datalake.freshness`); null for a table without a lake.
 */
export function lakeFreshness(totals: Pick<TableTotals, 'endOffset' | 'lakeOffset' | 'tieredAt'>, nowMs: number, freshnessMs: number): LakeFreshness | null {
  if (totals.lakeOffset === undefined) return null;
  const behind = totals.endOffset - totals.lakeOffset;
  const tieredAtMs = totals.tieredAt === undefined || totals.tieredAt === null ? Number.NaN : Date.parse(totals.tieredAt);
  const ageMs = Number.isNaN(tieredAtMs) ? null : Math.max(0, nowMs - tieredAtMs);
  return { behind, ageMs, stale: behind > 0 && (ageMs === null || ageMs > 2 * freshnessMs) };
}

/** A duration for people, to the second below an hour: 0 → "0 s", 65 000 → "1 min 5 s", 7 500 000 → "2 h 5 min", two days → "2 d 0 h". */
export function formatAge(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3_600) return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3_600)} h ${Math.floor((seconds % 3_600) / 60)} min`;
  return `${Math.floor(seconds / 86_400)} d ${Math.floor((seconds % 86_400) / 3_600)} h`;
}

/**
 * The tables' lake column: the records the lake holds, how many it lags, how long ago the last round
 * committed and the table's freshness target; `no lake` for a table without one.
 */
export function formatLake(lakeOffset: number | null, freshness: LakeFreshness | null, freshnessMs: number): string {
  if (lakeOffset === null || freshness === null) return 'no lake';
  const tiered = freshness.ageMs === null ? 'never tiered' : `tiered ${formatAge(freshness.ageMs)} ago`;
  return `${formatCount(lakeOffset)} (${formatCount(freshness.behind)} behind), ${tiered}, target ${formatAge(freshnessMs)}`;
}
