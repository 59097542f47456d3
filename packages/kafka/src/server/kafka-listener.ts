import { type Server, type Socket, createServer } from 'node:net';
import { LIMITS } from '@mink/config';

/**
 * Answers one request frame (the bytes after its size prefix): the response's parts (header and body,
 * without the size prefix), or null when the request gets no response (a produce with acks=0). Throwing
 * closes the connection: a frame that cannot be answered in its own format (malformed, an unknown API or
 * version) is answered as Kafka brokers do, by disconnecting.
 */
export type KafkaFrameHandler = (frame: Uint8Array, connection: KafkaConnectionInfo) => Promise<Uint8Array[] | null>;

export interface KafkaConnectionInfo {
  /** `host:port` of the peer, for log lines. */
  peer: string;
}

export interface KafkaListenerLogger {
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
}

export interface KafkaListenerOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  handler: KafkaFrameHandler;
  logger: KafkaListenerLogger;
  /** Default `LIMITS.kafkaFrameBytesMax`. */
  frameBytesMax?: number;
  /** Default `LIMITS.kafkaRequestsInFlightPerConnectionMax`. */
  requestsInFlightMax?: number;
}

/**
 * The TCP side of a Kafka broker (https://kafka.apache.org/protocol#protocol_network): size-prefixed
 * frames in, responses out in the order the requests came on each connection, whatever order their
 * handlers finish in (clients pipeline requests and match responses by order as much as by correlation
 * id). A frame larger than the bound or a handler that throws closes that connection with a log line; no
 * input can stop the listener or the process.
 */
export class KafkaListener {
  private server: Server | null = null;
  private readonly connections = new Set<Socket>();

  constructor(private readonly options: KafkaListenerOptions) {}

  /** Starts listening; resolves with the port bound. */
  async start(): Promise<number> {
    const server = createServer((socket) => this.accept(socket));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port, this.options.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.on('error', (error) => this.options.logger.warn({ err: error }, 'the Kafka listener failed'));
    const address = server.address();
    return typeof address === 'object' && address !== null ? address.port : this.options.port;
  }

  /** Stops accepting and closes every connection. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const socket of this.connections) socket.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private accept(socket: Socket): void {
    this.connections.add(socket);
    socket.setNoDelay(true);
    const peer = `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}`;
    const connection = new Connection(socket, { peer }, this.options);
    socket.on('data', (chunk: Buffer) => connection.receive(chunk));
    socket.on('error', () => socket.destroy());
    socket.on('close', () => {
      this.connections.delete(socket);
      connection.closed = true;
    });
  }
}

type Answer = { parts: Uint8Array[] | null } | { error: string };

/** One client connection: frame reassembly, ordered responses, and a bound on requests in flight. */
class Connection {
  closed = false;
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** Responses not yet written, in request order; they never reject (a failure is an outcome). */
  private readonly pending: Promise<Answer>[] = [];
  private writing = false;
  private readonly frameBytesMax: number;
  private readonly requestsInFlightMax: number;

  constructor(
    private readonly socket: Socket,
    private readonly info: KafkaConnectionInfo,
    private readonly options: KafkaListenerOptions,
  ) {
    this.frameBytesMax = options.frameBytesMax ?? LIMITS.kafkaFrameBytesMax;
    this.requestsInFlightMax = options.requestsInFlightMax ?? LIMITS.kafkaRequestsInFlightPerConnectionMax;
  }

  receive(chunk: Buffer): void {
    if (this.closed) return;
    this.chunks.push(chunk);
    this.buffered += chunk.byteLength;
    this.handleBufferedFrames();
  }

  /**
   * Hands the whole frames buffered to the handler while fewer than the bound are in flight; beyond it the
   * socket is paused and the rest waits in the buffer (one TCP chunk may hold many frames) until responses
   * go out.
   */
  private handleBufferedFrames(): void {
    while (!this.closed && this.buffered >= 4) {
      if (this.pending.length >= this.requestsInFlightMax) {
        this.socket.pause();
        return;
      }
      const size = this.peekSize();
      if (size < 0 || size > this.frameBytesMax) {
        this.close(`a frame of ${size} bytes (the bound is ${this.frameBytesMax})`);
        return;
      }
      if (this.buffered < 4 + size) return;
      const frame = this.take(4 + size).subarray(4);
      this.pending.push(this.answer(frame));
      this.flushAndCloseOnError();
    }
  }

  private flushAndCloseOnError(): void {
    this.flush().catch((error: unknown) => this.close(`writing a response failed: ${error instanceof Error ? error.message : String(error)}`));
  }

  private peekSize(): number {
    const head = this.chunks[0]!.byteLength >= 4 ? this.chunks[0]! : Buffer.concat(this.chunks, 4);
    return head.readInt32BE(0);
  }

  /** The next `count` buffered bytes: a view when one chunk holds them, else joined once. */
  private take(count: number): Buffer {
    const first = this.chunks[0]!;
    let taken: Buffer;
    if (first.byteLength >= count) {
      taken = first.subarray(0, count);
      if (first.byteLength === count) this.chunks.shift();
      else this.chunks[0] = first.subarray(count);
    } else {
      taken = Buffer.allocUnsafe(count);
      let filled = 0;
      while (filled < count) {
        const chunk = this.chunks[0]!;
        const part = Math.min(chunk.byteLength, count - filled);
        chunk.copy(taken, filled, 0, part);
        filled += part;
        if (part === chunk.byteLength) this.chunks.shift();
        else this.chunks[0] = chunk.subarray(part);
      }
    }
    this.buffered -= count;
    return taken;
  }

  private answer(frame: Uint8Array): Promise<Answer> {
    let handled: Promise<Uint8Array[] | null>;
    try {
      handled = this.options.handler(frame, this.info);
    } catch (error) {
      handled = Promise.reject(error);
    }
    return handled.then(
      (parts) => ({ parts }),
      (error: unknown) => ({ error: error instanceof Error ? error.message : String(error) }),
    );
  }

  /** Writes settled responses in request order; a failed one closes the connection. */
  private async flush(): Promise<void> {
    if (this.writing) return;
    this.writing = true;
    try {
      while (this.pending.length > 0 && !this.closed) {
        const answer = await this.pending[0]!;
        if ('error' in answer) {
          this.close(answer.error);
          return;
        }
        const parts = answer.parts;
        if (parts !== null && !this.closed) {
          let length = 0;
          for (const part of parts) length += part.byteLength;
          const size = Buffer.allocUnsafe(4);
          size.writeInt32BE(length, 0);
          this.socket.cork();
          let room = this.socket.write(size);
          for (const part of parts) room = this.socket.write(part);
          this.socket.uncork();
          // A client that does not read its responses stops this connection's requests, not the node's memory:
          // the request counts as in flight until its response has left for the socket.
          if (!room && !this.closed) await this.drained();
        }
        this.pending.shift();
        if (this.pending.length < this.requestsInFlightMax) {
          if (this.socket.isPaused() && !this.closed) this.socket.resume();
          this.handleBufferedFrames();
        }
      }
    } finally {
      this.writing = false;
    }
  }

  /** Resolves when the socket drains or closes, whichever comes first, leaving no listener behind. */
  private drained(): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = (): void => {
        this.socket.off('drain', done).off('close', done);
        resolve();
      };
      this.socket.on('drain', done).on('close', done);
    });
  }

  private close(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.options.logger.warn({ peer: this.info.peer, reason }, 'closing a Kafka connection');
    this.pending.length = 0;
    this.socket.destroy();
  }
}
