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

/** The cluster `mink bench` starts: the shape of `mink up`'s default cluster. */
export const BENCH_CLUSTER = {
  nodes: 3,
  coordinators: 2,
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

/** Where mink's WAL objects live in the bucket (DESIGN §4), to measure their count and size per scenario. */
export const WAL_KEY_PREFIX = 'wal/';

/** How often a running scenario prints a progress line on stderr. */
export const PROGRESS_INTERVAL_MS = 1_000;
