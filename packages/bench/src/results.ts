import type { MemoryFigures } from './memory-watch';
import type { SoakResult } from './soak-figures';
import type { S3Latency } from '@mink/devcluster';
import type { RoleCpuFigure } from './process-usage';
import type { LatencySummary } from './stats';

/**
 * The result object of one `pnpm bench` run, printed as is by `--json`. Every figure of a run is measured
 * on the same machine and the same servers, so the ratios between them mean more than any absolute figure
 * on a shared, noisy machine.
 */

/**
 * One measured series of a baseline: raw S3 PUTs or GETs, raw JetStream publishes, or raw NATS
 * request/reply round trips to a responder that does nothing but answer.
 */
export interface BaselineResult {
  kind: 's3-put' | 's3-get' | 'jetstream-publish' | 'nats-request';
  /** e.g. "S3 PUT 256 KiB". */
  label: string;
  /** The body of a PUT, GET or publish; the request of a request/reply. */
  payloadBytes: number;
  /** The reply of a request/reply; absent for the other kinds. */
  replyBytes?: number;
  /** Operations in flight at once; 1 for the sequential series. */
  concurrency: number;
  operations: number;
  failures: number;
  elapsedMs: number;
  operationsPerSecond: number;
  /** Payload bytes (request and reply bytes for a request/reply) acknowledged per second. */
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

/** What every write scenario reports: a closed loop of append or put calls and the WAL objects they produced. */
export interface WriteScenarioResult {
  /** Rows acknowledged. */
  rows: number;
  /** Calls acknowledged, and failed. */
  calls: number;
  failedCalls: number;
  firstFailureMessage: string | null;
  /** True when --seconds or Ctrl-C stopped the scenario before every row was sent. */
  stoppedEarly: boolean;
  elapsedMs: number;
  rowsPerSecond: number;
  /** Bytes of JSON rows (the gateway's request bodies; the same rows as JSON for the client) acknowledged per second. */
  payloadBytesPerSecond: number;
  /** Per call, from sending it until its acknowledgement. */
  latency: LatencySummary;
  wal: WalObjectsWritten;
  /**
   * Bucket requests of the scenario's table and operation the data nodes answered during the measured calls
   * (retries and refusals included), from their `mink_bucket_requests_total`; null or absent when a data node
   * did not answer its /metrics or restarted meanwhile.
   */
  bucketRequests?: number | null;
  /**
   * CPU seconds (user + system, from /proc) all mink processes of the cluster used during the measured calls,
   * per MB of JSON rows acknowledged; and the largest peak resident set among them. Null where /proc is not
   * readable or the run did not say which processes to watch.
   */
  cpuSecondsPerMegabyte?: number | null;
  rssMaxBytes?: number | null;
  /**
   * Where else the CPU went during the measured calls, per MB of JSON rows: the cluster's S3 and NATS
   * servers, and the load generator (this process); and the cores all of them kept busy on average (their
   * CPU seconds over the elapsed seconds), to show when the machine itself is the limit. Null or absent
   * where /proc is not readable or the run did not say which processes are the servers.
   */
  serverCpuSecondsPerMegabyte?: number | null;
  benchCpuSecondsPerMegabyte?: number | null;
  coresBusy?: number | null;
  /**
   * The same CPU role by role (each cluster role, then the load generator), per MB of JSON rows, with the
   * share of it on the processes' main threads (the rest is V8's garbage collector and compiler threads and
   * libuv's pool: s3rver's file operations, say). Null or absent where /proc is not readable or the run did
   * not say which process plays which role.
   */
  cpuByRole?: RoleCpuFigure[] | null;
}

/**
 * One mink append scenario: through the gateway's HTTP API, through the TypeScript client from rows, or
 * through the TypeScript client from Arrow record batches (`appendArrow`, "client arrow").
 */
export interface AppendResult extends WriteScenarioResult {
  /** `floor`: not mink, the floor write path (write-floor.ts) under the same load. */
  path: 'gateway' | 'client' | 'client arrow' | 'floor';
}

/** The put scenario: new keys put into a primary-key table through the TypeScript client. */
export interface PutResult extends WriteScenarioResult {
  path: 'client';
  table: string;
  buckets: number;
}

/** One series of lookups of keys the put scenario wrote, through the TypeScript client. */
export interface LookupResult {
  table: string;
  /** Keys per lookup call: 1, or the batched series' count (the client sends one request per bucket they fall in). */
  keysPerCall: number;
  /** Lookup calls in flight at once. */
  concurrency: number;
  calls: number;
  /** Calls that failed, or answered a written key with no row. */
  failedCalls: number;
  firstFailureMessage: string | null;
  stoppedEarly: boolean;
  elapsedMs: number;
  callsPerSecond: number;
  keysPerSecond: number;
  /** Per lookup call, from sending it until its answer. */
  latency: LatencySummary;
  /** Average JSON bytes of one call's request (keys) and reply (rows): the sizes of its NATS request/reply baseline. */
  requestBytes: number;
  replyBytes: number;
}

/**
 * One restore of the restore table's bucket on a new leader after a fault of the old one, from the new
 * leader's `'restored PK bucket'` log line and the cluster status.
 */
export interface RestoreTrial {
  fault: FailoverFault;
  victimNodeId: string;
  newLeaderNodeId: string;
  /** Keys the bucket held when the fault came. */
  keys: number;
  /** From the signal until GET /v1/cluster reports the bucket open (restored and serving) on another node. */
  unavailableMs: number;
  /** The log line's `ms`: download of the snapshot, unpacking it, opening the tablet and replaying the changelog after it. */
  restoreMs: number;
  /** The snapshot object restored, or null when the bucket had none and was rebuilt from the changelog alone. */
  snapshotObject: string | null;
  snapshotBytes: number;
  /** Changelog records replayed after the snapshot (`replayedTo - replayedFrom`). */
  replayedRecords: number;
  /** restoreMs per MB (10^6 bytes) of snapshot; null without a snapshot. */
  msPerSnapshotMegabyte: number | null;
  /** The log line's `downloadMs`: the GET of the snapshot alone; null when the line does not have it. */
  downloadMs: number | null;
}

/** The restore scenario: a one-bucket primary-key table loaded with many keys, restored on new leaders after faults. */
export interface RestoreResult {
  table: string;
  /** Keys put before the first fault (fewer than asked when --seconds or Ctrl-C cut the load short). */
  keys: number;
  loadElapsedMs: number;
  loadKeysPerSecond: number;
  /** Keys put after the first restore and before the second fault, which the second restore replays from the changelog. */
  keysAfterSnapshot: number;
  trials: RestoreTrial[];
}

/** A figure of mink divided by a baseline of the same run. */
export interface Ratio {
  /** The full sentence as printed, e.g. "client append: p99 ack 120 ms = 3.1 × raw S3 PUT p99 (1 MiB)". */
  text: string;
  /** The mink figure, the baseline figure and their quotient. */
  value: number;
  baseline: number;
  ratio: number;
  /** The goal an issue set for this ratio, where it set one, and whether this run met it. */
  goal?: RatioGoal;
}

/** A bound on a ratio: at least `minimum` (a throughput) or at most `maximum` (a latency). */
export interface RatioGoal {
  minimum?: number;
  maximum?: number;
  met: boolean;
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
  /** Rows of the background load acknowledged during the trial (every bucket, the victim's included). */
  loadRows: number;
  /** Calls of the background load that failed outright during the trial. */
  loadFailedCalls: number;
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

/** How the metadata plane held up during one stage, from outside the processes (and from their /metrics where they expose it). */
export interface MetadataHealth {
  /** Every process writes its heartbeat this often (lease_ttl / LIMITS.heartbeatsPerLeaseTtl). */
  heartbeatIntervalMs: number;
  /** Longest time between two consecutive heartbeats of one process, by the NATS server's stamps, with its key ("hb.data-node.2"). */
  longestHeartbeatGap: { key: string; gapMs: number } | null;
  /** Longest event-loop stall of any process: the largest `nodejs_eventloop_lag_max_seconds` (prom-client, reset by each scrape) read. */
  longestEventLoopStall: { process: string; ms: number } | null;
  /** Most metadata log entries any process's tail had not yet taken (JetStream `num_pending` of the consumers of the log). */
  largestTailBacklogEntries: number | null;
  /** Age of the oldest log entry the slowest tail had not yet taken: a lower bound of its apply lag (a tail buffers one batch). */
  longestApplyLagMs: number | null;
  /**
   * The process whose `mink_meta_applied_seq` grew the slowest over the stage (first to last scrape), and
   * how fast: while every process keeps up this is the rate the log grew at. Null where no process exposes it.
   */
  slowestApply: { process: string; commandsPerSecond: number } | null;
  /** Metrics about the metadata plane that some process exposes: the largest sample of each, and which process showed it. */
  exposedMetrics: { name: string; process: string; value: number }[];
  /** Metrics looked for that no process exposes. */
  missingMetrics: string[];
  /** Each process's memory (its own /metrics) at the first and the last scrape of the stage. */
  memory: ProcessMemory[];
}

/** One process's resident memory and V8 heap in use, as `process_resident_memory_bytes` and `nodejs_heap_size_used_bytes` showed them. */
export interface MemoryReading {
  rssBytes: number | null;
  heapUsedBytes: number | null;
}

/** A process's memory at the first and the last scrape of a stage. */
export interface ProcessMemory {
  process: string;
  first: MemoryReading;
  last: MemoryReading;
}

/** A data node as GET /v1/cluster shows it. */
export interface DataNodeState {
  id: string;
  epoch: number;
  live: boolean;
  /** Buckets it leads. */
  buckets: number;
}

/** A whole-cluster restart on the same data dir after a stage, timed until every bucket is open again. */
export interface MetadataRestart {
  /** Stopping every process (SIGTERM: each data node closes its buckets). */
  stopMs: number;
  /** From starting the processes again until every one answers /readyz. */
  startMs: number;
  /** From starting the processes again until GET /v1/cluster shows every bucket open; null when that did not happen in time. */
  allOpenMs: number | null;
  buckets: number;
  bucketsOpenedPerSecond: number | null;
  /** Processes that exited on their own meanwhile, each with the last fatal line of its log. */
  exitedProcesses: string[];
  /** The data nodes once every bucket was open again: a node that was not live in time has lost its buckets to the others. */
  nodes: DataNodeState[];
  stoppedBecause: string | null;
}

/**
 * One stage of the metadata scenario: tables of `bucketsPerTable` buckets created through the gateway with
 * `createsInFlight` at a time until the bench's tables hold `targetBuckets`, the wait until every bucket is
 * open, and a whole-cluster restart.
 */
export interface MetadataStageResult {
  targetBuckets: number;
  tablesAsked: number;
  tablesCreated: number;
  bucketsCreated: number;
  /** Every bucket of the cluster at the end of the stage (the bench's tables of every stage so far, plus any other). */
  clusterBuckets: number;
  /** Answers 503 with Retry-After, each retried after it (inside the create's latency). */
  retriedUnavailable: number;
  failedCreates: number;
  firstFailureMessage: string | null;
  /** From the first create sent until the last one answered. */
  createElapsedMs: number;
  tableCreatesPerSecond: number | null;
  /** Per create, retries after 503 included; null when no create succeeded or too many failed. */
  createLatency: LatencySummary | null;
  /** From the first create sent until GET /v1/cluster showed every bucket open; null when that did not happen. */
  allOpenMs: number | null;
  bucketsOpenedPerSecond: number | null;
  /** Entries appended to the metadata log from the start of the stage until every bucket was open (its last seq in JetStream). */
  metaLogEntries: number | null;
  commandsPerTableCreate: number | null;
  /** metaLogEntries / allOpenMs: the rate each process applied the log at, at least (each applies every entry). */
  applyCommandsPerSecond: number | null;
  health: MetadataHealth;
  /** The data nodes as GET /v1/cluster showed them last, with how many buckets each leads. */
  nodes: DataNodeState[];
  /** Epochs the data nodes gained during the stage: each is a takeover of a node thought dead, or a node re-registering after being fenced. */
  epochBumps: number;
  /** Buckets the data nodes logged as taken over from a dead incarnation ('buckets taken over' lines) during the stage. */
  takeovers: number;
  exitedProcesses: string[];
  restart: MetadataRestart | null;
  /** Why the stage ended short (a process exited, a deadline, failed creates, Ctrl-C); null when it completed. */
  stoppedBecause: string | null;
}

/** The metadata scenario: stages of table creation on one cluster, each followed by a whole-cluster restart. */
export interface MetadataResult {
  bucketsPerTable: number;
  createsInFlight: number;
  stages: MetadataStageResult[];
  /** The cost of applying one CommitWal at each stage's bucket count with ten live objects per bucket (computed in the bench process). */
  applyCosts?: ApplyCostResult[];
}

export type { ApplyCostResult } from './apply-cost';

/**
 * The formats a scan reply can take through the gateway, by the Accept header of its request; and the
 * TypeScript client's own reads (`client-arrow`: `scanPages`, Arrow pages from each bucket leader's
 * HTTP route, no gateway in between).
 */
export type ScanFormat = 'json' | 'ndjson' | 'arrow' | 'client-arrow';

/** Whether a scan series ran right after every data node was restarted, or right after the cold series. */
export type ScanCache = 'cold' | 'hot';

/** One bucket of the scan table once compaction was waited for, from the append acknowledgements and a listing of its stream objects. */
export interface CompactedBucket {
  bucket: number;
  /** Records appended (the bucket's high watermark: its batches tile [0, records)). */
  records: number;
  /** Batches appended, as their acknowledgements tell (the client merges the batches of calls that wait for one bucket into one request, so one slice of the stream may hold several). */
  batches: number;
  /** Records of the batches that lie inside a stream object. */
  recordsInStreamObjects: number;
  /** Batches still only in WAL objects. */
  walBatches: number;
  /** Slices of the stream still in WAL objects, as GET /v1/cluster reports (`walSlices`); what compaction counts. */
  walSlices: number;
  streamObjects: number;
}

/** The wait for background compaction of the scan table. */
export interface CompactionWait {
  /** True when every bucket had fewer slices in WAL objects than a compaction round takes (`LIMITS.compactionSlicesMin`). */
  complete: boolean;
  waitedMs: number;
  timeoutMs: number;
  buckets: CompactedBucket[];
}

/** One scan of every bucket of the scan table in one format, `scansInFlight` buckets at a time. */
export interface ScanSeriesResult {
  format: ScanFormat;
  cache: ScanCache;
  /** The Accept header sent and the Content-Type answered. */
  accept: string;
  contentType: string;
  scansInFlight: number;
  pageRecords: number;
  buckets: number;
  requests: number;
  /** Bytes of reply bodies received. */
  bodyBytes: number;
  /** Rows counted in the bodies (after the series was timed), and the rows appended to the table. */
  rows: number;
  rowsExpected: number;
  /** From the first request sent until the last byte of the last reply. */
  elapsedMs: number;
  bytesPerSecond: number;
  rowsPerSecond: number;
  /** Counting the rows of the bodies after the series: JSON.parse, line counting or tableFromIPC. */
  countMs: number;
  /** Why the rows counted do not agree with the rows appended and the offsets answered; null when they do. Such a series has no ratio. */
  rowCheckFailure: string | null;
  /** True when the replies carried no `Mink-Next-Offset` header, so JSON bodies were parsed while timed to find the next offset. */
  parsedWhileTimed: boolean;
}

/** A format the gateway did not serve as asked (another Content-Type, or an error), so its series were not measured. */
export interface ScanFormatSkipped {
  format: ScanFormat;
  accept: string;
  reason: string;
}

/** How the data nodes were restarted before a format's cold series, and which node led which bucket afterwards. */
export interface ScanRestart {
  format: ScanFormat;
  /** Restarting every data node one at a time, each waited live with every bucket open, then a rebalance waited open. */
  restartMs: number;
  /** Buckets of the scan table each data node led during the series, e.g. { "1": 3, "2": 3, "3": 2 }. */
  bucketsByLeader: Record<string, number>;
}

/** The long polls: a scan waiting at the high watermark of one bucket, woken by an append of one batch through the client. */
export interface LongPollResult {
  bucket: number;
  iterations: number;
  /** Polls answered with the appended records. */
  delivered: number;
  failures: number;
  firstFailureMessage: string | null;
  /** From the append's ack to the arrival of the waiting scan's reply; negative when the reply came first. Null when none was delivered. */
  delivery: LatencySummary | null;
  /** Of each append, from sending it until its ack. */
  appendAck: LatencySummary | null;
  /** The goal: delivery p99 at most this many ms after the ack. */
  deliveryP99GoalMs: number;
  /** Why the polls stopped before `iterations` (a poll was not held, too many failures, Ctrl-C); null when all ran. */
  stoppedBecause: string | null;
}

/** The scan figures: the load, compaction, each format cold and hot against raw S3 GETs, and long-poll delivery. */
export interface ScanResult {
  table: string;
  buckets: number;
  /** The load of the table through the client's appendArrow (its warm-up rows are in the table too). */
  load: WriteScenarioResult;
  /** Rows in the table before the scans: the load and its warm-up. */
  rows: number;
  compaction: CompactionWait;
  restarts: ScanRestart[];
  series: ScanSeriesResult[];
  skipped: ScanFormatSkipped[];
  longPoll: LongPollResult | null;
}
/**
 * The produce series of the Kafka figures: a closed loop of kafkajs `send` calls, each of `recordsPerSend`
 * records to one partition, acknowledged with acks -1. Bytes are those of record keys and values.
 */
export interface KafkaProduceResult {
  /**
   * Sends acknowledged, and failed (after kafkajs's own retries). In the transactional series: the sends of
   * committed transactions, and the transactions that failed (a send, the commit, or beginning it).
   */
  sends: number;
  failedSends: number;
  firstFailureMessage: string | null;
  /** True when --seconds or Ctrl-C stopped the series before every record was sent. */
  stoppedEarly: boolean;
  /** Records and key + value bytes acknowledged by the measured sends. */
  records: number;
  bytes: number;
  /** Records the untimed warm-up sends wrote before the series (the consumer reads them too). */
  warmupRecords: number;
  elapsedMs: number;
  bytesPerSecond: number;
  recordsPerSecond: number;
  /**
   * Per send, from the call until kafkajs resolved it with the broker's acknowledgement. In the
   * transactional series per transaction, from `producer.transaction()` until its commit was acknowledged.
   */
  latency: LatencySummary;
  /**
   * Why the acknowledged offsets do not fill each partition from 0 (a gap beyond the transaction markers
   * the partition may hold, or an overlap), or null when they do. The transactional series' check covers
   * the whole topic: the idempotent series' batches too.
   */
  offsetCheckFailure: string | null;
  /** CPU seconds of every mink process per MB (10^6 bytes) of keys and values, and of the bench process (kafkajs) alone; null where unreadable. */
  cpuSecondsPerMegabyte: number | null;
  benchCpuSecondsPerMegabyte: number | null;
  /** The largest peak resident set among the mink processes. */
  rssMaxBytes: number | null;
}

/**
 * The transactional produce series of the Kafka figures: the closed loop's operation is one transaction
 * of `sendsPerTransaction` sends (to partitions in turn, one after the other) and its commit, with at most
 * one transaction in flight per producer. Its records are numbered after the idempotent series'.
 */
export interface KafkaTransactionalProduceResult extends KafkaProduceResult {
  sendsPerTransaction: number;
  /** Transactions committed (the latency's samples), and failed; a failed one was aborted where kafkajs still could. */
  transactions: number;
  failedTransactions: number;
  /** Transactions in flight: the run's --concurrency, at most one per producer. */
  transactionsInFlight: number;
  /** Transaction markers the partitions may hold: one per transaction and partition it sent to, the warm-up's included. */
  transactionMarkers: number;
  /**
   * Offsets found between the acknowledged batches of all partitions: the markers that sit there (a
   * partition's last marker follows its last batch and is not counted). At most `transactionMarkers`.
   */
  offsetsBetweenBatches: number;
}

/**
 * The consume series of the Kafka figures: one kafkajs consumer in a new group reading every partition from
 * the beginning with `eachBatch`, until it has read every record of both produce series (the warm-ups'
 * included). It reads committed records only (kafkajs's default isolation), so it also checks that every
 * committed transaction's records are there and nothing else is.
 */
export interface KafkaConsumeResult {
  groupId: string;
  /** How often the consumer committed what it had read: every this many ms (and at the end), or null after every batch (kafkajs's eachBatch default). */
  commitIntervalMs: number | null;
  /** OffsetCommit requests the consumer made while it read (the final one of an interval series included). */
  commits: number;
  /** Records read, and the records the producers had acknowledged. */
  records: number;
  recordsExpected: number;
  /** Key + value bytes read. */
  bytes: number;
  /** From `consumer.run()` until kafkajs reported the group joined (FindCoordinator, JoinGroup, SyncGroup); not part of the MB/s. */
  joinMs: number;
  /** From the group joined until the last expected record was read (or the series stopped). */
  elapsedMs: number;
  bytesPerSecond: number;
  recordsPerSecond: number;
  /** Fetch requests answered before the consumer's max wait: every record is produced before the consumer starts, so only a fetch that found nothing waits it out. */
  fetches: number;
  /** Fetch requests that waited out max wait (a broker whose partitions were all read to their end, waiting for more). */
  waitedFetches: number;
  /** Per fetch request answered before max wait, from sending it until its response (kafkajs measures it in whole milliseconds). */
  fetchLatency: LatencySummary | null;
  /** Why the records read are not exactly those acknowledged (offsets from 0 without gap or repeat in every partition, each key once); null when they are. */
  checkFailure: string | null;
  /** Why the series ended before every record was read (timeout, a crash of the consumer, Ctrl-C); null when it read them all. */
  stoppedBecause: string | null;
  cpuSecondsPerMegabyte: number | null;
  benchCpuSecondsPerMegabyte: number | null;
  rssMaxBytes: number | null;
}

/** The Kafka figures: kafkajs producers and a consumer against the data nodes' Kafka listeners, on a topic of its own. */
export interface KafkaResult {
  topic: string;
  partitions: number;
  /** The bootstrap servers: every data node's Kafka listener. */
  brokers: string[];
  /** acks of every produce request: -1, all in-sync replicas (a mink ack means the record is in S3 and committed). */
  acks: number;
  /** Whether the first series' producers are idempotent (InitProducerId, a sequence number per partition); the transactional ones always are. */
  idempotent: boolean;
  /** kafkajs producers of each series, each with at most one send in flight while there are as many as sends in flight. */
  producers: number;
  sendsInFlight: number;
  recordsPerSend: number;
  keyBytes: number;
  valueBytes: number;
  produce: KafkaProduceResult;
  /** The transactional producers' series after it; null when the run was interrupted before it committed a transaction. */
  transactionalProduce: KafkaTransactionalProduceResult | null;
  /** The consumer committing every `BENCH_KAFKA.consumeCommitIntervalMs` (the goal's series); null when the run was interrupted before it started. */
  consume: KafkaConsumeResult | null;
  /** A consumer in another new group committing after every batch (kafkajs's default); null when the run was interrupted before it started. */
  consumeEveryBatch: KafkaConsumeResult | null;
  /** Error lines kafkajs logged during the figures (retries, broker error codes, reconnects), and the first few of them. */
  clientErrors: number;
  firstClientErrors: string[];
}

/**
 * One tiering round of the tiering table as the tiering worker's log tells it (its pino lines 'tiering round
 * taken', '… committed to the lake, not yet to the metadata log', and the outcome). Times are the worker's
 * clock (epoch ms), the same machine's as the bench's.
 */
export interface TieringRoundLog {
  tieringEpoch: number;
  /** 'tiering round taken'; null when the log holds no such line for this epoch. */
  takenAtMs: number | null;
  /** The line of its outcome; null while the round is in progress. */
  endedAtMs: number | null;
  outcome: 'committed' | 'failed' | 'fenced' | 'not-committed' | 'in-progress';
  /** Records written and bytes of stored batches read (the stream's own bytes), of Parquet written, and data files; 0 until the Iceberg commit. */
  rows: number;
  sourceBytes: number;
  parquetBytes: number;
  files: number;
  /** The error or rejection of a round that failed, was fenced or was not committed. */
  message: string | null;
}

/** Rounds of one phase of the tiering figures, summed over those that committed. */
export interface TieringRoundsSummary {
  committed: number;
  /** Rounds that failed, were fenced, or whose log commit was refused, and the first one's message. */
  notCommitted: number;
  firstProblem: string | null;
  rows: number;
  sourceBytes: number;
  parquetBytes: number;
  files: number;
  /** From the first round taken to the last one committed (the worker's clock); null without a committed round. */
  spanMs: number | null;
  /** The committed rounds' times added up (from taken to committed): the time the worker spent tiering, without the waits between rounds. */
  busyMs: number;
  /** Of each committed round, from taken to committed. */
  roundMs: LatencySummary | null;
}

/**
 * The catch-up of the tiering figures: the table was loaded with the lake off, then the lake was enabled and
 * the bench waited until the lake offsets equalled the committed ends. MB/s counts the stored bytes of the
 * batches the rounds read (as the worker logs them), over the worker's rounds and over the whole catch-up.
 */
export interface TieringCatchUpResult {
  /** Records the lake was behind when the lake was enabled: the committed ends summed. */
  records: number;
  rounds: TieringRoundsSummary;
  /** From the PATCH that enabled the lake until GET /v1/tables/{t} showed every lake offset at its committed end; null when that did not happen. */
  catchUpMs: number | null;
  /** sourceBytes / spanMs and rows / spanMs: the worker's own throughput; null without a committed round. */
  bytesPerSecond: number | null;
  rowsPerSecond: number | null;
  /** sourceBytes / catchUpMs: scheduling (the freshness, the worker's poll) included. */
  catchUpBytesPerSecond: number | null;
  /** CPU seconds of the tiering worker per MB (10^6 bytes) of stored batches tiered, and its peak RSS; null where /proc is unreadable. */
  workerCpuSecondsPerMegabyte: number | null;
  workerRssMaxBytes: number | null;
  /** Why the lake did not reach the committed ends (a timeout, Ctrl-C); null when it did. */
  stoppedBecause: string | null;
  /** Why the rows the rounds tiered are not the rows committed, or the committed ends not the acknowledged ones; null when they are. */
  checkFailure: string | null;
}

/**
 * The freshness series of the tiering figures: appends through appendArrow at a fixed rate (a fraction of
 * the load's rows/s) while the lake is enabled, the lake's progress sampled meanwhile. A sample's lag is the
 * time since the acknowledgement of the newest append that the lake holds together with every append
 * acknowledged before it (or since the series started, when the lake held everything then).
 */
export interface FreshnessLagResult {
  freshnessMs: number;
  /** The append ceiling the rate is a fraction of: the load's rows/s (appendArrow, `--concurrency` in flight, the same rows). */
  ceilingRowsPerSecond: number;
  targetRowsPerSecond: number;
  rowsPerCall: number;
  /** Calls sent, acknowledged and failed; at most `callsInFlightMax` in flight. */
  calls: number;
  acknowledgedCalls: number;
  failedCalls: number;
  firstFailureMessage: string | null;
  callsInFlightMax: number;
  /** Calls sent later than one call interval after their time (the in-flight bound was reached), and the latest. */
  lateCalls: number;
  latestStartMs: number;
  rows: number;
  /** From the first call due until the last acknowledgement. */
  elapsedMs: number;
  rowsPerSecond: number;
  appendAck: LatencySummary | null;
  sampleIntervalMs: number;
  /** Samples taken while appends ran; those before the series' first committed round are warm-up and not counted. */
  samples: number;
  warmupSamples: number;
  failedSamples: number;
  lag: LatencySummary | null;
  /**
   * The median lag of the first and of the second half of the steady samples: a second half well above the
   * first is a lake that does not keep up (each round has more to tier than the last), so its percentiles
   * grow with the series' length. Null without steady samples.
   */
  lagHalvesP50Ms: [number, number] | null;
  rounds: TieringRoundsSummary;
  /** From the last acknowledgement until the lake held every acknowledged append; null when that did not happen in time. */
  drainMs: number | null;
  /** CPU seconds the tiering worker used per second of the series: the share of a core it took. */
  workerCpuShare: number | null;
  /** Why the series ended early (failures, Ctrl-C); null when it ran. */
  stoppedBecause: string | null;
}

/** The tiering figures: a log table loaded with the lake off, its catch-up once enabled, then the lake's freshness under appends. */
export interface TieringResult {
  table: string;
  buckets: number;
  tieringWorkers: number;
  /** The load through appendArrow with the lake off (its warm-up rows are in the table too); its rows/s is the freshness series' ceiling. */
  load: WriteScenarioResult;
  rows: number;
  catchUp: TieringCatchUpResult | null;
  lag: FreshnessLagResult | null;
}

import type { ApplyCostResult } from './apply-cost';

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

/** The groups of figures a run can measure (`--only`); each brings the baselines its ratios need. */
export type BenchFigures = 'append' | 'pk' | 'kafka' | 'scan' | 'tiering' | 'soak' | 'failover' | 'metadata';

/**
 * Every group, in the order a run measures them: the scan figures restart every data node and the failover
 * figures kill them, so both come after the figures that need a steady cluster.
 */
export const BENCH_FIGURES: readonly BenchFigures[] = ['append', 'pk', 'kafka', 'scan', 'tiering', 'soak', 'failover', 'metadata'];

/**
 * The groups a run without `--only` measures: the metadata stages take long (16 000 buckets) and restart
 * the whole cluster, and the soak takes ten minutes, so they run only when named.
 */
export const DEFAULT_BENCH_FIGURES: readonly BenchFigures[] = ['append', 'pk', 'kafka', 'scan', 'tiering', 'failover'];

export interface BenchOptions {
  rows: number;
  batchRows: number;
  concurrency: number;
  /** The time cap of each scenario, or null for none. */
  seconds: number | null;
  /** The groups of figures measured, in run order. */
  figures: BenchFigures[];
  /** Keys put by the put scenario, which the lookups then read. */
  pkKeys: number;
  /** Keys loaded into the one-bucket table whose restore is measured. */
  restoreKeys: number;
  /** The bucket count each metadata stage creates tables until. */
  metadataBuckets: number[];
  /** Rows appended to the scan table, then scanned in each format. */
  scanRows: number;
  /** Long polls of the delivery series. */
  longPolls: number;
  /** Records each Kafka produce series sends (in sends of about 1 MiB), idempotent then transactional, which the consumer then reads. */
  kafkaRecords: number;
  /** Rows loaded into the tiering table before its lake is enabled. */
  tieringRows: number;
  /** The soak's minutes and the rows per second it offers. */
  soakMinutes: number;
  soakRowsPerSecond: number;
  /** `--s3-latency`: the first-byte latency the S3 server added to every answer, standing in for a cloud object store; absent for none. */
  s3Latency?: S3Latency;
}

export interface BenchResult {
  machine: MachineDescription;
  options: BenchOptions;
  cluster: { nodes: number; coordinators: number; buckets: number; leaseTtlMs: number; coordinatorTickMs: number; dataDir: string; kept: boolean };
  baselines: BaselineResult[];
  /** The append scenarios; the floor write path's (`path: 'floor'`) also with the Kafka figures alone, whose produce series are compared with it. */
  appends: AppendResult[];
  /** Null when the PK figures were not selected or were interrupted before it ran; likewise `restore`. */
  put: PutResult | null;
  lookups: LookupResult[];
  restore: RestoreResult | null;
  ratios: Ratio[];
  /** Null when skipped (`--no-failover`) or interrupted before it ran. */
  failover: FailoverResult | null;
  /** Null when not selected (`--only metadata`) or interrupted before it ran. */
  metadata: MetadataResult | null;
  /** Null when not selected or interrupted before the table was loaded. */
  scan: ScanResult | null;
  /** Null when not selected or interrupted before the first record was produced. */
  kafka: KafkaResult | null;
  /** Null when not selected or interrupted before the table was loaded. */
  tiering: TieringResult | null;
  /** Null when not selected or interrupted before two samples (absent from an older result). */
  soak?: SoakResult | null;
  /** The resident memory of all mink processes together over the run (null before the cluster started, or from an older result). */
  memory?: MemoryFigures | null;
  /** Wall time of the whole run, cluster start and stop included. */
  durationMs: number;
  /** True when Ctrl-C ended the run early; the figures cover what had been measured. */
  interrupted: boolean;
}
