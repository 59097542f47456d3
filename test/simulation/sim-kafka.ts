import { bucketId, getIn, type View } from '@mink/meta';
import { newKafkaSession, type KafkaFrameHandler } from '@mink/kafka';
import { InvariantViolation } from './invariants';
import { gated, type ProcessGate } from './process-gate';
import type { SimRandom } from './sim-random';

/**
 * Kafka producers in the whole-cluster simulation (issue 40): they reach the data nodes' Kafka brokers (the
 * production `kafkaBroker` over `DataNodeKafkaBackend`) with frames kafkajs's own protocol code builds, find
 * each partition's leader in the view as a Metadata response would give it, and retry a batch towards the
 * new leader when the one they sent it to dies, pauses, loses the answer or says it does not lead.
 *
 * Two kinds, as the clients mink is tried with behave:
 * - `retrying` (librdkafka): a batch is retried with the same sequences and records until it is answered;
 * - `giving-up` (kafkajs): after a few failed attempts the send fails, the producer takes the batch's
 *   sequences back (whether or not it was committed) and numbers its next records with them. Such a batch,
 *   if the first one was committed, must be refused (OUT_OF_ORDER_SEQUENCE_NUMBER, the producer then starts
 *   over with a new producer id), never answered as stored.
 *
 * Invariant (checkStoredRecords): every acknowledged record is stored exactly once, at the partition and
 * offset it was acknowledged with; no record is stored twice; nothing stored was never sent.
 */

/** kafkajs's protocol internals (no exports map, no types): its request encoders and response decoders. */
function kafkajsInternal(path: string): any {
  return require(`kafkajs/src/${path}`);
}
const KafkajsLong = kafkajsInternal('utils/long');
const framed: (request: { correlationId: number; clientId: string; request: unknown }) => Promise<{ buffer: Buffer }> = kafkajsInternal('protocol/request');

const PRODUCE_VERSION = 7;
const INIT_PRODUCER_ID_VERSION = 1;
/** Kafka error codes the producers act on. */
const OUT_OF_ORDER_SEQUENCE_NUMBER = 45;
/**
 * How long a producer waits for an answer before it takes the connection for lost (kafkajs's and librdkafka's
 * request timeout, shortened); the giving-up kind waits less, so it gives a batch up while a stalled commit
 * still holds it in flight at the leader now and then.
 */
const REQUEST_TIMEOUT_MS = { retrying: 4_000, 'giving-up': 1_000 } as const;
const RETRY_BACKOFF_MS = 200;
/** Attempts of a `giving-up` producer before its send fails. */
const GIVING_UP_ATTEMPTS = 2;

/** A data node as a Kafka producer reaches it: its gate (dead, paused, running) and its broker. */
export interface SimKafkaNode {
  gate: ProcessGate;
  kafka: KafkaFrameHandler | null;
}

/** A record the producer was told is stored, and where. */
export interface AcknowledgedRecord {
  value: string;
  partition: number;
  offset: number;
}

/** A stored record of the topic, as a scan returns it. */
export interface StoredRecord {
  value: string;
  partition: number;
  offset: number;
}

type Answer = { errorCode: number; baseOffset: number; message: string };

let nextCorrelationId = 1;

/** One request to a node's broker as a client on its own connection: refused by a dead node, held by a paused one, lost now and then. */
async function exchange(node: SimKafkaNode | undefined, api: string, version: number, fields: object, answerLost: () => boolean, timeoutMs: number): Promise<any> {
  if (!node?.kafka || node.gate.state === 'dead') throw new Error('connection refused');
  const correlationId = nextCorrelationId++;
  const request = kafkajsInternal(`protocol/requests/${api}/v${version}/request`)(fields);
  const { buffer } = await framed({ correlationId, clientId: 'sim-kafka', request });
  const handler = node.kafka;
  const answered = gated(node.gate, () => handler(Uint8Array.from(buffer.subarray(4)), { peer: '127.0.0.1:1', session: newKafkaSession() }));
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('request timed out')), timeoutMs);
  });
  answered.catch(() => undefined);
  try {
    const parts = await Promise.race([answered, timedOut]);
    if (parts === null) throw new Error('no answer');
    if (answerLost()) throw new Error('connection reset before the answer');
    const body = Buffer.concat(parts).subarray(4);
    const { decode } = kafkajsInternal(`protocol/requests/${api}/v${version}/response`);
    return await decode(body);
  } finally {
    clearTimeout(timer);
  }
}

/** A batch of one partition: its records (values), the sequences it was given, and its sends so far. */
interface PendingBatch {
  partition: number;
  values: string[];
  firstSequence: number;
  /** The producer id its sequences were given under (-1 until then). */
  producerId: number;
  attempts: number;
  /** Encoded once and sent as such on every attempt, as librdkafka does (kafkajs re-encodes with the same records). */
  timestamp: number;
}

export class SimKafkaProducer {
  private producerId = -1;
  private producerEpoch = 0;
  private readonly nextSequence = new Map<number, number>();
  private readonly queues = new Map<number, PendingBatch[]>();
  private readonly sending = new Set<number>();
  readonly acknowledged: AcknowledgedRecord[] = [];
  /** Records whose send failed: they may be stored (once) or not. */
  readonly unacknowledged = new Set<string>();
  /** Batches refused as reusing a committed batch's sequences (the giving-up kind only). */
  refusedReuses = 0;
  restarts = 0;
  private stopped = false;

  constructor(
    readonly name: string,
    private readonly kind: 'retrying' | 'giving-up',
    private readonly topic: string,
    private readonly partitions: number,
    private readonly nodes: () => ReadonlyMap<string, SimKafkaNode>,
    private readonly view: () => View,
    private readonly random: SimRandom,
    private readonly answerLostChance: () => number,
  ) {}

  get inFlight(): number {
    let count = 0;
    for (const queue of this.queues.values()) count += queue.length;
    return count;
  }

  /** Queues a batch of `count` new records for `partition`; they are sent in order after those queued before. */
  send(partition: number, values: string[]): void {
    const queue = this.queues.get(partition) ?? [];
    queue.push({ partition, values, firstSequence: -1, producerId: -1, attempts: 0, timestamp: Date.now() });
    this.queues.set(partition, queue);
    if (!this.sending.has(partition)) void this.drain(partition);
  }

  stop(): void {
    this.stopped = true;
  }

  private answerLost = (): boolean => this.random.chance(this.answerLostChance());

  /** The broker leading `partition` as a Metadata response gives it: the leader of its bucket in the view. */
  private leaderOf(partition: number): SimKafkaNode | undefined {
    const view = this.view();
    const table = getIn(view.tables, this.topic);
    const leader = table ? getIn(view.buckets, bucketId(table.id, null, partition))?.leader : null;
    return leader ? this.nodes().get(leader) : undefined;
  }

  private async ensureProducerId(): Promise<void> {
    while (this.producerId < 0 && !this.stopped) {
      const running = [...this.nodes().values()].filter((node) => node.gate.running);
      try {
        const answer = await exchange(this.random.choice(running), 'initProducerId', INIT_PRODUCER_ID_VERSION, { transactionTimeout: 30_000 }, this.answerLost, REQUEST_TIMEOUT_MS[this.kind]);
        if (answer.errorCode === 0) {
          this.producerId = Number(answer.producerId);
          this.producerEpoch = answer.producerEpoch;
          this.nextSequence.clear();
          return;
        }
      } catch {
        // Another node, later.
      }
      await sleep(RETRY_BACKOFF_MS);
    }
  }

  /** Sends a partition's batches one at a time (one request in flight per partition, as both clients do when idempotent). */
  private async drain(partition: number): Promise<void> {
    this.sending.add(partition);
    const queue = this.queues.get(partition)!;
    try {
      while (queue.length > 0 && !this.stopped) {
        await this.ensureProducerId();
        const batch = queue[0]!;
        if (batch.firstSequence >= 0 && batch.producerId !== this.producerId) {
          // The producer started over (another partition's batch was refused) while this batch was being
          // retried: the producer that numbered it is gone, and so is its send, as with a kafkajs producer
          // that is replaced. Sent again under the new id it would be a new producer's records, stored a
          // second time if the first attempt was committed (seed 37 of the simulation did exactly that).
          queue.shift();
          for (const value of batch.values) this.unacknowledged.add(value);
          continue;
        }
        if (batch.firstSequence < 0) {
          batch.producerId = this.producerId;
          batch.firstSequence = this.nextSequence.get(partition) ?? 0;
          this.nextSequence.set(partition, batch.firstSequence + batch.values.length);
        }
        const answer = await this.attempt(batch);
        if (answer === 'retry') {
          if (this.kind === 'giving-up' && batch.attempts >= GIVING_UP_ATTEMPTS) {
            // kafkajs: the send fails and its sequences are taken back, committed or not.
            queue.shift();
            for (const value of batch.values) this.unacknowledged.add(value);
            this.nextSequence.set(partition, batch.firstSequence);
          } else {
            await sleep(RETRY_BACKOFF_MS);
          }
          continue;
        }
        queue.shift();
        if (answer.errorCode === 0) {
          batch.values.forEach((value, index) => this.acknowledged.push({ value, partition, offset: answer.baseOffset + index }));
          continue;
        }
        for (const value of batch.values) this.unacknowledged.add(value);
        if (answer.errorCode === OUT_OF_ORDER_SEQUENCE_NUMBER && this.kind === 'giving-up') {
          // The batch reused the sequences of one that was committed: the producer starts over, as a kafkajs user must.
          this.refusedReuses++;
          this.restarts++;
          this.producerId = -1;
          for (const later of queue) later.firstSequence = -1;
          continue;
        }
        throw new InvariantViolation(`${this.name}: batch of ${batch.values.length} at sequence ${batch.firstSequence} to partition ${partition} refused with error ${answer.errorCode}: ${answer.message}`);
      }
    } finally {
      this.sending.delete(partition);
    }
  }

  /** One send of a batch: its answer, or 'retry' when the leader is unknown, gone, or says to try again. */
  private async attempt(batch: PendingBatch): Promise<Answer | 'retry'> {
    batch.attempts++;
    const leader = this.leaderOf(batch.partition);
    const messages = batch.values.map((value) => ({ key: Buffer.from(value), value: Buffer.from(value), timestamp: batch.timestamp }));
    let decoded;
    try {
      decoded = await exchange(
        leader,
        'produce',
        PRODUCE_VERSION,
        {
          acks: -1,
          timeout: REQUEST_TIMEOUT_MS[this.kind],
          producerId: KafkajsLong.fromValue(this.producerId),
          producerEpoch: this.producerEpoch,
          topicData: [{ topic: this.topic, partitions: [{ partition: batch.partition, firstSequence: batch.firstSequence, messages }] }],
        },
        this.answerLost,
        REQUEST_TIMEOUT_MS[this.kind],
      );
    } catch {
      return 'retry';
    }
    const partition = decoded.topics[0].partitions[0];
    const answer = { errorCode: partition.errorCode as number, baseOffset: Number(partition.baseOffset), message: String(partition.errorMessage ?? '') };
    // Retriable as the clients treat them: not the leader, no leader, not ready, timed out, a storage error.
    return RETRIABLE.has(answer.errorCode) ? 'retry' : answer;
  }
}

/** Kafka error codes both clients retry: UNKNOWN_TOPIC_OR_PARTITION 3, LEADER_NOT_AVAILABLE 5, NOT_LEADER_OR_FOLLOWER 6, REQUEST_TIMED_OUT 7, NETWORK_EXCEPTION 13, NOT_ENOUGH_REPLICAS 19, KAFKA_STORAGE_ERROR 56, UNKNOWN_SERVER_ERROR -1 (kafkajs retries it). */
const RETRIABLE = new Set([3, 5, 6, 7, 13, 19, 56, -1]);

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * After the run: every acknowledged record is stored exactly once, where it was acknowledged; no record is
 * stored twice; every stored record was sent (acknowledged or not).
 */
export function checkStoredRecords(stored: StoredRecord[], producers: readonly SimKafkaProducer[]): void {
  const seen = new Map<string, StoredRecord>();
  for (const record of stored) {
    const earlier = seen.get(record.value);
    if (earlier) throw new InvariantViolation(`Kafka record ${record.value} stored twice: partition ${earlier.partition} offset ${earlier.offset} and partition ${record.partition} offset ${record.offset}`);
    seen.set(record.value, record);
  }
  const sent = new Set<string>();
  for (const producer of producers) {
    for (const record of producer.acknowledged) {
      sent.add(record.value);
      const found = seen.get(record.value);
      if (!found) throw new InvariantViolation(`Kafka record ${record.value} acknowledged at partition ${record.partition} offset ${record.offset} is not stored`);
      if (found.partition !== record.partition || found.offset !== record.offset) {
        throw new InvariantViolation(`Kafka record ${record.value} acknowledged at partition ${record.partition} offset ${record.offset} is stored at partition ${found.partition} offset ${found.offset}`);
      }
    }
    for (const value of producer.unacknowledged) sent.add(value);
  }
  for (const record of stored) if (!sent.has(record.value)) throw new InvariantViolation(`Kafka record ${record.value} stored at partition ${record.partition} offset ${record.offset} was never sent`);
}
