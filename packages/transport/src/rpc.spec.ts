import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type NatsConnection } from 'nats';
import { startNatsServer, type NatsServerHandle } from '@mink/devcluster';
import { InvalidArgumentError, MinkError, TimeoutError, UnavailableError } from '@mink/protocol';
import { LIMITS } from '@mink/config';
import { MULTI_MARKER, decodeMultiMessage, isMultiMessage } from './multi-message';
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

describe('coalesced requests on a real nats-server', () => {
  let dataDir: string;
  let server: NatsServerHandle;
  let connection: NatsConnection;
  let observer: NatsConnection;
  /** Every message that reached the subject 'co.echo' (seen by a second connection): how the requests travelled. */
  const seen: Uint8Array[] = [];
  /** The bodies the handler was called with, in the order it was called. */
  const handled: unknown[] = [];

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'mink-rpc-co-'));
    server = await startNatsServer({ dataDir });
    connection = await connect({ servers: server.url });
    observer = await connect({ servers: server.url });
    observer.subscribe('co.echo', { callback: (_error, msg) => seen.push(msg.data) });
    await observer.flush();
    serveJson(connection, 'co.echo', async (body) => {
      handled.push(body);
      const { n, fail, internal, wait, batch } = body as { n: number; fail?: boolean; internal?: boolean; wait?: number; batch?: Uint8Array };
      if (wait !== undefined) await new Promise((resolve) => setTimeout(resolve, wait));
      if (fail) throw new MinkError('NotLeader', `request ${n} refused`);
      if (internal) throw new Error(`request ${n} broke`);
      return batch === undefined ? { n } : new WithBinary({ n }, Uint8Array.from([n, 0, 255]));
    });
    await connection.flush();
  });

  beforeEach(() => {
    seen.length = 0;
    handled.length = 0;
  });

  afterAll(async () => {
    await observer?.close();
    await connection?.close();
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** Waits until the observer has seen `count` messages (they reach it in the same order as the responder). */
  const seenMessages = async (count: number): Promise<Uint8Array[]> => {
    await observer.flush();
    while (seen.length < count) await new Promise((resolve) => setTimeout(resolve, 5));
    return [...seen];
  };

  it('sends the requests of one turn with the same key in one message and answers each its own', async () => {
    // Proves the point of coalescing (one message for five requests) and that nothing is mixed up: each
    // caller gets its own answer, errors stay with their request, binary bytes go both ways, and the handler
    // is called in the order the requests were made.
    const answers = await Promise.allSettled([
      requestJson(connection, 'co.echo', { n: 0 }, 5_000, undefined, { coalesce: { key: 'write' } }),
      requestJson(connection, 'co.echo', { n: 1, fail: true }, 5_000, undefined, { coalesce: { key: 'write' } }),
      requestJson(connection, 'co.echo', { n: 2 }, 5_000, Uint8Array.from([9, 8]), { coalesce: { key: 'write' } }),
      requestJson(connection, 'co.echo', { n: 3, internal: true }, 5_000, undefined, { coalesce: { key: 'write' } }),
      requestJson(connection, 'co.echo', { n: 4, wait: 50 }, 5_000, undefined, { coalesce: { key: 'write' } }),
    ]);
    expect(answers[0]).toEqual({ status: 'fulfilled', value: { n: 0 } });
    expect(answers[1]).toMatchObject({ status: 'rejected', reason: { code: 'NotLeader', message: 'request 1 refused' } });
    expect(answers[2]).toMatchObject({ status: 'fulfilled', value: { n: 2 } });
    expect(Array.from((answers[2] as PromiseFulfilledResult<{ batch: Uint8Array }>).value.batch)).toEqual([2, 0, 255]);
    expect(answers[3]).toMatchObject({ status: 'rejected', reason: { code: 'Internal' } });
    expect(answers[4]).toEqual({ status: 'fulfilled', value: { n: 4 } });
    expect(handled.map((body) => (body as { n: number }).n)).toEqual([0, 1, 2, 3, 4]);
    expect(Array.from((handled[2] as { batch: Uint8Array }).batch)).toEqual([9, 8]);
    const messages = await seenMessages(1);
    expect(messages).toHaveLength(1);
    expect(isMultiMessage(messages[0]!)).toBe(true);
    expect(decodeMultiMessage(messages[0]!)).toHaveLength(5);
  });

  it('sends a request alone, as without coalescing, when nothing joins it', async () => {
    // Proves a lone request keeps the plain framing (a responder that knows nothing of multi messages answers it).
    await expect(requestJson(connection, 'co.echo', { n: 7 }, 5_000, undefined, { coalesce: { key: 'write' } })).resolves.toEqual({ n: 7 });
    const messages = await seenMessages(1);
    expect(messages).toHaveLength(1);
    expect(new TextDecoder().decode(messages[0]!)).toBe('{"n":7}');
  });

  it('keeps apart requests of other keys, other timeouts and those not coalesced', async () => {
    // Proves the grouping key: only the two requests alike travel together (4 messages for 5 requests).
    const answers = await Promise.all([
      requestJson(connection, 'co.echo', { n: 0 }, 5_000, undefined, { coalesce: { key: 'write' } }),
      requestJson(connection, 'co.echo', { n: 1 }, 5_000, undefined, { coalesce: { key: 'write' } }),
      requestJson(connection, 'co.echo', { n: 2 }, 5_000, undefined, { coalesce: { key: 'read' } }),
      requestJson(connection, 'co.echo', { n: 3 }, 6_000, undefined, { coalesce: { key: 'write' } }),
      requestJson(connection, 'co.echo', { n: 4 }, 5_000),
    ]);
    expect(answers).toEqual([0, 1, 2, 3, 4].map((n) => ({ n })));
    const messages = await seenMessages(4);
    expect(messages.filter((message) => isMultiMessage(message)).map((message) => decodeMultiMessage(message).length)).toEqual([2]);
    expect(messages).toHaveLength(4);
  });

  it('never puts two requests of one apart key in one message', async () => {
    // Proves a bucket's writes keep fates of their own: its two requests travel in two messages, each with
    // the other bucket's request that was issued next to it.
    const answers = await Promise.all(
      [
        { n: 0, apart: 'bucket 0' },
        { n: 1, apart: 'bucket 1' },
        { n: 2, apart: 'bucket 0' },
        { n: 3, apart: 'bucket 1' },
      ].map(({ n, apart }) => requestJson(connection, 'co.echo', { n }, 5_000, undefined, { coalesce: { key: 'write', apart } })),
    );
    expect(answers).toEqual([0, 1, 2, 3].map((n) => ({ n })));
    const messages = await seenMessages(2);
    expect(messages.map((message) => decodeMultiMessage(message).map((part) => JSON.parse(new TextDecoder().decode(part)).n))).toEqual([
      [0, 1],
      [2, 3],
    ]);
  });

  it(`sends at most ${LIMITS.multiRequestPartsMax} requests in one message`, async () => {
    // Proves the part bound: one more request than it allows makes two messages, and every request is answered.
    const count = LIMITS.multiRequestPartsMax + 1;
    const answers = await Promise.all(Array.from({ length: count }, (_, n) => requestJson(connection, 'co.echo', { n }, 5_000, undefined, { coalesce: { key: 'write' } })));
    expect(answers).toEqual(Array.from({ length: count }, (_, n) => ({ n })));
    const messages = await seenMessages(2);
    expect(messages.map((message) => (isMultiMessage(message) ? decodeMultiMessage(message).length : 1))).toEqual([LIMITS.multiRequestPartsMax, 1]);
  });

  it('fails every coalesced request at once as Unavailable when nobody serves the subject', async () => {
    // Proves the no-responder answer (how a client learns a node is gone) reaches each request of the message.
    const answers = await Promise.allSettled([0, 1, 2].map((n) => requestJson(connection, 'co.nobody', { n }, 5_000, undefined, { coalesce: { key: 'write' } })));
    for (const answer of answers) {
      expect(answer.status).toBe('rejected');
      expect((answer as PromiseRejectedResult).reason).toBeInstanceOf(UnavailableError);
    }
  });

  it('times out every coalesced request that gets no answer in time', async () => {
    // Proves each request still has its timeout: the handler answers after 300 ms, the requests wait 100 ms.
    const answers = await Promise.allSettled([0, 1].map((n) => requestJson(connection, 'co.echo', { n, wait: 300 }, 100, undefined, { coalesce: { key: 'write' } })));
    for (const answer of answers) expect((answer as PromiseRejectedResult).reason).toBeInstanceOf(TimeoutError);
  });

  it('rejects coalesced requests on a closed connection, each of them', async () => {
    // Proves a request sent at the end of the event loop turn fails its caller when the connection is gone,
    // rather than throwing where nobody waits for it.
    const closed = await connect({ servers: server.url });
    await closed.close();
    const answers = await Promise.allSettled([0, 1].map((n) => requestJson(closed, 'co.echo', { n }, 5_000, undefined, { coalesce: { key: 'write' } })));
    expect(answers.map((answer) => answer.status)).toEqual(['rejected', 'rejected']);
  });

  it('answers a multi message whose framing is broken as InvalidArgument, as a whole', async () => {
    // Proves bad input from a foreign client is its error, not a crash and not a silence.
    const reply = await connection.request('co.echo', Uint8Array.of(MULTI_MARKER, 2, 0, 0, 0, 1, 0, 0, 0, 0x7b));
    expect(JSON.parse(new TextDecoder().decode(reply.data))).toMatchObject({ error: { code: 'InvalidArgument', message: expect.stringMatching(/announces 2 parts but ends after 1/) } });
  });
});

