/**
 * AddPartitionsToTxn (key 24), AddPartitionsToTxnRequest.json / AddPartitionsToTxnResponse.json, versions
 * 0-1 (none flexible; version 1 only means the broker answers before throttling). A transactional producer
 * names the partitions it is about to write in its open transaction, so its coordinator writes their markers.
 */
import type { KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';
import { requireRequestVersion, requireResponseVersion, type VersionRange } from './header';

export const ADD_PARTITIONS_TO_TXN_VERSIONS: VersionRange = { min: 0, max: 1 };

export interface AddPartitionsToTxnRequest {
  transactionalId: string;
  producerId: number;
  producerEpoch: number;
  topics: { name: string; partitions: number[] }[];
}

export function decodeAddPartitionsToTxnRequest(reader: KafkaReader, version: number): AddPartitionsToTxnRequest {
  requireRequestVersion('AddPartitionsToTxn', ADD_PARTITIONS_TO_TXN_VERSIONS, version);
  const transactionalId = reader.string('AddPartitionsToTxn transactional_id');
  const producerId = reader.int64Number('AddPartitionsToTxn producer_id');
  const producerEpoch = reader.int16('AddPartitionsToTxn producer_epoch');
  const topics = reader.array(
    () => ({
      name: reader.string('AddPartitionsToTxn topics.name'),
      partitions: reader.array(() => reader.int32('AddPartitionsToTxn topics.partitions'), 'AddPartitionsToTxn topics.partitions'),
    }),
    'AddPartitionsToTxn topics',
  );
  return { transactionalId, producerId, producerEpoch, topics };
}

export interface AddPartitionsToTxnResponse {
  throttleTimeMs: number;
  results: { name: string; results: { partitionIndex: number; errorCode: number }[] }[];
}

export function encodeAddPartitionsToTxnResponse(writer: KafkaWriter, version: number, response: AddPartitionsToTxnResponse): void {
  requireResponseVersion('AddPartitionsToTxn', ADD_PARTITIONS_TO_TXN_VERSIONS, version);
  writer.int32(response.throttleTimeMs);
  writer.array(response.results, (topicWriter, topic) => {
    topicWriter.string(topic.name);
    topicWriter.array(topic.results, (partitionWriter, partition) => void partitionWriter.int32(partition.partitionIndex).int16(partition.errorCode));
  });
}
