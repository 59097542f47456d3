import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type NatsConnection } from 'nats';
import { startNatsServer, type NatsServerHandle } from '@mink/devcluster';
import { InvalidArgumentError } from '@mink/protocol';
import { WithBinary, requestJson, serveJson } from './rpc';

describe('requestJson on a real nats-server', () => {
  let dataDir: string;
  let server: NatsServerHandle;
  let connection: NatsConnection;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'mink-rpc-'));
    server = await startNatsServer({ dataDir });
    connection = await connect({ servers: server.url });
    serveJson(connection, 'rpc.echo', async (body) => body);
    serveJson(connection, 'rpc.binary', async (body) => {
      const { batch, ...rest } = body as { batch?: Uint8Array };
      return { ...rest, bytes: batch ? Array.from(batch) : null };
    });
    serveJson(connection, 'rpc.binaryReply', async (body) => new WithBinary({ echoed: body }, Uint8Array.of(0, 255, 7)));
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

  it('carries binary bytes next to the JSON, unchanged, as the body\'s batch', async () => {
    // Proves the binary framing: the handler gets the JSON fields and the exact bytes (zeros and 0xff included).
    const bytes = Uint8Array.of(0, 255, 1, 0, 123);
    await expect(requestJson(connection, 'rpc.binary', { op: 'append', n: 1 }, undefined, bytes)).resolves.toEqual({ op: 'append', n: 1, bytes: [0, 255, 1, 0, 123] });
    await expect(requestJson(connection, 'rpc.binary', { op: 'plain' })).resolves.toEqual({ op: 'plain', bytes: null });
  });

  it('carries binary bytes of a reply next to its JSON result, as the result\'s batch', async () => {
    // Proves the reply framing: the caller gets the JSON result and the exact bytes.
    const answer = await requestJson<{ echoed: unknown; batch: Uint8Array }>(connection, 'rpc.binaryReply', { op: 'scan' });
    expect(answer.echoed).toEqual({ op: 'scan' });
    expect(Array.from(answer.batch)).toEqual([0, 255, 7]);
  });

  it('answers a binary request whose header lies about its JSON as InvalidArgument', async () => {
    // Proves malformed framing is the caller's error, not a crash or a 500.
    const reply = await connection.request('rpc.binary', Uint8Array.of(0, 200, 0, 0, 0, 123));
    expect(JSON.parse(new TextDecoder().decode(reply.data))).toMatchObject({ error: { code: 'InvalidArgument' } });
  });

  it('refuses a request larger than one message as InvalidArgument, naming the size', async () => {
    // Proves an oversize request (a create of 100 000 columns) is the caller's error (HTTP 400), not a 500.
    const columns = Array.from({ length: 300_000 }, (_, index) => ({ name: `column_${index}`, type: "string" }));
    const failure = requestJson(connection, 'rpc.echo', { op: 'createTable', spec: { name: 't', columns } });
    await expect(failure).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(failure).rejects.toThrow(/^the request is \d+ bytes, more than the \d+ bytes one message may hold$/);
  });
});
