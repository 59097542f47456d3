import { ERROR_CODES } from '../wire/codes';
import { KafkaDecodeError, KafkaReader } from '../wire/reader';
import { KafkaWriter } from '../wire/writer';
import { decodeOffsetCommitRequest, encodeOffsetCommitResponse, OFFSET_COMMIT_VERSIONS, type OffsetCommitRequest, type OffsetCommitResponse } from './offset-commit';
import { bytesEncoder, kafkajsApi, KafkajsDecoder, KafkajsEncoder, prefixesNotRefused, wholeBodyDecoder } from './kafka-oracle.fixture';

// kafkajs is the oracle for v0–5: its client-side request encoders and response decoders. For
// v6–7, which kafkajs lacks, vectors are built field by field from the spec with kafkajs's primitive
// Encoder/Decoder, an implementation independent of ours.
const kafkajs = kafkajsApi('offsetCommit');
const decoded = wholeBodyDecoder(decodeOffsetCommitRequest);
const encoded = bytesEncoder(encodeOffsetCommitResponse);

/** An offset beyond 32 bits, so the int64 is read whole. */
const BIG_OFFSET = 2 ** 40 + 5;

describe('decodeOffsetCommitRequest against kafkajs (v0–5)', () => {
  const topics = [
    {
      topic: 'orders',
      partitions: [
        { partition: 0, offset: String(BIG_OFFSET), timestamp: 1_700_000_000_123, metadata: 'checkpoint-7' },
        { partition: 3, offset: '0', timestamp: 1_700_000_000_123 },
      ],
    },
    { topic: 'payments', partitions: [{ partition: 1, offset: '42', timestamp: 1_700_000_000_123, metadata: '' }] },
  ];

  // Each row proves that the fields kafkajs sends at that version decode, and that those the version
  // lacks read as the protocol's defaults (-1, '' or null).
  it.each([0, 1, 2, 3, 4, 5])('v%i', async (version) => {
    const bytes = await kafkajs.requestBytes(version, { groupId: 'orders-consumers', groupGenerationId: 4, memberId: 'consumer-1', retentionTime: 86_400_000, topics });
    const timestamp = version === 1 ? 1_700_000_000_123 : -1;
    const expected: OffsetCommitRequest = {
      groupId: 'orders-consumers',
      generationId: version >= 1 ? 4 : -1,
      memberId: version >= 1 ? 'consumer-1' : '',
      groupInstanceId: null,
      retentionTimeMs: version >= 2 && version <= 4 ? 86_400_000 : -1,
      topics: [
        {
          name: 'orders',
          partitions: [
            { partitionIndex: 0, committedOffset: BIG_OFFSET, committedLeaderEpoch: -1, commitTimestampMs: timestamp, committedMetadata: 'checkpoint-7' },
            { partitionIndex: 3, committedOffset: 0, committedLeaderEpoch: -1, commitTimestampMs: timestamp, committedMetadata: null },
          ],
        },
        { name: 'payments', partitions: [{ partitionIndex: 1, committedOffset: 42, committedLeaderEpoch: -1, commitTimestampMs: timestamp, committedMetadata: '' }] },
      ],
    };
    expect(decoded(bytes, version)).toEqual(expected);
  });
});

/** A v6 or v7 request built field by field from OffsetCommitRequest.json. */
function handBuiltRequest(version: 6 | 7, groupInstanceId: string | null): Buffer {
  const request = new KafkajsEncoder().writeString('orders-consumers').writeInt32(11).writeString('consumer-2');
  if (version === 7) request.writeString(groupInstanceId);
  // No retention_time_ms: it ended at v4.
  const partition = (index: number, offset: string, leaderEpoch: number, metadata: string | null) =>
    new KafkajsEncoder().writeInt32(index).writeInt64(offset).writeInt32(leaderEpoch).writeString(metadata);
  request.writeArray([
    new KafkajsEncoder().writeString('orders').writeArray([partition(0, String(BIG_OFFSET), 17, 'meta'), partition(2, '9', -1, null)]),
    new KafkajsEncoder().writeString('empty').writeArray([]),
  ]);
  return request.buffer;
}

describe('decodeOffsetCommitRequest against hand-built vectors (v6–7)', () => {
  // Each row proves the leader epoch (v6+) and the instance id (v7) are read in their place.
  it.each<{ version: 6 | 7; groupInstanceId: string | null; expected: string | null }>([
    { version: 6, groupInstanceId: null, expected: null },
    { version: 7, groupInstanceId: 'instance-2', expected: 'instance-2' },
    { version: 7, groupInstanceId: null, expected: null },
  ])('v$version, group_instance_id $groupInstanceId', ({ version, groupInstanceId, expected }) => {
    expect(decoded(handBuiltRequest(version, groupInstanceId), version)).toEqual({
      groupId: 'orders-consumers',
      generationId: 11,
      memberId: 'consumer-2',
      groupInstanceId: expected,
      retentionTimeMs: -1,
      topics: [
        {
          name: 'orders',
          partitions: [
            { partitionIndex: 0, committedOffset: BIG_OFFSET, committedLeaderEpoch: 17, commitTimestampMs: -1, committedMetadata: 'meta' },
            { partitionIndex: 2, committedOffset: 9, committedLeaderEpoch: -1, commitTimestampMs: -1, committedMetadata: null },
          ],
        },
        { name: 'empty', partitions: [] },
      ],
    });
  });
});

describe('encodeOffsetCommitResponse', () => {
  const response: OffsetCommitResponse = {
    throttleTimeMs: 12,
    topics: [
      {
        name: 'orders',
        partitions: [
          { partitionIndex: 0, errorCode: ERROR_CODES.NONE },
          { partitionIndex: 2, errorCode: ERROR_CODES.NONE },
        ],
      },
      { name: 'payments', partitions: [{ partitionIndex: 1, errorCode: ERROR_CODES.NONE }] },
    ],
  };
  const kafkajsTopics = [
    {
      topic: 'orders',
      partitions: [
        { partition: 0, errorCode: 0 },
        { partition: 2, errorCode: 0 },
      ],
    },
    { topic: 'payments', partitions: [{ partition: 1, errorCode: 0 }] },
  ];

  // Each row proves that kafkajs reads back the outcomes and, from v3, the throttle time.
  it.each<{ version: number; throttle: object }>([
    { version: 0, throttle: {} },
    { version: 1, throttle: {} },
    { version: 2, throttle: {} },
    { version: 3, throttle: { throttleTime: 12 } },
    { version: 4, throttle: { throttleTime: 0, clientSideThrottleTime: 12 } },
    { version: 5, throttle: { throttleTime: 0, clientSideThrottleTime: 12 } },
  ])('v$version against kafkajs', async ({ version, throttle }) => {
    const { decode, parse } = kafkajs.response(version);
    expect(await parse(await decode(encoded(version, response)))).toEqual({ ...throttle, responses: kafkajsTopics });
  });

  it('a partition error reaches kafkajs as that error', async () => {
    const { decode, parse } = kafkajs.response(5);
    const bytes = encoded(5, { throttleTimeMs: 0, topics: [{ name: 'orders', partitions: [{ partitionIndex: 0, errorCode: ERROR_CODES.ILLEGAL_GENERATION }] }] });
    await expect(parse(await decode(bytes))).rejects.toMatchObject({ type: 'ILLEGAL_GENERATION' });
  });

  // v6–7 responses have the v3 layout; read field by field from OffsetCommitResponse.json.
  it.each([6, 7])('v%i against the spec field list', (version) => {
    const decoder = new KafkajsDecoder(Buffer.from(encoded(version, response)));
    const decodedBySpec = {
      throttleTimeMs: decoder.readInt32(),
      topics: decoder.readArray((topic: typeof decoder) => ({
        name: topic.readString(),
        partitions: topic.readArray((partition: typeof decoder) => ({ partitionIndex: partition.readInt32(), errorCode: partition.readInt16() })),
      })),
    };
    expect(decodedBySpec).toEqual(response);
    expect(decoder.offset).toBe(decoder.buffer.length);
  });

  it('refuses a version outside the range', () => {
    expect(() => encodeOffsetCommitResponse(new KafkaWriter(), 8, response)).toThrow();
  });
});

describe('decodeOffsetCommitRequest refuses malformed bodies', () => {
  // Every field is required, so every proper prefix of a valid body is a truncation.
  it.each<{ name: string; version: number; bytes: () => Promise<Buffer> | Buffer }>([
    {
      name: 'v1 (commit timestamp)',
      version: 1,
      bytes: () => kafkajs.requestBytes(1, { groupId: 'g', groupGenerationId: 1, memberId: 'm', topics: [{ topic: 't', partitions: [{ partition: 0, offset: '5', timestamp: 1, metadata: 'x' }] }] }),
    },
    {
      name: 'v2 (retention time)',
      version: 2,
      bytes: () => kafkajs.requestBytes(2, { groupId: 'g', groupGenerationId: 1, memberId: 'm', retentionTime: 5, topics: [{ topic: 't', partitions: [{ partition: 0, offset: '5' }] }] }),
    },
    { name: 'v7 (leader epoch, instance id)', version: 7, bytes: () => handBuiltRequest(7, 'i') },
  ])('every truncation of a $name body throws KafkaDecodeError', async ({ version, bytes }) => {
    const whole = await bytes();
    expect(prefixesNotRefused(whole, (reader) => decodeOffsetCommitRequest(reader, version))).toEqual([]);
  });

  it.each<{ name: string; version: number; bytes: () => Buffer }>([
    { name: 'a version below the range', version: -1, bytes: () => Buffer.alloc(64) },
    { name: 'a version above the range', version: OFFSET_COMMIT_VERSIONS.max + 1, bytes: () => Buffer.alloc(64) },
    {
      name: 'an offset beyond the safe integers',
      version: 0,
      bytes: () => new KafkajsEncoder().writeString('g').writeInt32(1).writeString('t').writeInt32(1).writeInt32(0).writeInt64('1152921504606846976').writeInt16(-1).buffer,
    },
    { name: 'a null topic name', version: 0, bytes: () => new KafkajsEncoder().writeString('g').writeInt32(1).writeInt16(-1).writeInt32(0).buffer },
    { name: 'a partition count beyond the bytes left', version: 0, bytes: () => new KafkajsEncoder().writeString('g').writeInt32(1).writeString('t').writeInt32(9999).buffer },
  ])('$name', ({ version, bytes }) => {
    expect(() => decodeOffsetCommitRequest(new KafkaReader(bytes()), version)).toThrow(KafkaDecodeError);
  });
});
