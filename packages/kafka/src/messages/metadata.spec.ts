/**
 * Proves the Metadata codec reads what clients send and writes what they read: kafkajs's own request
 * encoders and response decoders for versions 0-6, and byte vectors written from the spec's field list for
 * every version 0-8 (7 and 8 are beyond kafkajs).
 */
import { ERROR_CODES } from '../wire/codes';
import { KafkaDecodeError, KafkaReader } from '../wire/reader';
import { KafkaWriter } from '../wire/writer';
import { AUTHORIZED_OPERATIONS_OMITTED, decodeMetadataRequest, encodeMetadataResponse, type MetadataRequest, type MetadataResponse } from './metadata';
import { bytesEncoder, kafkajsApi, prefixesNotRefused, wholeBodyDecoder } from './kafka-oracle.fixture';

const kafkajs = kafkajsApi('metadata');
const decoded = wholeBodyDecoder(decodeMetadataRequest);
const encoded = bytesEncoder(encodeMetadataResponse);
const KAFKAJS_VERSIONS = [0, 1, 2, 3, 4, 5, 6];
const ALL_VERSIONS = [0, 1, 2, 3, 4, 5, 6, 7, 8];

/** The request as MetadataRequest.json lays it out, written field by field. */
function specRequestBytes(version: number, request: MetadataRequest): Uint8Array {
  const writer = new KafkaWriter();
  if (request.topics === null) writer.int32(-1);
  else {
    writer.int32(request.topics.length);
    for (const topic of request.topics) writer.string(topic);
  }
  if (version >= 4) writer.boolean(request.allowAutoTopicCreation);
  if (version >= 8) writer.boolean(request.includeClusterAuthorizedOperations).boolean(request.includeTopicAuthorizedOperations);
  return writer.toBytes();
}

/** The response as MetadataResponse.json lays it out, written field by field; every field must be given. */
function specResponseBytes(version: number, response: Required<MetadataResponse>): Uint8Array {
  const writer = new KafkaWriter();
  if (version >= 3) writer.int32(response.throttleTimeMs);
  writer.int32(response.brokers.length);
  for (const broker of response.brokers) {
    writer.int32(broker.nodeId).string(broker.host).int32(broker.port);
    if (version >= 1) writer.nullableString(broker.rack!);
  }
  if (version >= 2) writer.nullableString(response.clusterId);
  if (version >= 1) writer.int32(response.controllerId);
  writer.int32(response.topics.length);
  for (const topic of response.topics) {
    writer.int16(topic.errorCode).string(topic.name);
    if (version >= 1) writer.boolean(topic.isInternal!);
    writer.int32(topic.partitions.length);
    for (const partition of topic.partitions) {
      writer.int16(partition.errorCode).int32(partition.partitionIndex).int32(partition.leaderId);
      if (version >= 7) writer.int32(partition.leaderEpoch!);
      writer.int32(partition.replicaNodes.length);
      for (const node of partition.replicaNodes) writer.int32(node);
      writer.int32(partition.isrNodes.length);
      for (const node of partition.isrNodes) writer.int32(node);
      if (version >= 5) {
        writer.int32(partition.offlineReplicas!.length);
        for (const node of partition.offlineReplicas!) writer.int32(node);
      }
    }
    if (version >= 8) writer.int32(topic.topicAuthorizedOperations!);
  }
  if (version >= 8) writer.int32(response.clusterAuthorizedOperations);
  return writer.toBytes();
}

/** Every field given, with values that differ from the defaults, so a misplaced field shows. */
const RESPONSE: Required<MetadataResponse> = {
  throttleTimeMs: 17,
  brokers: [
    { nodeId: 1, host: 'node-1.mink', port: 9092, rack: 'rack-a' },
    { nodeId: 2, host: 'node-2.mink', port: 9093, rack: null },
  ],
  clusterId: 'mink-cluster',
  controllerId: 2,
  topics: [
    {
      errorCode: ERROR_CODES.NONE,
      name: 'orders',
      isInternal: true,
      partitions: [
        { errorCode: ERROR_CODES.NONE, partitionIndex: 0, leaderId: 1, leaderEpoch: 11, replicaNodes: [1, 2], isrNodes: [1], offlineReplicas: [2] },
        { errorCode: ERROR_CODES.LEADER_NOT_AVAILABLE, partitionIndex: 1, leaderId: -1, leaderEpoch: 12, replicaNodes: [2], isrNodes: [], offlineReplicas: [] },
      ],
      topicAuthorizedOperations: 0x0ff8,
    },
    { errorCode: ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION, name: 'missing', isInternal: false, partitions: [], topicAuthorizedOperations: 0 },
  ],
  clusterAuthorizedOperations: 0x1000,
};

/** What kafkajs's decoder of `version` should make of RESPONSE, in kafkajs's names. */
function kafkajsView(version: number): object {
  return {
    ...(version >= 3 && version < 6 ? { throttleTime: 17 } : {}),
    ...(version >= 6 ? { throttleTime: 0, clientSideThrottleTime: 17 } : {}),
    brokers: RESPONSE.brokers.map((broker) => ({ nodeId: broker.nodeId, host: broker.host, port: broker.port, ...(version >= 1 ? { rack: broker.rack } : {}) })),
    ...(version >= 2 ? { clusterId: 'mink-cluster' } : {}),
    ...(version >= 1 ? { controllerId: 2 } : {}),
    topicMetadata: RESPONSE.topics.map((topic) => ({
      topicErrorCode: topic.errorCode,
      topic: topic.name,
      ...(version >= 1 ? { isInternal: topic.isInternal } : {}),
      partitionMetadata: topic.partitions.map((partition) => ({
        partitionErrorCode: partition.errorCode,
        partitionId: partition.partitionIndex,
        leader: partition.leaderId,
        replicas: partition.replicaNodes,
        isr: partition.isrNodes,
        ...(version >= 5 ? { offlineReplicas: partition.offlineReplicas } : {}),
      })),
    })),
  };
}

describe('decodeMetadataRequest', () => {
  it.each(KAFKAJS_VERSIONS)('reads the topics (and from v4 the auto-creation flag) kafkajs sends in version %i', async (version) => {
    const body = await kafkajs.requestBytes(version, { topics: ['orders', 'payments'], allowAutoTopicCreation: false });
    expect(decoded(body, version)).toEqual({
      topics: ['orders', 'payments'],
      allowAutoTopicCreation: version < 4, // a version without the field reads as the spec's default, true
      includeClusterAuthorizedOperations: false,
      includeTopicAuthorizedOperations: false,
    });
  });

  it.each(KAFKAJS_VERSIONS)('reads the request kafkajs sends for all topics in version %i as null', async (version) => {
    const body = await kafkajs.requestBytes(version, { topics: [] });
    expect(decoded(body, version).topics).toBeNull();
  });

  const handBuilt: Array<{ version: number; request: MetadataRequest }> = ALL_VERSIONS.flatMap((version) => [
    {
      version,
      request: {
        topics: ['orders', 'ünïcode'],
        allowAutoTopicCreation: version < 4,
        includeClusterAuthorizedOperations: version >= 8,
        includeTopicAuthorizedOperations: false,
      },
    },
    {
      version,
      request: { topics: null, allowAutoTopicCreation: true, includeClusterAuthorizedOperations: false, includeTopicAuthorizedOperations: version >= 8 },
    },
  ]);
  it.each(handBuilt)('reads version $version with topics $request.topics from bytes built from the spec', ({ version, request }) => {
    expect(decoded(specRequestBytes(version, request), version)).toEqual(request);
  });

  it.each(ALL_VERSIONS.filter((version) => version >= 1))('reads an empty topic array in version %i as no topics, not all', (version) => {
    const request = { topics: [], allowAutoTopicCreation: true, includeClusterAuthorizedOperations: false, includeTopicAuthorizedOperations: false };
    expect(decoded(specRequestBytes(version, request), version).topics).toEqual([]);
  });

  it('reads an empty topic array in version 0 as all topics', () => {
    expect(decoded(new KafkaWriter().int32(0).toBytes(), 0).topics).toBeNull();
  });

  it.each(ALL_VERSIONS)('refuses every truncation of a version %i request with KafkaDecodeError', (version) => {
    const request = { topics: ['ab', 'cd'], allowAutoTopicCreation: true, includeClusterAuthorizedOperations: true, includeTopicAuthorizedOperations: true };
    expect(prefixesNotRefused(specRequestBytes(version, request), (reader) => decodeMetadataRequest(reader, version))).toEqual([]);
  });

  it('refuses a topic count larger than the bytes that follow', () => {
    expect(() => decodeMetadataRequest(new KafkaReader(new KafkaWriter().int32(1_000_000).toBytes()), 1)).toThrow(KafkaDecodeError);
  });

  it.each([-1, 9])('refuses version %i, which it does not serve, with KafkaDecodeError', (version) => {
    expect(() => decodeMetadataRequest(new KafkaReader(specRequestBytes(8, handBuilt[0]!.request)), version)).toThrow(KafkaDecodeError);
  });
});

describe('encodeMetadataResponse', () => {
  it.each(ALL_VERSIONS)('writes version %i exactly as the spec lays it out', (version) => {
    expect(encoded(version, RESPONSE)).toEqual(specResponseBytes(version, RESPONSE));
  });

  it.each(KAFKAJS_VERSIONS)('writes version %i so that kafkajs reads every field, and its client reports the topic error', async (version) => {
    const response = kafkajs.response(version);
    const decodedByKafkajs = await response.decode(encoded(version, RESPONSE));
    expect(decodedByKafkajs).toEqual(kafkajsView(version));
    await expect(response.parse(decodedByKafkajs)).rejects.toMatchObject({ type: 'UNKNOWN_TOPIC_OR_PARTITION' });
  });

  it.each(KAFKAJS_VERSIONS)('writes a version %i answer without errors that kafkajs accepts', async (version) => {
    const response = kafkajs.response(version);
    const clean = { brokers: RESPONSE.brokers, topics: [{ errorCode: 0, name: 'orders', partitions: [{ errorCode: 0, partitionIndex: 0, leaderId: 1, replicaNodes: [1], isrNodes: [1] }] }] };
    const decodedByKafkajs = await response.decode(encoded(version, clean));
    await expect(response.parse(decodedByKafkajs)).resolves.toBe(decodedByKafkajs);
  });

  it.each(ALL_VERSIONS)('writes the spec defaults in version %i for fields left out', (version) => {
    const minimal: MetadataResponse = {
      brokers: [{ nodeId: 3, host: 'h', port: 1 }],
      topics: [{ errorCode: 0, name: 't', partitions: [{ errorCode: 0, partitionIndex: 0, leaderId: 3, replicaNodes: [3], isrNodes: [3] }] }],
    };
    const withDefaults: Required<MetadataResponse> = {
      throttleTimeMs: 0,
      brokers: [{ nodeId: 3, host: 'h', port: 1, rack: null }],
      clusterId: null,
      controllerId: -1,
      topics: [
        {
          errorCode: 0,
          name: 't',
          isInternal: false,
          partitions: [{ errorCode: 0, partitionIndex: 0, leaderId: 3, leaderEpoch: -1, replicaNodes: [3], isrNodes: [3], offlineReplicas: [] }],
          topicAuthorizedOperations: AUTHORIZED_OPERATIONS_OMITTED,
        },
      ],
      clusterAuthorizedOperations: AUTHORIZED_OPERATIONS_OMITTED,
    };
    expect(encoded(version, minimal)).toEqual(specResponseBytes(version, withDefaults));
  });

  it.each([-1, 9])('refuses to write version %i', (version) => {
    expect(() => encoded(version, RESPONSE)).toThrow(/outside the served versions/);
  });
});
