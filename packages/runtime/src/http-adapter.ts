import type { IncomingMessage } from 'node:http';
import { PassThrough, type Readable } from 'node:stream';
import { PayloadTooLargeException } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { LIMITS } from '@mink/config';
import { HTTP_STATUS_OF_CODE, InvalidArgumentError, UnavailableError } from '@mink/protocol';
import { applyHttpTimeouts, DEFAULT_HTTP_TIMEOUTS } from './http-timeouts';
import { guardRoutes, guardedRoutesOf, type RouteSecrets } from './route-credentials';
import type { TlsCredentials } from './tls-credentials';
import { closeAfterAnswer, refuseUnread } from './unread-body';

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A JSON request body, decoded strictly: bytes that are not valid UTF-8 are refused rather than replaced by
 * U+FFFD (which would store text the caller never sent), and a body that is not JSON is refused; both are
 * `InvalidArgumentError`s, so HTTP callers get a 400 naming what is wrong. An empty body reads as undefined.
 */
export function parseJsonBody(body: Buffer): unknown {
  let text: string;
  try {
    text = strictUtf8.decode(body);
  } catch {
    throw new InvalidArgumentError('request body is not valid UTF-8');
  }
  if (text.trim() === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new InvalidArgumentError(`request body is not valid JSON: ${(error as Error).message}`);
  }
  // JSON.parse takes any depth, but what handles the value next (validation, JSON.stringify for a NATS
  // request) recurses and would overflow the stack: a 500 for what is the caller's mistake.
  const depth = depthBeyond(value, LIMITS.jsonBodyDepthMax);
  if (depth) throw new InvalidArgumentError(`request body nests deeper than ${LIMITS.jsonBodyDepthMax} levels of arrays and objects`);
  return value;
}

/** Whether `value` nests arrays and objects deeper than `depthMax` levels; iterative, so any depth is measured safely. */
function depthBeyond(value: unknown, depthMax: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!;
    if (typeof current !== 'object' || current === null) continue;
    if (depth >= depthMax) return true;
    for (const child of Array.isArray(current) ? current : Object.values(current)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
  return false;
}

/**
 * A JSON request body kept as its bytes, for a route that reads them itself (the gateway's append parses
 * rows straight into Arrow); `parse()` gives what any other route gets, with the same errors.
 */
export class RawJsonBody {
  constructor(readonly bytes: Buffer) {}

  parse(): unknown {
    return parseJsonBody(this.bytes);
  }
}

/**
 * Bytes of request bodies a service holds at once: `admit` takes a request's bytes unless they would pass
 * the bound (one request alone is always admitted when nothing else is held, so a body under the size
 * limit is never refused forever), `release` gives them back.
 */
export class InFlightBytes {
  private held = 0;

  constructor(private readonly bytesMax: number) {}

  get heldBytes(): number {
    return this.held;
  }

  admit(bytes: number): boolean {
    if (this.held > 0 && this.held + bytes > this.bytesMax) return false;
    this.held += bytes;
    return true;
  }

  release(bytes: number): void {
    this.held -= bytes;
  }
}

/**
 * The Fastify adapter of every mink HTTP service: the body size bound, the bound on bodies in flight
 * (`LIMITS.httpInFlightBodyBytesMax`: beyond it a 503 Unavailable with Retry-After, before the body is
 * read when it has a Content-Length, as its bytes arrive when it is chunked), the HTTP timeouts of
 * `DEFAULT_HTTP_TIMEOUTS` (startService sets the configured ones) and strict JSON bodies, parsed here
 * except on `rawJsonRoutes` (route patterns), whose handlers get a `RawJsonBody`; HTTPS when given `https`
 * (a certificate and its key). With `routeSecrets`, the
 * internal routes ask for the cluster secret and `/metrics` for the metrics token (see guardRoutes), checked
 * first of all. Create the Nest application with `bodyParser: false`, or Nest registers its own JSON parser
 * over this one.
 */
export function createHttpAdapter(
  inFlight: InFlightBytes = new InFlightBytes(LIMITS.httpInFlightBodyBytesMax),
  options: { rawJsonRoutes?: ReadonlySet<string>; https?: TlsCredentials | null; routeSecrets?: RouteSecrets } = {},
): FastifyAdapter {
  const rawJsonRoutes = options.rawJsonRoutes ?? new Set<string>();
  // With a certificate the server speaks HTTPS only (no plain-text port beside it).
  const adapter = new FastifyAdapter(options.https ? { bodyLimit: LIMITS.httpBodyBytesMax, https: { cert: options.https.cert, key: options.https.key } } : { bodyLimit: LIMITS.httpBodyBytesMax });
  const instance = adapter.getInstance();
  // Before the bound on bodies in flight: a request without the credentials its route asks for holds nothing.
  if (options.routeSecrets) guardRoutes(instance, guardedRoutesOf(options.routeSecrets));
  // The in-flight bytes each admitted request holds, until its response closes.
  const heldBodies = new WeakMap<IncomingMessage, HeldBody>();
  instance.addHook('onRequest', (request, reply, done) => {
    const bytes = Number(request.headers['content-length'] ?? 0);
    const counted = Number.isSafeInteger(bytes) && bytes > 0 ? bytes : 0;
    if (!inFlight.admit(counted)) {
      const message = `this service holds ${inFlight.heldBytes} bytes of requests; a body of ${counted} bytes does not fit below ${LIMITS.httpInFlightBodyBytesMax}: retry later`;
      refuseUnread(request, reply, new UnavailableError(message, LIMITS.httpInFlightRetryAfterMs));
      return;
    }
    const held: HeldBody = { bytes: counted, released: false };
    heldBodies.set(request.raw, held);
    // 'close' fires once the response is sent or the connection dropped, whichever comes first.
    reply.raw.once('close', () => {
      held.released = true;
      inFlight.release(held.bytes);
    });
    done();
  });
  // A body without a Content-Length (chunked) was admitted above as 0 bytes: its bytes are taken as they arrive.
  instance.addHook('preParsing', (request, reply, payload, done) => {
    const held = heldBodies.get(request.raw);
    if (held === undefined || request.headers['content-length'] !== undefined || request.headers['transfer-encoding'] === undefined) return done(null, payload);
    done(null, countedBody(payload, inFlight, held, () => closeAfterAnswer(request.raw, reply.raw)));
  });
  instance.removeContentTypeParser('application/json');
  instance.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    // Routes named by their pattern (e.g. '/v1/tables/:name/append') get the bytes, to read themselves.
    if (rawJsonRoutes.has(request.routeOptions.url ?? '')) return done(null, new RawJsonBody(body as Buffer));
    try {
      done(null, parseJsonBody(body as Buffer));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  applyHttpTimeouts(instance.server as unknown as Parameters<typeof applyHttpTimeouts>[0], DEFAULT_HTTP_TIMEOUTS);
  return adapter;
}

/** The in-flight bytes one request holds, and whether its response has closed (they were then given back). */
interface HeldBody {
  bytes: number;
  released: boolean;
}

/**
 * `payload` (a body without a Content-Length) as a stream that takes each chunk's bytes from `inFlight` as it
 * arrives, into `held`, before passing it on. Past `LIMITS.httpBodyBytesMax` it fails with 413 Payload Too
 * Large, past the bound of `inFlight` with 503 Unavailable and a Retry-After (as a body announced by its
 * Content-Length is refused before it is read); `refused` is then called, and what still arrives is read
 * and thrown away, never held.
 */
function countedBody(payload: Readable, inFlight: InFlightBytes, held: HeldBody, refused: () => void): Readable {
  const counted = new PassThrough();
  // Fastify stops listening when it gives up on a body; an error after that must not go unhandled.
  counted.on('error', () => undefined);
  let received = 0;
  let failed = false;
  const fail = (error: Error): void => {
    failed = true;
    counted.destroy(error);
    refused();
  };
  payload.on('data', (chunk: Buffer) => {
    if (failed) return;
    received += chunk.length;
    if (received > LIMITS.httpBodyBytesMax) return fail(new PayloadTooLargeException(`the request body passes ${LIMITS.httpBodyBytesMax} bytes`));
    if (held.released || !inFlight.admit(chunk.length)) {
      const message = `this service holds ${inFlight.heldBytes} bytes of requests; ${received} bytes of this body do not fit below ${LIMITS.httpInFlightBodyBytesMax}: retry later`;
      // The status keeps Fastify from taking the error for a 400 of its own.
      return fail(Object.assign(new UnavailableError(message, LIMITS.httpInFlightRetryAfterMs), { statusCode: HTTP_STATUS_OF_CODE.Unavailable }));
    }
    held.bytes += chunk.length;
    if (!counted.write(chunk)) payload.pause();
  });
  counted.on('drain', () => payload.resume());
  payload.once('end', () => {
    if (!failed) counted.end();
  });
  payload.once('error', (error) => {
    if (!failed) counted.destroy(error);
  });
  return counted;
}
