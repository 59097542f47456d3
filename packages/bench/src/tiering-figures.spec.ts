import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BaselineResult, FreshnessLagResult, TieringCatchUpResult, TieringResult, TieringRoundLog, WriteScenarioResult } from './results';
import { summarizeLatencies } from './stats';
import {
  checkCaughtUp,
  lagSeriesPlan,
  pacedCallStartMs,
  parseLakeProgress,
  parseTieringRounds,
  recordsBehind,
  roundsSettled,
  s3TieringBoundBytesPerSecond,
  lagHalvesP50Ms,
  summarizeLag,
  summarizeRounds,
  tieredPrefix,
  tieringRatios,
  TIERING_LOG_MESSAGES,
  type AcknowledgedAppend,
  type LakeProgress,
} from './tiering-figures';

const MIB = 1024 * 1024;
const T0 = Date.parse('2026-12-01T10:00:00.000Z');

/** A `GET /v1/tables/{t}` body of a 2-bucket table with the given committed ends and, when given, a lake. */
function description(ends: number[], lake?: object): object {
  return {
    name: 't',
    bucketLeaders: ends.map((endOffset, bucket) => ({ bucket, leader: '1', leaderEpoch: 1, stream: { state: 'open', epoch: 1, node: '1', startOffset: 0, endOffset } })),
    ...(lake === undefined ? {} : { lake }),
  };
}

describe('parseLakeProgress', () => {
  it.each<[string, object, LakeProgress]>([
    [
      'a table whose lake was never started: every lake offset 0',
      description([5, 7]),
      { committedEnds: [5, 7], lakeOffsets: [0, 0], tieringEpoch: 0, tieredAtMs: null, round: null },
    ],
    [
      'a lake with a committed round and another in progress',
      description([5, 7], {
        metadataKey: 'lake/t/metadata/v2-t1r2.metadata.json',
        snapshotId: '9',
        offsets: [
          { bucket: 0, offset: 5 },
          { bucket: 1, offset: 3 },
        ],
        tieredAt: new Date(T0).toISOString(),
        tieringEpoch: 3,
        round: { tieringEpoch: 3, worker: 'tiering-1', startedAt: new Date(T0 + 2_500).toISOString(), ranges: [] },
      }),
      { committedEnds: [5, 7], lakeOffsets: [5, 3], tieringEpoch: 3, tieredAtMs: T0, round: { tieringEpoch: 3, startedAtMs: T0 + 2_500 } },
    ],
    [
      'a lake started but not yet committed',
      description([5, 7], { metadataKey: null, snapshotId: null, offsets: [{ bucket: 0, offset: 0 }], tieredAt: null, tieringEpoch: 1, round: null }),
      { committedEnds: [5, 7], lakeOffsets: [0, 0], tieringEpoch: 1, tieredAtMs: null, round: null },
    ],
  ])('reads %s', (_case, body, expected) => {
    // Proves the catch-up and the freshness samples read each bucket's committed end and lake offset as the gateway shows them.
    expect(parseLakeProgress(body, 2)).toEqual(expected);
  });

  it.each<[string, unknown]>([
    ['no body', null],
    ['no bucketLeaders', { name: 't' }],
    ['a bucket missing', description([5])],
    ['a bucket beyond the table', description([5, 7, 9])],
    ['a negative end', description([5, -1])],
    ['a lake without offsets', description([5, 7], { tieringEpoch: 1 })],
    ['a lake offset of a bucket beyond the table', description([5, 7], { offsets: [{ bucket: 2, offset: 1 }], tieringEpoch: 1 })],
    ['a tieredAt that is not a time', description([5, 7], { offsets: [], tieringEpoch: 1, tieredAt: 'yesterday' })],
    ['a round without a start', description([5, 7], { offsets: [], tieringEpoch: 1, round: { tieringEpoch: 1 } })],
  ])('refuses %s', (_case, body) => {
    // Proves a description the bench cannot read stops it rather than yielding a made-up progress.
    expect(() => parseLakeProgress(body, 2)).toThrow();
  });
});

describe('recordsBehind and checkCaughtUp', () => {
  const progress = (committedEnds: number[], lakeOffsets: number[]): LakeProgress => ({ committedEnds, lakeOffsets, tieringEpoch: 1, tieredAtMs: T0, round: null });

  it.each<[string, LakeProgress, number]>([
    ['a lake not started', progress([5, 7], [0, 0]), 12],
    ['a lake part of the way', progress([5, 7], [5, 3]), 4],
    ['a lake caught up', progress([5, 7], [5, 7]), 0],
  ])('counts the records %s lacks', (_case, lake, expected) => {
    // Proves the catch-up ends exactly when every bucket's lake offset reaches its committed end.
    expect(recordsBehind(lake)).toBe(expected);
  });

  it.each<[string, LakeProgress, number[], RegExp | null]>([
    ['lake, committed ends and acknowledgements agree', progress([5, 7], [5, 7]), [5, 7], null],
    ['a lake offset short of the committed end', progress([5, 7], [5, 6]), [5, 7], /bucket 1: the lake offset is 6, the committed end 7/],
    ['a committed end beyond the acknowledged rows (a failed call was written)', progress([5, 8], [5, 8]), [5, 7], /bucket 1: the committed end is 8, but the appends were acknowledged up to 7/],
  ])('checks %s', (_case, lake, ackedEnds, expected) => {
    // Proves the catch-up's MB/s is only given a ratio when the lake holds exactly the rows the load wrote.
    const failure = checkCaughtUp(lake, ackedEnds);
    if (expected === null) expect(failure).toBeNull();
    else expect(failure).toMatch(expected);
  });
});

describe('tieredPrefix', () => {
  const appends: AcknowledgedAppend[] = [
    { ackedAtMs: 10, parts: [{ bucket: 0, endOffset: 100 }, { bucket: 1, endOffset: 50 }] },
    { ackedAtMs: 20, parts: [{ bucket: 1, endOffset: 120 }] },
    { ackedAtMs: 30, parts: [{ bucket: 0, endOffset: 150 }] },
  ];

  it.each<[string, number, number[], number]>([
    ['nothing tiered', 0, [0, 0], 0],
    ['the first append in both its buckets', 0, [100, 50], 1],
    ['the first append in one of its buckets only', 0, [100, 49], 0],
    ['every append', 0, [150, 120], 3],
    ['a later append held while an earlier one is not: the watermark stays', 0, [150, 50], 1],
    ['from a prefix known to be held', 1, [150, 120], 3],
    ['a bucket the lake does not list counts as offset 0', 0, [100], 0],
  ])('counts %s', (_case, from, lakeOffsets, expected) => {
    // Proves the lag is measured from the newest append the lake holds together with every earlier one, never from a later one that overtook it.
    expect(tieredPrefix(appends, from, lakeOffsets)).toBe(expected);
  });

  it.each<[string, number]>([
    ['a negative start', -1],
    ['a start beyond the appends', 4],
  ])('refuses %s', (_case, from) => {
    // Proves a broken cursor is a bug of the sampler, not a lag.
    expect(() => tieredPrefix(appends, from, [0, 0])).toThrow();
  });
});

describe('lagSeriesPlan and pacedCallStartMs', () => {
  it.each<[string, [number, number, number, number, number], { targetRowsPerSecond: number; rowsPerCall: number; calls: number; callIntervalMs: number }]>([
    ['half of 30 000 rows/s for 30 s in calls of 1 000', [30_000, 0.5, 30, 1_000, 10], { targetRowsPerSecond: 15_000, rowsPerCall: 1_000, calls: 450, callIntervalMs: 1_000 / 15 }],
    ['a low rate in smaller calls, so that 10 go out per second', [2_000, 0.5, 30, 1_000, 10], { targetRowsPerSecond: 1_000, rowsPerCall: 100, calls: 300, callIntervalMs: 100 }],
    ['a rate below one row per call interval: one row per call', [5, 0.5, 4, 1_000, 10], { targetRowsPerSecond: 2.5, rowsPerCall: 1, calls: 10, callIntervalMs: 400 }],
    ['a series too short for one call still sends one', [100, 0.5, 0.001, 1_000, 10], { targetRowsPerSecond: 50, rowsPerCall: 5, calls: 1, callIntervalMs: 100 }],
  ])('plans %s', (_case, [ceiling, fraction, seconds, batchRows, callsPerSecondMin], expected) => {
    // Proves the series appends at the asked fraction of the ceiling, spread over at least the minimum calls per second.
    const plan = lagSeriesPlan(ceiling, fraction, seconds, batchRows, callsPerSecondMin);
    expect(plan).toEqual({ ...expected, callIntervalMs: expect.closeTo(expected.callIntervalMs, 9) });
  });

  it.each<[string, () => unknown]>([
    ['no ceiling', () => lagSeriesPlan(0, 0.5, 30, 1_000, 10)],
    ['an infinite ceiling', () => lagSeriesPlan(Infinity, 0.5, 30, 1_000, 10)],
    ['a fraction above 1', () => lagSeriesPlan(1_000, 1.5, 30, 1_000, 10)],
    ['a fraction of 0', () => lagSeriesPlan(1_000, 0, 30, 1_000, 10)],
    ['no time', () => lagSeriesPlan(1_000, 0.5, 0, 1_000, 10)],
    ['calls of no rows', () => lagSeriesPlan(1_000, 0.5, 30, 0, 10)],
    ['a negative call', () => pacedCallStartMs(-1, 100, 1_000)],
    ['a rate of 0', () => pacedCallStartMs(1, 100, 0)],
  ])('refuses %s', (_case, call) => {
    // Proves a series that cannot be paced stops the bench instead of appending at a wrong rate.
    expect(call).toThrow();
  });

  it.each<[number, number, number, number]>([
    [0, 1_000, 15_000, 0],
    [1, 1_000, 15_000, 1_000 / 15],
    [15, 1_000, 15_000, 1_000],
    [3, 100, 1_000, 300],
  ])('sends call %p of %p rows at %p rows/s after %p ms', (index, rowsPerCall, rowsPerSecond, expected) => {
    // Proves calls go out evenly spaced from the series' start, so the rate holds whatever the acks take.
    expect(pacedCallStartMs(index, rowsPerCall, rowsPerSecond)).toBeCloseTo(expected, 9);
  });
});

/** One pino line of the tiering worker, as its logger writes it. */
function logLine(message: string, tieringEpoch: number, time: number, fields: object = {}, table = 'bench_tiering'): string {
  return JSON.stringify({ level: 30, time, role: 'tiering-worker', node: 'tiering-1', pid: 9, table, tieringEpoch, coordinatorEpoch: 2, ...fields, msg: message });
}

describe('parseTieringRounds, roundsSettled and summarizeRounds', () => {
  const progress = { rows: 200_000, bytes: 1_500_000, sourceBytes: 45_000_000, files: 8, removedFiles: 0 };
  const log = [
    'not json at all',
    logLine(TIERING_LOG_MESSAGES.taken, 1, T0, { buckets: 8 }),
    logLine('tiering round started', 1, T0 + 10, { buckets: 8, records: 200_000 }),
    logLine(TIERING_LOG_MESSAGES.failed, 1, T0 + 500, { err: { type: 'Error', message: 'S3 said no' } }),
    logLine(TIERING_LOG_MESSAGES.taken, 2, T0 + 1_500, { buckets: 8 }),
    logLine('tiering round stored a data file', 2, T0 + 2_000, { bucket: 0, ...progress, rows: 25_000 }),
    logLine(TIERING_LOG_MESSAGES.committedToLake, 2, T0 + 4_000, { metadataKey: 'k', snapshotId: '1', ...progress }),
    logLine(TIERING_LOG_MESSAGES.committed, 2, T0 + 4_100, { rows: 200_000, bytes: 1_500_000, files: 8, metadataKey: 'k' }),
    logLine(TIERING_LOG_MESSAGES.taken, 1, T0 + 3_000, { buckets: 1 }, 'another_table'),
    logLine(TIERING_LOG_MESSAGES.taken, 3, T0 + 6_200, { buckets: 8 }),
    '',
  ].join('\n');

  it('reads each round of the table, its figures and its outcome', () => {
    // Proves the catch-up's bytes and times come from the worker's own lines, one round per tiering epoch, other tables ignored.
    expect(parseTieringRounds(log, 'bench_tiering')).toEqual<TieringRoundLog[]>([
      { tieringEpoch: 1, takenAtMs: T0, endedAtMs: T0 + 500, outcome: 'failed', rows: 0, sourceBytes: 0, parquetBytes: 0, files: 0, message: 'S3 said no' },
      { tieringEpoch: 2, takenAtMs: T0 + 1_500, endedAtMs: T0 + 4_100, outcome: 'committed', rows: 200_000, sourceBytes: 45_000_000, parquetBytes: 1_500_000, files: 8, message: null },
      { tieringEpoch: 3, takenAtMs: T0 + 6_200, endedAtMs: null, outcome: 'in-progress', rows: 0, sourceBytes: 0, parquetBytes: 0, files: 0, message: null },
    ]);
  });

  it.each<[string, number, boolean]>([
    ['every round up to the lake epoch ended', 2, true],
    ['a round up to the lake epoch still running', 3, false],
  ])('says the log is settled when %s', (_case, tieringEpoch, expected) => {
    // Proves the bench waits for the outcome line of a round the lake already shows committed.
    expect(roundsSettled(parseTieringRounds(log, 'bench_tiering'), tieringEpoch)).toBe(expected);
  });

  it('sums the committed rounds and spans from the first taken to the last committed', () => {
    // Proves a failed round's time counts against the throughput (it is in the span) while its bytes do not.
    const summary = summarizeRounds(parseTieringRounds(log, 'bench_tiering'));
    expect(summary).toEqual({
      committed: 1,
      notCommitted: 1,
      firstProblem: 'round 1 failed: S3 said no',
      rows: 200_000,
      sourceBytes: 45_000_000,
      parquetBytes: 1_500_000,
      files: 8,
      spanMs: 4_100,
      busyMs: 2_600,
      roundMs: summarizeLatencies([2_600]),
    });
  });

  it('summarizes no round as nothing', () => {
    // Proves a catch-up whose log shows no round gets no MB/s rather than a division by zero.
    expect(summarizeRounds([])).toEqual({ committed: 0, notCommitted: 0, firstProblem: null, rows: 0, sourceBytes: 0, parquetBytes: 0, files: 0, spanMs: null, busyMs: 0, roundMs: null });
  });

  it('reads the messages the tiering worker still logs', () => {
    // Proves the parser and the tiering worker's code (packages/tiering) agree on every message it looks for; a renamed line would silently leave the figures empty.
    const sources = ['tiering-loop.ts', 'round-executor.ts'].map((file) => readFileSync(join(__dirname, '../../tiering/src', file), 'utf8')).join('\n');
    for (const message of Object.values(TIERING_LOG_MESSAGES)) expect(sources).toContain(`'${message}'`);
    // The committed-to-the-lake line carries the figures the parser reads.
    expect(sources).toMatch(/rows: 0, bytes: 0, sourceBytes: 0, files: 0/);
  });
});

describe('summarizeLag', () => {
  it.each<[string, { atMs: number; lagMs: number; steady: boolean }[], number[] | null]>([
    ['steady samples only; warm-up left out', [{ atMs: 250, lagMs: 250, steady: false }, { atMs: 500, lagMs: 3_000, steady: true }, { atMs: 750, lagMs: 1_000, steady: true }], [3_000, 1_000]],
    ['no steady sample', [{ atMs: 250, lagMs: 250, steady: false }], null],
    ['no sample', [], null],
  ])('summarizes %s', (_case, samples, expected) => {
    // Proves the lag percentiles describe the lake in its steady cycle, not the first seconds after it had just caught up.
    expect(summarizeLag(samples)).toEqual(expected === null ? null : summarizeLatencies(expected));
  });
});

describe('lagHalvesP50Ms', () => {
  const sample = (lagMs: number, steady = true) => ({ atMs: lagMs, lagMs, steady });

  it.each<[string, ReturnType<typeof sample>[], [number, number] | null]>([
    ['a lag that keeps its level', [sample(100, false), sample(3_000), sample(2_000), sample(3_000), sample(2_000)], [2_000, 2_000]],
    ['a lag that grows: the second half well above the first', [sample(4_000), sample(6_000), sample(12_000), sample(20_000)], [4_000, 12_000]],
    ['an odd count: the middle sample goes to the second half', [sample(1_000), sample(5_000), sample(9_000)], [1_000, 5_000]],
    ['one steady sample: both halves', [sample(7_000)], [7_000, 7_000]],
    ['no steady sample', [sample(7_000, false)], null],
  ])('gives %s', (_case, samples, expected) => {
    // Proves the report can tell a lake that keeps up (both halves alike) from one that falls behind (the second half higher).
    expect(lagHalvesP50Ms(samples)).toEqual(expected);
  });
});

describe('s3TieringBoundBytesPerSecond', () => {
  it.each<[number, number, number, number]>([
    [100, 100, 1, 50],
    [100, 100, 0, 100],
    [120, 40, 0.25, 1 / (1 / 120 + 0.25 / 40)],
  ])('bounds a copying worker at GET %p, PUT %p and Parquet share %p to %p', (get, put, share, expected) => {
    // Proves the bound is one GET of every stored byte plus one PUT of every Parquet byte, one after the other.
    expect(s3TieringBoundBytesPerSecond(get, put, share)).toBeCloseTo(expected, 9);
  });

  it.each<[string, [number, number, number]]>([
    ['no GET rate', [0, 100, 1]],
    ['no PUT rate', [100, 0, 1]],
    ['a negative share', [100, 100, -1]],
  ])('refuses %s', (_case, [get, put, share]) => {
    // Proves a degenerate baseline gives no bound rather than an infinite one.
    expect(() => s3TieringBoundBytesPerSecond(get, put, share)).toThrow();
  });
});

describe('tieringRatios', () => {
  const baseline = (kind: 's3-get' | 's3-put', concurrency: number, bytesPerSecond: number): BaselineResult => ({
    kind,
    label: `S3 ${kind === 's3-get' ? 'GET' : 'PUT'} 1 MiB`,
    payloadBytes: MIB,
    concurrency,
    operations: 100,
    failures: 0,
    elapsedMs: 1_000,
    operationsPerSecond: bytesPerSecond / MIB,
    bytesPerSecond,
    latency: summarizeLatencies([10]),
  });
  const get = baseline('s3-get', 4, 120e6);
  const put = baseline('s3-put', 1, 40e6);
  const catchUp: TieringCatchUpResult = {
    records: 200_000,
    rounds: { ...summarizeRounds([]), committed: 1, rows: 200_000, sourceBytes: 45e6, parquetBytes: 11.25e6, files: 8, spanMs: 3_000 },
    catchUpMs: 4_000,
    bytesPerSecond: 15e6,
    rowsPerSecond: 66_667,
    catchUpBytesPerSecond: 11.25e6,
    workerCpuSecondsPerMegabyte: 0.05,
    workerRssMaxBytes: 300 * MIB,
    stoppedBecause: null,
    checkFailure: null,
  };
  const lag: FreshnessLagResult = {
    freshnessMs: 2_000,
    ceilingRowsPerSecond: 30_000,
    targetRowsPerSecond: 15_000,
    rowsPerCall: 1_000,
    calls: 450,
    acknowledgedCalls: 450,
    failedCalls: 0,
    firstFailureMessage: null,
    callsInFlightMax: 8,
    lateCalls: 0,
    latestStartMs: 2,
    rows: 450_000,
    elapsedMs: 30_000,
    rowsPerSecond: 15_000,
    appendAck: summarizeLatencies([20, 40]),
    sampleIntervalMs: 250,
    samples: 120,
    warmupSamples: 10,
    failedSamples: 0,
    lag: summarizeLatencies([2_500, 3_000, 5_000]),
    lagHalvesP50Ms: [2_500, 3_000],
    rounds: summarizeRounds([]),
    drainMs: 4_000,
    workerCpuShare: 0.4,
    stoppedBecause: null,
  };
  const tiering = (overrides: Partial<TieringResult> = {}): TieringResult => ({
    table: 'bench_tiering',
    buckets: 8,
    tieringWorkers: 1,
    load: {} as WriteScenarioResult,
    rows: 204_000,
    catchUp,
    lag,
    ...overrides,
  });

  it.each<[string, TieringResult, BaselineResult[], { value: number; baseline: number; text: RegExp }[]]>([
    [
      'every baseline measured',
      tiering(),
      [get, put],
      [
        { value: 15e6, baseline: 120e6, text: /^tiering: 15\.0 MB\/s of stored batches, 66 667 rows\/s \(the worker's rounds\) = 0\.13 × raw S3 GET MB\/s \(1 MiB, 4 in flight\)$/ },
        { value: 15e6, baseline: 40e6, text: /= 0\.38 × raw S3 PUT MB\/s \(1 MiB, 1 in flight\)$/ },
        { value: 15e6, baseline: 1 / (1 / 120e6 + 0.25 / 40e6), text: /= 0\.22 × S3's bound on a worker that only copies, 68\.6 MB\/s = 1 \/ \(1\/GET \+ 0\.25\/PUT\)/ },
        { value: 5_000, baseline: 2_000, text: /^tiering freshness lag at 15 000 rows\/s: p99 5\.0 s = 2\.5 × table\.datalake\.freshness 2\.0 s \(p50 3\.0 s, max 5\.0 s\)$/ },
      ],
    ],
    ['no PUT baseline: the GET ratio and the lag only', tiering(), [get], [{ value: 15e6, baseline: 120e6, text: /raw S3 GET/ }, { value: 5_000, baseline: 2_000, text: /freshness lag/ }]],
    ['a catch-up that failed its check: the lag only', tiering({ catchUp: { ...catchUp, checkFailure: 'bucket 1: …' } }), [get, put], [{ value: 5_000, baseline: 2_000, text: /freshness lag/ }]],
    ['no steady lag sample: the catch-up only', tiering({ lag: { ...lag, lag: null } }), [get], [{ value: 15e6, baseline: 120e6, text: /raw S3 GET/ }]],
    ['neither measured', tiering({ catchUp: null, lag: null }), [get, put], []],
  ])('gives %s', (_case, result, baselines, expected) => {
    // Proves each ratio is taken against the baseline of the same run it names, and a figure that failed its check or lacks its baseline gets none.
    const ratios = tieringRatios(result, baselines);
    expect(ratios.map(({ value, baseline }) => ({ value, baseline: expect.closeTo(baseline, 3) }))).toEqual(expected.map(({ value, baseline }) => ({ value, baseline })));
    ratios.forEach((ratio, index) => expect(ratio.text).toMatch(expected[index]!.text));
  });
});
