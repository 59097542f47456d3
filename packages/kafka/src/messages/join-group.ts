/**
 * JoinGroup (API key 11), the first step of a rebalance: a member announces the protocols it can run and
 * the coordinator answers, once every member has joined, with the generation, the chosen protocol and (to
 * the leader only) every member's metadata. Versions 0–5 are the non-flexible ones; version 6 switches to
 * compact encodings and is not handled here.
 */
import type { KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';
import { requireRequestVersion, requireResponseVersion, type VersionRange } from './header';

export const JOIN_GROUP_VERSIONS: VersionRange = { min: 0, max: 5 };

/** The versions that carry each field that not every version has. */
const FIELD_VERSIONS: Record<'rebalanceTimeoutMs' | 'groupInstanceId' | 'throttleTimeMs', { since: number }> = {
  rebalanceTimeoutMs: { since: 1 },
  // Static membership (KIP-345): the request's own id and each member's id in the leader's list.
  groupInstanceId: { since: 5 },
  throttleTimeMs: { since: 2 },
};

function carries(field: keyof typeof FIELD_VERSIONS, version: number): boolean {
  return version >= FIELD_VERSIONS[field].since;
}

/** One protocol a joining member can run (for consumers: an assignor name and its subscription bytes). */
export interface JoinGroupRequestProtocol {
  name: string;
  /** Opaque to the coordinator except for DescribeGroups (see consumer-protocol.ts). */
  metadata: Uint8Array;
}

/**
 * A decoded JoinGroup request. Fields that a version lacks read as the value the protocol gives them:
 * version 0 has no rebalance timeout, and the broker then uses the session timeout for both.
 */
export interface JoinGroupRequest {
  groupId: string;
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  /** Empty on a member's first join; from version 4 the coordinator answers MEMBER_ID_REQUIRED with one. */
  memberId: string;
  /** Set by static members (version 5+); null otherwise. */
  groupInstanceId: string | null;
  protocolType: string;
  /** In the member's order of preference. */
  protocols: JoinGroupRequestProtocol[];
}

/** Reads a JoinGroup request body (after the request header). */
export function decodeJoinGroupRequest(reader: KafkaReader, version: number): JoinGroupRequest {
  requireRequestVersion('JoinGroup', JOIN_GROUP_VERSIONS, version);
  const groupId = reader.string('JoinGroup group_id');
  const sessionTimeoutMs = reader.int32('JoinGroup session_timeout_ms');
  const rebalanceTimeoutMs = carries('rebalanceTimeoutMs', version) ? reader.int32('JoinGroup rebalance_timeout_ms') : sessionTimeoutMs;
  const memberId = reader.string('JoinGroup member_id');
  const groupInstanceId = carries('groupInstanceId', version) ? reader.nullableString('JoinGroup group_instance_id') : null;
  const protocolType = reader.string('JoinGroup protocol_type');
  const protocols = reader.array(
    (item) => ({ name: item.string('JoinGroup protocols.name'), metadata: item.bytes('JoinGroup protocols.metadata') }),
    'JoinGroup protocols',
  );
  return { groupId, sessionTimeoutMs, rebalanceTimeoutMs, memberId, groupInstanceId, protocolType, protocols };
}

/** One member as the leader sees it in the JoinGroup response. */
export interface JoinGroupResponseMember {
  memberId: string;
  /** Written from version 5; dropped in older versions. */
  groupInstanceId: string | null;
  /** The member's metadata for the chosen protocol. */
  metadata: Uint8Array;
}

/**
 * A JoinGroup response to encode. `members` is filled for the leader only (followers get an empty list);
 * `throttleTimeMs` is written from version 2.
 */
export interface JoinGroupResponse {
  throttleTimeMs: number;
  errorCode: number;
  generationId: number;
  /** The protocol chosen for the group; empty on an error. */
  protocolName: string;
  /** The leader's member id. */
  leader: string;
  /** The id of the member this response goes to (also set on MEMBER_ID_REQUIRED). */
  memberId: string;
  members: JoinGroupResponseMember[];
}

/** Writes a JoinGroup response body (no header, no size prefix). */
export function encodeJoinGroupResponse(writer: KafkaWriter, version: number, response: JoinGroupResponse): void {
  requireResponseVersion('JoinGroup', JOIN_GROUP_VERSIONS, version);
  if (carries('throttleTimeMs', version)) writer.int32(response.throttleTimeMs);
  writer.int16(response.errorCode).int32(response.generationId).string(response.protocolName).string(response.leader).string(response.memberId);
  writer.array(response.members, (item, member) => {
    item.string(member.memberId);
    if (carries('groupInstanceId', version)) item.nullableString(member.groupInstanceId);
    item.bytes(member.metadata);
  });
}
