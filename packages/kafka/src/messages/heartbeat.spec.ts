import { ERROR_CODES } from '../wire/codes';
import { KafkaDecodeError, KafkaReader } from '../wire/reader';
import { KafkaWriter } from '../wire/writer';
import { decodeHeartbeatRequest, encodeHeartbeatResponse, HEARTBEAT_VERSIONS } from './heartbeat';
import { bytesEncoder, kafkajsApi, KafkajsEncoder, prefixesNotRefused, wholeBodyDecoder } from './kafka-oracle.fixture';

// kafkajs is the oracle: its client-side request encoders and response decoders.
const kafkajs = kafkajsApi('heartbeat');
const decoded = wholeBodyDecoder(decodeHeartbeatRequest);
const encoded = bytesEncoder(encodeHeartbeatResponse);

describe('decodeHeartbeatRequest against kafkajs', () => {
  // Each row proves that a heartbeat as kafkajs sends it decodes to the fields it was given.
  it.each([0, 1, 2, 3])('v%i', async (version) => {
    const bytes = await kafkajs.requestBytes(version, { groupId: 'orders-consumers', groupGenerationId: 9, memberId: 'consumer-1', groupInstanceId: 'instance-1' });
    expect(decoded(bytes, version)).toEqual({
      groupId: 'orders-consumers',
      generationId: 9,
      memberId: 'consumer-1',
      groupInstanceId: version >= 3 ? 'instance-1' : null,
    });
  });

  it('v3 with a null group_instance_id (a dynamic member) reads null', async () => {
    const bytes = await kafkajs.requestBytes(3, { groupId: 'g', groupGenerationId: -1, memberId: 'm', groupInstanceId: null });
    expect(decodeHeartbeatRequest(new KafkaReader(bytes), 3)).toEqual({ groupId: 'g', generationId: -1, memberId: 'm', groupInstanceId: null });
  });
});

describe('encodeHeartbeatResponse against kafkajs', () => {
  // Each row proves that kafkajs reads back the error code and, from v1, the throttle time.
  it.each([0, 1, 2, 3])('v%i', async (version) => {
    const { decode, parse } = kafkajs.response(version);
    const decodedByKafkajs = await parse(await decode(encoded(version, { throttleTimeMs: 15, errorCode: ERROR_CODES.NONE })));
    const expected = version === 0 ? { errorCode: 0 } : version === 1 ? { errorCode: 0, throttleTime: 15 } : { errorCode: 0, throttleTime: 0, clientSideThrottleTime: 15 };
    expect(decodedByKafkajs).toEqual(expected);
  });

  it.each([0, 3])('v%i: REBALANCE_IN_PROGRESS reaches kafkajs as that error', async (version) => {
    const { decode, parse } = kafkajs.response(version);
    const bytes = encoded(version, { throttleTimeMs: 0, errorCode: ERROR_CODES.REBALANCE_IN_PROGRESS });
    await expect(parse(await decode(bytes))).rejects.toMatchObject({ type: 'REBALANCE_IN_PROGRESS' });
  });

  it('refuses a version outside the range', () => {
    expect(() => encodeHeartbeatResponse(new KafkaWriter(), 4, { throttleTimeMs: 0, errorCode: 0 })).toThrow();
  });
});

describe('decodeHeartbeatRequest refuses malformed bodies', () => {
  // Every field is required, so every proper prefix of a valid body is a truncation.
  it.each([0, 3])('every truncation of a v%i body throws KafkaDecodeError', async (version) => {
    const bytes = await kafkajs.requestBytes(version, { groupId: 'g', groupGenerationId: 1, memberId: 'm', groupInstanceId: 'i' });
    expect(prefixesNotRefused(bytes, (reader) => decodeHeartbeatRequest(reader, version))).toEqual([]);
  });

  it.each<{ name: string; version: number; bytes: () => Buffer }>([
    { name: 'a version below the range', version: -1, bytes: () => Buffer.alloc(64) },
    { name: 'a version above the range', version: HEARTBEAT_VERSIONS.max + 1, bytes: () => Buffer.alloc(64) },
    { name: 'a fractional version', version: 1.5, bytes: () => Buffer.alloc(64) },
    { name: 'a null member_id', version: 0, bytes: () => new KafkajsEncoder().writeString('g').writeInt32(1).writeInt16(-1).buffer },
    { name: 'a string length beyond the bytes left', version: 0, bytes: () => new KafkajsEncoder().writeInt16(50).writeInt32(0).buffer },
  ])('$name', ({ version, bytes }) => {
    expect(() => decodeHeartbeatRequest(new KafkaReader(bytes()), version)).toThrow(KafkaDecodeError);
  });
});
