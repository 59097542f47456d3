import { startTcpProxy } from './tcp-proxy.fixture';

/**
 * A TCP proxy on 127.0.0.1 in front of a nats-server that reads what clients send as NATS protocol and
 * drops the publishes (`PUB`, `HPUB`) whose subject `drop` picks, forwarding everything else unchanged.
 * Dropping the pull requests of a JetStream consumer leaves nats.js counting them as pending while the
 * server holds none: the state a server that loses a pull request silently leaves a client in.
 */
export interface PublishFilterProxy {
  port: number;
  /** Subjects of the publishes dropped so far, in order. */
  dropped: string[];
  /** Which publishes to drop from now on; null forwards all. */
  setDrop(drop: ((subject: string) => boolean) | null): void;
  close(): Promise<void>;
}

const CRLF = Buffer.from('\r\n');

export async function startPublishFilterProxy(targetPort: number): Promise<PublishFilterProxy> {
  let drop: ((subject: string) => boolean) | null = null;
  const dropped: string[] = [];
  // Each connection keeps the bytes of a protocol message it has not received whole yet.
  const proxy = await startTcpProxy(targetPort, () => {
    let pending: Buffer = Buffer.alloc(0);
    return (chunk) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      const passed: Buffer[] = [];
      for (;;) {
        const lineEnd = pending.indexOf(CRLF);
        if (lineEnd < 0) break;
        const words = pending.toString('latin1', 0, lineEnd).split(' ');
        const isPublish = ['PUB', 'HPUB'].includes(words[0]!.toUpperCase());
        // A publish's payload (headers included) follows its line, then CRLF; its size is the line's last word.
        const messageEnd = lineEnd + 2 + (isPublish ? Number(words[words.length - 1]) + 2 : 0);
        if (pending.length < messageEnd) break;
        if (isPublish && drop?.(words[1]!)) dropped.push(words[1]!);
        else passed.push(pending.subarray(0, messageEnd));
        pending = pending.subarray(messageEnd);
      }
      return Buffer.concat(passed);
    };
  });
  return {
    port: proxy.port,
    dropped,
    setDrop: (next) => {
      drop = next;
    },
    close: () => proxy.close(),
  };
}
