import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the proxy does with each request: forward it, or answer 503 SlowDown as S3 does when throttling. */
export type S3FaultMode = 'forward' | 'slowDown';

/** Requests seen since the proxy started, by what happened to them. */
export interface S3FaultCounts {
  forwarded: number;
  refused: number;
}

const SLOW_DOWN_BODY =
  '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message><RequestId>mink-fault-proxy</RequestId></Error>';

/**
 * An HTTP proxy in front of an S3-compatible server, for fault tests: in `forward` mode it passes every
 * request through unchanged (headers included, so SigV4 signatures made for the proxy's host still hold),
 * in `slowDown` mode it answers every request 503 SlowDown, as S3 does when it throttles. Services pointed
 * at `endpoint` see an S3 outage while the real server keeps its objects. Listens on 127.0.0.1 only.
 */
export class S3FaultProxy {
  private mode: S3FaultMode = 'forward';
  private readonly counts: S3FaultCounts = { forwarded: 0, refused: 0 };

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  /** Starts a proxy to the S3 server at 127.0.0.1:`targetPort` (which may start later), on `port` or a free one. */
  static async start(options: { targetPort: number; port?: number }): Promise<S3FaultProxy> {
    let proxy: S3FaultProxy | undefined;
    const server = createServer((incoming, outgoing) => proxy!.handle(incoming, outgoing, options.targetPort));
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolveListen, rejectListen) => {
      server.once('error', rejectListen);
      server.listen(options.port ?? 0, '127.0.0.1', () => resolveListen());
    });
    proxy = new S3FaultProxy(server, (server.address() as AddressInfo).port);
    return proxy;
  }

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** From now on, every request is forwarded (`forward`) or refused with 503 SlowDown (`slowDown`). */
  setMode(mode: S3FaultMode): void {
    this.mode = mode;
  }

  /** Requests forwarded and refused so far. */
  get seen(): S3FaultCounts {
    return { ...this.counts };
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolveClose) => this.server.close(() => resolveClose()));
  }

  private handle(incoming: IncomingMessage, outgoing: ServerResponse, targetPort: number): void {
    if (this.mode === 'slowDown') {
      this.counts.refused++;
      // The body is read and dropped so the connection stays usable for the client's next request.
      incoming.resume();
      incoming.once('end', () => {
        outgoing.writeHead(503, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(SLOW_DOWN_BODY), 'retry-after': '1' });
        outgoing.end(SLOW_DOWN_BODY);
      });
      return;
    }
    this.counts.forwarded++;
    const forwarded = request(
      { host: '127.0.0.1', port: targetPort, method: incoming.method, path: incoming.url, headers: incoming.headers },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    forwarded.on('error', (error) => {
      if (!outgoing.headersSent) outgoing.writeHead(502, { 'content-type': 'text/plain' });
      outgoing.end(`S3 fault proxy: ${error.message}`);
    });
    incoming.pipe(forwarded);
  }
}
