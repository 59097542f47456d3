import { LIMITS } from '@mink/config';

/**
 * Decimal digits of a Kafka record's key (its record number, zero-padded) and bytes of its value: 1 KiB, the
 * OpenMessaging Benchmark's default message size. kafkajs spends its CPU per record, so with the append
 * figures' 200-byte rows this 2-core machine measures the client (about 0.07 CPU s/MB in the bench process
 * against 0.03 in all data nodes, 0.10 × raw S3 PUT) rather than the broker.
 */
const KAFKA_KEY_BYTES = 10;
const KAFKA_VALUE_BYTES = 1024;
/** As many keys and values as fit into 1 MiB (`LIMITS.walFlushBytes`), the body of the S3 PUT baseline: 4 993. */
const KAFKA_RECORDS_PER_SEND = Math.floor(LIMITS.walFlushBytes / (KAFKA_KEY_BYTES + KAFKA_VALUE_BYTES));

/**
 * Every default and bound of `pnpm bench` in one place. The bounds keep a typo on the command line from
 * asking for a run that would fill the disk or never end; the defaults give a run of a few minutes on a
 * two-core machine.
 */
export const BENCH_DEFAULTS = {
  /** Rows appended per mink scenario (gateway, client). */
  rows: 200_000,
  /** Rows per append call. */
  batchRows: 1_000,
  /** Append, put and lookup calls (and baseline operations) in flight at once. */
  concurrency: 8,
  /** Keys put by the put scenario into the 8-bucket PK table; the lookups read them. */
  pkKeys: 100_000,
  /** Keys loaded into the one-bucket PK table whose restore is measured. */
  restoreKeys: 1_000_000,
  /** Rows appended to the scan table, then scanned in each format. */
  scanRows: 200_000,
  /** Long polls of the delivery series, each woken by one append. */
  longPolls: 200,
  /** Records the Kafka producers send: 128 sends of about 1 MiB of keys and values. */
  kafkaRecords: 128 * KAFKA_RECORDS_PER_SEND,
  /** Rows loaded into the tiering table before its lake is enabled: about 45 MB of stored Arrow batches. */
  tieringRows: 200_000,
  /** `--soak-minutes`: how long the soak appends (issue 43 asks for 10). */
  soakMinutes: 10,
  /** `--soak-rate`: rows per second the soak offers through the gateway: about 1.3 MB/s of JSON, a steady load well under the ceiling. */
  soakRowsPerSecond: 5_000,
} as const;

export const BENCH_LIMITS = {
  rowsMax: 100_000_000,
  /** The client splits larger calls itself, and the gateway takes up to `LIMITS.appendRowsPerRequestMax` per bucket. */
  batchRowsMax: 100_000,
  concurrencyMax: 256,
  pkKeysMax: 100_000_000,
  /** One bucket's tablet lives on one node's disk and is packed into one snapshot object in memory. */
  restoreKeysMax: 20_000_000,
  /** The optional time cap of one scenario: one day. */
  scenarioSecondsMax: 86_400,
  /** Failed calls a scenario tolerates (counted and reported) before the whole run stops with an error. */
  failedCallsMax: 10,
  /**
   * The scan series hold every reply body until the series has ended, so counting rows does not slow the
   * series down: two million rows are about 600 MB of JSON held at once.
   */
  scanRowsMax: 2_000_000,
  /** Each long poll appends one batch, and each takes an append's ack: ten thousand are over half an hour. */
  longPollsMax: 10_000,
  /**
   * The idempotent and the transactional series each send this many, the consumer keeps two bytes per
   * record of both (times read, partition read from), and the records' keys hold their number in
   * `BENCH_KAFKA.keyBytes` digits: fifty million are about 10 GB of keys and values per series.
   */
  kafkaRecordsMax: 50_000_000,
  /**
   * The first round tiers the whole load, one file of at most `LAKE_LIMITS.parquetSourceBytesMax` (256 MiB)
   * of stored batches at a time per bucket: twenty million rows are about 4.5 GB, many minutes of one worker.
   */
  tieringRowsMax: 20_000_000,
  soakMinutesMax: 24 * 60,
  soakRowsPerSecondMax: 1_000_000,
} as const;

/** Columns of the rows every write scenario sends (a payload column is added for the log table). */
const BENCH_ROW_COLUMNS = [
  { name: 'id', type: 'int64' },
  { name: 'name', type: 'string' },
  { name: 'value', type: 'float64' },
] as const;

/** Characters of the `payload` string of each appended row: the load was `{id, payload string(200)}`. */
export const BENCH_PAYLOAD_CHARS = 200;

/** The log table every mink scenario appends to: about 270 bytes of JSON per row. */
export const BENCH_TABLE = {
  name: 'bench_events',
  columns: [...BENCH_ROW_COLUMNS, { name: 'payload', type: 'string' }],
  bucketKey: ['id'],
  buckets: 8,
} as const;

/**
 * The primary-key table the put and lookup scenarios use: the log table's rows (payload included, so put
 * and append MB/s compare rows of one shape), keyed by id.
 */
export const BENCH_PK_TABLE = {
  name: 'bench_pk',
  columns: [...BENCH_ROW_COLUMNS, { name: 'payload', type: 'string' }],
  primaryKey: ['id'],
  buckets: 8,
} as const;

/** The primary-key table of the restore scenario: one bucket, so all its keys are restored at once by one node. */
export const BENCH_RESTORE_TABLE = {
  name: 'bench_pk_restore',
  columns: BENCH_ROW_COLUMNS,
  primaryKey: ['id'],
  buckets: 1,
} as const;

/**
 * The lookup scenario: single-key calls, then batched calls, each series one at a time and then
 * `--concurrency` in flight, of keys drawn from those the put scenario wrote.
 */
export const BENCH_LOOKUP = {
  singleKeyCalls: 5_000,
  batchKeys: 100,
  batchCalls: 500,
  /** Calls whose request and reply sizes are averaged, to size the NATS request/reply baseline like a lookup. */
  sizedCalls: 100,
} as const;

/**
 * The restore scenario: load the restore table through the client, SIGTERM its leader (which snapshots on
 * its clean close) and time the restore on the next leader, put `keysAfterSnapshot` more keys, then kill -9
 * that leader and time the restore from the snapshot plus the replay of those keys' changelog.
 */
export const BENCH_RESTORE = {
  /** Rows per put call while loading: one PK write batch (`LIMITS.pkBatchOperationsMax`). */
  loadBatchRows: LIMITS.pkBatchOperationsMax,
  /** Put calls in flight while loading; one client queues them per bucket, so more only keeps the pipe full. */
  loadConcurrency: 4,
  keysAfterSnapshot: 10_000,
  /** How often GET /v1/cluster is polled for the bucket open on its new leader. */
  statusPollIntervalMs: 50,
  /** A bucket not open elsewhere this long after a fault ends the scenario: the restore is broken. */
  restoreTimeoutMs: 120_000,
  /** How long the new leader's 'restored PK bucket' line may take to reach its log file. */
  logLineTimeoutMs: 10_000,
  /** Keys of the restore table looked up after each restore, to check it holds what was written. */
  checkedKeys: 1_000,
} as const;

/** The log table of the scan figures: `{id, payload string(200)}`, the load, keyed by id. */
export const BENCH_SCAN_TABLE = {
  name: 'bench_scan',
  columns: [
    { name: 'id', type: 'int64' },
    { name: 'payload', type: 'string' },
  ],
  bucketKey: ['id'],
  buckets: 8,
} as const;

/**
 * A small table with the scan table's schema, scanned right after every restart and before the cold series:
 * the restarted processes run the scan code optimised (as a long-running node does), while the scan table's
 * data stays out of every cache, so the cold series measures cold data, not cold code.
 */
export const BENCH_SCAN_WARMUP_TABLE = { ...BENCH_SCAN_TABLE, name: 'bench_scan_warmup' } as const;

/**
 * Rows appended to the warm-up table (through the gateway, in calls of 1 000) and scans of it per restart.
 * As many rows as the default scan table: the first scan after a restart reads them from S3, so the
 * restarted data nodes have run their S3 GET and page code over as many bytes as the cold series reads.
 * With 24 000 rows (one GET per bucket) that code was still being optimised during the cold series: on
 * this 2-core machine a cold Arrow scan of the 8 buckets took 1.0–1.45 s after such a warm-up and 0.6–1.0 s
 * after a warm-up of 200 000 rows, so the cold figure measured cold code as much as uncached data.
 */
export const BENCH_SCAN_WARMUP = { rows: BENCH_DEFAULTS.scanRows, callRows: 1_000, rounds: 2 } as const;

/**
 * The scan figures (issue "Read path at the speed of S3", item 5): the scan table is loaded through the
 * client's `appendArrow`, compaction is waited for, then each format is scanned through the gateway twice,
 * right after every data node was restarted (cold caches) and again at once (hot), against raw S3 GETs of
 * 1 MiB with as many in flight as scans; then long polls measure how soon a waiting scan hears of an append.
 */
export const BENCH_SCAN = {
  /** Scans in flight, one bucket each; also the in-flight count of the raw GET baseline they are compared with. */
  scansInFlight: 4,
  /** Records asked for per scan request: the most the scan API returns in one reply. */
  pageRecords: 100_000,
  /**
   * Records of the one untimed request per bucket in each format before its data nodes are restarted: the
   * gateway, which is not restarted, has then run that format's code before the cold series, so the first
   * format measured does not pay for warming it up alone.
   */
  warmupPageRecords: 1_000,
  /** Raw S3 GETs of `getBodyBytes` measured, enough for a MB/s that is not one object's luck. */
  getOperations: 200,
  /** A full WAL object (`LIMITS.walFlushBytes`), the size of the GETs a scan of WAL data makes at most. */
  getBodyBytes: LIMITS.walFlushBytes,
  /** How long compaction may take to move the loaded rows into stream objects; a round runs every `LIMITS.compactionIntervalMs`. */
  compactionTimeoutMs: 120_000,
  /** How often the stream objects of the scan table are listed while compaction is waited for. */
  compactionPollIntervalMs: 1_000,
  /** Records each long-poll append writes to the polled bucket. */
  longPollBatchRows: 10,
  /** `wait` of each long poll, the most the scan API holds a request. */
  longPollWaitMs: 30_000,
  /** A long poll not answered this long after it was sent has failed (the wait plus slack for a slow reply). */
  longPollTimeoutMs: 35_000,
  /**
   * The pause between sending a long poll and the append that should wake it: the gateway and the data
   * node must have parked the scan first, and nothing outside them can tell when they have.
   */
  longPollParkMs: 20,
  /** The bucket key of the long polls' rows; the bucket it hashes to is the bucket polled. */
  longPollRowId: -2,
  /** The delivery goal: p99 of the time from an append's ack to the waiting scan's reply. */
  longPollDeliveryP99GoalMs: 50,
  /**
   * Goals as fractions of raw S3 GET MB/s, by format and cache (the scan issue's and issue 43's: Arrow cold
   * ≥ 0.5 ×, warm ≥ 0.8 ×, JSON ≥ 0.1 ×); a series without one has none.
   */
  goals: { arrowColdMin: 0.5, arrowHotMin: 0.8, jsonMin: 0.1 },
} as const;

/** The log table of the tiering figures: the scan table's `{id int64, payload string(200)}`, 8 buckets, created with the lake off. */
export const BENCH_TIERING_TABLE = { ...BENCH_SCAN_TABLE, name: 'bench_tiering' } as const;

/**
 * The tiering figures (issue "`pnpm bench`: tiering MB/s … lake freshness lag"): the tiering table is loaded
 * with the lake off, the lake is enabled (`PATCH /v1/tables/{t}`) and the bench waits until the lake
 * offsets reach the committed ends (throughput against raw S3 GET and PUT); then appends run at a fraction
 * of the load's rows/s while the lake's progress is sampled (freshness lag against the configured freshness).
 */
export const BENCH_TIERING = {
  /** `table.datalake.freshness` set when the lake is enabled: a round is due this long after the last one committed. */
  freshnessMs: 2_000,
  /** Tiering workers of the bench cluster: a round is one table's, so more workers would not tier one table faster. */
  workers: 1,
  /** How often GET /v1/tables/{t} is read while the lake catches up: the catch-up time is known to this much. */
  catchUpPollIntervalMs: 100,
  /** The lake not holding the loaded rows this long after it was enabled ends the tiering figures: tiering is stuck. */
  catchUpTimeoutMs: 300_000,
  /** How long the worker's log may take to show the outcome of a round the lake already shows committed. */
  logLineTimeoutMs: 10_000,
  /** Appends of the freshness series run at this fraction of the load's rows/s (the issue: half the append ceiling). */
  ceilingFraction: 0.5,
  /** The freshness series' duration; `--seconds` caps it further. */
  lagSeconds: 30,
  /** At least this many append calls per second (fewer rows per call than `--batch` at a low rate), so appends are spread evenly. */
  lagCallsPerSecondMin: 10,
  /** How often the lake's progress is sampled during the freshness series. */
  lagSampleIntervalMs: 250,
  /** After the last append, how long the lake may take to hold every acknowledged append. */
  drainTimeoutMs: 60_000,
} as const;

/**
 * The Kafka figures (issue "`pnpm bench`: kafkajs produce and consume MB/s"): kafkajs creates a topic of
 * `partitions` partitions through the data nodes' Kafka listeners, idempotent producers send
 * `--kafka-records` records with acks -1 in sends of about 1 MiB (`recordsPerSend`), each to one
 * partition, partitions in turn, with `--concurrency` sends in flight; transactional producers then send as
 * many again, each send in a transaction of its own (`transactions`); then a read_committed consumer in a
 * new group reads every partition from the beginning. Each produce series' MB/s is compared with raw 1 MiB
 * S3 PUTs at the same in-flight count, its records/s with the floor write path's rows/s, its p99 ack with
 * the write-path bound; consume MB/s with the scan figures' raw 1 MiB GETs, 4 in flight.
 */
export const BENCH_KAFKA = {
  topic: 'bench_kafka',
  partitions: 8,
  /** acks of every produce request: all in-sync replicas, the only acks under which a Kafka producer's record is durable. */
  acks: -1,
  /**
   * Whether the producers are idempotent, as the figure asks: the data nodes must answer
   * InitProducerId, or kafkajs fails to connect an idempotent producer. There is deliberately no fallback.
   */
  idempotent: true,
  keyBytes: KAFKA_KEY_BYTES,
  valueBytes: KAFKA_VALUE_BYTES,
  /** Records of one send, all to one partition: about 1 MiB of keys and values. */
  recordsPerSend: KAFKA_RECORDS_PER_SEND,
  /**
   * kafkajs holds one produce request in flight per broker for an idempotent producer; one producer per
   * send in flight keeps that lock from queueing sends inside the client. More sends in flight than this
   * share producers, and may queue there.
   */
  producersMax: 32,
  /** Records of each untimed warm-up send: one per producer and partition, so every connection is open before the clock starts. */
  warmupRecordsPerSend: 100,
  /**
   * The transactional series (issue 40, item 5): as many producers as the idempotent series, each with a
   * transactional id of its own (`idPrefix`, the run, its index), idempotent with one request in flight as
   * kafkajs requires. A transaction carries `sendsPerTransaction` sends of `recordsPerSend` records, to
   * partitions in turn, one after the other, then commits; with 1 every send pays AddPartitionsToTxn, EndTxn
   * and a commit marker, the most a transaction can cost per record. Each producer first commits one
   * untimed transaction of a warm-up send to every partition: kafkajs asks for its producer id
   * (InitProducerId with the transactional id, after FindCoordinator) only at its first transaction.
   */
  transactions: { idPrefix: 'mink-bench-', sendsPerTransaction: 1 },
  /** The produce request's timeout (how long a leader may take to acknowledge with acks -1), and every kafkajs request's. */
  produceTimeoutMs: 30_000,
  requestTimeoutMs: 30_000,
  /** kafkajs's own retries of a failed request (its default); a retried send shows in the latency, and kafkajs logs the error. */
  clientRetries: 5,
  /** The consumer's fetch max wait: a fetch answered after it found nothing (every record is produced before the consumer starts). */
  consumerMaxWaitMs: 500,
  /** Group ids start with this; each run's group is new, so it has no committed offsets. */
  consumerGroupPrefix: 'bench_kafka_',
  /** Creating the topic until every partition has a leader. */
  createTopicTimeoutMs: 60_000,
  /** A consumer that has not read every record this long after it started has stalled; the series ends with what it read. */
  consumeTimeoutMs: 120_000,
  /**
   * The consume series judged against the goal commits the offsets it has read every this many milliseconds,
   * as the Java consumer and librdkafka do by default (`auto.commit.interval.ms`), and once more at the end.
   * A second series commits after every batch, as kafkajs's `eachBatch` does by default: each commit waits for
   * a WAL object (an S3 PUT and a metadata commit), so that series measures commit latency more than reads.
   */
  consumeCommitIntervalMs: 5_000,
  /** kafkajs error lines printed as progress; the rest are only counted. */
  clientErrorLinesShown: 5,
  /**
   * Goals: the Kafka issue's, produce MB/s at least `produceMin` of raw 1 MiB S3 PUT MB/s at the same in-flight
   * count; issue 43's, produce MB/s at least `produceFloorMin` of the floor write path's MB/s, and consume MB/s
   * at least `consumeMin` of raw 1 MiB S3 GET MB/s.
   */
  goals: { produceMin: 0.5, produceFloorMin: 0.8, consumeMin: 0.8 },
} as const;

/**
 * The cluster `pnpm bench` starts: the shape of `mink up`'s default cluster, with the short lease and tick
 * of the fault tests so a failover trial takes seconds rather than the default 35 s.
 */
export const BENCH_CLUSTER = {
  nodes: 3,
  coordinators: 2,
  leaseTtlMs: 3_000,
  coordinatorTickMs: 500,
  /** Tiering workers ("tiering-1", …): the tiering figures' own count, set explicitly rather than left to LocalCluster's default. */
  tieringWorkers: BENCH_TIERING.workers,
  /** How long the table's buckets may take to be opened by their leaders. */
  bucketsOpenTimeoutMs: 60_000,
  bucketsOpenPollIntervalMs: 250,
} as const;

/**
 * The baselines. S3 bodies bracket the size of mink's WAL objects (`LIMITS.walFlushBytes` is 1 MiB, and a
 * lightly loaded writer flushes smaller objects after its linger); a third size, the average WAL object of
 * the run, is measured after the mink scenarios. The JetStream payload is about the size of a `CommitWal`
 * command.
 */
export const BENCH_BASELINES = {
  s3PutBodySizesBytes: [256 * 1024, LIMITS.walFlushBytes],
  /** PUTs per size and mode (one at a time, then `concurrency` in flight); 100 so that p99 is not simply the maximum. */
  s3PutOperations: 100,
  jetStreamPayloadBytes: 1024,
  /** Publishes per mode. */
  jetStreamPublishOperations: 2_000,
  /** Untimed operations before each measured series, so connection setup is not measured. */
  warmupOperations: 4,
  /**
   * Untimed calls before a measured append or put series, as a share of its measured calls (at least
   * `warmupOperations`): the data nodes compile the code of a path during its first seconds of load, which
   * a long-running cluster has done long before. Measured with 4 warm-up calls: the put series (the first
   * of the bench to run puts) ran its first second at 60-70 % of its rate over the rest; with 20 at 85 %.
   */
  measuredWriteWarmupShare: 0.2,
  /** GETs of an object the size of the restored KV snapshot, one at a time, as a restore downloads it. */
  s3GetOperations: 20,
  /** Keys of the S3 baseline objects; mink never writes under it. */
  s3KeyPrefix: 'bench/',
  /** The temporary stream of the JetStream baseline and the subjects it captures. */
  jetStreamStreamName: 'MINK_BENCH',
  jetStreamSubjectPrefix: 'mink-bench',
  /** Round trips per request/reply series at least (as many as its lookup series made, if more), so its p99 is not its maximum. */
  natsRequestOperationsMin: 2_000,
  /** The subject the raw NATS request/reply responder answers on; mink never uses it. */
  natsRequestSubjectPrefix: 'mink-bench.request',
  /** How long the responder process may take to connect and subscribe. */
  natsResponderReadyTimeoutMs: 10_000,
  /** Reply sizes the responder keeps a body of; the bench asks for two. */
  natsResponderReplySizesMax: 16,
} as const;

/**
 * Memory (issue 43): the resident memory of all mink processes together is sampled this often over the whole
 * run, and compared with what a 3-node cluster should hold together under the bench's load.
 */
export const BENCH_MEMORY = {
  sampleIntervalMs: 1_000,
  togetherGoalBytes: 512 * 1024 * 1024,
} as const;

/** The soak (soak.ts): steady appends through the gateway while mink's memory is sampled. */
export const BENCH_SOAK = {
  /** Rows per append call. */
  batchRows: 100,
  /** Calls in flight at most; a call due beyond them is dropped, and the rate achieved shows it. */
  callsInFlightMax: 16,
  /** How often the pacing loop looks whether calls are due. */
  tickMs: 20,
  sampleIntervalMs: 5_000,
  progressEveryMs: 30_000,
  /** The first minute fills caches and grows V8's heaps: growth is counted from the minute after it ... */
  warmupMs: 60_000,
  /** ... to the last minute, medians of the samples of each window. */
  windowMs: 60_000,
  /** Issue 43's goal: at most 5 % growth over the soak. */
  growthGoal: 0.05,
} as const;

/**
 * The floor write path (write-floor.ts): leader processes that do only what mink's write contract needs
 * (upload an object, publish a commit of a `CommitWal`'s size and await its ack, answer), under the append
 * scenarios' load. One leader per data node of the bench cluster, so the table's buckets spread as they do.
 */
export const BENCH_FLOOR = {
  leaders: BENCH_CLUSTER.nodes,
  /** Bytes of each commit the leaders publish: the JetStream baseline's payload, about a `CommitWal`. */
  commitBytes: BENCH_BASELINES.jetStreamPayloadBytes,
  /** The temporary stream the leaders commit to, and the subjects of the path; mink never uses them. */
  streamName: 'MINK_BENCH_FLOOR',
  subjectPrefix: 'mink-bench.floor',
  /** Keys of the path's objects (under the baselines' prefix, which mink never writes). */
  keyPrefix: `${BENCH_BASELINES.s3KeyPrefix}floor/`,
  /** How long a leader process may take to connect and subscribe. */
  leaderReadyTimeoutMs: 10_000,
} as const;

/**
 * The failover scenario: a probe appends one row at a time to one bucket while that bucket's leader is
 * killed (`kill -9`) or stopped (SIGTERM), `trialsPerFault` times each.
 */
export const BENCH_FAILOVER = {
  trialsPerFault: 3,
  /** Pause of the probe between one acknowledged append and the next call. */
  probeIntervalMs: 20,
  /** Acknowledged appends the probe needs before a fault, so the bucket is known to be served. */
  probeAcknowledgementsBeforeFault: 10,
  /** How long the probe goes on after the first acknowledgement following a fault, to see later gaps. */
  probeAfterRecoveryMs: 1_000,
  /** A bucket still not writable this long after a fault ends the scenario: the failover is broken. */
  recoveryTimeoutMs: 60_000,
  /** The bucket key of the probe's rows; the bucket it hashes to is the bucket measured. */
  probeRowId: -1,
  /**
   * The fault is sent this long after a probe call started, so the call is in flight at the leader when it
   * dies (a request sent just before the kill must not wait out the request timeout).
   */
  faultAfterCallStartMs: 2,
  /** Append loops that keep the whole table under load through each trial (another client than the probe's). */
  loadCallers: 4,
  /** Rows per append of the load, spread over every bucket; each row carries the bench payload. */
  loadRowsPerCall: 100,
} as const;

/**
 * The metadata scenario (issue "Metadata plane under load"): tables of `bucketsPerTable` buckets created
 * through the gateway with `createsInFlight` at a time, as a deployment script creating its topics would,
 * in stages until the bench's tables hold each of `stageBuckets`; after each stage every bucket must open,
 * then the whole cluster is restarted and must open them all again. Every wait has a deadline, so a cluster
 * that falls over ends the stage with its figures so far instead of a hung run.
 */
export const BENCH_METADATA = {
  stageBuckets: [1_600, 16_000],
  /** Live objects per bucket of the view whose CommitWal apply cost is measured after the stages (16 000 buckets: 160 000 objects). */
  applyCostObjectsPerBucket: 10,
  /** Buckets of the view whose CommitWal apply cost is measured with every stream remembering `LIMITS.writersPerStreamMax` writers. */
  applyCostWritersBuckets: 1_000,
  /**
   * A view of this many buckets whose streams hold `applyCostLongHistorySlices` slices each, as a stream does
   * with about 10 GB of history within its retention (compaction packs batches into slices of up to 1 MiB;
   * before it did, one slice per bucket request): what one CommitWal costs every process once a table has
   * a long history (docs/limits.md).
   */
  applyCostLongHistoryBuckets: 8,
  applyCostLongHistorySlices: 10_000,
  /** At most this many buckets in a stage: 6 250 tables of 16. */
  bucketTargetMax: 100_000,
  bucketsPerTable: 16,
  createsInFlight: 10,
  tableNamePrefix: 'bench_meta_',
  columns: [{ name: 'id', type: 'int64' }],
  /** Creating the tables of one stage; `--seconds` caps it further. */
  createTimeoutMs: 900_000,
  /** From the last create until every bucket is open. */
  openTimeoutMs: 600_000,
  /** From starting the processes again until every bucket is open. */
  restartOpenTimeoutMs: 600_000,
  /** GET /v1/cluster of 16 000 buckets asks every node for its status: once a second, not four times. */
  statusPollIntervalMs: 1_000,
  /** How often /metrics of every process and the consumers of the metadata log are read (heartbeats are watched as they come). */
  monitorIntervalMs: 1_000,
  /** One /metrics or JetStream read of the monitor. */
  monitorRequestTimeoutMs: 2_000,
  /** How much of the end of a log file is searched for the fatal line of a process that exited. */
  logTailBytes: 64 * 1024,
} as const;

/** Where mink's WAL objects live in the bucket (docs/architecture.md §5), to measure their count and size per scenario. */
export { WAL_KEY_PREFIX } from '@mink/meta';

/** Where compaction writes stream objects (`streamObjectKey` of @mink/s3stream; the spec checks they agree). */
export const STREAM_KEY_PREFIX = 'streams/';

/** How often a running scenario prints a progress line on stderr. */
export const PROGRESS_INTERVAL_MS = 1_000;
