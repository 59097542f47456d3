import { randomUUID } from 'node:crypto';
import { ArgumentsHost, Catch, ExceptionFilter, HttpException } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { HTTP_STATUS_OF_CODE, INTERNAL_ROUTES_PREFIX, MinkError, toErrorBody, type ErrorBody } from '@mink/protocol';
import type { Logger } from 'pino';

/** The response header that repeats the id of an internal error (the id its log line carries). */
export const ERROR_ID_HEADER = 'mink-error-id';

/**
 * The message an internal error is answered with instead of its own: its id, which the service's log line
 * of the error also carries, so an operator finds the details a caller reports. The error's own message
 * stays in the log: it may name objects, offsets, hosts or code that are none of the caller's business.
 */
export function internalErrorMessage(errorId: string): string {
  return `internal error ${errorId}; the service's log has the details under this id`;
}

/** A fresh id for one internal error. */
export function newErrorId(): string {
  return randomUUID();
}

/**
 * The one place where outcomes become HTTP responses: `{error:{code, message, redirect?}}` with the
 * status of docs/architecture.md §12, `Retry-After` on Unavailable, `WWW-Authenticate` on 401. Nest's own HTTP errors (bad JSON, unknown route)
 * are mapped to the same shape. An internal error (see `httpErrorOf`) is logged with a fresh id and
 * answered with that id only.
 */
@Catch()
export class HttpErrorFilter implements ExceptionFilter {
  constructor(private readonly logger?: Logger) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    sendHttpError(host.switchToHttp().getResponse<FastifyReply>(), exception, this.logger);
  }
}

/**
 * Answers `exception` on `reply` as HttpErrorFilter does: what `httpErrorOf` maps it to, with its headers;
 * an internal error is logged on `logger` with the id its answer carries. On an internal route (under
 * INTERNAL_ROUTES_PREFIX, whose callers are the cluster's own processes, as over NATS) an internal error
 * keeps its message, so the gateway that called logs it in full before it answers its own caller.
 */
export function sendHttpError(reply: FastifyReply, exception: unknown, logger?: Logger): void {
  const errorId = newErrorId();
  const route = (reply as Partial<FastifyReply>).request?.routeOptions?.url;
  const forCluster = route !== undefined && route.startsWith(INTERNAL_ROUTES_PREFIX);
  const { status, body, retryAfterMs, internal } = httpErrorOf(exception, errorId, { forCluster });
  if (internal) {
    logger?.error({ err: exception, errorId }, 'request failed');
    void reply.header(ERROR_ID_HEADER, errorId);
  }
  if (retryAfterMs !== undefined) void reply.header('Retry-After', String(Math.max(1, Math.ceil(retryAfterMs / 1000))));
  // RFC 6750: a 401 names the scheme the client should use (Bearer, unless the refusing hook named another).
  if (status === 401 && !reply.hasHeader('WWW-Authenticate')) void reply.header('WWW-Authenticate', 'Bearer realm="mink"');
  void reply.status(status).send(body);
}

/**
 * The HTTP answer of `exception`. Typed outcomes (a MinkError of any code but Internal) and client errors
 * (Nest's and Fastify's 4xx) keep their messages, which are meant for the caller. Anything else is
 * `internal`: an Internal MinkError (one that crossed from another service, say), a 5xx of Nest (which keeps
 * its status), or any other exception (a bug, answered 500) is answered as Internal with
 * `internalErrorMessage(errorId)` for its message, unless it goes to another process of the cluster
 * (`forCluster`), which gets the message as it would over NATS.
 */
export function httpErrorOf(exception: unknown, errorId: string, options: { forCluster?: boolean } = {}): { status: number; body: ErrorBody; retryAfterMs?: number; internal: boolean } {
  if (exception instanceof MinkError && exception.code !== 'Internal') {
    const body = toErrorBody(exception);
    const retryAfterMs = exception.code === 'Unavailable' ? (exception.details?.retryAfterMs ?? 1000) : undefined;
    return { status: HTTP_STATUS_OF_CODE[body.error.code], body, retryAfterMs, internal: false };
  }
  if (exception instanceof HttpException && exception.getStatus() < 500) {
    const status = exception.getStatus();
    return { status, body: { error: { code: status === 404 ? 'NotFound' : 'InvalidArgument', message: exception.message } }, internal: false };
  }
  const fastifyStatus = (exception as { statusCode?: number } | null | undefined)?.statusCode;
  if (!(exception instanceof MinkError) && typeof fastifyStatus === 'number' && fastifyStatus >= 400 && fastifyStatus < 500) {
    return { status: 400, body: { error: { code: 'InvalidArgument', message: (exception as Error).message } }, internal: false };
  }
  // A 5xx of Nest keeps its status; the rest is a 500.
  const status = exception instanceof HttpException ? exception.getStatus() : HTTP_STATUS_OF_CODE.Internal;
  const message = options.forCluster ? toErrorBody(exception).error.message : internalErrorMessage(errorId);
  return { status, body: { error: { code: 'Internal', message } }, internal: true };
}
