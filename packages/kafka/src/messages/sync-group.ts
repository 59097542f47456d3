/**
 * SyncGroup (API key 14), the second step of a rebalance: the leader sends every member's assignment,
 * followers send none, and each member gets back its own assignment bytes. Versions 0–3 are the
 * non-flexible ones; version 4 switches to compact encodings and is not handled here.
 */
import type { KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';
import { requireRequestVersion, requireResponseVersion, type VersionRange } from './header';

export const SYNC_GROUP_VERSIONS: VersionRange = { min: 0, max: 3 };

/** The versions that carry each field that not every version has. */
const FIELD_VERSIONS: Record<'groupInstanceId' | 'throttleTimeMs', { since: number }> = {
  // Static membership (KIP-345).
  groupInstanceId: { since: 3 },
  throttleTimeMs: { since: 1 },
};

function carries(field: keyof typeof FIELD_VERSIONS, version: number): boolean {
  return version >= FIELD_VERSIONS[field].since;
}

/** The assignment the leader computed for one member; opaque bytes (see consumer-protocol.ts). */
export interface SyncGroupRequestAssignment {
  memberId: string;
  assignment: Uint8Array;
}

/** A decoded SyncGroup request. */
export interface SyncGroupRequest {
  groupId: string;
  generationId: number;
  memberId: string;
  /** Set by static members (version 3+); null otherwise. */
  groupInstanceId: string | null;
  /** Every member's assignment when sent by the leader; empty when sent by a follower. */
  assignments: SyncGroupRequestAssignment[];
}

/** Reads a SyncGroup request body (after the request header). */
export function decodeSyncGroupRequest(reader: KafkaReader, version: number): SyncGroupRequest {
  requireRequestVersion('SyncGroup', SYNC_GROUP_VERSIONS, version);
  const groupId = reader.string('SyncGroup group_id');
  const generationId = reader.int32('SyncGroup generation_id');
  const memberId = reader.string('SyncGroup member_id');
  const groupInstanceId = carries('groupInstanceId', version) ? reader.nullableString('SyncGroup group_instance_id') : null;
  const assignments = reader.array(
    (item) => ({ memberId: item.string('SyncGroup assignments.member_id'), assignment: item.bytes('SyncGroup assignments.assignment') }),
    'SyncGroup assignments',
  );
  return { groupId, generationId, memberId, groupInstanceId, assignments };
}

/** A SyncGroup response to encode; `throttleTimeMs` is written from version 1. */
export interface SyncGroupResponse {
  throttleTimeMs: number;
  errorCode: number;
  /** This member's assignment; empty on an error. */
  assignment: Uint8Array;
}

/** Writes a SyncGroup response body (no header, no size prefix). */
export function encodeSyncGroupResponse(writer: KafkaWriter, version: number, response: SyncGroupResponse): void {
  requireResponseVersion('SyncGroup', SYNC_GROUP_VERSIONS, version);
  if (carries('throttleTimeMs', version)) writer.int32(response.throttleTimeMs);
  writer.int16(response.errorCode).bytes(response.assignment);
}
