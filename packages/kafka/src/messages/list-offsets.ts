/**
 * ListOffsets (key 2), ListOffsetsRequest.json / ListOffsetsResponse.json, versions 0-5 (none
 * flexible). Version 0 is the legacy form that asks for up to `max_num_offsets` offsets and gets an
 * array back; from version 1 each partition gets exactly one offset and its timestamp.
 */
import type { KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';
import { requireRequestVersion, requireResponseVersion, type VersionRange } from './header';

export const LIST_OFFSETS_VERSIONS: VersionRange = { min: 0, max: 5 };

/** The special values of a partition's `timestamp`: the offset after the last record, or the first one. */
export const LIST_OFFSETS_TIMESTAMPS = {
  latest: -1,
  earliest: -2,
} as const;

/**
 * The first version in which each field that is not in every version appears. `singleOffset` is the
 * first version that answers one offset and its timestamp, and so drops max_num_offsets and the
 * old-style offsets array.
 */
const FIRST_VERSION_WITH = {
  singleOffset: 1,
  isolationLevel: 2,
  throttleTimeMs: 2,
  currentLeaderEpoch: 4,
  leaderEpoch: 4,
} as const;

export interface ListOffsetsPartition {
  partitionIndex: number;
  /** -1 (no fencing) below version 4. */
  currentLeaderEpoch: number;
  /** A timestamp in ms, or one of LIST_OFFSETS_TIMESTAMPS. */
  timestamp: number;
  /** Version 0 only; 1 from version 1, which always answers one offset. */
  maxNumOffsets: number;
}

export interface ListOffsetsTopic {
  name: string;
  partitions: ListOffsetsPartition[];
}

/** A decoded ListOffsets request. Fields a version lacks take the spec's default. */
export interface ListOffsetsRequest {
  /** -1 for a consumer; a broker id for a follower. */
  replicaId: number;
  /** 0 read uncommitted, 1 read committed; 0 below version 2. */
  isolationLevel: number;
  topics: ListOffsetsTopic[];
}

export function decodeListOffsetsRequest(reader: KafkaReader, version: number): ListOffsetsRequest {
  requireRequestVersion('ListOffsets', LIST_OFFSETS_VERSIONS, version);
  const replicaId = reader.int32('ListOffsets replica_id');
  const isolationLevel = version >= FIRST_VERSION_WITH.isolationLevel ? reader.int8('ListOffsets isolation_level') : 0;
  const readPartition = (each: KafkaReader): ListOffsetsPartition => {
    const partitionIndex = each.int32('ListOffsets partition_index');
    const currentLeaderEpoch = version >= FIRST_VERSION_WITH.currentLeaderEpoch ? each.int32('ListOffsets current_leader_epoch') : -1;
    const timestamp = each.int64Number('ListOffsets timestamp');
    const maxNumOffsets = version < FIRST_VERSION_WITH.singleOffset ? each.int32('ListOffsets max_num_offsets') : 1;
    return { partitionIndex, currentLeaderEpoch, timestamp, maxNumOffsets };
  };
  const topics = reader.array(
    (each): ListOffsetsTopic => ({
      name: each.string('ListOffsets topic name'),
      partitions: each.array(readPartition, 'ListOffsets partitions'),
    }),
    'ListOffsets topics',
  );
  return { replicaId, isolationLevel, topics };
}

export interface ListOffsetsPartitionResponse {
  partitionIndex: number;
  errorCode: number;
  /** The timestamp of the returned offset, -1 when unknown. Written from version 1. */
  timestamp: number;
  /** The returned offset, -1 on error. Written from version 1. */
  offset: number;
  /** Written from version 4; -1 (unknown) when absent. */
  leaderEpoch?: number;
  /** Version 0 only; when absent, `[offset]` if the offset is known (≥ 0), else empty. */
  oldStyleOffsets?: readonly number[];
}

export interface ListOffsetsTopicResponse {
  name: string;
  partitions: readonly ListOffsetsPartitionResponse[];
}

export interface ListOffsetsResponse {
  /** Written from version 2; 0 when absent. */
  throttleTimeMs?: number;
  topics: readonly ListOffsetsTopicResponse[];
}

/** Writes the body of a ListOffsets response (no header, no size). */
export function encodeListOffsetsResponse(writer: KafkaWriter, version: number, response: ListOffsetsResponse): void {
  requireResponseVersion('ListOffsets', LIST_OFFSETS_VERSIONS, version);
  if (version >= FIRST_VERSION_WITH.throttleTimeMs) writer.int32(response.throttleTimeMs ?? 0);
  writer.array(response.topics, (each, topic) => {
    each.string(topic.name);
    each.array(topic.partitions, (inner, partition) => {
      inner.int32(partition.partitionIndex).int16(partition.errorCode);
      if (version < FIRST_VERSION_WITH.singleOffset) {
        const offsets = partition.oldStyleOffsets ?? (partition.offset >= 0 ? [partition.offset] : []);
        inner.array(offsets, (offset, value) => void offset.int64(value));
        return;
      }
      inner.int64(partition.timestamp).int64(partition.offset);
      if (version >= FIRST_VERSION_WITH.leaderEpoch) inner.int32(partition.leaderEpoch ?? -1);
    });
  });
}
