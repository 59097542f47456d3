import { KafkaError, type JoinRefusals } from '@mink/kafka';
import type { View } from '@mink/meta';
import { MinkError } from '@mink/protocol';
import type { WalObserver } from '@mink/s3stream';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { PkBucketObserver } from './pk-bucket';
import { metricLabelsOf, requestFigures, type RequestFigures } from './request-figures';

const LATENCY_SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const OBJECT_BYTES = [16 * 1024, 64 * 1024, 256 * 1024, 1024 * 1024, 4 * 1024 * 1024, 16 * 1024 * 1024, 64 * 1024 * 1024];

/**
 * The data node's metrics of its data path, created once per process and shared by its incarnations:
 * requests per table and bucket (count by outcome, rows, bytes, latency), WAL uploads and commits
 * (latency, object size, commits refused by code, bytes queued), compaction, and PK bucket restores,
 * snapshots and group commits. Prometheus naming: `_total` counters, `_seconds` and `_bytes` histograms.
 * Tables and buckets become labels only when the view holds them (`metricLabelsOf`), and no label takes a
 * Kafka client's topic, client id or group id as sent, so callers cannot add series.
 */
/** What one in-memory cache holds and may hold, in bytes, as the `mink_cache_bytes` gauges show it. */
export interface CacheSize {
  cache: string;
  bytes: number;
  bytesMax: number;
}

export class DataNodeMetrics {
  private readonly requests: Counter<'table' | 'bucket' | 'op' | 'outcome'>;
  private readonly rows: Counter<'table' | 'bucket' | 'op'>;
  private readonly bytes: Counter<'table' | 'bucket' | 'op'>;
  private readonly latency: Histogram<'table' | 'bucket' | 'op'>;
  private readonly walUpload: Histogram<'outcome'>;
  private readonly walObjectBytes: Histogram;
  private readonly walCommit: Histogram<'outcome'>;
  private readonly compactedBytes: Counter;
  private readonly restoreSeconds: Histogram;
  private readonly snapshotBytes: Histogram;
  private readonly groupRequests: Histogram;
  private readonly groupOperations: Histogram;
  private queuedBytes: () => number = () => 0;
  private cacheSizes: () => CacheSize[] = () => [];
  private groupJoinRefusals: () => JoinRefusals = () => ({ groupFull: 0, coordinatorFull: 0, lastGroupId: null });

  constructor(
    registry: Registry,
    /** The node's current view, whose tables are the only table and bucket labels. */
    private readonly view: () => Pick<View, 'tables'>,
  ) {
    const registers = [registry];
    this.requests = new Counter({
      name: 'mink_bucket_requests_total',
      help: 'Requests for table data this node answered, by table, bucket, operation and outcome (ok or the error code)',
      labelNames: ['table', 'bucket', 'op', 'outcome'],
      registers,
    });
    this.rows = new Counter({
      name: 'mink_bucket_rows_total',
      help: 'Rows appended, put, deleted or scanned and keys looked up by the requests this node answered without error',
      labelNames: ['table', 'bucket', 'op'],
      registers,
    });
    this.bytes = new Counter({
      name: 'mink_bucket_bytes_total',
      help: 'Bytes of the Arrow batches appended and the scan pages answered, by requests answered without error',
      labelNames: ['table', 'bucket', 'op'],
      registers,
    });
    this.latency = new Histogram({
      name: 'mink_bucket_request_seconds',
      help: 'Time from a request reaching this node to its answer (an append: until durable), by table, bucket and operation',
      labelNames: ['table', 'bucket', 'op'],
      buckets: LATENCY_SECONDS,
      registers,
    });
    this.walUpload = new Histogram({
      name: 'mink_wal_upload_seconds',
      help: 'Time to upload one WAL object, by outcome',
      labelNames: ['outcome'],
      buckets: LATENCY_SECONDS,
      registers,
    });
    this.walObjectBytes = new Histogram({ name: 'mink_wal_object_bytes', help: 'Size of the WAL objects uploaded', buckets: OBJECT_BYTES, registers });
    this.walCommit = new Histogram({
      name: 'mink_wal_commit_seconds',
      help: 'Time to commit one WAL object to the metadata log, by outcome (ok, or the code it was refused with, e.g. Fenced)',
      labelNames: ['outcome'],
      buckets: LATENCY_SECONDS,
      registers,
    });
    const metrics = this;
    new Gauge({
      name: 'mink_wal_queued_bytes',
      help: 'Bytes of appends waiting in the WAL writer for an upload, when scraped',
      registers,
      collect() {
        this.set(metrics.queuedBytes());
      },
    });
    new Gauge({
      name: 'mink_cache_bytes',
      help: 'Bytes each in-memory cache of the node holds, when scraped (stream_tail: committed batches kept for tail reads; stream_read: what GETs and prefetch fetched, prefetch in flight included; lake_files: Parquet files of lake reads)',
      labelNames: ['cache'],
      registers,
      collect() {
        for (const size of metrics.cacheSizes()) this.set({ cache: size.cache }, size.bytes);
      },
    });
    new Gauge({
      name: 'mink_cache_bytes_max',
      help: 'The bound in bytes of each in-memory cache of the node (see mink_cache_bytes)',
      labelNames: ['cache'],
      registers,
      collect() {
        for (const size of metrics.cacheSizes()) this.set({ cache: size.cache }, size.bytesMax);
      },
    });
    new Gauge({
      name: 'mink_kafka_group_joins_refused',
      help: 'Kafka JoinGroup requests refused with GROUP_MAX_SIZE_REACHED since the node started, by the cap that refused them (group: members per group; coordinator: groups per node)',
      labelNames: ['cap'],
      registers,
      collect() {
        const refusals = metrics.groupJoinRefusals();
        this.set({ cap: 'group' }, refusals.groupFull);
        this.set({ cap: 'coordinator' }, refusals.coordinatorFull);
      },
    });
    this.compactedBytes = new Counter({ name: 'mink_compaction_bytes_total', help: 'Bytes of WAL slices compacted into stream objects', registers });
    this.restoreSeconds = new Histogram({
      name: 'mink_kv_restore_seconds',
      help: 'Time to restore a PK bucket tablet (snapshot download, unpack and changelog replay)',
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers,
    });
    this.snapshotBytes = new Histogram({ name: 'mink_kv_snapshot_bytes', help: 'Size of the KV snapshots committed', buckets: OBJECT_BYTES, registers });
    this.groupRequests = new Histogram({
      name: 'mink_pk_group_requests',
      help: 'Put and delete requests a PK bucket wrote together in one group commit (one changelog batch)',
      buckets: [1, 2, 4, 8, 16, 32, 64, 128],
      registers,
    });
    this.groupOperations = new Histogram({
      name: 'mink_pk_group_operations',
      help: 'Puts and deletes of one group commit of a PK bucket',
      buckets: [1, 10, 100, 1_000, 10_000, 50_000],
      registers,
    });
  }

  /** Runs one request (`run`) and counts it: outcome, rows, bytes and latency, when it is about table data. */
  track<T>(request: unknown, run: () => Promise<T>): Promise<T> {
    return this.trackWith((result) => requestFigures(request, result), run);
  }

  /**
   * Runs one operation and counts it with the figures `figuresOf` gives for its result (undefined when it
   * failed): a Kafka produce or fetch, say, whose partition is the bucket. The outcome of a failure is its
   * mink error code, `kafka_<code>` for a Kafka error code, else `Internal`.
   */
  async trackWith<T>(figuresOf: (result: T | undefined) => RequestFigures | null, run: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      const result = await run();
      this.count(figuresOf(result), 'ok', started);
      return result;
    } catch (error) {
      this.count(figuresOf(undefined), outcomeOf(error), started);
      throw error;
    }
  }

  /** What the WAL writers of this node report to. */
  readonly wal: WalObserver = {
    uploaded: (bytes, seconds, ok) => {
      this.walUpload.observe({ outcome: ok ? 'ok' : 'failed' }, seconds);
      if (ok) this.walObjectBytes.observe(bytes);
    },
    committed: (seconds, refusedCode) => this.walCommit.observe({ outcome: refusedCode ?? 'ok' }, seconds),
  };

  /** What the PK buckets of this node report to. */
  readonly pk: PkBucketObserver = {
    restored: (seconds) => this.restoreSeconds.observe(seconds),
    snapshotCommitted: (bytes) => this.snapshotBytes.observe(bytes),
    groupStarted: (requests, operations) => {
      this.groupRequests.observe(requests);
      this.groupOperations.observe(operations);
    },
  };

  compacted(bytes: number): void {
    this.compactedBytes.inc(bytes);
  }

  /** Where the refused-joins gauge reads from: the node's Kafka group coordinator. */
  readGroupJoinRefusalsFrom(read: () => JoinRefusals): void {
    this.groupJoinRefusals = read;
  }

  /** Where the cache gauges read from: the node's stream reader and lake reads. */
  readCacheSizesFrom(read: () => CacheSize[]): void {
    this.cacheSizes = read;
  }

  /** Where the queued-bytes gauge reads from: the WAL writer of the current incarnation. */
  readQueuedBytesFrom(read: () => number): void {
    this.queuedBytes = read;
  }

  private count(figures: RequestFigures | null, outcome: string, started: number): void {
    if (figures === null) return;
    const labels = { ...metricLabelsOf(figures, this.view().tables), op: figures.op };
    this.requests.inc({ ...labels, outcome });
    this.latency.observe(labels, (performance.now() - started) / 1000);
    // A refused request moved nothing: only answered ones count rows and bytes.
    if (outcome !== 'ok') return;
    if (figures.rows > 0) this.rows.inc(labels, figures.rows);
    if (figures.bytes > 0) this.bytes.inc(labels, figures.bytes);
  }
}

function outcomeOf(error: unknown): string {
  if (error instanceof MinkError) return error.code;
  if (error instanceof KafkaError) return `kafka_${error.code}`;
  return 'Internal';
}
