import { Metadata, status as GrpcStatus, type StatusObject } from '@grpc/grpc-js';
import { MinkError, toErrorBody, type ErrorCode } from '@mink/protocol';
import { internalErrorMessage, newErrorId } from '@mink/runtime';

/**
 * The one place where outcomes become gRPC statuses, as http-errors.ts does for HTTP: the status of the
 * error's code, its message as the status details, and the mink code, redirect and retry hint in trailing
 * metadata, so a gRPC caller can act on exactly what an HTTP caller reads from the error body.
 */

/** Trailing metadata keys of a failed call. */
export const ERROR_METADATA = {
  /** The stable mink code (`NotFound`, `InvalidArgument`, …), always present on a failure. */
  code: 'mink-error-code',
  /** On NotLeader: the leader as JSON (`Redirect` of @mink/protocol). */
  redirect: 'mink-redirect',
  /** On Unavailable (and RESOURCE_EXHAUSTED): milliseconds to wait before trying again. */
  retryAfterMs: 'mink-retry-after-ms',
  /** On Internal: the id of the error, which the gateway's log line of it also carries (its details are there only). */
  errorId: 'mink-error-id',
} as const;

/** What a failure is on the gRPC wire: a status, its details, and the string metadata that goes with it. */
export interface GrpcFailure {
  code: GrpcStatus;
  details: string;
  metadata: Record<string, string>;
}

/** The gRPC status of each mink code; `Conflict` depends on the method (`grpcFailureOf`). */
export const GRPC_STATUS_OF_CODE: Record<Exclude<ErrorCode, 'Conflict'>, GrpcStatus> = {
  InvalidArgument: GrpcStatus.INVALID_ARGUMENT,
  NotFound: GrpcStatus.NOT_FOUND,
  // The bucket is elsewhere: the gateway follows redirects itself, so one that reaches a caller means retries ran out.
  NotLeader: GrpcStatus.UNAVAILABLE,
  Unavailable: GrpcStatus.UNAVAILABLE,
  // A stale epoch lost to a newer one: the caller retries the whole operation (gRPC's guidance for ABORTED).
  Fenced: GrpcStatus.ABORTED,
  Timeout: GrpcStatus.DEADLINE_EXCEEDED,
  Unauthenticated: GrpcStatus.UNAUTHENTICATED,
  PermissionDenied: GrpcStatus.PERMISSION_DENIED,
  Internal: GrpcStatus.INTERNAL,
};

/** The default wait of an Unavailable without its own hint, as the HTTP `Retry-After` of http-errors.ts. */
const RETRY_AFTER_DEFAULT_MS = 1000;

/**
 * The failure of `method` (a method name of the Mink service) that threw `error`. `Conflict` is
 * ALREADY_EXISTS when a table is created (the table exists) and ABORTED otherwise (a writer's sequence or
 * an epoch lost a race); anything that is not a MinkError is INTERNAL. An Internal failure (a bug here, or
 * an Internal error that crossed from a data node) never carries its own message, which may name objects,
 * offsets or code that are none of the caller's business: its details are `internalErrorMessage(errorId)`
 * and `errorId` goes in its metadata; the caller logs the error with that id.
 */
export function grpcFailureOf(error: unknown, method: string, errorId: string = newErrorId()): GrpcFailure {
  const { code, message, redirect, retryAfterMs } = toErrorBody(error).error;
  const metadata: Record<string, string> = { [ERROR_METADATA.code]: code };
  if (redirect !== undefined) metadata[ERROR_METADATA.redirect] = JSON.stringify(redirect);
  if (code === 'Unavailable') metadata[ERROR_METADATA.retryAfterMs] = String(retryAfterMs ?? RETRY_AFTER_DEFAULT_MS);
  if (code === 'Internal') metadata[ERROR_METADATA.errorId] = errorId;
  const status = code === 'Conflict' ? (method === 'CreateTable' ? GrpcStatus.ALREADY_EXISTS : GrpcStatus.ABORTED) : GRPC_STATUS_OF_CODE[code];
  return { code: status, details: code === 'Internal' ? internalErrorMessage(errorId) : message, metadata };
}

/**
 * A call refused because the messages the gateway holds would pass `LIMITS.grpcInFlightMessageBytesMax`:
 * RESOURCE_EXHAUSTED (the server's resources, not the caller's quota), with the mink code `Unavailable` and
 * a retry hint, as the HTTP API's 503 for its own in-flight bound.
 */
export function inFlightRefusal(heldBytes: number, messageBytes: number, retryAfterMs: number): GrpcFailure {
  return {
    code: GrpcStatus.RESOURCE_EXHAUSTED,
    details: `the gateway holds ${heldBytes} bytes of gRPC messages; a message of ${messageBytes} bytes does not fit below its bound: retry later`,
    metadata: { [ERROR_METADATA.code]: 'Unavailable', [ERROR_METADATA.retryAfterMs]: String(retryAfterMs) },
  };
}

/** A failure as grpc-js sends it: a partial status with its trailing metadata. */
export function statusOfFailure(failure: GrpcFailure): Pick<StatusObject, 'code' | 'details' | 'metadata'> {
  const metadata = new Metadata();
  for (const [key, value] of Object.entries(failure.metadata)) metadata.set(key, value);
  return { code: failure.code, details: failure.details, metadata };
}

/**
 * Whether `error` is an expected outcome (logged quietly) rather than a bug or an Internal error (logged as an
 * error, with the id its answer carries, since the answer does not carry its message).
 */
export function isExpectedFailure(error: unknown): boolean {
  return error instanceof MinkError && error.code !== 'Internal';
}
