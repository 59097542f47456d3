import { LIMITS } from '@mink/config';
import { averageWalObjectBytes, computeRatios, cpuByRoleLine, cpuElsewhereLine, renderKafka, requestShapeLine, renderReport, renderScan, renderTiering, type WriteRatioInput } from './report';
import type { AppendResult, BaselineResult, BenchResult, KafkaResult, PutResult, ScanResult, ScanSeriesResult, TieringResult } from './results';
import { summarizeLatencies } from './stats';
import { BENCH_BASELINES } from './bench-limits';
import { ackP99GoalMs, ackSeriesOf, renderCloudLatency } from './cloud-latency';

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

function write(name: string, append: AppendResult, averageWalObjectBytes: number | null = 100 * KIB): WriteRatioInput {
  return { name, write: append, averageWalObjectBytes };
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
      writes: [write('gateway append', append('gateway', [20, 60], 20_000, 1_000_000)), write('client append', append('client', [10, 45], 40_000, 2_000_000))],
      concurrency: 8,
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
      writes: [write('gateway append', append('gateway', [20, 60], 20_000, 1_000_000), null)],
      concurrency: 8,
      fullWalObjectBytes: MIB,
      jetStreamPayloadBytes: KIB,
    });
    expect(ratios.map((entry) => entry.text)).toEqual(['gateway append: p99 ack 60 ms = 2.0 × raw S3 PUT p99 (1 MiB)']);
  });
});

describe('computeRatios: the goals of the write-path issue', () => {
  it('compares the rows sent per second with raw full-object PUTs, and the p99 ack with 2 × (PUT p99 + publish p99) + linger, both at the run\'s concurrency', () => {
    // Proves the two "Done when" figures are computed from the same run's concurrent baselines.
    const ratios = computeRatios({
      baselines: [...BASELINES, baseline('s3-put', MIB, 8, [40, 100], 100_000_000), baseline('jetstream-publish', KIB, 8, [1, 5])],
      writes: [write('client arrow append', append('client arrow', [30, 107], 50_000, 2_000_000))],
      concurrency: 8,
      fullWalObjectBytes: MIB,
      jetStreamPayloadBytes: KIB,
      lingerMs: 5,
    });
    const goals = ratios.filter((entry) => entry.text.includes('MB/s of rows') || entry.text.includes('linger'));
    expect(goals.map((entry) => [entry.value, entry.baseline])).toEqual([
      [50_000, 100_000_000],
      [107, 2 * (100 + 5) + 5],
    ]);
    expect(goals[1]!.text).toBe('client arrow append: p99 ack 107 ms = 0.50 × (2 × (S3 PUT p99 + JetStream publish p99, 8 in flight) + linger 5 ms = 215 ms)');
  });
});

describe('computeRatios of a put', () => {
  it('compares a put with the baselines of its own average WAL object, and its rows/s with the client append', () => {
    // Proves a put scenario gets the append figures' ratios against the S3 PUT of its own WAL object size, plus put against append rows/s.
    const put = append('client', [40, 90], 10_000, 500_000);
    const ratios = computeRatios({
      baselines: [...BASELINES, baseline('s3-put', 10 * KIB, 1, [4, 5]), baseline('s3-put', 10 * KIB, 8, [6, 7], 2_000_000)],
      writes: [write('client append', append('client', [10, 45], 40_000, 2_000_000)), write('client put', put, 10 * KIB)],
      concurrency: 8,
      fullWalObjectBytes: MIB,
      jetStreamPayloadBytes: KIB,
    });
    expect(ratios.slice(3).map((entry) => entry.text)).toEqual([
      'client put: 10 000 rows/s, p50 ack 40 ms = 6.7 × (S3 PUT p50 (avg WAL object, 10 KiB) + JetStream publish p50)',
      'client put: p99 ack 90 ms = 3.0 × raw S3 PUT p99 (1 MiB)',
      'client put: WAL writes 0.5 MB/s = 0.25 × raw S3 PUT MB/s (avg WAL object, 8 in flight)',
      'client put rows/s = 0.25 × client append rows/s',
    ]);
  });
});

describe('averageWalObjectBytes', () => {
  it('averages the WAL objects of several scenarios to whole bytes, and is null when they wrote none', () => {
    // Proves the size the S3 PUT baseline is measured at is the mean over every object of the group.
    const small = append('gateway', [1], 1, 1);
    small.wal = { objects: 1, bytes: 100, averageObjectBytes: 100, bytesPerSecond: 1 };
    const large = append('client', [1], 1, 1);
    large.wal = { objects: 2, bytes: 501, averageObjectBytes: 250.5, bytesPerSecond: 1 };
    expect(averageWalObjectBytes([small, large])).toBe(200);
    expect(averageWalObjectBytes([])).toBeNull();
    expect(averageWalObjectBytes([{ ...small, wal: { objects: 0, bytes: 0, averageObjectBytes: 0, bytesPerSecond: 0 } }])).toBeNull();
  });
});

describe('renderReport', () => {
  it('prints the put, lookup and restore sections with their units', () => {
    // Proves the PK figures reach the printed report, each with its unit, and a trial without a snapshot prints dashes.
    const put: PutResult = {
      ...append('client', [40, 90], 10_000, 500_000),
      path: 'client',
      table: 'bench_pk',
      buckets: 8,
      serverCpuSecondsPerMegabyte: 0.031,
      benchCpuSecondsPerMegabyte: 0.012,
      coresBusy: 1.9,
    };
    const result: BenchResult = {
      machine: { cpus: 2, cpuModel: 'test cpu', totalMemoryBytes: 1024 ** 3, platform: 'linux', release: '6', nodeVersion: 'v20.0.0', loadAverageAtStart: 0.5 },
      options: { rows: 1_000, batchRows: 100, concurrency: 8, seconds: null, figures: ['pk'], pkKeys: 50_000, restoreKeys: 1_000_000, metadataBuckets: [1_600], scanRows: 1, longPolls: 1, kafkaRecords: 1, tieringRows: 1, soakMinutes: 10, soakRowsPerSecond: 5_000 },
      cluster: { nodes: 3, coordinators: 2, buckets: 8, leaseTtlMs: 3_000, coordinatorTickMs: 500, dataDir: '/tmp/x', kept: false },
      baselines: [],
      appends: [],
      put,
      lookups: [
        {
          table: 'bench_pk',
          keysPerCall: 100,
          concurrency: 8,
          calls: 500,
          failedCalls: 0,
          firstFailureMessage: null,
          stoppedEarly: false,
          elapsedMs: 1_000,
          callsPerSecond: 500,
          keysPerSecond: 50_000,
          latency: summarizeLatencies([2, 7]),
          requestBytes: 1_100,
          replyBytes: 6_000,
        },
      ],
      restore: {
        table: 'bench_pk_restore',
        keys: 1_000_000,
        loadElapsedMs: 15_000,
        loadKeysPerSecond: 66_667,
        keysAfterSnapshot: 10_000,
        trials: [
          { fault: 'sigterm', victimNodeId: '2', newLeaderNodeId: '1', keys: 1_000_000, unavailableMs: 1_900, restoreMs: 847, snapshotObject: 'kv/1', snapshotBytes: 12_050_894, replayedRecords: 0, msPerSnapshotMegabyte: 70.3, downloadMs: 60 },
          { fault: 'kill-9', victimNodeId: '1', newLeaderNodeId: '3', keys: 1_010_000, unavailableMs: 3_600, restoreMs: 400, snapshotObject: null, snapshotBytes: 0, replayedRecords: 1_010_000, msPerSnapshotMegabyte: null, downloadMs: null },
        ],
      },
      ratios: [],
      failover: null,
      metadata: null,
      scan: null,
      kafka: null,
      tiering: null,
      durationMs: 60_000,
      interrupted: false,
    };
    const report = renderReport(result);
    expect(report).toContain('figures: pk');
    expect(report).toContain('pk: 50 000 keys put in calls of 100 rows, then looked up; 1 000 000 keys loaded into a one-bucket table whose restore is timed');
    expect(report).toContain('mink put of new keys into PK table bench_pk of 8 buckets');
    expect(report).toContain('client: CPU s/MB outside mink: S3 + NATS servers 0.031, load generator 0.012; all processes kept 1.90 cores busy');
    expect(report).toMatch(/KEYS\/CALL +IN FLIGHT +CALLS +CALLS\/S +KEYS\/S +P50 MS +P99 MS +MAX MS +REQUEST +REPLY\n +100 +8 +500 +500 +50 000 +2\.0 +7\.0 +7\.0 +1 100 B +6 000 B/);
    expect(report).toContain('1 000 000 keys put at 66 667 keys/s');
    expect(report).toMatch(/SIGTERM +2 +1 +1\.9 +847 +12\.1 +70 +0\n +kill -9 +1 +3 +3\.6 +400 +- +- +1 010 000/);
  });
});

describe('renderScan', () => {
  const seriesOf = (format: ScanSeriesResult['format'], cache: ScanSeriesResult['cache'], rowCheckFailure: string | null = null): ScanSeriesResult => ({
    format,
    cache,
    accept: 'application/json',
    contentType: 'application/json',
    scansInFlight: 4,
    pageRecords: 100_000,
    buckets: 8,
    requests: 8,
    bodyBytes: 60_000_000,
    rows: 204_000,
    rowsExpected: 204_000,
    elapsedMs: 2_500,
    bytesPerSecond: 24_000_000,
    rowsPerSecond: 81_600,
    countMs: 410,
    rowCheckFailure,
    parsedWhileTimed: cache === 'hot',
  });
  const scan: ScanResult = {
    table: 'bench_scan',
    buckets: 8,
    load: append('client arrow', [30, 60], 50_000, 1_000_000),
    rows: 204_000,
    compaction: {
      complete: false,
      waitedMs: 120_000,
      timeoutMs: 120_000,
      buckets: [{ bucket: 0, records: 204_000, batches: 1_632, recordsInStreamObjects: 200_000, walBatches: 32, walSlices: 9, streamObjects: 8 }],
    },
    restarts: [{ format: 'json', restartMs: 9_100, bucketsByLeader: { '1': 3, '2': 3, '3': 2 } }],
    series: [seriesOf('json', 'cold'), seriesOf('json', 'hot', 'bucket 2: 9 rows received up to offset 9, but 10 were appended')],
    skipped: [{ format: 'ndjson', accept: 'application/x-ndjson', reason: 'the gateway answered Content-Type application/json to Accept: application/x-ndjson' }],
    longPoll: {
      bucket: 5,
      iterations: 200,
      delivered: 199,
      failures: 1,
      firstFailureMessage: 'the long poll answered HTTP 503: …',
      delivery: summarizeLatencies([-1.5, 3, 12]),
      appendAck: summarizeLatencies([40, 95]),
      deliveryP99GoalMs: 50,
      stoppedBecause: null,
    },
  };

  it('prints compaction, one row per series with its row check, the formats not measured and the long polls with their goal', () => {
    // Proves every scan figure reaches the report, and that an unfinished compaction and a failed row check are spelled out, not hidden.
    const text = renderScan(scan).join('\n');
    expect(text).toContain('scan of log table bench_scan (8 buckets, 204 000 rows loaded through client appendArrow at 50 000 rows/s;');
    expect(text).toContain('COMPACTION DID NOT FINISH within 120 s: 200 000 of 204 000 records in 8 stream objects, at most 9 slices (32 appended batches) left in WAL objects per bucket');
    expect(text).toMatch(/FORMAT +CACHE +IN FLIGHT +REQUESTS +ROWS +MB +S +MB\/S +ROWS\/S +COUNT MS +ROWS CHECK\n +JSON +cold +4 +8 +204 000 +60\.0 +2\.5 +24\.0 +81 600 +410 +ok\n +JSON +hot .* FAILED/);
    expect(text).toContain('JSON hot: ROW CHECK FAILED, no ratio: bucket 2: 9 rows received up to offset 9, but 10 were appended');
    expect(text).toContain('JSON hot: the replies had no Mink-Next-Offset header');
    expect(text).toContain('NDJSON (Accept: application/x-ndjson) not measured: the gateway answered Content-Type application/json');
    expect(text).toContain('data nodes restarted before each cold series: JSON 9.1 s (buckets led 1:3 2:3 3:2)');
    expect(text).toContain('long polls of bucket 5');
    expect(text).toContain('199 of 200 delivered');
    expect(text).toContain('delivery p50 3.0 ms, p99 12 ms, max 12 ms (goal p99 ≤ 50 ms: met); append ack p50 40 ms, p99 95 ms');
    expect(text).toContain('1 long polls failed; the first: the long poll answered HTTP 503');
  });

  it('says when the delivery goal is not met and when the polls stopped early', () => {
    // Proves a missed goal and a gateway that does not hold scans are both visible.
    const slow = { ...scan.longPoll!, delivery: summarizeLatencies([10, 80]), stoppedBecause: 'a scan with wait answered at once with no records' };
    const text = renderScan({ ...scan, longPoll: slow }).join('\n');
    expect(text).toContain('p99 80 ms, max 80 ms (goal p99 ≤ 50 ms: not met)');
    expect(text).toContain('the long polls stopped early: a scan with wait answered at once with no records');
  });
});

describe('renderKafka', () => {
  const kafka: KafkaResult = {
    topic: 'bench_kafka',
    partitions: 8,
    brokers: ['127.0.0.1:9092', '127.0.0.1:9093'],
    acks: -1,
    idempotent: false,
    producers: 8,
    sendsInFlight: 8,
    recordsPerSend: 4_993,
    keyBytes: 10,
    valueBytes: 200,
    produce: {
      sends: 128,
      failedSends: 1,
      firstFailureMessage: 'partition 3 answered error code 6, base offset -1',
      stoppedEarly: false,
      records: 639_104,
      bytes: 134_211_840,
      warmupRecords: 6_400,
      elapsedMs: 19_000,
      bytesPerSecond: 7_063_781,
      recordsPerSecond: 33_637,
      latency: summarizeLatencies([1_111, 2_568]),
      offsetCheckFailure: null,
      cpuSecondsPerMegabyte: 0.05,
      benchCpuSecondsPerMegabyte: 0.09,
      rssMaxBytes: 182 * MIB,
    },
    transactionalProduce: {
      sends: 127,
      failedSends: 1,
      firstFailureMessage: 'The producer attempted a transactional operation in an invalid state',
      stoppedEarly: false,
      records: 634_111,
      bytes: 133_163_310,
      warmupRecords: 6_400,
      elapsedMs: 26_000,
      bytesPerSecond: 5_121_666,
      recordsPerSecond: 24_389,
      latency: summarizeLatencies([1_620, 3_310]),
      offsetCheckFailure: 'partition 5: the acknowledged batches leave a gap at offset 96 011 (17 offsets between them, 16 transaction markers)',
      cpuSecondsPerMegabyte: 0.07,
      benchCpuSecondsPerMegabyte: 0.1,
      rssMaxBytes: 190 * MIB,
      sendsPerTransaction: 1,
      transactions: 127,
      failedTransactions: 1,
      transactionsInFlight: 8,
      transactionMarkers: 191,
      offsetsBetweenBatches: 200,
    },
    consume: {
      groupId: 'bench_kafka_7f634b92',
      commitIntervalMs: 5_000,
      commits: 1,
      records: 645_500,
      recordsExpected: 645_504,
      bytes: 135_555_000,
      joinMs: 339,
      elapsedMs: 6_700,
      bytesPerSecond: 20_232_089,
      recordsPerSecond: 96_343,
      fetches: 49,
      waitedFetches: 2,
      fetchLatency: summarizeLatencies([51, 320]),
      checkFailure: 'partition 2: read up to offset 80 000, but its committed records end at offset 80 004',
      stoppedBecause: 'not every record was read within 120 s',
      cpuSecondsPerMegabyte: null,
      benchCpuSecondsPerMegabyte: 0.02,
      rssMaxBytes: null,
    },
    consumeEveryBatch: {
      groupId: 'bench_kafka_0a1b2c3d',
      commitIntervalMs: null,
      commits: 260,
      records: 645_504,
      recordsExpected: 645_504,
      bytes: 135_555_000,
      joinMs: 351,
      elapsedMs: 13_400,
      bytesPerSecond: 10_116_044,
      recordsPerSecond: 48_172,
      fetches: 130,
      waitedFetches: 1,
      fetchLatency: summarizeLatencies([6, 390]),
      checkFailure: null,
      stoppedBecause: null,
      cpuSecondsPerMegabyte: 0.02,
      benchCpuSecondsPerMegabyte: 0.01,
      rssMaxBytes: 300 * MIB,
    },
    clientErrors: 3,
    firstClientErrors: ['Connection: Response GroupCoordinator(key: 10, version: 2): The group coordinator is not available'],
  };

  it('prints one row per series with its records check, the join, failures and what kafkajs logged', () => {
    // Proves every Kafka figure reaches the report, and that a failed send, a stalled consumer and a failed check are spelled out, not hidden.
    const text = renderKafka(kafka).join('\n');
    expect(text).toContain('topic bench_kafka of 8 partitions; 8 kafkajs producers (acks -1, NOT idempotent), 8 sends in flight, each of 4 993 records (key 10 B + value 200 B, 1 024 KiB)');
    expect(text).toMatch(/SERIES +RECORDS +REQUESTS +MB +S +MB\/S +MSG\/S +P50 MS +P99 MS +MAX MS +CPU S\/MB +BENCH CPU S\/MB +RSS MAX +RECORDS CHECK\n/);
    expect(text).toMatch(/ +produce +639 104 +128 \(1 failed\) +134\.2 +19 +7\.1 +33 637 +1 111 +2 568 +2 568 +0\.05 +0\.09 +182 MiB +ok\n/);
    expect(text).toMatch(/ +transactional produce +634 111 +127 in 127 txns \(1 failed\) +133\.2 +26 +5\.1 +24 389 +1 620 +3 310 +3 310 +0\.07 +0\.10 +190 MiB +FAILED\n/);
    expect(text).toMatch(/ +consume, commit every 5\.0 s +645 500 of 645 504 +49 fetches +135\.6 +6\.7 +20\.2 +96 343 +51 +320 +320 +- +0\.02 +- +FAILED\n/);
    expect(text).toMatch(/ +consume, commit every batch +645 504 of 645 504 +130 fetches +135\.6 +13 +10\.1 +48 172 +6\.0 +390 +390 +0\.02 +0\.01 +300 MiB +ok/);
    expect(text).toContain(
      'then 8 transactional producers send as many in the same sends, 1 per transaction, 8 transactions in flight; then a kafkajs consumer (read_committed) in a new group reads every partition from the beginning, committing every 5.0 s',
    );
    expect(text).toContain('transactional produce: 200 offsets between the acknowledged batches, where at most 191 transaction markers may sit');
    expect(text).toContain('transactional produce: first failure: The producer attempted a transactional operation in an invalid state');
    expect(text).toContain(
      'transactional produce: OFFSETS CHECK FAILED, no ratio: partition 5: the acknowledged batches leave a gap at offset 96 011 (17 offsets between them, 16 transaction markers)',
    );
    expect(text).toContain('produce: first failure: partition 3 answered error code 6, base offset -1');
    expect(text).toContain('consume, committing every 5.0 s: group bench_kafka_7f634b92 joined in 339 ms (not part of its MB/s); 49 fetches answered with records, 2 waited out the max wait; 1 commit');
    expect(text).toContain('consume, committing every 5.0 s: STOPPED before every record was read: not every record was read within 120 s');
    expect(text).toContain(
      'consume, committing every 5.0 s: RECORDS CHECK FAILED, no ratio: partition 2: read up to offset 80 000, but its committed records end at offset 80 004',
    );
    expect(text).toContain('consume, committing every batch: group bench_kafka_0a1b2c3d joined in 351 ms (not part of its MB/s); 130 fetches answered with records, 1 waited out the max wait; 260 commits');
    expect(text).toContain('kafkajs logged 3 errors; the first: Connection: Response GroupCoordinator(key: 10, version: 2): The group coordinator is not available');
  });

  it('prints the produce series alone when the run stopped before the consumer', () => {
    // Proves an interrupted run still shows what it produced, without a consume row.
    const text = renderKafka({ ...kafka, transactionalProduce: null, consume: null, consumeEveryBatch: null, clientErrors: 0 }).join('\n');
    expect(text).toContain('produce');
    expect(text).not.toMatch(/\n +transactional produce +/);
    expect(text).not.toContain('transactional producers');
    expect(text).not.toMatch(/\n +consume +/);
    expect(text).not.toContain('kafkajs logged');
  });
});

describe('renderTiering', () => {
  const rounds = { committed: 1, notCommitted: 0, firstProblem: null, rows: 204_000, sourceBytes: 45_800_000, parquetBytes: 2_000_000, files: 8, spanMs: 2_000, busyMs: 2_000, roundMs: summarizeLatencies([2_000]) };
  const tiering: TieringResult = {
    table: 'bench_tiering',
    buckets: 8,
    tieringWorkers: 1,
    load: append('client arrow', [40], 26_865, 1),
    rows: 204_000,
    catchUp: {
      records: 204_000,
      rounds,
      catchUpMs: 2_100,
      bytesPerSecond: 22_900_000,
      rowsPerSecond: 102_000,
      catchUpBytesPerSecond: 21_800_000,
      workerCpuSecondsPerMegabyte: 0.05,
      workerRssMaxBytes: 246 * MIB,
      stoppedBecause: null,
      checkFailure: null,
    },
    lag: {
      freshnessMs: 2_000,
      ceilingRowsPerSecond: 26_865,
      targetRowsPerSecond: 13_433,
      rowsPerCall: 1_000,
      calls: 403,
      acknowledgedCalls: 402,
      failedCalls: 1,
      firstFailureMessage: 'timed out',
      callsInFlightMax: 8,
      lateCalls: 7,
      latestStartMs: 221,
      rows: 402_000,
      elapsedMs: 30_000,
      rowsPerSecond: 13_400,
      appendAck: summarizeLatencies([48, 416]),
      sampleIntervalMs: 250,
      samples: 122,
      warmupSamples: 14,
      failedSamples: 0,
      lag: summarizeLatencies([4_700, 8_000, 8_200]),
      lagHalvesP50Ms: [4_700, 8_000],
      rounds: { ...rounds, committed: 8, notCommitted: 1, firstProblem: 'round 4 failed: S3 said no', rows: 403_000, sourceBytes: 90_400_000, spanMs: 32_000, busyMs: 16_000 },
      drainMs: 3_300,
      workerCpuShare: 0.22,
      stoppedBecause: null,
    },
  };

  it('prints the catch-up, the rounds of the freshness series over their busy time and the lag with how it was taken', () => {
    // Proves the tiering figures reach the report with their units, the series' MB/s is not diluted by the freshness waits, and problems are spelled out.
    const text = renderTiering(tiering).join('\n');
    expect(text).toMatch(/catch-up: rounds +1 +204 000 +45\.8 +2\.0 +8 +2\.0 +22\.9 +102 000 +2\.0 \/ 2\.0 +0\.05/);
    expect(text).toMatch(/catch-up: from enabling +1 +204 000 +45\.8 +2\.0 +8 +2\.1 +21\.8 +97 143/);
    expect(text).toMatch(/freshness series: rounds, busy +8 \(\+1 not committed\) +403 000 +90\.4 +2\.0 +8 +16 +5\.7 +25 188/);
    expect(text).toContain('appendArrow at 13 433 rows/s = 0.50 × the load\'s 26 865 rows/s, 1 000 rows per call, at most 8 in flight');
    expect(text).toContain('402 000 rows in 402 of 403 calls in 30 s = 13 400 rows/s, ack p50 48 ms, p99 416 ms, 7 calls sent late (up to 221 ms)');
    expect(text).toContain('lag p50 8.0 s, p99 8.2 s, max 8.2 s over 3 samples, p50 4.7 s in their first half and 8.0 s in the second (14 warm-up samples before the series\' first round committed left out); the lake held the last append 3.3 s after its ack; the tiering worker used 0.22 of a core');
    expect(text).toContain('freshness series: 1 appends failed; the first: timed out');
    expect(text).toContain('freshness series: 1 rounds not committed; the first: round 4 failed: S3 said no');
  });

  it('says when the lake did not catch up, and leaves the freshness lines out when the series did not run', () => {
    // Proves a stuck catch-up is reported as such, with its reason, rather than as a slow figure.
    const stuck = renderTiering({ ...tiering, catchUp: { ...tiering.catchUp!, catchUpMs: null, catchUpBytesPerSecond: null, stoppedBecause: 'the lake still lacked 4 000 of 204 000 records 300 s after it was enabled' }, lag: null }).join('\n');
    expect(stuck).toMatch(/catch-up: from enabling +1 +204 000 +45\.8 +2\.0 +8 +- +- +-/);
    expect(stuck).toContain('catch-up: STOPPED: the lake still lacked 4 000 of 204 000 records 300 s after it was enabled');
    expect(stuck).not.toContain('freshness lag');
  });
});

describe('cpuElsewhereLine', () => {
  it.each([
    [{ serverCpuSecondsPerMegabyte: 0.0345, benchCpuSecondsPerMegabyte: 0.0151, coresBusy: 1.834 }, 'CPU s/MB outside mink: S3 + NATS servers 0.035, load generator 0.015; all processes kept 1.83 cores busy'],
    [{ serverCpuSecondsPerMegabyte: null, benchCpuSecondsPerMegabyte: 0.02, coresBusy: null }, 'CPU s/MB outside mink: load generator 0.020'],
    [{}, null],
  ])('%j', (write, expected) => {
    expect(cpuElsewhereLine(write)).toBe(expected);
  });
});

describe('cpuByRoleLine', () => {
  // Proves each role is shown once with its process count (none for a single process), three decimals and
  // the main threads' share as a whole percent, in the order given, and that an unknown breakdown prints nothing.
  it.each([
    [
      {
        cpuByRole: [
          { role: 'data-node', processes: 3, cpuSecondsPerMegabyte: 0.02512, mainThreadShare: 0.8149 },
          { role: 's3', processes: 1, cpuSecondsPerMegabyte: 0.0221, mainThreadShare: 0.5 },
          { role: 'tiering-worker', processes: 1, cpuSecondsPerMegabyte: 0, mainThreadShare: null },
          { role: 'load generator', processes: 1, cpuSecondsPerMegabyte: 0.0176, mainThreadShare: 0.62 },
        ],
      },
      "CPU s/MB by role (main threads' share): data-node ×3 0.025 (81 %), s3 0.022 (50 %), tiering-worker 0.000, load generator 0.018 (62 %)",
    ],
    [{ cpuByRole: [] }, null],
    [{ cpuByRole: null }, null],
    [{}, null],
  ])('%j', (write, expected) => {
    expect(cpuByRoleLine(write)).toBe(expected);
  });
});

describe('requestShapeLine', () => {
  const wal = { objects: 172, bytes: 48_729_768, averageObjectBytes: 283_313, bytesPerSecond: 8_083_283 };
  it.each([
    [{ bucketRequests: 420, calls: 200, rows: 200_000, wal }, '420 bucket requests (2.10 per call, 476 rows each), 172 WAL objects (0.86 per call)'],
    [{ bucketRequests: 0, calls: 200, rows: 200_000, wal }, '0 bucket requests (0.00 per call, - rows each), 172 WAL objects (0.86 per call)'],
    [{ bucketRequests: null, calls: 200, rows: 200_000, wal }, null],
    [{ calls: 200, rows: 200_000, wal }, null],
    [{ bucketRequests: 5, calls: 0, rows: 0, wal }, null],
  ])('%j', (write, expected) => {
    expect(requestShapeLine(write)).toBe(expected);
  });
});

const PUT_WAL = baseline('s3-put', LIMITS.walFlushBytes, 8, [20, 25, 30]);
const PUT_WAL_SEQUENTIAL = baseline('s3-put', LIMITS.walFlushBytes, 1, [2, 3, 200]);
const COMMIT = baseline('jetstream-publish', BENCH_BASELINES.jetStreamPayloadBytes, 8, [1, 2, 4]);

describe('ackP99GoalMs', () => {
  it.each<[string, BaselineResult[], { goalMs: number; putP99Ms: number; commitP99Ms: number } | null]>([
    ['the full WAL object PUT and the publish at the run\'s concurrency, as the write-path ratio does', [PUT_WAL_SEQUENTIAL, PUT_WAL, COMMIT], { goalMs: 2 * (30 + 4) + LIMITS.walLingerMs, putP99Ms: 30, commitP99Ms: 4 }],
    ['nothing without a PUT at that concurrency', [PUT_WAL_SEQUENTIAL, COMMIT], null],
    ['nothing without a publish', [PUT_WAL], null],
    ['nothing from a GET', [COMMIT, baseline('s3-get', LIMITS.walFlushBytes, 8, [5])], null],
  ])('takes %s', (_case, baselines, goal) => {
    expect(ackP99GoalMs(baselines, 8)).toEqual(goal);
  });
});

describe('renderCloudLatency', () => {
  const result = (s3Latency?: { medianMs: number; p99Ms: number }): Pick<BenchResult, 'options' | 'baselines' | 'appends' | 'kafka'> => ({
    options: { figures: ['append'], concurrency: 8, ...(s3Latency ? { s3Latency } : {}) } as BenchResult['options'],
    baselines: [PUT_WAL_SEQUENTIAL, PUT_WAL, COMMIT],
    appends: [append('gateway', [40, 50, 60], 1_000, 1_000), append('client', [30, 200], 1_000, 1_000), append('floor', [10], 1_000, 1_000)],
    kafka: { produce: { sends: 3, latency: summarizeLatencies([35, 40, 45]) } } as KafkaResult,
  });

  it('says nothing without --s3-latency', () => {
    expect(renderCloudLatency(result())).toEqual([]);
  });

  it('lists every mink write path and Kafka produce against the goal, beside the published figures', () => {
    const lines = renderCloudLatency(result({ medianMs: 20, p99Ms: 80 })).join('\n');
    expect(lines).toContain('every S3 answer held back 20 ms median, 80 ms p99 (log-normal)');
    expect(lines).toContain(`= ${2 * (30 + 4) + LIMITS.walLingerMs} ms`);
    expect(lines).toMatch(/gateway append\s+50\s+60\s+met/);
    expect(lines).toMatch(/client append\s+30\s+200\s+missed by 127 ms/);
    expect(lines).toMatch(/Kafka produce \(kafkajs, idempotent\)\s+40\s+45\s+met/);
    expect(lines).toMatch(/WarpStream \(published\)\s+-\s+400/);
    expect(lines).toMatch(/Bufstream \(published\)\s+260\s+500/);
    expect(lines).not.toContain('floor append');
  });

  it('leaves out series that did not run', () => {
    expect(ackSeriesOf({ appends: [{ ...append('client arrow', [1], 1_000, 1_000), calls: 0 }], kafka: null }).map((series) => series.label)).toEqual([]);
  });
});
