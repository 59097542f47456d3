/**
 * FindCoordinator (key 10), FindCoordinatorRequest.json / FindCoordinatorResponse.json, versions 0-2
 * (none flexible). Version 0 can only ask for a group's coordinator; version 1 adds the key type so a
 * transactional producer can ask for its transaction coordinator.
 */
import type { KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';
import { requireRequestVersion, requireResponseVersion, type VersionRange } from './header';

export const FIND_COORDINATOR_VERSIONS: VersionRange = { min: 0, max: 2 };

/** What the key of a FindCoordinator request names. */
export const COORDINATOR_KEY_TYPES = {
  group: 0,
  transaction: 1,
} as const;

/** The first version in which each field that is not in every version appears. */
const FIRST_VERSION_WITH = {
  keyType: 1,
  throttleTimeMs: 1,
  errorMessage: 1,
} as const;

export interface FindCoordinatorRequest {
  /** A group id, or a transactional id when `keyType` says so. */
  key: string;
  /** One of COORDINATOR_KEY_TYPES; `group` below version 1. */
  keyType: number;
}

export function decodeFindCoordinatorRequest(reader: KafkaReader, version: number): FindCoordinatorRequest {
  requireRequestVersion('FindCoordinator', FIND_COORDINATOR_VERSIONS, version);
  const key = reader.string('FindCoordinator key');
  const keyType = version >= FIRST_VERSION_WITH.keyType ? reader.int8('FindCoordinator key_type') : COORDINATOR_KEY_TYPES.group;
  return { key, keyType };
}

/** A FindCoordinator answer: the coordinator's address, or an error with node -1, host '' and port -1. */
export interface FindCoordinatorResponse {
  /** Written from version 1; 0 when absent. */
  throttleTimeMs?: number;
  errorCode: number;
  /** Written from version 1; null when absent. */
  errorMessage?: string | null;
  nodeId: number;
  host: string;
  port: number;
}

/** Writes the body of a FindCoordinator response (no header, no size). */
export function encodeFindCoordinatorResponse(writer: KafkaWriter, version: number, response: FindCoordinatorResponse): void {
  requireResponseVersion('FindCoordinator', FIND_COORDINATOR_VERSIONS, version);
  if (version >= FIRST_VERSION_WITH.throttleTimeMs) writer.int32(response.throttleTimeMs ?? 0);
  writer.int16(response.errorCode);
  if (version >= FIRST_VERSION_WITH.errorMessage) writer.nullableString(response.errorMessage ?? null);
  writer.int32(response.nodeId).string(response.host).int32(response.port);
}
