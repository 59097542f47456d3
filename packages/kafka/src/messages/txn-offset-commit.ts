/**
 * TxnOffsetCommit (key 28), TxnOffsetCommitRequest.json / TxnOffsetCommitResponse.json, versions 0-2 (none
 * flexible; version 2 adds each partition's committed leader epoch). Sent to the group's coordinator: the
 * offsets take effect when the producer's transaction commits, and are dropped when it aborts.
 */
import type { KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';
import { requireRequestVersion, requireResponseVersion, type VersionRange } from './header';

export const TXN_OFFSET_COMMIT_VERSIONS: VersionRange = { min: 0, max: 2 };

/** The first version carrying each partition's committed leader epoch. */
const FIRST_VERSION_WITH_LEADER_EPOCH = 2;

export interface TxnOffsetCommitPartition {
  partitionIndex: number;
  committedOffset: number;
  /** -1 when the version carries none. */
  committedLeaderEpoch: number;
  committedMetadata: string | null;
}

export interface TxnOffsetCommitRequest {
  transactionalId: string;
  groupId: string;
  producerId: number;
  producerEpoch: number;
  topics: { name: string; partitions: TxnOffsetCommitPartition[] }[];
}

export function decodeTxnOffsetCommitRequest(reader: KafkaReader, version: number): TxnOffsetCommitRequest {
  requireRequestVersion('TxnOffsetCommit', TXN_OFFSET_COMMIT_VERSIONS, version);
  const transactionalId = reader.string('TxnOffsetCommit transactional_id');
  const groupId = reader.string('TxnOffsetCommit group_id');
  const producerId = reader.int64Number('TxnOffsetCommit producer_id');
  const producerEpoch = reader.int16('TxnOffsetCommit producer_epoch');
  const topics = reader.array(
    () => ({
      name: reader.string('TxnOffsetCommit topics.name'),
      partitions: reader.array(
        (): TxnOffsetCommitPartition => ({
          partitionIndex: reader.int32('TxnOffsetCommit partitions.partition_index'),
          committedOffset: reader.int64Number('TxnOffsetCommit partitions.committed_offset'),
          committedLeaderEpoch: version >= FIRST_VERSION_WITH_LEADER_EPOCH ? reader.int32('TxnOffsetCommit partitions.committed_leader_epoch') : -1,
          committedMetadata: reader.nullableString('TxnOffsetCommit partitions.committed_metadata'),
        }),
        'TxnOffsetCommit topics.partitions',
      ),
    }),
    'TxnOffsetCommit topics',
  );
  return { transactionalId, groupId, producerId, producerEpoch, topics };
}

export interface TxnOffsetCommitResponse {
  throttleTimeMs: number;
  topics: { name: string; partitions: { partitionIndex: number; errorCode: number }[] }[];
}

export function encodeTxnOffsetCommitResponse(writer: KafkaWriter, version: number, response: TxnOffsetCommitResponse): void {
  requireResponseVersion('TxnOffsetCommit', TXN_OFFSET_COMMIT_VERSIONS, version);
  writer.int32(response.throttleTimeMs);
  writer.array(response.topics, (topicWriter, topic) => {
    topicWriter.string(topic.name);
    topicWriter.array(topic.partitions, (partitionWriter, partition) => void partitionWriter.int32(partition.partitionIndex).int16(partition.errorCode));
  });
}
