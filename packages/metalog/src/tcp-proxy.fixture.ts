import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 in front of one port, for tests that cut one client off its server without
 * touching the others: `partition` silently drops everything in both directions (the sockets stay open, as
 * in a network partition), `heal` closes the cut sockets so the client reconnects through the proxy, which
 * forwards again.
 */
export interface TcpProxy {
  port: number;
  partition(): void;
  heal(): void;
  close(): Promise<void>;
}

/** Per connection, what of each chunk a client sends goes on to the server (it may keep bytes for later). */
export type ClientBytesFilter = () => (chunk: Buffer) => Buffer;

/** `serverFilter`: per connection, what of each chunk the server sends goes on to the client (a test may damage bytes there). */
export async function startTcpProxy(targetPort: number, clientFilter?: ClientBytesFilter, serverFilter?: ClientBytesFilter): Promise<TcpProxy> {
  let partitioned = false;
  const pairs = new Set<[Socket, Socket]>();
  const server: Server = createServer((client) => {
    const upstream = connect({ host: '127.0.0.1', port: targetPort });
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const forward = (from: Socket, to: Socket, filter: (chunk: Buffer) => Buffer): void => {
      from.on('data', (chunk: Buffer) => {
        if (partitioned) return;
        const passed = filter(chunk);
        if (passed.length > 0) to.write(passed);
      });
    };
    forward(client, upstream, clientFilter?.() ?? ((chunk) => chunk));
    forward(upstream, client, serverFilter?.() ?? ((chunk) => chunk));
    const closeBoth = (): void => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', closeBoth).on('close', closeBoth);
    upstream.on('error', closeBoth).on('close', closeBoth);
  });
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the proxy has no port');
  return {
    port: address.port,
    partition: () => {
      partitioned = true;
    },
    heal: () => {
      for (const [client, upstream] of [...pairs]) {
        client.destroy();
        upstream.destroy();
      }
      pairs.clear();
      partitioned = false;
    },
    close: async () => {
      for (const [client, upstream] of pairs) {
        client.destroy();
        upstream.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
