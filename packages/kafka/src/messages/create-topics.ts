/**
 * CreateTopics (key 19), CreateTopicsRequest.json / CreateTopicsResponse.json, versions 0-4 (none
 * flexible; flexibility starts at 5). Version 4 changes no byte, only meaning (KIP-464): -1 partitions
 * or replication factor asks for the broker's default even without a manual assignment.
 */
import type { KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';
import { requireRequestVersion, requireResponseVersion, type VersionRange } from './header';

export const CREATE_TOPICS_VERSIONS: VersionRange = { min: 0, max: 4 };

/** The first version in which each field that is not in every version appears. */
const FIRST_VERSION_WITH = {
  validateOnly: 1,
  errorMessage: 1,
  throttleTimeMs: 2,
} as const;

export interface CreatableReplicaAssignment {
  partitionIndex: number;
  brokerIds: number[];
}

export interface CreatableTopicConfig {
  name: string;
  value: string | null;
}

export interface CreatableTopic {
  name: string;
  /** -1 when the client relies on the assignment or the broker's default. */
  numPartitions: number;
  /** -1 when the client relies on the assignment or the broker's default. */
  replicationFactor: number;
  /** A manual assignment, or empty for the broker to choose. */
  assignments: CreatableReplicaAssignment[];
  configs: CreatableTopicConfig[];
}

/** A decoded CreateTopics request; `validateOnly` is false below version 1. */
export interface CreateTopicsRequest {
  topics: CreatableTopic[];
  timeoutMs: number;
  validateOnly: boolean;
}

export function decodeCreateTopicsRequest(reader: KafkaReader, version: number): CreateTopicsRequest {
  requireRequestVersion('CreateTopics', CREATE_TOPICS_VERSIONS, version);
  const topics = reader.array(
    (each): CreatableTopic => ({
      name: each.string('CreateTopics topic name'),
      numPartitions: each.int32('CreateTopics num_partitions'),
      replicationFactor: each.int16('CreateTopics replication_factor'),
      assignments: each.array(
        (inner) => ({
          partitionIndex: inner.int32('CreateTopics assignment partition_index'),
          brokerIds: inner.array((id) => id.int32('CreateTopics assignment broker_id'), 'CreateTopics assignment broker_ids'),
        }),
        'CreateTopics assignments',
      ),
      configs: each.array(
        (inner) => ({ name: inner.string('CreateTopics config name'), value: inner.nullableString('CreateTopics config value') }),
        'CreateTopics configs',
      ),
    }),
    'CreateTopics topics',
  );
  const timeoutMs = reader.int32('CreateTopics timeout_ms');
  const validateOnly = version >= FIRST_VERSION_WITH.validateOnly ? reader.boolean('CreateTopics validate_only') : false;
  return { topics, timeoutMs, validateOnly };
}

export interface CreatableTopicResult {
  name: string;
  errorCode: number;
  /** Written from version 1; null when absent. */
  errorMessage?: string | null;
}

/** A CreateTopics answer, one result per topic of the request. */
export interface CreateTopicsResponse {
  /** Written from version 2; 0 when absent. */
  throttleTimeMs?: number;
  topics: readonly CreatableTopicResult[];
}

/** Writes the body of a CreateTopics response (no header, no size). */
export function encodeCreateTopicsResponse(writer: KafkaWriter, version: number, response: CreateTopicsResponse): void {
  requireResponseVersion('CreateTopics', CREATE_TOPICS_VERSIONS, version);
  if (version >= FIRST_VERSION_WITH.throttleTimeMs) writer.int32(response.throttleTimeMs ?? 0);
  writer.array(response.topics, (each, topic) => {
    each.string(topic.name).int16(topic.errorCode);
    if (version >= FIRST_VERSION_WITH.errorMessage) each.nullableString(topic.errorMessage ?? null);
  });
}
