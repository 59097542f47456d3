import { Agent, request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { LIMITS } from '@mink/config';
import {
  INTERNAL_SCAN_PATH,
  MinkError,
  SCAN_PAGE_CONTENT_TYPE,
  TimeoutError,
  UnavailableError,
  clusterAuthorizationOf,
  errorOfCode,
  fromErrorBody,
  isErrorBody,
  scanPageMetadataOf,
  type ErrorCode,
  type ScanPage,
  type ScanRequest,
} from '@mink/protocol';

export interface HttpScanPagesOptions {
  /** Connections kept to one data node; `LIMITS.clientScanConnectionsPerNodeMax` when absent. */
  connectionsPerNodeMax?: number;
  /**
   * The cluster secret (`MINK_CLUSTER_SECRET_FILE`), sent as `Authorization: Cluster <secret>` on every
   * request: the gateway and the data nodes have it; a client outside the cluster does not, and scans the
   * nodes that ask for it over NATS (see `fetch`).
   */
  clusterSecret?: string;
  /** The clock of the refusals remembered (`LIMITS.clientScanRefusalMemoryMs`); `Date.now` when absent. */
  nowMs?: () => number;
}

/**
 * Scan pages from a data node's internal HTTP route (`INTERNAL_SCAN_PATH` in @mink/protocol) instead of
 * NATS: the page's bytes go from the node's socket to this process's once, with no broker in between and no
 * parser growing a buffer for them. The answers are those of the NATS request: the page, or the node's typed
 * error (NotLeader with its redirect, Unavailable with its retry delay, …) rebuilt from the error body.
 * Failures of the connection itself are `Unavailable` (the node may be dead: the caller refreshes the route
 * and retries, as when no NATS responder answers) and a reply later than `timeoutMs` is `Timeout`.
 *
 * node:http on keep-alive connections, not `fetch`: undici costs several times the CPU per byte on a 2-core
 * machine shared with the cluster (see the bench's http-load.ts). At most `connectionsPerNodeMax` requests
 * are in flight to one node, one per connection; `fetch` answers null beyond that, so the caller sends the
 * request over NATS rather than queueing it behind long polls that may hold every connection for seconds.
 *
 * A node of a cluster with a secret refuses a request without it (or with another one) with 401, an
 * `Unauthenticated` error: `fetch` rejects with it, and answers null for that node (send over NATS) for
 * `LIMITS.clientScanRefusalMemoryMs` after, so a client without the secret asks each node once a minute.
 */
export class HttpScanPages {
  private readonly agent: Agent;
  private readonly connectionsPerNodeMax: number;
  private readonly inFlightByNode = new Map<string, number>();
  private readonly headers: Record<string, string>;
  private readonly nowMs: () => number;
  /**
   * Until when each node that refused this client's credentials is scanned over NATS. At most one entry per
   * node that refused within the last `LIMITS.clientScanRefusalMemoryMs` (older ones are dropped whenever
   * one is added), so it holds no more than the nodes of the cluster.
   */
  private readonly refusedUntilByNode = new Map<string, number>();

  constructor(options: HttpScanPagesOptions = {}) {
    this.headers = options.clusterSecret === undefined ? {} : { authorization: clusterAuthorizationOf(options.clusterSecret) };
    this.nowMs = options.nowMs ?? Date.now;
    this.connectionsPerNodeMax = options.connectionsPerNodeMax ?? LIMITS.clientScanConnectionsPerNodeMax;
    if (!Number.isSafeInteger(this.connectionsPerNodeMax) || this.connectionsPerNodeMax < 1) {
      throw new MinkError('InvalidArgument', `connectionsPerNodeMax must be a positive integer, got ${this.connectionsPerNodeMax}`);
    }
    // The most recently used connection first, so a burst's extra connections go idle and close.
    this.agent = new Agent({ keepAlive: true, maxSockets: this.connectionsPerNodeMax, maxFreeSockets: this.connectionsPerNodeMax, scheduling: 'lifo' });
  }

  /** Requests in flight to the node at `http` now. */
  inFlightTo(http: string): number {
    return this.inFlightByNode.get(http) ?? 0;
  }

  /** Whether the node at `http` refused this client's credentials within `LIMITS.clientScanRefusalMemoryMs`. */
  refuses(http: string): boolean {
    const until = this.refusedUntilByNode.get(http);
    if (until === undefined) return false;
    if (until > this.nowMs()) return true;
    this.refusedUntilByNode.delete(http);
    return false;
  }

  /**
   * Sends `request` to the data node at `http` (`host:port`) and resolves with its page, or answers null
   * without sending anything when every connection to that node is busy, `http` is no `host:port` a URL
   * can hold (say an IPv6 address without brackets), or the node refused this client's credentials lately
   * (`refuses`). An aborted `signal` ends the request (its connection is closed, not reused) and rejects
   * it. A 401 rejects with the node's `Unauthenticated` error, which the caller answers by sending the
   * request over NATS, as it does for null.
   */
  fetch(http: string, request: ScanRequest, timeoutMs: number, signal?: AbortSignal): Promise<ScanPage> | null {
    const url = scanUrlOf(http);
    const inFlight = this.inFlightTo(http);
    if (url === null || inFlight >= this.connectionsPerNodeMax || this.refuses(http)) return null;
    this.inFlightByNode.set(http, inFlight + 1);
    const body = Buffer.from(JSON.stringify(request));
    const attempt = (retryOfStaleConnection: boolean): Promise<ScanPage> =>
      postScan(this.agent, url, http, body, this.headers, timeoutMs, signal).catch((error: unknown) => {
        // A keep-alive connection the node closed while idle fails at once; a fresh one is not a retry of the request.
        if (!retryOfStaleConnection && error instanceof StaleConnectionError) return attempt(true);
        if (isScanCredentialsRefusal(error)) this.rememberRefusal(http);
        throw error instanceof StaleConnectionError ? error.unavailable : error;
      });
    return attempt(false).finally(() => {
      const left = this.inFlightTo(http) - 1;
      if (left > 0) this.inFlightByNode.set(http, left);
      else this.inFlightByNode.delete(http);
    });
  }

  /** Closes every connection, idle or not. */
  close(): void {
    this.agent.destroy();
  }

  private rememberRefusal(http: string): void {
    const now = this.nowMs();
    for (const [node, until] of this.refusedUntilByNode) if (until <= now) this.refusedUntilByNode.delete(node);
    this.refusedUntilByNode.set(http, now + LIMITS.clientScanRefusalMemoryMs);
  }
}

/** Whether `error` is a node's refusal of the credentials of a scan page request (a 401), after which it is scanned over NATS. */
export function isScanCredentialsRefusal(error: unknown): boolean {
  return error instanceof MinkError && error.code === 'Unauthenticated';
}

/** The URL of the scan route of the node at `http`, or null when `http` is not a `host:port` a URL holds. */
function scanUrlOf(http: string): URL | null {
  try {
    const url = new URL(`http://${http}${INTERNAL_SCAN_PATH}`);
    return url.pathname === INTERNAL_SCAN_PATH && url.search === '' && url.username === '' ? url : null;
  } catch {
    return null;
  }
}

/** A request that failed on a reused keep-alive connection before any byte of a reply. */
class StaleConnectionError extends Error {
  constructor(readonly unavailable: UnavailableError) {
    super(unavailable.message);
  }
}

/** One POST of a scan request; see HttpScanPages.fetch. */
function postScan(agent: Agent, url: URL, http: string, body: Buffer, headers: Record<string, string>, timeoutMs: number, signal: AbortSignal | undefined): Promise<ScanPage> {
  return new Promise<ScanPage>((resolve, reject) => {
    let settled = false;
    let replied = false;
    let outgoing: ClientRequest | undefined;
    const timer = setTimeout(() => fail(new TimeoutError(`no scan page from the data node at ${http} within ${timeoutMs} ms`)), timeoutMs);
    const onAbort = (): void => fail(new UnavailableError(`the scan page request to the data node at ${http} was abandoned`, 0));
    function finish(): void {
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
    function fail(error: Error): void {
      if (settled) return;
      finish();
      // A connection with a request or reply cut short cannot carry another one.
      outgoing?.destroy();
      reject(error);
    }
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    outgoing = httpRequest(
      url,
      {
        method: 'POST',
        agent,
        headers: { ...headers, 'content-type': 'application/json', 'content-length': body.byteLength, accept: SCAN_PAGE_CONTENT_TYPE },
      },
      (incoming) => {
        replied = true;
        const cutShort = (): void => fail(new UnavailableError(`the data node at ${http} closed the connection in the middle of a scan page reply`));
        incoming.on('error', cutShort);
        incoming.once('close', () => {
          if (!incoming.complete) cutShort();
        });
        if (incoming.statusCode === 200) {
          readPage(incoming, http, (page) => {
            if (settled) return;
            finish();
            resolve(page);
          }, fail);
        } else {
          readError(incoming, http, fail);
        }
      },
    );
    // Not once: a request destroyed after a failure may report more errors, all of them late.
    outgoing.on('error', (error) => {
      const unavailable = connectionError(http, error);
      fail(!replied && outgoing!.reusedSocket ? new StaleConnectionError(unavailable) : unavailable);
    });
    outgoing.end(body);
  });
}

/** The body of a 200, in one buffer sized by Content-Length, with the page metadata of its headers. */
function readPage(incoming: IncomingMessage, http: string, resolve: (page: ScanPage) => void, fail: (error: Error) => void): void {
  let metadata: ReturnType<typeof scanPageMetadataOf>;
  try {
    metadata = scanPageMetadataOf((name) => incoming.headers[name]);
  } catch (error) {
    incoming.resume();
    return fail(error as Error);
  }
  const announced = Number(incoming.headers['content-length']);
  const sized = Number.isSafeInteger(announced) && announced >= 0;
  // Not zero-filled: every byte is written below before the page is handed over (checked at the end).
  let bytes = sized ? Buffer.allocUnsafe(announced) : Buffer.alloc(0);
  const chunks: Buffer[] = [];
  let received = 0;
  incoming.on('data', (chunk: Buffer) => {
    if (sized) {
      if (received + chunk.byteLength > announced) return fail(new MinkError('Internal', `the data node at ${http} sent more than the ${announced} bytes of its scan page`));
      chunk.copy(bytes, received);
    } else {
      chunks.push(chunk);
    }
    received += chunk.byteLength;
  });
  incoming.once('end', () => {
    if (sized && received !== announced) return fail(new UnavailableError(`the data node at ${http} sent ${received} of the ${announced} bytes of a scan page`));
    if (!sized) bytes = Buffer.concat(chunks);
    resolve({ ...metadata, batch: bytes });
  });
}

/** The typed error of a reply that is not a 200: the node's error body, or one made of the status. */
function readError(incoming: IncomingMessage, http: string, fail: (error: Error) => void): void {
  const status = incoming.statusCode ?? 0;
  const chunks: Buffer[] = [];
  let received = 0;
  incoming.on('data', (chunk: Buffer) => {
    received += chunk.byteLength;
    if (received <= LIMITS.scanErrorReplyBytesMax) chunks.push(chunk);
  });
  incoming.once('end', () => {
    const text = Buffer.concat(chunks).toString('utf8');
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (isErrorBody(body)) return fail(fromErrorBody(body));
    fail(errorOfCode(codeOfStatus(status), `the data node at ${http} answered a scan page request with HTTP ${status}: ${text.slice(0, 200)}`));
  });
}

/** What a status without an error body means: a proxy's 502/503/504 is worth a retry, anything else is not. */
function codeOfStatus(status: number): ErrorCode {
  if (status === 502 || status === 503) return 'Unavailable';
  if (status === 401) return 'Unauthenticated';
  if (status === 504) return 'Timeout';
  if (status === 400) return 'InvalidArgument';
  if (status === 404) return 'NotFound';
  return 'Internal';
}

function connectionError(http: string, error: Error): UnavailableError {
  const code = (error as { code?: string }).code;
  return new UnavailableError(`no scan page from the data node at ${http}: ${code ?? error.message}`);
}
