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
  type AcknowledgedSend,
  type KafkaSend,
  type RecordRange,
} from './kafka-figures';
import { readProcessUsage, type ProcessUsage } from './process-usage';
import { ProgressReporter } from './progress';
import type { KafkaConsumeResult, KafkaProduceResult, KafkaResult } from './results';
import { ratePerSecond, summarizeLatencies } from './stats';
import { payloadOf } from './write-scenario';

/** What of the cluster the Kafka figures use: the data nodes' Kafka ports. */
export type KafkaCluster = Pick<LocalCluster, 'processes'>;

export interface KafkaSettings {
  cluster: KafkaCluster;
  /** Records the producers send (the warm-up sends a few more). */
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

/** Phases the Kafka figures print: the topic and producers, the produce series, the consume series, the GET baseline. */
export const KAFKA_PHASES = 4;

/** `127.0.0.1:<kafka port>` of every running data node: the bootstrap servers, as a Kafka user lists several. */
export function kafkaBrokers(cluster: KafkaCluster): string[] {
  return cluster
    .processes()
    .filter((entry) => entry.role === 'data-node' && entry.running && entry.ports.kafka !== undefined)
    .map((entry) => `127.0.0.1:${entry.ports.kafka}`);
}

/**
 * The Kafka figures: kafkajs creates the topic (`BENCH_KAFKA.partitions` partitions, waiting for their
 * leaders), `min(sendsInFlight, producersMax)` producers each send a small batch to every partition
 * (untimed, so every connection is open), then the produce series sends `records` records in sends of
 * `recordsPerSend` to one partition each with acks -1, `sendsInFlight` at a time; a consumer in a new group
 * then reads every partition from the beginning until it has read every acknowledged record, and the records
 * read are checked against the acknowledgements. Returns null when the signal aborted the figures before
 * the produce series acknowledged anything.
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
    await Promise.all(producers.map((producer) => producer.connect())).catch((error: unknown) => {
      const reason = error instanceof Error ? error.message : String(error);
      // An idempotent producer asks for its producer id while connecting; there is deliberately no fallback to a plain one.
      throw new CliError(`kafka: a producer could not connect${settings.idempotent ? ' (an idempotent producer needs InitProducerId answered)' : ''}: ${reason}`);
    });
    const acknowledged: AcknowledgedSend[] = [];
    const ranges: RecordRange[] = [];
    // Warm-up records are numbered after the measured ones.
    const values = recordValues();
    const warmupRecords = await warmUp(producers, values, settings.records, acknowledged, ranges);
    progress(`  topic created, ${producerCount} producers connected, ${formatCount(warmupRecords)} warm-up records acknowledged`);
    if (signal.aborted) return null;

    startPhase(
      `kafka produce: ${formatCount(settings.records)} records (key ${BENCH_KAFKA.keyBytes} B + value ${BENCH_KAFKA.valueBytes} B) in sends of ` +
        `${formatCount(BENCH_KAFKA.recordsPerSend)} to one partition each (partitions in turn), ${settings.sendsInFlight} in flight over ${producerCount} producers`,
    );
    const produce = await produceSeries(settings, producers, values, acknowledged, ranges, warmupRecords);
    if (produce === null) return null;
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
      consume: null,
      clientErrors: 0,
      firstClientErrors: [],
    };
    await Promise.all(producers.splice(0).map((producer) => producer.disconnect()));

    if (!signal.aborted) {
      const recordsExpected = ranges.reduce((sum, range) => sum + range.records, 0);
      startPhase(
        `kafka consume: one kafkajs consumer in a new group reads the ${BENCH_KAFKA.partitions} partitions from the beginning (eachBatch) until it has read the ` +
          `${formatCount(recordsExpected)} records acknowledged, at most ${formatSeconds(BENCH_KAFKA.consumeTimeoutMs)} s`,
      );
      result.consume = await consumeSeries(settings, kafka, settings.records + warmupRecords, acknowledged, ranges);
      progress(`  ${describeKafkaConsume(result.consume)}`);
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

/**
 * One send of `warmupRecordsPerSend` records from every producer to every partition, each producer's in
 * turn: metadata, connections to every leader and (when idempotent) the producer id are all in place before
 * the clock starts. Returns the records written; their numbers follow `firstRecord`.
 */
async function warmUp(producers: readonly Producer[], values: readonly Buffer[], firstRecord: number, acknowledged: AcknowledgedSend[], ranges: RecordRange[]): Promise<number> {
  let next = firstRecord;
  await Promise.all(
    producers.map(async (producer) => {
      for (let partition = 0; partition < BENCH_KAFKA.partitions; partition++) {
        const send: KafkaSend = { partition, firstRecord: next, records: BENCH_KAFKA.warmupRecordsPerSend };
        next += send.records;
        await sendOnce(producer, send, messagesOf(send, values), acknowledged, ranges).catch((error: unknown) => {
          throw new CliError(`kafka produce failed while warming up: ${error instanceof Error ? error.message : String(error)}`);
        });
      }
    }),
  );
  return next - firstRecord;
}

/** The send of one batch of records to its partition with acks -1; records the acknowledgement. */
async function sendOnce(producer: Producer, send: KafkaSend, messages: Message[], acknowledged: AcknowledgedSend[], ranges: RecordRange[]): Promise<void> {
  const metadata = await producer.send({
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
  acknowledged.push({ partition: send.partition, baseOffset: Number(ack.baseOffset), records: send.records });
  ranges.push({ partition: send.partition, firstRecord: send.firstRecord, records: send.records });
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

/** The measured produce series; null when the signal stopped it before any send was acknowledged. */
async function produceSeries(
  settings: KafkaSettings,
  producers: readonly Producer[],
  values: readonly Buffer[],
  acknowledged: AcknowledgedSend[],
  ranges: RecordRange[],
  warmupRecords: number,
): Promise<KafkaProduceResult | null> {
  const sends = kafkaSendCount(settings.records, BENCH_KAFKA.recordsPerSend);
  // An idle producer per send while there are as many producers as sends in flight; beyond that they take turns.
  const idle = [...producers];
  let turn = 0;
  let records = 0;
  const reporter = new ProgressReporter('kafka produce', settings.records, 'records', settings.progress);
  const before = usageNow(settings);
  const measured = await runClosedLoop<{ send: KafkaSend; messages: Message[] }>(
    {
      prepare: (index) => {
        const send = kafkaSendOf(index, settings.records, BENCH_KAFKA.recordsPerSend, BENCH_KAFKA.partitions);
        return { send, messages: messagesOf(send, values) };
      },
      send: async ({ send, messages }) => {
        const own = idle.pop();
        const producer = own ?? producers[turn++ % producers.length]!;
        try {
          await sendOnce(producer, send, messages, acknowledged, ranges);
        } finally {
          if (own !== undefined) idle.push(own);
        }
        records += send.records;
        reporter.add(send.records);
      },
    },
    { operations: sends, concurrency: settings.sendsInFlight, deadlineMs: deadlineAfter(settings.seconds), signal: settings.signal, failuresMax: BENCH_LIMITS.failedCallsMax },
  )
    .catch((error: unknown) => {
      if (error instanceof TooManyFailuresError) throw new CliError(`kafka produce: ${error.message}`);
      throw error;
    })
    .finally(() => reporter.finish());
  if (measured.latenciesMs.length === 0 && settings.signal.aborted) return null;
  if (measured.latenciesMs.length === 0) throw new CliError(`kafka produce: no send succeeded (${measured.firstFailureMessage ?? 'none ran'})`);
  const after = usageNow(settings);
  const bytes = records * (BENCH_KAFKA.keyBytes + BENCH_KAFKA.valueBytes);
  return {
    sends: measured.latenciesMs.length,
    failedSends: measured.failures,
    firstFailureMessage: measured.firstFailureMessage,
    stoppedEarly: measured.stoppedEarly,
    records,
    bytes,
    warmupRecords,
    elapsedMs: measured.elapsedMs,
    bytesPerSecond: ratePerSecond(bytes, measured.elapsedMs),
    recordsPerSecond: ratePerSecond(records, measured.elapsedMs),
    latency: summarizeLatencies(measured.latenciesMs),
    offsetCheckFailure: checkAcknowledgedOffsets(acknowledged).failure,
    ...usageFigures(before, after, bytes),
  };
}

/**
 * The consume series: a consumer in a new group subscribes from the beginning and reads with `eachBatch`
 * until it has read as many records as were acknowledged (or the timeout, --seconds or Ctrl-C comes first),
 * then every record read is checked against the acknowledgements. MB/s counts from the group joined.
 */
async function consumeSeries(
  settings: KafkaSettings,
  kafka: Kafka,
  recordNumbers: number,
  acknowledged: readonly AcknowledgedSend[],
  ranges: readonly RecordRange[],
): Promise<KafkaConsumeResult> {
  const groupId = `${BENCH_KAFKA.consumerGroupPrefix}${randomUUID().slice(0, 8)}`;
  const { recordsByPartition } = checkAcknowledgedOffsets(acknowledged);
  const recordsExpected = ranges.reduce((sum, range) => sum + range.records, 0);
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: BENCH_KAFKA.consumerMaxWaitMs, retry: { retries: BENCH_KAFKA.clientRetries } });
  const tally = new ConsumeTally(recordNumbers);
  const fetchLatenciesMs: number[] = [];
  let waitedFetches = 0;
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
      eachBatchAutoResolve: true,
      eachBatch: async ({ batch }) => {
        for (const message of batch.messages) {
          tally.add(batch.partition, Number(message.offset), message.key, (message.key?.byteLength ?? 0) + (message.value?.byteLength ?? 0));
        }
        reporter.add(batch.messages.length);
        if (tally.records >= recordsExpected) finish(null);
      },
    });
    const stoppedBecause = await finished;
    const after = usageNow(settings);
    const fromMs = joinedAtMs ?? startedMs;
    const elapsedMs = Math.max(1, lastReadAtMs! - fromMs);
    return {
      groupId,
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
      checkFailure: tally.verdict(recordsByPartition, ranges),
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
