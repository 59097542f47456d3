import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type NatsConnection } from 'nats';
import { startNatsServer, type NatsServerHandle } from '@mink/devcluster';
import { InvalidArgumentError } from '@mink/protocol';
import { requestJson, serveJson } from './rpc';

describe('requestJson on a real nats-server', () => {
  let dataDir: string;
  let server: NatsServerHandle;
  let connection: NatsConnection;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'mink-rpc-'));
    server = await startNatsServer({ dataDir });
    connection = await connect({ servers: server.url });
    serveJson(connection, 'rpc.echo', async (body) => body);
  });

  afterAll(async () => {
    await connection?.close();
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers a request that fits one message', async () => {
    // Proves the ordinary path, so the refusal below is about size alone.
    await expect(requestJson(connection, 'rpc.echo', { columns: 3 })).resolves.toEqual({ columns: 3 });
  });

  it('refuses a request larger than one message as InvalidArgument, naming the size', async () => {
    // Proves an oversize request (a create of 100 000 columns) is the caller's error (HTTP 400), not a 500.
    const columns = Array.from({ length: 100_000 }, (_, index) => ({ name: `column_${index}`, type: 'string' }));
    const failure = requestJson(connection, 'rpc.echo', { op: 'createTable', spec: { name: 't', columns } });
    await expect(failure).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(failure).rejects.toThrow(/^the request is \d+ bytes, more than the \d+ bytes one message may hold$/);
  });
});
