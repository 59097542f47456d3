import { computeRatios } from './report';
import type { AppendResult, BaselineResult } from './results';
import { summarizeLatencies } from './stats';

const KIB = 1024;
const MIB = 1024 * 1024;

function baseline(kind: BaselineResult['kind'], payloadBytes: number, concurrency: number, latenciesMs: number[], bytesPerSecond = 1): BaselineResult {
  return {
    kind,
    label: `${kind} ${payloadBytes}`,
    payloadBytes,
    concurrency,
    operations: latenciesMs.length,
    failures: 0,
    elapsedMs: 1_000,
    operationsPerSecond: latenciesMs.length,
    bytesPerSecond,
    latency: summarizeLatencies(latenciesMs),
  };
}

function append(path: AppendResult['path'], latenciesMs: number[], rowsPerSecond: number, walBytesPerSecond: number): AppendResult {
  return {
    path,
    rows: 1_000,
    calls: latenciesMs.length,
    failedCalls: 0,
    firstFailureMessage: null,
    stoppedEarly: false,
    elapsedMs: 1_000,
    rowsPerSecond,
    payloadBytesPerSecond: 50_000,
    latency: summarizeLatencies(latenciesMs),
    wal: { objects: 10, bytes: 10 * 100 * KIB, averageObjectBytes: 100 * KIB, bytesPerSecond: walBytesPerSecond },
  };
}

const BASELINES = [
  baseline('s3-put', MIB, 1, [20, 30]),
  baseline('s3-put', 100 * KIB, 1, [8, 9]),
  baseline('s3-put', 100 * KIB, 8, [10, 12], 4_000_000),
  baseline('jetstream-publish', KIB, 1, [2, 3]),
];

describe('computeRatios', () => {
  it('divides each mink figure by the baseline of the same run that bounds it', () => {
    // Proves the four ratios and their baselines: p50 against PUT p50 + publish p50, p99 against the full-object PUT p99, WAL MB/s against concurrent PUTs, gateway against client.
    const ratios = computeRatios({
      baselines: BASELINES,
      appends: [append('gateway', [20, 60], 20_000, 1_000_000), append('client', [10, 45], 40_000, 2_000_000)],
      concurrency: 8,
      averageWalObjectBytes: 100 * KIB,
      fullWalObjectBytes: MIB,
      jetStreamPayloadBytes: KIB,
    });
    expect(ratios.map((entry) => [entry.value, entry.baseline, entry.ratio])).toEqual([
      [20, 10, 2],
      [60, 30, 2],
      [1_000_000, 4_000_000, 0.25],
      [10, 10, 1],
      [45, 30, 1.5],
      [2_000_000, 4_000_000, 0.5],
      [20_000, 40_000, 0.5],
    ]);
    expect(ratios[0]!.text).toBe('gateway append: 20 000 rows/s, p50 ack 20 ms = 2.0 × (S3 PUT p50 (avg WAL object, 100 KiB) + JetStream publish p50)');
    expect(ratios[1]!.text).toBe('gateway append: p99 ack 60 ms = 2.0 × raw S3 PUT p99 (1 MiB)');
    expect(ratios[6]!.text).toBe('gateway append rows/s = 0.50 × client append rows/s');
  });

  it('leaves out the ratios whose baseline an interrupted run did not measure', () => {
    // Proves a partial run prints only ratios it can back with a measurement of its own.
    const ratios = computeRatios({
      baselines: [BASELINES[0]!],
      appends: [append('gateway', [20, 60], 20_000, 1_000_000)],
      concurrency: 8,
      averageWalObjectBytes: null,
      fullWalObjectBytes: MIB,
      jetStreamPayloadBytes: KIB,
    });
    expect(ratios.map((entry) => entry.text)).toEqual(['gateway append: p99 ack 60 ms = 2.0 × raw S3 PUT p99 (1 MiB)']);
  });
});
