import { LIMITS } from '@mink/config';
import { BENCH_BASELINES, BENCH_KAFKA, BENCH_SCAN } from './bench-limits';
import { formatCount, formatMegabytesPerSecond, formatMilliseconds, formatSeconds, formatSize } from './format';
import { findBaseline, minimumGoalText, ratioOf } from './ratio';
import type { BaselineResult, KafkaConsumeResult, KafkaProduceResult, KafkaResult, KafkaTransactionalProduceResult, Ratio, WriteScenarioResult } from './results';

/**
 * The pure side of the Kafka figures: which records each send carries, the keys that name them, the checks
 * that the acknowledged offsets and the records read are exactly the records produced, and the ratios
 * against the baselines of the same run. The kafkajs side is mink-kafka.ts.
 */

/** One send of the produce series: records `[firstRecord, firstRecord + records)`, all to `partition`. */
export interface KafkaSend {
  partition: number;
  firstRecord: number;
  records: number;
}

/** Sends that carry `records` records, `recordsPerSend` each (the last carries the remainder). */
export function kafkaSendCount(records: number, recordsPerSend: number): number {
  if (!Number.isSafeInteger(records) || records < 0) throw new Error(`records must be a whole number, got ${records}`);
  if (!Number.isSafeInteger(recordsPerSend) || recordsPerSend < 1) throw new Error(`records per send must be a positive integer, got ${recordsPerSend}`);
  return Math.ceil(records / recordsPerSend);
}

/**
 * Send `index` of a series of `records` records: consecutive record numbers from `firstRecord` (the series'
 * first), to partition `index mod partitions`, so consecutive sends go to every partition in turn.
 */
export function kafkaSendOf(index: number, records: number, recordsPerSend: number, partitions: number, firstRecord = 0): KafkaSend {
  const sends = kafkaSendCount(records, recordsPerSend);
  if (!Number.isSafeInteger(index) || index < 0 || index >= sends) throw new Error(`send ${index} is outside the series of ${sends} sends`);
  if (!Number.isSafeInteger(partitions) || partitions < 1) throw new Error(`partitions must be a positive integer, got ${partitions}`);
  const start = index * recordsPerSend;
  return { partition: index % partitions, firstRecord: firstRecord + start, records: Math.min(recordsPerSend, records - start) };
}

/** Transactions that carry the `sends` sends of a series, `sendsPerTransaction` each (the last carries the remainder). */
export function kafkaTransactionCount(sends: number, sendsPerTransaction: number): number {
  if (!Number.isSafeInteger(sendsPerTransaction) || sendsPerTransaction < 1) throw new Error(`sends per transaction must be a positive integer, got ${sendsPerTransaction}`);
  if (!Number.isSafeInteger(sends) || sends < 0) throw new Error(`sends must be a whole number, got ${sends}`);
  return Math.ceil(sends / sendsPerTransaction);
}

/**
 * The sends of transaction `index` of a series of `records` records: sends `index × sendsPerTransaction`
 * onwards, as `kafkaSendOf` numbers them, so the transactions of a series carry every send once, in order.
 */
export function kafkaTransactionOf(index: number, records: number, recordsPerSend: number, partitions: number, sendsPerTransaction: number, firstRecord = 0): KafkaSend[] {
  const sends = kafkaSendCount(records, recordsPerSend);
  const transactions = kafkaTransactionCount(sends, sendsPerTransaction);
  if (!Number.isSafeInteger(index) || index < 0 || index >= transactions) throw new Error(`transaction ${index} is outside the series of ${transactions} transactions`);
  const first = index * sendsPerTransaction;
  return Array.from({ length: Math.min(sendsPerTransaction, sends - first) }, (_, offset) => kafkaSendOf(first + offset, records, recordsPerSend, partitions, firstRecord));
}

/** The key of record `recordNumber`: its number in `keyBytes` decimal digits, so the consumer can tell which record it read. */
export function kafkaRecordKey(recordNumber: number, keyBytes: number = BENCH_KAFKA.keyBytes): string {
  const digits = String(recordNumber);
  if (!Number.isSafeInteger(recordNumber) || recordNumber < 0 || digits.length > keyBytes) throw new Error(`record number ${recordNumber} does not fit a key of ${keyBytes} digits`);
  return digits.padStart(keyBytes, '0');
}

/** The record number a key names, or null for a key `kafkaRecordKey` did not write (absent, another length, not digits). */
export function recordNumberOfKey(key: Uint8Array | null, keyBytes: number = BENCH_KAFKA.keyBytes): number | null {
  if (key === null || key.byteLength !== keyBytes) return null;
  let value = 0;
  for (const byte of key) {
    if (byte < 0x30 || byte > 0x39) return null;
    value = value * 10 + (byte - 0x30);
  }
  return value;
}

/**
 * One acknowledged send: the partition it went to, the base offset the leader gave its batch, and its
 * records. `aborted`: the send was acknowledged inside a transaction that then failed, so its batch holds
 * offsets of the partition but a read_committed consumer must not read it.
 */
export interface AcknowledgedSend {
  partition: number;
  baseOffset: number;
  records: number;
  aborted?: boolean;
}

/** Offsets `[first, end)` of one partition. */
export interface OffsetSpan {
  first: number;
  end: number;
}

/**
 * What the acknowledged sends say a partition holds: its committed records, the spans of offsets they lie
 * at (in offset order, adjacent batches joined), and why the batches do not fit the partition's log (null
 * when they do).
 */
export interface OffsetCheck {
  recordsByPartition: Map<number, number>;
  /** A read_committed consumer reads every offset inside them and none outside (transaction markers, aborted batches). */
  committedSpans: Map<number, OffsetSpan[]>;
  /** Offsets of all partitions between acknowledged batches: the transaction markers that sit there (those after a partition's last batch are not counted). */
  offsetsBetweenBatches: number;
  failure: string | null;
}

/**
 * The acknowledged sends of a new topic must fill every partition's offsets from 0 without overlap, leaving
 * no more offsets between them than `markersByPartition` allows there: a transaction writes one marker (a
 * control batch of one offset) to every partition it sent to, and nothing else may sit between acknowledged
 * batches. Without markers that is a tiling. A gap beyond them is a record the log holds that no
 * acknowledgement accounts for (a failed send that was written anyway, or a leader that skipped offsets),
 * an overlap two batches given the same offsets. Markers after the last batch are not seen here.
 */
export function checkAcknowledgedOffsets(sends: readonly AcknowledgedSend[], markersByPartition: ReadonlyMap<number, number> = new Map()): OffsetCheck {
  const byPartition = new Map<number, AcknowledgedSend[]>();
  for (const send of sends) {
    const list = byPartition.get(send.partition) ?? [];
    list.push(send);
    byPartition.set(send.partition, list);
  }
  const recordsByPartition = new Map<number, number>();
  const committedSpans = new Map<number, OffsetSpan[]>();
  let offsetsBetweenBatches = 0;
  let failure: string | null = null;
  for (const partition of [...byPartition.keys()].sort((a, b) => a - b)) {
    const sorted = byPartition.get(partition)!.sort((a, b) => a.baseOffset - b.baseOffset);
    const markers = markersByPartition.get(partition) ?? 0;
    let end = 0;
    let between = 0;
    for (const send of sorted) {
      if (failure === null && !(send.records > 0)) failure = `partition ${partition}: a send of ${send.records} records acknowledged at offset ${send.baseOffset}`;
      if (send.baseOffset > end) between += send.baseOffset - end;
      if (failure === null && send.baseOffset < end) failure = `partition ${partition}: the acknowledged batches overlap at offset ${formatCount(end)}`;
      if (failure === null && between > markers) {
        failure = `partition ${partition}: the acknowledged batches leave a gap at offset ${formatCount(end)}` + (markers === 0 ? '' : ` (${formatCount(between)} offsets between them, ${formatCount(markers)} transaction markers)`);
      }
      end = Math.max(end, send.baseOffset + send.records);
    }
    offsetsBetweenBatches += between;
    const committed = sorted.filter((send) => send.aborted !== true && send.records > 0);
    recordsByPartition.set(partition, committed.reduce((sum, send) => sum + send.records, 0));
    const spans: OffsetSpan[] = [];
    for (const send of committed) {
      const last = spans[spans.length - 1];
      if (last !== undefined && send.baseOffset <= last.end) last.end = Math.max(last.end, send.baseOffset + send.records);
      else spans.push({ first: send.baseOffset, end: send.baseOffset + send.records });
    }
    committedSpans.set(partition, spans);
  }
  return { recordsByPartition, committedSpans, offsetsBetweenBatches, failure };
}

/** A range of record numbers whose send to `partition` was acknowledged. */
export interface RecordRange {
  partition: number;
  firstRecord: number;
  records: number;
}

/** Partitions a `ConsumeTally` tells apart: it keeps the partition each record was read from in one byte. */
export const TALLY_PARTITIONS_MAX = 254;

/**
 * The records a consumer has read, as it reads them: every partition's offsets must come in order from 0
 * without repeat, skipping only offsets outside the committed spans (transaction markers, aborted batches,
 * which a read_committed consumer never sees) and reading none of those; every key must name a record
 * (`recordNumberOfKey`) read once. Only the first problem is kept in words; `verdict` then compares what
 * was read with what was acknowledged.
 */
export class ConsumeTally {
  records = 0;
  bytes = 0;
  private readonly nextOffsets = new Map<number, number>();
  /** Per partition, the index of the first committed span that ends after its next offset. */
  private readonly spanIndexes = new Map<number, number>();
  /** Times each record number was read, saturating at 255. */
  private readonly timesRead: Uint8Array;
  /** The partition each record number was last read from, plus one (0: never read). */
  private readonly partitionRead: Uint8Array;
  private problem: string | null = null;

  /**
   * `recordNumbers`: keys name records `[0, recordNumbers)`; any other is a problem. `committedSpans`: where
   * each partition's committed records lie (`checkAcknowledgedOffsets`).
   */
  constructor(
    recordNumbers: number,
    private readonly committedSpans: ReadonlyMap<number, readonly OffsetSpan[]>,
    private readonly keyBytes: number = BENCH_KAFKA.keyBytes,
  ) {
    this.timesRead = new Uint8Array(recordNumbers);
    this.partitionRead = new Uint8Array(recordNumbers);
  }

  /** One record read from `partition` at `offset`, with its key and its key + value bytes. */
  add(partition: number, offset: number, key: Uint8Array | null, bytes: number): void {
    if (!Number.isSafeInteger(partition) || partition < 0 || partition >= TALLY_PARTITIONS_MAX) throw new Error(`partition ${partition} is outside [0, ${TALLY_PARTITIONS_MAX})`);
    this.records += 1;
    this.bytes += bytes;
    const spans = this.committedSpans.get(partition) ?? [];
    const expected = this.nextOffsets.get(partition) ?? 0;
    let spanIndex = this.spanIndexes.get(partition) ?? 0;
    // The next offset that holds a committed record; past the last one, any offset read is one too many.
    const nextCommitted = spanIndex < spans.length ? Math.max(expected, spans[spanIndex]!.first) : null;
    if (offset < expected) this.note(`partition ${partition}: read offset ${formatCount(offset)} where ${formatCount(nextCommitted ?? expected)} was next (a repeat)`);
    else if (nextCommitted !== null && offset > nextCommitted) this.note(`partition ${partition}: read offset ${formatCount(offset)} where ${formatCount(nextCommitted)} was next (a gap)`);
    else if (nextCommitted === null || offset < nextCommitted) this.note(`partition ${partition}: read offset ${formatCount(offset)}, which holds no committed record (a transaction marker or an aborted batch)`);
    const next = Math.max(expected, offset + 1);
    this.nextOffsets.set(partition, next);
    while (spanIndex < spans.length && spans[spanIndex]!.end <= next) spanIndex += 1;
    this.spanIndexes.set(partition, spanIndex);
    const recordNumber = recordNumberOfKey(key, this.keyBytes);
    if (recordNumber === null || recordNumber >= this.timesRead.length) {
      this.note(`partition ${partition}: the record at offset ${formatCount(offset)} has a key no send wrote`);
      return;
    }
    if (this.timesRead[recordNumber]! > 0) this.note(`partition ${partition}: record ${formatCount(recordNumber)} read again at offset ${formatCount(offset)}`);
    if (this.timesRead[recordNumber]! < 255) this.timesRead[recordNumber]! += 1;
    this.partitionRead[recordNumber] = partition + 1;
  }

  /** The offset after the last one read from `partition` (0 when none was). */
  nextOffset(partition: number): number {
    return this.nextOffsets.get(partition) ?? 0;
  }

  /**
   * Why the records read are not exactly the acknowledged ones, or null when they are: the first problem
   * seen while reading; a partition read to another offset than the end of its committed records;
   * acknowledged records not read, or read from another partition than they were sent to; records read
   * that no acknowledged send wrote.
   */
  verdict(acknowledged: readonly RecordRange[]): string | null {
    if (this.problem !== null) return this.problem;
    for (const partition of [...new Set([...this.committedSpans.keys(), ...this.nextOffsets.keys()])].sort((a, b) => a - b)) {
      const spans = this.committedSpans.get(partition) ?? [];
      const end = spans.length === 0 ? 0 : spans[spans.length - 1]!.end;
      if (this.nextOffset(partition) !== end) {
        return `partition ${partition}: read up to offset ${formatCount(this.nextOffset(partition))}, but its committed records end at offset ${formatCount(end)}`;
      }
    }
    const isAcknowledged = new Uint8Array(this.timesRead.length);
    let missing = 0;
    let firstMissing: number | null = null;
    let misplaced: string | null = null;
    for (const range of acknowledged) {
      for (let recordNumber = range.firstRecord; recordNumber < range.firstRecord + range.records; recordNumber++) {
        isAcknowledged[recordNumber] = 1;
        if (this.timesRead[recordNumber] === 0) {
          missing += 1;
          firstMissing ??= recordNumber;
        } else if (this.partitionRead[recordNumber] !== range.partition + 1) {
          misplaced ??= `record ${formatCount(recordNumber)} was sent to partition ${range.partition} but read from partition ${this.partitionRead[recordNumber]! - 1}`;
        }
      }
    }
    if (missing > 0) return `${formatCount(missing)} acknowledged records were not read (the first: record ${formatCount(firstMissing!)})`;
    if (misplaced !== null) return misplaced;
    let unexpected = 0;
    for (let recordNumber = 0; recordNumber < this.timesRead.length; recordNumber++) {
      if (this.timesRead[recordNumber]! > 0 && isAcknowledged[recordNumber] === 0) unexpected += 1;
    }
    if (unexpected > 0) return `${formatCount(unexpected)} records were read that no acknowledged send wrote`;
    return null;
  }

  private note(problem: string): void {
    this.problem ??= problem;
  }
}

/** What the Kafka ratios are taken against: the baselines' sizes and in-flight counts, and the WAL linger of the ack bound. */
export interface KafkaRatioSettings {
  /** The S3 PUT baseline's body: a full WAL object. */
  putBodyBytes: number;
  jetStreamPayloadBytes: number;
  /** The S3 GET baseline the consume series is compared with (the scan figures' own). */
  getBodyBytes: number;
  getsInFlight: number;
  lingerMs: number;
  /** The goal: produce MB/s at least this fraction of raw PUT MB/s. */
  produceGoalMin: number;
  /** The goal: the idempotent producer's MB/s at least this fraction of the floor write path's MB/s. */
  produceFloorGoalMin: number;
  /** The goal: consume MB/s at least this fraction of raw GET MB/s. */
  consumeGoalMin: number;
}

export const KAFKA_RATIO_SETTINGS: KafkaRatioSettings = {
  putBodyBytes: LIMITS.walFlushBytes,
  jetStreamPayloadBytes: BENCH_BASELINES.jetStreamPayloadBytes,
  getBodyBytes: BENCH_SCAN.getBodyBytes,
  getsInFlight: BENCH_SCAN.scansInFlight,
  lingerMs: LIMITS.walLingerMs,
  produceGoalMin: BENCH_KAFKA.goals.produceMin,
  produceFloorGoalMin: BENCH_KAFKA.goals.produceFloorMin,
  consumeGoalMin: BENCH_KAFKA.goals.consumeMin,
};

/**
 * The Kafka figures against the baselines of the same run:
 * - each produce series' MB/s of keys and values against raw S3 PUTs of a full WAL object with as many in
 *   flight as sends (a Kafka record batch ends up in WAL objects, so S3 bounds it), the idempotent series
 *   with the issue's goal;
 * - each produce series' records/s against the floor write path's rows/s (`kafkaFloorShare`);
 * - each produce series' p99 ack against 2 × (raw PUT p99 + JetStream publish p99, both at that in-flight
 *   count) + the WAL linger, the write path's ack bound (a transaction's also pays AddPartitionsToTxn and
 *   EndTxn, so it is expected above it);
 * - each consume series' MB/s against raw S3 GETs of 1 MiB, 4 in flight (the scan figures' baseline); the
 *   goal is the series committing at an interval's, the one committing after every batch has none.
 * A series whose records did not check out, or whose baseline is missing, has no ratio.
 */
export function kafkaRatios(
  kafka: KafkaResult,
  baselines: readonly BaselineResult[],
  floor: FloorRate | null,
  settings: KafkaRatioSettings = KAFKA_RATIO_SETTINGS,
): Ratio[] {
  const ratios: (Ratio | null)[] = [];
  const inFlight = kafka.sendsInFlight;
  const putConcurrent = findBaseline(baselines, { kind: 's3-put', payloadBytes: settings.putBodyBytes, concurrency: inFlight });
  const jetStreamConcurrent = findBaseline(baselines, { kind: 'jetstream-publish', payloadBytes: settings.jetStreamPayloadBytes, concurrency: inFlight });
  const getConcurrent = findBaseline(baselines, { kind: 's3-get', payloadBytes: settings.getBodyBytes, concurrency: settings.getsInFlight });
  // The issue's goal is the idempotent producer's; the transactional series is compared with the same baselines without one.
  const series: { label: string; produce: KafkaProduceResult; goalMin: number | null }[] = [
    { label: 'kafka produce', produce: kafka.produce, goalMin: settings.produceGoalMin },
    ...(kafka.transactionalProduce === null ? [] : [{ label: 'kafka transactional produce', produce: kafka.transactionalProduce, goalMin: null }]),
  ];
  for (const { label, produce, goalMin } of series) {
    if (produce.offsetCheckFailure !== null) continue;
    if (putConcurrent) {
      const ratio = ratioOf(
        (quotient) =>
          `${label}: ${formatMegabytesPerSecond(produce.bytesPerSecond)} MB/s, ${formatCount(produce.recordsPerSecond)} records/s = ${quotient} × raw S3 PUT MB/s ` +
          `(${formatSize(settings.putBodyBytes)}, ${inFlight} in flight)` +
          (goalMin === null ? '' : minimumGoalText(produce.bytesPerSecond / putConcurrent.bytesPerSecond, goalMin)),
        produce.bytesPerSecond,
        putConcurrent.bytesPerSecond,
      );
      ratios.push(ratio === null || goalMin === null ? ratio : { ...ratio, goal: { minimum: goalMin, met: ratio.ratio >= goalMin } });
    }
    ratios.push(kafkaFloorShare(label, produce, kafka.keyBytes + kafka.valueBytes, floor));
    ratios.push(kafkaFloorBytesShare(label, produce, floor, goalMin === null ? null : settings.produceFloorGoalMin));
    if (putConcurrent && jetStreamConcurrent) {
      const boundMs = 2 * (putConcurrent.latency.p99Ms + jetStreamConcurrent.latency.p99Ms) + settings.lingerMs;
      ratios.push(
        ratioOf(
          (quotient) =>
            `${label}: p99 ack ${formatMilliseconds(produce.latency.p99Ms)} ms = ${quotient} × (2 × (S3 PUT p99 + JetStream publish p99, ${inFlight} in flight) + ` +
            `linger ${settings.lingerMs} ms = ${formatMilliseconds(boundMs)} ms)`,
          produce.latency.p99Ms,
          boundMs,
        ),
      );
    }
  }
  const consumeSeries = [
    { consume: kafka.consume, goalMin: settings.consumeGoalMin },
    { consume: kafka.consumeEveryBatch, goalMin: null },
  ];
  for (const { consume, goalMin } of consumeSeries) {
    if (consume === null || consume.checkFailure !== null || !getConcurrent) continue;
    const ratio = ratioOf(
      (quotient) =>
        `kafka ${consumeLabelOf(consume)}: ${formatMegabytesPerSecond(consume.bytesPerSecond)} MB/s, ${formatCount(consume.recordsPerSecond)} records/s = ${quotient} × raw S3 GET MB/s ` +
        `(${formatSize(settings.getBodyBytes)}, ${settings.getsInFlight} in flight)` +
        (goalMin === null ? '' : minimumGoalText(consume.bytesPerSecond / getConcurrent.bytesPerSecond, goalMin)),
      consume.bytesPerSecond,
      getConcurrent.bytesPerSecond,
    );
    ratios.push(ratio === null || goalMin === null ? ratio : { ...ratio, goal: { minimum: goalMin, met: ratio.ratio >= goalMin } });
  }
  return ratios.filter((entry): entry is Ratio => entry !== null);
}

/** What the floor share needs of the floor write path's run (write-floor.ts): its rows/s, and its JSON bytes/s for the size of a row. */
export type FloorRate = Pick<WriteScenarioResult, 'rowsPerSecond' | 'payloadBytesPerSecond'>;

/**
 * A produce series' records/s as a share of the floor write path's rows/s: the floor is mink's own lower
 * bound of an append on this machine (leader processes that only upload and commit, under the append
 * scenarios' load), so the share says how much of it the Kafka path reaches, one record against one row.
 * A record (key + value, `recordBytes`) is larger than a floor row, whose size the text states beside it;
 * null when the series' offsets did not check out or there is no floor rate to divide by.
 */
export function kafkaFloorShare(label: string, produce: KafkaProduceResult, recordBytes: number, floor: FloorRate | null): Ratio | null {
  if (floor === null || produce.offsetCheckFailure !== null) return null;
  const rowBytes = floor.rowsPerSecond > 0 ? floor.payloadBytesPerSecond / floor.rowsPerSecond : 0;
  return ratioOf(
    (quotient) =>
      `${label}: ${formatCount(produce.recordsPerSecond)} records/s of ${formatCount(recordBytes)} B = ${quotient} × floor write path rows/s ` +
      `(${formatCount(floor.rowsPerSecond)} rows/s of ${formatCount(rowBytes)} B of JSON)`,
    produce.recordsPerSecond,
    floor.rowsPerSecond,
  );
}

/**
 * A produce series' MB/s of keys and values as a share of the floor write path's MB/s of JSON rows: issue
 * 43 holds the Kafka path to the floor by bytes, whatever the size of a record against a row. With a goal,
 * the ratio carries it; null when the series' offsets did not check out or there is no floor rate.
 */
export function kafkaFloorBytesShare(label: string, produce: KafkaProduceResult, floor: FloorRate | null, goalMin: number | null): Ratio | null {
  if (floor === null || produce.offsetCheckFailure !== null) return null;
  const ratio = ratioOf(
    (quotient) =>
      `${label}: ${formatMegabytesPerSecond(produce.bytesPerSecond)} MB/s of keys and values = ${quotient} × floor write path MB/s ` +
      `(${formatMegabytesPerSecond(floor.payloadBytesPerSecond)} MB/s of JSON rows)` +
      (goalMin === null ? '' : minimumGoalText(produce.bytesPerSecond / floor.payloadBytesPerSecond, goalMin)),
    produce.bytesPerSecond,
    floor.payloadBytesPerSecond,
  );
  return ratio === null || goalMin === null ? ratio : { ...ratio, goal: { minimum: goalMin, met: ratio.ratio >= goalMin } };
}

/**
 * "produce: 639 104 records in 128 sends, 13.7 MB/s, … p99 ack 210 ms, offsets check ok" for a progress
 * line; a transactional series also counts its transactions, and its latency is per transaction.
 */
export function describeKafkaProduce(produce: KafkaProduceResult | KafkaTransactionalProduceResult): string {
  const transactional = 'transactions' in produce;
  return (
    `${transactional ? 'transactional produce' : 'produce'}: ${formatCount(produce.records)} records in ${formatCount(produce.sends)} sends` +
    (transactional ? ` in ${formatCount(produce.transactions)} committed transactions` : '') +
    (produce.failedSends > 0 ? ` (${produce.failedSends} ${transactional ? 'transactions ' : ''}failed)` : '') +
    `, ${formatMegabytesPerSecond(produce.bytesPerSecond)} MB/s, ${formatCount(produce.recordsPerSecond)} records/s, ` +
    `${transactional ? 'commit ack' : 'ack'} p50 ${formatMilliseconds(produce.latency.p50Ms)} ms, p99 ${formatMilliseconds(produce.latency.p99Ms)} ms` +
    (produce.offsetCheckFailure === null ? ', offsets check ok' : `; OFFSETS CHECK FAILED: ${produce.offsetCheckFailure}`)
  );
}

/** "consume, committing every 5.0 s" or "consume, committing every batch": how the ratios and the report's notes name a consume series. */
export function consumeLabelOf(consume: Pick<KafkaConsumeResult, 'commitIntervalMs'>): string {
  return `consume, committing ${consume.commitIntervalMs === null ? 'every batch' : `every ${formatSeconds(consume.commitIntervalMs)} s`}`;
}

/** "consume: 640 000 of 640 000 records, 45.1 MB/s after joining the group in 3.1 s, 2 commits, records check ok" for a progress line. */
export function describeKafkaConsume(consume: KafkaConsumeResult): string {
  return (
    `consume: ${formatCount(consume.records)} of ${formatCount(consume.recordsExpected)} records, ${formatMegabytesPerSecond(consume.bytesPerSecond)} MB/s, ` +
    `${formatCount(consume.recordsPerSecond)} records/s after joining the group in ${formatMilliseconds(consume.joinMs)} ms, ${formatCount(consume.commits)} commit${consume.commits === 1 ? '' : 's'}` +
    (consume.stoppedBecause === null ? '' : `; STOPPED: ${consume.stoppedBecause}`) +
    (consume.checkFailure === null ? ', records check ok' : `; RECORDS CHECK FAILED: ${consume.checkFailure}`)
  );
}
