import { Command } from 'commander';
import { LocalCluster } from '@mink/devcluster';
import { BENCH_DEFAULTS, BENCH_LIMITS } from './bench/bench-limits';
import { renderReport } from './bench/report';
import type { BenchResult } from './bench/results';
import { runBench, type BenchRunOptions, type StartBenchCluster } from './bench/run-bench';
import { CliError, type CliIo } from './io';
import { integerInRange } from './options';
import { renderJson } from './render';

/** The flags of `mink bench` as commander hands them over. */
export interface BenchFlags {
  rows: number;
  batch: number;
  concurrency: number;
  seconds?: number;
  json?: boolean;
  keep?: boolean;
  /** False with `--no-failover`. */
  failover: boolean;
}

/** Runs a benchmark; `runBench` on a real cluster outside tests. */
export type RunBenchmark = (options: BenchRunOptions, io: CliIo) => Promise<BenchResult>;

/** Exit code of a run ended by Ctrl-C, as a shell reports a process killed by SIGINT. */
export const BENCH_INTERRUPTED_EXIT_CODE = 130;

/** The options of one run for the given flags. */
export function benchOptionsFromFlags(flags: BenchFlags): BenchRunOptions {
  return { rows: flags.rows, batchRows: flags.batch, concurrency: flags.concurrency, seconds: flags.seconds ?? null, failover: flags.failover, keep: flags.keep ?? false };
}

/**
 * `mink bench`: starts its own local cluster in a temporary folder, measures raw S3 PUT and JetStream
 * publish baselines and mink's append paths on it, then (unless `--no-failover`) how long one bucket is
 * unavailable when its leader is killed or stopped, prints the figures and their ratios, and stops the
 * cluster. Never part of the tests (DESIGN §9).
 */
export function registerBenchCommand(program: Command, io: CliIo, startCluster?: StartBenchCluster, runBenchmark?: RunBenchmark): void {
  const start: StartBenchCluster = startCluster ?? ((options) => LocalCluster.start(options));
  const benchmark: RunBenchmark = runBenchmark ?? ((options, benchIo) => runBench(options, benchIo, start));
  program
    .command('bench')
    .description('measure append throughput and latency on a temporary local cluster, against raw S3 PUT and JetStream publish baselines of the same run, and bucket failover time')
    .option('--rows <count>', 'rows appended per scenario (gateway, client)', integerInRange(1, BENCH_LIMITS.rowsMax), BENCH_DEFAULTS.rows)
    .option('--batch <rows>', 'rows per append call', integerInRange(1, BENCH_LIMITS.batchRowsMax), BENCH_DEFAULTS.batchRows)
    .option('--concurrency <calls>', 'append calls (and baseline operations) in flight', integerInRange(1, BENCH_LIMITS.concurrencyMax), BENCH_DEFAULTS.concurrency)
    .option('--seconds <seconds>', 'stop each scenario after this many seconds, even if rows remain', integerInRange(1, BENCH_LIMITS.scenarioSecondsMax))
    .option('--no-failover', 'skip the failover scenario (kill -9 and SIGTERM of a bucket leader)')
    .option('--json', 'print the result object as JSON')
    .option('--keep', 'keep the temporary folder (cluster data, S3 objects, logs)')
    .action(async (flags: BenchFlags) => {
      const result = await benchmark(benchOptionsFromFlags(flags), io);
      io.writeOut(flags.json ? renderJson(result) : renderReport(result));
      if (result.interrupted) throw new CliError('interrupted: the figures above are partial', BENCH_INTERRUPTED_EXIT_CODE);
    });
}
