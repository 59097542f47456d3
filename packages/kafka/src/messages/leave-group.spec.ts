import { ERROR_CODES } from '../wire/codes';
import { KafkaDecodeError, KafkaReader } from '../wire/reader';
import { KafkaWriter } from '../wire/writer';
import { decodeLeaveGroupRequest, encodeLeaveGroupResponse, LEAVE_GROUP_VERSIONS, type LeaveGroupResponse } from './leave-group';
import { bytesEncoder, kafkajsApi, KafkajsEncoder, prefixesNotRefused, wholeBodyDecoder } from './kafka-oracle.fixture';

// kafkajs is the oracle: its client-side request encoders and response decoders.
const kafkajs = kafkajsApi('leaveGroup');
const decoded = wholeBodyDecoder(decodeLeaveGroupRequest);
const encoded = bytesEncoder(encodeLeaveGroupResponse);

describe('decodeLeaveGroupRequest against kafkajs', () => {
  // Each row proves that v0–2 (one member id) read as a batch of one member.
  it.each([0, 1, 2])('v%i', async (version) => {
    const bytes = await kafkajs.requestBytes(version, { groupId: 'orders-consumers', memberId: 'consumer-1' });
    expect(decoded(bytes, version)).toEqual({ groupId: 'orders-consumers', members: [{ memberId: 'consumer-1', groupInstanceId: null }] });
  });

  it('v3 reads the batch, with and without instance ids', async () => {
    const bytes = await kafkajs.requestBytes(3, {
      groupId: 'orders-consumers',
      members: [{ memberId: 'consumer-1' }, { memberId: '', groupInstanceId: 'instance-2' }, { memberId: 'consumer-3', groupInstanceId: 'instance-3' }],
    });
    expect(decoded(bytes, 3)).toEqual({
      groupId: 'orders-consumers',
      members: [
        { memberId: 'consumer-1', groupInstanceId: null },
        { memberId: '', groupInstanceId: 'instance-2' },
        { memberId: 'consumer-3', groupInstanceId: 'instance-3' },
      ],
    });
  });
});

describe('encodeLeaveGroupResponse against kafkajs', () => {
  const removed: LeaveGroupResponse = {
    throttleTimeMs: 30,
    errorCode: ERROR_CODES.NONE,
    members: [
      { memberId: 'consumer-1', groupInstanceId: null, errorCode: ERROR_CODES.NONE },
      { memberId: 'consumer-3', groupInstanceId: 'instance-3', errorCode: ERROR_CODES.NONE },
    ],
  };

  // Each row proves that kafkajs reads back what the version carries.
  it.each<{ version: number; expected: object }>([
    { version: 0, expected: { errorCode: 0 } },
    { version: 1, expected: { errorCode: 0, throttleTime: 30 } },
    { version: 2, expected: { errorCode: 0, throttleTime: 0, clientSideThrottleTime: 30 } },
    {
      version: 3,
      expected: {
        errorCode: 0,
        throttleTime: 0,
        clientSideThrottleTime: 30,
        members: [
          { memberId: 'consumer-1', groupInstanceId: null, errorCode: 0 },
          { memberId: 'consumer-3', groupInstanceId: 'instance-3', errorCode: 0 },
        ],
      },
    },
  ])('v$version', async ({ version, expected }) => {
    const { decode, parse } = kafkajs.response(version);
    expect(await parse(await decode(encoded(version, removed)))).toEqual(expected);
  });

  // v0–2 have no per-member outcomes, so a member's error must surface as the group-level one.
  it.each<{ name: string; version: number; response: LeaveGroupResponse; errorCode: number }>([
    {
      name: 'v1: a member error replaces a NONE group error',
      version: 1,
      response: { throttleTimeMs: 0, errorCode: ERROR_CODES.NONE, members: [{ memberId: 'gone', groupInstanceId: null, errorCode: ERROR_CODES.UNKNOWN_MEMBER_ID }] },
      errorCode: ERROR_CODES.UNKNOWN_MEMBER_ID,
    },
    {
      name: 'v1: a group error wins over a member error',
      version: 1,
      response: { throttleTimeMs: 0, errorCode: ERROR_CODES.NOT_COORDINATOR, members: [{ memberId: 'gone', groupInstanceId: null, errorCode: ERROR_CODES.UNKNOWN_MEMBER_ID }] },
      errorCode: ERROR_CODES.NOT_COORDINATOR,
    },
    {
      name: 'v3: the member error stays on the member',
      version: 3,
      response: { throttleTimeMs: 0, errorCode: ERROR_CODES.NONE, members: [{ memberId: 'gone', groupInstanceId: null, errorCode: ERROR_CODES.UNKNOWN_MEMBER_ID }] },
      errorCode: ERROR_CODES.NONE,
    },
  ])('$name', async ({ version, response, errorCode }) => {
    const decodedByKafkajs = await kafkajs.response(version).decode(encoded(version, response));
    expect(decodedByKafkajs.errorCode).toBe(errorCode);
    if (version === 3) expect(decodedByKafkajs.members[0].errorCode).toBe(ERROR_CODES.UNKNOWN_MEMBER_ID);
  });

  it('refuses a version outside the range', () => {
    expect(() => encodeLeaveGroupResponse(new KafkaWriter(), 4, removed)).toThrow();
  });
});

describe('decodeLeaveGroupRequest refuses malformed bodies', () => {
  // Every field is required, so every proper prefix of a valid body is a truncation.
  it.each<{ version: number; fields: object }>([
    { version: 0, fields: { groupId: 'g', memberId: 'm' } },
    { version: 3, fields: { groupId: 'g', members: [{ memberId: 'm', groupInstanceId: 'i' }] } },
  ])('every truncation of a v$version body throws KafkaDecodeError', async ({ version, fields }) => {
    const bytes = await kafkajs.requestBytes(version, fields);
    expect(prefixesNotRefused(bytes, (reader) => decodeLeaveGroupRequest(reader, version))).toEqual([]);
  });

  it.each<{ name: string; version: number; bytes: () => Buffer }>([
    { name: 'a version below the range', version: -1, bytes: () => Buffer.alloc(64) },
    { name: 'a version above the range', version: LEAVE_GROUP_VERSIONS.max + 1, bytes: () => Buffer.alloc(64) },
    { name: 'v3: a null member_id', version: 3, bytes: () => new KafkajsEncoder().writeString('g').writeInt32(1).writeInt16(-1).writeInt16(-1).buffer },
    { name: 'v3: a member count beyond the bytes left', version: 3, bytes: () => new KafkajsEncoder().writeString('g').writeInt32(100).buffer },
  ])('$name', ({ version, bytes }) => {
    expect(() => decodeLeaveGroupRequest(new KafkaReader(bytes()), version)).toThrow(KafkaDecodeError);
  });
});
