import { Agent, type IncomingHttpHeaders, request } from 'node:http';

/** A reply as the bench reads it: the status, the headers (names in lower case) and the whole body. */
export interface HttpLoadReply {
  status: number;
  headers: { get(name: string): string | null };
  body: Buffer;
}

export interface HttpLoadRequest {
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  /** Sent as it is, with its length as Content-Length. */
  body?: Uint8Array;
}

/**
 * The HTTP client of the bench's timed requests to the gateway: node:http on keep-alive connections, the
 * body sent as the bytes prepared before the clock started, and the reply collected as Buffers. Node's
 * `fetch` (undici) costs several times the CPU per byte on both sides of a request (string encoding, web
 * stream copies); the load generator shares the cores with the cluster it measures, so it must be lean, as
 * the AWS SDK client of the raw S3 baselines is.
 */
export class HttpLoad {
  private readonly agent: Agent;

  /** `connectionsMax`: the requests the bench keeps in flight, so none waits for a connection. */
  constructor(connectionsMax: number) {
    this.agent = new Agent({ keepAlive: true, maxSockets: connectionsMax });
  }

  send(url: string, options: HttpLoadRequest = {}): Promise<HttpLoadReply> {
    const headers: Record<string, string | number> = { ...options.headers };
    if (options.body !== undefined) headers['content-length'] = options.body.byteLength;
    return new Promise<HttpLoadReply>((resolve, reject) => {
      const outgoing = request(url, { method: options.method ?? 'GET', headers, agent: this.agent }, (incoming) => {
        const chunks: Buffer[] = [];
        incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
        incoming.once('error', reject);
        incoming.once('end', () => {
          resolve({ status: incoming.statusCode ?? 0, headers: headerReader(incoming.headers), body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks) });
        });
      });
      outgoing.once('error', reject);
      outgoing.end(options.body);
    });
  }

  /** Closes the idle connections. */
  close(): void {
    this.agent.destroy();
  }
}

function headerReader(headers: IncomingHttpHeaders): HttpLoadReply['headers'] {
  return {
    get(name: string): string | null {
      const value = headers[name.toLowerCase()];
      if (value === undefined) return null;
      return Array.isArray(value) ? value.join(', ') : value;
    },
  };
}
