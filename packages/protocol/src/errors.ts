
/** Stable wire codes of the expected outcomes (docs/architecture.md §12). Each wire maps them in one place. */
export type ErrorCode =
  | 'InvalidArgument'
  | 'NotFound'
  | 'Conflict'
  | 'Unavailable'
  | 'NotLeader'
  | 'Fenced'
  | 'Timeout'
  | 'Unauthenticated'
  | 'PermissionDenied'
  | 'Internal';

/** Where the leader of a bucket can be reached; carried by `NotLeader`. */
export interface Redirect {
  table: string;
  partition?: string;
  bucket: number;
  /** The leader's node id. */
  node: string;
  /** The leader's advertised address (its NATS subject prefix). */
  to: string;
  leaderEpoch: number;
  /** The leader's HTTP `host:port` (its `NodeRecord.http`), where it serves scan pages; absent when it has none. */
  http?: string;
}

/** Base of every expected outcome. `code` is stable and crosses every wire unchanged. */
export class MinkError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: { redirect?: Redirect; retryAfterMs?: number },
  ) {
    super(message);
    this.name = `${code}Error`;
  }
}

export class InvalidArgumentError extends MinkError {
  constructor(message: string) {
    super('InvalidArgument', message);
  }
}
export class NotFoundError extends MinkError {
  constructor(message: string) {
    super('NotFound', message);
  }
}
export class ConflictError extends MinkError {
  constructor(message: string) {
    super('Conflict', message);
  }
}
export class UnavailableError extends MinkError {
  constructor(message: string, retryAfterMs = 200) {
    super('Unavailable', message, { retryAfterMs });
  }
}
export class NotLeaderError extends MinkError {
  constructor(message: string, redirect: Redirect) {
    super('NotLeader', message, { redirect });
  }
}
export class TimeoutError extends MinkError {
  constructor(message: string) {
    super('Timeout', message);
  }
}
/** The request carries no credentials, or credentials nobody issued (HTTP 401). */
export class UnauthenticatedError extends MinkError {
  constructor(message: string) {
    super('Unauthenticated', message);
  }
}
/** The credentials are known but do not allow this operation (HTTP 403). */
export class PermissionDeniedError extends MinkError {
  constructor(message: string) {
    super('PermissionDenied', message);
  }
}

/**
 * The typed error for an expected outcome reported by code, e.g. a command the metadata log rejected: the
 * subclass of that code where there is one, so callers can test with `instanceof` or by `code`.
 */
export function errorOfCode(code: ErrorCode, message: string): MinkError {
  switch (code) {
    case 'InvalidArgument':
      return new InvalidArgumentError(message);
    case 'NotFound':
      return new NotFoundError(message);
    case 'Conflict':
      return new ConflictError(message);
    case 'Unavailable':
      return new UnavailableError(message);
    case 'Timeout':
      return new TimeoutError(message);
    case 'Unauthenticated':
      return new UnauthenticatedError(message);
    case 'PermissionDenied':
      return new PermissionDeniedError(message);
    default:
      return new MinkError(code, message);
  }
}

/** The JSON shape of an error on every wire that carries JSON: `{error:{code, message, redirect?}}`. */
export interface ErrorBody {
  error: { code: ErrorCode; message: string; redirect?: Redirect; retryAfterMs?: number };
}

export function toErrorBody(error: unknown): ErrorBody {
  if (error instanceof MinkError) {
    return { error: { code: error.code, message: error.message, ...error.details } };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { error: { code: 'Internal', message } };
}

export function fromErrorBody(body: ErrorBody): MinkError {
  const { code, message, redirect, retryAfterMs } = body.error;
  return new MinkError(code, message, { redirect, retryAfterMs });
}

export function isErrorBody(value: unknown): value is ErrorBody {
  return typeof value === 'object' && value !== null && 'error' in value && typeof (value as ErrorBody).error?.code === 'string';
}

/** HTTP status of each code (docs/architecture.md §12). */
export const HTTP_STATUS_OF_CODE: Record<ErrorCode, number> = {
  InvalidArgument: 400,
  NotFound: 404,
  Conflict: 409,
  Unavailable: 503,
  NotLeader: 503,
  Fenced: 409,
  Timeout: 504,
  Unauthenticated: 401,
  PermissionDenied: 403,
  Internal: 500,
};
