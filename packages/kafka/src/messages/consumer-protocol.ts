/**
 * The consumer protocol: the bytes that consumers put inside JoinGroup's protocol metadata (a
 * subscription) and SyncGroup's assignment (an assignment) when `protocol_type` is "consumer". The group
 * coordinator treats them as opaque while running a rebalance; it reads them only to answer
 * DescribeGroups-style questions (which topics a member subscribes to, which partitions it holds).
 *
 * Each blob starts with its own int16 version, independent of the API versions. A newer version than
 * mink knows is read as the newest layout it knows and the rest ignored: the spec promises that new
 * versions only append fields, and Java consumers read them that way.
 */
import { KafkaDecodeError, KafkaReader } from '../wire/reader';
import { KafkaWriter } from '../wire/writer';

export const CONSUMER_PROTOCOL_SUBSCRIPTION_VERSIONS = { min: 0, max: 3 } as const;
export const CONSUMER_PROTOCOL_ASSIGNMENT_VERSIONS = { min: 0, max: 3 } as const;

type SubscriptionField = 'ownedPartitions' | 'generationId' | 'rackId';

/** The subscription versions that carry each field added after v0 (assignments have had one layout). */
const SUBSCRIPTION_FIELD_VERSIONS: Record<SubscriptionField, { since: number }> = {
  // Partitions the member held before this rebalance, for cooperative rebalancing (KIP-429).
  ownedPartitions: { since: 1 },
  // The generation the owned partitions belong to, so stale claims can be discarded (KIP-792).
  generationId: { since: 2 },
  // The member's rack, for rack-aware assignors (KIP-881).
  rackId: { since: 3 },
};

function carries(field: SubscriptionField, version: number): boolean {
  return version >= SUBSCRIPTION_FIELD_VERSIONS[field].since;
}

/** Partitions of one topic. */
export interface ConsumerProtocolTopicPartitions {
  topic: string;
  partitions: number[];
}

/**
 * What a consumer subscribes to, from JoinGroup. Fields a version lacks read as the spec's defaults: no
 * owned partitions, generation -1, rack null.
 */
export interface ConsumerProtocolSubscription {
  /** As written by the member, which may be newer than CONSUMER_PROTOCOL_SUBSCRIPTION_VERSIONS.max. */
  version: number;
  topics: string[];
  /** Assignor-specific bytes (e.g. the sticky assignor's previous assignment); null when absent. */
  userData: Uint8Array | null;
  ownedPartitions: ConsumerProtocolTopicPartitions[];
  generationId: number;
  rackId: string | null;
}

/** What the leader assigned to a consumer, from SyncGroup. */
export interface ConsumerProtocolAssignment {
  /** As written by the leader, which may be newer than CONSUMER_PROTOCOL_ASSIGNMENT_VERSIONS.max. */
  version: number;
  assignedPartitions: ConsumerProtocolTopicPartitions[];
  userData: Uint8Array | null;
}

function readTopicPartitions(reader: KafkaReader, what: string): ConsumerProtocolTopicPartitions[] {
  return reader.array(
    (item) => ({
      topic: item.string(`${what}.topic`),
      partitions: item.array((partition) => partition.int32(`${what}.partitions`), `${what}.partitions`),
    }),
    what,
  );
}

function writeTopicPartitions(writer: KafkaWriter, topics: readonly ConsumerProtocolTopicPartitions[]): void {
  writer.array(topics, (item, { topic, partitions }) => {
    item.string(topic).array(partitions, (partition, index) => {
      partition.int32(index);
    });
  });
}

/**
 * Reads the blob's version, refusing negative ones. A newer version than mink knows needs no special case:
 * it carries every field mink knows (each field exists from some version on), and what follows is ignored.
 */
function readVersion(reader: KafkaReader, what: string, known: { min: number }): number {
  const version = reader.int16(`${what} version`);
  if (version < known.min) throw new KafkaDecodeError(`${what}: version ${version} is below ${known.min}`);
  return version;
}

/** Reads a subscription from a JoinGroup protocol's metadata bytes. Bytes after the known fields are ignored. */
export function decodeConsumerProtocolSubscription(bytes: Uint8Array): ConsumerProtocolSubscription {
  const reader = new KafkaReader(bytes);
  const version = readVersion(reader, 'ConsumerProtocolSubscription', CONSUMER_PROTOCOL_SUBSCRIPTION_VERSIONS);
  const topics = reader.array((item) => item.string('ConsumerProtocolSubscription topics'), 'ConsumerProtocolSubscription topics');
  const userData = reader.nullableBytes('ConsumerProtocolSubscription user_data');
  const ownedPartitions = carries('ownedPartitions', version) ? readTopicPartitions(reader, 'ConsumerProtocolSubscription owned_partitions') : [];
  const generationId = carries('generationId', version) ? reader.int32('ConsumerProtocolSubscription generation_id') : -1;
  const rackId = carries('rackId', version) ? reader.nullableString('ConsumerProtocolSubscription rack_id') : null;
  return { version, topics, userData, ownedPartitions, generationId, rackId };
}

/** Writes a subscription at its `version` (which must be one mink knows); fields the version lacks are left out. */
export function encodeConsumerProtocolSubscription(subscription: ConsumerProtocolSubscription): Uint8Array {
  const { version } = subscription;
  const known = CONSUMER_PROTOCOL_SUBSCRIPTION_VERSIONS;
  if (!Number.isInteger(version) || version < known.min || version > known.max) throw new RangeError(`ConsumerProtocolSubscription: cannot encode version ${version}`);
  const writer = new KafkaWriter().int16(version);
  writer.array(subscription.topics, (item, topic) => {
    item.string(topic);
  });
  writer.nullableBytes(subscription.userData);
  if (carries('ownedPartitions', version)) writeTopicPartitions(writer, subscription.ownedPartitions);
  if (carries('generationId', version)) writer.int32(subscription.generationId);
  if (carries('rackId', version)) writer.nullableString(subscription.rackId);
  return writer.toBytes();
}

/**
 * Reads an assignment from SyncGroup assignment bytes. Bytes after the known fields are ignored. Empty
 * bytes (what a member holds before its first SyncGroup) are not an assignment and throw: check first.
 */
export function decodeConsumerProtocolAssignment(bytes: Uint8Array): ConsumerProtocolAssignment {
  const reader = new KafkaReader(bytes);
  const version = readVersion(reader, 'ConsumerProtocolAssignment', CONSUMER_PROTOCOL_ASSIGNMENT_VERSIONS);
  const assignedPartitions = readTopicPartitions(reader, 'ConsumerProtocolAssignment assigned_partitions');
  const userData = reader.nullableBytes('ConsumerProtocolAssignment user_data');
  return { version, assignedPartitions, userData };
}

/** Writes an assignment at its `version` (which must be one mink knows). */
export function encodeConsumerProtocolAssignment(assignment: ConsumerProtocolAssignment): Uint8Array {
  const { version } = assignment;
  const known = CONSUMER_PROTOCOL_ASSIGNMENT_VERSIONS;
  if (!Number.isInteger(version) || version < known.min || version > known.max) throw new RangeError(`ConsumerProtocolAssignment: cannot encode version ${version}`);
  const writer = new KafkaWriter().int16(version);
  writeTopicPartitions(writer, assignment.assignedPartitions);
  writer.nullableBytes(assignment.userData);
  return writer.toBytes();
}
