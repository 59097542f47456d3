import { Command, InvalidArgumentError } from 'commander';
import { CliError, commaSeparated, integerInRange, processIo, renderJson, runProgram, UsageError, type CliIo } from '@mink/cli';
import { LocalCluster, parseS3Latency, type S3Latency } from '@mink/devcluster';
import { BENCH_DEFAULTS, BENCH_KAFKA, BENCH_LIMITS, BENCH_METADATA, BENCH_RESTORE, BENCH_SOAK } from './bench-limits';
import { parseStageBuckets } from './metadata-figures';
import { renderReport } from './report';
import { BENCH_FIGURES, DEFAULT_BENCH_FIGURES, type BenchFigures, type BenchResult } from './results';
import { runBench, type BenchRunOptions, type StartBenchCluster } from './run-bench';

/** The flags of `mink-bench` (`pnpm bench`) as commander hands them over. */
export interface BenchFlags {
  rows: number;
  batch: number;
  concurrency: number;
  pkKeys: number;
  restoreKeys: number;
  seconds?: number;
  /** The groups of figures named by `--only`; `DEFAULT_BENCH_FIGURES` when absent. */
  only?: BenchFigures[];
  /** `--metadata-buckets`: the bucket count of each metadata stage. */
  metadataBuckets: number[];
  /** `--scan-rows`: rows appended to the scan table, then scanned in each format. */
  scanRows: number;
  /** `--long-polls`: long polls of the delivery series. */
  longPolls: number;
  /** `--kafka-records`: records the Kafka producers send, which the consumer then reads. */
  kafkaRecords: number;
  /** `--tiering-rows`: rows loaded into the tiering table before its lake is enabled. */
  tieringRows: number;
  /** `--soak-minutes` and `--soak-rate`: how long the soak appends, and how many rows a second it offers. */
  soakMinutes: number;
  soakRate: number;
  json?: boolean;
  keep?: boolean;
  profile?: boolean;
  /** False with `--no-failover`. */
  failover: boolean;
  /** `--s3-latency`: a first-byte latency the S3 server adds to every answer. */
  s3Latency?: S3Latency;
}

/** Runs a benchmark; `runBench` on a real cluster outside tests. */
export type RunBenchmark = (options: BenchRunOptions, io: CliIo) => Promise<BenchResult>;

/** Exit code of a run ended by Ctrl-C, as a shell reports a process killed by SIGINT. */
export const BENCH_INTERRUPTED_EXIT_CODE = 130;

/** Parses `--only`: a comma-separated list of groups of figures, e.g. "pk" or "append,failover". */
export function parseFigures(text: string): BenchFigures[] {
  const names = commaSeparated(text);
  const unknown = names.filter((name) => !(BENCH_FIGURES as readonly string[]).includes(name));
  if (names.length === 0 || unknown.length > 0) throw new InvalidArgumentError(`expected a comma-separated list of ${BENCH_FIGURES.join(', ')}.`);
  return names as BenchFigures[];
}

/** Parses `--s3-latency`, as commander wants a parse error. */
export function parseS3LatencyOption(text: string): S3Latency {
  try {
    return parseS3Latency(text);
  } catch (error) {
    throw new InvalidArgumentError(`${(error as Error).message}.`);
  }
}

/** Parses `--metadata-buckets`, e.g. "1600,16000", as commander wants a parse error. */
export function parseMetadataBuckets(text: string): number[] {
  try {
    return parseStageBuckets(text);
  } catch (error) {
    throw new InvalidArgumentError(`${(error as Error).message}.`);
  }
}

/**
 * The options of one run for the given flags: the groups of `--only` (all but metadata by default) in run
 * order, less failover with `--no-failover`. A selection left empty is a usage error.
 */
export function benchOptionsFromFlags(flags: BenchFlags): BenchRunOptions {
  const named = flags.only ?? DEFAULT_BENCH_FIGURES;
  const figures = BENCH_FIGURES.filter((group) => named.includes(group) && (group !== 'failover' || flags.failover));
  if (figures.length === 0) throw new UsageError('--only failover with --no-failover leaves nothing to measure');
  return {
    rows: flags.rows,
    batchRows: flags.batch,
    concurrency: flags.concurrency,
    seconds: flags.seconds ?? null,
    figures,
    pkKeys: flags.pkKeys,
    restoreKeys: flags.restoreKeys,
    metadataBuckets: flags.metadataBuckets,
    scanRows: flags.scanRows,
    longPolls: flags.longPolls,
    kafkaRecords: flags.kafkaRecords,
    tieringRows: flags.tieringRows,
    soakMinutes: flags.soakMinutes,
    soakRowsPerSecond: flags.soakRate,
    ...(flags.s3Latency ? { s3Latency: flags.s3Latency } : {}),
    // Profiles are written into the run's folder, which is then kept.
    keep: (flags.keep ?? false) || (flags.profile ?? false),
    profile: flags.profile ?? false,
  };
}

/**
 * `mink-bench` (`pnpm bench`): starts its own local cluster in a temporary folder, measures raw S3 PUT
 * and JetStream publish baselines and mink's append paths on it; primary-key puts, lookups (against raw NATS
 * request/reply) and the restore of a bucket of many keys (against raw S3 GET); scans of a compacted table
 * in JSON, NDJSON and Arrow, cold and hot, against raw S3 GET, and how soon a waiting scan hears of an
 * append; kafkajs produce and consume MB/s through the data nodes' Kafka listeners against raw S3 PUT and
 * GET; tiering of a loaded table into the Iceberg lake against raw S3 GET and PUT, and the lake's freshness lag while appends run at half
 * the append ceiling; then how long one bucket is unavailable when its leader is killed or stopped; prints the figures and their ratios, and stops the
 * cluster. `--only` selects groups of figures; `--only metadata` creates tables of 16 buckets, 10 at a time,
 * until 1 600 and then 16 000 buckets, and times how long they and a whole-cluster restart take to open.
 * Never part of the tests (docs/architecture.md §13). Output goes through `io`, and commander never exits the process
 * itself (exitOverride), so `runBenchCommand` decides every exit code and tests can drive it in-process.
 */
export function buildBenchProgram(io: CliIo = processIo(), startCluster?: StartBenchCluster, runBenchmark?: RunBenchmark): Command {
  const start: StartBenchCluster = startCluster ?? ((options) => LocalCluster.start(options));
  const benchmark: RunBenchmark = runBenchmark ?? ((options, benchIo) => runBench(options, benchIo, start));
  return new Command('mink-bench')
    .exitOverride()
    .allowExcessArguments(false)
    .configureOutput({ writeOut: (text) => io.writeOut(text), writeErr: (text) => io.writeError(text) })
    .description(
      'measure append and primary-key put throughput and latency, lookup latency, PK bucket restore time, Kafka produce and consume throughput, ' +
        'scan throughput and long-poll delivery, tiering throughput and lake freshness lag on a temporary local cluster, against raw S3 PUT/GET, JetStream publish and NATS request/reply ' +
        'baselines of the same run, and bucket failover time',
    )
    .option('--rows <count>', 'rows appended per append scenario (gateway, client)', integerInRange(1, BENCH_LIMITS.rowsMax), BENCH_DEFAULTS.rows)
    .option('--batch <rows>', 'rows per append or put call', integerInRange(1, BENCH_LIMITS.batchRowsMax), BENCH_DEFAULTS.batchRows)
    .option('--concurrency <calls>', 'append, put and lookup calls (and baseline operations) in flight', integerInRange(1, BENCH_LIMITS.concurrencyMax), BENCH_DEFAULTS.concurrency)
    .option('--pk-keys <count>', 'new keys put into the 8-bucket primary-key table, which the lookups then read', integerInRange(1, BENCH_LIMITS.pkKeysMax), BENCH_DEFAULTS.pkKeys)
    .option(
      '--restore-keys <count>',
      `keys loaded into a 1-bucket primary-key table whose restore on a new leader is timed (then ${BENCH_RESTORE.keysAfterSnapshot} more to replay)`,
      integerInRange(1, BENCH_LIMITS.restoreKeysMax),
      BENCH_DEFAULTS.restoreKeys,
    )
    .option(
      '--scan-rows <count>',
      'rows appended to the 8-bucket scan table, then scanned as JSON, NDJSON and Arrow',
      integerInRange(1, BENCH_LIMITS.scanRowsMax),
      BENCH_DEFAULTS.scanRows,
    )
    .option(
      '--long-polls <count>',
      'scans waiting at the high watermark of one bucket, each woken by an append, whose delivery after the ack is timed',
      integerInRange(1, BENCH_LIMITS.longPollsMax),
      BENCH_DEFAULTS.longPolls,
    )
    .option(
      '--kafka-records <count>',
      `records (${BENCH_KAFKA.keyBytes}-byte key, ${BENCH_KAFKA.valueBytes}-byte value) kafkajs produces to an ${BENCH_KAFKA.partitions}-partition topic in sends of about 1 MiB, then consumes`,
      integerInRange(1, BENCH_LIMITS.kafkaRecordsMax),
      BENCH_DEFAULTS.kafkaRecords,
    )
    .option(
      '--tiering-rows <count>',
      'rows loaded into the 8-bucket tiering table with the lake off; the lake is then enabled and its catch-up timed',
      integerInRange(1, BENCH_LIMITS.tieringRowsMax),
      BENCH_DEFAULTS.tieringRows,
    )
    .option(
      '--soak-minutes <minutes>',
      `soak (--only soak): append through the gateway this long (${BENCH_SOAK.batchRows}-row calls) while mink's resident memory is sampled`,
      integerInRange(1, BENCH_LIMITS.soakMinutesMax),
      BENCH_DEFAULTS.soakMinutes,
    )
    .option('--soak-rate <rows>', 'soak: rows per second offered through the gateway', integerInRange(1, BENCH_LIMITS.soakRowsPerSecondMax), BENCH_DEFAULTS.soakRowsPerSecond)
    .option('--seconds <seconds>', 'stop each scenario after this many seconds, even if rows remain', integerInRange(1, BENCH_LIMITS.scenarioSecondsMax))
    .option('--only <figures>', `measure only these comma-separated groups of figures: ${BENCH_FIGURES.join(', ')} (default: ${DEFAULT_BENCH_FIGURES.join(', ')})`, parseFigures)
    .option(
      '--metadata-buckets <counts>',
      `metadata stages: create tables of ${BENCH_METADATA.bucketsPerTable} buckets until each of these comma-separated bucket counts`,
      parseMetadataBuckets,
      [...BENCH_METADATA.stageBuckets],
    )
    .option('--no-failover', 'skip the failover scenario (kill -9 and SIGTERM of a bucket leader)')
    .option(
      '--s3-latency <median[:p99]>',
      'hold back every answer of the S3 server by this first-byte latency, fixed (20ms) or log-normal (20ms:80ms), as a cloud object store answers; the report adds ack p50/p99 against the goal and published figures',
      parseS3LatencyOption,
    )
    .option('--json', 'print the result object as JSON')
    .option('--keep', 'keep the temporary folder (cluster data, S3 objects, logs)')
    .option('--profile', 'run every mink process under node --cpu-prof; the profiles go to profiles/ in the kept folder')
    .action(async (flags: BenchFlags) => {
      const result = await benchmark(benchOptionsFromFlags(flags), io);
      io.writeOut(flags.json ? renderJson(result) : renderReport(result));
      if (result.interrupted) throw new CliError('interrupted: the figures above are partial', BENCH_INTERRUPTED_EXIT_CODE);
    });
}

/**
 * Runs the bench on `args` (without the node and script paths) and returns the exit code, as `mink` does:
 * 0 on success and for --help, 1 when the run failed, 2 when the command line is wrong (before anything is
 * started), 130 when the run was interrupted. A `--` forwarded by `pnpm bench -- --rows 5` is dropped.
 */
export function runBenchCommand(args: string[], io: CliIo = processIo(), startCluster?: StartBenchCluster, runBenchmark?: RunBenchmark): Promise<number> {
  return runProgram(() => buildBenchProgram(io, startCluster, runBenchmark), args, io);
}
