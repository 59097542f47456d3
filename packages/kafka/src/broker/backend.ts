/**
 * What the Kafka broker handlers need from the data node they run in: the cluster as Kafka sees it
 * (brokers, topics, partition leaders) and the data path of the partitions this node leads. Topics are
 * mink tables in the `kafka` log format, partitions their buckets (docs/architecture.md §8.4). The handlers stay free of
 * mink's internals; the data node implements this port over its view, WAL writer and stream reader.
 *
 * Errors: methods throw mink's typed errors (`@mink/protocol`: NotLeader, Unavailable, NotFound,
 * InvalidArgument, Conflict, …) or a `KafkaError` carrying a Kafka error code; the handlers turn both into
 * the error code of the partition or topic they concern (see error-mapping.ts).
 */
import type { TopicConfigChange } from './topic-configs';

/** A data node as a Kafka broker: its node id as an int32 and its advertised Kafka listener. */
export interface KafkaBrokerAddress {
  nodeId: number;
  host: string;
  port: number;
}

export interface KafkaPartitionInfo {
  partition: number;
  /** The broker leading it, or null while it has no leader (answered as LEADER_NOT_AVAILABLE). */
  leader: KafkaBrokerAddress | null;
  /** The leader epoch of the bucket. */
  leaderEpoch: number;
}

export interface KafkaTopicInfo {
  name: string;
  partitions: KafkaPartitionInfo[];
  /** The topic's configs in Kafka's names, for DescribeConfigs (see topicConfigsOfTableProperties). */
  configs: Record<string, { value: string; isDefault: boolean }>;
  /** A topic of the system's own (the consumer offsets), flagged internal in Metadata. */
  internal?: boolean;
}

/** A record batch of a produce request, checked and ready to store. */
export interface ProducedBatch {
  /** The whole batch as received; its base offset is rewritten in place once the WAL assigns it. */
  bytes: Uint8Array;
  /** Offsets the batch takes: lastOffsetDelta + 1. */
  offsetCount: number;
  /** Present for a batch of an idempotent producer (a producer id from InitProducerId). */
  producer?: ProducerSequence;
}

/**
 * Who wrote an idempotent batch and which sequences it covers (`baseSequence` to `baseSequence +
 * offsetCount - 1`). The backend answers a batch it has committed before with its original offset, refuses
 * a gap in the producer's sequences with OUT_OF_ORDER_SEQUENCE_NUMBER and an epoch older than one the
 * partition has seen with INVALID_PRODUCER_EPOCH (as KafkaErrors).
 */
export interface ProducerSequence {
  producerId: number;
  producerEpoch: number;
  baseSequence: number;
  /** The batch belongs to the producer's open transaction (Produce named a transactional id). */
  transactional: boolean;
}

export interface ProduceResult {
  /** Offset given to the first record of the first batch. */
  baseOffset: number;
  logStartOffset: number;
}

export interface FetchedPartition {
  /** Stored record batches from the one holding the fetch offset, whole and in offset order. */
  batches: Uint8Array[];
  highWatermark: number;
  /** The first offset of the oldest open transaction, or the high watermark when none is open. */
  lastStableOffset: number;
  logStartOffset: number;
  /** For a read_committed fetch, the aborted transactions among the batches (producer and first offset). */
  abortedTransactions: { producerId: number; firstOffset: number }[];
}

export interface KafkaBackend {
  /** Names the cluster in Metadata responses. */
  readonly clusterId: string;
  /** This data node as a broker. */
  readonly self: KafkaBrokerAddress;
  /** The live data nodes. */
  brokers(): KafkaBrokerAddress[];
  /** The broker named as controller: admin requests sent to it are forwarded to the coordinator lease holder. */
  controllerId(): number;
  /** Every topic, or null for a name that is not a topic. */
  topics(): KafkaTopicInfo[];
  topic(name: string): KafkaTopicInfo | null;
  createTopic(name: string, partitions: number, configs: Record<string, string>, validateOnly: boolean): Promise<void>;
  /** Partitions of a topic created automatically, or by CreateTopics with the broker default (-1): Kafka's num.partitions. */
  readonly defaultPartitions: number;
  /**
   * Creates a topic that a Metadata or Produce request named and nobody created (Kafka's
   * auto.create.topics.enable), with `defaultPartitions` partitions; resolves true once it exists (whoever
   * created it), false when auto-creation is off or the name is reserved for mink's own tables (`__`). Throws
   * a KafkaError INVALID_TOPIC_EXCEPTION for a name a topic cannot have.
   */
  autoCreateTopic(name: string): Promise<boolean>;
  deleteTopic(name: string): Promise<void>;
  /**
   * Changes a topic's configs, in Kafka's names (a value sets one, null returns it to its default); with
   * `validateOnly` only checks them. Throws a KafkaError INVALID_CONFIG for a config mink does not take.
   */
  alterTopicConfigs(name: string, changes: readonly TopicConfigChange[], validateOnly: boolean): Promise<void>;
  /**
   * Kafka's DeleteRecords: the partition starts at `offset` from now on (-1: at its high watermark);
   * resolves to its start after (the low watermark). Throws a KafkaError OFFSET_OUT_OF_RANGE for an offset
   * beyond the high watermark, POLICY_VIOLATION for records that cannot be deleted (not yet in the lake).
   */
  deleteRecords(topic: string, partition: number, offset: number): Promise<number>;
  /** A new producer id (epoch 0) for an idempotent producer, unique for the cluster's life. */
  initProducerId(): Promise<{ producerId: number; producerEpoch: number }>;
  /** Stores the batches of one partition in order; resolves once they are committed (acks=1 and -1 alike). */
  produce(topic: string, partition: number, batches: ProducedBatch[]): Promise<ProduceResult>;
  /**
   * Stored batches from `offset` on, up to about `maxBytes` (the first batch whole whatever its size);
   * with `maxBytes` 0 no batches, only the partition's bounds (checked against `offset` all the same).
   */
  fetch(topic: string, partition: number, offset: number, maxBytes: number, readCommitted: boolean): Promise<FetchedPartition>;
  /** Resolves when one of the partitions gets a commit, or at the deadline (`Date.now()` milliseconds). */
  waitForData(partitions: readonly { topic: string; partition: number }[], deadlineMs: number): Promise<void>;
  /**
   * The offset for a ListOffsets timestamp: -2 earliest, -1 latest (the last stable offset for read_committed),
   * else the first record at or after it.
   */
  listOffset(topic: string, partition: number, timestamp: number, readCommitted: boolean): Promise<{ offset: number; timestamp: number }>;
  /** Where `groupId`'s coordinator is; may start creating the offsets table on first use. */
  groupCoordinator(groupId: string): GroupCoordinatorPlace;
  /** Where a transactional id's coordinator is; may start creating the transaction state table on first use. */
  transactionCoordinator(transactionalId: string): GroupCoordinatorPlace;
  /**
   * The transaction APIs at the coordinator of the transactional id (this node: `transactionCoordinator`
   * said 'here'); each resolves with a Kafka error code (0 when done), InitProducerId also with the producer's
   * id and epoch. They throw only what any request may (Unavailable while the state is not served).
   */
  initTransactions(transactionalId: string, timeoutMs: number): Promise<{ errorCode: number; producerId?: number; producerEpoch?: number }>;
  addPartitionsToTxn(transactionalId: string, producerId: number, producerEpoch: number, partitions: readonly { topic: string; partition: number }[]): Promise<number>;
  addOffsetsToTxn(transactionalId: string, producerId: number, producerEpoch: number, groupId: string): Promise<number>;
  endTxn(transactionalId: string, producerId: number, producerEpoch: number, commit: boolean): Promise<number>;
  /** TxnOffsetCommit at the group's coordinator: hands the offsets to the transaction's coordinator, wherever it is. */
  txnOffsetCommit(transactionalId: string, groupId: string, producerId: number, producerEpoch: number, offsets: readonly CommittedOffset[]): Promise<number>;
  /** Stores committed offsets of a group this node coordinates (durably, before resolving). */
  commitOffsets(groupId: string, offsets: readonly CommittedOffset[]): Promise<void>;
  /** The committed offsets of a group this node coordinates: of the partitions named, or of all when null. */
  fetchOffsets(groupId: string, partitions: readonly { topic: string; partition: number }[] | null): Promise<CommittedOffset[]>;
}

/** Where a consumer group's coordinator is: the leader of the offsets table's bucket the group id hashes to. */
export type GroupCoordinatorPlace =
  /** This node leads the group's bucket and it is open: it coordinates the group. */
  | { kind: 'here' }
  /** Another broker leads it. */
  | { kind: 'elsewhere'; broker: KafkaBrokerAddress }
  /** Nobody serves it yet (the offsets table is being created, the bucket has no leader or is opening). */
  | { kind: 'unavailable'; reason: string };

/** A committed offset of a group, as OffsetCommit stores it and OffsetFetch returns it. */
export interface CommittedOffset {
  topic: string;
  partition: number;
  offset: number;
  leaderEpoch: number;
  metadata: string | null;
}

/** A failure that is a Kafka error code as it is (OFFSET_OUT_OF_RANGE, CORRUPT_MESSAGE, …). */
export class KafkaError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'KafkaError';
  }
}
