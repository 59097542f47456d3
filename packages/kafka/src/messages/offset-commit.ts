/**
 * OffsetCommit (API key 8): a group member stores the offsets it has consumed up to, per partition, with
 * optional metadata. The fields moved a lot across the non-flexible versions 0–7: group membership from
 * v1, a per-partition commit timestamp in v1 only, a retention time in v2–4, the leader epoch from v6 and
 * the static instance id from v7. Version 8 switches to compact encodings and is not handled here.
 */
import type { KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';
import { requireRequestVersion, requireResponseVersion, type VersionRange } from './header';

export const OFFSET_COMMIT_VERSIONS: VersionRange = { min: 0, max: 7 };

type Field = 'generationId' | 'memberId' | 'groupInstanceId' | 'retentionTimeMs' | 'committedLeaderEpoch' | 'commitTimestampMs' | 'throttleTimeMs';

/** The versions that carry each field that not every version has (`until` for fields later removed). */
const FIELD_VERSIONS: Record<Field, { since: number; until?: number }> = {
  generationId: { since: 1 },
  memberId: { since: 1 },
  groupInstanceId: { since: 7 },
  // Replaced by the broker's offsets.retention.minutes from v5 (KIP-211).
  retentionTimeMs: { since: 2, until: 4 },
  committedLeaderEpoch: { since: 6 },
  // v1 only: the broker computes expiry from its own clock in every other version.
  commitTimestampMs: { since: 1, until: 1 },
  throttleTimeMs: { since: 3 },
};

function carries(field: Field, version: number): boolean {
  const range = FIELD_VERSIONS[field];
  return version >= range.since && version <= (range.until ?? Infinity);
}

/**
 * The protocol's value for a generation id, retention time, leader epoch or commit timestamp that a
 * version does not carry (or a client left unset): "none given".
 */
export const OFFSET_COMMIT_UNSET = -1;

/** One partition's offset to store. */
export interface OffsetCommitRequestPartition {
  partitionIndex: number;
  /** The next offset the group will consume (one past the last processed record). */
  committedOffset: number;
  /** The leader epoch of the record the offset follows (v6+); -1 when unknown. */
  committedLeaderEpoch: number;
  /** v1 only; -1 otherwise. */
  commitTimestampMs: number;
  committedMetadata: string | null;
}

export interface OffsetCommitRequestTopic {
  name: string;
  partitions: OffsetCommitRequestPartition[];
}

/**
 * A decoded OffsetCommit request. Fields a version lacks read as the protocol's defaults: generation id
 * -1 and an empty member id for v0 (a commit from outside any generation, as from a consumer that assigns
 * its partitions itself), -1 for the retention time, leader epoch and commit timestamp.
 */
export interface OffsetCommitRequest {
  groupId: string;
  generationId: number;
  memberId: string;
  /** Set by static members (v7+); null otherwise. */
  groupInstanceId: string | null;
  /** v2–4; -1 means the broker's default retention. */
  retentionTimeMs: number;
  topics: OffsetCommitRequestTopic[];
}

/** Reads an OffsetCommit request body (after the request header). */
export function decodeOffsetCommitRequest(reader: KafkaReader, version: number): OffsetCommitRequest {
  requireRequestVersion('OffsetCommit', OFFSET_COMMIT_VERSIONS, version);
  const groupId = reader.string('OffsetCommit group_id');
  const generationId = carries('generationId', version) ? reader.int32('OffsetCommit generation_id') : OFFSET_COMMIT_UNSET;
  const memberId = carries('memberId', version) ? reader.string('OffsetCommit member_id') : '';
  const groupInstanceId = carries('groupInstanceId', version) ? reader.nullableString('OffsetCommit group_instance_id') : null;
  const retentionTimeMs = carries('retentionTimeMs', version) ? reader.int64Number('OffsetCommit retention_time_ms') : OFFSET_COMMIT_UNSET;
  const topics = reader.array(
    (topic) => ({
      name: topic.string('OffsetCommit topics.name'),
      partitions: topic.array((partition) => decodePartition(partition, version), 'OffsetCommit topics.partitions'),
    }),
    'OffsetCommit topics',
  );
  return { groupId, generationId, memberId, groupInstanceId, retentionTimeMs, topics };
}

function decodePartition(reader: KafkaReader, version: number): OffsetCommitRequestPartition {
  const partitionIndex = reader.int32('OffsetCommit partitions.partition_index');
  const committedOffset = reader.int64Number('OffsetCommit partitions.committed_offset');
  const committedLeaderEpoch = carries('committedLeaderEpoch', version) ? reader.int32('OffsetCommit partitions.committed_leader_epoch') : OFFSET_COMMIT_UNSET;
  const commitTimestampMs = carries('commitTimestampMs', version) ? reader.int64Number('OffsetCommit partitions.commit_timestamp') : OFFSET_COMMIT_UNSET;
  const committedMetadata = reader.nullableString('OffsetCommit partitions.committed_metadata');
  return { partitionIndex, committedOffset, committedLeaderEpoch, commitTimestampMs, committedMetadata };
}

export interface OffsetCommitResponsePartition {
  partitionIndex: number;
  errorCode: number;
}

export interface OffsetCommitResponseTopic {
  name: string;
  partitions: OffsetCommitResponsePartition[];
}

/**
 * An OffsetCommit response to encode: one outcome per partition of the request (group-level failures such
 * as NOT_COORDINATOR are repeated on every partition; the API has no group-level error code).
 * `throttleTimeMs` is written from v3.
 */
export interface OffsetCommitResponse {
  throttleTimeMs: number;
  topics: OffsetCommitResponseTopic[];
}

/** Writes an OffsetCommit response body (no header, no size prefix). */
export function encodeOffsetCommitResponse(writer: KafkaWriter, version: number, response: OffsetCommitResponse): void {
  requireResponseVersion('OffsetCommit', OFFSET_COMMIT_VERSIONS, version);
  if (carries('throttleTimeMs', version)) writer.int32(response.throttleTimeMs);
  writer.array(response.topics, (topic, { name, partitions }) => {
    topic.string(name).array(partitions, (partition, { partitionIndex, errorCode }) => {
      partition.int32(partitionIndex).int16(errorCode);
    });
  });
}
