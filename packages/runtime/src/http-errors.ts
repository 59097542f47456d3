import { ArgumentsHost, Catch, ExceptionFilter, HttpException } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { HTTP_STATUS_OF_CODE, MinkError, toErrorBody, type ErrorBody } from '@mink/protocol';
import type { Logger } from 'pino';

/**
 * The one place where outcomes become HTTP responses: `{error:{code, message, redirect?}}` with the
 * status of docs/architecture.md §12, `Retry-After` on Unavailable, `WWW-Authenticate` on 401. Nest's own HTTP errors (bad JSON, unknown route)
 * are mapped to the same shape.
 */
@Catch()
export class HttpErrorFilter implements ExceptionFilter {
  constructor(private readonly logger?: Logger) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    const { status, body, retryAfterMs } = httpErrorOf(exception);
    if (status >= 500 && !(exception instanceof MinkError)) this.logger?.error({ err: exception }, 'request failed');
    if (retryAfterMs !== undefined) void reply.header('Retry-After', String(Math.max(1, Math.ceil(retryAfterMs / 1000))));
    // RFC 6750: a 401 names the scheme the client should use.
    if (status === 401) void reply.header('WWW-Authenticate', 'Bearer realm="mink"');
    void reply.status(status).send(body);
  }
}

export function httpErrorOf(exception: unknown): { status: number; body: ErrorBody; retryAfterMs?: number } {
  if (exception instanceof MinkError) {
    const body = toErrorBody(exception);
    const retryAfterMs = exception.code === 'Unavailable' ? (exception.details?.retryAfterMs ?? 1000) : undefined;
    return { status: HTTP_STATUS_OF_CODE[body.error.code], body, retryAfterMs };
  }
  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    const code = status === 404 ? 'NotFound' : status < 500 ? 'InvalidArgument' : 'Internal';
    return { status, body: { error: { code, message: exception.message } } };
  }
  const fastifyStatus = (exception as { statusCode?: number }).statusCode;
  if (typeof fastifyStatus === 'number' && fastifyStatus >= 400 && fastifyStatus < 500) {
    return { status: 400, body: { error: { code: 'InvalidArgument', message: (exception as Error).message } } };
  }
  return { status: 500, body: toErrorBody(exception) };
}
