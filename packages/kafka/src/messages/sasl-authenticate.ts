/**
 * SaslAuthenticate (API key 36), SaslAuthenticateRequest.json / SaslAuthenticateResponse.json, versions 0-2:
 * one step of a SASL exchange after SaslHandshake v1 (KIP-152). The request carries the mechanism's bytes; the
 * response its answer, an error code and message (SASL_AUTHENTICATION_FAILED when the credentials are wrong),
 * and from version 1 the session's lifetime (0: no re-authentication is asked for, KIP-368). Version 2 is the
 * first flexible one.
 */
import type { KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';
import { requireRequestVersion, requireResponseVersion, type VersionRange } from './header';

export const SASL_AUTHENTICATE_VERSIONS: VersionRange = { min: 0, max: 2 };

const FIRST_VERSION_WITH = { sessionLifetimeMs: 1, flexible: 2 } as const;

export interface SaslAuthenticateRequest {
  authBytes: Uint8Array;
}

export function decodeSaslAuthenticateRequest(reader: KafkaReader, version: number): SaslAuthenticateRequest {
  requireRequestVersion('SaslAuthenticate', SASL_AUTHENTICATE_VERSIONS, version);
  if (version < FIRST_VERSION_WITH.flexible) return { authBytes: reader.bytes('SaslAuthenticate auth_bytes') };
  const authBytes = reader.compactBytes('SaslAuthenticate auth_bytes');
  reader.taggedFields('SaslAuthenticate tagged fields');
  return { authBytes };
}

export interface SaslAuthenticateResponse {
  errorCode: number;
  errorMessage: string | null;
  authBytes: Uint8Array;
  /** Written from version 1. */
  sessionLifetimeMs: number;
}

export function encodeSaslAuthenticateResponse(writer: KafkaWriter, version: number, response: SaslAuthenticateResponse): void {
  requireResponseVersion('SaslAuthenticate', SASL_AUTHENTICATE_VERSIONS, version);
  const flexible = version >= FIRST_VERSION_WITH.flexible;
  writer.int16(response.errorCode);
  if (flexible) writer.compactNullableString(response.errorMessage).compactBytes(response.authBytes);
  else writer.nullableString(response.errorMessage).bytes(response.authBytes);
  if (version >= FIRST_VERSION_WITH.sessionLifetimeMs) writer.int64(response.sessionLifetimeMs);
  if (flexible) writer.taggedFields();
}
