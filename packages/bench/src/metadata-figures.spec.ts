import { BENCH_METADATA } from './bench-limits';
import { classifyCreateAnswer, epochBumps, HeartbeatGaps, largestSample, memoryPerBucket, metadataRatios, parseStageBuckets, tablesForStage } from './metadata-figures';
import { renderReport } from './report';
import type { BaselineResult, BenchResult, MetadataHealth, MetadataStageResult, ProcessMemory } from './results';
import { summarizeLatencies } from './stats';

const MIB = 1024 * 1024;

describe('classifyCreateAnswer', () => {
  it.each<[string, number, string | null, ReturnType<typeof classifyCreateAnswer>]>([
    ['a create', 201, null, { kind: 'created' }],
    ['admission control asking for 2 s', 503, '2', { kind: 'retry', afterMs: 2_000 }],
    ['a fractional Retry-After', 503, '0.5', { kind: 'retry', afterMs: 500 }],
    ['a 503 without Retry-After', 503, null, { kind: 'failed' }],
    ['a 503 with an empty Retry-After', 503, ' ', { kind: 'failed' }],
    ['a 503 with a date as Retry-After', 503, 'Wed, 21 Oct 2015 07:28:00 GMT', { kind: 'failed' }],
    ['a 503 with Retry-After 0', 503, '0', { kind: 'failed' }],
    ['a conflict', 409, null, { kind: 'failed' }],
    ['a timeout even with Retry-After', 504, '1', { kind: 'failed' }],
  ])('%s', (_case, status, retryAfter, expected) => {
    // Proves only a 503 carrying a usable Retry-After is retried; every other answer but 201 fails the create.
    expect(classifyCreateAnswer(status, retryAfter)).toEqual(expected);
  });
});

describe('tablesForStage', () => {
  it.each<[string, number, number, number]>([
    ['the first stage', 1_600, 0, 100],
    ['the second stage after the first', 16_000, 1_600, 900],
    ['a target between two tables rounds up', 1_601, 0, 101],
    ['a target already reached', 1_600, 1_600, 0],
  ])('%s', (_case, target, already, expected) => {
    // Proves a stage creates just enough tables to reach its bucket count.
    expect(tablesForStage(target, already, 16)).toBe(expected);
  });

  it('refuses tables without buckets', () => {
    expect(() => tablesForStage(16, 0, 0)).toThrow(/positive integer/);
  });
});

describe('parseStageBuckets', () => {
  it('parses increasing bucket counts with blanks', () => {
    // Proves --metadata-buckets takes the documented form.
    expect(parseStageBuckets(' 160, 1600 ,16000')).toEqual([160, 1_600, 16_000]);
  });

  it.each<[string, string, RegExp]>([
    ['nothing', ' , ', /comma-separated/],
    ['a word', '1600,many', /'many' is not a bucket count/],
    ['a fraction', '1600.5', /not a bucket count/],
    ['less than one table', '15', /not a bucket count from 16/],
    ['more than the bound', String(BENCH_METADATA.bucketTargetMax + 1), /not a bucket count/],
    ['a stage that does not grow', '1600,1600', /stages must grow: 1600 follows 1600/],
  ])('refuses %s', (_case, text, message) => {
    expect(() => parseStageBuckets(text)).toThrow(message);
  });
});

describe('epochBumps', () => {
  it.each<[string, { id: string; epoch: number }[], { id: string; epoch: number }[], number]>([
    ['no change', [{ id: '1', epoch: 2 }], [{ id: '1', epoch: 2 }], 0],
    ['two takeovers of one node and one of another', [{ id: '1', epoch: 1 }, { id: '2', epoch: 1 }], [{ id: '1', epoch: 3 }, { id: '2', epoch: 2 }], 3],
    ['a node registered during the stage', [], [{ id: '4', epoch: 1 }], 0],
    ['a node first seen already re-registered', [], [{ id: '4', epoch: 2 }], 1],
  ])('%s', (_case, before, after, expected) => {
    // Proves every epoch a data node gains during a stage is counted, and a first registration is not.
    expect(epochBumps(before, after)).toBe(expected);
  });
});

describe('HeartbeatGaps', () => {
  it('keeps the longest gap between consecutive heartbeats of one key', () => {
    // Proves gaps are per process: two processes beating alternately never make a gap between each other.
    const gaps = new HeartbeatGaps();
    expect(gaps.longest()).toBeNull();
    gaps.record('hb.data-node.1', 1_000);
    gaps.record('hb.data-node.2', 1_300);
    expect(gaps.longest()).toBeNull();
    gaps.record('hb.data-node.1', 1_600);
    gaps.record('hb.data-node.2', 4_300);
    gaps.record('hb.data-node.1', 2_200);
    expect(gaps.longest()).toEqual({ key: 'hb.data-node.2', gapMs: 3_000 });
  });
});

describe('largestSample', () => {
  const exposition = [
    '# HELP nodejs_eventloop_lag_max_seconds The maximum recorded event loop delay.',
    '# TYPE nodejs_eventloop_lag_max_seconds gauge',
    'nodejs_eventloop_lag_max_seconds{role="data-node",node="1"} 0.25',
    'nodejs_eventloop_lag_max_seconds_extra{role="data-node",node="1"} 99',
    'mink_meta_apply_lag_ms{role="data-node",node="1",table="a b}c"} 120 1700000000000',
    'mink_meta_apply_lag_ms 340',
    'mink_meta_apply_lag_ms{role="gateway"} NaN',
  ].join('\n');

  it.each<[string, string, number | null]>([
    ['a labelled gauge', 'nodejs_eventloop_lag_max_seconds', 0.25],
    ['the largest of labelled and unlabelled samples, a timestamp and a brace in a label value', 'mink_meta_apply_lag_ms', 340],
    ['a metric that is not there', 'mink_heartbeat_delay_max_ms', null],
    ['a prefix of another metric only', 'nodejs_eventloop_lag', null],
  ])('reads %s', (_case, name, expected) => {
    // Proves a metric is matched by its whole name, whatever its labels, and unparseable values are skipped.
    expect(largestSample(exposition, name)).toBe(expected);
  });
});

describe('metadataRatios', () => {
  const publishAtTen: BaselineResult = {
    kind: 'jetstream-publish',
    label: 'JetStream publish 1 KiB',
    payloadBytes: 1_024,
    concurrency: BENCH_METADATA.createsInFlight,
    operations: 2_000,
    failures: 0,
    elapsedMs: 1_000,
    operationsPerSecond: 2_000,
    bytesPerSecond: 2_048_000,
    latency: summarizeLatencies([4, 6]),
  };
  const health: MetadataHealth = {
    heartbeatIntervalMs: 600,
    longestHeartbeatGap: { key: 'hb.data-node.3', gapMs: 4_500 },
    longestEventLoopStall: { process: 'data-node 3', ms: 2_000 },
    largestTailBacklogEntries: 3_000,
    longestApplyLagMs: 1_500,
    exposedMetrics: [],
    slowestApply: { process: 'gateway-1', commandsPerSecond: 80 },
    missingMetrics: ['mink_meta_apply_lag_entries'],
    memory: [
      { process: 'coordinator-1', first: { rssBytes: 90 * MIB, heapUsedBytes: 30 * MIB }, last: { rssBytes: 120 * MIB, heapUsedBytes: 42 * MIB } },
      { process: 'data-node 1', first: { rssBytes: 100 * MIB, heapUsedBytes: 32 * MIB }, last: { rssBytes: 150 * MIB, heapUsedBytes: 40 * MIB } },
    ],
  };
  const stage: MetadataStageResult = {
    targetBuckets: 1_600,
    tablesAsked: 100,
    tablesCreated: 100,
    bucketsCreated: 1_600,
    clusterBuckets: 1_600,
    retriedUnavailable: 0,
    failedCreates: 0,
    firstFailureMessage: null,
    createElapsedMs: 20_000,
    tableCreatesPerSecond: 5,
    createLatency: summarizeLatencies([1_000, 3_000]),
    allOpenMs: 40_000,
    bucketsOpenedPerSecond: 40,
    metaLogEntries: 3_300,
    commandsPerTableCreate: 33,
    applyCommandsPerSecond: 82.5,
    health,
    nodes: [{ id: '1', epoch: 1, live: true, buckets: 800 }, { id: '2', epoch: 1, live: true, buckets: 800 }],
    epochBumps: 0,
    takeovers: 0,
    exitedProcesses: [],
    restart: {
      stopMs: 2_000,
      startMs: 5_000,
      allOpenMs: 10_000,
      buckets: 1_600,
      bucketsOpenedPerSecond: 160,
      exitedProcesses: [],
      nodes: [{ id: '1', epoch: 2, live: true, buckets: 0 }, { id: '2', epoch: 2, live: true, buckets: 1_600 }],
      stoppedBecause: null,
    },
    stoppedBecause: null,
  };

  it('states each rate against raw JetStream publishes at the same in-flight count, and each delay against lease_ttl', () => {
    // Proves the figures the issue asks for are printed as ratios of the same run's baseline.
    const exposing: MetadataStageResult = { ...stage, health: { ...health, exposedMetrics: [{ name: 'mink_heartbeat_delay_max_ms', process: 'data-node 1', value: 250 }] } };
    const texts = metadataRatios([exposing], [publishAtTen], 1_024, 3_000).map((ratio) => ratio.text);
    expect(texts).toEqual([
      '1 600 buckets: table creates 5 tables/s = 0.0025 × raw JetStream publishes/s (10 in flight)',
      '1 600 buckets: buckets opened 40 buckets/s = 0.02 × raw JetStream publishes/s (10 in flight)',
      '1 600 buckets: metadata log applied 83 commands/s = 0.04 × raw JetStream publishes/s (10 in flight)',
      '1 600 buckets: slowest process (gateway-1) applied 80 commands/s = 0.04 × raw JetStream publishes/s (10 in flight)',
      '1 600 buckets: buckets reopened after a whole-cluster restart 160 buckets/s = 0.08 × raw JetStream publishes/s (10 in flight)',
      '1 600 buckets: longest heartbeat gap 4.5 s = 1.5 × lease_ttl',
      "1 600 buckets: longest apply lag (oldest entry not yet taken by a process's tail) 1.5 s = 0.50 × lease_ttl",
      '1 600 buckets: longest heartbeat delay past schedule (mink_heartbeat_delay_max_ms) 0.25 s = 0.08 × lease_ttl',
    ]);
  });

  it('leaves out what a stage that fell over did not measure, and rates without their baseline', () => {
    // Proves a partial stage (a process exited before every bucket opened) prints no invented figure.
    const fellOver: MetadataStageResult = { ...stage, allOpenMs: null, bucketsOpenedPerSecond: null, applyCommandsPerSecond: null, restart: null, health: { ...health, longestApplyLagMs: null } };
    expect(metadataRatios([fellOver], [publishAtTen], 1_024, 3_000).map((ratio) => ratio.text)).toEqual([
      '1 600 buckets: table creates 5 tables/s = 0.0025 × raw JetStream publishes/s (10 in flight)',
      '1 600 buckets: slowest process (gateway-1) applied 80 commands/s = 0.04 × raw JetStream publishes/s (10 in flight)',
      '1 600 buckets: longest heartbeat gap 4.5 s = 1.5 × lease_ttl',
    ]);
    expect(metadataRatios([stage], [], 1_024, 3_000).map((ratio) => ratio.text)).toEqual([
      '1 600 buckets: longest heartbeat gap 4.5 s = 1.5 × lease_ttl',
      "1 600 buckets: longest apply lag (oldest entry not yet taken by a process's tail) 1.5 s = 0.50 × lease_ttl",
    ]);
  });

  it('prints each stage in the report: creation and opening, the health of the metadata plane, the restart, and what is not exposed', () => {
    // Proves the stage figures reach the printed report with their units, and a stage that fell over says why.
    const fellOver: MetadataStageResult = {
      ...stage,
      targetBuckets: 16_000,
      tablesAsked: 900,
      tablesCreated: 120,
      allOpenMs: null,
      bucketsOpenedPerSecond: null,
      metaLogEntries: null,
      commandsPerTableCreate: null,
      applyCommandsPerSecond: null,
      epochBumps: 4,
      takeovers: 142,
      exitedProcesses: ['data-node 2 (pid 7) exited; uncaught exception: LogPurgedError: entries 8193..10000 of the metadata log were purged'],
      restart: null,
      stoppedBecause: 'a process exited',
    };
    const result: BenchResult = {
      machine: { cpus: 2, cpuModel: 'test cpu', totalMemoryBytes: 1024 ** 3, platform: 'linux', release: '6', nodeVersion: 'v20.0.0', loadAverageAtStart: 0.5 },
      options: { rows: 1_000, batchRows: 100, concurrency: 8, seconds: null, figures: ['metadata'], pkKeys: 1, restoreKeys: 1, metadataBuckets: [1_600, 16_000], scanRows: 1, longPolls: 1, kafkaRecords: 1, tieringRows: 1, soakMinutes: 10, soakRowsPerSecond: 5_000 },
      cluster: { nodes: 3, coordinators: 2, buckets: 8, leaseTtlMs: 3_000, coordinatorTickMs: 500, dataDir: '/tmp/x', kept: false },
      baselines: [publishAtTen],
      appends: [],
      put: null,
      lookups: [],
      restore: null,
      ratios: [],
      failover: null,
      metadata: { bucketsPerTable: 16, createsInFlight: 10, stages: [stage, fellOver] },
      scan: null,
      kafka: null,
      tiering: null,
      durationMs: 60_000,
      interrupted: false,
    };
    const report = renderReport(result);
    expect(report).toContain('cluster: 3 data nodes, 2 coordinators, lease_ttl 3.0 s, coordinator_tick 0.50 s\n');
    expect(report).toContain('metadata: stages until 1 600, 16 000 buckets');
    expect(report).toMatch(/1 600 +100 \/ 100 +5\.0 +1 000 +3 000 +0 +0 +40 +20 +40 +3 300 +33 +83\n +16 000 +120 \/ 900 +5\.0 +1 000 +3 000 +0 +0 +- +- +- +- +- +-/);
    expect(report).toMatch(/1 600 +4\.5 +hb\.data-node\.3 +2 000 +data-node 3 +3 000 +1\.5 +0 +0 +0\n +16 000 +4\.5 +hb\.data-node\.3 +2 000 +data-node 3 +3 000 +1\.5 +142 +4 +1/);
    expect(report).toMatch(/1 600 +2\.0 +5\.0 +10 +160 +1:800 2:800 +1:0 2:1 600\n +1 600 +- +- +- +- +1:800 2:800 +-/);
    expect(report).toContain('not exposed by any process: mink_meta_apply_lag_entries');
    expect(report).toContain(
      '1 600 buckets: largest process at the end data-node 1, 150 MiB resident (V8 heap in use 40 MiB); heap in use grew most in coordinator-1, by 12 MiB over 1 600 buckets created: 7 864 B per bucket, garbage not yet collected included',
    );
    expect(report).toContain('16 000 buckets: data-node 2 (pid 7) exited; uncaught exception: LogPurgedError');
    expect(report).toContain('16 000 buckets: stage ended short: a process exited');
  });
});

describe('memoryPerBucket', () => {
  const reading = (rssMib: number | null, heapMib: number | null) => ({ rssBytes: rssMib === null ? null : rssMib * MIB, heapUsedBytes: heapMib === null ? null : heapMib * MIB });
  const memory = (process: string, first: [number | null, number | null], last: [number | null, number | null]): ProcessMemory => ({
    process,
    first: reading(...first),
    last: reading(...last),
  });

  it('names the largest process at the end and the largest heap growth per bucket created', () => {
    // Proves the two figures come from different processes when they differ, and the growth is divided by the buckets the stage created.
    const figures = memoryPerBucket([memory('gateway-1', [80, 20], [300, 60]), memory('data-node 2', [90, 20], [400, 50]), memory('coordinator-1', [70, 10], [200, 110])], 100_000);
    expect(figures).toEqual({
      largest: { process: 'data-node 2', rssBytes: 400 * MIB, heapUsedBytes: 50 * MIB },
      heapGrowth: { process: 'coordinator-1', bytes: 100 * MIB, bytesPerBucket: (100 * MIB) / 100_000 },
    });
  });

  it.each<[string, ProcessMemory[], number, boolean, boolean]>([
    ['no process read', [], 1_000, false, false],
    ['no resident memory at the end', [memory('gateway-1', [80, 20], [null, 60])], 1_000, false, false],
    ['a heap that was not read at the start', [memory('gateway-1', [80, null], [300, 60])], 1_000, true, false],
    ['a stage that created no bucket', [memory('gateway-1', [80, 20], [300, 60])], 0, true, false],
  ])('leaves out what it cannot tell: %s', (_case, readings, buckets, hasLargest, hasGrowth) => {
    // Proves a missing reading or an empty stage gives no figure rather than a wrong one (no division by zero).
    const figures = memoryPerBucket(readings, buckets);
    expect([figures !== null, figures?.heapGrowth != null]).toEqual([hasLargest, hasGrowth]);
  });
});
