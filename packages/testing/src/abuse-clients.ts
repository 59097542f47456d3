/**
 * Clients that misbehave on purpose, for the tests that prove a service bounds what they cost: a body far past
 * the limits, a raw connection that sends what the test says (or nothing).
 */
import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';

/** What `flood` saw: the answer (null: none came), the bytes sent before it and in all, and whether the server closed the connection. */
export interface Flood {
  status: number | null;
  body: string;
  writtenBeforeAnswer: number | null;
  written: number;
  closedByServer: boolean;
  elapsedMs: number;
}

/**
 * POSTs a body of `bytes` bytes to `path` without credentials, in 1 MiB chunks. With `stopOnAnswer` the
 * caller stops sending at the answer and waits for the server to close the connection; without, it goes on
 * sending until the whole body is out or the server cuts the connection. Keep-alive, as a real client's
 * agent asks: without an agent Node's client sends Connection: close, and a server told so drops the
 * connection right after its answer, which may reset it before the answer is read.
 */
export function flood(port: number, path: string, bytes: number, stopOnAnswer: boolean): Promise<Flood> {
  return new Promise((resolve) => {
    const startedAt = Date.now();
    const chunk = Buffer.alloc(1 << 20, 0x20);
    let written = 0;
    let status: number | null = null;
    let writtenBeforeAnswer: number | null = null;
    let body = '';
    let done = false;
    const finish = (closedByServer: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      outgoing.destroy();
      resolve({ status, body, writtenBeforeAnswer, written, closedByServer, elapsedMs: Date.now() - startedAt });
    };
    // A server that drained the whole body and kept the connection open would end here.
    const timer = setTimeout(() => finish(false), 20_000);
    const outgoing = httpRequest(
      { host: '127.0.0.1', port, path, method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'content-length': bytes, connection: 'keep-alive' } },
      (incoming) => {
        status = incoming.statusCode ?? 0;
        writtenBeforeAnswer = written;
        incoming.setEncoding('utf8');
        incoming.on('data', (text: string) => (body += text));
      },
    );
    outgoing.on('socket', (socket) => socket.once('close', () => finish(true)));
    // A connection cut while sending shows as EPIPE or ECONNRESET, then 'close'.
    outgoing.on('error', () => undefined);
    const writeMore = (): void => {
      while (!done && (status === null || !stopOnAnswer) && written < bytes) {
        written += chunk.byteLength;
        if (!outgoing.write(chunk)) return void outgoing.once('drain', writeMore);
      }
    };
    writeMore();
  });
}

/** A raw TCP connection to `port` on loopback; its errors (a reset by the server) are left to `closed`. */
export function rawConnection(port: number): Socket {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  return socket;
}

/** What a raw connection received until the server closed it, and when that was. */
export function closed(socket: Socket): Promise<{ received: string; atMs: number }> {
  let received = '';
  socket.setEncoding('utf8');
  socket.on('data', (text: string) => (received += text));
  return new Promise((resolve) => socket.once('close', () => resolve({ received, atMs: Date.now() })));
}
