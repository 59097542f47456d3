import { ERROR_CODES } from '../wire/codes';
import { KafkaDecodeError, KafkaReader } from '../wire/reader';
import { KafkaWriter } from '../wire/writer';
import { decodeSyncGroupRequest, encodeSyncGroupResponse, SYNC_GROUP_VERSIONS } from './sync-group';
import { bytesEncoder, kafkajsApi, KafkajsEncoder, KafkajsMemberAssignment, prefixesNotRefused, wholeBodyDecoder } from './kafka-oracle.fixture';

// kafkajs is the oracle: its client-side request encoders and response decoders.
const kafkajs = kafkajsApi('syncGroup');
const decoded = wholeBodyDecoder(decodeSyncGroupRequest);
const encoded = bytesEncoder(encodeSyncGroupResponse);

const assignmentOne: Buffer = KafkajsMemberAssignment.encode({ version: 0, assignment: { orders: [0, 2], payments: [1] } });
const assignmentTwo: Buffer = KafkajsMemberAssignment.encode({ version: 0, assignment: { orders: [1] }, userData: Buffer.from('x') });

describe('decodeSyncGroupRequest against kafkajs', () => {
  // Each row proves that a leader's SyncGroup as kafkajs sends it decodes to the fields it was given.
  it.each([0, 1, 2, 3])('v%i', async (version) => {
    const bytes = await kafkajs.requestBytes(version, {
      groupId: 'orders-consumers',
      generationId: 12,
      memberId: 'consumer-1',
      groupInstanceId: 'instance-1',
      groupAssignment: [
        { memberId: 'consumer-1', memberAssignment: assignmentOne },
        { memberId: 'consumer-2', memberAssignment: assignmentTwo },
      ],
    });
    expect(decoded(bytes, version)).toEqual({
      groupId: 'orders-consumers',
      generationId: 12,
      memberId: 'consumer-1',
      groupInstanceId: version >= 3 ? 'instance-1' : null,
      assignments: [
        { memberId: 'consumer-1', assignment: assignmentOne },
        { memberId: 'consumer-2', assignment: assignmentTwo },
      ],
    });
  });

  it('a follower sends no assignments and (v3) a null group_instance_id', async () => {
    const bytes = await kafkajs.requestBytes(3, { groupId: 'g', generationId: 1, memberId: 'consumer-2', groupAssignment: [] });
    expect(decodeSyncGroupRequest(new KafkaReader(bytes), 3)).toEqual({ groupId: 'g', generationId: 1, memberId: 'consumer-2', groupInstanceId: null, assignments: [] });
  });
});

describe('encodeSyncGroupResponse against kafkajs', () => {
  // Each row proves that kafkajs reads back the member's assignment and, from v1, the throttle time.
  it.each([0, 1, 2, 3])('v%i', async (version) => {
    const { decode, parse } = kafkajs.response(version);
    const decodedByKafkajs = await parse(await decode(encoded(version, { throttleTimeMs: 40, errorCode: ERROR_CODES.NONE, assignment: assignmentOne })));
    expect(decodedByKafkajs.errorCode).toBe(0);
    expect(decodedByKafkajs.memberAssignment).toEqual(assignmentOne);
    expect(KafkajsMemberAssignment.decode(decodedByKafkajs.memberAssignment)).toEqual({ version: 0, assignment: { orders: [0, 2], payments: [1] }, userData: Buffer.alloc(0) });
    if (version === 0) expect(decodedByKafkajs.throttleTime).toBeUndefined();
    if (version === 1) expect(decodedByKafkajs.throttleTime).toBe(40);
    if (version >= 2) expect(decodedByKafkajs.clientSideThrottleTime).toBe(40);
  });

  it('an error reaches kafkajs as that error', async () => {
    const { decode, parse } = kafkajs.response(3);
    const bytes = encoded(3, { throttleTimeMs: 0, errorCode: ERROR_CODES.REBALANCE_IN_PROGRESS, assignment: new Uint8Array(0) });
    await expect(parse(await decode(bytes))).rejects.toMatchObject({ type: 'REBALANCE_IN_PROGRESS' });
  });

  it('refuses a version outside the range', () => {
    expect(() => encodeSyncGroupResponse(new KafkaWriter(), 4, { throttleTimeMs: 0, errorCode: 0, assignment: new Uint8Array(0) })).toThrow();
  });
});

describe('decodeSyncGroupRequest refuses malformed bodies', () => {
  // Every field is required, so every proper prefix of a valid body is a truncation.
  it('every truncation of a v3 body throws KafkaDecodeError', async () => {
    const bytes = await kafkajs.requestBytes(3, {
      groupId: 'g',
      generationId: 1,
      memberId: 'm',
      groupInstanceId: 'i',
      groupAssignment: [{ memberId: 'm', memberAssignment: Buffer.from([9, 9]) }],
    });
    expect(prefixesNotRefused(bytes, (reader) => decodeSyncGroupRequest(reader, 3))).toEqual([]);
  });

  it.each<{ name: string; version: number; bytes: () => Buffer }>([
    { name: 'a version below the range', version: -1, bytes: () => Buffer.alloc(64) },
    { name: 'a version above the range', version: SYNC_GROUP_VERSIONS.max + 1, bytes: () => Buffer.alloc(64) },
    { name: 'a null member_id', version: 0, bytes: () => new KafkajsEncoder().writeString('g').writeInt32(1).writeInt16(-1).writeInt32(0).buffer },
    { name: 'a null assignment', version: 0, bytes: () => new KafkajsEncoder().writeString('g').writeInt32(1).writeString('m').writeInt32(1).writeString('m').writeInt32(-1).buffer },
  ])('$name', ({ version, bytes }) => {
    expect(() => decodeSyncGroupRequest(new KafkaReader(bytes()), version)).toThrow(KafkaDecodeError);
  });
});
