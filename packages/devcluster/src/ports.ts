import { createServer, connect } from 'node:net';
import { LIMITS, sleep } from '@mink/config';

/**
 * A TCP port that is free on `host` right now. The port is found by letting the kernel pick one and
 * releasing it, so another process may still take it before the caller binds: good enough for local
 * servers started one after the other, not a reservation.
 */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ host, port: 0, exclusive: true }, () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error(`could not read the port picked on ${host}`));
        return;
      }
      server.close(() => resolve(address.port));
    });
  });
}

/** True when a TCP connection to `host:port` opens; the connection is closed again at once. */
export function isPortOpen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/** Resolves once `host:port` accepts TCP connections; rejects after `timeoutMs`. */
export async function waitForPort(host: string, port: number, timeoutMs: number): Promise<void> {
  const deadlineMs = Date.now() + timeoutMs;
  for (;;) {
    if (await isPortOpen(host, port)) return;
    if (Date.now() >= deadlineMs) throw new Error(`${host}:${port} did not accept connections within ${timeoutMs} ms`);
    await sleep(LIMITS.devServerPollIntervalMs);
  }
}
