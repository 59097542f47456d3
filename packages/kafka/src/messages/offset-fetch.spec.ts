import { ERROR_CODES } from '../wire/codes';
import { KafkaDecodeError, KafkaReader } from '../wire/reader';
import { KafkaWriter } from '../wire/writer';
import { decodeOffsetFetchRequest, encodeOffsetFetchResponse, OFFSET_FETCH_VERSIONS, type OffsetFetchResponse } from './offset-fetch';
import { bytesEncoder, kafkajsApi, KafkajsDecoder, KafkajsEncoder, prefixesNotRefused, wholeBodyDecoder } from './kafka-oracle.fixture';

// kafkajs is the oracle for v1–4: its client-side request encoders and response decoders. For
// v0 and v5, which kafkajs lacks, vectors are built field by field from the spec with kafkajs's primitive
// Encoder/Decoder, an implementation independent of ours.
const kafkajs = kafkajsApi('offsetFetch');
const decoded = wholeBodyDecoder(decodeOffsetFetchRequest);
const encoded = bytesEncoder(encodeOffsetFetchResponse);

/** An offset beyond 32 bits, so the int64 is written whole. */
const BIG_OFFSET = 2 ** 40 + 5;

const requestedTopics = [
  { name: 'orders', partitionIndexes: [0, 1, 5] },
  { name: 'payments', partitionIndexes: [2] },
];

/** A v0–5 request built field by field from OffsetFetchRequest.json; `null` topics is the -1 count. */
function handBuiltRequest(topics: typeof requestedTopics | null): Buffer {
  const request = new KafkajsEncoder().writeString('orders-consumers');
  if (topics === null) return request.writeInt32(-1).buffer;
  return request.writeArray(topics.map(({ name, partitionIndexes }) => new KafkajsEncoder().writeString(name).writeArray(partitionIndexes, 'int32'))).buffer;
}

describe('decodeOffsetFetchRequest', () => {
  // Each row proves that the partitions kafkajs asks for at that version decode as asked.
  it.each([1, 2, 3, 4])('v%i against kafkajs', async (version) => {
    const bytes = await kafkajs.requestBytes(version, {
      groupId: 'orders-consumers',
      topics: requestedTopics.map(({ name, partitionIndexes }) => ({ topic: name, partitions: partitionIndexes.map((partition) => ({ partition })) })),
    });
    expect(decoded(bytes, version)).toEqual({ groupId: 'orders-consumers', topics: requestedTopics });
  });

  // kafkajs writes an empty topic list as null from v3 ("empty and null are the same thing" to it), which a
  // broker reads as "every committed partition"; v1–2 keep the empty list.
  it.each<{ version: number; topics: [] | null }>([
    { version: 1, topics: [] },
    { version: 2, topics: [] },
    { version: 3, topics: null },
    { version: 4, topics: null },
  ])('v$version: kafkajs with no topics reads as $topics', async ({ version, topics }) => {
    const bytes = await kafkajs.requestBytes(version, { groupId: 'g', topics: [] });
    expect(decodeOffsetFetchRequest(new KafkaReader(bytes), version)).toEqual({ groupId: 'g', topics });
  });

  // v0 has the v1 layout and v5 the v2 layout; these rows prove both, and null from v2.
  it.each<{ version: number; topics: typeof requestedTopics | null; label: string }>([
    { version: 0, topics: requestedTopics, label: 'two topics' },
    { version: 2, topics: null, label: 'null topics' },
    { version: 5, topics: requestedTopics, label: 'two topics' },
    { version: 5, topics: null, label: 'null topics' },
  ])('v$version against a hand-built vector with $label', ({ version, topics }) => {
    expect(decoded(handBuiltRequest(topics), version)).toEqual({ groupId: 'orders-consumers', topics });
  });
});

describe('encodeOffsetFetchResponse', () => {
  const response: OffsetFetchResponse = {
    throttleTimeMs: 21,
    topics: [
      {
        name: 'orders',
        partitions: [
          { partitionIndex: 0, committedOffset: BIG_OFFSET, committedLeaderEpoch: 3, metadata: 'checkpoint', errorCode: ERROR_CODES.NONE },
          { partitionIndex: 1, committedOffset: -1, committedLeaderEpoch: -1, metadata: null, errorCode: ERROR_CODES.NONE },
        ],
      },
      { name: 'payments', partitions: [{ partitionIndex: 2, committedOffset: 0, committedLeaderEpoch: -1, metadata: '', errorCode: ERROR_CODES.NONE }] },
    ],
    errorCode: ERROR_CODES.NONE,
  };
  const kafkajsTopics = [
    {
      topic: 'orders',
      partitions: [
        { partition: 0, offset: String(BIG_OFFSET), metadata: 'checkpoint', errorCode: 0 },
        { partition: 1, offset: '-1', metadata: null, errorCode: 0 },
      ],
    },
    { topic: 'payments', partitions: [{ partition: 2, offset: '0', metadata: '', errorCode: 0 }] },
  ];

  // Each row proves that kafkajs reads back the offsets and, where the version has them, the group-level
  // error code (v2+) and the throttle time (v3+).
  it.each<{ version: number; extra: object }>([
    { version: 1, extra: {} },
    { version: 2, extra: { errorCode: 0 } },
    { version: 3, extra: { errorCode: 0, throttleTime: 21 } },
    { version: 4, extra: { errorCode: 0, throttleTime: 0, clientSideThrottleTime: 21 } },
  ])('v$version against kafkajs', async ({ version, extra }) => {
    const { decode, parse } = kafkajs.response(version);
    expect(await parse(await decode(encoded(version, response)))).toEqual({ ...extra, responses: kafkajsTopics });
  });

  it('a group-level error reaches kafkajs (v2+) as that error', async () => {
    const { decode, parse } = kafkajs.response(4);
    const bytes = encoded(4, { throttleTimeMs: 0, topics: [], errorCode: ERROR_CODES.COORDINATOR_LOAD_IN_PROGRESS });
    await expect(parse(await decode(bytes))).rejects.toMatchObject({ code: ERROR_CODES.COORDINATOR_LOAD_IN_PROGRESS });
  });

  /** Reads a response field by field from OffsetFetchResponse.json. */
  function readBySpec(bytes: Uint8Array, version: number): OffsetFetchResponse {
    const decoder = new KafkajsDecoder(Buffer.from(bytes));
    const throttleTimeMs = version >= 3 ? decoder.readInt32() : 0;
    const topics = decoder.readArray((topic: typeof decoder) => ({
      name: topic.readString(),
      partitions: topic.readArray((partition: typeof decoder) => ({
        partitionIndex: partition.readInt32(),
        committedOffset: Number(partition.readInt64().toString()),
        committedLeaderEpoch: version >= 5 ? partition.readInt32() : -1,
        metadata: partition.readString(),
        errorCode: partition.readInt16(),
      })),
    }));
    const errorCode = version >= 2 ? decoder.readInt16() : 0;
    expect(decoder.offset).toBe(bytes.length);
    return { throttleTimeMs, topics, errorCode };
  }

  // v0 has no throttle and no group-level error; v5 adds the leader epoch, in its place before the metadata.
  it('v0 against the spec field list', () => {
    const v0 = { ...response, throttleTimeMs: 0, topics: response.topics.map((topic) => ({ ...topic, partitions: topic.partitions.map((partition) => ({ ...partition, committedLeaderEpoch: -1 })) })) };
    expect(readBySpec(encoded(0, response), 0)).toEqual(v0);
  });

  it('v5 against the spec field list', () => {
    expect(readBySpec(encoded(5, { ...response, errorCode: ERROR_CODES.GROUP_AUTHORIZATION_FAILED }), 5)).toEqual({ ...response, errorCode: ERROR_CODES.GROUP_AUTHORIZATION_FAILED });
  });

  it('refuses a version outside the range', () => {
    expect(() => encodeOffsetFetchResponse(new KafkaWriter(), 6, response)).toThrow();
  });
});

describe('decodeOffsetFetchRequest refuses malformed bodies', () => {
  // Every field is required, so every proper prefix of a valid body is a truncation.
  it('every truncation of a body throws KafkaDecodeError', () => {
    const bytes = handBuiltRequest(requestedTopics);
    expect(prefixesNotRefused(bytes, (reader) => decodeOffsetFetchRequest(reader, 5))).toEqual([]);
  });

  it.each<{ name: string; version: number; bytes: () => Buffer }>([
    { name: 'a version below the range', version: -1, bytes: () => handBuiltRequest(requestedTopics) },
    { name: 'a version above the range', version: OFFSET_FETCH_VERSIONS.max + 1, bytes: () => handBuiltRequest(requestedTopics) },
    { name: 'v0: a null topic list', version: 0, bytes: () => handBuiltRequest(null) },
    { name: 'v1: a null topic list', version: 1, bytes: () => handBuiltRequest(null) },
    { name: 'a null group_id', version: 2, bytes: () => new KafkajsEncoder().writeInt16(-1).writeInt32(-1).buffer },
    { name: 'a partition count beyond the bytes left', version: 2, bytes: () => new KafkajsEncoder().writeString('g').writeInt32(1).writeString('t').writeInt32(3).writeInt32(0).buffer },
  ])('$name', ({ version, bytes }) => {
    expect(() => decodeOffsetFetchRequest(new KafkaReader(bytes()), version)).toThrow(KafkaDecodeError);
  });
});
