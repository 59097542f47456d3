import { ERROR_CODES } from '../wire/codes';
import { KafkaDecodeError, KafkaReader } from '../wire/reader';
import { KafkaWriter } from '../wire/writer';
import { AUTHORIZED_OPERATIONS_OMITTED, decodeDescribeGroupsRequest, DESCRIBE_GROUPS_VERSIONS, encodeDescribeGroupsResponse, type DescribeGroupsResponse } from './describe-groups';
import { bytesEncoder, kafkajsApi, KafkajsDecoder, KafkajsEncoder, KafkajsMemberAssignment, KafkajsMemberMetadata, prefixesNotRefused, wholeBodyDecoder } from './kafka-oracle.fixture';

// kafkajs is the oracle for v0–2: its client-side request encoders and response decoders. For
// v3–4, which kafkajs lacks, vectors are built field by field from the spec with kafkajs's primitive
// Encoder/Decoder, an implementation independent of ours.
const kafkajs = kafkajsApi('describeGroups');
const decoded = wholeBodyDecoder(decodeDescribeGroupsRequest);
const encoded = bytesEncoder(encodeDescribeGroupsResponse);

const metadata: Buffer = KafkajsMemberMetadata.encode({ version: 0, topics: ['orders'] });
const assignment: Buffer = KafkajsMemberAssignment.encode({ version: 0, assignment: { orders: [0, 1] } });

const response: DescribeGroupsResponse = {
  throttleTimeMs: 33,
  groups: [
    {
      errorCode: ERROR_CODES.NONE,
      groupId: 'orders-consumers',
      groupState: 'Stable',
      protocolType: 'consumer',
      protocolData: 'RoundRobinAssigner',
      members: [
        { memberId: 'consumer-1', groupInstanceId: 'instance-1', clientId: 'app', clientHost: '/10.0.0.7', memberMetadata: metadata, memberAssignment: assignment },
        { memberId: 'consumer-2', groupInstanceId: null, clientId: 'app', clientHost: '/10.0.0.8', memberMetadata: new Uint8Array(0), memberAssignment: new Uint8Array(0) },
      ],
      authorizedOperations: 0b1_0000_0100,
    },
    { errorCode: ERROR_CODES.NONE, groupId: 'unknown', groupState: 'Dead', protocolType: '', protocolData: '', members: [], authorizedOperations: AUTHORIZED_OPERATIONS_OMITTED },
  ],
};

describe('decodeDescribeGroupsRequest', () => {
  // Each row proves that the group ids kafkajs asks for decode in order.
  it.each([0, 1, 2])('v%i against kafkajs', async (version) => {
    expect(decoded(await kafkajs.requestBytes(version, { groupIds: ['orders-consumers', 'unknown'] }), version)).toEqual({ groups: ['orders-consumers', 'unknown'], includeAuthorizedOperations: false });
  });

  // v3–4 append include_authorized_operations (a boolean) to the v0 layout.
  it.each<{ version: number; include: boolean }>([
    { version: 3, include: true },
    { version: 4, include: false },
    { version: 4, include: true },
  ])('v$version against a hand-built vector, include_authorized_operations $include', ({ version, include }) => {
    expect(decoded(new KafkajsEncoder().writeArray(['orders-consumers', 'unknown']).writeBoolean(include).buffer, version)).toEqual({ groups: ['orders-consumers', 'unknown'], includeAuthorizedOperations: include });
  });
});

describe('encodeDescribeGroupsResponse', () => {
  // Each row proves that kafkajs reads back every group and member field (and from v1 the throttle time).
  it.each<{ version: number; throttle: object }>([
    { version: 0, throttle: {} },
    { version: 1, throttle: { throttleTime: 33 } },
    { version: 2, throttle: { throttleTime: 0, clientSideThrottleTime: 33 } },
  ])('v$version against kafkajs', async ({ version, throttle }) => {
    const { decode, parse } = kafkajs.response(version);
    const decodedByKafkajs = await parse(await decode(encoded(version, response)));
    expect(decodedByKafkajs).toEqual({
      ...throttle,
      groups: [
        {
          errorCode: 0,
          groupId: 'orders-consumers',
          state: 'Stable',
          protocolType: 'consumer',
          protocol: 'RoundRobinAssigner',
          members: [
            { memberId: 'consumer-1', clientId: 'app', clientHost: '/10.0.0.7', memberMetadata: metadata, memberAssignment: assignment },
            { memberId: 'consumer-2', clientId: 'app', clientHost: '/10.0.0.8', memberMetadata: Buffer.alloc(0), memberAssignment: Buffer.alloc(0) },
          ],
        },
        { errorCode: 0, groupId: 'unknown', state: 'Dead', protocolType: '', protocol: '', members: [] },
      ],
    });
    expect(KafkajsMemberAssignment.decode(decodedByKafkajs.groups[0].members[0].memberAssignment).assignment).toEqual({ orders: [0, 1] });
  });

  it('a group error reaches kafkajs as that error', async () => {
    const { decode, parse } = kafkajs.response(2);
    const failed = { throttleTimeMs: 0, groups: [{ ...response.groups[1]!, errorCode: ERROR_CODES.GROUP_AUTHORIZATION_FAILED }] };
    await expect(parse(await decode(encoded(2, failed)))).rejects.toMatchObject({ type: 'GROUP_AUTHORIZATION_FAILED' });
  });

  /** Reads a response field by field from DescribeGroupsResponse.json. */
  function readBySpec(bytes: Uint8Array, version: number): DescribeGroupsResponse {
    const decoder = new KafkajsDecoder(Buffer.from(bytes));
    const throttleTimeMs = decoder.readInt32();
    const groups = decoder.readArray((group: typeof decoder) => ({
      errorCode: group.readInt16(),
      groupId: group.readString(),
      groupState: group.readString(),
      protocolType: group.readString(),
      protocolData: group.readString(),
      members: group.readArray((member: typeof decoder) => ({
        memberId: member.readString(),
        groupInstanceId: version >= 4 ? member.readString() : null,
        clientId: member.readString(),
        clientHost: member.readString(),
        memberMetadata: member.readBytes(),
        memberAssignment: member.readBytes(),
      })),
      authorizedOperations: group.readInt32(),
    }));
    expect(decoder.offset).toBe(bytes.length);
    return { throttleTimeMs, groups };
  }

  // v3 appends authorized_operations to each group; v4 adds group_instance_id after each member_id.
  it('v3 against the spec field list', () => {
    const v3 = { ...response, groups: response.groups.map((group) => ({ ...group, members: group.members.map((member) => ({ ...member, groupInstanceId: null })) })) };
    expect(readBySpec(encoded(3, response), 3)).toEqual(v3);
  });

  it('v4 against the spec field list', () => {
    expect(readBySpec(encoded(4, response), 4)).toEqual(response);
  });

  it('refuses a version outside the range', () => {
    expect(() => encodeDescribeGroupsResponse(new KafkaWriter(), 5, response)).toThrow();
  });
});

describe('decodeDescribeGroupsRequest refuses malformed bodies', () => {
  // Every field is required, so every proper prefix of a valid body is a truncation.
  it.each([0, 3])('every truncation of a v%i body throws KafkaDecodeError', (version) => {
    const body = new KafkajsEncoder().writeArray(['a', 'bc']);
    const bytes: Buffer = version >= 3 ? body.writeBoolean(true).buffer : body.buffer;
    expect(prefixesNotRefused(bytes, (reader) => decodeDescribeGroupsRequest(reader, version))).toEqual([]);
  });

  it.each<{ name: string; version: number; bytes: () => Buffer }>([
    { name: 'a version below the range', version: -1, bytes: () => new KafkajsEncoder().writeArray([]).buffer },
    { name: 'a version above the range', version: DESCRIBE_GROUPS_VERSIONS.max + 1, bytes: () => new KafkajsEncoder().writeArray([]).writeBoolean(false).buffer },
    { name: 'a null group id', version: 0, bytes: () => new KafkajsEncoder().writeInt32(1).writeInt16(-1).buffer },
    { name: 'a group count beyond the bytes left', version: 0, bytes: () => new KafkajsEncoder().writeInt32(64).writeString('a').buffer },
  ])('$name', ({ version, bytes }) => {
    expect(() => decodeDescribeGroupsRequest(new KafkaReader(bytes()), version)).toThrow(KafkaDecodeError);
  });
});
