/**
 * LeaveGroup (API key 13): members leave a group at once instead of waiting for their session to time out.
 * Versions 0–2 name one member by member id; version 3 (KIP-345) names a batch of members, each by member
 * id or by group instance id, and answers per member. Versions 0–3 are the non-flexible ones; version 4
 * switches to compact encodings and is not handled here.
 */
import { ERROR_CODES } from '../wire/codes';
import type { KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';
import { requireRequestVersion, requireResponseVersion, type VersionRange } from './header';

export const LEAVE_GROUP_VERSIONS: VersionRange = { min: 0, max: 3 };

/** The versions that carry each field that not every version has. */
const FIELD_VERSIONS: Record<'memberId' | 'members' | 'throttleTimeMs', { since: number; until?: number }> = {
  // The request's single member id, replaced by the members batch in version 3.
  memberId: { since: 0, until: 2 },
  // The request's members batch and the response's per-member outcomes.
  members: { since: 3 },
  throttleTimeMs: { since: 1 },
};

function carries(field: keyof typeof FIELD_VERSIONS, version: number): boolean {
  const range = FIELD_VERSIONS[field];
  return version >= range.since && version <= (range.until ?? Infinity);
}

/** One member that leaves. */
export interface LeaveGroupRequestMember {
  /** May be empty (version 3) when a static member is named by its instance id alone. */
  memberId: string;
  groupInstanceId: string | null;
}

/**
 * A decoded LeaveGroup request. Every version reads as a batch: versions 0–2 give a batch of one member
 * with no instance id, as the Java broker reads them, so the coordinator handles one shape.
 */
export interface LeaveGroupRequest {
  groupId: string;
  members: LeaveGroupRequestMember[];
}

/** Reads a LeaveGroup request body (after the request header). */
export function decodeLeaveGroupRequest(reader: KafkaReader, version: number): LeaveGroupRequest {
  requireRequestVersion('LeaveGroup', LEAVE_GROUP_VERSIONS, version);
  const groupId = reader.string('LeaveGroup group_id');
  if (carries('memberId', version)) return { groupId, members: [{ memberId: reader.string('LeaveGroup member_id'), groupInstanceId: null }] };
  const members = reader.array(
    (item) => ({ memberId: item.string('LeaveGroup members.member_id'), groupInstanceId: item.nullableString('LeaveGroup members.group_instance_id') }),
    'LeaveGroup members',
  );
  return { groupId, members };
}

/** The outcome for one member that asked to leave (version 3+). */
export interface LeaveGroupResponseMember {
  memberId: string;
  groupInstanceId: string | null;
  errorCode: number;
}

/**
 * A LeaveGroup response to encode. `errorCode` is the group-level outcome (e.g. NOT_COORDINATOR);
 * `members` holds one outcome per member asked to leave, written from version 3.
 */
export interface LeaveGroupResponse {
  throttleTimeMs: number;
  errorCode: number;
  members: LeaveGroupResponseMember[];
}

/**
 * Writes a LeaveGroup response body (no header, no size prefix). Versions 0–2 have no per-member outcomes,
 * so there the group-level error code, when NONE, is replaced by the first member's error (as the Java
 * broker does): a v0–2 client learns that its one member was not removed (e.g. UNKNOWN_MEMBER_ID).
 */
export function encodeLeaveGroupResponse(writer: KafkaWriter, version: number, response: LeaveGroupResponse): void {
  requireResponseVersion('LeaveGroup', LEAVE_GROUP_VERSIONS, version);
  if (carries('throttleTimeMs', version)) writer.int32(response.throttleTimeMs);
  if (!carries('members', version)) {
    writer.int16(response.errorCode !== ERROR_CODES.NONE ? response.errorCode : firstMemberError(response.members));
    return;
  }
  writer.int16(response.errorCode);
  writer.array(response.members, (item, member) => {
    item.string(member.memberId).nullableString(member.groupInstanceId).int16(member.errorCode);
  });
}

function firstMemberError(members: readonly LeaveGroupResponseMember[]): number {
  return members.find((member) => member.errorCode !== ERROR_CODES.NONE)?.errorCode ?? ERROR_CODES.NONE;
}
