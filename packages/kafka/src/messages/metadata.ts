/**
 * Metadata (key 3), MetadataRequest.json / MetadataResponse.json, versions 0-8 (none flexible).
 */
import type { KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';
import { requireRequestVersion, requireResponseVersion, type VersionRange } from './header';

export const METADATA_VERSIONS: VersionRange = { min: 0, max: 8 };

/** The first version in which each field that is not in every version appears. */
const FIRST_VERSION_WITH = {
  nullableTopics: 1,
  allowAutoTopicCreation: 4,
  authorizedOperations: 8,
  throttleTimeMs: 3,
  rack: 1,
  clusterId: 2,
  controllerId: 1,
  isInternal: 1,
  leaderEpoch: 7,
  offlineReplicas: 5,
} as const;

/** The value of an authorized-operations field when the client did not ask for it (the spec's default). */
export const AUTHORIZED_OPERATIONS_OMITTED = -2147483648;

/**
 * A decoded Metadata request. Fields a version lacks take the spec's default, so the handler need not
 * look at the version.
 */
export interface MetadataRequest {
  /**
   * The topics asked for, or null for all topics. Version 0 has no null array and asks for all topics
   * with an empty one, which is read as null here; from version 1 an empty array asks for no topic.
   */
  topics: string[] | null;
  /** True below version 4, whose brokers auto-created topics by their own configuration. */
  allowAutoTopicCreation: boolean;
  includeClusterAuthorizedOperations: boolean;
  includeTopicAuthorizedOperations: boolean;
}

export function decodeMetadataRequest(reader: KafkaReader, version: number): MetadataRequest {
  requireRequestVersion('Metadata', METADATA_VERSIONS, version);
  const readName = (each: KafkaReader): string => each.string('Metadata topic name');
  let topics: string[] | null;
  if (version >= FIRST_VERSION_WITH.nullableTopics) {
    topics = reader.nullableArray(readName, 'Metadata topics');
  } else {
    const listed = reader.array(readName, 'Metadata topics');
    topics = listed.length === 0 ? null : listed;
  }
  const allowAutoTopicCreation = version >= FIRST_VERSION_WITH.allowAutoTopicCreation ? reader.boolean('Metadata allow_auto_topic_creation') : true;
  let includeClusterAuthorizedOperations = false;
  let includeTopicAuthorizedOperations = false;
  if (version >= FIRST_VERSION_WITH.authorizedOperations) {
    includeClusterAuthorizedOperations = reader.boolean('Metadata include_cluster_authorized_operations');
    includeTopicAuthorizedOperations = reader.boolean('Metadata include_topic_authorized_operations');
  }
  return { topics, allowAutoTopicCreation, includeClusterAuthorizedOperations, includeTopicAuthorizedOperations };
}

export interface MetadataBroker {
  nodeId: number;
  host: string;
  port: number;
  /** Written from version 1; null (no rack) when absent. */
  rack?: string | null;
}

export interface MetadataPartition {
  errorCode: number;
  partitionIndex: number;
  leaderId: number;
  /** Written from version 7; -1 (unknown) when absent. */
  leaderEpoch?: number;
  replicaNodes: readonly number[];
  isrNodes: readonly number[];
  /** Written from version 5; empty when absent. */
  offlineReplicas?: readonly number[];
}

export interface MetadataTopic {
  errorCode: number;
  name: string;
  /** Written from version 1; false when absent. */
  isInternal?: boolean;
  partitions: readonly MetadataPartition[];
  /** Written from version 8; AUTHORIZED_OPERATIONS_OMITTED when absent. */
  topicAuthorizedOperations?: number;
}

/** A Metadata answer. Optional fields are those some versions lack; each states its default. */
export interface MetadataResponse {
  /** Written from version 3; 0 when absent. */
  throttleTimeMs?: number;
  brokers: readonly MetadataBroker[];
  /** Written from version 2; null when absent. */
  clusterId?: string | null;
  /** Written from version 1; -1 (no controller known) when absent. */
  controllerId?: number;
  topics: readonly MetadataTopic[];
  /** Written from version 8; AUTHORIZED_OPERATIONS_OMITTED when absent. */
  clusterAuthorizedOperations?: number;
}

const writeInt32 = (writer: KafkaWriter, value: number): void => void writer.int32(value);

/** Writes the body of a Metadata response (no header, no size). */
export function encodeMetadataResponse(writer: KafkaWriter, version: number, response: MetadataResponse): void {
  requireResponseVersion('Metadata', METADATA_VERSIONS, version);
  if (version >= FIRST_VERSION_WITH.throttleTimeMs) writer.int32(response.throttleTimeMs ?? 0);
  writer.array(response.brokers, (each, broker) => {
    each.int32(broker.nodeId).string(broker.host).int32(broker.port);
    if (version >= FIRST_VERSION_WITH.rack) each.nullableString(broker.rack ?? null);
  });
  if (version >= FIRST_VERSION_WITH.clusterId) writer.nullableString(response.clusterId ?? null);
  if (version >= FIRST_VERSION_WITH.controllerId) writer.int32(response.controllerId ?? -1);
  writer.array(response.topics, (each, topic) => {
    each.int16(topic.errorCode).string(topic.name);
    if (version >= FIRST_VERSION_WITH.isInternal) each.boolean(topic.isInternal ?? false);
    each.array(topic.partitions, (inner, partition) => {
      inner.int16(partition.errorCode).int32(partition.partitionIndex).int32(partition.leaderId);
      if (version >= FIRST_VERSION_WITH.leaderEpoch) inner.int32(partition.leaderEpoch ?? -1);
      inner.array(partition.replicaNodes, writeInt32).array(partition.isrNodes, writeInt32);
      if (version >= FIRST_VERSION_WITH.offlineReplicas) inner.array(partition.offlineReplicas ?? [], writeInt32);
    });
    if (version >= FIRST_VERSION_WITH.authorizedOperations) each.int32(topic.topicAuthorizedOperations ?? AUTHORIZED_OPERATIONS_OMITTED);
  });
  if (version >= FIRST_VERSION_WITH.authorizedOperations) writer.int32(response.clusterAuthorizedOperations ?? AUTHORIZED_OPERATIONS_OMITTED);
}
