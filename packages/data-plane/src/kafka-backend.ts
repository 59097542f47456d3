import { LIMITS, type ServiceConfig } from '@mink/config';
import type { MinkClient } from '@mink/client';
import { NO_WRITERS, bucketId, checkName, getIn, kafkaTopicSpec, logFormatOf, ownRecord, tablesInIdOrder, validateTableSpec, type TableRecord, type TableSpec, type View } from '@mink/meta';
import { InvalidArgumentError, KAFKA_OFFSETS_BUCKET_KEY, KAFKA_OFFSETS_TABLE, MinkError, NotFoundError, UnavailableError, type CoordinatedGroup, type KafkaGroupsAnswer, type KafkaGroupsRequest, type TransactionOffsetsRequest } from '@mink/protocol';
import { bucketOfRow } from '@mink/records';
import {
  ERROR_CODES,
  KafkaError,
  hostAndPortOf,
  kafkaNodeIdOf,
  batchSequences,
  producerWriterId,
  tablePropertiesOfTopicConfigs,
  tablePropertyChangesOfTopicConfigs,
  type TopicConfigChange,
  topicConfigsOfTableProperties,
  searchTimestampInBatch,
  setBaseOffset,
  offsetCountOf,
  type ProducerSequence,
  type FetchedPartition,
  type KafkaBackend,
  type KafkaBrokerAddress,
  type KafkaTopicInfo,
  type ProduceResult,
  type ProducedBatch,
  type CommittedOffset,
  GroupCoordinator,
  SYSTEM_CLOCK,
  type GroupCoordinatorPlace,
} from '@mink/kafka';
import type { ClusterMember, Logger } from '@mink/runtime';
import type { DataPlane, IdempotentWriter, RefuseSequence, RefusedSequence } from './data-plane';
import type { DataNodeMetrics } from './node-metrics';
import { newestProducerEpochIn } from './producer-epochs';
import { TRANSACTIONS_TABLE, TransactionCoordinator, type TransactionOutcomeWriter } from './transaction-coordinator';
import { OffsetsRetention } from './offsets-retention';

/**
 * The Kafka broker port of a data node (packages/kafka's `KafkaBackend`) over its view and the data plane
 * of its current incarnation. Topics are the tables of the `kafka` log format; partition p is bucket p.
 */
export class DataNodeKafkaBackend implements KafkaBackend {
  readonly clusterId: string;
  readonly self: KafkaBrokerAddress;
  private readonly nodeId: string;
  readonly defaultPartitions: number;
  private readonly autoCreateTopics: boolean;
  /** Topics being created automatically, by name: concurrent requests for one name share its create. */
  private readonly autoCreating = new Map<string, Promise<boolean>>();
  private creatingOffsetsTable: Promise<void> | null = null;
  /** The transaction coordinator of the transactional ids whose state this node leads. */
  private readonly transactions: TransactionCoordinator;
  /** Membership of the consumer groups this node coordinates (the broker's handlers drive it). */
  readonly groups: GroupCoordinator;
  /** Expires the offsets of groups without members, in the offsets buckets led here. */
  private readonly offsetsRetention: OffsetsRetention;

  constructor(
    private readonly member: ClusterMember,
    private readonly client: MinkClient,
    config: ServiceConfig,
    private readonly dataPlane: () => DataPlane | null,
    logger: Logger,
    /** Counts produces and fetches as `kafkaProduce` / `kafkaFetch` of their topic and partition. */
    private readonly metrics?: DataNodeMetrics,
  ) {
    // Stable for the cluster's life: the bucket and metadata stream name its storage.
    this.clusterId = `mink-${config.s3Bucket}-${config.metaStream}`;
    this.self = { nodeId: kafkaNodeIdOf(config.nodeId), host: config.advertisedHost, port: config.kafkaPort };
    this.nodeId = config.nodeId;
    this.defaultPartitions = config.kafkaDefaultPartitions;
    this.autoCreateTopics = config.kafkaAutoCreateTopics;
    this.groups = new GroupCoordinator(SYSTEM_CLOCK, { membersPerGroupMax: config.kafkaGroupMaxSize, groupsMax: LIMITS.kafkaGroupsPerCoordinatorMax });
    metrics?.readGroupJoinRefusalsFrom(() => this.groups.joinRefusals());
    this.transactions = new TransactionCoordinator(member, client, config.nodeId, dataPlane, this.transactionOutcomes(), logger);
    const hasMembers = (groupId: string) => this.groups.describe(groupId).members.length > 0;
    this.offsetsRetention = new OffsetsRetention(member, dataPlane, OFFSETS_TABLE, OFFSETS_BUCKET_KEY, hasMembers, config.kafkaOffsetsRetentionMs, logger);
  }

  /** Where a transaction's markers and offsets go: each partition's leader, and the offsets table (created if need be). */
  private transactionOutcomes(): TransactionOutcomeWriter {
    return {
      marker: async (partition, marker) => {
        try {
          await this.client.table(partition.topic).transactionMarker(partition.partition, marker);
        } catch (error) {
          // A topic dropped since has no partition to mark.
          if (error instanceof MinkError && error.code === 'NotFound') return;
          throw error;
        }
      },
      offsets: async (offsets) => {
        if (!getIn(this.member.view.tables, OFFSETS_TABLE)) throw new UnavailableError(`the offsets table ${OFFSETS_TABLE} does not exist yet`);
        await this.client.table(OFFSETS_TABLE).put(
          offsets.map((offset) => ({ group: offset.group, topic: offset.topic, partition: offset.partition, offset: String(offset.offset), leader_epoch: offset.leaderEpoch, metadata: offset.metadata })),
        );
      },
    };
  }

  brokers(): KafkaBrokerAddress[] {
    const view = this.member.view;
    const live = this.member.liveNodes();
    const brokers: KafkaBrokerAddress[] = [];
    for (const nodeId of Object.keys(view.nodes)) {
      const node = ownRecord(view.nodes, nodeId);
      const address = node && live.has(node.id) ? hostAndPortOf(node.kafka) : null;
      if (address) brokers.push({ nodeId: kafkaNodeIdOf(node!.id), ...address });
    }
    // A node that has just started may not show as live yet; clients must always find the one they asked.
    if (!brokers.some((broker) => broker.nodeId === this.self.nodeId)) brokers.push(this.self);
    return brokers.sort((a, b) => a.nodeId - b.nodeId);
  }

  controllerId(): number {
    return this.brokers()[0]!.nodeId;
  }

  topics(): KafkaTopicInfo[] {
    const view = this.member.view;
    const topics: KafkaTopicInfo[] = [];
    for (const table of tablesInIdOrder(view)) {
      if (isTopic(table)) topics.push(this.topicOf(view, table));
    }
    return topics;
  }

  topic(name: string): KafkaTopicInfo | null {
    const view = this.member.view;
    const table = getIn(view.tables, name);
    return table && isTopic(table) ? this.topicOf(view, table) : null;
  }

  private topicOf(view: View, table: TableRecord): KafkaTopicInfo {
    const partitions = Array.from({ length: table.buckets }, (_, partition) => {
      const record = getIn(view.buckets, bucketId(table.id, null, partition));
      const node = record?.leader ? ownRecord(view.nodes, record.leader) : undefined;
      const address = node ? hostAndPortOf(node.kafka) : null;
      return {
        partition,
        leader: node && address ? { nodeId: kafkaNodeIdOf(node.id), ...address } : null,
        leaderEpoch: record?.leaderEpoch ?? -1,
      };
    });
    return { name: table.name, partitions, configs: topicConfigsOfTableProperties(table.properties), internal: table.name === OFFSETS_TABLE || table.name === TRANSACTIONS_TABLE };
  }

  async createTopic(name: string, partitions: number, configs: Record<string, string>, validateOnly: boolean): Promise<void> {
    // A name mink cannot take is Kafka's INVALID_TOPIC_EXCEPTION, which clients report as such.
    const badName = checkName(name, 'topic name');
    if (badName !== null) throw new KafkaError(ERROR_CODES.INVALID_TOPIC_EXCEPTION, badName);
    const mapped = tablePropertiesOfTopicConfigs(configs);
    if ('refused' in mapped) throw new KafkaError(ERROR_CODES.INVALID_CONFIG, mapped.refused);
    const checked = validateTableSpec(kafkaTopicSpec(name, partitions, mapped.properties));
    if (!checked.ok) throw new InvalidArgumentError(checked.message);
    if (validateOnly) return;
    const created = await this.client.createTable(checked.spec);
    // Metadata asked of this node right after the create must show the topic.
    await this.member.store.waitForSeq(created.metaSeq, LIMITS.proposeTimeoutMs);
  }

  autoCreateTopic(name: string): Promise<boolean> {
    // Names of mink's own tables (`__consumer_offsets`, `__transaction_state`) are never made topics by a client.
    if (!this.autoCreateTopics || name.startsWith('__')) return Promise.resolve(false);
    const creating = this.autoCreating.get(name);
    if (creating) return creating;
    const created = this.createTopic(name, this.defaultPartitions, {}, false)
      .then(() => true)
      .catch(async (error: unknown) => {
        // Another node (or request) created it first: it exists, as asked.
        if (error instanceof MinkError && error.code === 'Conflict') {
          await this.member.store.catchUp(LIMITS.proposeTimeoutMs);
          return true;
        }
        throw error;
      })
      .finally(() => this.autoCreating.delete(name));
    this.autoCreating.set(name, created);
    return created;
  }

  async deleteTopic(name: string): Promise<void> {
    const table = getIn(this.member.view.tables, name);
    if (!table || !isTopic(table)) throw new NotFoundError(`topic '${name}' does not exist`);
    if (!isKafkaFormat(table)) throw new KafkaError(ERROR_CODES.INVALID_TOPIC_EXCEPTION, `'${name}' is a mink ${table.kind === 'pk' ? 'primary-key' : 'log'} table read as a topic: drop it over the HTTP API`);
    const dropped = await this.client.dropTable(name);
    await this.member.store.waitForSeq(dropped.metaSeq, LIMITS.proposeTimeoutMs);
  }

  async alterTopicConfigs(name: string, changes: readonly TopicConfigChange[], validateOnly: boolean): Promise<void> {
    const table = this.kafkaTopicNamed(name, 'change its properties');
    const mapped = tablePropertyChangesOfTopicConfigs(changes, table.properties);
    if ('refused' in mapped) throw new KafkaError(ERROR_CODES.INVALID_CONFIG, mapped.refused);
    // Configs that change nothing in the table (a fixed one at mink's value) need no log entry.
    if (validateOnly || Object.keys(mapped.properties).length === 0) return;
    const altered = await this.client.alterTable(name, mapped.properties);
    await this.member.store.waitForSeq(altered.metaSeq, LIMITS.proposeTimeoutMs);
  }

  async deleteRecords(topic: string, partition: number, offset: number): Promise<number> {
    const table = this.kafkaTopicNamed(topic, 'delete its rows');
    const record = table.partition ? undefined : getIn(this.member.view.buckets, bucketId(table.id, null, partition));
    if (!record) throw new NotFoundError(`partition ${partition} of topic '${topic}' does not exist`);
    if (offset > record.stream.endOffset) {
      throw new KafkaError(ERROR_CODES.OFFSET_OUT_OF_RANGE, `offset ${offset} is beyond the high watermark ${record.stream.endOffset} of ${topic}-${partition}`);
    }
    const deleted = await this.client.deleteRecords(topic, partition, offset);
    // This node answers reads from its own view: it shows the new start before the client hears of it.
    await this.member.store.waitForSeq(deleted.metaSeq, LIMITS.proposeTimeoutMs);
    return deleted.startOffset;
  }

  /** The table of Kafka topic `name`; a mink table read as a topic is refused (`what` the HTTP API is for). */
  private kafkaTopicNamed(name: string, what: string): TableRecord {
    const table = getIn(this.member.view.tables, name);
    if (!table || !isTopic(table)) throw new NotFoundError(`topic '${name}' does not exist`);
    if (!isKafkaFormat(table)) throw new KafkaError(ERROR_CODES.POLICY_VIOLATION, `'${name}' is a mink ${table.kind === 'pk' ? 'primary-key' : 'log'} table read as a topic: ${what} over the HTTP API`);
    return table;
  }

  async initProducerId(): Promise<{ producerId: number; producerEpoch: number }> {
    const outcome = await this.member.store.propose({ type: 'AllocateProducerId' });
    if (!outcome.ok || outcome.producerId === undefined) throw new UnavailableError(`no producer id was allocated: ${outcome.ok ? 'the outcome named none' : outcome.rejection.message}`);
    return { producerId: outcome.producerId, producerEpoch: 0 };
  }

  produce(topic: string, partition: number, batches: ProducedBatch[]): Promise<ProduceResult> {
    if (!this.metrics) return this.produceHere(topic, partition, batches);
    const figures = (result: ProduceResult | undefined) => ({
      // Labelled by the topic and partition only when they exist (metricLabelsOf): both come from the client.
      table: topic,
      partition: null,
      bucket: partition,
      op: 'kafkaProduce',
      rows: result ? batches.reduce((sum, batch) => sum + batch.offsetCount, 0) : 0,
      bytes: result ? batches.reduce((sum, batch) => sum + batch.bytes.byteLength, 0) : 0,
    });
    return this.metrics.trackWith(figures, () => this.produceHere(topic, partition, batches));
  }

  private async produceHere(topic: string, partition: number, batches: ProducedBatch[]): Promise<ProduceResult> {
    const data = this.data();
    const table = getIn(this.member.view.tables, topic);
    if (table && !isKafkaFormat(table)) {
      throw new KafkaError(ERROR_CODES.INVALID_TOPIC_EXCEPTION, `'${topic}' is a mink ${table.kind === 'pk' ? 'primary-key' : 'log'} table read as a topic: write its rows over the HTTP API`);
    }
    // Queued in order without waiting in between, so they commit in order (the WAL writer's rule).
    const stored = await Promise.all(
      batches.map(async (batch) => {
        const toStore = { bytes: batch.bytes, offsetCount: batch.offsetCount, stampBaseOffset: setBaseOffset };
        return data.appendRecordBatch(topic, partition, toStore, batch.producer ? this.producerOf(data, topic, partition, batch.producer, batch.offsetCount) : undefined);
      }),
    );
    return { baseOffset: stored[0]!.baseOffset, logStartOffset: stored[0]!.startOffset };
  }

  /**
   * The idempotent writer of a producer's batch on a partition led here (docs/architecture.md §8.4): refused with
   * INVALID_PRODUCER_EPOCH when the partition has committed batches of a newer epoch of the producer, or a
   * transaction marker of one (a fenced zombie); its sequences checked against what the partition committed,
   * a gap answered with OUT_OF_ORDER_SEQUENCE_NUMBER. A transactional batch names its producer and epoch,
   * which open the producer's transaction on the partition.
   */
  private producerOf(
    data: DataPlane,
    topic: string,
    partition: number,
    producer: ProducerSequence,
    offsetCount: number,
  ): { writer: IdempotentWriter; refuse: RefuseSequence; transaction?: { producerId: number; producerEpoch: number } } {
    const { bucketId: id } = data.streamBoundsOf(topic, partition);
    const writers = getIn(this.member.view.buckets, id)?.stream.writers ?? NO_WRITERS;
    const newest = Math.max(newestProducerEpochIn(writers, producer.producerId), data.producerEpochFloorOf(id, producer.producerId));
    if (newest > producer.producerEpoch) {
      throw new KafkaError(ERROR_CODES.INVALID_PRODUCER_EPOCH, `producer ${producer.producerId} is at epoch ${newest} on ${topic}-${partition}, not ${producer.producerEpoch}`);
    }
    const sequences = batchSequences(producer.baseSequence, offsetCount);
    const refusal = (decision: RefusedSequence): string => {
      switch (decision.kind) {
        case 'outOfOrder':
          return `producer ${producer.producerId} sent sequence ${sequences.firstSeq} to ${topic}-${partition} where ${decision.expected} is next`;
        case 'conflict':
          return `producer ${producer.producerId} sent sequence ${sequences.firstSeq} to ${topic}-${partition}, older than the batches remembered (last ${decision.lastCommitted})`;
        case 'reused':
          // Kafka would answer this batch as a duplicate and acknowledge records it never stored.
          return (
            `producer ${producer.producerId} sent sequences ${sequences.firstSeq}-${sequences.seq} to ${topic}-${partition} with other records than the batch ` +
            `${decision.baseOffset === null ? 'in flight under them' : `stored under them at offset ${decision.baseOffset}`}: it lost track of a batch whose outcome it never learnt; ` +
            'not stored (start a new producer)'
          );
      }
    };
    return {
      // A producer the partition does not know (or forgot) starts at sequence 0, as in Kafka.
      writer: { id: producerWriterId(producer.producerId, producer.producerEpoch), ...sequences, acked: -1 },
      refuse: (_writer, decision) => new KafkaError(ERROR_CODES.OUT_OF_ORDER_SEQUENCE_NUMBER, refusal(decision)),
      ...(producer.transactional ? { transaction: { producerId: producer.producerId, producerEpoch: producer.producerEpoch } } : {}),
    };
  }

  fetch(topic: string, partition: number, offset: number, maxBytes: number, readCommitted: boolean): Promise<FetchedPartition> {
    if (!this.metrics) return this.fetchHere(topic, partition, offset, maxBytes, readCommitted);
    const figures = (result: FetchedPartition | undefined) => ({
      // Labelled by the topic and partition only when they exist (metricLabelsOf): both come from the client.
      table: topic,
      partition: null,
      bucket: partition,
      op: 'kafkaFetch',
      rows: result ? result.batches.reduce((sum, batch) => sum + offsetCountOf(batch), 0) : 0,
      bytes: result ? result.batches.reduce((sum, batch) => sum + batch.byteLength, 0) : 0,
    });
    return this.metrics.trackWith(figures, () => this.fetchHere(topic, partition, offset, maxBytes, readCommitted));
  }

  private async fetchHere(topic: string, partition: number, offset: number, maxBytes: number, readCommitted: boolean): Promise<FetchedPartition> {
    const data = this.data();
    const bounds = data.streamBoundsOf(topic, partition);
    if (offset < bounds.startOffset || offset > bounds.endOffset) {
      throw new KafkaError(ERROR_CODES.OFFSET_OUT_OF_RANGE, `offset ${offset} is outside [${bounds.startOffset}, ${bounds.endOffset}] of ${topic}-${partition}`);
    }
    // At the end (of what the isolation level reads), or asked for no bytes (a response already full): the bounds only, without a read.
    const readableEnd = readCommitted ? bounds.lastStableOffset : bounds.endOffset;
    if (offset >= readableEnd || maxBytes <= 0) {
      return { batches: [], highWatermark: bounds.endOffset, lastStableOffset: bounds.lastStableOffset, logStartOffset: bounds.startOffset, abortedTransactions: [] };
    }
    const read = await data.readRecordBatches(topic, partition, offset, Math.max(1, Math.min(maxBytes, LIMITS.streamReadBytesMax)), readCommitted);
    return {
      batches: read.batches,
      highWatermark: read.highWatermark,
      lastStableOffset: read.lastStableOffset,
      logStartOffset: read.startOffset,
      abortedTransactions: read.abortedTransactions.map((aborted) => ({ producerId: aborted.producerId, firstOffset: aborted.firstOffset })),
    };
  }

  async waitForData(partitions: readonly { topic: string; partition: number }[], deadlineMs: number): Promise<void> {
    const data = this.dataPlane();
    if (!data) return;
    const ids: string[] = [];
    for (const { topic, partition } of partitions) {
      try {
        ids.push(data.streamBoundsOf(topic, partition).bucketId);
      } catch {
        // A partition not led here answers with its error at once; it has nothing to wait for.
      }
    }
    await data.waitForCommit(ids, deadlineMs);
  }

  async listOffset(topic: string, partition: number, timestamp: number, readCommitted: boolean): Promise<{ offset: number; timestamp: number }> {
    const data = this.data();
    const bounds = data.streamBoundsOf(topic, partition);
    if (timestamp === -2) return { offset: bounds.startOffset, timestamp: -1 };
    if (timestamp === -1) return { offset: readCommitted ? bounds.lastStableOffset : bounds.endOffset, timestamp: -1 };
    // The first batch whose newest record is at or after the timestamp holds the answer (Kafka's time index
    // is per segment; mink reads the batches, which is fine for the topics of a first version).
    let offset = bounds.startOffset;
    while (offset < bounds.endOffset) {
      const read = await data.readRecordBatches(topic, partition, offset, LIMITS.streamReadBytesMax);
      if (read.batches.length === 0) break;
      for (const batch of read.batches) {
        const searched = searchTimestampInBatch(batch, timestamp);
        if ('found' in searched) return searched.found;
        offset = searched.nextOffset;
      }
    }
    return { offset: -1, timestamp: -1 };
  }

  groupCoordinator(groupId: string): GroupCoordinatorPlace {
    const view = this.member.view;
    const table = getIn(view.tables, OFFSETS_TABLE);
    if (!table) {
      this.createOffsetsTable();
      return { kind: 'unavailable', reason: `the offsets table ${OFFSETS_TABLE} is being created` };
    }
    const bucket = groupBucketOf(table, groupId);
    const record = getIn(view.buckets, bucketId(table.id, null, bucket));
    if (!record?.leader) return { kind: 'unavailable', reason: `bucket ${bucket} of ${OFFSETS_TABLE} has no leader yet` };
    if (record.leader !== this.nodeId) return this.elsewhere(record.leader);
    const data = this.dataPlane();
    if (!data?.serves(OFFSETS_TABLE, bucket)) return { kind: 'unavailable', reason: `bucket ${bucket} of ${OFFSETS_TABLE} is opening here` };
    return { kind: 'here' };
  }

  transactionCoordinator(transactionalId: string): GroupCoordinatorPlace {
    const place = this.transactions.place(transactionalId);
    return place.kind === 'elsewhere' ? this.elsewhere(place.leader) : place;
  }

  /** A coordinator at another node, as a broker to name in FindCoordinator. */
  private elsewhere(leader: string): GroupCoordinatorPlace {
    const node = ownRecord(this.member.view.nodes, leader);
    const address = node ? hostAndPortOf(node.kafka) : null;
    return address ? { kind: 'elsewhere', broker: { nodeId: kafkaNodeIdOf(leader), ...address } } : { kind: 'unavailable', reason: `node ${leader} has no Kafka address` };
  }

  initTransactions(transactionalId: string, timeoutMs: number) {
    return this.transactions.initProducerId(transactionalId, timeoutMs);
  }

  async addPartitionsToTxn(transactionalId: string, producerId: number, producerEpoch: number, partitions: readonly { topic: string; partition: number }[]): Promise<number> {
    return (await this.transactions.addPartitions(transactionalId, producerId, producerEpoch, partitions)).errorCode;
  }

  async addOffsetsToTxn(transactionalId: string, producerId: number, producerEpoch: number, groupId: string): Promise<number> {
    return (await this.transactions.addOffsets(transactionalId, producerId, producerEpoch, groupId)).errorCode;
  }

  async endTxn(transactionalId: string, producerId: number, producerEpoch: number, commit: boolean): Promise<number> {
    return (await this.transactions.endTxn(transactionalId, producerId, producerEpoch, commit)).errorCode;
  }

  /**
   * TxnOffsetCommit, received as the group's coordinator: the offsets go to the transactional id's
   * coordinator (this node, or the leader of the id's bucket of the state table over NATS), which keeps them
   * with the open transaction until it ends.
   */
  async txnOffsetCommit(transactionalId: string, groupId: string, producerId: number, producerEpoch: number, offsets: readonly CommittedOffset[]): Promise<number> {
    const pending = offsets.map((offset) => ({ group: groupId, topic: offset.topic, partition: offset.partition, offset: offset.offset, leaderEpoch: offset.leaderEpoch, metadata: offset.metadata }));
    this.offsetsRetention.touched(groupId);
    const place = this.transactions.place(transactionalId);
    if (place.kind === 'unavailable') return ERROR_CODES.COORDINATOR_NOT_AVAILABLE;
    if (place.kind === 'here') return (await this.transactions.txnOffsets(transactionalId, producerId, producerEpoch, pending)).errorCode;
    const answer = await this.client.table(TRANSACTIONS_TABLE).transactionOffsets(this.transactions.bucketOfId(transactionalId), {
      transactionalId,
      producerId,
      producerEpoch,
      group: groupId,
      offsets: pending.map(({ group: _group, ...offset }) => offset),
    });
    return answer.errorCode;
  }

  /** The 'txnOffsets' request of another node's group coordinator (see txnOffsetCommit), at this transaction coordinator. */
  async transactionOffsets(request: TransactionOffsetsRequest): Promise<{ errorCode: number }> {
    const place = this.transactions.place(request.transactionalId);
    if (place.kind !== 'here') throw place.kind === 'elsewhere' ? new UnavailableError(`the coordinator of '${request.transactionalId}' moved`) : new UnavailableError(place.reason);
    const pending = request.offsets.map((offset) => ({ group: request.group, ...offset }));
    return { errorCode: (await this.transactions.txnOffsets(request.transactionalId, request.producerId, request.producerEpoch, pending)).errorCode };
  }

  /** Starts the transaction coordinator's sweep (DataNode.begin); `stop` ends it. */
  start(): void {
    this.transactions.start();
    this.offsetsRetention.start();
  }

  stop(): void {
    this.transactions.stop();
    this.offsetsRetention.stop();
  }

  /** Sweeps the offsets buckets led here for expired groups now (tests; the timer does it every `kafkaOffsetsSweepMs`). */
  sweepOffsets(): Promise<void> {
    return this.offsetsRetention.sweep();
  }

  async commitOffsets(groupId: string, offsets: readonly CommittedOffset[]): Promise<void> {
    if (offsets.length === 0) return;
    const { data, address } = this.offsetsBucketOf(groupId);
    // Before the put is queued, so a retention sweep deciding now sees the group as active.
    this.offsetsRetention.touched(groupId);
    await data.put({
      op: 'put',
      ...address,
      rows: offsets.map((offset) => ({
        group: groupId,
        topic: offset.topic,
        partition: offset.partition,
        offset: String(offset.offset),
        leader_epoch: offset.leaderEpoch,
        metadata: offset.metadata,
      })),
    });
  }

  async fetchOffsets(groupId: string, partitions: readonly { topic: string; partition: number }[] | null): Promise<CommittedOffset[]> {
    const { data, address } = this.offsetsBucketOf(groupId);
    const rows =
      partitions === null
        ? data.prefixLookup({ op: 'prefixLookup', ...address, prefixes: [{ group: groupId }] }).results[0]!.rows
        : data.lookup({ op: 'lookup', ...address, keys: partitions.map((each) => ({ group: groupId, topic: each.topic, partition: each.partition })) }).rows;
    const found: CommittedOffset[] = [];
    for (const row of rows) {
      if (!row) continue;
      found.push({
        topic: row.topic as string,
        partition: Number(row.partition),
        offset: Number(row.offset),
        leaderEpoch: Number(row.leader_epoch ?? -1),
        metadata: (row.metadata as string | null) ?? null,
      });
    }
    return found;
  }

  /**
   * The groups this node coordinates in the requested buckets of `__consumer_offsets` (GET /v1/kafka/groups):
   * the committed offsets its buckets hold, read a page at a time up to `LIMITS.kafkaGroupsOffsetsListedMax`,
   * and the state and member count of each group as this coordinator holds it (`Empty` for a group with
   * offsets and no members). Groups with members and no commit yet are listed too.
   */
  async coordinatedGroups(request: KafkaGroupsRequest): Promise<KafkaGroupsAnswer> {
    const wellFormed = Array.isArray(request.buckets) && request.buckets.every((bucket) => Number.isSafeInteger(bucket) && bucket >= 0);
    if (!wellFormed || (request.group !== undefined && typeof request.group !== 'string')) throw new InvalidArgumentError('kafkaGroups takes {buckets: [bucket, …], group?: string}');
    const table = getIn(this.member.view.tables, OFFSETS_TABLE);
    const data = this.dataPlane();
    if (!table || !data) return { groups: [], unserved: [...request.buckets], truncated: false };
    const offsets = new Map<string, CoordinatedGroup['offsets']>();
    const served = new Set<number>();
    const unserved: number[] = [];
    let listed = 0;
    let truncated = false;
    for (const bucket of request.buckets) {
      if (!Number.isSafeInteger(bucket) || bucket < 0 || bucket >= table.buckets) throw new InvalidArgumentError(`bucket ${bucket} of ${OFFSETS_TABLE} does not exist`);
      if (!data.serves(OFFSETS_TABLE, bucket)) {
        unserved.push(bucket);
        continue;
      }
      served.add(bucket);
      const address = { table: OFFSETS_TABLE, tableId: table.id, partition: null, bucket };
      const add = (rows: readonly Record<string, unknown>[]) => {
        for (const row of rows) {
          const group = String(row.group);
          let committed = offsets.get(group);
          if (!committed) offsets.set(group, (committed = []));
          committed.push({ topic: String(row.topic), partition: Number(row.partition), offset: Number(row.offset) });
        }
        listed += rows.length;
      };
      if (request.group !== undefined) {
        // One group: its rows are the ones with its id as the key's prefix.
        const found = data.prefixLookup({ op: 'prefixLookup', ...address, prefixes: [{ group: request.group }], limit: Math.min(LIMITS.prefixLookupRowsMax, LIMITS.kafkaGroupsOffsetsListedMax - listed) });
        add(found.results[0]!.rows);
        truncated = found.results[0]!.truncated;
      } else {
        let after: Uint8Array | null = null;
        do {
          const pageRows = Math.min(LIMITS.kafkaOffsetsSweepPageRows, LIMITS.kafkaGroupsOffsetsListedMax - listed);
          const page = data.pkRowsAfter(address, after, pageRows);
          add(page.rows);
          truncated = listed >= LIMITS.kafkaGroupsOffsetsListedMax && page.rows.length === pageRows;
          after = page.rows.length < pageRows || truncated ? null : page.lastKey;
          // Yields between pages: a bucket of many offsets never holds up the node's requests.
          await new Promise((resolve) => setImmediate(resolve));
        } while (after !== null);
      }
      if (truncated) break;
    }
    const held = this.groups.groupIds().filter((groupId) => served.has(groupBucketOf(table, groupId)) && (request.group === undefined || groupId === request.group));
    const groups = [...new Set([...offsets.keys(), ...held])].sort().map((groupId) => {
      const described = this.groups.describe(groupId);
      return { group: groupId, state: described.groupState === 'Dead' ? 'Empty' : described.groupState, members: described.members.length, offsets: offsets.get(groupId) ?? [] };
    });
    return { groups, unserved, truncated };
  }

  private offsetsBucketOf(groupId: string) {
    const table = getIn(this.member.view.tables, OFFSETS_TABLE);
    if (!table) throw new UnavailableError(`the offsets table ${OFFSETS_TABLE} does not exist yet`);
    return { data: this.data(), address: { table: OFFSETS_TABLE, tableId: table.id, partition: null, bucket: groupBucketOf(table, groupId) } };
  }

  /** Creates the offsets table once, on the first group request of any node; a create lost to another node's is fine. */
  private createOffsetsTable(): void {
    if (this.creatingOffsetsTable) return;
    this.creatingOffsetsTable = this.client
      .createTable(OFFSETS_TABLE_SPEC)
      .then((created) => this.member.store.waitForSeq(created.metaSeq, LIMITS.proposeTimeoutMs))
      // Whatever happened (another node's create won, the coordinator was busy), the next group request
      // looks at the view again and, if the table is still missing, tries once more.
      .catch(() => undefined)
      .finally(() => {
        this.creatingOffsetsTable = null;
      });
  }

  private data(): DataPlane {
    const data = this.dataPlane();
    if (!data) throw new UnavailableError('this data node is registering a new incarnation');
    return data;
  }
}

/** The primary-key table of Kafka consumer groups' committed offsets (its columns below). */
export const OFFSETS_TABLE = KAFKA_OFFSETS_TABLE;
const OFFSETS_BUCKET_KEY = [...KAFKA_OFFSETS_BUCKET_KEY];
const OFFSETS_TABLE_SPEC: TableSpec = {
  name: OFFSETS_TABLE,
  columns: [
    { name: 'group', type: 'string' },
    { name: 'topic', type: 'string' },
    { name: 'partition', type: 'int32' },
    { name: 'offset', type: 'int64' },
    { name: 'leader_epoch', type: 'int32' },
    { name: 'metadata', type: 'string' },
  ],
  primaryKey: ['group', 'topic', 'partition'],
  bucketKey: OFFSETS_BUCKET_KEY,
  buckets: LIMITS.kafkaGroupBuckets,
};

/** The bucket of the offsets table a group's offsets and coordinator live in. */
function groupBucketOf(table: TableRecord, groupId: string): number {
  return bucketOfRow({ group: groupId }, OFFSETS_BUCKET_KEY, table.buckets);
}

/** Every unpartitioned table reads as a topic; only those in the `kafka` format take produces and deletes. */
function isTopic(table: TableRecord): boolean {
  return !table.partition;
}

/** A table stored in Kafka's own format, which Kafka clients may write and drop. */
function isKafkaFormat(table: TableRecord): boolean {
  return logFormatOf(table) === 'kafka';
}
