import { KafkaDecodeError } from '../wire/reader';
import {
  CONSUMER_PROTOCOL_SUBSCRIPTION_VERSIONS,
  decodeConsumerProtocolAssignment,
  decodeConsumerProtocolSubscription,
  encodeConsumerProtocolAssignment,
  encodeConsumerProtocolSubscription,
  type ConsumerProtocolAssignment,
  type ConsumerProtocolSubscription,
} from './consumer-protocol';
import { KafkajsEncoder, KafkajsMemberAssignment, KafkajsMemberMetadata, prefixesNotRefused } from './kafka-oracle.fixture';

// kafkajs's consumer protocol (MemberMetadata = subscription, MemberAssignment = assignment, both v0) is
// the oracle for v0. Later subscription versions are built field by field from
// ConsumerProtocolSubscription.json with kafkajs's primitive Encoder, an implementation independent of ours.

const owned = [
  { topic: 'orders', partitions: [0, 3] },
  { topic: 'payments', partitions: [] },
];

/** A subscription of `version` built field by field from the spec, with `trailing` bytes appended. */
function handBuiltSubscription(version: number, layout: number, trailing: Uint8Array = new Uint8Array(0)): Buffer {
  const encoder = new KafkajsEncoder().writeInt16(version).writeArray(['orders', 'payments']).writeBytes(Buffer.from('ud'));
  if (layout >= 1) encoder.writeArray(owned.map(({ topic, partitions }) => new KafkajsEncoder().writeString(topic).writeArray(partitions, 'int32')));
  if (layout >= 2) encoder.writeInt32(41);
  if (layout >= 3) encoder.writeString('eu-west-1a');
  return Buffer.concat([encoder.buffer, trailing]);
}

/** The subscription handBuiltSubscription(version, layout) carries: the fields the layout lacks at their defaults. */
function handBuiltSubscriptionFields(version: number, layout: number): ConsumerProtocolSubscription {
  return {
    version,
    topics: ['orders', 'payments'],
    userData: Buffer.from('ud'),
    ownedPartitions: owned,
    generationId: layout >= 2 ? 41 : -1,
    rackId: layout >= 3 ? 'eu-west-1a' : null,
  };
}

describe('ConsumerProtocolSubscription', () => {
  it('decodes what kafkajs sends (v0)', () => {
    const bytes: Buffer = KafkajsMemberMetadata.encode({ version: 0, topics: ['orders', 'payments'], userData: Buffer.from([7, 8]) });
    expect(decodeConsumerProtocolSubscription(bytes)).toEqual({
      version: 0,
      topics: ['orders', 'payments'],
      userData: Buffer.from([7, 8]),
      ownedPartitions: [],
      generationId: -1,
      rackId: null,
    });
  });

  it('encodes what kafkajs reads (v0)', () => {
    const bytes = encodeConsumerProtocolSubscription({ version: 0, topics: ['orders'], userData: Buffer.from('x'), ownedPartitions: owned, generationId: 4, rackId: 'r' });
    expect(KafkajsMemberMetadata.decode(Buffer.from(bytes))).toEqual({ version: 0, topics: ['orders'], userData: Buffer.from('x') });
  });

  // Each row proves that the fields a version adds are read in their place, and that a newer version
  // than mink knows reads with the newest layout while trailing fields are ignored.
  it.each<{ version: number; layout: number; trailing?: Buffer }>([
    { version: 1, layout: 1 },
    { version: 2, layout: 2 },
    { version: 3, layout: 3 },
    { version: 9, layout: 3, trailing: Buffer.from([0, 0, 0, 5, 1, 2]) },
  ])('decodes a hand-built v$version', ({ version, layout, trailing }) => {
    expect(decodeConsumerProtocolSubscription(handBuiltSubscription(version, layout, trailing))).toEqual(handBuiltSubscriptionFields(version, layout));
  });

  // Each row proves that encoding writes exactly the spec's fields for the version (byte-equal to the
  // hand-built vector) and that decoding gives back what was encoded.
  it.each([1, 2, 3])('encodes v%i as the spec lays it out and round-trips', (version) => {
    const subscription = handBuiltSubscriptionFields(version, version);
    const bytes = encodeConsumerProtocolSubscription(subscription);
    expect(Buffer.from(bytes)).toEqual(handBuiltSubscription(version, version));
    expect(decodeConsumerProtocolSubscription(bytes)).toEqual(subscription);
  });

  it('round-trips null user data and a null rack', () => {
    const subscription: ConsumerProtocolSubscription = { version: 3, topics: [], userData: null, ownedPartitions: [], generationId: -1, rackId: null };
    expect(decodeConsumerProtocolSubscription(encodeConsumerProtocolSubscription(subscription))).toEqual(subscription);
  });

  it.each([-1, CONSUMER_PROTOCOL_SUBSCRIPTION_VERSIONS.max + 1])('refuses to encode version %i', (version) => {
    expect(() => encodeConsumerProtocolSubscription({ version, topics: [], userData: null, ownedPartitions: [], generationId: -1, rackId: null })).toThrow(RangeError);
  });
});

describe('ConsumerProtocolAssignment', () => {
  it('decodes what kafkajs sends (v0)', () => {
    const bytes: Buffer = KafkajsMemberAssignment.encode({ version: 0, assignment: { orders: [0, 2, 4], payments: [1] }, userData: Buffer.from('u') });
    const expected: ConsumerProtocolAssignment = {
      version: 0,
      assignedPartitions: [
        { topic: 'orders', partitions: [0, 2, 4] },
        { topic: 'payments', partitions: [1] },
      ],
      userData: Buffer.from('u'),
    };
    expect(decodeConsumerProtocolAssignment(bytes)).toEqual(expected);
  });

  // Assignments have one layout for every version; each row proves kafkajs reads ours.
  it.each([0, 1, 2, 3])('encodes v%i in the layout kafkajs reads', (version) => {
    const bytes = encodeConsumerProtocolAssignment({ version, assignedPartitions: [{ topic: 'orders', partitions: [5, 1] }], userData: new Uint8Array(0) });
    expect(KafkajsMemberAssignment.decode(Buffer.from(bytes))).toEqual({ version, assignment: { orders: [5, 1] }, userData: Buffer.alloc(0) });
  });

  it('round-trips null user data; a newer version with trailing bytes reads with the known layout', () => {
    const assignment: ConsumerProtocolAssignment = { version: 3, assignedPartitions: [{ topic: 't', partitions: [] }], userData: null };
    const bytes = encodeConsumerProtocolAssignment(assignment);
    expect(decodeConsumerProtocolAssignment(bytes)).toEqual(assignment);
    const newer = Buffer.concat([Buffer.from([0, 7]), Buffer.from(bytes).subarray(2), Buffer.from([1, 2, 3])]);
    expect(decodeConsumerProtocolAssignment(newer)).toEqual({ ...assignment, version: 7 });
  });
});

describe('consumer protocol decoders refuse malformed bytes', () => {
  // Every field is required, so every proper prefix of a valid blob is a truncation.
  it.each<{ name: string; bytes: Buffer; decode: (bytes: Uint8Array) => unknown }>([
    { name: 'a v3 subscription', bytes: handBuiltSubscription(3, 3), decode: decodeConsumerProtocolSubscription },
    { name: 'a v0 assignment', bytes: KafkajsMemberAssignment.encode({ version: 0, assignment: { orders: [1] } }), decode: decodeConsumerProtocolAssignment },
  ])('every truncation of $name throws KafkaDecodeError (including empty bytes)', ({ bytes, decode }) => {
    expect(prefixesNotRefused(bytes, (_reader, prefix) => decode(prefix))).toEqual([]);
  });

  it.each<{ name: string; bytes: Buffer; decode: (bytes: Uint8Array) => unknown }>([
    { name: 'a negative subscription version', bytes: new KafkajsEncoder().writeInt16(-1).writeArray([]).writeBytes(null).buffer, decode: decodeConsumerProtocolSubscription },
    { name: 'a negative assignment version', bytes: new KafkajsEncoder().writeInt16(-2).writeArray([]).writeBytes(null).buffer, decode: decodeConsumerProtocolAssignment },
    { name: 'a null topic', bytes: new KafkajsEncoder().writeInt16(0).writeInt32(1).writeInt16(-1).writeBytes(null).buffer, decode: decodeConsumerProtocolSubscription },
  ])('$name', ({ bytes, decode }) => {
    expect(() => decode(bytes)).toThrow(KafkaDecodeError);
  });
});
