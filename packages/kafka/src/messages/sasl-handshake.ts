/**
 * SaslHandshake (API key 17), SaslHandshakeRequest.json / SaslHandshakeResponse.json: the client names the
 * SASL mechanism it will use, the broker answers NONE or UNSUPPORTED_SASL_MECHANISM, and the mechanisms it
 * enables either way. Version 1 means the exchange that follows goes in SaslAuthenticate requests (KIP-152);
 * version 0's bare SASL frames are not served, so only version 1 is (every client of the last years sends it).
 * No version is flexible.
 */
import type { KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';
import { requireRequestVersion, requireResponseVersion, type VersionRange } from './header';

export const SASL_HANDSHAKE_VERSIONS: VersionRange = { min: 1, max: 1 };

export interface SaslHandshakeRequest {
  mechanism: string;
}

export function decodeSaslHandshakeRequest(reader: KafkaReader, version: number): SaslHandshakeRequest {
  requireRequestVersion('SaslHandshake', SASL_HANDSHAKE_VERSIONS, version);
  return { mechanism: reader.string('SaslHandshake mechanism') };
}

export interface SaslHandshakeResponse {
  errorCode: number;
  mechanisms: readonly string[];
}

export function encodeSaslHandshakeResponse(writer: KafkaWriter, version: number, response: SaslHandshakeResponse): void {
  requireResponseVersion('SaslHandshake', SASL_HANDSHAKE_VERSIONS, version);
  writer.int16(response.errorCode);
  writer.array(response.mechanisms, (each, mechanism) => each.string(mechanism));
}
