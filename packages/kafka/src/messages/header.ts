/**
 * Request and response headers of the Kafka protocol (RequestHeader.json, ResponseHeader.json), and the
 * version rules every message codec shares.
 *
 * A request's header version follows from its API key and version: header v2 (v1 plus tagged fields)
 * exactly when that API version is flexible (KIP-482), v1 otherwise. A response's header is v1 (the
 * correlation id plus tagged fields) when the API version is flexible, v0 otherwise, with one exception:
 * ApiVersions answers always use header v0 (KIP-511), because a client that does not yet know the
 * broker's versions must be able to read the correlation id of the answer whatever version it asked for.
 */
import { API_KEYS, type ApiName } from '../wire/codes';
import { KafkaDecodeError, type KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';

/**
 * The first flexible version of each API mink knows (the `flexibleVersions` of its message spec). Typed
 * by API name so that an API added to `API_KEYS` without a row here fails to compile.
 */
const FIRST_FLEXIBLE_VERSION: Readonly<Record<ApiName, number>> = {
  Produce: 9,
  Fetch: 12,
  ListOffsets: 6,
  Metadata: 9,
  OffsetCommit: 8,
  OffsetFetch: 6,
  FindCoordinator: 3,
  JoinGroup: 6,
  Heartbeat: 4,
  LeaveGroup: 4,
  SyncGroup: 4,
  DescribeGroups: 5,
  ListGroups: 3,
  ApiVersions: 3,
  // SaslHandshake has no flexible version.
  SaslHandshake: Number.POSITIVE_INFINITY,
  SaslAuthenticate: 2,
  CreateTopics: 5,
  DeleteTopics: 4,
  DeleteRecords: 2,
  InitProducerId: 2,
  OffsetForLeaderEpoch: 4,
  AddPartitionsToTxn: 3,
  AddOffsetsToTxn: 3,
  EndTxn: 3,
  TxnOffsetCommit: 3,
  DescribeConfigs: 4,
  AlterConfigs: 2,
  IncrementalAlterConfigs: 1,
};

const firstFlexibleVersionByApiKey: ReadonlyMap<number, number> = new Map(
  (Object.keys(FIRST_FLEXIBLE_VERSION) as ApiName[]).map((name) => [API_KEYS[name], FIRST_FLEXIBLE_VERSION[name]]),
);

/**
 * Whether `apiVersion` of the API `apiKey` is flexible (compact strings and arrays, tagged fields). An API
 * key mink does not know counts as not flexible: its body is never decoded, and the header fields before
 * the tagged fields (all a refusal needs) read the same in both header versions.
 */
export function isFlexibleVersion(apiKey: number, apiVersion: number): boolean {
  const firstFlexible = firstFlexibleVersionByApiKey.get(apiKey);
  return firstFlexible !== undefined && apiVersion >= firstFlexible;
}

export type RequestHeaderVersion = 1 | 2;
export type ResponseHeaderVersion = 0 | 1;

/** The request header version a client uses for `apiVersion` of `apiKey`. */
export function requestHeaderVersion(apiKey: number, apiVersion: number): RequestHeaderVersion {
  return isFlexibleVersion(apiKey, apiVersion) ? 2 : 1;
}

/** The response header version to answer `apiVersion` of `apiKey` with; ApiVersions is always v0 (KIP-511). */
export function responseHeaderVersion(apiKey: number, apiVersion: number): ResponseHeaderVersion {
  if (apiKey === API_KEYS.ApiVersions) return 0;
  return isFlexibleVersion(apiKey, apiVersion) ? 1 : 0;
}

/** A decoded request header. The reader that decoded it is left at the first byte of the body. */
export interface RequestHeader {
  apiKey: number;
  apiVersion: number;
  correlationId: number;
  /** Null when the client sent none. */
  clientId: string | null;
  headerVersion: RequestHeaderVersion;
}

/**
 * Decodes the header at the reader's position; the header version is decided from the API key and
 * version it starts with. The client id keeps its int16 length even in header v2 (the spec marks it
 * `flexibleVersions: none`), so that any broker can read the header of any ApiVersions request.
 */
export function decodeRequestHeader(reader: KafkaReader): RequestHeader {
  const apiKey = reader.int16('request header api_key');
  const apiVersion = reader.int16('request header api_version');
  const correlationId = reader.int32('request header correlation_id');
  const clientId = reader.nullableString('request header client_id');
  const headerVersion = requestHeaderVersion(apiKey, apiVersion);
  if (headerVersion === 2) reader.taggedFields('request header tagged fields');
  return { apiKey, apiVersion, correlationId, clientId, headerVersion };
}

/** Writes a response header of `headerVersion` (see `responseHeaderVersion`). */
export function encodeResponseHeader(writer: KafkaWriter, correlationId: number, headerVersion: ResponseHeaderVersion): void {
  writer.int32(correlationId);
  if (headerVersion === 1) writer.taggedFields();
}

/** The versions of one API that mink serves, both ends inclusive. */
export interface VersionRange {
  readonly min: number;
  readonly max: number;
}

/**
 * Refuses to decode a request body of a version outside `range`. The listener should have answered
 * such a request with UNSUPPORTED_VERSION before decoding it; reaching this is still a malformed frame
 * from the decoder's point of view, not a crash.
 */
export function requireRequestVersion(api: ApiName, range: VersionRange, version: number): void {
  if (!Number.isInteger(version) || version < range.min || version > range.max) {
    throw new KafkaDecodeError(`${api} request version ${version} is outside the served versions ${range.min}-${range.max}`);
  }
}

/**
 * Refuses to encode a response of a version outside `range`: the broker only answers versions it
 * accepted, so this is a bug in the caller and throws a plain Error.
 */
export function requireResponseVersion(api: ApiName, range: VersionRange, version: number): void {
  if (!Number.isInteger(version) || version < range.min || version > range.max) {
    throw new Error(`${api} response version ${version} is outside the served versions ${range.min}-${range.max}`);
  }
}
