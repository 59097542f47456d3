import { NatsError, type KV, type NatsConnection } from 'nats';
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

/**
 * JetStream API error codes of a stream creation that lost a race with another process creating the same
 * stream at the same moment ("stream name already in use", "subjects overlap with an existing stream").
 */
const CREATION_RACE_ERROR_CODES = new Set([10058, 10065]);

/** Attempts to open a KV bucket when another process keeps creating it at the same moment. */
const KV_OPEN_ATTEMPTS_MAX = 3;

/**
 * Opens (creating if needed) a KV bucket that keeps only the latest value of each key. Processes of a
 * starting cluster open the same buckets at once; the one that loses the creation race gets an error, and
 * simply opens the bucket the winner created.
 */
export async function openLatestValueBucket(connection: NatsConnection, bucket: string): Promise<KV> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await connection.jetstream().views.kv(bucket, { history: 1 });
    } catch (error) {
      const raced = error instanceof NatsError && CREATION_RACE_ERROR_CODES.has(error.api_error?.err_code ?? 0);
      if (!raced || attempt >= KV_OPEN_ATTEMPTS_MAX) throw translateNatsError(error, `open KV bucket ${bucket}`);
    }
  }
}
