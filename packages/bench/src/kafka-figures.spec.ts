import { BENCH_KAFKA } from './bench-limits';
import {
  checkAcknowledgedOffsets,
  ConsumeTally,
  describeKafkaProduce,
  kafkaFloorBytesShare,
  kafkaFloorShare,
  kafkaRatios,
  kafkaRecordKey,
  kafkaSendCount,
  kafkaSendOf,
  kafkaTransactionCount,
  kafkaTransactionOf,
  recordNumberOfKey,
  TALLY_PARTITIONS_MAX,
  type AcknowledgedSend,
  type FloorRate,
  type KafkaRatioSettings,
  type OffsetSpan,
} from './kafka-figures';
import type { BaselineResult, KafkaConsumeResult, KafkaProduceResult, KafkaResult, KafkaTransactionalProduceResult } from './results';
import { summarizeLatencies } from './stats';

const MIB = 1024 * 1024;
const KIB = 1024;
const key = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, 'latin1'));

describe('kafkaSendCount and kafkaSendOf', () => {
  it.each<[string, number, number, number, number[][]]>([
    ['whole sends, partitions in turn', 12, 4, 2, [[0, 0, 4], [1, 4, 4], [0, 8, 4]]],
    ['a last send with the remainder', 10, 4, 8, [[0, 0, 4], [1, 4, 4], [2, 8, 2]]],
    ['fewer records than one send', 3, 4, 8, [[0, 0, 3]]],
    ['more sends than partitions wrap around', 5, 1, 2, [[0, 0, 1], [1, 1, 1], [0, 2, 1], [1, 3, 1], [0, 4, 1]]],
  ])('splits %s', (_case, records, recordsPerSend, partitions, expected) => {
    // Proves every record is in exactly one send, consecutive sends go to every partition in turn, and the last send carries the remainder.
    const sends = Array.from({ length: kafkaSendCount(records, recordsPerSend) }, (_, index) => kafkaSendOf(index, records, recordsPerSend, partitions));
    expect(sends.map((send) => [send.partition, send.firstRecord, send.records])).toEqual(expected);
  });

  it('numbers the records of a series from its first record', () => {
    // Proves warm-up sends, numbered after the measured records, never reuse a measured record's number.
    expect(kafkaSendOf(1, 10, 4, 8, 1_000)).toEqual({ partition: 1, firstRecord: 1_004, records: 4 });
  });

  it.each<[string, () => unknown]>([
    ['zero records per send', () => kafkaSendCount(10, 0)],
    ['negative records', () => kafkaSendCount(-1, 4)],
    ['a fractional record count', () => kafkaSendCount(1.5, 4)],
    ['a send past the last', () => kafkaSendOf(3, 10, 4, 8)],
    ['a negative send', () => kafkaSendOf(-1, 10, 4, 8)],
    ['no partition', () => kafkaSendOf(0, 10, 4, 0)],
  ])('refuses %s', (_case, call) => {
    // Proves a wrong plan is a bug that stops the bench, not a series that sends nothing.
    expect(call).toThrow();
  });

  it('fills a send with about 1 MiB of keys and values', () => {
    // Proves the default send is the size of the S3 PUT baseline's body, as the goal compares them.
    const bytes = BENCH_KAFKA.recordsPerSend * (BENCH_KAFKA.keyBytes + BENCH_KAFKA.valueBytes);
    expect(bytes).toBeLessThanOrEqual(MIB);
    expect(bytes).toBeGreaterThan(MIB - (BENCH_KAFKA.keyBytes + BENCH_KAFKA.valueBytes));
  });
});

describe('kafkaTransactionCount and kafkaTransactionOf', () => {
  it.each<[string, number, number, number, number, number, number[][][]]>([
    ['one send per transaction, as the bench runs it', 10, 4, 8, 1, 100, [[[0, 100, 4]], [[1, 104, 4]], [[2, 108, 2]]]],
    ['two sends per transaction, partitions in turn', 12, 2, 4, 2, 0, [[[0, 0, 2], [1, 2, 2]], [[2, 4, 2], [3, 6, 2]], [[0, 8, 2], [1, 10, 2]]]],
    ['a last transaction with the remaining send', 10, 4, 8, 2, 0, [[[0, 0, 4], [1, 4, 4]], [[2, 8, 2]]]],
    ['more sends per transaction than the series has', 3, 4, 8, 5, 0, [[[0, 0, 3]]]],
  ])('groups %s', (_case, records, recordsPerSend, partitions, sendsPerTransaction, firstRecord, expected) => {
    // Proves the transactions of a series carry every send of it once, in the order kafkaSendOf numbers them, with the series' own record numbers.
    const transactions = kafkaTransactionCount(kafkaSendCount(records, recordsPerSend), sendsPerTransaction);
    const grouped = Array.from({ length: transactions }, (_, index) => kafkaTransactionOf(index, records, recordsPerSend, partitions, sendsPerTransaction, firstRecord));
    expect(grouped.map((sends) => sends.map((send) => [send.partition, send.firstRecord, send.records]))).toEqual(expected);
  });

  it.each<[string, () => unknown]>([
    ['zero sends per transaction', () => kafkaTransactionCount(4, 0)],
    ['a fractional send count', () => kafkaTransactionCount(1.5, 1)],
    ['a transaction past the last', () => kafkaTransactionOf(3, 10, 4, 8, 1)],
    ['a negative transaction', () => kafkaTransactionOf(-1, 10, 4, 8, 1)],
  ])('refuses %s', (_case, call) => {
    // Proves a wrong plan is a bug that stops the bench, not a series that commits nothing.
    expect(call).toThrow();
  });
});

describe('kafkaRecordKey and recordNumberOfKey', () => {
  it.each<[number, string]>([
    [0, '0000000000'],
    [42, '0000000042'],
    [9_999_999_999, '9999999999'],
  ])('writes record %p as %p and reads it back', (recordNumber, text) => {
    // Proves the key names its record in fixed-width digits, and the consumer reads the same number back.
    expect(kafkaRecordKey(recordNumber, 10)).toBe(text);
    expect(recordNumberOfKey(key(text), 10)).toBe(recordNumber);
  });

  it.each<[string, number]>([
    ['too many digits', 10_000_000_000],
    ['a negative number', -1],
    ['a fraction', 1.5],
  ])('refuses a record number with %s', (_case, recordNumber) => {
    // Proves a key never silently loses digits, which would make two records look the same.
    expect(() => kafkaRecordKey(recordNumber, 10)).toThrow(/does not fit/);
  });

  it.each<[string, Uint8Array | null]>([
    ['no key', null],
    ['a shorter key', key('000000042')],
    ['a longer key', key('00000000042')],
    ['a key with a letter', key('00000000x2')],
    ['a key with a sign', key('-000000042')],
  ])('reads no record number from %s', (_case, bytes) => {
    // Proves a record the bench did not write is told apart from record 0.
    expect(recordNumberOfKey(bytes, 10)).toBeNull();
  });
});

describe('checkAcknowledgedOffsets', () => {
  const send = (partition: number, baseOffset: number, records: number, aborted?: true): AcknowledgedSend => ({ partition, baseOffset, records, ...(aborted ? { aborted } : {}) });
  type Spans = [partition: number, spans: [first: number, end: number][]][];

  it.each<[string, AcknowledgedSend[], [number, number][], string | null, [number, number][], Spans]>([
    ['batches that tile each partition, acknowledged in any order', [send(1, 4, 4), send(0, 0, 3), send(1, 0, 4), send(0, 3, 1)], [], null, [[0, 4], [1, 8]], [[0, [[0, 4]]], [1, [[0, 8]]]]],
    ['no send at all', [], [], null, [], []],
    ['a gap', [send(0, 0, 3), send(0, 5, 3)], [], 'partition 0: the acknowledged batches leave a gap at offset 3', [[0, 6]], [[0, [[0, 3], [5, 8]]]]],
    ['a first batch not at offset 0', [send(2, 1, 3)], [], 'partition 2: the acknowledged batches leave a gap at offset 0', [[2, 3]], [[2, [[1, 4]]]]],
    ['two batches given the same offsets', [send(0, 0, 3), send(0, 0, 3)], [], 'partition 0: the acknowledged batches overlap at offset 3', [[0, 6]], [[0, [[0, 3]]]]],
    ['an empty batch', [send(0, 0, 0)], [], 'partition 0: a send of 0 records acknowledged at offset 0', [[0, 0]], [[0, []]]],
    ['transactions whose markers sit between their batches', [send(0, 0, 3), send(0, 4, 2), send(0, 7, 2)], [[0, 3]], null, [[0, 7]], [[0, [[0, 3], [4, 6], [7, 9]]]]],
    ['two markers side by side (two transactions ended before the next batch)', [send(0, 0, 3), send(0, 5, 2)], [[0, 2]], null, [[0, 5]], [[0, [[0, 3], [5, 7]]]]],
    [
      'more offsets between the batches than markers',
      [send(0, 0, 3), send(0, 4, 2), send(0, 8, 2)],
      [[0, 2]],
      'partition 0: the acknowledged batches leave a gap at offset 6 (3 offsets between them, 2 transaction markers)',
      [[0, 7]],
      [[0, [[0, 3], [4, 6], [8, 10]]]],
    ],
    ['markers of another partition', [send(0, 0, 3), send(0, 4, 2)], [[1, 5]], 'partition 0: the acknowledged batches leave a gap at offset 3', [[0, 5]], [[0, [[0, 3], [4, 6]]]]],
    ['an aborted batch, which holds offsets but no committed record', [send(0, 0, 3), send(0, 3, 2, true), send(0, 6, 2)], [[0, 2]], null, [[0, 5]], [[0, [[0, 3], [6, 8]]]]],
  ])('judges %s', (_case, sends, markers, failure, recordsByPartition, spans) => {
    // Proves an acknowledgement the log cannot hold (a gap beyond the transaction markers, an overlap) is caught, and that the records and their offsets per partition are what the consumer must read.
    const check = checkAcknowledgedOffsets(sends, new Map(markers));
    expect(check.failure).toBe(failure);
    expect([...check.recordsByPartition]).toEqual(recordsByPartition);
    expect([...check.committedSpans].map(([partition, list]) => [partition, list.map((span) => [span.first, span.end])])).toEqual(spans);
  });
});

describe('checkAcknowledgedOffsets between batches', () => {
  it('counts the offsets between acknowledged batches of every partition, not those after the last', () => {
    // Proves the report can tell markers that take offsets (as in Kafka) from markers that take none.
    const sends: AcknowledgedSend[] = [
      { partition: 0, baseOffset: 0, records: 3 },
      { partition: 0, baseOffset: 4, records: 2 },
      { partition: 1, baseOffset: 0, records: 2 },
      { partition: 1, baseOffset: 4, records: 2 },
    ];
    expect(checkAcknowledgedOffsets(sends, new Map([[0, 2], [1, 2]])).offsetsBetweenBatches).toBe(3);
    expect(checkAcknowledgedOffsets(sends.map((send) => ({ ...send, baseOffset: send.baseOffset === 4 ? (send.partition === 0 ? 3 : 2) : 0 }))).offsetsBetweenBatches).toBe(0);
  });
});

describe('ConsumeTally', () => {
  /** Two partitions: records 0–2 went to partition 0 and records 3–4 to partition 1. */
  const acknowledged = [
    { partition: 0, firstRecord: 0, records: 3 },
    { partition: 1, firstRecord: 3, records: 2 },
  ];
  const spansOf = (entries: [number, [number, number][]][]): Map<number, OffsetSpan[]> => new Map(entries.map(([partition, spans]) => [partition, spans.map(([first, end]) => ({ first, end }))]));
  const tiled = spansOf([
    [0, [[0, 3]]],
    [1, [[0, 2]]],
  ]);
  const keyOf = (recordNumber: number): Uint8Array => key(kafkaRecordKey(recordNumber, 10));
  type Read = [partition: number, offset: number, recordNumber: number | Uint8Array | null];
  const everything: Read[] = [
    [0, 0, 0],
    [1, 0, 3],
    [0, 1, 1],
    [1, 1, 4],
    [0, 2, 2],
  ];

  function verdictOf(reads: Read[], spans: Map<number, OffsetSpan[]> = tiled, ranges = acknowledged, recordNumbers = 6): { verdict: string | null; tally: ConsumeTally } {
    const tally = new ConsumeTally(recordNumbers, spans, 10);
    for (const [partition, offset, recordNumber] of reads) {
      const bytes = typeof recordNumber === 'number' ? keyOf(recordNumber) : recordNumber;
      tally.add(partition, offset, bytes, 210);
    }
    return { verdict: tally.verdict(ranges), tally };
  }

  it.each<[string, Read[], string | null]>([
    ['every record once, partitions interleaved', everything, null],
    ['a partition not read to its end', everything.slice(0, 4), 'partition 0: read up to offset 2, but its committed records end at offset 3'],
    ['a gap in the offsets', [[0, 0, 0], [0, 2, 1]], 'partition 0: read offset 2 where 1 was next (a gap)'],
    ['an offset read twice', [...everything, [1, 1, 4]], 'partition 1: read offset 1 where 2 was next (a repeat)'],
    ['a record read twice at two offsets', [[0, 0, 0], [0, 1, 0], [0, 2, 2], [1, 0, 3], [1, 1, 4]], 'partition 0: record 0 read again at offset 1'],
    ['a key the bench did not write', [[0, 0, key('hello')]], 'partition 0: the record at offset 0 has a key no send wrote'],
    ['a record number past the last', [[0, 0, 7]], 'partition 0: the record at offset 0 has a key no send wrote'],
    ['records swapped between partitions', [[0, 0, 0], [0, 1, 1], [0, 2, 3], [1, 0, 2], [1, 1, 4]], 'record 2 was sent to partition 0 but read from partition 1'],
    ['an acknowledged record replaced by another', [[0, 0, 0], [0, 1, 1], [0, 2, 5], [1, 0, 3], [1, 1, 4]], '1 acknowledged records were not read (the first: record 2)'],
    ['a record past the committed ones', [...everything, [1, 2, 5]], 'partition 1: read offset 2, which holds no committed record (a transaction marker or an aborted batch)'],
  ])('judges %s', (_case, reads, expected) => {
    // Proves the consume series passes only when every acknowledged record was read exactly once at offsets without gap or repeat.
    const { verdict, tally } = verdictOf(reads);
    expect(verdict).toBe(expected);
    expect(tally.records).toBe(reads.length);
    expect(tally.bytes).toBe(210 * reads.length);
  });

  describe('with transactions', () => {
    /**
     * Partition 0 as the transactional series leaves it: records 0–1 at offsets 0–1 (idempotent), a
     * transaction's record 2 at offset 2 and its marker at 3, an aborted transaction's record 3 at offset 4
     * and its marker at 5, a transaction's record 4 at offset 6 and its marker at 7.
     */
    const spans = spansOf([[0, [[0, 3], [6, 7]]]]);
    const ranges = [
      { partition: 0, firstRecord: 0, records: 3 },
      { partition: 0, firstRecord: 4, records: 1 },
    ];

    it.each<[string, Read[], string | null]>([
      ['the committed records, skipping the markers and the aborted batch', [[0, 0, 0], [0, 1, 1], [0, 2, 2], [0, 6, 4]], null],
      ['a marker exposed to the consumer', [[0, 0, 0], [0, 1, 1], [0, 2, 2], [0, 3, null]], 'partition 0: read offset 3, which holds no committed record (a transaction marker or an aborted batch)'],
      ['the aborted record read', [[0, 0, 0], [0, 1, 1], [0, 2, 2], [0, 4, 3], [0, 6, 4]], 'partition 0: read offset 4, which holds no committed record (a transaction marker or an aborted batch)'],
      ['a committed record skipped along with the markers', [[0, 0, 0], [0, 1, 1], [0, 6, 4]], 'partition 0: read offset 6 where 2 was next (a gap)'],
      ['the last committed transaction not read (its commit not seen)', [[0, 0, 0], [0, 1, 1], [0, 2, 2]], 'partition 0: read up to offset 3, but its committed records end at offset 7'],
    ])('judges %s', (_case, reads, expected) => {
      // Proves a read_committed consumer passes only when it reads every committed record once and nothing of a marker or an aborted transaction.
      expect(verdictOf(reads, spans, ranges).verdict).toBe(expected);
    });
  });

  it('refuses a partition it cannot keep', () => {
    // Proves a partition number beyond the byte the tally keeps it in is a bug that stops the bench, not a silent wrap.
    expect(() => new ConsumeTally(6, tiled, 10).add(TALLY_PARTITIONS_MAX, 0, keyOf(0), 210)).toThrow(/outside/);
  });

  it('counts records read that no acknowledged send wrote', () => {
    // Proves a record at a committed offset whose key no acknowledged range names (a layout and ranges that disagree) is reported, not silently counted.
    const fourInPartitionZero = spansOf([
      [0, [[0, 4]]],
      [1, [[0, 2]]],
    ]);
    expect(verdictOf([...everything, [0, 3, 5]], fourInPartitionZero).verdict).toBe('1 records were read that no acknowledged send wrote');
  });
});

describe('kafkaRatios', () => {
  const settings: KafkaRatioSettings = { putBodyBytes: MIB, jetStreamPayloadBytes: KIB, getBodyBytes: MIB, getsInFlight: 4, lingerMs: 5, produceGoalMin: 0.5, produceFloorGoalMin: 0.8, consumeGoalMin: 0.8 };

  function baseline(kind: BaselineResult['kind'], payloadBytes: number, concurrency: number, bytesPerSecond: number, p99Ms: number): BaselineResult {
    return {
      kind,
      label: `${kind} ${payloadBytes}`,
      payloadBytes,
      concurrency,
      operations: 100,
      failures: 0,
      elapsedMs: 1_000,
      operationsPerSecond: 100,
      bytesPerSecond,
      latency: summarizeLatencies([p99Ms / 2, p99Ms]),
    };
  }

  const BASELINES = [
    baseline('s3-put', MIB, 1, 30_000_000, 40),
    baseline('s3-put', MIB, 8, 100_000_000, 150),
    baseline('jetstream-publish', KIB, 8, 1_000_000, 5),
    baseline('s3-get', MIB, 4, 200_000_000, 30),
  ];

  function produce(bytesPerSecond: number, latenciesMs: number[], offsetCheckFailure: string | null = null): KafkaProduceResult {
    return {
      sends: latenciesMs.length,
      failedSends: 0,
      firstFailureMessage: null,
      stoppedEarly: false,
      records: 1_000,
      bytes: 210_000,
      warmupRecords: 0,
      elapsedMs: 1_000,
      bytesPerSecond,
      recordsPerSecond: 100_000,
      latency: summarizeLatencies(latenciesMs),
      offsetCheckFailure,
      cpuSecondsPerMegabyte: null,
      benchCpuSecondsPerMegabyte: null,
      rssMaxBytes: null,
    };
  }

  function consume(bytesPerSecond: number, checkFailure: string | null = null, commitIntervalMs: number | null = 5_000): KafkaConsumeResult {
    return {
      groupId: 'bench_kafka_1',
      commitIntervalMs,
      commits: commitIntervalMs === null ? 10 : 1,
      records: 1_000,
      recordsExpected: 1_000,
      bytes: 210_000,
      joinMs: 3_000,
      elapsedMs: 1_000,
      bytesPerSecond,
      recordsPerSecond: 200_000,
      fetches: 10,
      waitedFetches: 0,
      fetchLatency: summarizeLatencies([10, 20]),
      checkFailure,
      stoppedBecause: null,
      cpuSecondsPerMegabyte: null,
      benchCpuSecondsPerMegabyte: null,
      rssMaxBytes: null,
    };
  }

  function kafka(
    produced: KafkaProduceResult,
    consumed: KafkaConsumeResult | null,
    transactional: KafkaTransactionalProduceResult | null = null,
    consumedEveryBatch: KafkaConsumeResult | null = null,
  ): KafkaResult {
    return {
      topic: 'bench_kafka',
      partitions: 8,
      brokers: ['127.0.0.1:1'],
      acks: -1,
      idempotent: true,
      producers: 8,
      sendsInFlight: 8,
      recordsPerSend: 4_993,
      keyBytes: 10,
      valueBytes: 200,
      produce: produced,
      transactionalProduce: transactional,
      consume: consumed,
      consumeEveryBatch: consumedEveryBatch,
      clientErrors: 0,
      firstClientErrors: [],
    };
  }

  it('divides produce MB/s by raw PUTs at the same in-flight count, its p99 by the ack bound, and consume MB/s by raw GETs', () => {
    // Proves each figure's baseline: PUT 1 MiB at 8 in flight (not the sequential one), the bound 2 × (150 + 5) + 5 = 315 ms, GET 1 MiB at 4 in flight.
    const ratios = kafkaRatios(kafka(produce(60_000_000, [100, 315]), consume(50_000_000)), BASELINES, null, settings);
    expect(ratios.map((entry) => [entry.value, entry.baseline, entry.ratio, entry.goal])).toEqual([
      [60_000_000, 100_000_000, 0.6, { minimum: 0.5, met: true }],
      [315, 315, 1, undefined],
      [50_000_000, 200_000_000, 0.25, { minimum: 0.8, met: false }],
    ]);
    expect(ratios.map((entry) => entry.text)).toEqual([
      'kafka produce: 60.0 MB/s, 100 000 records/s = 0.60 × raw S3 PUT MB/s (1 MiB, 8 in flight); goal ≥ 0.50 ×: met',
      'kafka produce: p99 ack 315 ms = 1.0 × (2 × (S3 PUT p99 + JetStream publish p99, 8 in flight) + linger 5 ms = 315 ms)',
      'kafka consume, committing every 5.0 s: 50.0 MB/s, 200 000 records/s = 0.25 × raw S3 GET MB/s (1 MiB, 4 in flight); goal ≥ 0.80 ×: not met',
    ]);
  });

  it('divides both consume series by raw GETs, the goal only for the one committing at an interval', () => {
    // Proves the series committing after every batch (kafkajs's default, a WAL object per commit) is reported beside the goal's series and never judged.
    const ratios = kafkaRatios(
      kafka(produce(60_000_000, [10]), consume(100_000_000), null, consume(40_000_000, null, null)),
      BASELINES.filter((entry) => entry.kind === 's3-get'),
      null,
      settings,
    );
    expect(ratios.map((entry) => [entry.text, entry.goal])).toEqual([
      ['kafka consume, committing every 5.0 s: 100.0 MB/s, 200 000 records/s = 0.50 × raw S3 GET MB/s (1 MiB, 4 in flight); goal ≥ 0.80 ×: not met', { minimum: 0.8, met: false }],
      ['kafka consume, committing every batch: 40.0 MB/s, 200 000 records/s = 0.20 × raw S3 GET MB/s (1 MiB, 4 in flight)', undefined],
    ]);
  });

  it('judges consume against the goal of 0.8 × raw GETs', () => {
    // Proves issue 43's consume goal is met at 0.8 × raw GET MB/s and not below it.
    const [met] = kafkaRatios(kafka(produce(60_000_000, [10]), consume(160_000_000)), BASELINES.filter((entry) => entry.kind === 's3-get'), null, settings);
    expect([met!.ratio, met!.goal]).toEqual([0.8, { minimum: 0.8, met: true }]);
    expect(met!.text.endsWith('= 0.80 × raw S3 GET MB/s (1 MiB, 4 in flight); goal ≥ 0.80 ×: met')).toBe(true);
  });

  it.each<[string, number, string]>([
    ['well below the goal', 20_000_000, '0.20 × raw S3 PUT MB/s (1 MiB, 8 in flight); goal ≥ 0.50 ×: not met'],
    ['just below the goal, printed as the goal itself', 49_800_000, '0.50 × raw S3 PUT MB/s (1 MiB, 8 in flight); goal ≥ 0.50 ×: not met (0.50 ×)'],
    ['exactly at the goal', 50_000_000, '0.50 × raw S3 PUT MB/s (1 MiB, 8 in flight); goal ≥ 0.50 ×: met'],
  ])('judges the produce goal %s', (_case, bytesPerSecond, ending) => {
    // Proves "not met" is never printed beside a ratio that reads as met without the figure that explains it.
    const [ratio] = kafkaRatios(kafka(produce(bytesPerSecond, [10]), null), BASELINES, null, settings);
    expect(ratio!.text.endsWith(ending)).toBe(true);
    expect(ratio!.goal!.met).toBe(bytesPerSecond >= 50_000_000);
  });

  it('gives no ratio to a series whose records did not check out', () => {
    // Proves a bench that read or wrote the wrong records never prints a figure for them.
    expect(kafkaRatios(kafka(produce(60_000_000, [10], 'partition 0: the acknowledged batches leave a gap at offset 3'), consume(50_000_000)), BASELINES, null, settings).map((entry) => entry.text)).toEqual([
      expect.stringMatching(/^kafka consume, committing every 5.0 s: /),
    ]);
    expect(kafkaRatios(kafka(produce(60_000_000, [10]), consume(50_000_000, '3 acknowledged records were not read')), BASELINES, null, settings).map((entry) => entry.text)).toEqual([
      expect.stringMatching(/^kafka produce: 60/),
      expect.stringMatching(/^kafka produce: p99/),
    ]);
  });

  it('leaves out a ratio whose baseline the run did not measure', () => {
    // Proves a run interrupted before a baseline prints only what it can compare.
    const onlyPut = BASELINES.filter((entry) => entry.kind === 's3-put');
    expect(kafkaRatios(kafka(produce(60_000_000, [10]), consume(50_000_000)), onlyPut, null, settings).map((entry) => entry.text)).toEqual([expect.stringMatching(/^kafka produce: 60/)]);
    expect(kafkaRatios(kafka(produce(60_000_000, [10]), consume(50_000_000)), [], null, settings)).toEqual([]);
  });

  function transactional(bytesPerSecond: number, latenciesMs: number[], offsetCheckFailure: string | null = null): KafkaTransactionalProduceResult {
    return {
      ...produce(bytesPerSecond, latenciesMs, offsetCheckFailure),
      recordsPerSecond: 50_000,
      sendsPerTransaction: 1,
      transactions: latenciesMs.length,
      failedTransactions: 0,
      transactionsInFlight: 8,
      transactionMarkers: 16,
      offsetsBetweenBatches: 8,
    };
  }

  /** The floor write path: 200 000 rows/s of 270 bytes of JSON. */
  const FLOOR: FloorRate = { rowsPerSecond: 200_000, payloadBytesPerSecond: 54_000_000 };

  it('compares both produce series with raw PUTs, the floor write path and the ack bound, the goal only for the idempotent one', () => {
    // Proves the transactional series is reported exactly as the idempotent one, each with its share of the floor beside its ratio to raw PUT.
    const ratios = kafkaRatios(kafka(produce(60_000_000, [100, 315]), consume(50_000_000), transactional(40_000_000, [200, 630])), BASELINES, FLOOR, settings);
    expect(ratios.map((entry) => entry.text)).toEqual([
      'kafka produce: 60.0 MB/s, 100 000 records/s = 0.60 × raw S3 PUT MB/s (1 MiB, 8 in flight); goal ≥ 0.50 ×: met',
      'kafka produce: 100 000 records/s of 210 B = 0.50 × floor write path rows/s (200 000 rows/s of 270 B of JSON)',
      'kafka produce: 60.0 MB/s of keys and values = 1.1 × floor write path MB/s (54.0 MB/s of JSON rows); goal ≥ 0.80 ×: met',
      'kafka produce: p99 ack 315 ms = 1.0 × (2 × (S3 PUT p99 + JetStream publish p99, 8 in flight) + linger 5 ms = 315 ms)',
      'kafka transactional produce: 40.0 MB/s, 50 000 records/s = 0.40 × raw S3 PUT MB/s (1 MiB, 8 in flight)',
      'kafka transactional produce: 50 000 records/s of 210 B = 0.25 × floor write path rows/s (200 000 rows/s of 270 B of JSON)',
      'kafka transactional produce: 40.0 MB/s of keys and values = 0.74 × floor write path MB/s (54.0 MB/s of JSON rows)',
      'kafka transactional produce: p99 ack 630 ms = 2.0 × (2 × (S3 PUT p99 + JetStream publish p99, 8 in flight) + linger 5 ms = 315 ms)',
      'kafka consume, committing every 5.0 s: 50.0 MB/s, 200 000 records/s = 0.25 × raw S3 GET MB/s (1 MiB, 4 in flight); goal ≥ 0.80 ×: not met',
    ]);
    expect(ratios.map((entry) => entry.goal)).toEqual([
      { minimum: 0.5, met: true },
      undefined,
      { minimum: 0.8, met: true },
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      { minimum: 0.8, met: false },
    ]);
  });

  it('gives the transactional series no ratio when its offsets did not check out, and keeps the others', () => {
    // Proves a transactional series whose batches the log cannot hold prints no figure, while the idempotent series before it still does.
    const texts = kafkaRatios(kafka(produce(60_000_000, [10]), null, transactional(40_000_000, [10], 'partition 0: the acknowledged batches leave a gap at offset 9')), BASELINES, FLOOR, settings).map(
      (entry) => entry.text,
    );
    expect(texts).toHaveLength(4);
    expect(texts.every((text) => text.startsWith('kafka produce: '))).toBe(true);
  });
});

/** A produce series of 10 000 records of 1 034 bytes at `recordsPerSecond`, for the floor shares. */
function floorProduce(recordsPerSecond: number, offsetCheckFailure: string | null = null): KafkaProduceResult {
  return {
    sends: 10,
    failedSends: 0,
    firstFailureMessage: null,
    stoppedEarly: false,
    records: 10_000,
    bytes: 10_340_000,
    warmupRecords: 0,
    elapsedMs: 1_000,
    bytesPerSecond: recordsPerSecond * 1_034,
    recordsPerSecond,
    latency: summarizeLatencies([10]),
    offsetCheckFailure,
    cpuSecondsPerMegabyte: null,
    benchCpuSecondsPerMegabyte: null,
    rssMaxBytes: null,
  };
}

describe('kafkaFloorBytesShare', () => {
  const produced = (bytesPerSecond: number, offsetCheckFailure: string | null = null): KafkaProduceResult => floorProduce(bytesPerSecond / 1_034, offsetCheckFailure);
  const floor: FloorRate = { rowsPerSecond: 100_000, payloadBytesPerSecond: 30_000_000 };

  it.each<[string, number, FloorRate | null, string | null, number | null, [number, number, number, { minimum: number; met: boolean } | undefined] | null]>([
    ['a series above the goal', 34_000_000, floor, null, 0.8, [34_000_000, 30_000_000, 34 / 30, { minimum: 0.8, met: true }]],
    ['a series exactly at the goal', 24_000_000, floor, null, 0.8, [24_000_000, 30_000_000, 0.8, { minimum: 0.8, met: true }]],
    ['a series below the goal', 21_000_000, floor, null, 0.8, [21_000_000, 30_000_000, 0.7, { minimum: 0.8, met: false }]],
    ['a series without a goal (the transactional one)', 21_000_000, floor, null, null, [21_000_000, 30_000_000, 0.7, undefined]],
    ['no floor measured', 34_000_000, null, null, 0.8, null],
    ['a floor that acknowledged nothing', 34_000_000, { rowsPerSecond: 0, payloadBytesPerSecond: 0 }, null, 0.8, null],
    ['a series whose offsets did not check out', 34_000_000, floor, 'partition 0: a gap', 0.8, null],
  ])('divides %s by the floor MB/s', (_case, bytesPerSecond, floorRate, offsetCheckFailure, goalMin, expected) => {
    // Proves the share is MB/s over MB/s (not records over rows), judged against the goal only when one is given, and absent when it would mean nothing.
    const share = kafkaFloorBytesShare('kafka produce', produced(bytesPerSecond, offsetCheckFailure), floorRate, goalMin);
    expect(share === null ? null : [share.value, share.baseline, share.ratio, share.goal]).toEqual(expected === null ? null : [expected[0], expected[1], expect.closeTo(expected[2], 10), expected[3]]);
  });
});

describe('kafkaFloorShare', () => {
  const produce = floorProduce;

  it.each<[string, number, FloorRate | null, string | null, [number, number, number] | null]>([
    ['a series at under half the floor', 42_000, { rowsPerSecond: 100_000, payloadBytesPerSecond: 27_000_000 }, null, [42_000, 100_000, 0.42]],
    ['a series above the floor (its records are counted, not their bytes)', 150_000, { rowsPerSecond: 100_000, payloadBytesPerSecond: 27_000_000 }, null, [150_000, 100_000, 1.5]],
    ['no floor measured (an interrupted run)', 42_000, null, null, null],
    ['a floor that acknowledged nothing', 42_000, { rowsPerSecond: 0, payloadBytesPerSecond: 0 }, null, null],
    ['a series whose offsets did not check out', 42_000, { rowsPerSecond: 100_000, payloadBytesPerSecond: 27_000_000 }, 'partition 0: a gap', null],
  ])('divides %s', (_case, recordsPerSecond, floor, offsetCheckFailure, expected) => {
    // Proves the share is the series' records/s over the floor's rows/s, and that a missing floor or a failed check gives no figure rather than a wrong one.
    const share = kafkaFloorShare('kafka produce', produce(recordsPerSecond, offsetCheckFailure), 1_034, floor);
    expect(share === null ? null : [share.value, share.baseline, share.ratio]).toEqual(expected);
  });

  it('states the sizes of a record and of a floor row beside the share', () => {
    // Proves the reader sees that one record is compared with one row of another size.
    expect(kafkaFloorShare('kafka transactional produce', produce(42_000), 1_034, { rowsPerSecond: 100_000, payloadBytesPerSecond: 27_000_000 })!.text).toBe(
      'kafka transactional produce: 42 000 records/s of 1 034 B = 0.42 × floor write path rows/s (100 000 rows/s of 270 B of JSON)',
    );
  });
});

describe('describeKafkaProduce', () => {
  const base: KafkaProduceResult = {
    sends: 20,
    failedSends: 0,
    firstFailureMessage: null,
    stoppedEarly: false,
    records: 20_000,
    bytes: 20_680_000,
    warmupRecords: 800,
    elapsedMs: 2_000,
    bytesPerSecond: 10_340_000,
    recordsPerSecond: 10_000,
    latency: summarizeLatencies([100, 300]),
    offsetCheckFailure: null,
    cpuSecondsPerMegabyte: null,
    benchCpuSecondsPerMegabyte: null,
    rssMaxBytes: null,
  };

  it.each<[string, KafkaProduceResult | KafkaTransactionalProduceResult, string]>([
    ['the idempotent series', base, 'produce: 20 000 records in 20 sends, 10.3 MB/s, 10 000 records/s, ack p50 100 ms, p99 300 ms, offsets check ok'],
    [
      'the transactional series, with a failed transaction',
      { ...base, failedSends: 1, sendsPerTransaction: 1, transactions: 20, failedTransactions: 1, transactionsInFlight: 8, transactionMarkers: 84, offsetsBetweenBatches: 76, offsetCheckFailure: 'partition 1: a gap' },
      'transactional produce: 20 000 records in 20 sends in 20 committed transactions (1 transactions failed), 10.3 MB/s, 10 000 records/s, commit ack p50 100 ms, p99 300 ms; OFFSETS CHECK FAILED: partition 1: a gap',
    ],
  ])('describes %s', (_case, produce, expected) => {
    // Proves the progress line says which series it is and what its latency measures.
    expect(describeKafkaProduce(produce)).toBe(expected);
  });
});
