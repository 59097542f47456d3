import { NatsError } from 'nats';
import { UnavailableError } from '@mink/protocol';

/**
 * NATS error codes that say nothing about the command itself: the server, the stream's leader or the
 * connection was not reachable in time. The append may or may not have landed; retrying with the same
 * message id is safe because JetStream de-duplicates it.
 */
const TRANSIENT_NATS_CODES = new Set([
  'TIMEOUT',
  '503',
  'DISCONNECT',
  'CONNECTION_CLOSED',
  'CONNECTION_DRAINING',
  'CONNECTION_REFUSED',
  'CONNECTION_TIMEOUT',
  'REQUEST_ERROR',
]);

/** Turns a failure of a NATS call into `UnavailableError` when it may be transient; anything else is rethrown. */
export function translateNatsError(error: unknown, what: string): Error {
  if (error instanceof NatsError && TRANSIENT_NATS_CODES.has(error.code)) {
    const translated = new UnavailableError(`${what}: ${error.message}`);
    translated.cause = error;
    return translated;
  }
  return error instanceof Error ? error : new Error(String(error));
}

/** JetStream API error code of a compare-and-set on a stale revision ("wrong last sequence"). */
const WRONG_LAST_SEQUENCE_ERROR_CODE = 10071;
/** JetStream API error code of a look-up of a stream that does not exist. */
const STREAM_NOT_FOUND_ERROR_CODE = 10059;

/** True when a KV create/update/delete failed because the key is not at the revision the caller expected. */
export function isWrongRevision(error: unknown): boolean {
  return error instanceof NatsError && error.api_error?.err_code === WRONG_LAST_SEQUENCE_ERROR_CODE;
}

export function isStreamNotFound(error: unknown): boolean {
  return error instanceof NatsError && error.api_error?.err_code === STREAM_NOT_FOUND_ERROR_CODE;
}
