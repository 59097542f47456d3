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

/** JetStream API error code of a stream that needs more servers (replicas) or storage than the cluster has. */
const INSUFFICIENT_RESOURCES_ERROR_CODE = 10023;

/**
 * A failure to create (or open) a stream or KV bucket: `UnavailableError` when it may be transient, else an
 * error that says what was being done, and, when the cluster lacks the servers for `replicas`, that
 * `MINK_META_REPLICAS` asks for more replicas than the NATS cluster has servers.
 */
export function creationError(error: unknown, what: string, replicas: number): Error {
  const translated = translateNatsError(error, what);
  if (translated instanceof UnavailableError) return translated;
  const insufficient = error instanceof NatsError && error.api_error?.err_code === INSUFFICIENT_RESOURCES_ERROR_CODE;
  const hint = insufficient && replicas > 1 ? `; ${replicas} replicas need a JetStream cluster of at least ${replicas} servers (MINK_META_REPLICAS)` : '';
  const described = new Error(`${what}: ${translated.message}${hint}`);
  described.cause = error;
  return described;
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

/** How a KV bucket mink uses is created when it does not exist yet. */
export interface BucketCreationOptions {
  /** Replicas of the bucket's stream (`MINK_META_REPLICAS`); 1 when absent. An existing bucket keeps its own. */
  replicas?: number;
  /** Timeout of the bucket's JetStream requests (nats.js's default, 5 s, when absent). */
  requestTimeoutMs?: number;
}

/**
 * Opens (creating if needed) a KV bucket that keeps only the latest value of each key. Processes of a
 * starting cluster open the same buckets at once; the one that loses the creation race gets an error, and
 * simply opens the bucket the winner created. nats.js creates the bucket only when it is missing, so opening
 * an existing bucket never changes its configuration (its replicas included).
 */
export async function openLatestValueBucket(connection: NatsConnection, bucket: string, options: BucketCreationOptions = {}): Promise<KV> {
  for (let attempt = 1; ; attempt++) {
    try {
      const jetStream = options.requestTimeoutMs === undefined ? connection.jetstream() : connection.jetstream({ timeout: options.requestTimeoutMs });
      return await jetStream.views.kv(bucket, { history: 1, replicas: options.replicas ?? 1 });
    } catch (error) {
      const raced = error instanceof NatsError && CREATION_RACE_ERROR_CODES.has(error.api_error?.err_code ?? 0);
      if (!raced || attempt >= KV_OPEN_ATTEMPTS_MAX) throw creationError(error, `open KV bucket ${bucket}`, options.replicas ?? 1);
    }
  }
}
