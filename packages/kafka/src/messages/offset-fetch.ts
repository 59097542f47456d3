/**
 * OffsetFetch (API key 9): a member reads the offsets its group committed, for the partitions it names or
 * (from v2, with a null topic list) for every partition the group has committed. Versions 0–5 are the
 * non-flexible ones; version 6 switches to compact encodings and is not handled here.
 */
import { KafkaDecodeError, type KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';
import { requireRequestVersion, requireResponseVersion, type VersionRange } from './header';

export const OFFSET_FETCH_VERSIONS: VersionRange = { min: 0, max: 5 };

type Field = 'nullTopics' | 'throttleTimeMs' | 'committedLeaderEpoch' | 'errorCode';

/** The versions that carry each field (or allow each value) that not every version has. */
const FIELD_VERSIONS: Record<Field, { since: number }> = {
  // A null topic list in the request, meaning "every partition the group has committed".
  nullTopics: { since: 2 },
  throttleTimeMs: { since: 3 },
  committedLeaderEpoch: { since: 5 },
  // The response's group-level error code.
  errorCode: { since: 2 },
};

function carries(field: Field, version: number): boolean {
  return version >= FIELD_VERSIONS[field].since;
}

export interface OffsetFetchRequestTopic {
  name: string;
  partitionIndexes: number[];
}

/** A decoded OffsetFetch request. */
export interface OffsetFetchRequest {
  groupId: string;
  /** null (v2+ only) asks for every partition the group has committed an offset for. */
  topics: OffsetFetchRequestTopic[] | null;
}

/** Reads an OffsetFetch request body (after the request header). A null topic list before v2 is refused. */
export function decodeOffsetFetchRequest(reader: KafkaReader, version: number): OffsetFetchRequest {
  requireRequestVersion('OffsetFetch', OFFSET_FETCH_VERSIONS, version);
  const groupId = reader.string('OffsetFetch group_id');
  const topics = reader.nullableArray(
    (topic) => ({
      name: topic.string('OffsetFetch topics.name'),
      partitionIndexes: topic.array((partition) => partition.int32('OffsetFetch topics.partition_indexes'), 'OffsetFetch topics.partition_indexes'),
    }),
    'OffsetFetch topics',
  );
  if (topics === null && !carries('nullTopics', version)) throw new KafkaDecodeError(`OffsetFetch topics: null, which version ${version} does not allow`);
  return { groupId, topics };
}

/** The committed offset of one partition; -1 with null metadata when the group has committed none. */
export interface OffsetFetchResponsePartition {
  partitionIndex: number;
  committedOffset: number;
  /** Written from v5; -1 when unknown. */
  committedLeaderEpoch: number;
  metadata: string | null;
  errorCode: number;
}

export interface OffsetFetchResponseTopic {
  name: string;
  partitions: OffsetFetchResponsePartition[];
}

/**
 * An OffsetFetch response to encode. `errorCode` is the group-level outcome, written from v2; v0–1 have
 * no place for it, so there the caller must put a group-level error on every requested partition (as the
 * Java broker does). `throttleTimeMs` is written from v3.
 */
export interface OffsetFetchResponse {
  throttleTimeMs: number;
  topics: OffsetFetchResponseTopic[];
  errorCode: number;
}

/** Writes an OffsetFetch response body (no header, no size prefix). */
export function encodeOffsetFetchResponse(writer: KafkaWriter, version: number, response: OffsetFetchResponse): void {
  requireResponseVersion('OffsetFetch', OFFSET_FETCH_VERSIONS, version);
  if (carries('throttleTimeMs', version)) writer.int32(response.throttleTimeMs);
  writer.array(response.topics, (topic, { name, partitions }) => {
    topic.string(name).array(partitions, (item, partition) => {
      item.int32(partition.partitionIndex).int64(partition.committedOffset);
      if (carries('committedLeaderEpoch', version)) item.int32(partition.committedLeaderEpoch);
      item.nullableString(partition.metadata).int16(partition.errorCode);
    });
  });
  if (carries('errorCode', version)) writer.int16(response.errorCode);
}
