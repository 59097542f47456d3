/**
 * Proves the CreateTopics codec reads what clients send and writes what they read: kafkajs's own request
 * encoders and response decoders for versions 0-3, and byte vectors written from the spec's field list for
 * every version 0-4 (4 is beyond kafkajs).
 */
import { ERROR_CODES } from '../wire/codes';
import { KafkaDecodeError, KafkaReader } from '../wire/reader';
import { KafkaWriter } from '../wire/writer';
import { decodeCreateTopicsRequest, encodeCreateTopicsResponse, type CreateTopicsRequest } from './create-topics';
import { bytesEncoder, kafkajsApi, prefixesNotRefused, wholeBodyDecoder } from './kafka-oracle.fixture';

const kafkajs = kafkajsApi('createTopics');
const decoded = wholeBodyDecoder(decodeCreateTopicsRequest);
const encoded = bytesEncoder(encodeCreateTopicsResponse);
const KAFKAJS_VERSIONS = [0, 1, 2, 3];
const ALL_VERSIONS = [0, 1, 2, 3, 4];

/** The request as CreateTopicsRequest.json lays it out, written field by field. */
function specRequestBytes(version: number, request: CreateTopicsRequest): Uint8Array {
  const writer = new KafkaWriter().int32(request.topics.length);
  for (const topic of request.topics) {
    writer.string(topic.name).int32(topic.numPartitions).int16(topic.replicationFactor);
    writer.int32(topic.assignments.length);
    for (const assignment of topic.assignments) {
      writer.int32(assignment.partitionIndex).int32(assignment.brokerIds.length);
      for (const id of assignment.brokerIds) writer.int32(id);
    }
    writer.int32(topic.configs.length);
    for (const config of topic.configs) writer.string(config.name).nullableString(config.value);
  }
  writer.int32(request.timeoutMs);
  if (version >= 1) writer.boolean(request.validateOnly);
  return writer.toBytes();
}

/** The response as CreateTopicsResponse.json lays it out, written field by field; every field must be given. */
function specResponseBytes(version: number, response: { throttleTimeMs: number; topics: Array<{ name: string; errorCode: number; errorMessage: string | null }> }): Uint8Array {
  const writer = new KafkaWriter();
  if (version >= 2) writer.int32(response.throttleTimeMs);
  writer.int32(response.topics.length);
  for (const topic of response.topics) {
    writer.string(topic.name).int16(topic.errorCode);
    if (version >= 1) writer.nullableString(topic.errorMessage);
  }
  return writer.toBytes();
}

const REQUEST: CreateTopicsRequest = {
  topics: [
    {
      name: 'orders',
      numPartitions: 6,
      replicationFactor: 3,
      assignments: [],
      configs: [
        { name: 'cleanup.policy', value: 'compact' },
        { name: 'retention.ms', value: null },
      ],
    },
    {
      name: 'placed',
      numPartitions: -1,
      replicationFactor: -1,
      assignments: [
        { partitionIndex: 0, brokerIds: [1, 2] },
        { partitionIndex: 1, brokerIds: [2, 3] },
      ],
      configs: [],
    },
  ],
  timeoutMs: 30_000,
  validateOnly: true,
};

/** REQUEST in the shape kafkajs's request encoders take. */
const KAFKAJS_REQUEST = {
  topics: REQUEST.topics.map((topic) => ({
    topic: topic.name,
    numPartitions: topic.numPartitions,
    replicationFactor: topic.replicationFactor,
    replicaAssignment: topic.assignments.map((each) => ({ partition: each.partitionIndex, replicas: each.brokerIds })),
    configEntries: topic.configs,
  })),
  timeout: REQUEST.timeoutMs,
  validateOnly: REQUEST.validateOnly,
};

/** Sorted by name, as kafkajs sorts what it decodes. */
const RESPONSE = {
  throttleTimeMs: 40,
  topics: [
    { name: 'orders', errorCode: ERROR_CODES.TOPIC_ALREADY_EXISTS, errorMessage: "Topic 'orders' already exists." },
    { name: 'placed', errorCode: ERROR_CODES.NONE, errorMessage: null },
  ],
};

describe('decodeCreateTopicsRequest', () => {
  it.each(KAFKAJS_VERSIONS)('reads every field kafkajs sends in version %i', async (version) => {
    const body: Uint8Array = await kafkajs.requestBytes(version, KAFKAJS_REQUEST);
    expect(decoded(body, version)).toEqual({ ...REQUEST, validateOnly: version >= 1 }); // validate_only reads false before it exists
  });

  it.each(ALL_VERSIONS)('reads version %i from bytes built from the spec', (version) => {
    const request = { ...REQUEST, validateOnly: version >= 1 };
    expect(decoded(specRequestBytes(version, request), version)).toEqual(request);
  });

  it.each(ALL_VERSIONS)('refuses every truncation of a version %i request with KafkaDecodeError', (version) => {
    expect(prefixesNotRefused(specRequestBytes(version, REQUEST), (reader) => decodeCreateTopicsRequest(reader, version))).toEqual([]);
  });

  it('refuses a null topic name, which the spec does not allow', () => {
    const bytes = new KafkaWriter().int32(1).int16(-1).int32(1).int16(1).int32(0).int32(0).int32(1000).boolean(false).toBytes();
    expect(() => decodeCreateTopicsRequest(new KafkaReader(bytes), 1)).toThrow(KafkaDecodeError);
  });

  it.each([-1, 5])('refuses version %i, which it does not serve, with KafkaDecodeError', (version) => {
    expect(() => decodeCreateTopicsRequest(new KafkaReader(specRequestBytes(4, REQUEST)), version)).toThrow(KafkaDecodeError);
  });
});

describe('encodeCreateTopicsResponse', () => {
  it.each(ALL_VERSIONS)('writes version %i exactly as the spec lays it out', (version) => {
    expect(encoded(version, RESPONSE)).toEqual(specResponseBytes(version, RESPONSE));
  });

  it.each(KAFKAJS_VERSIONS)('writes version %i so that kafkajs reads every field, and its client reports the topic error', async (version) => {
    const response = kafkajs.response(version);
    const decodedByKafkajs = await response.decode(encoded(version, RESPONSE));
    expect(decodedByKafkajs).toEqual({
      ...(version === 2 ? { throttleTime: 40 } : {}),
      ...(version === 3 ? { throttleTime: 0, clientSideThrottleTime: 40 } : {}),
      topicErrors: RESPONSE.topics.map((topic) => ({ topic: topic.name, errorCode: topic.errorCode, ...(version >= 1 ? { errorMessage: topic.errorMessage } : {}) })),
    });
    await expect(response.parse(decodedByKafkajs)).rejects.toMatchObject({ errors: [{ type: 'TOPIC_ALREADY_EXISTS', topic: 'orders' }] });
  });

  it.each(ALL_VERSIONS)('writes the spec defaults in version %i for fields left out', (version) => {
    const minimal = { topics: [{ name: 'placed', errorCode: 0 }] };
    expect(encoded(version, minimal)).toEqual(specResponseBytes(version, { throttleTimeMs: 0, topics: [{ name: 'placed', errorCode: 0, errorMessage: null }] }));
  });

  it.each([-1, 5])('refuses to write version %i', (version) => {
    expect(() => encoded(version, RESPONSE)).toThrow(/outside the served versions/);
  });
});
