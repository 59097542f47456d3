import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { CompressionTypes, Kafka, logLevel, type LogEntry, type Message, type Producer } from 'kafkajs';
import { CliError } from '@mink/cli';
import type { LocalCluster } from '@mink/devcluster';
import { deadlineAfter } from './baselines';
import { BENCH_KAFKA, BENCH_LIMITS } from './bench-limits';
import { runClosedLoop, TooManyFailuresError } from './closed-loop';
import { formatCount, formatSeconds } from './format';
import {
  checkAcknowledgedOffsets,
  ConsumeTally,
  describeKafkaConsume,
  describeKafkaProduce,
  kafkaRecordKey,
  kafkaSendCount,
  kafkaSendOf,
  kafkaTransactionCount,
  kafkaTransactionOf,
  type AcknowledgedSend,
  type KafkaSend,
  type RecordRange,
} from './kafka-figures';
import { readProcessUsage, type ProcessUsage } from './process-usage';
import { ProgressReporter } from './progress';
import type { KafkaConsumeResult, KafkaProduceResult, KafkaResult, KafkaTransactionalProduceResult } from './results';
import { ratePerSecond, summarizeLatencies } from './stats';
import { payloadOf } from './write-scenario';

/** What of the cluster the Kafka figures use: the data nodes' Kafka ports. */
export type KafkaCluster = Pick<LocalCluster, 'processes'>;

export interface KafkaSettings {
  cluster: KafkaCluster;
  /** Records each produce series sends, idempotent and transactional (their warm-ups send a few more). */
  records: number;
  /** Sends in flight at once (the run's --concurrency). */
  sendsInFlight: number;
  idempotent: boolean;
  /** The time cap of each series (--seconds), or null. */
  seconds: number | null;
  /** Aborting it ends the current series; the figures so far are returned. */
  signal: AbortSignal;
  /** Pids of the cluster's mink processes, for the CPU and memory figures. */
  processIds: () => number[];
  progress: (line: string) => void;
  /** Prints the "[n/count]" line of each phase (`KAFKA_PHASES` of them). */
  startPhase: (text: string) => void;
  /** Measures the raw S3 GET baseline the consume series is compared with (unless the run has it), and records it. */
  measureGetBaseline: () => Promise<void>;
  /** Delete the topic afterwards, so the figures that follow see the tables they saw before. */
  deleteTopic: boolean;
}

/**
 * Phases the Kafka figures print: the topic and idempotent producers, their produce series, the
 * transactional producers and their series, the consume series, the GET baseline.
 */
export const KAFKA_PHASES = 5;

/** `127.0.0.1:<kafka port>` of every running data node: the bootstrap servers, as a Kafka user lists several. */
export function kafkaBrokers(cluster: KafkaCluster): string[] {
  return cluster
    .processes()
    .filter((entry) => entry.role === 'data-node' && entry.running && entry.ports.kafka !== undefined)
    .map((entry) => `127.0.0.1:${entry.ports.kafka}`);
}

/**
 * What the producers have written, as the checks and the consumer need it. Every series and warm-up adds to
 * the one log of the run's topic, as its partitions hold them all.
 */
interface ProduceLog {
  /** Every acknowledged batch; those of transactions that failed are marked aborted. */
  acknowledged: AcknowledgedSend[];
  /** The record numbers of the committed batches and their partitions. */
  ranges: RecordRange[];
  /** Transaction markers each partition may hold: one per transaction that sent (or tried to send) to it. */
  markersByPartition: Map<number, number>;
}

/** One send ready to go: its records and the messages that carry them. */
interface PreparedSend {
  send: KafkaSend;
  messages: Message[];
}

/**
 * The Kafka figures: kafkajs creates the topic (`BENCH_KAFKA.partitions` partitions, waiting for their
 * leaders), `min(sendsInFlight, producersMax)` producers each send a small batch to every partition
 * (untimed, so every connection is open), then the produce series sends `records` records in sends of
 * `recordsPerSend` to one partition each with acks -1, `sendsInFlight` at a time. As many transactional
 * producers then each commit one untimed transaction to every partition and the transactional series sends
 * `records` more records, `BENCH_KAFKA.transactions.sendsPerTransaction` sends per transaction, one
 * transaction in flight per producer. A read_committed consumer in a new group then reads every partition
 * from the beginning until it has read every acknowledged record of both, and the records read are checked
 * against the acknowledgements. Returns null when the signal aborted the figures before the produce series
 * acknowledged anything.
 */
export async function runKafka(settings: KafkaSettings): Promise<KafkaResult | null> {
  const { signal, progress, startPhase } = settings;
  const brokers = kafkaBrokers(settings.cluster);
  if (brokers.length === 0) throw new CliError('no data node of the cluster has a Kafka port');
  const clientErrors = new ClientErrorLog(progress);
  const kafka = new Kafka({
    clientId: 'mink-bench',
    brokers,
    // kafkajs logs to the console by default; its errors (retries, broker error codes) are counted and the first few shown.
    logLevel: logLevel.ERROR,
    logCreator: () => (entry) => clientErrors.add(entry),
    requestTimeout: BENCH_KAFKA.requestTimeoutMs,
    retry: { retries: BENCH_KAFKA.clientRetries },
  });
  const producerCount = Math.min(settings.sendsInFlight, BENCH_KAFKA.producersMax);
  startPhase(
    `kafka: create topic ${BENCH_KAFKA.topic} (${BENCH_KAFKA.partitions} partitions) through kafkajs at ${brokers.join(', ')}; connect ${producerCount} producers ` +
      `(acks ${BENCH_KAFKA.acks}, ${settings.idempotent ? 'idempotent' : 'not idempotent'}) and warm each up with ${BENCH_KAFKA.warmupRecordsPerSend} records to every partition`,
  );
  const admin = kafka.admin();
  // The producers of the series running now; each series disconnects its own before the next starts.
  const producers: Producer[] = [];
  let topicCreated = false;
  // Its buckets would be restarted, compacted and counted along with the tables of the figures that follow.
  const deleteTopic = async (): Promise<void> => {
    if (!settings.deleteTopic || !topicCreated) return;
    topicCreated = false;
    await admin
      .deleteTopics({ topics: [BENCH_KAFKA.topic], timeout: BENCH_KAFKA.createTopicTimeoutMs })
      .then(() => progress(`  deleted topic ${BENCH_KAFKA.topic}, so the figures that follow see the same tables as before the Kafka figures`))
      .catch((error: unknown) => progress(`  could not delete topic ${BENCH_KAFKA.topic}: ${error instanceof Error ? error.message : String(error)}`));
  };
  try {
    await admin.connect();
    const created = await admin.createTopics({
      topics: [{ topic: BENCH_KAFKA.topic, numPartitions: BENCH_KAFKA.partitions }],
      waitForLeaders: true,
      timeout: BENCH_KAFKA.createTopicTimeoutMs,
    });
    if (!created) throw new CliError(`topic ${BENCH_KAFKA.topic} already exists`);
    topicCreated = true;
    for (let index = 0; index < producerCount; index++) {
      producers.push(
        kafka.producer({ idempotent: settings.idempotent, allowAutoTopicCreation: false, retry: { retries: BENCH_KAFKA.clientRetries } }),
      );
    }
    // An idempotent producer asks for its producer id while connecting; there is deliberately no fallback to a plain one.
    await connectAll(producers, settings.idempotent ? 'a producer could not connect (an idempotent producer needs InitProducerId answered)' : 'a producer could not connect');
    const log: ProduceLog = { acknowledged: [], ranges: [], markersByPartition: new Map() };
    // Warm-up records are numbered after the measured ones of their series, and each series after the last.
    const values = recordValues();
    const warmupRecords = await warmUp(producers, values, settings.records, log);
    let recordsNumbered = settings.records + warmupRecords;
    progress(`  topic created, ${producerCount} producers connected, ${formatCount(warmupRecords)} warm-up records acknowledged`);
    if (signal.aborted) return null;

    startPhase(
      `kafka produce: ${formatCount(settings.records)} records (key ${BENCH_KAFKA.keyBytes} B + value ${BENCH_KAFKA.valueBytes} B) in sends of ` +
        `${formatCount(BENCH_KAFKA.recordsPerSend)} to one partition each (partitions in turn), ${settings.sendsInFlight} in flight over ${producerCount} producers`,
    );
    const series = await produceSeries(settings, log, values, {
      label: 'kafka produce',
      producers,
      operations: kafkaSendCount(settings.records, BENCH_KAFKA.recordsPerSend),
      operationsInFlight: settings.sendsInFlight,
      sendsOf: (index) => [kafkaSendOf(index, settings.records, BENCH_KAFKA.recordsPerSend, BENCH_KAFKA.partitions)],
      warmupRecords,
      perform: (producer, sends) => sendAll(producer, sends, log),
    });
    if (series === null) return null;
    const { produce } = series;
    progress(`  ${describeKafkaProduce(produce)}`);
    const result: KafkaResult = {
      topic: BENCH_KAFKA.topic,
      partitions: BENCH_KAFKA.partitions,
      brokers,
      acks: BENCH_KAFKA.acks,
      idempotent: settings.idempotent,
      producers: producerCount,
      sendsInFlight: settings.sendsInFlight,
      recordsPerSend: BENCH_KAFKA.recordsPerSend,
      keyBytes: BENCH_KAFKA.keyBytes,
      valueBytes: BENCH_KAFKA.valueBytes,
      produce,
      transactionalProduce: null,
      consume: null,
      consumeEveryBatch: null,
      clientErrors: 0,
      firstClientErrors: [],
    };
    await Promise.all(producers.splice(0).map((producer) => producer.disconnect()));

    if (!signal.aborted) {
      const { sendsPerTransaction } = BENCH_KAFKA.transactions;
      startPhase(
        `kafka transactional produce: connect ${producerCount} transactional producers (a transactional id each, idempotent, one request in flight) and warm each up with ` +
          `one committed transaction of ${BENCH_KAFKA.warmupRecordsPerSend} records to every partition; then ${formatCount(settings.records)} records in the same sends, ` +
          `${sendsPerTransaction} per transaction, ${Math.min(settings.sendsInFlight, producerCount)} transactions in flight`,
      );
      const transactional = await transactionalSeries(settings, kafka, producers, producerCount, values, log, recordsNumbered);
      recordsNumbered = transactional.recordsNumbered;
      result.transactionalProduce = transactional.produce;
      if (transactional.produce !== null) progress(`  ${describeKafkaProduce(transactional.produce)}`);
      await Promise.all(producers.splice(0).map((producer) => producer.disconnect()));
    }

    const recordsExpected = log.ranges.reduce((sum, range) => sum + range.records, 0);
    const consumePhase = (commits: string): string =>
      `kafka consume: one kafkajs consumer (read_committed) in a new group reads the ${BENCH_KAFKA.partitions} partitions from the beginning (eachBatch) until it has read the ` +
      `${formatCount(recordsExpected)} records acknowledged (committed) by both series, at most ${formatSeconds(BENCH_KAFKA.consumeTimeoutMs)} s, committing ${commits}`;
    if (!signal.aborted) {
      startPhase(consumePhase(`every ${formatSeconds(BENCH_KAFKA.consumeCommitIntervalMs)} s (the Java consumer's and librdkafka's default) and at the end`));
      result.consume = await consumeSeries(settings, kafka, recordsNumbered, log, BENCH_KAFKA.consumeCommitIntervalMs);
      progress(`  ${describeKafkaConsume(result.consume)}`);
    }
    if (!signal.aborted) {
      startPhase(consumePhase(`after every batch (kafkajs's eachBatch default)`));
      result.consumeEveryBatch = await consumeSeries(settings, kafka, recordsNumbered, log, null);
      progress(`  ${describeKafkaConsume(result.consumeEveryBatch)}`);
    }
    await deleteTopic();
    result.clientErrors = clientErrors.count;
    result.firstClientErrors = clientErrors.first;

    if (!signal.aborted) {
      startPhase(`baseline: raw S3 GET for the consume series (the scan figures' baseline; measured here unless this run already has it)`);
      await settings.measureGetBaseline();
    }
    return result;
  } finally {
    await Promise.all(producers.map((producer) => producer.disconnect().catch(() => undefined)));
    await deleteTopic();
    await admin.disconnect().catch(() => undefined);
  }
}

/** Connects every producer at once; the first failure ends the figures with `failure` and its reason. */
async function connectAll(producers: readonly Producer[], failure: string): Promise<void> {
  await Promise.all(producers.map((producer) => producer.connect())).catch((error: unknown) => {
    throw new CliError(`kafka: ${failure}: ${error instanceof Error ? error.message : String(error)}`);
  });
}

/**
 * One send of `warmupRecordsPerSend` records from every producer to every partition, each producer's in
 * turn: metadata, connections to every leader and (when idempotent) the producer id are all in place before
 * the clock starts. Returns the records written; their numbers follow `firstRecord`.
 */
async function warmUp(producers: readonly Producer[], values: readonly Buffer[], firstRecord: number, log: ProduceLog): Promise<number> {
  let next = firstRecord;
  await Promise.all(
    producers.map(async (producer) => {
      for (let partition = 0; partition < BENCH_KAFKA.partitions; partition++) {
        const send: KafkaSend = { partition, firstRecord: next, records: BENCH_KAFKA.warmupRecordsPerSend };
        next += send.records;
        await sendAll(producer, [{ send, messages: messagesOf(send, values) }], log).catch((error: unknown) => {
          throw new CliError(`kafka produce failed while warming up: ${error instanceof Error ? error.message : String(error)}`);
        });
      }
    }),
  );
  return next - firstRecord;
}

/**
 * The transactional series: `count` transactional producers (into `producers`, which the caller
 * disconnects), each warmed up with one committed transaction of a send to every partition, since kafkajs
 * asks for a transactional producer's id only at its first transaction; then `settings.records` records
 * numbered from `firstRecord` in the idempotent series' sends, `sendsPerTransaction` per transaction, at
 * most one transaction in flight per producer (kafkajs refuses a second). Returns the series (null when
 * the signal stopped it before a transaction committed) and the record numbers used so far.
 */
async function transactionalSeries(
  settings: KafkaSettings,
  kafka: Kafka,
  producers: Producer[],
  count: number,
  values: readonly Buffer[],
  log: ProduceLog,
  firstRecord: number,
): Promise<{ produce: KafkaTransactionalProduceResult | null; recordsNumbered: number }> {
  const { sendsPerTransaction, idPrefix } = BENCH_KAFKA.transactions;
  // A transactional id of an earlier run would fence nothing here, but a new one keeps each run's producers apart.
  const runId = randomUUID().slice(0, 8);
  for (let index = 0; index < count; index++) {
    producers.push(
      kafka.producer({
        transactionalId: `${idPrefix}${runId}-${index}`,
        idempotent: true,
        maxInFlightRequests: 1,
        allowAutoTopicCreation: false,
        retry: { retries: BENCH_KAFKA.clientRetries },
      }),
    );
  }
  await connectAll(producers, 'a transactional producer could not connect (it needs InitProducerId answered)');
  let next = firstRecord + settings.records;
  await Promise.all(
    producers.map(async (producer) => {
      const sends = Array.from({ length: BENCH_KAFKA.partitions }, (_, partition): PreparedSend => {
        const send: KafkaSend = { partition, firstRecord: next, records: BENCH_KAFKA.warmupRecordsPerSend };
        next += send.records;
        return { send, messages: messagesOf(send, values) };
      });
      await commitTransaction(producer, sends, log).catch((error: unknown) => {
        throw new CliError(`kafka transactional produce failed while warming up (FindCoordinator, InitProducerId, AddPartitionsToTxn, EndTxn): ${error instanceof Error ? error.message : String(error)}`);
      });
    }),
  );
  const warmupRecords = next - firstRecord - settings.records;
  settings.progress(`  ${count} transactional producers connected, ${formatCount(warmupRecords)} warm-up records committed in ${count} transactions`);
  if (settings.signal.aborted) return { produce: null, recordsNumbered: next };

  const sends = kafkaSendCount(settings.records, BENCH_KAFKA.recordsPerSend);
  const transactionsInFlight = Math.min(settings.sendsInFlight, producers.length);
  const series = await produceSeries(settings, log, values, {
    label: 'kafka transactional produce',
    producers,
    operations: kafkaTransactionCount(sends, sendsPerTransaction),
    // As many as producers at most, so every transaction has a producer of its own.
    operationsInFlight: transactionsInFlight,
    sendsOf: (index) => kafkaTransactionOf(index, settings.records, BENCH_KAFKA.recordsPerSend, BENCH_KAFKA.partitions, sendsPerTransaction, firstRecord),
    warmupRecords,
    perform: (producer, prepared) => commitTransaction(producer, prepared, log),
  });
  if (series === null) return { produce: null, recordsNumbered: next };
  return {
    produce: {
      ...series.produce,
      sendsPerTransaction,
      transactions: series.operations,
      failedTransactions: series.produce.failedSends,
      transactionsInFlight,
      transactionMarkers: [...log.markersByPartition.values()].reduce((sum, markers) => sum + markers, 0),
      offsetsBetweenBatches: checkAcknowledgedOffsets(log.acknowledged, log.markersByPartition).offsetsBetweenBatches,
    },
    recordsNumbered: next,
  };
}

/** The send of one batch of records to its partition with acks -1, through a producer or a transaction; resolves with its acknowledgement. */
async function sendOnce(sender: Pick<Producer, 'send'>, send: KafkaSend, messages: Message[]): Promise<AcknowledgedSend> {
  const metadata = await sender.send({
    topic: BENCH_KAFKA.topic,
    acks: BENCH_KAFKA.acks,
    timeout: BENCH_KAFKA.produceTimeoutMs,
    compression: CompressionTypes.None,
    messages,
  });
  const ack = metadata.find((entry) => entry.partition === send.partition);
  if (ack === undefined || ack.errorCode !== 0 || ack.baseOffset === undefined) {
    throw new Error(`partition ${send.partition} answered ${ack === undefined ? 'nothing' : `error code ${ack.errorCode}, base offset ${String(ack.baseOffset)}`}`);
  }
  return { partition: send.partition, baseOffset: Number(ack.baseOffset), records: send.records };
}

/** Sends of a producer outside transactions, one after the other; each counts once acknowledged. */
async function sendAll(producer: Producer, sends: readonly PreparedSend[], log: ProduceLog): Promise<void> {
  for (const { send, messages } of sends) logCommitted(log, send, await sendOnce(producer, send, messages));
}

/**
 * One transaction: its sends one after the other, then its commit; its batches count as acknowledged only
 * once the commit is. A transaction that failed is aborted where kafkajs still can, and its acknowledged
 * batches are logged as aborted: they hold offsets that a read_committed consumer must skip.
 */
async function commitTransaction(producer: Producer, sends: readonly PreparedSend[], log: ProduceLog): Promise<void> {
  const transaction = await producer.transaction();
  const written: { send: KafkaSend; acknowledged: AcknowledgedSend }[] = [];
  const partitions = new Set<number>();
  try {
    for (const { send, messages } of sends) {
      // kafkajs adds the partition to the transaction before sending, so the partition gets a marker even when the send fails.
      if (!partitions.has(send.partition)) {
        partitions.add(send.partition);
        log.markersByPartition.set(send.partition, (log.markersByPartition.get(send.partition) ?? 0) + 1);
      }
      written.push({ send, acknowledged: await sendOnce(transaction, send, messages) });
    }
    await transaction.commit();
  } catch (error) {
    await transaction.abort().catch(() => undefined);
    log.acknowledged.push(...written.map(({ acknowledged }) => ({ ...acknowledged, aborted: true })));
    throw error;
  }
  for (const { send, acknowledged } of written) logCommitted(log, send, acknowledged);
}

function logCommitted(log: ProduceLog, send: KafkaSend, acknowledged: AcknowledgedSend): void {
  log.acknowledged.push(acknowledged);
  log.ranges.push({ partition: send.partition, firstRecord: send.firstRecord, records: send.records });
}

/** The messages of one send: each key names its record, all go to the send's partition. */
function messagesOf(send: KafkaSend, values: readonly Buffer[]): Message[] {
  return Array.from({ length: send.records }, (_, offset) => ({
    key: Buffer.from(kafkaRecordKey(send.firstRecord + offset)),
    value: values[offset % values.length]!,
    partition: send.partition,
  }));
}

/**
 * One value per record slot of a send, each different (the record batches are sent uncompressed, so what
 * the bytes are does not change what mink stores), shared by every send so the load generator does not
 * hold 128 MiB of values beside the cluster.
 */
function recordValues(): Buffer[] {
  return Array.from({ length: BENCH_KAFKA.recordsPerSend }, (_, slot) => Buffer.from(payloadOf(slot, BENCH_KAFKA.valueBytes)));
}

/** One measured produce series: a closed loop of `operations` operations, each the sends `sendsOf` gives it. */
interface ProduceSeriesPlan {
  /** "kafka produce", as progress lines and errors name the series. */
  label: string;
  producers: readonly Producer[];
  operations: number;
  operationsInFlight: number;
  /** The sends of operation `index`; together they carry the series' records once each. */
  sendsOf: (index: number) => KafkaSend[];
  /** Records the series' untimed warm-up wrote. */
  warmupRecords: number;
  /** The timed operation on one producer: resolves once its sends are acknowledged (for a transaction, committed) and logged. */
  perform: (producer: Producer, sends: readonly PreparedSend[]) => Promise<void>;
}

/**
 * A measured produce series; null when the signal stopped it before any operation succeeded. `operations`
 * of the answer counts those that succeeded (each a latency sample).
 */
async function produceSeries(
  settings: KafkaSettings,
  log: ProduceLog,
  values: readonly Buffer[],
  plan: ProduceSeriesPlan,
): Promise<{ produce: KafkaProduceResult; operations: number } | null> {
  const { producers } = plan;
  // An idle producer per operation while there are as many producers as operations in flight; beyond that they take turns.
  const idle = [...producers];
  let turn = 0;
  let records = 0;
  let sends = 0;
  const reporter = new ProgressReporter(plan.label, settings.records, 'records', settings.progress);
  const before = usageNow(settings);
  const measured = await runClosedLoop<PreparedSend[]>(
    {
      prepare: (index) => plan.sendsOf(index).map((send) => ({ send, messages: messagesOf(send, values) })),
      send: async (prepared) => {
        const own = idle.pop();
        const producer = own ?? producers[turn++ % producers.length]!;
        try {
          await plan.perform(producer, prepared);
        } finally {
          if (own !== undefined) idle.push(own);
        }
        const sent = prepared.reduce((sum, { send }) => sum + send.records, 0);
        records += sent;
        sends += prepared.length;
        reporter.add(sent);
      },
    },
    { operations: plan.operations, concurrency: plan.operationsInFlight, deadlineMs: deadlineAfter(settings.seconds), signal: settings.signal, failuresMax: BENCH_LIMITS.failedCallsMax },
  )
    .catch((error: unknown) => {
      if (error instanceof TooManyFailuresError) throw new CliError(`${plan.label}: ${error.message}`);
      throw error;
    })
    .finally(() => reporter.finish());
  if (measured.latenciesMs.length === 0 && settings.signal.aborted) return null;
  if (measured.latenciesMs.length === 0) throw new CliError(`${plan.label}: nothing succeeded (${measured.firstFailureMessage ?? 'none ran'})`);
  const after = usageNow(settings);
  const bytes = records * (BENCH_KAFKA.keyBytes + BENCH_KAFKA.valueBytes);
  return {
    operations: measured.latenciesMs.length,
    produce: {
      sends,
      failedSends: measured.failures,
      firstFailureMessage: measured.firstFailureMessage,
      stoppedEarly: measured.stoppedEarly,
      records,
      bytes,
      warmupRecords: plan.warmupRecords,
      elapsedMs: measured.elapsedMs,
      bytesPerSecond: ratePerSecond(bytes, measured.elapsedMs),
      recordsPerSecond: ratePerSecond(records, measured.elapsedMs),
      latency: summarizeLatencies(measured.latenciesMs),
      offsetCheckFailure: checkAcknowledgedOffsets(log.acknowledged, log.markersByPartition).failure,
      ...usageFigures(before, after, bytes),
    },
  };
}

/**
 * A consume series: a read_committed consumer in a new group subscribes from the beginning and reads with
 * `eachBatch` until it has read as many records as were acknowledged (or the timeout, --seconds or Ctrl-C
 * comes first), then every record read is checked against the acknowledgements: the committed ones of both
 * series once each, no record of an aborted transaction. MB/s counts from the group joined to the last
 * record read. With `commitIntervalMs` the consumer commits what it has read when that long has passed since
 * its last commit (inside the timed reads, as the Java consumer does in poll) and once after the last record
 * (untimed, as at close); with null kafkajs commits after every batch (its default).
 */
async function consumeSeries(settings: KafkaSettings, kafka: Kafka, recordNumbers: number, log: ProduceLog, commitIntervalMs: number | null): Promise<KafkaConsumeResult> {
  const groupId = `${BENCH_KAFKA.consumerGroupPrefix}${randomUUID().slice(0, 8)}`;
  const { committedSpans } = checkAcknowledgedOffsets(log.acknowledged, log.markersByPartition);
  const recordsExpected = log.ranges.reduce((sum, range) => sum + range.records, 0);
  // kafkajs's default isolation, spelled out: the transactional series' records count only once committed.
  const consumer = kafka.consumer({ groupId, readUncommitted: false, maxWaitTimeInMs: BENCH_KAFKA.consumerMaxWaitMs, retry: { retries: BENCH_KAFKA.clientRetries } });
  const tally = new ConsumeTally(recordNumbers, committedSpans);
  const fetchLatenciesMs: number[] = [];
  let waitedFetches = 0;
  let commits = 0;
  /** The next offset of each partition read since the last commit (interval series only). */
  const uncommitted = new Map<number, string>();
  let lastCommitMs = performance.now();
  const commitRead = async (): Promise<void> => {
    if (uncommitted.size === 0) return;
    const offsets = [...uncommitted].map(([partition, offset]) => ({ topic: BENCH_KAFKA.topic, partition, offset }));
    uncommitted.clear();
    lastCommitMs = performance.now();
    commits += 1;
    await consumer.commitOffsets(offsets);
  };
  let joinedAtMs: number | null = null;
  let lastReadAtMs: number | null = null;
  let finish: (stoppedBecause: string | null) => void = () => undefined;
  const finished = new Promise<string | null>((resolve) => {
    finish = (stoppedBecause) => {
      lastReadAtMs ??= performance.now();
      resolve(stoppedBecause);
    };
  });
  consumer.on(consumer.events.GROUP_JOIN, () => {
    joinedAtMs ??= performance.now();
  });
  consumer.on(consumer.events.FETCH, (event) => {
    // kafkajs times fetches with Date.now(); a fetch that waited out max wait found no record.
    if (event.payload.duration < BENCH_KAFKA.consumerMaxWaitMs) fetchLatenciesMs.push(event.payload.duration);
    else waitedFetches += 1;
  });
  consumer.on(consumer.events.COMMIT_OFFSETS, () => {
    if (commitIntervalMs === null) commits += 1;
  });
  consumer.on(consumer.events.CRASH, (event) => {
    if (!event.payload.restart) finish(`the consumer crashed: ${event.payload.error.message}`);
  });
  const onAbort = (): void => finish('interrupted');
  settings.signal.addEventListener('abort', onAbort);
  const deadlineMs = deadlineAfter(settings.seconds);
  const timeoutMs = Math.min(BENCH_KAFKA.consumeTimeoutMs, deadlineMs === undefined ? Infinity : Math.max(0, deadlineMs - performance.now()));
  const timer = setTimeout(() => finish(`not every record was read within ${formatSeconds(timeoutMs)} s`), timeoutMs);
  const reporter = new ProgressReporter('kafka consume', recordsExpected, 'records', settings.progress);
  try {
    await consumer.connect();
    await consumer.subscribe({ topic: BENCH_KAFKA.topic, fromBeginning: true });
    const before = usageNow(settings);
    const startedMs = performance.now();
    await consumer.run({
      autoCommit: commitIntervalMs === null,
      eachBatchAutoResolve: true,
      eachBatch: async ({ batch }) => {
        for (const message of batch.messages) {
          tally.add(batch.partition, Number(message.offset), message.key, (message.key?.byteLength ?? 0) + (message.value?.byteLength ?? 0));
        }
        reporter.add(batch.messages.length);
        if (batch.messages.length > 0) uncommitted.set(batch.partition, String(Number(batch.lastOffset()) + 1));
        if (tally.records >= recordsExpected) finish(null);
        else if (commitIntervalMs !== null && performance.now() - lastCommitMs >= commitIntervalMs) await commitRead();
      },
    });
    const stoppedBecause = await finished;
    const after = usageNow(settings);
    if (commitIntervalMs !== null) await commitRead().catch(() => undefined);
    const fromMs = joinedAtMs ?? startedMs;
    const elapsedMs = Math.max(1, lastReadAtMs! - fromMs);
    return {
      groupId,
      commitIntervalMs,
      commits,
      records: tally.records,
      recordsExpected,
      bytes: tally.bytes,
      joinMs: fromMs - startedMs,
      elapsedMs,
      bytesPerSecond: ratePerSecond(tally.bytes, elapsedMs),
      recordsPerSecond: ratePerSecond(tally.records, elapsedMs),
      fetches: fetchLatenciesMs.length,
      waitedFetches,
      fetchLatency: fetchLatenciesMs.length === 0 ? null : summarizeLatencies(fetchLatenciesMs),
      checkFailure: tally.verdict(log.ranges),
      stoppedBecause,
      ...usageFigures(before, after, tally.bytes),
    };
  } finally {
    clearTimeout(timer);
    reporter.finish();
    settings.signal.removeEventListener('abort', onAbort);
    await consumer.disconnect().catch(() => undefined);
  }
}

/** CPU and memory of the cluster's mink processes and CPU of this process (kafkajs) at one moment. */
interface UsageSnapshot {
  cluster: ProcessUsage;
  benchCpuSeconds: number;
}

function usageNow(settings: KafkaSettings): UsageSnapshot {
  const own = process.cpuUsage();
  return { cluster: readProcessUsage(settings.processIds()), benchCpuSeconds: (own.user + own.system) / 1e6 };
}

function usageFigures(before: UsageSnapshot, after: UsageSnapshot, bytes: number): Pick<KafkaProduceResult, 'cpuSecondsPerMegabyte' | 'benchCpuSecondsPerMegabyte' | 'rssMaxBytes'> {
  const megabytes = bytes / 1e6;
  return {
    cpuSecondsPerMegabyte: megabytes > 0 && after.cluster.cpuSeconds > 0 ? (after.cluster.cpuSeconds - before.cluster.cpuSeconds) / megabytes : null,
    benchCpuSecondsPerMegabyte: megabytes > 0 ? (after.benchCpuSeconds - before.benchCpuSeconds) / megabytes : null,
    rssMaxBytes: after.cluster.rssMaxBytes > 0 ? after.cluster.rssMaxBytes : null,
  };
}

/** kafkajs's error lines: counted, the first `clientErrorLinesShown` printed as progress and kept for the result. */
class ClientErrorLog {
  count = 0;
  readonly first: string[] = [];

  constructor(private readonly progress: (line: string) => void) {}

  add(entry: LogEntry): void {
    this.count += 1;
    if (this.first.length >= BENCH_KAFKA.clientErrorLinesShown) return;
    const { message, error, broker } = entry.log as { message: string; error?: unknown; broker?: unknown };
    const line = `${entry.namespace}: ${message}${error === undefined ? '' : `: ${String(error)}`}${broker === undefined ? '' : ` (broker ${String(broker)})`}`;
    this.first.push(line);
    this.progress(`  kafkajs error: ${line}`);
  }
}
