import { API_KEYS, ERROR_CODES } from '../wire/codes';
import type { KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';
import { ADD_OFFSETS_TO_TXN_VERSIONS, decodeAddOffsetsToTxnRequest, encodeAddOffsetsToTxnResponse } from '../messages/add-offsets-to-txn';
import { ADD_PARTITIONS_TO_TXN_VERSIONS, decodeAddPartitionsToTxnRequest, encodeAddPartitionsToTxnResponse } from '../messages/add-partitions-to-txn';
import { END_TXN_VERSIONS, decodeEndTxnRequest, encodeEndTxnResponse } from '../messages/end-txn';
import { TXN_OFFSET_COMMIT_VERSIONS, decodeTxnOffsetCommitRequest, encodeTxnOffsetCommitResponse } from '../messages/txn-offset-commit';
import { kafkaErrorCodeOf } from './error-mapping';
import type { BrokerContext, ServedApi } from './kafka-broker';

/**
 * The transaction APIs (KIP-98) of a transactional producer: AddPartitionsToTxn, AddOffsetsToTxn and EndTxn
 * go to the coordinator of its transactional id (the leader of the id's bucket of `__transaction_state`;
 * other nodes answer NOT_COORDINATOR), TxnOffsetCommit to the coordinator of the consumer group, which hands
 * the offsets to the transaction's coordinator. InitProducerId with a transactional id is in kafka-broker.ts.
 */
export function transactionApis(): [number, ServedApi][] {
  const api = (range: { min: number; max: number }, handle: ServedApi['handle']): ServedApi => ({ advertised: range, served: range, handle });
  return [
    [API_KEYS.AddPartitionsToTxn, api(ADD_PARTITIONS_TO_TXN_VERSIONS, addPartitionsToTxn)],
    [API_KEYS.AddOffsetsToTxn, api(ADD_OFFSETS_TO_TXN_VERSIONS, addOffsetsToTxn)],
    [API_KEYS.EndTxn, api(END_TXN_VERSIONS, endTxn)],
    [API_KEYS.TxnOffsetCommit, api(TXN_OFFSET_COMMIT_VERSIONS, txnOffsetCommit)],
  ];
}

/**
 * NONE when this node coordinates the transactional id and the connection may use it (the write scope), else
 * the error its request gets here: TRANSACTIONAL_ID_AUTHORIZATION_FAILED without the scope, NOT_COORDINATOR when another node does (the client asks FindCoordinator again), COORDINATOR_NOT_AVAILABLE
 * while nobody does.
 */
export function transactionCoordinationErrorOf(context: BrokerContext, transactionalId: string): number {
  if (!context.allows('write', { transactionalId })) return ERROR_CODES.TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
  const place = context.backend.transactionCoordinator(transactionalId);
  if (place.kind === 'here') return ERROR_CODES.NONE;
  return place.kind === 'elsewhere' ? ERROR_CODES.NOT_COORDINATOR : ERROR_CODES.COORDINATOR_NOT_AVAILABLE;
}

/** The coordinator's answer to one request, or the error it failed with as a Kafka code. */
async function answered(context: BrokerContext, transactionalId: string, call: () => Promise<number>): Promise<number> {
  const refused = transactionCoordinationErrorOf(context, transactionalId);
  if (refused !== ERROR_CODES.NONE) return refused;
  try {
    return await call();
  } catch (error) {
    return kafkaErrorCodeOf(error, 'transaction');
  }
}

async function addPartitionsToTxn(context: BrokerContext, reader: KafkaReader, version: number, writer: KafkaWriter): Promise<'respond'> {
  const request = decodeAddPartitionsToTxnRequest(reader, version);
  const partitions = request.topics.flatMap((topic) => topic.partitions.map((partition) => ({ topic: topic.name, partition })));
  const unknown = partitions.find((partition) => {
    const topic = context.backend.topic(partition.topic);
    return !topic || partition.partition < 0 || partition.partition >= topic.partitions.length;
  });
  // A topic the connection may not write fails the request: its partitions answer TOPIC_AUTHORIZATION_FAILED, the others
  // OPERATION_NOT_ATTEMPTED, as Kafka does. Otherwise every partition gets the one error of the request (or the unknown
  // partitions theirs).
  const refusedTopics = new Set(request.topics.filter((topic) => !context.allows('write', { topic: topic.name })).map((topic) => topic.name));
  const errorCode =
    refusedTopics.size > 0
      ? ERROR_CODES.OPERATION_NOT_ATTEMPTED
      : unknown
        ? ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION
        : await answered(context, request.transactionalId, () => context.backend.addPartitionsToTxn(request.transactionalId, request.producerId, request.producerEpoch, partitions));
  encodeAddPartitionsToTxnResponse(writer, version, {
    throttleTimeMs: 0,
    results: request.topics.map((topic) => ({
      name: topic.name,
      results: topic.partitions.map((partitionIndex) => ({ partitionIndex, errorCode: refusedTopics.has(topic.name) ? ERROR_CODES.TOPIC_AUTHORIZATION_FAILED : errorCode })),
    })),
  });
  return 'respond';
}

async function addOffsetsToTxn(context: BrokerContext, reader: KafkaReader, version: number, writer: KafkaWriter): Promise<'respond'> {
  const request = decodeAddOffsetsToTxnRequest(reader, version);
  const errorCode = !context.allows('read', { group: request.groupId })
    ? ERROR_CODES.GROUP_AUTHORIZATION_FAILED
    : await answered(context, request.transactionalId, () => context.backend.addOffsetsToTxn(request.transactionalId, request.producerId, request.producerEpoch, request.groupId));
  encodeAddOffsetsToTxnResponse(writer, version, { throttleTimeMs: 0, errorCode });
  return 'respond';
}

async function endTxn(context: BrokerContext, reader: KafkaReader, version: number, writer: KafkaWriter): Promise<'respond'> {
  const request = decodeEndTxnRequest(reader, version);
  const errorCode = await answered(context, request.transactionalId, () => context.backend.endTxn(request.transactionalId, request.producerId, request.producerEpoch, request.committed));
  encodeEndTxnResponse(writer, version, { throttleTimeMs: 0, errorCode });
  return 'respond';
}

async function txnOffsetCommit(context: BrokerContext, reader: KafkaReader, version: number, writer: KafkaWriter): Promise<'respond'> {
  const request = decodeTxnOffsetCommitRequest(reader, version);
  // Sent to the group's coordinator, as OffsetCommit is.
  const place = context.backend.groupCoordinator(request.groupId);
  let errorCode: number = place.kind === 'here' ? ERROR_CODES.NONE : place.kind === 'elsewhere' ? ERROR_CODES.NOT_COORDINATOR : ERROR_CODES.COORDINATOR_NOT_AVAILABLE;
  // The transactional id needs the write scope, the group and its topics the read scope (Kafka's Write on the id, Read on group and topics).
  if (!context.allows('write', { transactionalId: request.transactionalId })) errorCode = ERROR_CODES.TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
  else if (!context.allows('read', { group: request.groupId })) errorCode = ERROR_CODES.GROUP_AUTHORIZATION_FAILED;
  else if (request.topics.some((topic) => !context.allows('read', { topic: topic.name }))) errorCode = ERROR_CODES.TOPIC_AUTHORIZATION_FAILED;
  if (errorCode === ERROR_CODES.NONE) {
    const offsets = request.topics.flatMap((topic) =>
      topic.partitions.map((partition) => ({ topic: topic.name, partition: partition.partitionIndex, offset: partition.committedOffset, leaderEpoch: partition.committedLeaderEpoch, metadata: partition.committedMetadata })),
    );
    try {
      errorCode = await context.backend.txnOffsetCommit(request.transactionalId, request.groupId, request.producerId, request.producerEpoch, offsets);
    } catch (error) {
      errorCode = kafkaErrorCodeOf(error, 'transaction');
    }
  }
  encodeTxnOffsetCommitResponse(writer, version, {
    throttleTimeMs: 0,
    topics: request.topics.map((topic) => ({ name: topic.name, partitions: topic.partitions.map((partition) => ({ partitionIndex: partition.partitionIndex, errorCode })) })),
  });
  return 'respond';
}
