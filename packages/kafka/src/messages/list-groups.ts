/**
 * ListGroups (API key 16): admin tools list the groups a coordinator holds. The request of versions 0–2
 * has no fields; version 3 switches to compact encodings and version 4 adds a state filter, neither
 * handled here.
 */
import type { KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';
import { requireRequestVersion, requireResponseVersion, type VersionRange } from './header';

export const LIST_GROUPS_VERSIONS: VersionRange = { min: 0, max: 2 };

/** The versions that carry each field that not every version has. */
const FIELD_VERSIONS: Record<'throttleTimeMs', { since: number }> = {
  throttleTimeMs: { since: 1 },
};

function carries(field: keyof typeof FIELD_VERSIONS, version: number): boolean {
  return version >= FIELD_VERSIONS[field].since;
}

/** A decoded ListGroups request: versions 0–2 carry nothing. */
export type ListGroupsRequest = Record<string, never>;

/**
 * Reads a ListGroups request body (after the request header). Nothing is read: trailing bytes are left
 * to the caller, as for every other request.
 */
export function decodeListGroupsRequest(_reader: KafkaReader, version: number): ListGroupsRequest {
  requireRequestVersion('ListGroups', LIST_GROUPS_VERSIONS, version);
  return {};
}

export interface ListedGroup {
  groupId: string;
  /** e.g. "consumer"; empty for a group whose members use no protocol type (offsets-only groups). */
  protocolType: string;
}

/** A ListGroups response to encode; `throttleTimeMs` is written from v1. */
export interface ListGroupsResponse {
  throttleTimeMs: number;
  errorCode: number;
  groups: ListedGroup[];
}

/** Writes a ListGroups response body (no header, no size prefix). */
export function encodeListGroupsResponse(writer: KafkaWriter, version: number, response: ListGroupsResponse): void {
  requireResponseVersion('ListGroups', LIST_GROUPS_VERSIONS, version);
  if (carries('throttleTimeMs', version)) writer.int32(response.throttleTimeMs);
  writer.int16(response.errorCode).array(response.groups, (item, group) => {
    item.string(group.groupId).string(group.protocolType);
  });
}
