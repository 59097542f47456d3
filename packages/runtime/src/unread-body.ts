import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { LIMITS } from '@mink/config';
import { sendHttpError } from './http-errors';

/** Whether a request announces a body: a Content-Length above 0, or a Transfer-Encoding (chunked). */
export function announcesBody(headers: IncomingHttpHeaders): boolean {
  const length = headers['content-length'];
  return (length !== undefined && length !== '0') || headers['transfer-encoding'] !== undefined;
}

/**
 * Answers `error` (as HttpErrorFilter would) to a request refused on its headers alone, from an `onRequest`
 * hook, before its body is read: the body is never parsed nor held. When the request announced a body, its
 * connection is closed after the answer: half-closed at once while Node's HTTP server discards what still
 * arrives, and cut `LIMITS.httpRefusedBodyLingerMs` later, so the caller reads the answer (a connection cut
 * at once resets under an unread answer) and a huge or endless body is not drained to its end.
 */
export function refuseUnread(request: FastifyRequest, reply: FastifyReply, error: unknown, logger?: Logger): void {
  if (announcesBody(request.headers)) closeAfterAnswer(request.raw, reply.raw);
  sendHttpError(reply, error, logger);
}

/**
 * Closes the connection of `request` once `response` is sent, without cutting the answer off, and leaves its
 * body unread. Node's HTTP server drains the body of an answered request to its end (to keep the connection),
 * at the speed the caller sends it; marked as being read (`read(0)`) and never read, the body is taken off the
 * socket only until Node's buffer of it is full (some KiB), then the caller's bytes wait in the socket
 * buffers. Once the answer is out the connection is half-closed (the caller sees its end and sends nothing
 * more that counts), and cut `LIMITS.httpRefusedBodyLingerMs` later: cutting it at once would reset it under
 * an answer the caller may not have read yet (Go's net/http closes such connections the same way).
 */
export function closeAfterAnswer(request: IncomingMessage, response: ServerResponse): void {
  const socket = request.socket as Partial<Pick<Socket, 'end' | 'destroy'>> | null;
  // An injected request (light-my-request) has a socket that cannot be closed, and no connection to close.
  if (typeof socket?.end !== 'function' || typeof socket.destroy !== 'function') return;
  request.read(0);
  const close = (): void => {
    socket.end!();
    setTimeout(() => socket.destroy!(), LIMITS.httpRefusedBodyLingerMs).unref();
  };
  if (response.writableFinished) close();
  else response.once('finish', close);
}
