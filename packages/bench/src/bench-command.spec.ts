import type { CliIo } from '@mink/cli';
import { BENCH_INTERRUPTED_EXIT_CODE, buildBenchProgram, runBenchCommand, type RunBenchmark } from './bench-command';
import type { BenchResult } from './results';
import type { BenchRunOptions } from './run-bench';

/** A result with no figures, enough for the command to print. */
function emptyResult(options: BenchRunOptions, interrupted = false): BenchResult {
  return {
    machine: { cpus: 2, cpuModel: 'test cpu', totalMemoryBytes: 1024 ** 3, platform: 'linux', release: '6', nodeVersion: 'v20.0.0', loadAverageAtStart: 0.5 },
    options: {
      rows: options.rows,
      batchRows: options.batchRows,
      concurrency: options.concurrency,
      seconds: options.seconds,
      figures: options.figures,
      pkKeys: options.pkKeys,
      restoreKeys: options.restoreKeys,
      metadataBuckets: options.metadataBuckets,
      scanRows: options.scanRows,
      longPolls: options.longPolls,
      kafkaRecords: options.kafkaRecords,
      tieringRows: options.tieringRows,
      soakMinutes: options.soakMinutes,
      soakRowsPerSecond: options.soakRowsPerSecond,
    },
    cluster: { nodes: 3, coordinators: 2, buckets: 8, leaseTtlMs: 3_000, coordinatorTickMs: 500, dataDir: '/tmp/x', kept: options.keep },
    baselines: [],
    appends: [],
    put: null,
    lookups: [],
    restore: null,
    ratios: [],
    failover: null,
    metadata: null,
    scan: null,
    kafka: null,
    tiering: null,
    durationMs: 1_000,
    interrupted,
  };
}

/** Parses `args` with the bench program, recording the options the benchmark would run with. */
async function parseBench(args: string[], interrupted = false): Promise<{ options: BenchRunOptions[]; stdout: string; stderr: string; error: unknown }> {
  let stdout = '';
  let stderr = '';
  const options: BenchRunOptions[] = [];
  const io: CliIo = { writeOut: (text) => void (stdout += text), writeError: (text) => void (stderr += text), env: {}, fetch: () => Promise.reject(new Error('no network in this test')) };
  const runBenchmark: RunBenchmark = async (benchOptions) => {
    options.push(benchOptions);
    return emptyResult(benchOptions, interrupted);
  };
  const program = buildBenchProgram(io, undefined, runBenchmark);
  let error: unknown = null;
  try {
    await program.parseAsync(args, { from: 'user' });
  } catch (caught) {
    error = caught;
  }
  return { options, stdout, stderr, error };
}

describe('mink-bench options', () => {
  it.each<[string, string[], Partial<BenchRunOptions>]>([
    [
      'the defaults',
      [],
      {
        rows: 200_000,
        batchRows: 1_000,
        concurrency: 8,
        seconds: null,
        figures: ['append', 'pk', 'kafka', 'scan', 'tiering', 'failover'],
        pkKeys: 100_000,
        restoreKeys: 1_000_000,
        metadataBuckets: [1_600, 16_000],
        scanRows: 200_000,
        longPolls: 200,
        kafkaRecords: 129_792,
        tieringRows: 200_000,
        soakMinutes: 10,
        soakRowsPerSecond: 5_000,
        keep: false,
      },
    ],
    [
      'every flag',
      [
        '--rows', '50000', '--batch', '500', '--concurrency', '4', '--seconds', '30', '--keep', '--no-failover', '--pk-keys', '2000', '--restore-keys', '30000',
        '--scan-rows', '50000', '--long-polls', '50', '--kafka-records', '100000', '--tiering-rows', '30000', '--soak-minutes', '3', '--soak-rate', '2000',
      ],
      {
        rows: 50_000,
        batchRows: 500,
        concurrency: 4,
        seconds: 30,
        figures: ['append', 'pk', 'kafka', 'scan', 'tiering'],
        pkKeys: 2_000,
        restoreKeys: 30_000,
        scanRows: 50_000,
        longPolls: 50,
        kafkaRecords: 100_000,
        tieringRows: 30_000,
        soakMinutes: 3,
        soakRowsPerSecond: 2_000,
        keep: true,
      },
    ],
    ['a batch larger than the rows', ['--rows', '10', '--batch', '100'], { rows: 10, batchRows: 100 }],
    ['--only pk', ['--only', 'pk'], { figures: ['pk'] }],
    ['--only scan, as the read-path issue runs it', ['--only', 'scan', '--scan-rows', '50000', '--long-polls', '50'], { figures: ['scan'], scanRows: 50_000, longPolls: 50 }],
    ['--only scan among others, run before failover', ['--only', 'failover,scan,append'], { figures: ['append', 'scan', 'failover'] }],
    ['--only in any order and with blanks, run in the fixed order', ['--only', 'failover, append'], { figures: ['append', 'failover'] }],
    ['--only kafka, as the Kafka issue runs it', ['--only', 'kafka'], { figures: ['kafka'], kafkaRecords: 129_792 }],
    ['--only kafka among others, run after the PK figures and before the scans', ['--only', 'scan,kafka,pk'], { figures: ['pk', 'kafka', 'scan'] }],
    ['--only tiering, as the tiering issue runs it', ['--only', 'tiering'], { figures: ['tiering'], tieringRows: 200_000 }],
    ['--only tiering among others, run after the scans and before failover', ['--only', 'failover,tiering,scan'], { figures: ['scan', 'tiering', 'failover'] }],
    ['--only soak, which the defaults leave out, run after tiering and before failover', ['--only', 'failover,soak,tiering'], { figures: ['tiering', 'soak', 'failover'] }],
    ['--only with --no-failover', ['--only', 'pk,failover', '--no-failover'], { figures: ['pk'] }],
    ['--only metadata, which the defaults leave out', ['--only', 'metadata'], { figures: ['metadata'], metadataBuckets: [1_600, 16_000] }],
    ['smaller metadata stages', ['--only', 'metadata', '--metadata-buckets', '160, 480'], { figures: ['metadata'], metadataBuckets: [160, 480] }],
    ['--profile, which keeps the folder the profiles are written to', ['--profile'], { profile: true, keep: true }],
    ['--s3-latency as a fixed delay', ['--only', 'append', '--s3-latency', '20ms'], { figures: ['append'], s3Latency: { medianMs: 20, p99Ms: 20 } }],
    ['--s3-latency with a tail', ['--s3-latency', '20ms:80ms'], { s3Latency: { medianMs: 20, p99Ms: 80 } }],
  ])('parses %s', async (_case, args, expected) => {
    // Proves each flag reaches the run under its name, with the documented defaults.
    const result = await parseBench(args);
    expect(result.error).toBeNull();
    expect(result.options).toEqual([expect.objectContaining(expected)]);
  });

  it.each<[string, string[]]>([
    ['zero rows', ['--rows', '0']],
    ['a fractional batch', ['--batch', '1.5']],
    ['a concurrency above the bound', ['--concurrency', '100000']],
    ['a duration instead of seconds', ['--seconds', '5s']],
    ['an operand', ['extra']],
    ['zero PK keys', ['--pk-keys', '0']],
    ['restore keys above the bound', ['--restore-keys', '100000000']],
    ['an unknown group of figures', ['--only', 'pk,lookups']],
    ['an empty --only', ['--only', ',']],
    ['--only failover with --no-failover', ['--only', 'failover', '--no-failover']],
    ['metadata stages that do not grow', ['--metadata-buckets', '1600,1600']],
    ['a metadata stage smaller than one table', ['--metadata-buckets', '8']],
    ['zero scan rows', ['--scan-rows', '0']],
    ['scan rows above the bound', ['--scan-rows', '2000001']],
    ['zero long polls', ['--long-polls', '0']],
    ['long polls above the bound', ['--long-polls', '10001']],
    ['zero Kafka records', ['--kafka-records', '0']],
    ['Kafka records above the bound', ['--kafka-records', '50000001']],
    ['zero tiering rows', ['--tiering-rows', '0']],
    ['tiering rows above the bound', ['--tiering-rows', '20000001']],
    ['an S3 latency that is not a duration', ['--s3-latency', 'slow']],
    ['an S3 latency whose p99 is below its median', ['--s3-latency', '80ms:20ms']],
  ])('refuses %s with exit code 2 before starting anything', async (_case, args) => {
    // Proves a bad command line never starts a cluster (the test's startCluster would throw) and exits 2.
    const stderr: string[] = [];
    const io: CliIo = { writeOut: () => undefined, writeError: (text) => void stderr.push(text), env: {}, fetch: () => Promise.reject(new Error('no network')) };
    const startCluster = (): Promise<never> => Promise.reject(new Error('the test must not start a cluster'));
    expect(await runBenchCommand(args, io, startCluster)).toBe(2);
    expect(stderr.join('')).toMatch(/error:/);
  });

  it('prints the result as JSON with --json', async () => {
    // Proves --json leaves stdout to one parseable result object.
    const result = await parseBench(['--json', '--rows', '5']);
    expect(JSON.parse(result.stdout)).toEqual(
      expect.objectContaining({
        options: {
          rows: 5,
          batchRows: 1_000,
          concurrency: 8,
          seconds: null,
          figures: ['append', 'pk', 'kafka', 'scan', 'tiering', 'failover'],
          pkKeys: 100_000,
          restoreKeys: 1_000_000,
          metadataBuckets: [1_600, 16_000],
          scanRows: 200_000,
          longPolls: 200,
          kafkaRecords: 129_792,
          tieringRows: 200_000,
          soakMinutes: 10,
          soakRowsPerSecond: 5_000,
        },
        kafka: null,
        tiering: null,
      }),
    );
  });

  it('prints the report and fails with 130 when the run was interrupted', async () => {
    // Proves partial figures are still printed, and the exit code tells a script the run did not finish.
    const result = await parseBench([], true);
    expect(result.stdout).toMatch(/machine: 2 cpus \(test cpu\)/);
    expect(result.error).toEqual(expect.objectContaining({ exitCode: BENCH_INTERRUPTED_EXIT_CODE }));
  });
});
