import {
  averageLookupMessageBytes,
  lastRestoredBucketLine,
  lookupKeyIds,
  lookupMessageBytes,
  lookupRatios,
  restoreRatios,
  restoreTrialOf,
  scatteredIndex,
  type RestoredBucketLine,
} from './pk-figures';
import type { BaselineResult, LookupResult, RestoreTrial } from './results';
import { summarizeLatencies } from './stats';

/** A pino line of the data node, as PkBucket.open writes it. */
function restoredLogLine(fields: Record<string, unknown>): string {
  return JSON.stringify({ level: 30, time: 1, role: 'data-node', node: '2', pid: 7, ...fields, msg: 'restored PK bucket' });
}

const RESTORED = { table: 'bench_pk_restore', bucket: 0, snapshot: 'kv/3/_/0/1-100-ab', snapshotBytes: 2_000_000, replayedFrom: 100, replayedTo: 150, ms: 400 };

describe('lastRestoredBucketLine', () => {
  it('takes the last line of the table among other output', () => {
    // Proves the bench reads the newest restore of its own table, whatever else the log holds around it.
    const log = [
      '(node:17112) Warning: NodeVersionSupportWarning: The AWS SDK for JavaScript (v3)',
      restoredLogLine({ ...RESTORED, ms: 10 }),
      restoredLogLine({ ...RESTORED, table: 'bench_pk', ms: 20 }),
      JSON.stringify({ level: 30, msg: 'committed KV snapshot', table: 'bench_pk_restore' }),
      restoredLogLine(RESTORED),
      restoredLogLine({ ...RESTORED, table: 'other', ms: 30 }),
      '',
    ].join('\n');
    expect(lastRestoredBucketLine(log, 'bench_pk_restore')).toEqual(RESTORED);
    expect(lastRestoredBucketLine(restoredLogLine({ ...RESTORED, downloadMs: 12 }), 'bench_pk_restore')).toEqual({ ...RESTORED, downloadMs: 12 });
  });

  it('reads a restore without a snapshot', () => {
    // Proves a bucket rebuilt from the changelog alone (snapshot null) is still a restore line.
    const line = { ...RESTORED, snapshot: null, snapshotBytes: 0, replayedFrom: 0 };
    expect(lastRestoredBucketLine(restoredLogLine(line), 'bench_pk_restore')).toEqual(line);
  });

  it.each<[string, string]>([
    ['no line at all', ''],
    ['a line cut off mid-write', restoredLogLine(RESTORED).slice(0, 60)],
    ['a line of another table', restoredLogLine({ ...RESTORED, table: 'bench_pk' })],
    ['a text that only mentions the message', `note: restored PK bucket ${JSON.stringify(RESTORED)}`],
    ['a line whose ms is not a number', restoredLogLine({ ...RESTORED, ms: '400' })],
    ['a line missing replayedTo', restoredLogLine({ ...RESTORED, replayedTo: undefined })],
    ['a line with a negative size', restoredLogLine({ ...RESTORED, snapshotBytes: -1 })],
    ['a line whose snapshot is not a string', restoredLogLine({ ...RESTORED, snapshot: 42 })],
    ['a JSON value that is not an object', 'null restored PK bucket'],
  ])('finds nothing in %s', (_case, log) => {
    // Proves a malformed or foreign line is skipped rather than turned into a figure.
    expect(lastRestoredBucketLine(log, 'bench_pk_restore')).toBeNull();
  });
});

describe('restoreTrialOf', () => {
  const measured = { fault: 'kill-9' as const, victimNodeId: '1', newLeaderNodeId: '2', keys: 150, unavailableMs: 3_600 };

  it('takes the restore from the log line and divides its time by the snapshot megabytes', () => {
    // Proves ms per MB uses 10^6-byte megabytes and the replayed records are the span of the replay.
    expect(restoreTrialOf(measured, RESTORED)).toEqual({
      ...measured,
      restoreMs: 400,
      snapshotObject: 'kv/3/_/0/1-100-ab',
      snapshotBytes: 2_000_000,
      replayedRecords: 50,
      msPerSnapshotMegabyte: 200,
      downloadMs: null,
    });
    expect(restoreTrialOf(measured, { ...RESTORED, downloadMs: 30 }).downloadMs).toBe(30);
  });

  it('has no ms per MB without a snapshot, and refuses a replay that runs backwards', () => {
    // Proves a changelog-only restore is not divided by zero bytes, and an impossible line is a loud error.
    const line: RestoredBucketLine = { ...RESTORED, snapshot: null, snapshotBytes: 0, replayedFrom: 0 };
    expect(restoreTrialOf(measured, line)).toEqual(expect.objectContaining({ msPerSnapshotMegabyte: null, replayedRecords: 150 }));
    expect(() => restoreTrialOf(measured, { ...RESTORED, replayedFrom: 151 })).toThrow(/backwards/);
  });
});

describe('scatteredIndex and lookupKeyIds', () => {
  it('stays in range, repeats itself, and spreads consecutive sequences', () => {
    // Proves every run reads the same keys, and that consecutive lookups do not read neighbouring keys (one bucket, one page).
    const indexes = Array.from({ length: 10_000 }, (_, sequence) => scatteredIndex(sequence, 1_000));
    expect(indexes.every((index) => Number.isInteger(index) && index >= 0 && index < 1_000)).toBe(true);
    expect(Array.from({ length: 10_000 }, (_, sequence) => scatteredIndex(sequence, 1_000))).toEqual(indexes);
    expect(new Set(indexes).size).toBeGreaterThan(990);
    const neighbours = indexes.slice(1).filter((index, position) => Math.abs(index - indexes[position]!) <= 1).length;
    expect(neighbours).toBeLessThan(50);
  });

  it.each<[number, number]>([
    [-1, 10],
    [1.5, 10],
    [0, 0],
    [0, 2.5],
  ])('refuses sequence %p of %p keys', (sequence, count) => {
    // Proves a caller's bug fails instead of reading past the written keys.
    expect(() => scatteredIndex(sequence, count)).toThrow();
  });

  it('draws the keys of a call from the written ids only', () => {
    // Proves a lookup only ever asks for keys that were put, so a null answer is a real miss.
    const written = [7, 11, 13];
    const ids = lookupKeyIds(written, 4, 100);
    expect(ids).toHaveLength(100);
    expect(ids.every((id) => written.includes(id))).toBe(true);
    expect(lookupKeyIds(written, 4, 100)).toEqual(ids);
    expect(() => lookupKeyIds([], 0, 1)).toThrow(/no written keys/);
  });
});

describe('lookup message sizes', () => {
  it('measures the request with int64 keys as strings and the reply with its rows', () => {
    // Proves the sizes the NATS baseline is measured at are the JSON of what the client sends and receives.
    const rows = [{ id: '12', name: 'sensor-12', value: 1.5 }];
    const request = JSON.stringify({ op: 'lookup', table: 't', tableId: 2, partition: null, bucket: 0, keys: [{ id: '12' }] });
    expect(lookupMessageBytes('t', 2, [12], rows)).toEqual({ requestBytes: request.length, replyBytes: JSON.stringify({ result: { rows } }).length });
  });

  it('averages samples to whole bytes, and has no average of none', () => {
    // Proves the baseline gets one integer size per series.
    expect(averageLookupMessageBytes([{ requestBytes: 90, replyBytes: 70 }, { requestBytes: 95, replyBytes: 71 }])).toEqual({ requestBytes: 93, replyBytes: 71 });
    expect(averageLookupMessageBytes([])).toBeNull();
  });
});

function baseline(kind: BaselineResult['kind'], payloadBytes: number, concurrency: number, latenciesMs: number[], replyBytes?: number): BaselineResult {
  return {
    kind,
    label: kind,
    payloadBytes,
    ...(replyBytes === undefined ? {} : { replyBytes }),
    concurrency,
    operations: latenciesMs.length,
    failures: 0,
    elapsedMs: 1_000,
    operationsPerSecond: latenciesMs.length,
    bytesPerSecond: 1,
    latency: summarizeLatencies(latenciesMs),
  };
}

function lookup(keysPerCall: number, concurrency: number, latenciesMs: number[], requestBytes: number, replyBytes: number): LookupResult {
  return {
    table: 'bench_pk',
    keysPerCall,
    concurrency,
    calls: latenciesMs.length,
    failedCalls: 0,
    firstFailureMessage: null,
    stoppedEarly: false,
    elapsedMs: 1_000,
    callsPerSecond: latenciesMs.length,
    keysPerSecond: latenciesMs.length * keysPerCall,
    latency: summarizeLatencies(latenciesMs),
    requestBytes,
    replyBytes,
  };
}

describe('lookupRatios', () => {
  it('divides p50 and p99 by the request/reply baseline of the same sizes and in-flight count', () => {
    // Proves each series finds its own baseline (sizes and concurrency), and one without a baseline prints no ratio.
    const baselines = [
      baseline('nats-request', 97, 1, [0.25, 1], 79),
      baseline('nats-request', 97, 8, [0.5, 2], 79),
      baseline('nats-request', 97, 1, [9, 9], 5_000),
      baseline('s3-put', 97, 1, [9, 9]),
    ];
    const ratios = lookupRatios([lookup(1, 8, [1, 4], 97, 79), lookup(1, 1, [0.5, 3], 97, 79), lookup(100, 8, [5, 9], 1_100, 6_000)], baselines);
    expect(ratios.map((entry) => [entry.value, entry.baseline, entry.ratio])).toEqual([
      [1, 0.5, 2],
      [4, 2, 2],
      [0.5, 0.25, 2],
      [3, 1, 3],
    ]);
    expect(ratios[0]!.text).toBe('client lookup of 1 key, 8 in flight: 2 keys/s, p50 1.0 ms = 2.0 × raw NATS request/reply p50 (97 B → 79 B)');
    expect(ratios[1]!.text).toBe('client lookup of 1 key, 8 in flight: p99 4.0 ms = 2.0 × raw NATS request/reply p99 (97 B → 79 B)');
  });
});

describe('restoreRatios', () => {
  const trial = (fault: RestoreTrial['fault'], snapshotObject: string | null, restoreMs: number): RestoreTrial => ({
    fault,
    victimNodeId: '1',
    newLeaderNodeId: '2',
    keys: 1_010_000,
    unavailableMs: 3_500,
    restoreMs,
    snapshotObject,
    snapshotBytes: snapshotObject === null ? 0 : 12_000_000,
    replayedRecords: 10_000,
    msPerSnapshotMegabyte: snapshotObject === null ? null : restoreMs / 12,
    downloadMs: null,
  });

  it('divides each restore from a snapshot by the sequential S3 GET p50 of its size', () => {
    // Proves the ratio's baseline is the GET of as many bytes, one at a time, and that a restore without a snapshot has none.
    const ratios = restoreRatios({ trials: [trial('kill-9', 'kv/x', 1_200), trial('sigterm', null, 50)] }, [
      baseline('s3-get', 12_000_000, 8, [1, 1]),
      baseline('s3-get', 12_000_000, 1, [100, 140]),
    ]);
    expect(ratios.map((entry) => [entry.value, entry.baseline, entry.ratio])).toEqual([[1_200, 100, 12]]);
    expect(ratios[0]!.text).toBe(
      'kill -9 restore of 1 010 000 keys: 1 200 ms for a 12.0 MB snapshot (100 ms/MB) and 10 000 replayed records = 12 × raw S3 GET p50 of as many bytes (100 ms)',
    );
    expect(restoreRatios({ trials: [trial('kill-9', 'kv/x', 1_200)] }, [])).toEqual([]);
  });

  it('adds the download alone against the same GET when the log line timed it', () => {
    const ratios = restoreRatios({ trials: [{ ...trial('kill-9', 'kv/x', 1_200), downloadMs: 150 }] }, [baseline('s3-get', 12_000_000, 1, [100, 140])]);
    expect(ratios.map((entry) => [entry.value, entry.baseline, entry.ratio])).toEqual([
      [1_200, 100, 12],
      [150, 100, 1.5],
    ]);
    expect(ratios[1]!.text).toBe(
      'kill -9 restore: snapshot download 150 ms = 1.5 × raw S3 GET p50 of as many bytes; the other 1 050 ms unpack the snapshot, open the tablet and replay the changelog',
    );
  });
});
