/**
 * Heartbeat (API key 12): a member proves it is alive between rebalances, and learns from the error code
 * that a rebalance has started (REBALANCE_IN_PROGRESS) or that it was fenced. Versions 0–3 are the
 * non-flexible ones; version 4 switches to compact encodings and is not handled here.
 */
import type { KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';
import { requireRequestVersion, requireResponseVersion, type VersionRange } from './header';

export const HEARTBEAT_VERSIONS: VersionRange = { min: 0, max: 3 };

/** The versions that carry each field that not every version has. */
const FIELD_VERSIONS: Record<'groupInstanceId' | 'throttleTimeMs', { since: number }> = {
  // Static membership (KIP-345).
  groupInstanceId: { since: 3 },
  throttleTimeMs: { since: 1 },
};

function carries(field: keyof typeof FIELD_VERSIONS, version: number): boolean {
  return version >= FIELD_VERSIONS[field].since;
}

/** A decoded Heartbeat request. */
export interface HeartbeatRequest {
  groupId: string;
  generationId: number;
  memberId: string;
  /** Set by static members (version 3+); null otherwise. */
  groupInstanceId: string | null;
}

/** Reads a Heartbeat request body (after the request header). */
export function decodeHeartbeatRequest(reader: KafkaReader, version: number): HeartbeatRequest {
  requireRequestVersion('Heartbeat', HEARTBEAT_VERSIONS, version);
  const groupId = reader.string('Heartbeat group_id');
  const generationId = reader.int32('Heartbeat generation_id');
  const memberId = reader.string('Heartbeat member_id');
  const groupInstanceId = carries('groupInstanceId', version) ? reader.nullableString('Heartbeat group_instance_id') : null;
  return { groupId, generationId, memberId, groupInstanceId };
}

/** A Heartbeat response to encode; `throttleTimeMs` is written from version 1. */
export interface HeartbeatResponse {
  throttleTimeMs: number;
  errorCode: number;
}

/** Writes a Heartbeat response body (no header, no size prefix). */
export function encodeHeartbeatResponse(writer: KafkaWriter, version: number, response: HeartbeatResponse): void {
  requireResponseVersion('Heartbeat', HEARTBEAT_VERSIONS, version);
  if (carries('throttleTimeMs', version)) writer.int32(response.throttleTimeMs);
  writer.int16(response.errorCode);
}
