/**
 * Proves the broker's frame handler end to end on the bytes a client sends and reads: request frames are
 * built by kafkajs's own request encoders (header v1 plus body, as kafkajs's request.js frames them) or by
 * hand where kafkajs stops, responses are read by kafkajs's response decoders, and the backend is an
 * in-memory fake that records what reached it. A request mink cannot answer in its own format makes the
 * handler throw, which closes the connection.
 */
import fc from 'fast-check';
import { ConflictError, NotFoundError, NotLeaderError, UnavailableError } from '@mink/protocol';
import { LIMITS } from '@mink/config';
import { decodeRecords, encodeRecordBatch, readRecordBatch, setBaseOffset } from '../messages/record-batch';
import { API_KEYS, ERROR_CODES } from '../wire/codes';
import { KafkaDecodeError, KafkaReader } from '../wire/reader';
import { KafkaWriter } from '../wire/writer';
import type { KafkaFrameHandler } from '../server/kafka-listener';
import { KafkaError, type FetchedPartition, type KafkaBackend, type KafkaBrokerAddress, type KafkaTopicInfo, type ProducedBatch, type ProduceResult } from './backend';
import { searchTimestampInBatch } from './batch-time';
import { advertisedApis, kafkaBroker } from './kafka-broker';
import { newKafkaSession, type KafkaSession } from './sasl-handlers';
import { ScramKeyStore } from '../auth/sasl-exchange';
import { parseAccessPolicy } from '@mink/protocol';
import { tablePropertiesOfTopicConfigs, tablePropertyChangesOfTopicConfigs, topicConfigsOfTableProperties, type TopicConfigChange } from './topic-configs';
import { KafkajsLong, kafkajsApi, kafkajsModule } from '../messages/kafka-oracle.fixture';

// kafkajs is the oracle (see kafka-oracle.fixture.ts): its request framing, request encoders and response decoders.
const kafkajsFramed: (request: { correlationId: number; clientId: string; request: unknown }) => Promise<{ buffer: Buffer }> = kafkajsModule('protocol/request');
const KAFKAJS_CONFIG_RESOURCE_TYPES: { TOPIC: number; BROKER: number; BROKER_LOGGER: number } = kafkajsModule('protocol/configResourceTypes');

const NODE_1: KafkaBrokerAddress = { nodeId: 1, host: 'node-1.mink', port: 9092 };
const NODE_2: KafkaBrokerAddress = { nodeId: 2, host: 'node-2.mink', port: 9093 };
const CONNECTION = { peer: '127.0.0.1:50000', session: newKafkaSession() };

// ---------------------------------------------------------------------------------------------------------
// The in-memory backend.

interface StoredBatch {
  baseOffset: number;
  offsetCount: number;
  bytes: Uint8Array;
}

interface PartitionState {
  leader: KafkaBrokerAddress | null;
  logStartOffset: number;
  nextOffset: number;
  batches: StoredBatch[];
}

interface TopicState {
  properties: Record<string, string>;
  partitions: PartitionState[];
  internal?: boolean;
}

type Operation = 'createTopic' | 'deleteTopic' | 'deleteRecords' | 'produce' | 'fetch' | 'listOffset' | 'initProducerId';

interface DataWaiter {
  keys: string[];
  wake: () => void;
}

/**
 * A KafkaBackend over maps: topics with partition leaders and a log of stored batches per partition. It
 * assigns offsets as the data node does (base offset rewritten in a copy of the batch), wakes long polls
 * when a partition gets a batch, and records every call. `fail` scripts an error for an operation on a
 * topic or partition. The consumer-group part of the port is not driven here and throws if called.
 */
class InMemoryKafkaBackend implements KafkaBackend {
  readonly clusterId = 'mink-spec-cluster';
  readonly self = NODE_1;
  readonly state = new Map<string, TopicState>();
  readonly calls = {
    createTopic: [] as Array<{ name: string; partitions: number; configs: Record<string, string>; validateOnly: boolean }>,
    deleteTopic: [] as string[],
    alterTopicConfigs: [] as Array<{ name: string; changes: TopicConfigChange[]; validateOnly: boolean }>,
    deleteRecords: [] as Array<{ topic: string; partition: number; offset: number }>,
    produce: [] as Array<{ topic: string; partition: number; batches: ProducedBatch[] }>,
    fetch: [] as Array<{ topic: string; partition: number; offset: number; maxBytes: number }>,
    waitForData: [] as Array<{ partitions: Array<{ topic: string; partition: number }>; deadlineMs: number }>,
    listOffset: [] as Array<{ topic: string; partition: number; timestamp: number }>,
    initProducerId: 0,
  };
  /** The producer id initProducerId hands out next. */
  private nextProducerId = 100;
  private readonly failures = new Map<string, Error>();
  private closed = false;
  private readonly dataWaiters = new Set<DataWaiter>();
  private readonly waitObservers: Array<{ count: number; resolve: () => void }> = [];

  addTopic(name: string, leaders: Array<KafkaBrokerAddress | null>, properties: Record<string, string> = {}, internal = false): void {
    this.state.set(name, { properties, internal, partitions: leaders.map((leader) => ({ leader, logStartOffset: 0, nextOffset: 0, batches: [] })) });
  }

  /** Stores `batch` at the end of the partition's log (its base offset rewritten) and wakes long polls on it. */
  append(topic: string, partition: number, batch: Uint8Array): StoredBatch {
    const log = this.partitionLog(topic, partition);
    const bytes = Uint8Array.from(batch);
    setBaseOffset(bytes, log.nextOffset);
    const stored = { baseOffset: log.nextOffset, offsetCount: readRecordBatch(bytes).lastOffsetDelta + 1, bytes };
    log.batches.push(stored);
    log.nextOffset += stored.offsetCount;
    const key = `${topic}/${partition}`;
    for (const waiter of [...this.dataWaiters]) if (waiter.keys.includes(key)) waiter.wake();
    return stored;
  }

  fail(operation: Operation, topic: string, partition: number | null, error: Error): void {
    this.failures.set(`${operation} ${topic} ${partition ?? '*'}`, error);
  }

  /** Resolves once waitForData has been called `count` times in all. */
  waited(count: number): Promise<void> {
    if (this.calls.waitForData.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.waitObservers.push({ count, resolve }));
  }

  /**
   * Ends every long poll still waiting and fails every later fetch, so that a handler a test left waiting
   * answers at once (a failed partition ends the long poll) and no timer outlives the test.
   */
  close(): void {
    this.closed = true;
    for (const waiter of [...this.dataWaiters]) waiter.wake();
  }

  brokers(): KafkaBrokerAddress[] {
    return [NODE_1, NODE_2];
  }

  controllerId(): number {
    return NODE_2.nodeId;
  }

  topics(): KafkaTopicInfo[] {
    return [...this.state.keys()].map((name) => this.topic(name)!);
  }

  topic(name: string): KafkaTopicInfo | null {
    const topic = this.state.get(name);
    if (!topic) return null;
    return { name, configs: topicConfigsOfTableProperties(topic.properties), internal: topic.internal === true, partitions: topic.partitions.map((each, partition) => ({ partition, leader: each.leader, leaderEpoch: 4 })) };
  }

  async createTopic(name: string, partitions: number, configs: Record<string, string>, validateOnly: boolean): Promise<void> {
    this.calls.createTopic.push({ name, partitions, configs, validateOnly });
    this.throwIfScripted('createTopic', name, null);
    if (this.state.has(name)) throw new ConflictError(`topic '${name}' exists`);
    const mapped = tablePropertiesOfTopicConfigs(configs);
    if ('refused' in mapped) throw new KafkaError(ERROR_CODES.INVALID_CONFIG, mapped.refused);
    if (!validateOnly) this.addTopic(name, Array.from({ length: partitions }, () => NODE_1), mapped.properties);
  }

  readonly defaultPartitions = 2;
  /** Whether unknown topics are created on first use (Kafka's default), as the tests set it. */
  autoCreate = true;
  readonly autoCreated: string[] = [];

  async autoCreateTopic(name: string): Promise<boolean> {
    if (!this.autoCreate || name.startsWith('__')) return false;
    if (name.includes(' ')) throw new KafkaError(ERROR_CODES.INVALID_TOPIC_EXCEPTION, `'${name}' is no topic name`);
    this.autoCreated.push(name);
    if (!this.state.has(name)) this.addTopic(name, Array.from({ length: this.defaultPartitions }, () => NODE_1));
    return true;
  }

  async deleteTopic(name: string): Promise<void> {
    this.calls.deleteTopic.push(name);
    this.throwIfScripted('deleteTopic', name, null);
    if (!this.state.delete(name)) throw new NotFoundError(`topic '${name}' does not exist`);
  }

  async alterTopicConfigs(name: string, changes: readonly TopicConfigChange[], validateOnly: boolean): Promise<void> {
    this.calls.alterTopicConfigs.push({ name, changes: [...changes], validateOnly });
    const topic = this.state.get(name);
    if (!topic) throw new NotFoundError(`topic '${name}' does not exist`);
    const mapped = tablePropertyChangesOfTopicConfigs(changes, topic.properties);
    if ('refused' in mapped) throw new KafkaError(ERROR_CODES.INVALID_CONFIG, mapped.refused);
    if (validateOnly) return;
    for (const [key, value] of Object.entries(mapped.properties)) {
      if (value === null) delete topic.properties[key];
      else topic.properties[key] = value;
    }
  }

  async deleteRecords(topic: string, partition: number, offset: number): Promise<number> {
    this.calls.deleteRecords.push({ topic, partition, offset });
    this.throwIfScripted('deleteRecords', topic, partition);
    const log = this.partitionLog(topic, partition);
    const target = offset === -1 ? log.nextOffset : offset;
    if (target > log.nextOffset) throw new KafkaError(ERROR_CODES.OFFSET_OUT_OF_RANGE, `offset ${offset} is beyond the high watermark ${log.nextOffset}`);
    log.logStartOffset = Math.max(log.logStartOffset, target);
    return log.logStartOffset;
  }

  async initProducerId(): Promise<{ producerId: number; producerEpoch: number }> {
    this.calls.initProducerId++;
    this.throwIfScripted('initProducerId', '*', null);
    return { producerId: this.nextProducerId++, producerEpoch: 0 };
  }

  /** Partitions (`topic/partition`) whose produce never settles, as a commit that does not come. */
  readonly stalledProduce = new Set<string>();

  async produce(topic: string, partition: number, batches: ProducedBatch[]): Promise<ProduceResult> {
    this.calls.produce.push({ topic, partition, batches });
    this.throwIfScripted('produce', topic, partition);
    if (this.stalledProduce.has(`${topic}/${partition}`)) return new Promise<never>(() => undefined);
    const stored = batches.map((batch) => this.append(topic, partition, batch.bytes));
    return { baseOffset: stored[0]!.baseOffset, logStartOffset: this.partitionLog(topic, partition).logStartOffset };
  }

  async fetch(topic: string, partition: number, offset: number, maxBytes: number): Promise<FetchedPartition> {
    this.calls.fetch.push({ topic, partition, offset, maxBytes });
    if (this.closed) throw new UnavailableError('the backend is closed');
    this.throwIfScripted('fetch', topic, partition);
    const log = this.partitionLog(topic, partition);
    if (offset < log.logStartOffset || offset > log.nextOffset) throw new KafkaError(ERROR_CODES.OFFSET_OUT_OF_RANGE, `offset ${offset} is outside the log`);
    const batches: Uint8Array[] = [];
    let bytes = 0;
    // 0 bytes asks for the bounds only.
    for (const batch of maxBytes === 0 ? [] : log.batches.filter((each) => each.baseOffset + each.offsetCount > offset)) {
      // The first batch whole whatever its size, as the port's contract says.
      if (batches.length > 0 && bytes + batch.bytes.byteLength > maxBytes) break;
      batches.push(batch.bytes);
      bytes += batch.bytes.byteLength;
    }
    return { batches, highWatermark: log.nextOffset, lastStableOffset: log.nextOffset, logStartOffset: log.logStartOffset, abortedTransactions: [] };
  }

  waitForData(partitions: readonly { topic: string; partition: number }[], deadlineMs: number): Promise<void> {
    this.calls.waitForData.push({ partitions: partitions.map(({ topic, partition }) => ({ topic, partition })), deadlineMs });
    for (const observer of this.waitObservers.filter((each) => this.calls.waitForData.length >= each.count)) observer.resolve();
    return new Promise((resolve) => {
      const waiter: DataWaiter = {
        keys: partitions.map(({ topic, partition }) => `${topic}/${partition}`),
        wake: () => {
          clearTimeout(timer);
          this.dataWaiters.delete(waiter);
          resolve();
        },
      };
      const timer = setTimeout(waiter.wake, Math.max(0, deadlineMs - Date.now()));
      this.dataWaiters.add(waiter);
    });
  }

  async listOffset(topic: string, partition: number, timestamp: number): Promise<{ offset: number; timestamp: number }> {
    this.calls.listOffset.push({ topic, partition, timestamp });
    this.throwIfScripted('listOffset', topic, partition);
    const log = this.partitionLog(topic, partition);
    if (timestamp === -2) return { offset: log.logStartOffset, timestamp: -1 };
    if (timestamp === -1) return { offset: log.nextOffset, timestamp: -1 };
    for (const batch of log.batches) {
      const searched = searchTimestampInBatch(batch.bytes, timestamp);
      if ('found' in searched) return searched.found;
    }
    return { offset: -1, timestamp: -1 };
  }

  groupCoordinator(): never {
    throw new Error('InMemoryKafkaBackend: groupCoordinator is not driven by these tests');
  }

  async commitOffsets(): Promise<never> {
    throw new Error('InMemoryKafkaBackend: commitOffsets is not driven by these tests');
  }

  async fetchOffsets(): Promise<never> {
    throw new Error('InMemoryKafkaBackend: fetchOffsets is not driven by these tests');
  }

  /** Where the transaction coordinator of every id is, as the tests set it. */
  transactionPlace: ReturnType<KafkaBackend['transactionCoordinator']> = { kind: 'here' };
  readonly initTransactionsCalls: Array<{ transactionalId: string; timeoutMs: number }> = [];

  transactionCoordinator(): ReturnType<KafkaBackend['transactionCoordinator']> {
    return this.transactionPlace;
  }

  async initTransactions(transactionalId: string, timeoutMs: number): Promise<{ errorCode: number; producerId: number; producerEpoch: number }> {
    this.initTransactionsCalls.push({ transactionalId, timeoutMs });
    return { errorCode: ERROR_CODES.NONE, producerId: 55, producerEpoch: 3 };
  }

  async addPartitionsToTxn(): Promise<never> {
    throw new Error('InMemoryKafkaBackend: transactions are not driven by these tests');
  }

  async addOffsetsToTxn(): Promise<never> {
    throw new Error('InMemoryKafkaBackend: transactions are not driven by these tests');
  }

  async endTxn(): Promise<never> {
    throw new Error('InMemoryKafkaBackend: transactions are not driven by these tests');
  }

  async txnOffsetCommit(): Promise<never> {
    throw new Error('InMemoryKafkaBackend: transactions are not driven by these tests');
  }

  private partitionLog(topic: string, partition: number): PartitionState {
    const log = this.state.get(topic)?.partitions[partition];
    if (!log) throw new NotFoundError(`${topic}-${partition} does not exist`);
    return log;
  }

  private throwIfScripted(operation: Operation, topic: string, partition: number | null): void {
    const error = this.failures.get(`${operation} ${topic} ${partition ?? '*'}`) ?? this.failures.get(`${operation} ${topic} *`);
    if (error) throw error;
  }
}

// ---------------------------------------------------------------------------------------------------------
// Frames in, responses out.

let nextCorrelationId = 1000;

/** A request frame without its size prefix, as kafkajs's request.js frames it: header v1, then the body. */
async function kafkajsFrame(api: string, version: number, args: object): Promise<{ frame: Uint8Array; correlationId: number }> {
  const correlationId = nextCorrelationId++;
  const framed = await kafkajsFramed({ correlationId, clientId: 'broker-spec', request: kafkajsApi(api).request(version)(args) });
  return { frame: Uint8Array.from(framed.buffer.subarray(4)), correlationId };
}

/** A request header written by hand: v1, or v2 (tagged fields after the client id) for flexible versions. */
function handHeader(apiKey: number, apiVersion: number, correlationId: number, headerVersion: 1 | 2): KafkaWriter {
  const writer = new KafkaWriter().int16(apiKey).int16(apiVersion).int32(correlationId).nullableString('broker-spec');
  if (headerVersion === 2) writer.taggedFields();
  return writer;
}

/** Splits an answer into the correlation id of its header (v0 in every exchange here) and its body. */
function responseOf(parts: Uint8Array[] | null): { correlationId: number; body: Buffer } {
  if (parts === null) throw new Error('the handler answered nothing');
  const bytes = Buffer.concat(parts);
  return { correlationId: bytes.readInt32BE(0), body: bytes.subarray(4) };
}

/**
 * Sends a kafkajs-encoded request to the handler and decodes the answer with kafkajs's decoder of the same
 * version, after checking that it carries the request's correlation id.
 */
async function exchange(handler: KafkaFrameHandler, api: string, version: number, args: object, connection: { peer: string; session: KafkaSession } = CONNECTION): Promise<any> {
  const { frame, correlationId } = await kafkajsFrame(api, version, args);
  const response = responseOf(await handler(frame, connection));
  expect(response.correlationId).toBe(correlationId);
  return kafkajsApi(api).response(version).decode(response.body);
}

function batchOf(records: Array<{ key: string | null; value: string; timestamp: number }>): Uint8Array {
  return encodeRecordBatch({
    baseOffset: 0,
    records: records.map((record) => ({ timestamp: record.timestamp, key: record.key === null ? null : Buffer.from(record.key), value: Buffer.from(record.value) })),
  });
}

/** The records of a kafkajs-decoded fetch partition, in a form to compare. */
function recordsOf(messages: Array<{ offset: string; key: Buffer | null; value: Buffer | null }>): Array<{ offset: string; key: string | null; value: string | null }> {
  return messages.map((message) => ({ offset: message.offset, key: message.key?.toString() ?? null, value: message.value?.toString() ?? null }));
}

/** The records of stored or produced batch bytes, as text. */
function textRecordsOf(batch: Uint8Array): Array<{ offset: number; key: string | null; value: string | null; timestamp: number }> {
  return decodeRecords(readRecordBatch(batch)).map((record) => ({
    offset: record.offset,
    key: record.key === null ? null : Buffer.from(record.key).toString(),
    value: record.value === null ? null : Buffer.from(record.value).toString(),
    timestamp: record.timestamp,
  }));
}

let backend: InMemoryKafkaBackend;
let handle: KafkaFrameHandler;

beforeEach(() => {
  backend = new InMemoryKafkaBackend();
  // orders: partition 0 led here, 1 by node 2, 2 without a leader. audit: one partition led here.
  backend.addTopic('orders', [NODE_1, NODE_2, null], { 'table.log.ttl': '604800000' });
  backend.addTopic('audit', [NODE_1]);
  handle = kafkaBroker(backend);
});

afterEach(() => backend.close());

// ---------------------------------------------------------------------------------------------------------

describe('ApiVersions', () => {
  it('advertises every API with the ranges clients pick from, sorted by key', () => {
    const advertised = advertisedApis();
    expect(advertised).toEqual(
      expect.arrayContaining([
        { apiKey: API_KEYS.Produce, minVersion: 0, maxVersion: 8 },
        { apiKey: API_KEYS.Fetch, minVersion: 0, maxVersion: 11 },
        { apiKey: API_KEYS.ListOffsets, minVersion: 0, maxVersion: 5 },
        { apiKey: API_KEYS.Metadata, minVersion: 0, maxVersion: 8 },
        { apiKey: API_KEYS.ApiVersions, minVersion: 0, maxVersion: 3 },
        { apiKey: API_KEYS.CreateTopics, minVersion: 0, maxVersion: 4 },
        { apiKey: API_KEYS.DeleteTopics, minVersion: 0, maxVersion: 3 },
        { apiKey: API_KEYS.DescribeConfigs, minVersion: 0, maxVersion: 2 },
        { apiKey: API_KEYS.AlterConfigs, minVersion: 0, maxVersion: 1 },
        { apiKey: API_KEYS.IncrementalAlterConfigs, minVersion: 0, maxVersion: 0 },
        { apiKey: API_KEYS.DeleteRecords, minVersion: 0, maxVersion: 1 },
        { apiKey: API_KEYS.OffsetForLeaderEpoch, minVersion: 0, maxVersion: 3 },
        { apiKey: API_KEYS.InitProducerId, minVersion: 0, maxVersion: 1 },
      ]),
    );
    const keys = advertised.map((range) => range.apiKey);
    expect(keys).toEqual([...new Set(keys)].sort((a, b) => a - b));
  });

  it.each([0, 1, 2])('answers a kafkajs v%i request with exactly the advertised ranges', async (version) => {
    const decoded = await exchange(handle, 'apiVersions', version, {});
    expect(decoded.errorCode).toBe(ERROR_CODES.NONE);
    expect(decoded.apiVersions).toEqual(advertisedApis());
  });

  it('answers a v3 request (header v2, compact strings, tagged fields) in v3 behind a v0 response header', async () => {
    const frame = handHeader(API_KEYS.ApiVersions, 3, 77, 2).compactString('apache-kafka-java').compactString('3.7.0').taggedFields().toBytes();
    const { correlationId, body } = responseOf(await handle(frame, CONNECTION));

    const reader = new KafkaReader(body);
    const errorCode = reader.int16();
    const apiKeys = reader.compactArray((each) => {
      const range = { apiKey: each.int16(), minVersion: each.int16(), maxVersion: each.int16() };
      each.taggedFields();
      return range;
    });
    const throttleTimeMs = reader.int32();
    reader.taggedFields();

    expect({ correlationId, errorCode, apiKeys, throttleTimeMs, remaining: reader.remaining }).toEqual({ correlationId: 77, errorCode: 0, apiKeys: advertisedApis(), throttleTimeMs: 0, remaining: 0 });
  });

  // KIP-511: a version the broker does not know gets a v0 answer with UNSUPPORTED_VERSION and the
  // ApiVersions range, whatever the body (its layout is unknown, so it is not read).
  it.each([4, 99])('answers a v%i request with a v0 UNSUPPORTED_VERSION response naming versions 0-3', async (version) => {
    const frame = handHeader(API_KEYS.ApiVersions, version, 78, 2).compactString('future-client').uvarint(12345).int64(7).taggedFields().toBytes();
    const { correlationId, body } = responseOf(await handle(frame, CONNECTION));

    const reader = new KafkaReader(body);
    const answer = { errorCode: reader.int16(), apiKeys: reader.array((each) => [each.int16(), each.int16(), each.int16()]), remaining: reader.remaining };
    expect({ correlationId, ...answer }).toEqual({ correlationId: 78, errorCode: ERROR_CODES.UNSUPPORTED_VERSION, apiKeys: [[API_KEYS.ApiVersions, 0, 3]], remaining: 0 });
    await expect(kafkajsApi('apiVersions').response(0).decode(body)).rejects.toMatchObject({ type: 'UNSUPPORTED_VERSION' });
  });
});

describe('Metadata', () => {
  const METADATA_VERSIONS_OF_KAFKAJS = [0, 1, 2, 3, 4, 5, 6];

  /** What every version of kafkajs's decoder reads of a topic, in kafkajs's names. */
  const topicView = (topic: any) => ({
    topic: topic.topic,
    errorCode: topic.topicErrorCode,
    partitions: topic.partitionMetadata.map((partition: any) => ({
      partition: partition.partitionId,
      errorCode: partition.partitionErrorCode,
      leader: partition.leader,
      replicas: partition.replicas,
      isr: partition.isr,
    })),
  });

  const ORDERS_VIEW = {
    topic: 'orders',
    errorCode: ERROR_CODES.NONE,
    partitions: [
      { partition: 0, errorCode: ERROR_CODES.NONE, leader: 1, replicas: [1], isr: [1] },
      { partition: 1, errorCode: ERROR_CODES.NONE, leader: 2, replicas: [2], isr: [2] },
      { partition: 2, errorCode: ERROR_CODES.LEADER_NOT_AVAILABLE, leader: -1, replicas: [], isr: [] },
    ],
  };
  const AUDIT_VIEW = { topic: 'audit', errorCode: ERROR_CODES.NONE, partitions: [{ partition: 0, errorCode: ERROR_CODES.NONE, leader: 1, replicas: [1], isr: [1] }] };

  it.each(METADATA_VERSIONS_OF_KAFKAJS)('v%i: all topics, each partition with its leader or LEADER_NOT_AVAILABLE', async (version) => {
    const decoded = await exchange(handle, 'metadata', version, { topics: [] });

    expect(decoded.topicMetadata.map(topicView)).toEqual([ORDERS_VIEW, AUDIT_VIEW]);
    expect(decoded.brokers.map(({ nodeId, host, port }: KafkaBrokerAddress) => ({ nodeId, host, port }))).toEqual([NODE_1, NODE_2]);
    if (version >= 1) expect(decoded.controllerId).toBe(NODE_2.nodeId);
    if (version >= 2) expect(decoded.clusterId).toBe('mink-spec-cluster');
  });

  it('flags the consumer offsets topic internal and the others not', async () => {
    backend.addTopic('__consumer_offsets', [NODE_1], {}, true);

    const decoded = await exchange(handle, 'metadata', 6, { topics: [] });

    expect(decoded.topicMetadata.map(({ topic, isInternal }: { topic: string; isInternal: boolean }) => [topic, isInternal])).toEqual([
      ['orders', false],
      ['audit', false],
      ['__consumer_offsets', true],
    ]);
  });

  it.each(METADATA_VERSIONS_OF_KAFKAJS)('v%i: the topics named, in request order, an unknown one created (auto-creation, on by default)', async (version) => {
    // Proves `kcat -P -t <new name>` and a kafkajs producer find a topic nobody created, as with Kafka's default.
    const decoded = await exchange(handle, 'metadata', version, { topics: ['audit', 'missing', 'orders'], allowAutoTopicCreation: true });

    expect(decoded.topicMetadata.map(topicView)).toEqual([
      AUDIT_VIEW,
      { topic: 'missing', errorCode: 0, partitions: [0, 1].map((partition) => ({ partition, errorCode: 0, leader: NODE_1.nodeId, replicas: [NODE_1.nodeId], isr: [NODE_1.nodeId] })) },
      ORDERS_VIEW,
    ]);
    expect(backend.autoCreated).toEqual(['missing']);
  });

  it.each<[string, { autoCreate: boolean; allow: boolean; name: string }, number]>([
    ['auto-creation off: UNKNOWN_TOPIC_OR_PARTITION', { autoCreate: false, allow: true, name: 'missing' }, ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION],
    ['the client does not allow it (v4+): UNKNOWN_TOPIC_OR_PARTITION', { autoCreate: true, allow: false, name: 'missing' }, ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION],
    ['a name reserved for mink\'s tables: UNKNOWN_TOPIC_OR_PARTITION', { autoCreate: true, allow: true, name: '__secret' }, ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION],
    ['a name a topic cannot have: INVALID_TOPIC_EXCEPTION', { autoCreate: true, allow: true, name: 'two words' }, ERROR_CODES.INVALID_TOPIC_EXCEPTION],
  ])('an unknown topic, %s', async (_case, { autoCreate, allow, name }, errorCode) => {
    backend.autoCreate = autoCreate;
    const decoded = await exchange(handle, 'metadata', 6, { topics: [name], allowAutoTopicCreation: allow });
    expect(decoded.topicMetadata.map(topicView)).toEqual([{ topic: name, errorCode, partitions: [] }]);
    expect(backend.topic(name)).toBeNull();
  });
});

describe('Produce', () => {
  const PRODUCE_VERSIONS_OF_KAFKAJS = [3, 4, 5, 6, 7];
  const ORDERS_MESSAGES = [
    { key: Buffer.from('order-1'), value: Buffer.from('{"total":3}'), timestamp: 1_700_000_000_100 },
    { key: Buffer.from('order-2'), value: Buffer.from('{"total":5}'), timestamp: 1_700_000_000_200 },
  ];
  const AUDIT_MESSAGES = [{ key: null, value: Buffer.from('login'), timestamp: 1_700_000_000_300 }];

  function produceArgs(overrides: object = {}) {
    return {
      acks: -1,
      timeout: 30_000,
      topicData: [
        { topic: 'orders', partitions: [{ partition: 0, messages: ORDERS_MESSAGES }] },
        { topic: 'audit', partitions: [{ partition: 0, messages: AUDIT_MESSAGES }] },
      ],
      ...overrides,
    };
  }

  /** Each partition of a kafkajs produce response as `topic/partition` → error code and base offset. */
  function outcomesOf(decoded: any): Record<string, { errorCode: number; baseOffset: string }> {
    const outcomes: Record<string, { errorCode: number; baseOffset: string }> = {};
    for (const topic of decoded.topics) for (const partition of topic.partitions) outcomes[`${topic.topicName}/${partition.partition}`] = { errorCode: partition.errorCode, baseOffset: partition.baseOffset };
    return outcomes;
  }

  it.each(PRODUCE_VERSIONS_OF_KAFKAJS)('v%i: hands each partition its one batch with offsetCount = lastOffsetDelta + 1 and answers the base offsets', async (version) => {
    backend.append('orders', 0, batchOf([{ key: null, value: 'earlier', timestamp: 1 }]));
    backend.append('orders', 0, batchOf([{ key: null, value: 'earlier', timestamp: 2 }]));

    const decoded = await exchange(handle, 'produce', version, produceArgs());

    expect(outcomesOf(decoded)).toEqual({ 'orders/0': { errorCode: 0, baseOffset: '2' }, 'audit/0': { errorCode: 0, baseOffset: '0' } });
    expect(backend.calls.produce.map(({ topic, partition, batches }) => ({ topic, partition, offsetCounts: batches.map((batch) => batch.offsetCount) }))).toEqual([
      { topic: 'orders', partition: 0, offsetCounts: [2] },
      { topic: 'audit', partition: 0, offsetCounts: [1] },
    ]);
    expect(textRecordsOf(backend.state.get('orders')!.partitions[0]!.batches[2]!.bytes)).toEqual([
      { offset: 2, key: 'order-1', value: '{"total":3}', timestamp: 1_700_000_000_100 },
      { offset: 3, key: 'order-2', value: '{"total":5}', timestamp: 1_700_000_000_200 },
    ]);
    if (version >= 5) expect(decoded.topics[0].partitions[0].logStartOffset).toBe('0');
  });

  // Each row makes the backend fail the orders partition one way; audit, in the same request, is stored.
  it.each([
    { name: 'NotLeaderError', error: new NotLeaderError('led by node 2', { table: 'orders', bucket: 0, node: '2', to: 'node-2', leaderEpoch: 4 }), errorCode: ERROR_CODES.NOT_LEADER_OR_FOLLOWER },
    { name: 'UnavailableError', error: new UnavailableError('bucket opening'), errorCode: ERROR_CODES.LEADER_NOT_AVAILABLE },
    { name: 'KafkaError(KAFKA_STORAGE_ERROR)', error: new KafkaError(ERROR_CODES.KAFKA_STORAGE_ERROR, 'disk gone'), errorCode: ERROR_CODES.KAFKA_STORAGE_ERROR },
    { name: 'a plain Error', error: new Error('bug'), errorCode: ERROR_CODES.UNKNOWN_SERVER_ERROR },
  ])('answers the error code of a backend $name for its partition only', async ({ error, errorCode }) => {
    backend.fail('produce', 'orders', 0, error);

    const decoded = await exchange(handle, 'produce', 7, produceArgs());

    expect(outcomesOf(decoded)).toEqual({ 'orders/0': { errorCode, baseOffset: '-1' }, 'audit/0': { errorCode: 0, baseOffset: '0' } });
  });

  /** The request kafkajs sends, with its last byte flipped: the last byte of the audit batch, inside its CRC's range. */
  function withCorruptedLastBatch(frame: Uint8Array): Uint8Array {
    const corrupted = Uint8Array.from(frame);
    corrupted[corrupted.byteLength - 1] ^= 0xff;
    return corrupted;
  }

  // Each row is a request mink refuses per partition before the backend sees it: the code lands on every
  // partition the refusal concerns and nothing is stored there.
  it.each([
    { name: 'a producer id without a producer epoch', args: { producerId: KafkajsLong.fromValue(7), producerEpoch: -1 }, corrupt: false, expected: { 'orders/0': 87, 'audit/0': 87 }, stored: [] },
    { name: 'acks=2', args: { acks: 2 }, corrupt: false, expected: { 'orders/0': 21, 'audit/0': 21 }, stored: [] },
    { name: 'a corrupted CRC in the audit batch', args: {}, corrupt: true, expected: { 'orders/0': 0, 'audit/0': 2 }, stored: ['orders/0'] },
  ])('refuses $name', async ({ args, corrupt, expected, stored }) => {
    const { frame, correlationId } = await kafkajsFrame('produce', 7, produceArgs(args));
    const response = responseOf(await handle(corrupt ? withCorruptedLastBatch(frame) : frame, CONNECTION));
    const decoded = await kafkajsApi('produce').response(7).decode(response.body);

    expect(response.correlationId).toBe(correlationId);
    expect(Object.fromEntries(Object.entries(outcomesOf(decoded)).map(([key, outcome]) => [key, outcome.errorCode]))).toEqual(expected);
    expect(backend.calls.produce.map(({ topic, partition }) => `${topic}/${partition}`)).toEqual(stored);
  });

  it.each(PRODUCE_VERSIONS_OF_KAFKAJS)('v%i: hands an idempotent producer\'s batches over with its producer id, epoch and each partition\'s base sequence', async (version) => {
    const args = produceArgs({
      producerId: KafkajsLong.fromValue(7),
      producerEpoch: 2,
      topicData: [
        { topic: 'orders', partitions: [{ partition: 0, firstSequence: 40, messages: ORDERS_MESSAGES }] },
        { topic: 'audit', partitions: [{ partition: 0, messages: AUDIT_MESSAGES }] },
      ],
    });

    const decoded = await exchange(handle, 'produce', version, args);

    expect(outcomesOf(decoded)).toEqual({ 'orders/0': { errorCode: 0, baseOffset: '0' }, 'audit/0': { errorCode: 0, baseOffset: '0' } });
    expect(backend.calls.produce.map(({ topic, batches }) => ({ topic, producers: batches.map((batch) => batch.producer), offsetCounts: batches.map((batch) => batch.offsetCount) }))).toEqual([
      { topic: 'orders', producers: [{ producerId: 7, producerEpoch: 2, baseSequence: 40, transactional: false }], offsetCounts: [2] },
      { topic: 'audit', producers: [{ producerId: 7, producerEpoch: 2, baseSequence: 0, transactional: false }], offsetCounts: [1] },
    ]);
  });

  it('answers a produce to a topic nobody created with UNKNOWN_TOPIC_OR_PARTITION, which clients retry, and creates it', async () => {
    const decoded = await exchange(handle, 'produce', 7, produceArgs({ topicData: [{ topic: 'fresh', partitions: [{ partition: 0, messages: AUDIT_MESSAGES }] }] }));
    expect(outcomesOf(decoded)).toEqual({ 'fresh/0': { errorCode: ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION, baseOffset: '-1' } });
    expect(backend.calls.produce).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(backend.autoCreated).toEqual(['fresh']);
  });

  it('hands a transactional producer\'s batches over as transactional', async () => {
    // Proves a transaction's batches reach the backend marked as such, which opens the transaction on each partition.
    const decoded = await exchange(handle, 'produce', 7, produceArgs({ transactionalId: 'tx-1', producerId: KafkajsLong.fromValue(7), producerEpoch: 0 }));
    expect(outcomesOf(decoded)).toEqual({ 'orders/0': { errorCode: 0, baseOffset: '0' }, 'audit/0': { errorCode: 0, baseOffset: '0' } });
    expect(backend.calls.produce.flatMap(({ batches }) => batches.map((batch) => batch.producer?.transactional))).toEqual([true, true]);
  });

  /** A Produce v3 body written by hand around one partition's record set, as no client would send it. */
  function handProduce(transactionalId: string | null, records: Uint8Array): Uint8Array {
    return Uint8Array.from(
      Buffer.concat(
        new KafkaWriter()
          .int16(API_KEYS.Produce)
          .int16(3)
          .int32(77)
          .nullableString('broker-spec')
          .nullableString(transactionalId)
          .int16(-1)
          .int32(30_000)
          .array([0], (topic) => void topic.string('orders').array([0], (partition) => void partition.int32(0).bytes(records)))
          .finish(),
      ),
    );
  }

  it.each([
    ['a transactional batch without the transactional id', null, { transactional: true }, ERROR_CODES.INVALID_REQUEST],
    ['a batch that is not transactional with a transactional id', 'tx-1', { transactional: false }, ERROR_CODES.INVALID_REQUEST],
    ['a control batch (a marker only the coordinator writes)', 'tx-1', { transactional: true, control: true }, ERROR_CODES.INVALID_RECORD],
  ])('refuses %s, unstored', async (_case, transactionalId, flags, errorCode) => {
    const records = encodeRecordBatch({ baseOffset: 0, records: [{ timestamp: 1, key: null, value: Buffer.from('v') }], producerId: 7, producerEpoch: 0, baseSequence: 0, ...flags });
    const reader = new KafkaReader(responseOf(await handle(handProduce(transactionalId, records), CONNECTION)).body);
    const decoded = reader.array(() => ({ name: reader.string(), partitions: reader.array(() => ({ index: reader.int32(), errorCode: reader.int16(), baseOffset: reader.int64Number(), logAppendTime: reader.int64() })) }));
    expect(decoded).toEqual([{ name: 'orders', partitions: [{ index: 0, errorCode, baseOffset: -1, logAppendTime: -1n }] }]);
    expect(backend.calls.produce).toEqual([]);
  });

  it.each([
    { name: 'OUT_OF_ORDER_SEQUENCE_NUMBER', code: ERROR_CODES.OUT_OF_ORDER_SEQUENCE_NUMBER },
    { name: 'INVALID_PRODUCER_EPOCH', code: ERROR_CODES.INVALID_PRODUCER_EPOCH },
  ])('answers a backend\'s $name for an idempotent batch as it is', async ({ code }) => {
    backend.fail('produce', 'orders', 0, new KafkaError(code, 'refused'));

    const decoded = await exchange(handle, 'produce', 7, produceArgs({ producerId: KafkajsLong.fromValue(7), producerEpoch: 0 }));

    expect(outcomesOf(decoded)).toEqual({ 'orders/0': { errorCode: code, baseOffset: '-1' }, 'audit/0': { errorCode: 0, baseOffset: '0' } });
  });

  it('answers REQUEST_TIMED_OUT for a partition whose batch is not committed within timeout_ms, the others as usual', async () => {
    backend.stalledProduce.add('orders/0');

    const decoded = await exchange(handle, 'produce', 7, produceArgs({ timeout: 50 }));

    expect(outcomesOf(decoded)).toEqual({ 'orders/0': { errorCode: ERROR_CODES.REQUEST_TIMED_OUT, baseOffset: '-1' }, 'audit/0': { errorCode: 0, baseOffset: '0' } });
  });

  it.each(PRODUCE_VERSIONS_OF_KAFKAJS)('v%i with acks=0: stores the batches and sends no response at all', async (version) => {
    const { frame } = await kafkajsFrame('produce', version, produceArgs({ acks: 0 }));

    await expect(handle(frame, CONNECTION)).resolves.toBeNull();
    expect(backend.calls.produce.map(({ topic, partition }) => `${topic}/${partition}`)).toEqual(['orders/0', 'audit/0']);
  });

  // Fails today: produce() returns 'silent' for acks=0 "whatever happened". Kafka's broker closes the
  // connection when an acks=0 produce fails (KafkaApis.handleProduceRequest: "the server will close socket
  // server so that the producer client will know that some error has happened and will refresh its
  // metadata"); without it a producer that lost its leader keeps sending into the void until its metadata
  // expires. The handler closes a connection by throwing.
  it('with acks=0, closes the connection when a partition fails, so that the producer refreshes its metadata', async () => {
    backend.fail('produce', 'orders', 0, new NotLeaderError('led by node 2', { table: 'orders', bucket: 0, node: '2', to: 'node-2', leaderEpoch: 4 }));
    const { frame } = await kafkajsFrame('produce', 7, produceArgs({ acks: 0 }));

    await expect(handle(frame, CONNECTION)).rejects.toThrow();
  });
});

describe('Fetch', () => {
  const FETCH_VERSIONS_OF_KAFKAJS = [4, 5, 6, 7, 8, 9, 10, 11];
  const FIRST = batchOf([
    { key: 'k0', value: 'v0', timestamp: 1_000 },
    { key: 'k1', value: 'v1', timestamp: 1_001 },
  ]);
  const SECOND = batchOf([{ key: null, value: 'v2', timestamp: 1_002 }]);
  const AUDIT = batchOf([{ key: 'who', value: 'login', timestamp: 1_003 }]);

  function fetchArgs(partitions: Array<{ topic: string; partition: number; fetchOffset: number; maxBytes?: number }>, request: { maxWaitTime?: number; minBytes?: number; maxBytes?: number } = {}) {
    const topics = [...new Set(partitions.map((each) => each.topic))].map((topic) => ({
      topic,
      partitions: partitions
        .filter((each) => each.topic === topic)
        .map((each) => ({ partition: each.partition, fetchOffset: String(each.fetchOffset), maxBytes: each.maxBytes ?? 1_048_576 })),
    }));
    return { replicaId: -1, maxWaitTime: 0, minBytes: 1, maxBytes: 52_428_800, isolationLevel: 0, ...request, topics };
  }

  /** Each partition of a kafkajs fetch response as `topic/partition` → error, high watermark and records. */
  function partitionsOf(decoded: any): Record<string, { errorCode: number; highWatermark: string; records: ReturnType<typeof recordsOf> }> {
    const partitions: Record<string, { errorCode: number; highWatermark: string; records: ReturnType<typeof recordsOf> }> = {};
    for (const topic of decoded.responses) {
      for (const partition of topic.partitions) {
        partitions[`${topic.topicName}/${partition.partition}`] = { errorCode: partition.errorCode, highWatermark: partition.highWatermark, records: recordsOf(partition.messages) };
      }
    }
    return partitions;
  }

  beforeEach(() => {
    backend.append('orders', 0, FIRST);
    backend.append('orders', 0, SECOND);
    backend.append('audit', 0, AUDIT);
  });

  it.each(FETCH_VERSIONS_OF_KAFKAJS)('v%i: serves the stored batches as they are, which kafkajs reads record by record', async (version) => {
    const { frame, correlationId } = await kafkajsFrame('fetch', version, fetchArgs([{ topic: 'orders', partition: 0, fetchOffset: 1 }, { topic: 'audit', partition: 0, fetchOffset: 0 }]));
    const response = responseOf(await handle(frame, CONNECTION));
    const decoded = await kafkajsApi('fetch').response(version).decode(response.body);

    expect(response.correlationId).toBe(correlationId);
    // The batch holding fetch offset 1 is served whole, from offset 0: skipping the records before the fetch
    // offset is the consumer's job.
    expect(partitionsOf(decoded)).toEqual({
      'orders/0': {
        errorCode: 0,
        highWatermark: '3',
        records: [
          { offset: '0', key: 'k0', value: 'v0' },
          { offset: '1', key: 'k1', value: 'v1' },
          { offset: '2', key: null, value: 'v2' },
        ],
      },
      'audit/0': { errorCode: 0, highWatermark: '1', records: [{ offset: '0', key: 'who', value: 'login' }] },
    });
    // Verbatim: the stored bytes, base offsets included, appear in the response as they are.
    for (const stored of [...backend.state.get('orders')!.partitions[0]!.batches, ...backend.state.get('audit')!.partitions[0]!.batches]) {
      expect(response.body.includes(Buffer.from(stored.bytes))).toBe(true);
    }
    expect(backend.calls.waitForData).toEqual([]);
  });

  // Each row fetches below min_bytes with max_wait_ms: the handler waits for a commit to the partitions
  // fetched, until the deadline (max_wait_ms, capped), then reads again and answers what the commit added.
  it.each([
    { name: 'nothing past the fetch offset', fetchOffset: 1, minBytes: 1, maxWaitTime: 10_000, waitMs: 10_000, records: ['v-new'] },
    { name: 'less than min_bytes', fetchOffset: 0, minBytes: AUDIT.byteLength + 1, maxWaitTime: 10_000, waitMs: 10_000, records: ['login', 'v-new'] },
    { name: 'a max_wait_ms above the bound', fetchOffset: 1, minBytes: 1, maxWaitTime: 600_000, waitMs: LIMITS.kafkaFetchWaitMsMax, records: ['v-new'] },
  ])('waits on backend.waitForData with $name, then fetches again', async ({ fetchOffset, minBytes, maxWaitTime, waitMs, records }) => {
    const { frame } = await kafkajsFrame('fetch', 11, fetchArgs([{ topic: 'audit', partition: 0, fetchOffset }], { minBytes, maxWaitTime }));

    const before = Date.now();
    const answered = handle(frame, CONNECTION);
    await backend.waited(1);
    const after = Date.now();
    expect(backend.calls.waitForData).toEqual([{ partitions: [{ topic: 'audit', partition: 0 }], deadlineMs: expect.any(Number) }]);
    expect(backend.calls.waitForData[0]!.deadlineMs).toBeGreaterThanOrEqual(before + waitMs);
    expect(backend.calls.waitForData[0]!.deadlineMs).toBeLessThanOrEqual(after + waitMs);

    backend.append('audit', 0, batchOf([{ key: null, value: 'v-new', timestamp: 2_000 }]));
    const decoded = await kafkajsApi('fetch').response(11).decode(responseOf(await answered).body);

    expect(partitionsOf(decoded)['audit/0']!.records.map((record) => record.value)).toEqual(records);
    expect(backend.calls.fetch.map((call) => call.offset)).toEqual([fetchOffset, fetchOffset]);
  });

  it('answers what it has once max_wait_ms passes without a commit', async () => {
    const decoded = await exchange(handle, 'fetch', 11, fetchArgs([{ topic: 'audit', partition: 0, fetchOffset: 1 }], { minBytes: 1, maxWaitTime: 20 }));

    expect(partitionsOf(decoded)).toEqual({ 'audit/0': { errorCode: 0, highWatermark: '1', records: [] } });
    expect(backend.calls.waitForData.length).toBeGreaterThanOrEqual(1);
  });

  // Fails today: the loop compares against Math.max(1, min_bytes), so min_bytes 0 waits like 1. The protocol
  // says a fetch with min_bytes 0 is answered at once (Kafka: bytesReadable >= fetchMinBytes holds for 0).
  it('answers a fetch with min_bytes 0 at once, without waiting for data', async () => {
    const { frame } = await kafkajsFrame('fetch', 11, fetchArgs([{ topic: 'audit', partition: 0, fetchOffset: 1 }], { minBytes: 0, maxWaitTime: 10_000 }));

    const outcome = await Promise.race([handle(frame, CONNECTION).then(() => 'answered'), backend.waited(1).then(() => 'waited')]);

    expect(outcome).toBe('answered');
  });

  // Each row fails the orders partition one way: its error code, a high watermark of -1, no wait (a failed
  // partition ends the long poll), and audit in the same request still served.
  it.each([
    { name: 'an offset past the log end (KafkaError from the backend)', fetchOffset: 99, error: null, errorCode: ERROR_CODES.OFFSET_OUT_OF_RANGE },
    { name: 'NotLeaderError', fetchOffset: 0, error: new NotLeaderError('moved', { table: 'orders', bucket: 0, node: '2', to: 'node-2', leaderEpoch: 5 }), errorCode: ERROR_CODES.NOT_LEADER_OR_FOLLOWER },
    { name: 'UnavailableError', fetchOffset: 0, error: new UnavailableError('opening'), errorCode: ERROR_CODES.LEADER_NOT_AVAILABLE },
    { name: 'NotFoundError', fetchOffset: 0, error: new NotFoundError('no such bucket'), errorCode: ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION },
  ])('answers $name with its code and does not wait', async ({ fetchOffset, error, errorCode }) => {
    if (error) backend.fail('fetch', 'orders', 0, error);

    const decoded = await exchange(handle, 'fetch', 11, fetchArgs([{ topic: 'orders', partition: 0, fetchOffset }, { topic: 'audit', partition: 0, fetchOffset: 0 }], { minBytes: 1_000_000, maxWaitTime: 10_000 }));

    expect(partitionsOf(decoded)).toEqual({
      'orders/0': { errorCode, highWatermark: '-1', records: [] },
      'audit/0': { errorCode: 0, highWatermark: '1', records: [{ offset: '0', key: 'who', value: 'login' }] },
    });
    expect(backend.calls.waitForData).toEqual([]);
  });

  // Each row bounds the response with max_bytes: the first batch of the response is whole whatever its
  // size, later partitions get only the room left (a batch that does not fit is left out), and the backend
  // is asked for no more than that room.
  const ORDERS_BYTES = FIRST.byteLength + SECOND.byteLength;
  it.each([
    { name: 'max_bytes 1', ordersOffset: 0, maxBytes: 1, orders: ['0', '1'], audit: [], asked: [1, 0] },
    { name: 'room for the first batch only', ordersOffset: 0, maxBytes: FIRST.byteLength, orders: ['0', '1'], audit: [], asked: [FIRST.byteLength, 0] },
    { name: 'one byte short of the audit batch', ordersOffset: 0, maxBytes: ORDERS_BYTES + AUDIT.byteLength - 1, orders: ['0', '1', '2'], audit: [], asked: [ORDERS_BYTES + AUDIT.byteLength - 1, AUDIT.byteLength - 1] },
    { name: 'room for everything', ordersOffset: 0, maxBytes: ORDERS_BYTES + AUDIT.byteLength, orders: ['0', '1', '2'], audit: ['0'], asked: [ORDERS_BYTES + AUDIT.byteLength, AUDIT.byteLength] },
    { name: 'max_bytes 1 with the first partition at its end', ordersOffset: 3, maxBytes: 1, orders: [], audit: ['0'], asked: [1, 1] },
  ])('bounds the response by max_bytes: $name', async ({ ordersOffset, maxBytes, orders, audit, asked }) => {
    const decoded = await exchange(handle, 'fetch', 11, fetchArgs([{ topic: 'orders', partition: 0, fetchOffset: ordersOffset }, { topic: 'audit', partition: 0, fetchOffset: 0 }], { maxBytes }));

    const partitions = partitionsOf(decoded);
    expect({ orders: partitions['orders/0']!.records.map((record) => record.offset), audit: partitions['audit/0']!.records.map((record) => record.offset) }).toEqual({ orders, audit });
    // A partition left out for room still reports its high watermark.
    expect([partitions['orders/0']!.highWatermark, partitions['audit/0']!.highWatermark]).toEqual(['3', '1']);
    expect(backend.calls.fetch.map((call) => call.maxBytes)).toEqual(asked);
  });

  it('answers the error of a partition left out for room, so that its consumer finds the new leader', async () => {
    backend.fail('fetch', 'audit', 0, new NotLeaderError('moved', { table: 'audit', bucket: 0, node: '2', to: 'node-2', leaderEpoch: 5 }));

    const decoded = await exchange(handle, 'fetch', 11, fetchArgs([{ topic: 'orders', partition: 0, fetchOffset: 0 }, { topic: 'audit', partition: 0, fetchOffset: 0 }], { maxBytes: 1 }));

    expect(partitionsOf(decoded)['audit/0']).toEqual({ errorCode: ERROR_CODES.NOT_LEADER_OR_FOLLOWER, highWatermark: '-1', records: [] });
  });

  it('asks the backend for no more than the partition max_bytes', async () => {
    await exchange(handle, 'fetch', 11, fetchArgs([{ topic: 'orders', partition: 0, fetchOffset: 0, maxBytes: 100 }, { topic: 'audit', partition: 0, fetchOffset: 0, maxBytes: 50 }]));

    expect(backend.calls.fetch.map((call) => call.maxBytes)).toEqual([100, 50]);
  });
});

describe('ListOffsets', () => {
  const LIST_OFFSETS_VERSIONS_OF_KAFKAJS = [0, 1, 2, 3];

  beforeEach(() => {
    // orders/0 holds offsets 0-2: timestamps 1000 and 2000 in one batch, 3000 in the next.
    backend.append('orders', 0, batchOf([{ key: null, value: 'a', timestamp: 1_000 }, { key: null, value: 'b', timestamp: 2_000 }]));
    backend.append('orders', 0, batchOf([{ key: null, value: 'c', timestamp: 3_000 }]));
    backend.state.get('orders')!.partitions[0]!.logStartOffset = 1;
  });

  const ROWS = [
    { name: 'earliest (-2)', timestamp: -2, offset: 1, foundTimestamp: -1 },
    { name: 'latest (-1)', timestamp: -1, offset: 3, foundTimestamp: -1 },
    { name: 'a timestamp between two records', timestamp: 1_500, offset: 1, foundTimestamp: 2_000 },
    { name: 'a timestamp in the second batch', timestamp: 2_500, offset: 2, foundTimestamp: 3_000 },
    { name: 'a timestamp after every record', timestamp: 9_999, offset: -1, foundTimestamp: -1 },
  ];
  const cases = LIST_OFFSETS_VERSIONS_OF_KAFKAJS.flatMap((version) => ROWS.map((row) => ({ version, ...row })));

  // Each row passes a timestamp to the backend and its answer back to the client.
  it.each(cases)('v$version: $name', async ({ version, timestamp, offset, foundTimestamp }) => {
    const decoded = await exchange(handle, 'listOffsets', version, { replicaId: -1, isolationLevel: 0, topics: [{ topic: 'orders', partitions: [{ partition: 0, timestamp }] }] });

    const partition = decoded.responses[0].partitions[0];
    expect(backend.calls.listOffset).toEqual([{ topic: 'orders', partition: 0, timestamp }]);
    if (version === 0) {
      // v0 answers a list of offsets: the one found, or none.
      expect(partition).toEqual({ partition: 0, errorCode: 0, offsets: offset >= 0 ? [String(offset)] : [] });
    } else {
      expect(partition).toEqual({ partition: 0, errorCode: 0, offset: String(offset), timestamp: String(foundTimestamp) });
    }
  });

  it.each([
    { name: 'NotLeaderError', error: new NotLeaderError('moved', { table: 'orders', bucket: 1, node: '2', to: 'node-2', leaderEpoch: 1 }), errorCode: ERROR_CODES.NOT_LEADER_OR_FOLLOWER },
    { name: 'UnavailableError', error: new UnavailableError('opening'), errorCode: ERROR_CODES.LEADER_NOT_AVAILABLE },
    { name: 'NotFoundError', error: new NotFoundError('gone'), errorCode: ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION },
  ])('answers a backend $name with its code and offset -1', async ({ error, errorCode }) => {
    backend.fail('listOffset', 'orders', 1, error);

    const decoded = await exchange(handle, 'listOffsets', 1, { replicaId: -1, topics: [{ topic: 'orders', partitions: [{ partition: 1, timestamp: -1 }, { partition: 0, timestamp: -1 }] }] });

    expect(decoded.responses[0].partitions).toEqual([
      { partition: 1, errorCode, offset: '-1', timestamp: '-1' },
      { partition: 0, errorCode: 0, offset: '3', timestamp: '-1' },
    ]);
  });
});

describe('CreateTopics', () => {
  const CREATE_TOPICS_VERSIONS_OF_KAFKAJS = [0, 1, 2, 3];

  // One request, one topic per row of the expected answer: kafkajs sorts the answer by name.
  it.each(CREATE_TOPICS_VERSIONS_OF_KAFKAJS)('v%i: creates what it can and refuses the rest topic by topic', async (version) => {
    backend.fail('createTopic', 'busy', null, new UnavailableError('no coordinator'));

    const decoded = await exchange(handle, 'createTopics', version, {
      timeout: 5_000,
      topics: [
        { topic: 'default-partitions', numPartitions: -1, replicationFactor: -1 },
        { topic: 'three', numPartitions: 3, replicationFactor: 3, configEntries: [{ name: 'retention.ms', value: '60000' }] },
        { topic: 'twice', numPartitions: 1 },
        { topic: 'twice', numPartitions: 2 },
        { topic: 'assigned', replicaAssignment: [{ partition: 0, replicas: [1] }] },
        { topic: 'no-partitions', numPartitions: 0 },
        { topic: 'orders', numPartitions: 1 },
        { topic: 'busy', numPartitions: 1 },
        { topic: 'compacted', numPartitions: 1, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] },
      ],
    });

    expect(decoded.topicErrors.map(({ topic, errorCode }: { topic: string; errorCode: number }) => ({ topic, errorCode }))).toEqual([
      { topic: 'assigned', errorCode: ERROR_CODES.INVALID_REQUEST },
      { topic: 'busy', errorCode: ERROR_CODES.REQUEST_TIMED_OUT },
      { topic: 'compacted', errorCode: ERROR_CODES.INVALID_CONFIG },
      { topic: 'default-partitions', errorCode: ERROR_CODES.NONE },
      { topic: 'no-partitions', errorCode: ERROR_CODES.INVALID_PARTITIONS },
      { topic: 'orders', errorCode: ERROR_CODES.TOPIC_ALREADY_EXISTS },
      { topic: 'three', errorCode: ERROR_CODES.NONE },
      { topic: 'twice', errorCode: ERROR_CODES.INVALID_REQUEST },
      { topic: 'twice', errorCode: ERROR_CODES.INVALID_REQUEST },
    ]);
    expect(backend.calls.createTopic).toEqual([
      { name: 'default-partitions', partitions: backend.defaultPartitions, configs: {}, validateOnly: false },
      { name: 'three', partitions: 3, configs: { 'retention.ms': '60000' }, validateOnly: false },
      { name: 'orders', partitions: 1, configs: {}, validateOnly: false },
      { name: 'busy', partitions: 1, configs: {}, validateOnly: false },
      { name: 'compacted', partitions: 1, configs: { 'cleanup.policy': 'compact' }, validateOnly: false },
    ]);
    expect(backend.topic('three')?.partitions.map((partition) => partition.partition)).toEqual([0, 1, 2]);
    expect(backend.topic('three')?.configs['retention.ms']).toEqual({ value: '60000', isDefault: false });
    expect(backend.topic('compacted')).toBeNull();
  });

  it.each([1, 2, 3])('v%i: passes validateOnly to the backend, which creates nothing', async (version) => {
    const decoded = await exchange(handle, 'createTopics', version, { validateOnly: true, topics: [{ topic: 'dry-run', numPartitions: 2 }] });

    expect(decoded.topicErrors.map(({ topic, errorCode }: { topic: string; errorCode: number }) => ({ topic, errorCode }))).toEqual([{ topic: 'dry-run', errorCode: 0 }]);
    expect(backend.calls.createTopic).toEqual([{ name: 'dry-run', partitions: 2, configs: {}, validateOnly: true }]);
    expect(backend.topic('dry-run')).toBeNull();
  });
});

describe('DeleteTopics', () => {
  it.each([0, 1])('v%i: deletes a topic and maps the backend errors of the others', async (version) => {
    backend.fail('deleteTopic', 'busy', null, new UnavailableError('no coordinator'));
    backend.fail('deleteTopic', 'broken', null, new Error('bug'));

    const decoded = await exchange(handle, 'deleteTopics', version, { topics: ['orders', 'missing', 'busy', 'broken'], timeout: 5_000 });

    expect(decoded.topicErrors).toEqual([
      { topic: 'broken', errorCode: ERROR_CODES.UNKNOWN_SERVER_ERROR },
      { topic: 'busy', errorCode: ERROR_CODES.REQUEST_TIMED_OUT },
      { topic: 'missing', errorCode: ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION },
      { topic: 'orders', errorCode: ERROR_CODES.NONE },
    ]);
    expect(backend.topic('orders')).toBeNull();
    expect(backend.calls.deleteTopic).toEqual(['orders', 'missing', 'busy', 'broken']);
  });
});

describe('DescribeConfigs', () => {
  it.each([0, 1, 2])('v%i: a topic’s configs, all or the keys asked, and errors for what it does not describe', async (version) => {
    // v0 says whether a config is the default; v1+ names its source (5 default, 1 set on the topic).
    const [nonDefault, byDefault] = version === 0 ? [false, true] : [1, 5];
    const decoded = await exchange(handle, 'describeConfigs', version, {
      resources: [
        { type: KAFKAJS_CONFIG_RESOURCE_TYPES.TOPIC, name: 'orders', configNames: [] },
        { type: KAFKAJS_CONFIG_RESOURCE_TYPES.TOPIC, name: 'orders', configNames: ['retention.ms', 'cleanup.policy', 'not.a.property'] },
        { type: KAFKAJS_CONFIG_RESOURCE_TYPES.TOPIC, name: 'missing' },
        { type: KAFKAJS_CONFIG_RESOURCE_TYPES.BROKER, name: '1' },
        { type: KAFKAJS_CONFIG_RESOURCE_TYPES.BROKER_LOGGER, name: '1' },
      ],
    });

    expect(
      decoded.resources.map((resource: any) => ({
        type: resource.resourceType,
        name: resource.resourceName,
        errorCode: resource.errorCode,
        configs: resource.configEntries.map((entry: any) => [entry.configName, entry.configValue, entry.readOnly, entry.isSensitive, version === 0 ? entry.isDefault : entry.configSource]),
      })),
    ).toEqual([
      {
        type: 2,
        name: 'orders',
        errorCode: 0,
        configs: [
          ['retention.ms', '604800000', false, false, nonDefault],
          ['cleanup.policy', 'delete', false, false, byDefault],
          ['compression.type', 'producer', false, false, byDefault],
          ['message.timestamp.type', 'CreateTime', false, false, byDefault],
        ],
      },
      {
        type: 2,
        name: 'orders',
        errorCode: 0,
        configs: [
          ['retention.ms', '604800000', false, false, nonDefault],
          ['cleanup.policy', 'delete', false, false, byDefault],
        ],
      },
      { type: 2, name: 'missing', errorCode: ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION, configs: [] },
      { type: 4, name: '1', errorCode: 0, configs: [] },
      { type: 8, name: '1', errorCode: ERROR_CODES.INVALID_REQUEST, configs: [] },
    ]);
  });
});

describe('AlterConfigs', () => {
  it.each([0, 1])('v%i: replaces a topic’s configs (retention.ms not named returns to its default) and refuses what mink does not take', async (version) => {
    const TOPIC = KAFKAJS_CONFIG_RESOURCE_TYPES.TOPIC;
    const decoded = await exchange(handle, 'alterConfigs', version, {
      validateOnly: false,
      resources: [
        { type: TOPIC, name: 'orders', configEntries: [{ name: 'retention.ms', value: '3600000' }, { name: 'cleanup.policy', value: 'delete' }] },
        { type: TOPIC, name: 'audit', configEntries: [{ name: 'cleanup.policy', value: 'compact' }] },
        { type: TOPIC, name: 'missing', configEntries: [{ name: 'retention.ms', value: '1' }] },
        { type: KAFKAJS_CONFIG_RESOURCE_TYPES.BROKER, name: '1', configEntries: [{ name: 'num.partitions', value: '3' }] },
      ],
    });
    expect(decoded.resources.map((each: any) => [each.resourceName, each.errorCode])).toEqual([
      ['orders', ERROR_CODES.NONE],
      ['audit', ERROR_CODES.INVALID_CONFIG],
      ['missing', ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION],
      ['1', ERROR_CODES.INVALID_REQUEST],
    ]);
    expect(backend.topic('orders')!.configs['retention.ms']).toEqual({ value: '3600000', isDefault: false });
    expect(backend.topic('audit')!.configs['cleanup.policy']).toEqual({ value: 'delete', isDefault: true });

    // A second AlterConfigs that does not name retention.ms returns it to the default, as Kafka's replace does.
    await exchange(handle, 'alterConfigs', version, { validateOnly: false, resources: [{ type: TOPIC, name: 'orders', configEntries: [{ name: 'compression.type', value: 'producer' }] }] });
    expect(backend.topic('orders')!.configs['retention.ms']).toEqual({ value: '604800000', isDefault: true });
    expect(backend.calls.alterTopicConfigs.at(-1)).toEqual({ name: 'orders', changes: [{ name: 'compression.type', value: 'producer' }, { name: 'retention.ms', value: null }], validateOnly: false });
  });

  it('validateOnly checks and changes nothing', async () => {
    const decoded = await exchange(handle, 'alterConfigs', 1, { validateOnly: true, resources: [{ type: KAFKAJS_CONFIG_RESOURCE_TYPES.TOPIC, name: 'orders', configEntries: [{ name: 'retention.ms', value: '5' }] }] });
    expect(decoded.resources[0].errorCode).toBe(ERROR_CODES.NONE);
    expect(backend.topic('orders')!.configs['retention.ms']!.value).toBe('604800000');
  });
});

/** The body of an IncrementalAlterConfigs v0 request, field by field from IncrementalAlterConfigsRequest.json. */
function incrementalAlterConfigsFrame(resources: Array<{ type: number; name: string; configs: Array<[string, number, string | null]> }>, validateOnly: boolean): Uint8Array {
  const writer = handHeader(API_KEYS.IncrementalAlterConfigs, 0, 9, 1).int32(resources.length);
  for (const resource of resources) {
    writer.int8(resource.type).string(resource.name).int32(resource.configs.length);
    for (const [name, operation, value] of resource.configs) writer.string(name).int8(operation).nullableString(value);
  }
  return writer.boolean(validateOnly).toBytes();
}

describe('IncrementalAlterConfigs', () => {
  it('v0: sets and deletes configs one by one, leaving the others, and refuses list operations and malformed changes', async () => {
    const TOPIC = KAFKAJS_CONFIG_RESOURCE_TYPES.TOPIC;
    backend.addTopic('kept', [NODE_1], { 'table.log.ttl': '1000' });
    const frame = incrementalAlterConfigsFrame(
      [
        { type: TOPIC, name: 'orders', configs: [['retention.ms', 0, '60000']] },
        { type: TOPIC, name: 'kept', configs: [['cleanup.policy', 1, null]] },
        { type: TOPIC, name: 'audit', configs: [['cleanup.policy', 2, 'compact']] },
        { type: TOPIC, name: 'audit', configs: [['retention.ms', 9, '1']] },
      ],
      false,
    );
    const { correlationId, body } = responseOf(await handle(frame, CONNECTION));
    const reader = new KafkaReader(body);
    const throttleTimeMs = reader.int32();
    const results = reader.array((each) => ({ errorCode: each.int16(), errorMessage: each.nullableString(), type: each.int8(), name: each.string() }));
    expect({ correlationId, throttleTimeMs, remaining: reader.remaining }).toEqual({ correlationId: 9, throttleTimeMs: 0, remaining: 0 });
    expect(results.map((each) => [each.name, each.errorCode])).toEqual([
      ['orders', ERROR_CODES.NONE],
      ['kept', ERROR_CODES.NONE],
      ['audit', ERROR_CODES.INVALID_CONFIG],
      ['audit', ERROR_CODES.INVALID_REQUEST],
    ]);
    expect(results[2]!.errorMessage).toBe("config 'cleanup.policy' is not a list: APPEND does not apply to it");
    expect(backend.topic('orders')!.configs['retention.ms']).toEqual({ value: '60000', isDefault: false });
    // Deleting cleanup.policy does not touch retention.ms: incremental changes leave what they do not name.
    expect(backend.topic('kept')!.configs['retention.ms']).toEqual({ value: '1000', isDefault: false });
  });
});

describe('DeleteRecords', () => {
  /** kafkajs's DeleteRecords response decoder is built from the request's topics. */
  async function deleteRecordsExchange(version: number, topics: Array<{ topic: string; partitions: Array<{ partition: number; offset: string }> }>): Promise<any> {
    const { frame } = await kafkajsFrame('deleteRecords', version, { topics, timeout: 5_000 });
    const { body } = responseOf(await handle(frame, CONNECTION));
    return kafkajsModule(`protocol/requests/deleteRecords/v${version}/response`)({ topics }).decode(body);
  }

  beforeEach(() => {
    for (const value of ['a', 'b', 'c']) backend.append('orders', 0, batchOf([{ key: null, value, timestamp: 1_000 }]));
    backend.append('audit', 0, batchOf([{ key: null, value: 'x', timestamp: 1_000 }]));
  });

  it.each([0, 1])('v%i: moves each partition’s log start and answers it as the low watermark, with an error per partition it cannot', async (version) => {
    backend.fail('deleteRecords', 'orders', 1, new UnavailableError('no coordinator'));
    const decoded = await deleteRecordsExchange(version, [
      { topic: 'orders', partitions: [{ partition: 0, offset: '2' }, { partition: 1, offset: '0' }, { partition: 2, offset: '-7' }] },
      { topic: 'audit', partitions: [{ partition: 0, offset: '-1' }, { partition: 3, offset: '0' }] },
      { topic: 'beyond', partitions: [] },
    ]);
    const outcome = Object.fromEntries(decoded.topics.flatMap((topic: any) => topic.partitions.map((each: any) => [`${topic.topic}/${each.partition}`, [Number(each.lowWatermark), each.errorCode]])));
    expect(outcome).toEqual({
      'orders/0': [2, ERROR_CODES.NONE],
      'orders/1': [-1, ERROR_CODES.REQUEST_TIMED_OUT],
      'orders/2': [-1, ERROR_CODES.OFFSET_OUT_OF_RANGE],
      'audit/0': [1, ERROR_CODES.NONE],
      'audit/3': [-1, ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION],
    });
    // -7 is refused before the backend; the others reach it.
    expect(backend.calls.deleteRecords).toEqual([
      { topic: 'orders', partition: 0, offset: 2 },
      { topic: 'orders', partition: 1, offset: 0 },
      { topic: 'audit', partition: 0, offset: -1 },
      { topic: 'audit', partition: 3, offset: 0 },
    ]);
    // A fetch below the new start is out of range; ListOffsets earliest says where the log starts.
    expect((await backend.listOffset('orders', 0, -2)).offset).toBe(2);
  });

  it('refuses an offset beyond the high watermark with OFFSET_OUT_OF_RANGE', async () => {
    const decoded = await deleteRecordsExchange(1, [{ topic: 'orders', partitions: [{ partition: 0, offset: '4' }] }]);
    expect(decoded.topics[0].partitions[0].errorCode).toBe(ERROR_CODES.OFFSET_OUT_OF_RANGE);
  });
});

/** The body of an OffsetForLeaderEpoch request, field by field from OffsetForLeaderEpochRequest.json (v0-3). */
function offsetForLeaderEpochFrame(version: number, partitions: Array<{ topic: string; partition: number; currentLeaderEpoch: number; leaderEpoch: number }>): Uint8Array {
  const writer = handHeader(API_KEYS.OffsetForLeaderEpoch, version, 11, 1);
  if (version >= 3) writer.int32(-1);
  const topics = [...new Set(partitions.map((each) => each.topic))];
  writer.int32(topics.length);
  for (const topic of topics) {
    const mine = partitions.filter((each) => each.topic === topic);
    writer.string(topic).int32(mine.length);
    for (const each of mine) {
      writer.int32(each.partition);
      if (version >= 2) writer.int32(each.currentLeaderEpoch);
      writer.int32(each.leaderEpoch);
    }
  }
  return writer.toBytes();
}

describe('OffsetForLeaderEpoch', () => {
  it.each([2, 3])('v%i: the end of an epoch of a partition led here, and errors for the others', async (version) => {
    backend.append('orders', 0, batchOf([{ key: null, value: 'a', timestamp: 1_000 }, { key: null, value: 'b', timestamp: 1_000 }]));
    // Every partition of the in-memory backend is at leader epoch 4.
    const frame = offsetForLeaderEpochFrame(version, [
      { topic: 'orders', partition: 0, currentLeaderEpoch: 4, leaderEpoch: 3 },
      { topic: 'orders', partition: 1, currentLeaderEpoch: 4, leaderEpoch: 4 },
      { topic: 'orders', partition: 2, currentLeaderEpoch: 4, leaderEpoch: 4 },
      { topic: 'audit', partition: 0, currentLeaderEpoch: 3, leaderEpoch: 3 },
      { topic: 'missing', partition: 0, currentLeaderEpoch: -1, leaderEpoch: 1 },
    ]);
    const { body } = responseOf(await handle(frame, CONNECTION));
    const reader = new KafkaReader(body);
    expect(reader.int32()).toBe(0);
    const answers = reader.array((topic) => {
      const name = topic.string();
      return topic.array((each) => ({ name, errorCode: each.int16(), partition: each.int32(), leaderEpoch: each.int32(), endOffset: Number(each.int64()) }));
    }).flat();
    expect(reader.remaining).toBe(0);
    expect(answers).toEqual([
      { name: 'orders', errorCode: ERROR_CODES.NONE, partition: 0, leaderEpoch: 3, endOffset: 2 },
      { name: 'orders', errorCode: ERROR_CODES.NOT_LEADER_OR_FOLLOWER, partition: 1, leaderEpoch: -1, endOffset: -1 },
      { name: 'orders', errorCode: ERROR_CODES.LEADER_NOT_AVAILABLE, partition: 2, leaderEpoch: -1, endOffset: -1 },
      { name: 'audit', errorCode: ERROR_CODES.FENCED_LEADER_EPOCH, partition: 0, leaderEpoch: -1, endOffset: -1 },
      { name: 'missing', errorCode: ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION, partition: 0, leaderEpoch: -1, endOffset: -1 },
    ]);
  });
});

describe('requests that close the connection', () => {
  const bareRequest = (apiKey: number, apiVersion: number): Uint8Array => handHeader(apiKey, apiVersion, 5, 1).toBytes();

  // Each row is a frame mink cannot answer in its own format: the handler throws (the listener then closes
  // the connection) and the backend sees nothing.
  it.each([
    { name: 'an unknown API key (37, CreatePartitions)', frame: async () => bareRequest(37, 0), error: /API key 37 is not served/ },
    { name: 'an API key beyond every known one (32767)', frame: async () => bareRequest(32_767, 0), error: /API key 32767 is not served/ },
    { name: 'a negative API key', frame: async () => bareRequest(-1, 0), error: /API key -1 is not served/ },
    { name: 'Produce v2 (advertised, not served)', frame: async () => (await kafkajsFrame('produce', 2, { acks: -1, timeout: 1_000, topicData: [] })).frame, error: /API key 0 version 2 is not served/ },
    { name: 'Produce v0', frame: async () => (await kafkajsFrame('produce', 0, { acks: -1, timeout: 1_000, topicData: [] })).frame, error: /API key 0 version 0 is not served/ },
    { name: 'Fetch v3 (advertised, not served)', frame: async () => (await kafkajsFrame('fetch', 3, { replicaId: -1, maxWaitTime: 0, minBytes: 1, maxBytes: 1_000, topics: [] })).frame, error: /API key 1 version 3 is not served/ },
    { name: 'Metadata v9 (beyond the advertised range)', frame: async () => handHeader(API_KEYS.Metadata, 9, 5, 2).toBytes(), error: /API key 3 version 9 is not served/ },
    { name: 'an empty frame', frame: async () => new Uint8Array(0), error: KafkaDecodeError },
    { name: 'a header cut inside the API version', frame: async () => Uint8Array.of(0, 3, 0), error: KafkaDecodeError },
    { name: 'a client id longer than the frame', frame: async () => new KafkaWriter().int16(3).int16(1).int32(5).int16(40).raw(Buffer.from('short')).toBytes(), error: KafkaDecodeError },
    { name: 'a Metadata v1 body cut short', frame: async () => (await kafkajsFrame('metadata', 1, { topics: ['orders'] })).frame.subarray(0, -1), error: KafkaDecodeError },
    { name: 'a Produce v3 body cut inside the record set', frame: async () => (await kafkajsFrame('produce', 3, { acks: -1, timeout: 1_000, topicData: [{ topic: 'orders', partitions: [{ partition: 0, messages: [{ key: null, value: Buffer.from('x'), timestamp: 1 }] }] }] })).frame.subarray(0, -1), error: KafkaDecodeError },
    { name: 'a Fetch v11 body cut short', frame: async () => (await kafkajsFrame('fetch', 11, { replicaId: -1, maxWaitTime: 0, minBytes: 1, maxBytes: 1_000, topics: [{ topic: 'orders', partitions: [{ partition: 0, fetchOffset: '0', maxBytes: 1_000 }] }] })).frame.subarray(0, -3), error: KafkaDecodeError },
  ])('throws on $name', async ({ frame, error }) => {
    await expect(handle(await frame(), CONNECTION)).rejects.toThrow(error);
    expect(backend.calls).toEqual({ createTopic: [], deleteTopic: [], alterTopicConfigs: [], deleteRecords: [], produce: [], fetch: [], waitForData: [], listOffset: [], initProducerId: 0 });
  });
});

describe('InitProducerId', () => {
  it.each([0, 1])('v%i: hands an idempotent producer a new producer id at epoch 0 each time', async (version) => {
    const first = await exchange(handle, 'initProducerId', version, { transactionTimeout: 30_000 });
    const second = await exchange(handle, 'initProducerId', version, { transactionTimeout: 30_000 });

    expect([first, second].map(({ errorCode, producerId, producerEpoch }) => ({ errorCode, producerId, producerEpoch }))).toEqual([
      { errorCode: 0, producerId: '100', producerEpoch: 0 },
      { errorCode: 0, producerId: '101', producerEpoch: 0 },
    ]);
  });

  it.each<[string, ReturnType<KafkaBackend['transactionCoordinator']>, { errorCode: number; producerId: number; epoch: number }, number]>([
    ['here: the coordinator\'s producer id and epoch', { kind: 'here' }, { errorCode: 0, producerId: 55, epoch: 3 }, 1],
    ['elsewhere: NOT_COORDINATOR', { kind: 'elsewhere', broker: NODE_2 }, { errorCode: ERROR_CODES.NOT_COORDINATOR, producerId: -1, epoch: -1 }, 0],
    ['nowhere yet: COORDINATOR_NOT_AVAILABLE', { kind: 'unavailable', reason: 'creating' }, { errorCode: ERROR_CODES.COORDINATOR_NOT_AVAILABLE, producerId: -1, epoch: -1 }, 0],
  ])('a transactional id goes to its coordinator; %s', async (_case, place, expected, calls) => {
    // kafkajs's decoder throws on an error code; the raw response shows it.
    backend.transactionPlace = place;
    const { frame } = await kafkajsFrame('initProducerId', 1, { transactionalId: 'tx-1', transactionTimeout: 30_000 });
    const reader = new KafkaReader(responseOf(await handle(frame, CONNECTION)).body);
    expect({ throttle: reader.int32('throttle'), errorCode: reader.int16('error'), producerId: reader.int64Number('id'), epoch: reader.int16('epoch') }).toEqual({ throttle: 0, ...expected });
    expect(backend.initTransactionsCalls).toEqual(calls === 0 ? [] : [{ transactionalId: 'tx-1', timeoutMs: 30_000 }]);
    expect(backend.calls.initProducerId).toBe(0);
  });

  it('answers COORDINATOR_NOT_AVAILABLE, which producers retry, when no id can be allocated', async () => {
    backend.fail('initProducerId', '*', null, new UnavailableError('the metadata log is unreachable'));
    const { frame } = await kafkajsFrame('initProducerId', 0, { transactionTimeout: 30_000 });
    const reader = new KafkaReader(responseOf(await handle(frame, CONNECTION)).body);
    expect({ throttle: reader.int32('throttle'), errorCode: reader.int16('error'), producerId: reader.int64Number('id') }).toEqual({ throttle: 0, errorCode: ERROR_CODES.COORDINATOR_NOT_AVAILABLE, producerId: -1 });
  });
});

describe('fuzzed frames', () => {
  // Proves no frame can take a node down: whatever the bytes, the handler neither throws synchronously nor
  // rejects with anything but an Error (which closes that connection), for headers of every advertised
  // API and version followed by random bodies, and for frames of random bytes.
  const advertised = advertisedApis();
  const servedHeader = fc
    .constantFrom(...advertised)
    .chain((api) => fc.record({ apiKey: fc.constant(api.apiKey), apiVersion: fc.integer({ min: api.minVersion, max: api.maxVersion }), correlationId: fc.integer(), clientId: fc.option(fc.string({ maxLength: 20 }), { nil: null }) }));
  const frameOfHeader = fc.tuple(servedHeader, fc.uint8Array({ maxLength: 300 })).map(([header, body]) => {
    const writer = new KafkaWriter();
    writer.int16(header.apiKey).int16(header.apiVersion).int32(header.correlationId).nullableString(header.clientId);
    // Tagged fields of a flexible header are left to the random body.
    writer.raw(body);
    return writer.toBytes();
  });

  async function settleOrPend(frame: Uint8Array): Promise<void> {
    let outcome: Promise<unknown>;
    try {
      outcome = handle(frame, CONNECTION);
    } catch (error) {
      throw new Error(`the handler threw synchronously: ${String(error)}`);
    }
    // A long poll may legitimately stay pending; anything that settles must be a response or an Error.
    const settled = await Promise.race([
      outcome.then(
        (parts) => ({ kind: 'resolved', parts }),
        (error: unknown) => ({ kind: 'rejected', error }),
      ),
      new Promise<{ kind: 'pending' }>((resolve) => setTimeout(() => resolve({ kind: 'pending' }), 20)),
    ]);
    if (settled.kind === 'rejected') expect((settled as { error: unknown }).error).toBeInstanceOf(Error);
    if (settled.kind === 'resolved') {
      const parts = (settled as { parts: Uint8Array[] | null }).parts;
      if (parts !== null) for (const part of parts) expect(part).toBeInstanceOf(Uint8Array);
    }
  }

  it('headers of every served API with random bodies', async () => {
    await fc.assert(fc.asyncProperty(frameOfHeader, settleOrPend), { numRuns: 400 });
  });

  it('random bytes', async () => {
    await fc.assert(fc.asyncProperty(fc.uint8Array({ maxLength: 200 }), settleOrPend), { numRuns: 400 });
  });
});

// ---------------------------------------------------------------------------------------------------------

describe('SASL and token scopes', () => {
  const policy = parseAccessPolicy(
    JSON.stringify({
      tokens: [
        { name: 'ops', token: 'ops-secret-0123456789', scopes: ['admin'] },
        { name: 'reader', token: 'reader-secret-0123456789', scopes: ['read'] },
        { name: 'audit-writer', token: 'audit-secret-0123456789', scopes: ['write'], tables: ['audit'] },
      ],
    }),
    'tokens.json',
  );
  let secured: KafkaFrameHandler;
  let connection: { peer: string; session: KafkaSession };
  beforeEach(() => {
    secured = kafkaBroker(backend, undefined, { policy, mechanisms: ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'], keys: new ScramKeyStore() });
    connection = { peer: '127.0.0.1:50001', session: newKafkaSession() };
  });

  /** SaslHandshake v1 then one SaslAuthenticate v1 with PLAIN; the SaslAuthenticate answer as kafkajs decodes it. */
  async function plain(user: string, password: string): Promise<{ errorCode: number; errorMessage: string | null }> {
    const handshake = await exchange(secured, 'saslHandshake', 1, { mechanism: 'PLAIN' }, connection);
    expect(handshake).toMatchObject({ errorCode: ERROR_CODES.NONE, enabledMechanisms: ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'] });
    const frame = handHeader(API_KEYS.SaslAuthenticate, 1, 9, 1).bytes(Buffer.from(`\u0000${user}\u0000${password}`)).toBytes();
    const { body } = responseOf(await secured(frame, connection));
    return kafkajsApi('saslAuthenticate').response(1).decode(body);
  }

  it('answers ApiVersions before authentication and advertises SaslHandshake v0-1 (v1 served) and SaslAuthenticate v0-2', async () => {
    const decoded = await exchange(secured, 'apiVersions', 2, {}, connection);
    expect(decoded.apiVersions).toEqual(expect.arrayContaining([{ apiKey: API_KEYS.SaslHandshake, minVersion: 0, maxVersion: 1 }, { apiKey: API_KEYS.SaslAuthenticate, minVersion: 0, maxVersion: 2 }]));
  });

  it('closes (throws on) any other request before authentication', async () => {
    await expect(exchange(secured, 'metadata', 4, { topics: ['orders'] }, connection)).rejects.toThrow(/before SASL authentication/);
  });

  it('refuses a mechanism it does not enable, naming those it does', async () => {
    expect(await exchange(secured, 'saslHandshake', 1, { mechanism: 'GSSAPI' }, connection)).toMatchObject({ errorCode: ERROR_CODES.UNSUPPORTED_SASL_MECHANISM });
  });

  it('answers SASL_AUTHENTICATION_FAILED for a wrong secret, and the connection stays unauthenticated', async () => {
    expect(await plain('reader', 'reader-secret-0123456780')).toMatchObject({ errorCode: ERROR_CODES.SASL_AUTHENTICATION_FAILED, errorMessage: 'Authentication failed: invalid credentials' });
    await expect(exchange(secured, 'metadata', 4, { topics: ['orders'] }, connection)).rejects.toThrow(/before SASL authentication \(it failed\)/);
  });

  const produceToAudit = { acks: -1, timeout: 1000, topicData: [{ topic: 'audit', partitions: [{ partition: 0, messages: [{ key: 'k', value: 'v', timestamp: 1 }] }] }] };
  const fetchAudit = { replicaId: -1, maxWaitTime: 0, minBytes: 0, maxBytes: 1 << 20, isolationLevel: 0, topics: [{ topic: 'audit', partitions: [{ partition: 0, fetchOffset: '0', maxBytes: 1 << 20 }] }] };

  it('a read token reads but may not produce or create: TOPIC_AUTHORIZATION_FAILED, and nothing reaches the backend', async () => {
    expect(await plain('reader', 'reader-secret-0123456789')).toMatchObject({ errorCode: ERROR_CODES.NONE });
    const produced = await exchange(secured, 'produce', 3, produceToAudit, connection);
    expect(produced.topics[0].partitions[0].errorCode).toBe(ERROR_CODES.TOPIC_AUTHORIZATION_FAILED);
    expect(backend.calls.produce).toEqual([]);
    const fetched = await exchange(secured, 'fetch', 4, fetchAudit, connection);
    expect(fetched.responses[0].partitions[0].errorCode).toBe(ERROR_CODES.NONE);
    const created = await exchange(secured, 'createTopics', 0, { topics: [{ topic: 'new-topic', numPartitions: 1, replicationFactor: 1 }], timeout: 1000 }, connection);
    expect(created.topicErrors).toEqual([{ topic: 'new-topic', errorCode: ERROR_CODES.TOPIC_AUTHORIZATION_FAILED }]);
    expect(backend.calls.createTopic).toEqual([]);
    const producerId = await exchange(secured, 'initProducerId', 0, { transactionalId: null, transactionTimeout: 1000 }, connection);
    expect(producerId.errorCode).toBe(ERROR_CODES.CLUSTER_AUTHORIZATION_FAILED);
  });

  it('a token limited to one table sees and writes that topic only, and may not read it without the read scope', async () => {
    expect(await plain('audit-writer', 'audit-secret-0123456789')).toMatchObject({ errorCode: ERROR_CODES.NONE });
    const listed = await exchange(secured, 'metadata', 4, { topics: [], allowAutoTopicCreation: false }, connection);
    expect(listed.topicMetadata.map((topic: any) => topic.topic)).toEqual(['audit']);
    const named = await exchange(secured, 'metadata', 4, { topics: ['orders'], allowAutoTopicCreation: true }, connection);
    expect(named.topicMetadata.map((topic: any) => [topic.topic, topic.topicErrorCode])).toEqual([['orders', ERROR_CODES.TOPIC_AUTHORIZATION_FAILED]]);
    const produced = await exchange(secured, 'produce', 3, produceToAudit, connection);
    expect(produced.topics[0].partitions[0].errorCode).toBe(ERROR_CODES.NONE);
    expect(backend.calls.produce.map((call) => call.topic)).toEqual(['audit']);
    const fetched = await exchange(secured, 'fetch', 4, fetchAudit, connection);
    expect(fetched.responses[0].partitions[0].errorCode).toBe(ERROR_CODES.TOPIC_AUTHORIZATION_FAILED);
    expect(backend.calls.fetch).toEqual([]);
  });
});
