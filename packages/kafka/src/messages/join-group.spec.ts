import { ERROR_CODES } from '../wire/codes';
import { KafkaDecodeError, KafkaReader } from '../wire/reader';
import { KafkaWriter } from '../wire/writer';
import { decodeJoinGroupRequest, encodeJoinGroupResponse, JOIN_GROUP_VERSIONS, type JoinGroupRequest, type JoinGroupResponse } from './join-group';
import { bytesEncoder, kafkajsApi, KafkajsEncoder, prefixesNotRefused, wholeBodyDecoder } from './kafka-oracle.fixture';

// kafkajs is the oracle: its client-side request encoders and response decoders.
const kafkajs = kafkajsApi('joinGroup');
const decoded = wholeBodyDecoder(decodeJoinGroupRequest);
const encoded = bytesEncoder(encodeJoinGroupResponse);

const subscription = Buffer.from([0, 0, 0, 0, 0, 1, 0, 3, 0x6f, 0x6e, 0x65, 0, 0, 0, 0]);

describe('decodeJoinGroupRequest against kafkajs', () => {
  // Each row proves that the bytes kafkajs sends at that version decode to the fields it was given, and
  // that fields a version lacks read as the protocol's defaults.
  it.each([0, 1, 2, 3, 4, 5])('v%i', async (version) => {
    const bytes = await kafkajs.requestBytes(version, {
      groupId: 'orders-consumers',
      sessionTimeout: 30000,
      rebalanceTimeout: 60000,
      memberId: version >= 4 ? 'consumer-1-9a8b' : '',
      groupInstanceId: 'instance-7',
      protocolType: 'consumer',
      groupProtocols: [
        { name: 'RoundRobinAssigner', metadata: subscription },
        { name: 'empty', metadata: Buffer.alloc(0) },
      ],
    });
    const expected: JoinGroupRequest = {
      groupId: 'orders-consumers',
      sessionTimeoutMs: 30000,
      rebalanceTimeoutMs: version >= 1 ? 60000 : 30000,
      memberId: version >= 4 ? 'consumer-1-9a8b' : '',
      groupInstanceId: version >= 5 ? 'instance-7' : null,
      protocolType: 'consumer',
      protocols: [
        { name: 'RoundRobinAssigner', metadata: subscription },
        { name: 'empty', metadata: new Uint8Array(0) },
      ],
    };
    expect(decoded(bytes, version)).toEqual(expected);
  });

  it('v5 with a null group_instance_id (a dynamic member) reads null', async () => {
    const bytes = await kafkajs.requestBytes(5, {
      groupId: 'g',
      sessionTimeout: 10000,
      rebalanceTimeout: 20000,
      memberId: '',
      protocolType: 'consumer',
      groupProtocols: [],
    });
    expect(decodeJoinGroupRequest(new KafkaReader(bytes), 5)).toEqual({
      groupId: 'g',
      sessionTimeoutMs: 10000,
      rebalanceTimeoutMs: 20000,
      memberId: '',
      groupInstanceId: null,
      protocolType: 'consumer',
      protocols: [],
    });
  });
});

describe('encodeJoinGroupResponse against kafkajs', () => {
  const response: JoinGroupResponse = {
    throttleTimeMs: 25,
    errorCode: ERROR_CODES.NONE,
    generationId: 7,
    protocolName: 'RoundRobinAssigner',
    leader: 'consumer-1-9a8b',
    memberId: 'consumer-1-9a8b',
    members: [
      { memberId: 'consumer-1-9a8b', groupInstanceId: 'instance-7', metadata: subscription },
      { memberId: 'consumer-2-7c6d', groupInstanceId: null, metadata: new Uint8Array(0) },
    ],
  };

  // Each row proves that kafkajs reads back every field the version carries, including its throttle
  // handling (v3+ report the broker's throttle as clientSideThrottleTime).
  it.each([0, 1, 2, 3, 4, 5])('v%i', async (version) => {
    const { decode, parse } = kafkajs.response(version);
    const decodedByKafkajs = await parse(await decode(encoded(version, response)));
    expect(decodedByKafkajs).toMatchObject({
      errorCode: 0,
      generationId: 7,
      groupProtocol: 'RoundRobinAssigner',
      leaderId: 'consumer-1-9a8b',
      memberId: 'consumer-1-9a8b',
      members: [
        { memberId: 'consumer-1-9a8b', memberMetadata: subscription },
        { memberId: 'consumer-2-7c6d', memberMetadata: Buffer.alloc(0) },
      ],
    });
    if (version === 2) expect(decodedByKafkajs.throttleTime).toBe(25);
    if (version >= 3) expect(decodedByKafkajs.clientSideThrottleTime).toBe(25);
    if (version < 2) expect(decodedByKafkajs.throttleTime).toBeUndefined();
    const instanceIds = decodedByKafkajs.members.map((member: { groupInstanceId?: string | null }) => member.groupInstanceId);
    expect(instanceIds).toEqual(version >= 5 ? ['instance-7', null] : [undefined, undefined]);
  });

  it('v4 MEMBER_ID_REQUIRED carries the assigned member id to kafkajs', async () => {
    const { decode, parse } = kafkajs.response(4);
    const bytes = encoded(4, { ...response, errorCode: ERROR_CODES.MEMBER_ID_REQUIRED, generationId: -1, protocolName: '', leader: '', members: [] });
    await expect(parse(await decode(bytes))).rejects.toMatchObject({ name: 'KafkaJSMemberIdRequired', memberId: 'consumer-1-9a8b' });
  });

  it('refuses a version outside the range', () => {
    expect(() => encodeJoinGroupResponse(new KafkaWriter(), 6, response)).toThrow();
  });
});

describe('decodeJoinGroupRequest refuses malformed bodies', () => {
  async function validV5(): Promise<Buffer> {
    return kafkajs.requestBytes(5, {
      groupId: 'g',
      sessionTimeout: 1,
      rebalanceTimeout: 2,
      memberId: 'm',
      groupInstanceId: 'i',
      protocolType: 'consumer',
      groupProtocols: [{ name: 'range', metadata: Buffer.from([1, 2, 3]) }],
    });
  }

  // Every field is required, so every proper prefix of a valid body is a truncation.
  it('every truncation of a v5 body throws KafkaDecodeError', async () => {
    const bytes = await validV5();
    expect(prefixesNotRefused(bytes, (reader) => decodeJoinGroupRequest(reader, 5))).toEqual([]);
  });

  it.each<{ name: string; version: number; bytes: () => Buffer }>([
    { name: 'a version below the range', version: -1, bytes: () => Buffer.alloc(64) },
    { name: 'a version above the range', version: JOIN_GROUP_VERSIONS.max + 1, bytes: () => Buffer.alloc(64) },
    { name: 'a null group_id', version: 0, bytes: () => new KafkajsEncoder().writeInt16(-1).buffer },
    {
      name: 'null protocol metadata',
      version: 0,
      bytes: () => new KafkajsEncoder().writeString('g').writeInt32(1).writeString('').writeString('consumer').writeInt32(1).writeString('range').writeInt32(-1).buffer,
    },
    {
      name: 'a protocol count beyond the bytes left',
      version: 0,
      bytes: () => new KafkajsEncoder().writeString('g').writeInt32(1).writeString('').writeString('consumer').writeInt32(1000).buffer,
    },
  ])('$name', ({ version, bytes }) => {
    expect(() => decodeJoinGroupRequest(new KafkaReader(bytes()), version)).toThrow(KafkaDecodeError);
  });
});
