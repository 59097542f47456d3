import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, ErrorCode, StringCodec, type NatsConnection } from 'nats';
import { startNatsServer, type NatsServerHandle } from '@mink/devcluster';
import { eventually } from '@mink/testing';
import { connectionWatch, failRequestsFastAcrossReconnects } from './nats-connection';

const codec = StringCodec();

describe('failRequestsFastAcrossReconnects', () => {
  let dataDir: string;
  let server: NatsServerHandle;
  const connections: NatsConnection[] = [];

  beforeEach(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'mink-nats-connection-'));
    server = await startNatsServer({ dataDir });
  });

  afterEach(async () => {
    for (const connection of connections.splice(0)) await connection.close().catch(() => undefined);
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function open(guarded: boolean): Promise<NatsConnection> {
    const connection = await connect({ servers: server.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    connections.push(connection);
    return guarded ? failRequestsFastAcrossReconnects(connection) : connection;
  }

  it('fails a request in flight at once when the server dies, with the TIMEOUT code (outcome unknown), not after its timeout', async () => {
    // Proves the first half of the fix: nats.js alone keeps the request waiting for a reply that cannot come.
    const responder = await open(false);
    responder.subscribe('never.answered', { callback: () => undefined });
    await responder.flush();
    const requester = await open(true);
    const startedAtMs = Date.now();
    const pending = requester.request('never.answered', codec.encode('x'), { timeout: 10_000 }).catch((error: unknown) => error);
    await new Promise((resolve) => setTimeout(resolve, 100));
    process.kill(server.pid, 'SIGKILL');
    const error = (await pending) as { code?: string; message?: string };
    expect(error.code).toBe(ErrorCode.Timeout);
    expect(error.message).toContain('dropped while the request was in flight');
    expect(Date.now() - startedAtMs).toBeLessThan(2_000);
  });

  it('holds a request made while the connection is down and sends it once the connection is back', async () => {
    // Proves the second half: nats.js alone writes it into a buffer the next reconnect attempt empties, so it waits out its timeout.
    const requester = await open(true);
    const watch = connectionWatch(requester)!;
    const { port } = server;
    process.kill(server.pid, 'SIGKILL');
    await eventually('the connection down', () => !watch.isConnected(), { timeoutMs: 5_000, intervalMs: 10 });
    // The JetStream API answers as soon as the server is up: no responder of ours has to be there first.
    const answer = requester.request('$JS.API.INFO', undefined, { timeout: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 500));
    server = await startNatsServer({ dataDir, port });
    const restartedAtMs = Date.now();
    const reply = JSON.parse(codec.decode((await answer).data)) as { type?: string };
    expect(reply.type).toBe('io.nats.jetstream.api.v1.account_info_response');
    expect(Date.now() - restartedAtMs).toBeLessThan(3_000);
  });

  it('fails a request made while the connection is down after its own timeout when the connection stays down', async () => {
    const requester = await open(true);
    const watch = connectionWatch(requester)!;
    process.kill(server.pid, 'SIGKILL');
    await eventually('the connection down', () => !watch.isConnected(), { timeoutMs: 5_000, intervalMs: 10 });
    const startedAtMs = Date.now();
    const error = (await requester.request('echo', codec.encode('x'), { timeout: 300 }).catch((failure: unknown) => failure)) as { code?: string };
    expect(error.code).toBe(ErrorCode.Timeout);
    expect(Date.now() - startedAtMs).toBeGreaterThanOrEqual(290);
    // Brought back for afterEach.
    server = await startNatsServer({ dataDir, port: server.port });
  });
});
