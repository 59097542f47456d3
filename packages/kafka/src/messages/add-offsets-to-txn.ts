/**
 * AddOffsetsToTxn (key 25), AddOffsetsToTxnRequest.json / AddOffsetsToTxnResponse.json, versions 0-1 (none
 * flexible). A transactional producer says it will commit a consumer group's offsets in its open
 * transaction (TxnOffsetCommit follows, sent to the group's coordinator).
 */
import type { KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';
import { requireRequestVersion, requireResponseVersion, type VersionRange } from './header';

export const ADD_OFFSETS_TO_TXN_VERSIONS: VersionRange = { min: 0, max: 1 };

export interface AddOffsetsToTxnRequest {
  transactionalId: string;
  producerId: number;
  producerEpoch: number;
  groupId: string;
}

export function decodeAddOffsetsToTxnRequest(reader: KafkaReader, version: number): AddOffsetsToTxnRequest {
  requireRequestVersion('AddOffsetsToTxn', ADD_OFFSETS_TO_TXN_VERSIONS, version);
  const transactionalId = reader.string('AddOffsetsToTxn transactional_id');
  const producerId = reader.int64Number('AddOffsetsToTxn producer_id');
  const producerEpoch = reader.int16('AddOffsetsToTxn producer_epoch');
  const groupId = reader.string('AddOffsetsToTxn group_id');
  return { transactionalId, producerId, producerEpoch, groupId };
}

export interface AddOffsetsToTxnResponse {
  throttleTimeMs: number;
  errorCode: number;
}

export function encodeAddOffsetsToTxnResponse(writer: KafkaWriter, version: number, response: AddOffsetsToTxnResponse): void {
  requireResponseVersion('AddOffsetsToTxn', ADD_OFFSETS_TO_TXN_VERSIONS, version);
  writer.int32(response.throttleTimeMs).int16(response.errorCode);
}
