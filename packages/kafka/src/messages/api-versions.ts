/**
 * ApiVersions (key 18), ApiVersionsRequest.json / ApiVersionsResponse.json, versions 0-3. Version 3 is
 * the first flexible version: compact strings and arrays, tagged fields after every struct.
 *
 * Answering a version mink does not serve (KIP-511): a client that asks with a newer version than the
 * broker knows gets a version 0 answer, with response header v0, carrying UNSUPPORTED_VERSION and the
 * range of ApiVersions versions the broker serves; the client then retries with the highest of them.
 * The listener does not decode the body of such a request (its layout is unknown) and writes
 *
 *   const version = apiVersionsResponseVersion(header.apiVersion); // 0
 *   encodeResponseHeader(writer, header.correlationId, responseHeaderVersion(header.apiKey, header.apiVersion)); // v0
 *   encodeApiVersionsResponse(writer, version, unsupportedApiVersionsResponse());
 */
import { API_KEYS, ERROR_CODES } from '../wire/codes';
import type { KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';
import { requireRequestVersion, requireResponseVersion, type VersionRange } from './header';

export const API_VERSIONS_VERSIONS: VersionRange = { min: 0, max: 3 };

/** The first version in which each field that is not in every version appears. */
const FIRST_VERSION_WITH = {
  throttleTimeMs: 1,
  clientSoftware: 3,
  flexible: 3,
} as const;

/** A decoded ApiVersions request. Versions 0-2 have an empty body, so both fields are null there. */
export interface ApiVersionsRequest {
  clientSoftwareName: string | null;
  clientSoftwareVersion: string | null;
}

export function decodeApiVersionsRequest(reader: KafkaReader, version: number): ApiVersionsRequest {
  requireRequestVersion('ApiVersions', API_VERSIONS_VERSIONS, version);
  if (version < FIRST_VERSION_WITH.clientSoftware) return { clientSoftwareName: null, clientSoftwareVersion: null };
  const clientSoftwareName = reader.compactString('ApiVersions client_software_name');
  const clientSoftwareVersion = reader.compactString('ApiVersions client_software_version');
  reader.taggedFields('ApiVersions tagged fields');
  return { clientSoftwareName, clientSoftwareVersion };
}

/** The versions the broker serves for one API key. */
export interface ApiVersionRange {
  apiKey: number;
  minVersion: number;
  maxVersion: number;
}

/** An ApiVersions answer. Entries of `apiKeys` are written in the given order (clients index them by key). */
export interface ApiVersionsResponse {
  errorCode: number;
  apiKeys: readonly ApiVersionRange[];
  /** Written from version 1; 0 when absent. */
  throttleTimeMs?: number;
}

/** Writes the body of an ApiVersions response (no header, no size). */
export function encodeApiVersionsResponse(writer: KafkaWriter, version: number, response: ApiVersionsResponse): void {
  requireResponseVersion('ApiVersions', API_VERSIONS_VERSIONS, version);
  const flexible = version >= FIRST_VERSION_WITH.flexible;
  writer.int16(response.errorCode);
  const writeRange = (each: KafkaWriter, range: ApiVersionRange): void => {
    each.int16(range.apiKey).int16(range.minVersion).int16(range.maxVersion);
    if (flexible) each.taggedFields();
  };
  if (flexible) writer.compactArray(response.apiKeys, writeRange);
  else writer.array(response.apiKeys, writeRange);
  if (version >= FIRST_VERSION_WITH.throttleTimeMs) writer.int32(response.throttleTimeMs ?? 0);
  if (flexible) writer.taggedFields();
}

/** The version to answer an ApiVersions request of `requestedVersion` in: itself when served, else 0 (KIP-511). */
export function apiVersionsResponseVersion(requestedVersion: number): number {
  const served = requestedVersion >= API_VERSIONS_VERSIONS.min && requestedVersion <= API_VERSIONS_VERSIONS.max;
  return served ? requestedVersion : 0;
}

/**
 * The answer to an ApiVersions request of a version mink does not serve: UNSUPPORTED_VERSION with, as
 * the Java broker does, the one entry clients look for, the ApiVersions range itself.
 */
export function unsupportedApiVersionsResponse(): ApiVersionsResponse {
  return {
    errorCode: ERROR_CODES.UNSUPPORTED_VERSION,
    apiKeys: [{ apiKey: API_KEYS.ApiVersions, minVersion: API_VERSIONS_VERSIONS.min, maxVersion: API_VERSIONS_VERSIONS.max }],
  };
}
