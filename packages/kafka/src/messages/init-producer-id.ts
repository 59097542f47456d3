/**
 * InitProducerId (key 22), InitProducerIdRequest.json / InitProducerIdResponse.json, versions 0-1 (none
 * flexible). The two versions have the same bytes; version 1 only means the broker answers before
 * throttling (KIP-219).
 */
import type { KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';
import { requireRequestVersion, requireResponseVersion, type VersionRange } from './header';

export const INIT_PRODUCER_ID_VERSIONS: VersionRange = { min: 0, max: 1 };

export interface InitProducerIdRequest {
  /** Null for an idempotent producer that is not transactional. */
  transactionalId: string | null;
  transactionTimeoutMs: number;
}

export function decodeInitProducerIdRequest(reader: KafkaReader, version: number): InitProducerIdRequest {
  requireRequestVersion('InitProducerId', INIT_PRODUCER_ID_VERSIONS, version);
  const transactionalId = reader.nullableString('InitProducerId transactional_id');
  const transactionTimeoutMs = reader.int32('InitProducerId transaction_timeout_ms');
  return { transactionalId, transactionTimeoutMs };
}

export interface InitProducerIdResponse {
  /** 0 when absent. */
  throttleTimeMs?: number;
  errorCode: number;
  /** An int64 on the wire; mink hands out producer ids well within the safe integers. -1 on error. */
  producerId: number;
  /** -1 on error. */
  producerEpoch: number;
}

/** Writes the body of an InitProducerId response (no header, no size). */
export function encodeInitProducerIdResponse(writer: KafkaWriter, version: number, response: InitProducerIdResponse): void {
  requireResponseVersion('InitProducerId', INIT_PRODUCER_ID_VERSIONS, version);
  if (!Number.isSafeInteger(response.producerId)) throw new Error(`producer id ${response.producerId} is not a safe integer`);
  writer.int32(response.throttleTimeMs ?? 0).int16(response.errorCode).int64(response.producerId).int16(response.producerEpoch);
}
