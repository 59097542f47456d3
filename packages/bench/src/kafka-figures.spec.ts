import { BENCH_KAFKA } from './bench-limits';
import {
  checkAcknowledgedOffsets,
  ConsumeTally,
  kafkaRatios,
  kafkaRecordKey,
  kafkaSendCount,
  kafkaSendOf,
  recordNumberOfKey,
  TALLY_PARTITIONS_MAX,
  type AcknowledgedSend,
  type KafkaRatioSettings,
} from './kafka-figures';
import type { BaselineResult, KafkaConsumeResult, KafkaProduceResult, KafkaResult } from './results';
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
  const send = (partition: number, baseOffset: number, records: number): AcknowledgedSend => ({ partition, baseOffset, records });

  it.each<[string, AcknowledgedSend[], string | null, [number, number][]]>([
    ['batches that tile each partition, acknowledged in any order', [send(1, 4, 4), send(0, 0, 3), send(1, 0, 4), send(0, 3, 1)], null, [[0, 4], [1, 8]]],
    ['no send at all', [], null, []],
    ['a gap', [send(0, 0, 3), send(0, 5, 3)], 'partition 0: the acknowledged batches leave a gap at offset 3', [[0, 6]]],
    ['a first batch not at offset 0', [send(2, 1, 3)], 'partition 2: the acknowledged batches leave a gap at offset 0', [[2, 3]]],
    ['two batches given the same offsets', [send(0, 0, 3), send(0, 0, 3)], 'partition 0: the acknowledged batches overlap at offset 3', [[0, 6]]],
    ['an empty batch', [send(0, 0, 0)], 'partition 0: a send of 0 records acknowledged at offset 0', [[0, 0]]],
  ])('judges %s', (_case, sends, failure, recordsByPartition) => {
    // Proves an acknowledgement the log cannot hold (a gap, an overlap) is caught, and the records per partition are what the consumer must read.
    const check = checkAcknowledgedOffsets(sends);
    expect(check.failure).toBe(failure);
    expect([...check.recordsByPartition]).toEqual(recordsByPartition);
  });
});

describe('ConsumeTally', () => {
  /** Two partitions: records 0–2 went to partition 0 and records 3–4 to partition 1. */
  const acknowledged = [
    { partition: 0, firstRecord: 0, records: 3 },
    { partition: 1, firstRecord: 3, records: 2 },
  ];
  const recordsByPartition = new Map([
    [0, 3],
    [1, 2],
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

  it.each<[string, Read[], string | null]>([
    ['every record once, partitions interleaved', everything, null],
    ['a partition not read to its end', everything.slice(0, 4), 'partition 0: read up to offset 2, but 3 records were acknowledged'],
    ['a gap in the offsets', [[0, 0, 0], [0, 2, 1]], 'partition 0: read offset 2 where 1 was next (a gap)'],
    ['an offset read twice', [...everything, [1, 1, 4]], 'partition 1: read offset 1 where 2 was next (a repeat)'],
    ['a record read twice at two offsets', [[0, 0, 0], [0, 1, 0], [0, 2, 2], [1, 0, 3], [1, 1, 4]], 'partition 0: record 0 read again at offset 1'],
    ['a key the bench did not write', [[0, 0, key('hello')]], 'partition 0: the record at offset 0 has a key no send wrote'],
    ['a record number past the last', [[0, 0, 7]], 'partition 0: the record at offset 0 has a key no send wrote'],
    ['records swapped between partitions', [[0, 0, 0], [0, 1, 1], [0, 2, 3], [1, 0, 2], [1, 1, 4]], 'record 2 was sent to partition 0 but read from partition 1'],
    ['an acknowledged record replaced by another', [[0, 0, 0], [0, 1, 1], [0, 2, 5], [1, 0, 3], [1, 1, 4]], '1 acknowledged records were not read (the first: record 2)'],
  ])('judges %s', (_case, reads, expected) => {
    // Proves the consume series passes only when every acknowledged record was read exactly once at offsets without gap or repeat.
    const tally = new ConsumeTally(6, 10);
    for (const [partition, offset, recordNumber] of reads) {
      const bytes = typeof recordNumber === 'number' ? keyOf(recordNumber) : recordNumber;
      tally.add(partition, offset, bytes, 210);
    }
    expect(tally.verdict(recordsByPartition, acknowledged)).toBe(expected);
    expect(tally.records).toBe(reads.length);
    expect(tally.bytes).toBe(210 * reads.length);
  });

  it('refuses a partition it cannot keep', () => {
    // Proves a partition number beyond the byte the tally keeps it in is a bug that stops the bench, not a silent wrap.
    expect(() => new ConsumeTally(6, 10).add(TALLY_PARTITIONS_MAX, 0, keyOf(0), 210)).toThrow(/outside/);
  });

  it('counts records read that no acknowledged send wrote', () => {
    // Proves a record of a failed send that was written anyway is reported, not silently counted.
    const tally = new ConsumeTally(6, 10);
    everything.forEach(([partition, offset, recordNumber]) => tally.add(partition, offset, keyOf(recordNumber as number), 210));
    tally.add(0, 3, keyOf(5), 210);
    expect(tally.verdict(new Map([[0, 4], [1, 2]]), acknowledged)).toBe('1 records were read that no acknowledged send wrote');
  });
});

describe('kafkaRatios', () => {
  const settings: KafkaRatioSettings = { putBodyBytes: MIB, jetStreamPayloadBytes: KIB, getBodyBytes: MIB, getsInFlight: 4, lingerMs: 5, produceGoalMin: 0.5 };

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

  function consume(bytesPerSecond: number, checkFailure: string | null = null): KafkaConsumeResult {
    return {
      groupId: 'bench_kafka_1',
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

  function kafka(produced: KafkaProduceResult, consumed: KafkaConsumeResult | null): KafkaResult {
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
      consume: consumed,
      clientErrors: 0,
      firstClientErrors: [],
    };
  }

  it('divides produce MB/s by raw PUTs at the same in-flight count, its p99 by the ack bound, and consume MB/s by raw GETs', () => {
    // Proves each figure's baseline: PUT 1 MiB at 8 in flight (not the sequential one), the bound 2 × (150 + 5) + 5 = 315 ms, GET 1 MiB at 4 in flight.
    const ratios = kafkaRatios(kafka(produce(60_000_000, [100, 315]), consume(50_000_000)), BASELINES, settings);
    expect(ratios.map((entry) => [entry.value, entry.baseline, entry.ratio, entry.goal])).toEqual([
      [60_000_000, 100_000_000, 0.6, { minimum: 0.5, met: true }],
      [315, 315, 1, undefined],
      [50_000_000, 200_000_000, 0.25, undefined],
    ]);
    expect(ratios.map((entry) => entry.text)).toEqual([
      'kafka produce: 60.0 MB/s, 100 000 records/s = 0.60 × raw S3 PUT MB/s (1 MiB, 8 in flight); goal ≥ 0.50 ×: met',
      'kafka produce: p99 ack 315 ms = 1.0 × (2 × (S3 PUT p99 + JetStream publish p99, 8 in flight) + linger 5 ms = 315 ms)',
      'kafka consume: 50.0 MB/s, 200 000 records/s = 0.25 × raw S3 GET MB/s (1 MiB, 4 in flight)',
    ]);
  });

  it.each<[string, number, string]>([
    ['well below the goal', 20_000_000, '0.20 × raw S3 PUT MB/s (1 MiB, 8 in flight); goal ≥ 0.50 ×: not met'],
    ['just below the goal, printed as the goal itself', 49_800_000, '0.50 × raw S3 PUT MB/s (1 MiB, 8 in flight); goal ≥ 0.50 ×: not met (0.50 ×)'],
    ['exactly at the goal', 50_000_000, '0.50 × raw S3 PUT MB/s (1 MiB, 8 in flight); goal ≥ 0.50 ×: met'],
  ])('judges the produce goal %s', (_case, bytesPerSecond, ending) => {
    // Proves "not met" is never printed beside a ratio that reads as met without the figure that explains it.
    const [ratio] = kafkaRatios(kafka(produce(bytesPerSecond, [10]), null), BASELINES, settings);
    expect(ratio!.text.endsWith(ending)).toBe(true);
    expect(ratio!.goal!.met).toBe(bytesPerSecond >= 50_000_000);
  });

  it('gives no ratio to a series whose records did not check out', () => {
    // Proves a bench that read or wrote the wrong records never prints a figure for them.
    expect(kafkaRatios(kafka(produce(60_000_000, [10], 'partition 0: the acknowledged batches leave a gap at offset 3'), consume(50_000_000)), BASELINES, settings).map((entry) => entry.text)).toEqual([
      expect.stringMatching(/^kafka consume/),
    ]);
    expect(kafkaRatios(kafka(produce(60_000_000, [10]), consume(50_000_000, '3 acknowledged records were not read')), BASELINES, settings).map((entry) => entry.text)).toEqual([
      expect.stringMatching(/^kafka produce: 60/),
      expect.stringMatching(/^kafka produce: p99/),
    ]);
  });

  it('leaves out a ratio whose baseline the run did not measure', () => {
    // Proves a run interrupted before a baseline prints only what it can compare.
    const onlyPut = BASELINES.filter((entry) => entry.kind === 's3-put');
    expect(kafkaRatios(kafka(produce(60_000_000, [10]), consume(50_000_000)), onlyPut, settings).map((entry) => entry.text)).toEqual([expect.stringMatching(/^kafka produce: 60/)]);
    expect(kafkaRatios(kafka(produce(60_000_000, [10]), consume(50_000_000)), [], settings)).toEqual([]);
  });
});
