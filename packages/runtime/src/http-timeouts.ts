import { LIMITS } from '@mink/config';

/**
 * How long an HTTP server waits for a client (see LIMITS.httpHeadersTimeoutMs and the two after it): for
 * the headers of a request, for the whole request (body included), and on an idle keep-alive connection
 * between two requests. None bounds the answer: a long poll or a streamed scan may take as long as it takes.
 */
export interface HttpTimeouts {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
}

/** The timeouts of LIMITS, which `MINK_HTTP_*_TIMEOUT_MS` override (ServiceConfig). */
export const DEFAULT_HTTP_TIMEOUTS: HttpTimeouts = {
  headersTimeoutMs: LIMITS.httpHeadersTimeoutMs,
  requestTimeoutMs: LIMITS.httpRequestTimeoutMs,
  keepAliveTimeoutMs: LIMITS.httpKeepAliveTimeoutMs,
};

/** The part of Node.js' HTTP(S) server the timeouts are set on; `connectionsCheckingInterval` is read when it starts listening. */
interface TimedServer {
  headersTimeout: number;
  requestTimeout: number;
  keepAliveTimeout: number;
}

/**
 * Sets `timeouts` on a Node.js HTTP or HTTPS server that is not listening yet. Node.js checks the header and
 * request timeouts every `connectionsCheckingInterval` (30 s by default), which is set here to
 * `LIMITS.httpTimeoutCheckIntervalMs` or the header timeout when shorter, so a connection outlives its
 * timeout by that at most. A connection past its header or request timeout is answered 408 and closed.
 * Throws when the header timeout exceeds the request timeout, as Node.js does at construction.
 */
export function applyHttpTimeouts(server: TimedServer, timeouts: HttpTimeouts): void {
  const { headersTimeoutMs, requestTimeoutMs, keepAliveTimeoutMs } = timeouts;
  for (const [name, value] of Object.entries(timeouts)) {
    if (!Number.isSafeInteger(value) || value < 1) throw new Error(`HTTP ${name} must be a positive whole number of milliseconds, got ${value}`);
  }
  if (headersTimeoutMs > requestTimeoutMs) throw new Error(`the HTTP header timeout (${headersTimeoutMs} ms) must not exceed the request timeout (${requestTimeoutMs} ms)`);
  server.headersTimeout = headersTimeoutMs;
  server.requestTimeout = requestTimeoutMs;
  server.keepAliveTimeout = keepAliveTimeoutMs;
  (server as TimedServer & { connectionsCheckingInterval: number }).connectionsCheckingInterval = Math.min(LIMITS.httpTimeoutCheckIntervalMs, headersTimeoutMs);
}
