/**
 * DescribeGroups (API key 15): admin tools read a group's state, protocol and members (with each member's
 * metadata and assignment bytes, which for consumers are decoded with consumer-protocol.ts). Versions 0–4
 * are the non-flexible ones; version 5 switches to compact encodings and is not handled here.
 */
import type { KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';
import { requireRequestVersion, requireResponseVersion, type VersionRange } from './header';

export const DESCRIBE_GROUPS_VERSIONS: VersionRange = { min: 0, max: 4 };

/** The value of `authorizedOperations` when the client did not ask for it (the spec's default, INT32_MIN). */
export const AUTHORIZED_OPERATIONS_OMITTED = -2147483648;

type Field = 'throttleTimeMs' | 'authorizedOperations' | 'groupInstanceId';

/** The versions that carry each field that not every version has. */
const FIELD_VERSIONS: Record<Field, { since: number }> = {
  throttleTimeMs: { since: 1 },
  // The request's include_authorized_operations flag and the per-group bit field (KIP-430).
  authorizedOperations: { since: 3 },
  // Each member's static instance id (KIP-345).
  groupInstanceId: { since: 4 },
};

function carries(field: Field, version: number): boolean {
  return version >= FIELD_VERSIONS[field].since;
}

/** A decoded DescribeGroups request. */
export interface DescribeGroupsRequest {
  /** The group ids to describe, in the order the response must answer them. */
  groups: string[];
  /** From v3; false before. When false, answer AUTHORIZED_OPERATIONS_OMITTED. */
  includeAuthorizedOperations: boolean;
}

/** Reads a DescribeGroups request body (after the request header). */
export function decodeDescribeGroupsRequest(reader: KafkaReader, version: number): DescribeGroupsRequest {
  requireRequestVersion('DescribeGroups', DESCRIBE_GROUPS_VERSIONS, version);
  const groups = reader.array((group) => group.string('DescribeGroups groups'), 'DescribeGroups groups');
  const includeAuthorizedOperations = carries('authorizedOperations', version) ? reader.boolean('DescribeGroups include_authorized_operations') : false;
  return { groups, includeAuthorizedOperations };
}

/** One member of a described group. */
export interface DescribedGroupMember {
  memberId: string;
  /** Written from v4; dropped in older versions. */
  groupInstanceId: string | null;
  clientId: string;
  clientHost: string;
  /** The member's metadata for the group's protocol; empty unless the group is Stable. */
  memberMetadata: Uint8Array;
  /** The member's assignment; empty unless the group is Stable. */
  memberAssignment: Uint8Array;
}

/** One described group; an unknown group is answered with state "Dead" and no members, not an error. */
export interface DescribedGroup {
  errorCode: number;
  groupId: string;
  /** "Stable", "PreparingRebalance", "CompletingRebalance", "Empty" or "Dead". */
  groupState: string;
  /** e.g. "consumer"; empty when the group has none. */
  protocolType: string;
  /** The chosen protocol (for consumers: the assignor name); empty unless the group is Stable. */
  protocolData: string;
  members: DescribedGroupMember[];
  /** Written from v3: a bit field of the ACL operations the caller may perform on the group. */
  authorizedOperations: number;
}

/** A DescribeGroups response to encode; `throttleTimeMs` is written from v1. */
export interface DescribeGroupsResponse {
  throttleTimeMs: number;
  groups: DescribedGroup[];
}

/** Writes a DescribeGroups response body (no header, no size prefix). */
export function encodeDescribeGroupsResponse(writer: KafkaWriter, version: number, response: DescribeGroupsResponse): void {
  requireResponseVersion('DescribeGroups', DESCRIBE_GROUPS_VERSIONS, version);
  if (carries('throttleTimeMs', version)) writer.int32(response.throttleTimeMs);
  writer.array(response.groups, (item, group) => {
    item.int16(group.errorCode).string(group.groupId).string(group.groupState).string(group.protocolType).string(group.protocolData);
    item.array(group.members, (entry, member) => {
      entry.string(member.memberId);
      if (carries('groupInstanceId', version)) entry.nullableString(member.groupInstanceId);
      entry.string(member.clientId).string(member.clientHost).bytes(member.memberMetadata).bytes(member.memberAssignment);
    });
    if (carries('authorizedOperations', version)) item.int32(group.authorizedOperations);
  });
}
