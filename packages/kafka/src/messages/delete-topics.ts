/**
 * DeleteTopics (key 20), DeleteTopicsRequest.json / DeleteTopicsResponse.json, versions 0-3 (none
 * flexible). The requests of all four versions are the same; version 3 only allows the answer
 * TOPIC_DELETION_DISABLED.
 */
import type { KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';
import { requireRequestVersion, requireResponseVersion, type VersionRange } from './header';

export const DELETE_TOPICS_VERSIONS: VersionRange = { min: 0, max: 3 };

/** The first version in which each field that is not in every version appears. */
const FIRST_VERSION_WITH = {
  throttleTimeMs: 1,
} as const;

export interface DeleteTopicsRequest {
  topicNames: string[];
  timeoutMs: number;
}

export function decodeDeleteTopicsRequest(reader: KafkaReader, version: number): DeleteTopicsRequest {
  requireRequestVersion('DeleteTopics', DELETE_TOPICS_VERSIONS, version);
  const topicNames = reader.array((each) => each.string('DeleteTopics topic name'), 'DeleteTopics topic_names');
  const timeoutMs = reader.int32('DeleteTopics timeout_ms');
  return { topicNames, timeoutMs };
}

export interface DeletableTopicResult {
  name: string;
  errorCode: number;
}

/** A DeleteTopics answer, one result per topic of the request. */
export interface DeleteTopicsResponse {
  /** Written from version 1; 0 when absent. */
  throttleTimeMs?: number;
  responses: readonly DeletableTopicResult[];
}

/** Writes the body of a DeleteTopics response (no header, no size). */
export function encodeDeleteTopicsResponse(writer: KafkaWriter, version: number, response: DeleteTopicsResponse): void {
  requireResponseVersion('DeleteTopics', DELETE_TOPICS_VERSIONS, version);
  if (version >= FIRST_VERSION_WITH.throttleTimeMs) writer.int32(response.throttleTimeMs ?? 0);
  writer.array(response.responses, (each, result) => void each.string(result.name).int16(result.errorCode));
}
