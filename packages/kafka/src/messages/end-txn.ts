/**
 * EndTxn (key 26), EndTxnRequest.json / EndTxnResponse.json, versions 0-1 (none flexible). A transactional
 * producer commits or aborts its open transaction; the answer comes once the coordinator has durably
 * decided, its markers are written after.
 */
import type { KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';
import { requireRequestVersion, requireResponseVersion, type VersionRange } from './header';

export const END_TXN_VERSIONS: VersionRange = { min: 0, max: 1 };

export interface EndTxnRequest {
  transactionalId: string;
  producerId: number;
  producerEpoch: number;
  /** True to commit, false to abort. */
  committed: boolean;
}

export function decodeEndTxnRequest(reader: KafkaReader, version: number): EndTxnRequest {
  requireRequestVersion('EndTxn', END_TXN_VERSIONS, version);
  const transactionalId = reader.string('EndTxn transactional_id');
  const producerId = reader.int64Number('EndTxn producer_id');
  const producerEpoch = reader.int16('EndTxn producer_epoch');
  const committed = reader.boolean('EndTxn committed');
  return { transactionalId, producerId, producerEpoch, committed };
}

export interface EndTxnResponse {
  throttleTimeMs: number;
  errorCode: number;
}

export function encodeEndTxnResponse(writer: KafkaWriter, version: number, response: EndTxnResponse): void {
  requireResponseVersion('EndTxn', END_TXN_VERSIONS, version);
  writer.int32(response.throttleTimeMs).int16(response.errorCode);
}
