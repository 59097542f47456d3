import { LIMITS } from '@mink/config';

/**
 * Every default and bound of `mink bench` in one place. The bounds keep a typo on the command line from
 * asking for a run that would fill the disk or never end; the defaults give a run of a few minutes on a
 * two-core machine.
 */
export const BENCH_DEFAULTS = {
  /** Rows appended per mink scenario (gateway, client). */
  rows: 200_000,
  /** Rows per append call. */
  batchRows: 1_000,
  /** Append calls (and baseline operations) in flight at once. */
  concurrency: 8,
} as const;

export const BENCH_LIMITS = {
  rowsMax: 100_000_000,
  /** The client splits larger calls itself, and the gateway takes up to `LIMITS.appendRowsPerRequestMax` per bucket. */
  batchRowsMax: 100_000,
  concurrencyMax: 256,
  /** The optional time cap of one scenario: one day. */
  scenarioSecondsMax: 86_400,
  /** Failed calls a scenario tolerates (counted and reported) before the whole run stops with an error. */
  failedCallsMax: 10,
} as const;

/** The log table every mink scenario appends to. */
export const BENCH_TABLE = {
  name: 'bench_events',
  columns: [
    { name: 'id', type: 'int64' },
    { name: 'name', type: 'string' },
    { name: 'value', type: 'float64' },
  ],
  bucketKey: ['id'],
  buckets: 8,
} as const;

/**
 * The cluster `mink bench` starts: the shape of `mink up`'s default cluster, with the short lease and tick
 * of the fault tests so a failover trial takes seconds rather than the default 35 s.
 */
export const BENCH_CLUSTER = {
  nodes: 3,
  coordinators: 2,
  leaseTtlMs: 3_000,
  coordinatorTickMs: 500,
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
  /** Keys of the S3 baseline objects; mink never writes under it. */
  s3KeyPrefix: 'bench/',
  /** The temporary stream of the JetStream baseline and the subjects it captures. */
  jetStreamStreamName: 'MINK_BENCH',
  jetStreamSubjectPrefix: 'mink-bench',
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
} as const;

/** Where mink's WAL objects live in the bucket (DESIGN §4), to measure their count and size per scenario. */
export const WAL_KEY_PREFIX = 'wal/';

/** How often a running scenario prints a progress line on stderr. */
export const PROGRESS_INTERVAL_MS = 1_000;
