import type { AccessPolicy, IssuedToken } from '@mink/protocol';
import { isSaslMechanism, saslExchangeOf, type SaslExchange, type SaslMechanism, type ScramKeyStore } from '../auth/sasl-exchange';
import { SASL_AUTHENTICATE_VERSIONS, decodeSaslAuthenticateRequest, encodeSaslAuthenticateResponse } from '../messages/sasl-authenticate';
import { SASL_HANDSHAKE_VERSIONS, decodeSaslHandshakeRequest, encodeSaslHandshakeResponse } from '../messages/sasl-handshake';
import { API_KEYS, ERROR_CODES } from '../wire/codes';
import type { KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';
import type { BrokerContext, ServedApi } from './kafka-broker';

/**
 * How the Kafka listener authenticates (docs/operations.md "Authentication"): SASL against the gateway's tokens file, with
 * the mechanisms enabled. Without it (no tokens file) every connection may do everything, as before.
 */
export interface KafkaAuthentication {
  policy: AccessPolicy;
  mechanisms: readonly SaslMechanism[];
  keys: ScramKeyStore;
  /** Told of each failed exchange with its reason (for a log line; the client only learns that it failed). */
  onFailure?: (peer: string, reason: string) => void;
}

/**
 * One connection's SASL state: the exchange under way, then the token it proved. An authenticated connection
 * keeps its token until it closes (no re-authentication, KIP-368: the session lifetime is 0); a failed
 * exchange leaves the connection able to send nothing but ApiVersions, as Kafka closes it.
 */
export interface KafkaSession {
  exchange: SaslExchange | null;
  token: IssuedToken | null;
  failed: boolean;
}

export function newKafkaSession(): KafkaSession {
  return { exchange: null, token: null, failed: false };
}

/** The APIs a connection may use before it has authenticated. */
export const BEFORE_AUTHENTICATION: ReadonlySet<number> = new Set([API_KEYS.ApiVersions, API_KEYS.SaslHandshake, API_KEYS.SaslAuthenticate]);

export function saslApis(): [number, ServedApi][] {
  const api = (range: { min: number; max: number }, handle: ServedApi['handle']): ServedApi => ({ advertised: range, served: range, handle });
  return [
    // Advertised from version 0, as Kafka does: librdkafka enables SASL only when the range starts at 0. Version 0
    // requests (bare SASL frames follow) are not served and close the connection; every client that sees
    // SaslAuthenticate advertised sends version 1.
    [API_KEYS.SaslHandshake, { advertised: { min: 0, max: SASL_HANDSHAKE_VERSIONS.max }, served: SASL_HANDSHAKE_VERSIONS, handle: saslHandshake }],
    [API_KEYS.SaslAuthenticate, api(SASL_AUTHENTICATE_VERSIONS, saslAuthenticate)],
  ];
}

async function saslHandshake(context: BrokerContext, reader: KafkaReader, version: number, writer: KafkaWriter): Promise<'respond'> {
  const { mechanism } = decodeSaslHandshakeRequest(reader, version);
  const { authentication, session } = context;
  const mechanisms = authentication?.mechanisms ?? [];
  let errorCode: number = ERROR_CODES.NONE;
  if (session.token !== null || session.exchange !== null || session.failed) errorCode = ERROR_CODES.ILLEGAL_SASL_STATE;
  else if (authentication === null || !isSaslMechanism(mechanism) || !mechanisms.includes(mechanism)) errorCode = ERROR_CODES.UNSUPPORTED_SASL_MECHANISM;
  else session.exchange = saslExchangeOf(mechanism, authentication.policy, authentication.keys);
  encodeSaslHandshakeResponse(writer, version, { errorCode, mechanisms });
  return 'respond';
}

async function saslAuthenticate(context: BrokerContext, reader: KafkaReader, version: number, writer: KafkaWriter): Promise<'respond'> {
  const { authBytes } = decodeSaslAuthenticateRequest(reader, version);
  const { session } = context;
  const answer = (errorCode: number, errorMessage: string | null, reply: Uint8Array = new Uint8Array(0)): 'respond' => {
    encodeSaslAuthenticateResponse(writer, version, { errorCode, errorMessage, authBytes: reply, sessionLifetimeMs: 0 });
    return 'respond';
  };
  if (session.exchange === null || session.token !== null || session.failed) return answer(ERROR_CODES.ILLEGAL_SASL_STATE, 'SaslAuthenticate comes after a SaslHandshake, once');
  const step = await session.exchange.step(authBytes);
  if (step.kind === 'failed') {
    session.exchange = null;
    session.failed = true;
    context.authentication?.onFailure?.(context.peer, step.reason);
    return answer(ERROR_CODES.SASL_AUTHENTICATION_FAILED, 'Authentication failed: invalid credentials');
  }
  if (step.kind === 'authenticated') {
    session.exchange = null;
    session.token = step.token;
  }
  return answer(ERROR_CODES.NONE, null, step.reply);
}
