import { type Server, type Socket, createServer } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { LIMITS } from '@mink/config';
import { newKafkaSession, type KafkaSession } from '../broker/sasl-handlers';

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
  /** The connection's SASL state (who it proved to be), kept by the broker. */
  session: KafkaSession;
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
  /** Default `LIMITS.kafkaInFlightBytesPerConnectionMax`. */
  inFlightBytesMax?: number;
  /** Default `LIMITS.kafkaConnectionsMax`. */
  connectionsMax?: number;
  /** Default `LIMITS.kafkaConnectionsPerAddressMax`. */
  connectionsPerAddressMax?: number;
  /** Default `LIMITS.kafkaConnectionIdleMs`. */
  idleMs?: number;
  /** PEM certificate chain and private key: the listener speaks TLS (Kafka's SSL and SASL_SSL), else plain TCP. */
  tls?: { cert: Buffer; key: Buffer } | null;
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
  /** Open connections by client address, for `connectionsPerAddressMax`. */
  private readonly connectionsByAddress = new Map<string, number>();
  /** Connections refused for a cap since the last log line about it (one line per second at most). */
  private refusedSinceLog = 0;
  private lastRefusalLogMs = 0;

  constructor(private readonly options: KafkaListenerOptions) {}

  /** Starts listening; resolves with the port bound. */
  async start(): Promise<number> {
    const tls = this.options.tls;
    // With TLS, a connection is accepted once its handshake is done ('secureConnection'); a failed handshake
    // ('tlsClientError') only closes that socket.
    const server = tls ? createTlsServer({ cert: tls.cert, key: tls.key, minVersion: 'TLSv1.2', handshakeTimeout: LIMITS.kafkaTlsHandshakeTimeoutMs }, (socket) => this.accept(socket)) : createServer((socket) => this.accept(socket));
    if (tls) server.on('tlsClientError', (error, socket) => {
      this.options.logger.warn({ peer: `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}`, reason: error.message }, 'a Kafka TLS handshake failed');
      socket.destroy();
    });
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
    const address = socket.remoteAddress ?? '?';
    const peer = `${address}:${socket.remotePort ?? '?'}`;
    const cap = connectionCapReached(this.connections.size, this.connectionsByAddress.get(address) ?? 0, {
      connectionsMax: this.options.connectionsMax ?? LIMITS.kafkaConnectionsMax,
      connectionsPerAddressMax: this.options.connectionsPerAddressMax ?? LIMITS.kafkaConnectionsPerAddressMax,
    });
    if (cap !== null) {
      socket.destroy();
      this.logRefusal(peer, cap);
      return;
    }
    this.connections.add(socket);
    this.connectionsByAddress.set(address, (this.connectionsByAddress.get(address) ?? 0) + 1);
    socket.setNoDelay(true);
    const connection = new Connection(socket, { peer, session: newKafkaSession() }, this.options);
    socket.on('data', (chunk: Buffer) => connection.receive(chunk));
    socket.on('error', () => socket.destroy());
    // A connection that sends nothing for the idle time is closed, unless it waits for an answer (a long fetch).
    socket.setTimeout(this.options.idleMs ?? LIMITS.kafkaConnectionIdleMs, () => connection.closeIfIdle());
    socket.on('close', () => {
      this.connections.delete(socket);
      const left = (this.connectionsByAddress.get(address) ?? 1) - 1;
      if (left > 0) this.connectionsByAddress.set(address, left);
      else this.connectionsByAddress.delete(address);
      connection.closed = true;
    });
  }

  /** One warning per second at most about connections refused for a cap, however many a flood brings. */
  private logRefusal(peer: string, cap: ConnectionCap): void {
    this.refusedSinceLog += 1;
    const nowMs = Date.now();
    if (nowMs - this.lastRefusalLogMs < 1_000) return;
    this.options.logger.warn({ peer, cap, refused: this.refusedSinceLog }, 'refusing Kafka connections: a connection cap is reached');
    this.refusedSinceLog = 0;
    this.lastRefusalLogMs = nowMs;
  }
}

export type ConnectionCap = 'connections' | 'connections-per-address';

/** Which cap a new connection would pass, given the open connections and those of its address, or null. */
export function connectionCapReached(open: number, openFromAddress: number, caps: { connectionsMax: number; connectionsPerAddressMax: number }): ConnectionCap | null {
  if (open >= caps.connectionsMax) return 'connections';
  if (openFromAddress >= caps.connectionsPerAddressMax) return 'connections-per-address';
  return null;
}

type Answer = { parts: Uint8Array[] | null } | { error: string };

/** One client connection: frame reassembly, ordered responses, and a bound on requests in flight. */
class Connection {
  closed = false;
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** Responses not yet written, in request order, with the size of their request frames; they never reject (a failure is an outcome). */
  private readonly pending: { answer: Promise<Answer>; bytes: number }[] = [];
  /** Bytes of the request frames of `pending`. */
  private inFlightBytes = 0;
  private writing = false;
  private readonly frameBytesMax: number;
  private readonly requestsInFlightMax: number;
  private readonly inFlightBytesMax: number;

  constructor(
    private readonly socket: Socket,
    private readonly info: KafkaConnectionInfo,
    private readonly options: KafkaListenerOptions,
  ) {
    this.frameBytesMax = options.frameBytesMax ?? LIMITS.kafkaFrameBytesMax;
    this.requestsInFlightMax = options.requestsInFlightMax ?? LIMITS.kafkaRequestsInFlightPerConnectionMax;
    this.inFlightBytesMax = options.inFlightBytesMax ?? LIMITS.kafkaInFlightBytesPerConnectionMax;
  }

  /** Closes the connection when it waits for no answer (called when it has sent nothing for the idle time). */
  closeIfIdle(): void {
    if (this.pending.length === 0) this.close('idle past the idle timeout');
  }

  receive(chunk: Buffer): void {
    if (this.closed) return;
    this.chunks.push(chunk);
    this.buffered += chunk.byteLength;
    this.handleBufferedFrames();
  }

  /**
   * Hands the whole frames buffered to the handler while fewer than the bounds are in flight (requests, and
   * bytes of their frames; one frame is always taken); beyond them the socket is paused and the rest waits in
   * the buffer (one TCP chunk may hold many frames) until responses go out.
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
      if (this.pending.length > 0 && this.inFlightBytes + size > this.inFlightBytesMax) {
        this.socket.pause();
        return;
      }
      if (this.buffered < 4 + size) return;
      const frame = this.take(4 + size).subarray(4);
      this.pending.push({ answer: this.answer(frame), bytes: size });
      this.inFlightBytes += size;
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
        const answer = await this.pending[0]!.answer;
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
        this.inFlightBytes -= this.pending.shift()!.bytes;
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
    this.inFlightBytes = 0;
    this.socket.destroy();
  }
}
