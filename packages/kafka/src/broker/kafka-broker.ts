import { LIMITS } from '@mink/config';
import { API_VERSIONS_VERSIONS, apiVersionsResponseVersion, decodeApiVersionsRequest, encodeApiVersionsResponse, unsupportedApiVersionsResponse, type ApiVersionRange } from '../messages/api-versions';
import { CREATE_TOPICS_VERSIONS, decodeCreateTopicsRequest, encodeCreateTopicsResponse, type CreatableTopicResult } from '../messages/create-topics';
import { DELETE_TOPICS_VERSIONS, decodeDeleteTopicsRequest, encodeDeleteTopicsResponse } from '../messages/delete-topics';
import { CONFIG_RESOURCE_TYPES, CONFIG_SOURCES, DESCRIBE_CONFIGS_VERSIONS, decodeDescribeConfigsRequest, encodeDescribeConfigsResponse, type DescribeConfigsResult } from '../messages/describe-configs';
import { INIT_PRODUCER_ID_VERSIONS, decodeInitProducerIdRequest, encodeInitProducerIdResponse } from '../messages/init-producer-id';
import { FETCH_ADVERTISED_MIN, FETCH_VERSIONS, ISOLATION_LEVELS, decodeFetchRequest, encodeFetchResponse, type FetchPartitionResponse, type FetchRequest } from '../messages/fetch';
import { decodeRequestHeader, encodeResponseHeader, responseHeaderVersion, type RequestHeader } from '../messages/header';
import { LIST_OFFSETS_VERSIONS, decodeListOffsetsRequest, encodeListOffsetsResponse, type ListOffsetsPartitionResponse } from '../messages/list-offsets';
import { METADATA_VERSIONS, decodeMetadataRequest, encodeMetadataResponse, type MetadataTopic } from '../messages/metadata';
import { PRODUCE_ADVERTISED_MIN, PRODUCE_VERSIONS, decodeProduceRequest, encodeProduceResponse, type ProducePartitionResponse } from '../messages/produce';
import { InvalidRecordBatchError, splitRecordBatches } from '../messages/record-batch';
import { API_KEYS, ERROR_CODES } from '../wire/codes';
import { KafkaReader } from '../wire/reader';
import { KafkaWriter } from '../wire/writer';
import type { KafkaConnectionInfo, KafkaFrameHandler } from '../server/kafka-listener';
import { KafkaError, type KafkaBackend, type KafkaTopicInfo } from './backend';
import { kafkaErrorCodeOf } from './error-mapping';
import { GroupCoordinator } from '../groups/group-coordinator';
import { groupApis } from './group-handlers';
import { transactionApis, transactionCoordinationErrorOf } from './transaction-handlers';
import { topicAdminApis } from './topic-admin-handlers';
import { BEFORE_AUTHENTICATION, saslApis, type KafkaAuthentication, type KafkaSession } from './sasl-handlers';
import { kafkaAllows, type KafkaAccessOperation, type KafkaResource } from '../auth/kafka-access';

/** What a request's handler works with besides its body: the backend, the group coordinator, who asks. */
export interface BrokerContext {
  backend: KafkaBackend;
  groups: GroupCoordinator;
  clientId: string;
  clientHost: string;
  /** `host:port` of the peer. */
  peer: string;
  /** The listener's SASL settings; null when it asks for no credentials. */
  authentication: KafkaAuthentication | null;
  /** The connection's SASL state. */
  session: KafkaSession;
  /** Whether the connection may do `operation` on `resource` (always, without authentication). */
  allows(operation: KafkaAccessOperation, resource: KafkaResource): boolean;
}

/** A request's body after its header, the version it was sent at, and the writer its response body goes to. */
export type ApiHandler = (context: BrokerContext, reader: KafkaReader, version: number, writer: KafkaWriter) => Promise<'respond' | 'silent'>;

export interface ServedApi {
  /** Advertised in ApiVersions (librdkafka's feature checks want ranges from 0 for Produce and Fetch). */
  advertised: { min: number; max: number };
  /** Actually served; a request at an advertised but unserved version closes the connection, as brokers do. */
  served: { min: number; max: number };
  handle: ApiHandler;
}

const SERVED: ReadonlyMap<number, ServedApi> = new Map<number, ServedApi>([
  [API_KEYS.Metadata, { advertised: METADATA_VERSIONS, served: METADATA_VERSIONS, handle: metadata }],
  [API_KEYS.Produce, { advertised: { min: PRODUCE_ADVERTISED_MIN, max: PRODUCE_VERSIONS.max }, served: PRODUCE_VERSIONS, handle: produce }],
  [API_KEYS.Fetch, { advertised: { min: FETCH_ADVERTISED_MIN, max: FETCH_VERSIONS.max }, served: FETCH_VERSIONS, handle: fetch }],
  [API_KEYS.ListOffsets, { advertised: LIST_OFFSETS_VERSIONS, served: LIST_OFFSETS_VERSIONS, handle: listOffsets }],
  [API_KEYS.CreateTopics, { advertised: CREATE_TOPICS_VERSIONS, served: CREATE_TOPICS_VERSIONS, handle: createTopics }],
  [API_KEYS.DeleteTopics, { advertised: DELETE_TOPICS_VERSIONS, served: DELETE_TOPICS_VERSIONS, handle: deleteTopics }],
  [API_KEYS.DescribeConfigs, { advertised: DESCRIBE_CONFIGS_VERSIONS, served: DESCRIBE_CONFIGS_VERSIONS, handle: describeConfigs }],
  [API_KEYS.InitProducerId, { advertised: INIT_PRODUCER_ID_VERSIONS, served: INIT_PRODUCER_ID_VERSIONS, handle: initProducerId }],
  ...groupApis(),
  ...transactionApis(),
  ...topicAdminApis(),
  ...saslApis(),
]);

/** The version ranges ApiVersions advertises: every served API, and ApiVersions itself. */
export function advertisedApis(): ApiVersionRange[] {
  const ranges: ApiVersionRange[] = [{ apiKey: API_KEYS.ApiVersions, minVersion: API_VERSIONS_VERSIONS.min, maxVersion: API_VERSIONS_VERSIONS.max }];
  for (const [apiKey, api] of SERVED) ranges.push({ apiKey, minVersion: api.advertised.min, maxVersion: api.advertised.max });
  return ranges.sort((a, b) => a.apiKey - b.apiKey);
}

/**
 * The Kafka broker of a data node: decodes each frame's header, answers the request through `backend`,
 * and returns the response (header and body). A malformed frame, an API mink does not serve or a version
 * outside its range throws, which closes the connection (KafkaListener); expected failures of a topic or
 * partition are answered with their Kafka error codes.
 */
export function kafkaBroker(backend: KafkaBackend, groups: GroupCoordinator = new GroupCoordinator(), authentication: KafkaAuthentication | null = null): KafkaFrameHandler {
  return async (frame: Uint8Array, connection: KafkaConnectionInfo): Promise<Uint8Array[] | null> => {
    const reader = new KafkaReader(frame);
    const header = decodeRequestHeader(reader);
    const session = connection.session;
    const allows = (operation: KafkaAccessOperation, resource: KafkaResource): boolean => authentication === null || (session.token !== null && kafkaAllows(session.token, operation, resource));
    const context: BrokerContext = { backend, groups, clientId: header.clientId ?? '', clientHost: connection.peer.replace(/:\d+$/, ''), peer: connection.peer, authentication, session, allows };
    const writer = new KafkaWriter();
    if (header.apiKey === API_KEYS.ApiVersions) {
      apiVersions(header, reader, writer);
      return writer.finish();
    }
    // With SASL on, a connection that has not authenticated gets nothing else: the request closes it, as Kafka does.
    if (authentication !== null && session.token === null && !BEFORE_AUTHENTICATION.has(header.apiKey)) {
      throw new Error(`API key ${header.apiKey} before SASL authentication${session.failed ? ' (it failed)' : ''}`);
    }
    const api = SERVED.get(header.apiKey);
    if (!api) throw new Error(`API key ${header.apiKey} is not served`);
    if (header.apiVersion < api.served.min || header.apiVersion > api.served.max) {
      throw new Error(`API key ${header.apiKey} version ${header.apiVersion} is not served (versions ${api.served.min}–${api.served.max} are)`);
    }
    encodeResponseHeader(writer, header.correlationId, responseHeaderVersion(header.apiKey, header.apiVersion));
    const outcome = await api.handle(context, reader, header.apiVersion, writer);
    return outcome === 'respond' ? writer.finish() : null;
  };
}

/**
 * ApiVersions, with KIP-511's rule for versions the broker does not know: a v0 response carrying
 * UNSUPPORTED_VERSION and the broker's own range, so the client retries at a version both know.
 */
function apiVersions(header: RequestHeader, reader: KafkaReader, writer: KafkaWriter): void {
  const version = apiVersionsResponseVersion(header.apiVersion);
  encodeResponseHeader(writer, header.correlationId, responseHeaderVersion(API_KEYS.ApiVersions, version));
  if (version !== header.apiVersion) {
    encodeApiVersionsResponse(writer, version, unsupportedApiVersionsResponse());
    return;
  }
  decodeApiVersionsRequest(reader, version);
  encodeApiVersionsResponse(writer, version, { errorCode: ERROR_CODES.NONE, apiKeys: advertisedApis(), throttleTimeMs: 0 });
}

async function metadata({ backend, allows }: BrokerContext, reader: KafkaReader, version: number, writer: KafkaWriter): Promise<'respond'> {
  const request = decodeMetadataRequest(reader, version);
  // Every topic lists those the connection may see; a topic named that it may not is refused by name, and only
  // a token that may create it (admin) creates a missing one.
  const topics: MetadataTopic[] =
    request.topics === null
      ? backend.topics().filter((topic) => allows('describe', { topic: topic.name })).map(metadataTopicOf)
      : await Promise.all(
          request.topics.map((name) =>
            allows('describe', { topic: name })
              ? metadataTopicNamed(backend, name, request.allowAutoTopicCreation && allows('admin', { topic: name }))
              : { errorCode: ERROR_CODES.TOPIC_AUTHORIZATION_FAILED, name, isInternal: false, partitions: [] },
          ),
        );
  encodeMetadataResponse(writer, version, {
    throttleTimeMs: 0,
    brokers: backend.brokers().map((broker) => ({ nodeId: broker.nodeId, host: broker.host, port: broker.port, rack: null })),
    clusterId: backend.clusterId,
    controllerId: backend.controllerId(),
    topics,
  });
  return 'respond';
}

/**
 * A topic a Metadata request names: as it is, or, when it does not exist and the request allows it, created
 * (Kafka's auto-creation); the answer waits `kafkaAutoCreateWaitMs` at most for the create, and says
 * LEADER_NOT_AVAILABLE (the client asks again) until the topic exists.
 */
async function metadataTopicNamed(backend: KafkaBackend, name: string, allowAutoCreation: boolean): Promise<MetadataTopic> {
  const found = backend.topic(name);
  if (found) return metadataTopicOf(found);
  const missing = (errorCode: number): MetadataTopic => ({ errorCode, name, isInternal: false, partitions: [] });
  if (!allowAutoCreation) return missing(ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION);
  let created: boolean | 'pending';
  try {
    created = await withinTimeout(backend.autoCreateTopic(name), LIMITS.kafkaAutoCreateWaitMs, `topic '${name}' is being created`).catch((error: unknown) => {
      if (error instanceof KafkaError && error.code === ERROR_CODES.REQUEST_TIMED_OUT) return 'pending' as const;
      throw error;
    });
  } catch (error) {
    return missing(kafkaErrorCodeOf(error, 'createTopics') === ERROR_CODES.INVALID_TOPIC_EXCEPTION ? ERROR_CODES.INVALID_TOPIC_EXCEPTION : ERROR_CODES.LEADER_NOT_AVAILABLE);
  }
  if (created === false) return missing(ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION);
  const topic = backend.topic(name);
  return topic ? metadataTopicOf(topic) : missing(ERROR_CODES.LEADER_NOT_AVAILABLE);
}

/** A topic in a Metadata response: each partition's leader (its only replica, S3 holds the data), or LEADER_NOT_AVAILABLE. */
export function metadataTopicOf(topic: KafkaTopicInfo): MetadataTopic {
  return {
    errorCode: ERROR_CODES.NONE,
    name: topic.name,
    isInternal: topic.internal === true,
    partitions: topic.partitions.map((partition) => {
      const leaderId = partition.leader?.nodeId ?? -1;
      const replicas = leaderId >= 0 ? [leaderId] : [];
      return {
        errorCode: partition.leader ? ERROR_CODES.NONE : ERROR_CODES.LEADER_NOT_AVAILABLE,
        partitionIndex: partition.partition,
        leaderId,
        // -1, so clients skip epoch validation (KIP-320). OffsetForLeaderEpoch is served for those that ask
        // anyway; reporting the epochs waits for a tested client that validates (librdkafka 2.1+, Java).
        leaderEpoch: -1,
        replicaNodes: replicas,
        isrNodes: replicas,
        offlineReplicas: [],
      };
    }),
  };
}

async function produce({ backend, allows }: BrokerContext, reader: KafkaReader, version: number, writer: KafkaWriter): Promise<'respond' | 'silent'> {
  const request = decodeProduceRequest(reader, version);
  const transactionalIdRefused = request.transactionalId !== null && !allows('write', { transactionalId: request.transactionalId });
  const answer = async (topic: string, partition: number, records: Uint8Array | null): Promise<ProducePartitionResponse> => {
    const failed = (errorCode: number, message: string): ProducePartitionResponse => ({ index: partition, errorCode, baseOffset: -1, logAppendTimeMs: -1, logStartOffset: -1, errorMessage: message });
    if (transactionalIdRefused) return failed(ERROR_CODES.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, `this connection may not write as transactional id '${request.transactionalId}'`);
    if (!allows('write', { topic })) return failed(ERROR_CODES.TOPIC_AUTHORIZATION_FAILED, `this connection may not write to topic '${topic}'`);
    if (request.acks !== 0 && request.acks !== 1 && request.acks !== -1) return failed(ERROR_CODES.INVALID_REQUIRED_ACKS, `acks must be 0, 1 or -1, got ${request.acks}`);
    let batches;
    try {
      batches = splitRecordBatches(records ?? new Uint8Array(0));
    } catch (error) {
      if (error instanceof InvalidRecordBatchError) return failed(error.code, error.message);
      throw error;
    }
    // Kafka's rule since Produce v3: exactly one batch per partition.
    if (batches.length !== 1) return failed(ERROR_CODES.INVALID_RECORD, `a produce carries exactly one record batch per partition, got ${batches.length}`);
    const batch = batches[0]!;
    if (!backend.topic(topic)) {
      // A produce to a topic nobody created creates it when auto-creation is on (the issue asks for Metadata and
      // Produce alike); the client retries on UNKNOWN_TOPIC_OR_PARTITION meanwhile.
      if (allows('admin', { topic })) backend.autoCreateTopic(topic).catch(() => undefined);
      return failed(ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION, `topic '${topic}' does not exist`);
    }
    // Markers are the transaction coordinator's to write; a transactional batch comes with its transactional id (as Kafka checks).
    if (batch.control) return failed(ERROR_CODES.INVALID_RECORD, 'a produce carries no control batches: transaction markers are written by the transaction coordinator');
    if (batch.transactional !== (request.transactionalId !== null)) {
      return failed(ERROR_CODES.INVALID_REQUEST, batch.transactional ? 'a transactional batch needs the transactional id of its producer in the request' : 'a produce with a transactional id carries transactional batches');
    }
    const idempotent = batch.producerId >= 0;
    if ((idempotent || batch.transactional) && (batch.producerId < 0 || batch.producerEpoch < 0 || batch.baseSequence < 0)) {
      return failed(ERROR_CODES.INVALID_RECORD, `a batch of producer ${batch.producerId} needs a producer epoch and a base sequence, got ${batch.producerEpoch} and ${batch.baseSequence}`);
    }
    const producer = idempotent ? { producerId: batch.producerId, producerEpoch: batch.producerEpoch, baseSequence: batch.baseSequence, transactional: batch.transactional } : undefined;
    try {
      const storing = backend.produce(topic, partition, [{ bytes: batch.bytes, offsetCount: batch.lastOffsetDelta + 1, ...(producer ? { producer } : {}) }]);
      const stored = await withinTimeout(storing, request.timeoutMs, `the batch for ${topic}-${partition} was not committed within timeout_ms ${request.timeoutMs}; it may still be`);
      return { index: partition, errorCode: ERROR_CODES.NONE, baseOffset: stored.baseOffset, logAppendTimeMs: -1, logStartOffset: stored.logStartOffset, errorMessage: null };
    } catch (error) {
      return failed(kafkaErrorCodeOf(error, 'produce'), error instanceof Error ? error.message : String(error));
    }
  };
  const responses = await Promise.all(
    request.topicData.map(async (topic) => ({
      name: topic.name,
      partitionResponses: await Promise.all(topic.partitionData.map((partition) => answer(topic.name, partition.index, partition.records))),
    })),
  );
  if (request.acks === 0) {
    // acks=0: the client waits for nothing, so nothing is sent. A failure closes the connection instead, as
    // Kafka does, so the producer refreshes its metadata rather than keep sending to the wrong node.
    const failed = responses.flatMap((topic) => topic.partitionResponses).find((partition) => partition.errorCode !== ERROR_CODES.NONE);
    if (failed) throw new Error(`an acks=0 produce failed with error ${failed.errorCode}: ${failed.errorMessage ?? ''}`);
    return 'silent';
  }
  encodeProduceResponse(writer, version, { responses, throttleTimeMs: 0 });
  return 'respond';
}

/**
 * `work`, or a REQUEST_TIMED_OUT KafkaError once `timeoutMs` passes (Kafka's produce timeout_ms: how long the
 * broker waits for the write to be durable). The write goes on and may still commit, as in Kafka; a retry
 * of an idempotent producer is then answered with its offset. A timeout of 0 or less waits as long as it takes.
 */
async function withinTimeout<T>(work: Promise<T>, timeoutMs: number, message: string): Promise<T> {
  if (!(timeoutMs > 0)) return work;
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new KafkaError(ERROR_CODES.REQUEST_TIMED_OUT, message)), timeoutMs);
  });
  // The write may fail after the timeout answered; that failure has nobody left to tell.
  work.catch(() => undefined);
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * InitProducerId. For an idempotent producer: a fresh producer id at epoch 0 from the metadata log, so its
 * sequences are checked by whichever node leads a partition. For a transactional producer, at the
 * coordinator of its transactional id: the id's producer at its next epoch, fencing older ones (see
 * `initProducerIdTransition`); other nodes answer NOT_COORDINATOR. A failure to allocate is answered with
 * an error the client retries.
 */
async function initProducerId(context: BrokerContext, reader: KafkaReader, version: number, writer: KafkaWriter): Promise<'respond'> {
  const { backend } = context;
  const request = decodeInitProducerIdRequest(reader, version);
  const refused = (errorCode: number) => encodeInitProducerIdResponse(writer, version, { errorCode, producerId: -1, producerEpoch: -1 });
  if (request.transactionalId === null && !context.allows('write', 'producerIds')) {
    refused(ERROR_CODES.CLUSTER_AUTHORIZATION_FAILED);
    return 'respond';
  }
  if (request.transactionalId !== null) {
    const transactionalId = request.transactionalId;
    const notHere = transactionCoordinationErrorOf(context, transactionalId);
    if (notHere !== ERROR_CODES.NONE) {
      refused(notHere);
      return 'respond';
    }
    try {
      const answer = await backend.initTransactions(transactionalId, request.transactionTimeoutMs);
      if (answer.errorCode !== ERROR_CODES.NONE) refused(answer.errorCode);
      else encodeInitProducerIdResponse(writer, version, { errorCode: ERROR_CODES.NONE, producerId: answer.producerId!, producerEpoch: answer.producerEpoch! });
    } catch (error) {
      refused(kafkaErrorCodeOf(error, 'transaction'));
    }
    return 'respond';
  }
  try {
    const { producerId, producerEpoch } = await backend.initProducerId();
    encodeInitProducerIdResponse(writer, version, { errorCode: ERROR_CODES.NONE, producerId, producerEpoch });
  } catch (error) {
    refused(kafkaErrorCodeOf(error, 'initProducerId'));
  }
  return 'respond';
}

async function fetch({ backend, allows }: BrokerContext, reader: KafkaReader, version: number, writer: KafkaWriter): Promise<'respond'> {
  const request = decodeFetchRequest(reader, version);
  const deadlineMs = Date.now() + Math.min(Math.max(0, request.maxWaitMs), LIMITS.kafkaFetchWaitMsMax);
  const readable = (topic: string) => allows('read', { topic });
  let answered = await fetchOnce(backend, request, readable);
  // Long poll: below min_bytes with nothing failed, wait for a commit to one of the partitions, then read again
  // (min_bytes 0 answers at once).
  while (answered.bytes < request.minBytes && !answered.failed && Date.now() < deadlineMs) {
    const partitions = request.topics.flatMap((topic) => topic.partitions.map((partition) => ({ topic: topic.topic, partition: partition.partition })));
    await backend.waitForData(partitions, deadlineMs);
    answered = await fetchOnce(backend, request, readable);
  }
  encodeFetchResponse(writer, version, { throttleTimeMs: 0, errorCode: ERROR_CODES.NONE, sessionId: 0, responses: answered.responses });
  return 'respond';
}

/** One pass over a fetch's partitions: their batches within the response's byte bound, or their errors. */
async function fetchOnce(backend: KafkaBackend, request: FetchRequest, readable: (topic: string) => boolean) {
  let bytes = 0;
  let failed = false;
  // The response's bound: the client's max_bytes, within the node's own (Kafka's fetch.max.bytes).
  const responseBytesMax = Math.min(request.maxBytes > 0 ? request.maxBytes : LIMITS.kafkaFetchResponseBytesMax, LIMITS.kafkaFetchResponseBytesMax);
  const responses = [];
  // read_committed: batches below the last stable offset only, with the aborted transactions among them.
  const readCommitted = request.isolationLevel === ISOLATION_LEVELS.READ_COMMITTED;
  for (const topic of request.topics) {
    const partitions: FetchPartitionResponse[] = [];
    const refused = !readable(topic.topic);
    for (const partition of topic.partitions) {
      if (refused) {
        failed = true;
        partitions.push({ ...emptyPartition(partition.partition, -1, -1, -1), errorCode: ERROR_CODES.TOPIC_AUTHORIZATION_FAILED });
        continue;
      }
      const room = responseBytesMax - bytes;
      try {
        // Once the response holds data, a partition gets only what room is left; the first batch of the
        // response is always whole, whatever its size (as Kafka does), so a consumer never stalls on it.
        if (room <= 0 && bytes > 0) {
          // No room left: the partition's bounds only (the backend reads nothing for 0 bytes).
          const bounds = await backend.fetch(topic.topic, partition.partition, partition.fetchOffset, 0, readCommitted);
          partitions.push(emptyPartition(partition.partition, bounds.highWatermark, bounds.lastStableOffset, bounds.logStartOffset));
          continue;
        }
        const fetched = await backend.fetch(topic.topic, partition.partition, partition.fetchOffset, Math.min(partition.partitionMaxBytes, Math.max(room, 1)), readCommitted);
        const batches = bytes === 0 ? fetched.batches : withinBytes(fetched.batches, room);
        for (const batch of batches) bytes += batch.byteLength;
        partitions.push({
          partitionIndex: partition.partition,
          errorCode: ERROR_CODES.NONE,
          highWatermark: fetched.highWatermark,
          lastStableOffset: fetched.lastStableOffset,
          logStartOffset: fetched.logStartOffset,
          abortedTransactions: readCommitted ? fetched.abortedTransactions : null,
          preferredReadReplica: -1,
          records: batches,
        });
      } catch (error) {
        failed = true;
        partitions.push({ ...emptyPartition(partition.partition, -1, -1, -1), errorCode: kafkaErrorCodeOf(error, 'fetch') });
      }
    }
    responses.push({ topic: topic.topic, partitions });
  }
  return { responses, bytes, failed };
}

function emptyPartition(partitionIndex: number, highWatermark: number, lastStableOffset: number, logStartOffset: number): FetchPartitionResponse {
  return { partitionIndex, errorCode: ERROR_CODES.NONE, highWatermark, lastStableOffset, logStartOffset, abortedTransactions: null, preferredReadReplica: -1, records: [] };
}

/** The leading batches that fit in `room` bytes (none when even the first does not). */
function withinBytes(batches: readonly Uint8Array[], room: number): Uint8Array[] {
  const taken: Uint8Array[] = [];
  let used = 0;
  for (const batch of batches) {
    if (used + batch.byteLength > room) break;
    taken.push(batch);
    used += batch.byteLength;
  }
  return taken;
}

async function listOffsets({ backend, allows }: BrokerContext, reader: KafkaReader, version: number, writer: KafkaWriter): Promise<'respond'> {
  const request = decodeListOffsetsRequest(reader, version);
  const topics = await Promise.all(
    request.topics.map(async (topic) => ({
      name: topic.name,
      partitions: await Promise.all(
        topic.partitions.map(async (partition): Promise<ListOffsetsPartitionResponse> => {
          if (!allows('read', { topic: topic.name })) {
            return { partitionIndex: partition.partitionIndex, errorCode: ERROR_CODES.TOPIC_AUTHORIZATION_FAILED, timestamp: -1, offset: -1, leaderEpoch: -1, oldStyleOffsets: [] };
          }
          try {
            const found = await backend.listOffset(topic.name, partition.partitionIndex, partition.timestamp, request.isolationLevel === ISOLATION_LEVELS.READ_COMMITTED);
            return { partitionIndex: partition.partitionIndex, errorCode: ERROR_CODES.NONE, timestamp: found.timestamp, offset: found.offset, leaderEpoch: -1, oldStyleOffsets: found.offset >= 0 ? [found.offset] : [] };
          } catch (error) {
            return { partitionIndex: partition.partitionIndex, errorCode: kafkaErrorCodeOf(error, 'listOffsets'), timestamp: -1, offset: -1, leaderEpoch: -1, oldStyleOffsets: [] };
          }
        }),
      ),
    })),
  );
  encodeListOffsetsResponse(writer, version, { throttleTimeMs: 0, topics });
  return 'respond';
}

async function createTopics({ backend, allows }: BrokerContext, reader: KafkaReader, version: number, writer: KafkaWriter): Promise<'respond'> {
  const request = decodeCreateTopicsRequest(reader, version);
  const counts = new Map<string, number>();
  for (const topic of request.topics) counts.set(topic.name, (counts.get(topic.name) ?? 0) + 1);
  const topics = await Promise.all(
    request.topics.map(async (topic): Promise<CreatableTopicResult> => {
      const refused = (errorCode: number, errorMessage: string) => ({ name: topic.name, errorCode, errorMessage });
      if (!allows('admin', { topic: topic.name })) return refused(ERROR_CODES.TOPIC_AUTHORIZATION_FAILED, `this connection may not create topic '${topic.name}'`);
      if (counts.get(topic.name)! > 1) return refused(ERROR_CODES.INVALID_REQUEST, `topic '${topic.name}' is named more than once in the request`);
      if (topic.assignments.length > 0) return refused(ERROR_CODES.INVALID_REQUEST, 'mink assigns partitions to nodes itself: replica assignments are not taken');
      const partitions = topic.numPartitions === -1 ? backend.defaultPartitions : topic.numPartitions;
      if (!Number.isSafeInteger(partitions) || partitions < 1) return refused(ERROR_CODES.INVALID_PARTITIONS, `a topic needs at least one partition, got ${topic.numPartitions}`);
      // The replication factor is S3's business: any value (or -1 for the default) is taken and ignored.
      const configs: Record<string, string> = {};
      for (const config of topic.configs) if (config.value !== null) configs[config.name] = config.value;
      try {
        await backend.createTopic(topic.name, partitions, configs, request.validateOnly);
        return { name: topic.name, errorCode: ERROR_CODES.NONE, errorMessage: null };
      } catch (error) {
        return refused(kafkaErrorCodeOf(error, 'createTopics'), error instanceof Error ? error.message : String(error));
      }
    }),
  );
  encodeCreateTopicsResponse(writer, version, { throttleTimeMs: 0, topics });
  return 'respond';
}

async function deleteTopics({ backend, allows }: BrokerContext, reader: KafkaReader, version: number, writer: KafkaWriter): Promise<'respond'> {
  const request = decodeDeleteTopicsRequest(reader, version);
  const responses = await Promise.all(
    request.topicNames.map(async (name) => {
      if (!allows('admin', { topic: name })) return { name, errorCode: ERROR_CODES.TOPIC_AUTHORIZATION_FAILED };
      try {
        await backend.deleteTopic(name);
        return { name, errorCode: ERROR_CODES.NONE };
      } catch (error) {
        return { name, errorCode: kafkaErrorCodeOf(error, 'deleteTopics') };
      }
    }),
  );
  encodeDeleteTopicsResponse(writer, version, { throttleTimeMs: 0, responses });
  return 'respond';
}

async function describeConfigs({ backend, allows }: BrokerContext, reader: KafkaReader, version: number, writer: KafkaWriter): Promise<'respond'> {
  const request = decodeDescribeConfigsRequest(reader, version);
  const results = request.resources.map((resource): DescribeConfigsResult => {
    const base = { resourceType: resource.resourceType, resourceName: resource.resourceName };
    const refused = (errorCode: number, errorMessage: string): DescribeConfigsResult => ({ ...base, errorCode, errorMessage, configs: [] });
    if (resource.resourceType === CONFIG_RESOURCE_TYPES.broker && !allows('admin', 'cluster')) return refused(ERROR_CODES.CLUSTER_AUTHORIZATION_FAILED, 'describing the broker needs the admin scope on every table');
    if (resource.resourceType === CONFIG_RESOURCE_TYPES.topic && !allows('read', { topic: resource.resourceName })) {
      return refused(ERROR_CODES.TOPIC_AUTHORIZATION_FAILED, `this connection may not read topic '${resource.resourceName}'`);
    }
    if (resource.resourceType === CONFIG_RESOURCE_TYPES.broker) return { ...base, errorCode: ERROR_CODES.NONE, errorMessage: null, configs: [] };
    if (resource.resourceType !== CONFIG_RESOURCE_TYPES.topic) {
      return { ...base, errorCode: ERROR_CODES.INVALID_REQUEST, errorMessage: `resource type ${resource.resourceType} is not described`, configs: [] };
    }
    const topic = backend.topic(resource.resourceName);
    if (!topic) return { ...base, errorCode: ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: `topic '${resource.resourceName}' does not exist`, configs: [] };
    const wanted = resource.configurationKeys;
    const configs = Object.entries(topic.configs)
      .filter(([name]) => wanted === null || wanted.includes(name))
      .map(([name, config]) => ({
        name,
        value: config.value,
        readOnly: false,
        configSource: config.isDefault ? CONFIG_SOURCES.defaultConfig : CONFIG_SOURCES.dynamicTopicConfig,
        isSensitive: false,
        synonyms: [],
      }));
    return { ...base, errorCode: ERROR_CODES.NONE, errorMessage: null, configs };
  });
  encodeDescribeConfigsResponse(writer, version, { throttleTimeMs: 0, results });
  return 'respond';
}
