/**
 * Proves the OffsetForLeaderEpoch codec reads what clients send and writes what they read, for every
 * version mink serves (0-3). kafkajs has no client for this API, so the vectors are written and read
 * field by field from the spec's field list with kafkajs's primitive Encoder and Decoder, an
 * implementation independent of ours.
 */
import { ERROR_CODES } from '../wire/codes';
import { KafkaDecodeError, KafkaReader } from '../wire/reader';
import { bytesEncoder, KafkajsDecoder, KafkajsEncoder, prefixesNotRefused, wholeBodyDecoder } from './kafka-oracle.fixture';
import {
  decodeOffsetForLeaderEpochRequest,
  encodeOffsetForLeaderEpochResponse,
  OFFSET_FOR_LEADER_EPOCH_REPLICA_IDS,
  type OffsetForLeaderEpochRequest,
  type OffsetForLeaderEpochResponse,
} from './offset-for-leader-epoch';

const decoded = wholeBodyDecoder(decodeOffsetForLeaderEpochRequest);
const encoded = bytesEncoder(encodeOffsetForLeaderEpochResponse);
const ALL_VERSIONS = [0, 1, 2, 3];

/** The request as OffsetForLeaderEpochRequest.json lays it out, written field by field by kafkajs's Encoder. */
function specRequestBytes(version: number, request: OffsetForLeaderEpochRequest): Uint8Array {
  const encoder = new KafkajsEncoder();
  if (version >= 3) encoder.writeInt32(request.replicaId);
  encoder.writeInt32(request.topics.length);
  for (const topic of request.topics) {
    encoder.writeString(topic.topic).writeInt32(topic.partitions.length);
    for (const partition of topic.partitions) {
      encoder.writeInt32(partition.partition);
      if (version >= 2) encoder.writeInt32(partition.currentLeaderEpoch);
      encoder.writeInt32(partition.leaderEpoch);
    }
  }
  return new Uint8Array(encoder.buffer);
}

/**
 * Reads a response field by field as OffsetForLeaderEpochResponse.json lays it out, with kafkajs's
 * Decoder; a field the version lacks reads as its spec default.
 */
function readBySpec(bytes: Uint8Array, version: number): Required<OffsetForLeaderEpochResponse> {
  const decoder = new KafkajsDecoder(Buffer.from(bytes));
  const throttleTimeMs: number = version >= 2 ? decoder.readInt32() : 0;
  const topics = decoder.readArray((topic: typeof decoder) => ({
    topic: topic.readString(),
    partitions: topic.readArray((partition: typeof decoder) => ({
      errorCode: partition.readInt16(),
      partition: partition.readInt32(),
      leaderEpoch: version >= 1 ? partition.readInt32() : -1,
      endOffset: Number(partition.readInt64()),
    })),
  }));
  expect(decoder.offset).toBe(bytes.byteLength);
  return { throttleTimeMs, topics };
}

/** A follower's request with every field away from its default, so that a field read from the wrong place shows. */
const REQUEST: OffsetForLeaderEpochRequest = {
  replicaId: 3,
  topics: [
    {
      topic: 'orders',
      partitions: [
        { partition: 0, currentLeaderEpoch: 9, leaderEpoch: 7 },
        { partition: 4, currentLeaderEpoch: 9, leaderEpoch: 9 },
      ],
    },
    { topic: 'payments', partitions: [{ partition: 1, currentLeaderEpoch: 2, leaderEpoch: 1 }] },
    { topic: 'empty', partitions: [] },
  ],
};

/** REQUEST as version `version` carries it: the fields it lacks at their spec defaults. */
function requestAt(version: number): OffsetForLeaderEpochRequest {
  return {
    replicaId: version >= 3 ? REQUEST.replicaId : OFFSET_FOR_LEADER_EPOCH_REPLICA_IDS.debugging,
    topics: REQUEST.topics.map((topic) => ({
      topic: topic.topic,
      partitions: topic.partitions.map((partition) => ({ ...partition, currentLeaderEpoch: version >= 2 ? partition.currentLeaderEpoch : -1 })),
    })),
  };
}

/** An end offset above 2^32, so that both halves of an int64 are checked. */
const OFFSET_LARGE = 2 ** 40 + 5;

const RESPONSE: Required<OffsetForLeaderEpochResponse> = {
  throttleTimeMs: 6,
  topics: [
    {
      topic: 'orders',
      partitions: [
        { errorCode: ERROR_CODES.NONE, partition: 0, leaderEpoch: 7, endOffset: OFFSET_LARGE },
        { errorCode: ERROR_CODES.FENCED_LEADER_EPOCH, partition: 4, leaderEpoch: -1, endOffset: -1 },
      ],
    },
    { topic: 'payments', partitions: [{ errorCode: ERROR_CODES.UNKNOWN_LEADER_EPOCH, partition: 1, leaderEpoch: -1, endOffset: -1 }] },
  ],
};

/** RESPONSE as version `version` carries it: the fields it lacks at their spec defaults. */
function responseAt(version: number): Required<OffsetForLeaderEpochResponse> {
  return {
    throttleTimeMs: version >= 2 ? RESPONSE.throttleTimeMs : 0,
    topics: RESPONSE.topics.map((topic) => ({
      topic: topic.topic,
      partitions: topic.partitions.map((partition) => ({ ...partition, leaderEpoch: version >= 1 ? partition.leaderEpoch : -1 })),
    })),
  };
}

describe('decodeOffsetForLeaderEpochRequest', () => {
  it('names the replica ids of the spec: -1 a consumer, -2 (its default) a debugging client', () => {
    expect(OFFSET_FOR_LEADER_EPOCH_REPLICA_IDS).toEqual({ consumer: -1, debugging: -2 });
  });

  it.each(ALL_VERSIONS)('reads version %i from bytes built from the spec, the fields it lacks at their defaults', (version) => {
    expect(decoded(specRequestBytes(version, REQUEST), version)).toEqual(requestAt(version));
  });

  it('reads a consumer\'s version 3 request', () => {
    const request = { replicaId: OFFSET_FOR_LEADER_EPOCH_REPLICA_IDS.consumer, topics: [{ topic: 't', partitions: [{ partition: 2, currentLeaderEpoch: 5, leaderEpoch: 4 }] }] };
    expect(decoded(specRequestBytes(3, request), 3)).toEqual(request);
  });

  it.each(ALL_VERSIONS)('refuses every truncation of a version %i request with KafkaDecodeError', (version) => {
    expect(prefixesNotRefused(specRequestBytes(version, REQUEST), (reader) => decodeOffsetForLeaderEpochRequest(reader, version))).toEqual([]);
  });

  it('refuses a null topic name with KafkaDecodeError', () => {
    const bytes = new KafkajsEncoder().writeInt32(1).writeString(null).writeInt32(0).buffer;
    expect(() => decodeOffsetForLeaderEpochRequest(new KafkaReader(bytes), 0)).toThrow(KafkaDecodeError);
  });

  it.each([-1, 4])('refuses version %i, which it does not serve, with KafkaDecodeError', (version) => {
    expect(() => decodeOffsetForLeaderEpochRequest(new KafkaReader(specRequestBytes(3, REQUEST)), version)).toThrow(KafkaDecodeError);
  });
});

describe('encodeOffsetForLeaderEpochResponse', () => {
  it.each(ALL_VERSIONS)('writes version %i so that every field it carries reads back as the spec lays it out', (version) => {
    expect(readBySpec(encoded(version, RESPONSE), version)).toEqual(responseAt(version));
  });

  it.each(ALL_VERSIONS)('writes the spec defaults in version %i for fields left out', (version) => {
    const minimal: OffsetForLeaderEpochResponse = { topics: [{ topic: 't', partitions: [{ errorCode: 0, partition: 2, endOffset: 40 }] }] };
    expect(readBySpec(encoded(version, minimal), version)).toEqual({ throttleTimeMs: 0, topics: [{ topic: 't', partitions: [{ errorCode: 0, partition: 2, leaderEpoch: -1, endOffset: 40 }] }] });
  });

  it.each([-1, 4])('refuses to write version %i', (version) => {
    expect(() => encoded(version, RESPONSE)).toThrow(/outside the served versions/);
  });
});
