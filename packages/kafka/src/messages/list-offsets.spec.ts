/**
 * Proves the ListOffsets codec reads what clients send and writes what they read: kafkajs's own request
 * encoders and response decoders for versions 0-3, and byte vectors written from the spec's field list for
 * every version 0-5 (4 and 5 are beyond kafkajs).
 */
import { ERROR_CODES } from '../wire/codes';
import { KafkaDecodeError, KafkaReader } from '../wire/reader';
import { KafkaWriter } from '../wire/writer';
import { decodeListOffsetsRequest, encodeListOffsetsResponse, LIST_OFFSETS_TIMESTAMPS, type ListOffsetsRequest, type ListOffsetsResponse } from './list-offsets';
import { bytesEncoder, kafkajsApi, prefixesNotRefused, wholeBodyDecoder } from './kafka-oracle.fixture';

const kafkajs = kafkajsApi('listOffsets');
const decoded = wholeBodyDecoder(decodeListOffsetsRequest);
const encoded = bytesEncoder(encodeListOffsetsResponse);
const KAFKAJS_VERSIONS = [0, 1, 2, 3];
const ALL_VERSIONS = [0, 1, 2, 3, 4, 5];

/** The request as ListOffsetsRequest.json lays it out, written field by field. */
function specRequestBytes(version: number, request: ListOffsetsRequest): Uint8Array {
  const writer = new KafkaWriter().int32(request.replicaId);
  if (version >= 2) writer.int8(request.isolationLevel);
  writer.int32(request.topics.length);
  for (const topic of request.topics) {
    writer.string(topic.name).int32(topic.partitions.length);
    for (const partition of topic.partitions) {
      writer.int32(partition.partitionIndex);
      if (version >= 4) writer.int32(partition.currentLeaderEpoch);
      writer.int64(partition.timestamp);
      if (version === 0) writer.int32(partition.maxNumOffsets);
    }
  }
  return writer.toBytes();
}

interface SpecPartition {
  partitionIndex: number;
  errorCode: number;
  oldStyleOffsets: number[];
  timestamp: number;
  offset: number;
  leaderEpoch: number;
}

/** The response as ListOffsetsResponse.json lays it out, written field by field; every field must be given. */
function specResponseBytes(version: number, response: { throttleTimeMs: number; topics: Array<{ name: string; partitions: SpecPartition[] }> }): Uint8Array {
  const writer = new KafkaWriter();
  if (version >= 2) writer.int32(response.throttleTimeMs);
  writer.int32(response.topics.length);
  for (const topic of response.topics) {
    writer.string(topic.name).int32(topic.partitions.length);
    for (const partition of topic.partitions) {
      writer.int32(partition.partitionIndex).int16(partition.errorCode);
      if (version === 0) {
        writer.int32(partition.oldStyleOffsets.length);
        for (const offset of partition.oldStyleOffsets) writer.int64(offset);
      }
      if (version >= 1) writer.int64(partition.timestamp).int64(partition.offset);
      if (version >= 4) writer.int32(partition.leaderEpoch);
    }
  }
  return writer.toBytes();
}

/** A timestamp and an offset above 2^32, so that both halves of an int64 are checked. */
const TIMESTAMP_MS = 1_700_000_000_123;
const OFFSET_LARGE = 2 ** 40 + 5;

/** Every field of a version-5 request, with values that differ from the defaults of older versions. */
const REQUEST: ListOffsetsRequest = {
  replicaId: -1,
  isolationLevel: 1,
  topics: [
    {
      name: 'orders',
      partitions: [
        { partitionIndex: 0, currentLeaderEpoch: 7, timestamp: LIST_OFFSETS_TIMESTAMPS.latest, maxNumOffsets: 5 },
        { partitionIndex: 3, currentLeaderEpoch: 8, timestamp: TIMESTAMP_MS, maxNumOffsets: 5 },
      ],
    },
    { name: 'payments', partitions: [{ partitionIndex: 1, currentLeaderEpoch: 9, timestamp: LIST_OFFSETS_TIMESTAMPS.earliest, maxNumOffsets: 5 }] },
  ],
};

/** REQUEST as version `version` carries it: the fields it lacks at their spec defaults. */
function requestAt(version: number): ListOffsetsRequest {
  return {
    replicaId: REQUEST.replicaId,
    isolationLevel: version >= 2 ? REQUEST.isolationLevel : 0,
    topics: REQUEST.topics.map((topic) => ({
      name: topic.name,
      partitions: topic.partitions.map((partition) => ({
        ...partition,
        currentLeaderEpoch: version >= 4 ? partition.currentLeaderEpoch : -1,
        maxNumOffsets: version === 0 ? partition.maxNumOffsets : 1,
      })),
    })),
  };
}

const RESPONSE = {
  throttleTimeMs: 3,
  topics: [
    {
      name: 'orders',
      partitions: [
        { partitionIndex: 0, errorCode: ERROR_CODES.NONE, timestamp: -1, offset: OFFSET_LARGE, leaderEpoch: 7 },
        { partitionIndex: 3, errorCode: ERROR_CODES.NONE, timestamp: TIMESTAMP_MS, offset: 42, leaderEpoch: 8 },
      ],
    },
    { name: 'payments', partitions: [{ partitionIndex: 1, errorCode: ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION, timestamp: -1, offset: -1, leaderEpoch: -1 }] },
  ],
};

/** RESPONSE with every field given: version 0's old-style offsets are the offset when it is known. */
const RESPONSE_IN_FULL = {
  ...RESPONSE,
  topics: RESPONSE.topics.map((topic) => ({
    ...topic,
    partitions: topic.partitions.map((partition) => ({ ...partition, oldStyleOffsets: partition.offset >= 0 ? [partition.offset] : [] })),
  })),
};

describe('decodeListOffsetsRequest', () => {
  it.each(KAFKAJS_VERSIONS)('reads every field kafkajs sends in version %i', async (version) => {
    const args = {
      replicaId: REQUEST.replicaId,
      isolationLevel: REQUEST.isolationLevel,
      topics: REQUEST.topics.map((topic) => ({
        topic: topic.name,
        partitions: topic.partitions.map((each) => ({ partition: each.partitionIndex, timestamp: each.timestamp, maxNumOffsets: each.maxNumOffsets })),
      })),
    };
    const body: Uint8Array = await kafkajs.requestBytes(version, args);
    expect(decoded(body, version)).toEqual(requestAt(version));
  });

  it.each(ALL_VERSIONS)('reads version %i from bytes built from the spec', (version) => {
    expect(decoded(specRequestBytes(version, REQUEST), version)).toEqual(requestAt(version));
  });

  it.each(ALL_VERSIONS)('refuses every truncation of a version %i request with KafkaDecodeError', (version) => {
    expect(prefixesNotRefused(specRequestBytes(version, REQUEST), (reader) => decodeListOffsetsRequest(reader, version))).toEqual([]);
  });

  it('refuses a timestamp beyond the safe integers with KafkaDecodeError', () => {
    const bytes = new KafkaWriter().int32(-1).int32(1).string('t').int32(1).int32(0).int64(2n ** 60n).toBytes();
    expect(() => decodeListOffsetsRequest(new KafkaReader(bytes), 1)).toThrow(KafkaDecodeError);
  });

  it.each([-1, 6])('refuses version %i, which it does not serve, with KafkaDecodeError', (version) => {
    expect(() => decodeListOffsetsRequest(new KafkaReader(specRequestBytes(5, REQUEST)), version)).toThrow(KafkaDecodeError);
  });
});

describe('encodeListOffsetsResponse', () => {
  it.each(ALL_VERSIONS)('writes version %i exactly as the spec lays it out', (version) => {
    expect(encoded(version, RESPONSE)).toEqual(specResponseBytes(version, RESPONSE_IN_FULL));
  });

  it.each(KAFKAJS_VERSIONS)('writes version %i so that kafkajs reads every field, and its client reports the partition error', async (version) => {
    const response = kafkajs.response(version);
    const decodedByKafkajs = await response.decode(encoded(version, RESPONSE));
    expect(decodedByKafkajs).toEqual({
      ...(version === 2 ? { throttleTime: 3 } : {}),
      ...(version === 3 ? { throttleTime: 0, clientSideThrottleTime: 3 } : {}),
      responses: RESPONSE_IN_FULL.topics.map((topic) => ({
        topic: topic.name,
        partitions: topic.partitions.map((partition) => ({
          partition: partition.partitionIndex,
          errorCode: partition.errorCode,
          ...(version === 0
            ? { offsets: partition.oldStyleOffsets.map(String) }
            : { timestamp: String(partition.timestamp), offset: String(partition.offset) }),
        })),
      })),
    });
    await expect(response.parse(decodedByKafkajs)).rejects.toMatchObject({ type: 'UNKNOWN_TOPIC_OR_PARTITION' });
  });

  it('writes the old-style offsets given for version 0 instead of the offset', () => {
    const partition = { partitionIndex: 0, errorCode: 0, timestamp: -1, offset: 300, leaderEpoch: -1, oldStyleOffsets: [300, 200, 0] };
    const response = { throttleTimeMs: 0, topics: [{ name: 't', partitions: [partition] }] };
    expect(encoded(0, response)).toEqual(specResponseBytes(0, response));
  });

  it.each(ALL_VERSIONS)('writes the spec defaults in version %i for fields left out', (version) => {
    const minimal: ListOffsetsResponse = { topics: [{ name: 't', partitions: [{ partitionIndex: 2, errorCode: 0, timestamp: 5, offset: 6 }] }] };
    const inFull = { throttleTimeMs: 0, topics: [{ name: 't', partitions: [{ partitionIndex: 2, errorCode: 0, oldStyleOffsets: [6], timestamp: 5, offset: 6, leaderEpoch: -1 }] }] };
    expect(encoded(version, minimal)).toEqual(specResponseBytes(version, inFull));
  });

  it.each([-1, 6])('refuses to write version %i', (version) => {
    expect(() => encoded(version, RESPONSE)).toThrow(/outside the served versions/);
  });
});
