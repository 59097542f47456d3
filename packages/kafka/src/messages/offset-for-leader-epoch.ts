/**
 * OffsetForLeaderEpoch (key 23), OffsetForLeaderEpochRequest.json / OffsetForLeaderEpochResponse.json,
 * versions 0-3 (version 4 is the first flexible one). For each partition and leader epoch it answers the
 * end offset of that epoch: the first offset of the next larger epoch, or the log end offset when the epoch
 * is the current one. Followers use it to find where to truncate their log, and consumers (KIP-320, from
 * version 2) to detect that the log they read was truncated under them. Version 1 adds the epoch of the
 * answer, version 2 the throttle time and the current leader epoch (fencing), version 3 the replica id.
 */
import type { KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';
import { requireRequestVersion, requireResponseVersion, type VersionRange } from './header';

export const OFFSET_FOR_LEADER_EPOCH_VERSIONS: VersionRange = { min: 0, max: 3 };

/** The replica ids that name no follower. */
export const OFFSET_FOR_LEADER_EPOCH_REPLICA_IDS = {
  consumer: -1,
  /**
   * The spec's default, and so what a request below version 3 stands for: a "debugging" client allowed
   * to see past the high watermark, as the followers that sent those versions were.
   */
  debugging: -2,
} as const;

/** The first version in which each field that is not in every version appears. */
const FIRST_VERSION_WITH = {
  leaderEpoch: 1,
  throttleTimeMs: 2,
  currentLeaderEpoch: 2,
  replicaId: 3,
} as const;

export interface OffsetForLeaderPartition {
  partition: number;
  /**
   * The epoch of the leader the client believes current, to be fenced with FENCED_LEADER_EPOCH (older
   * than the broker's) or UNKNOWN_LEADER_EPOCH (newer); -1 (no fencing) below version 2.
   */
  currentLeaderEpoch: number;
  /** The epoch whose end offset is asked for. */
  leaderEpoch: number;
}

export interface OffsetForLeaderTopic {
  topic: string;
  partitions: OffsetForLeaderPartition[];
}

/** A decoded OffsetForLeaderEpoch request. Fields a version lacks take the spec's default. */
export interface OffsetForLeaderEpochRequest {
  /** A follower's broker id, or one of OFFSET_FOR_LEADER_EPOCH_REPLICA_IDS; `debugging` below version 3. */
  replicaId: number;
  topics: OffsetForLeaderTopic[];
}

export function decodeOffsetForLeaderEpochRequest(reader: KafkaReader, version: number): OffsetForLeaderEpochRequest {
  requireRequestVersion('OffsetForLeaderEpoch', OFFSET_FOR_LEADER_EPOCH_VERSIONS, version);
  const replicaId = version >= FIRST_VERSION_WITH.replicaId ? reader.int32('OffsetForLeaderEpoch replica_id') : OFFSET_FOR_LEADER_EPOCH_REPLICA_IDS.debugging;
  const readPartition = (each: KafkaReader): OffsetForLeaderPartition => {
    const partition = each.int32('OffsetForLeaderEpoch partition');
    const currentLeaderEpoch = version >= FIRST_VERSION_WITH.currentLeaderEpoch ? each.int32('OffsetForLeaderEpoch current_leader_epoch') : -1;
    const leaderEpoch = each.int32('OffsetForLeaderEpoch leader_epoch');
    return { partition, currentLeaderEpoch, leaderEpoch };
  };
  const topics = reader.array(
    (each): OffsetForLeaderTopic => ({
      topic: each.string('OffsetForLeaderEpoch topic'),
      partitions: each.array(readPartition, 'OffsetForLeaderEpoch partitions'),
    }),
    'OffsetForLeaderEpoch topics',
  );
  return { replicaId, topics };
}

export interface OffsetForLeaderPartitionResult {
  errorCode: number;
  partition: number;
  /**
   * The largest epoch not above the one asked for, whose end offset this is; -1 (unknown) on error and
   * when absent. Written from version 1.
   */
  leaderEpoch?: number;
  /** The end offset of that epoch; -1 (unknown) on error. */
  endOffset: number;
}

export interface OffsetForLeaderTopicResult {
  topic: string;
  partitions: readonly OffsetForLeaderPartitionResult[];
}

/** An OffsetForLeaderEpoch answer, one result per partition of the request. */
export interface OffsetForLeaderEpochResponse {
  /** Written from version 2; 0 when absent. */
  throttleTimeMs?: number;
  topics: readonly OffsetForLeaderTopicResult[];
}

/** Writes the body of an OffsetForLeaderEpoch response (no header, no size). */
export function encodeOffsetForLeaderEpochResponse(writer: KafkaWriter, version: number, response: OffsetForLeaderEpochResponse): void {
  requireResponseVersion('OffsetForLeaderEpoch', OFFSET_FOR_LEADER_EPOCH_VERSIONS, version);
  if (version >= FIRST_VERSION_WITH.throttleTimeMs) writer.int32(response.throttleTimeMs ?? 0);
  writer.array(response.topics, (each, topic) => {
    each.string(topic.topic);
    each.array(topic.partitions, (inner, partition) => {
      inner.int16(partition.errorCode).int32(partition.partition);
      if (version >= FIRST_VERSION_WITH.leaderEpoch) inner.int32(partition.leaderEpoch ?? -1);
      inner.int64(partition.endOffset);
    });
  });
}
