import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type NatsConnection } from 'nats';
import { startNatsServer, type NatsServerHandle } from '@mink/devcluster';
import { InvalidArgumentError, MinkError, TimeoutError, UnavailableError } from '@mink/protocol';
import { LIMITS } from '@mink/config';
import { MULTI_MARKER, decodeMultiMessage, isMultiMessage } from './multi-message';
import { WithBinary, requestJson, serveJson } from './rpc';
import { REPLY_SEAL_BYTES, SEAL_MARKER, openReply, openRequest, sealRequest } from './seal';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The message inside a sealed request, which every request `requestJson` sends is. */
function unsealed(data: Uint8Array): Uint8Array {
  const opened = openRequest(data);
  if (!('sealed' in opened) || !opened.sealed) throw new Error(`not a sealed request: ${JSON.stringify(opened)}`);
  return opened.body;
}

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

describe('sealed requests and replies on a real nats-server', () => {
  let dataDir: string;
  let server: NatsServerHandle;
  let connection: NatsConnection;
  /** The bodies the 'seal.echo' handler ran with. */
  const handled: unknown[] = [];
  /** What reached 'seal.echo' and what it answered, raw, as a second connection sees them. */
  const wire: { request: Uint8Array; reply?: Uint8Array }[] = [];

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'mink-rpc-seal-'));
    server = await startNatsServer({ dataDir });
    connection = await connect({ servers: server.url });
    serveJson(connection, 'seal.echo', async (body) => {
      handled.push(body);
      return body;
    });
    await connection.flush();
  });

  beforeEach(() => {
    handled.length = 0;
    wire.length = 0;
  });

  afterAll(async () => {
    await connection?.close();
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /**
   * A subject whose requests reach 'seal.echo' through a relay that passes each through `damage` on the way
   * there and its reply through `damageReply` on the way back: what a NATS server or a client library that
   * damages bytes between two processes would do.
   */
  async function relay(subject: string, damage: (request: Uint8Array) => Uint8Array, damageReply: (reply: Uint8Array) => Uint8Array = (reply) => reply): Promise<NatsConnection> {
    const relayConnection = await connect({ servers: server.url });
    relayConnection.subscribe(subject, {
      callback: (_error, msg) => {
        const request = damage(Uint8Array.from(msg.data));
        const entry: { request: Uint8Array; reply?: Uint8Array } = { request };
        wire.push(entry);
        void relayConnection.request('seal.echo', request, { timeout: 5_000 }).then((reply) => {
          entry.reply = Uint8Array.from(reply.data);
          msg.respond(damageReply(entry.reply));
        });
      },
    });
    await relayConnection.flush();
    return relayConnection;
  }

  it('sends every request sealed, and the endpoint answers it sealed, naming the request', async () => {
    // Proves the seal is on the wire both ways (not only in the code that writes it).
    const through = await relay('seal.plain', (request) => request);
    try {
      await expect(requestJson(connection, 'seal.plain', { n: 1 }, 5_000, Uint8Array.of(0, 255))).resolves.toMatchObject({ n: 1 });
      expect(wire).toHaveLength(1);
      const { request, reply } = wire[0]!;
      expect(request[0]).toBe(SEAL_MARKER);
      const opened = openRequest(request);
      expect(opened).toMatchObject({ sealed: true });
      expect(reply![0]).toBe(SEAL_MARKER);
      expect(openReply(reply!, (opened as { crc: number }).crc)).toMatchObject({ body: expect.any(Uint8Array) });
    } finally {
      await through.close();
    }
  });

  it('refuses a request damaged on the way as Unavailable, without running it, and its caller sends it again', async () => {
    // Proves a damaged request is neither run nor a client error: the caller gets Unavailable, which every
    // mink client retries (bucket-retry.ts).
    const through = await relay('seal.damaged', (request) => {
      request[request.length - 2] ^= 0x40;
      return request;
    });
    try {
      const failure = requestJson(connection, 'seal.damaged', { n: 2, rows: 'abc' });
      await expect(failure).rejects.toMatchObject({ code: 'Unavailable', details: { retryAfterMs: 200 } });
      await expect(failure).rejects.toThrow(/^the request was damaged in transit and not carried out \(the CRC-32 of the request's \d+ bytes is 0x[0-9a-f]{8}, its seal says 0x[0-9a-f]{8}\): send it again$/);
      expect(handled).toEqual([]);
    } finally {
      await through.close();
    }
  });

  it('takes a request whose payload became NATS protocol text (seen once in CI) for what it is: not run, and a Timeout for its caller', async () => {
    // The CI case: a data node was handed "MSG mink.n..." as an append's bytes and answered 400 "not JSON",
    // which reached a client. The endpoint still answers it (unsealed, InvalidArgument); the caller, whose
    // request was sealed, refuses that unsealed reply as damaged and gets a Timeout (whose outcome it does not
    // know), which every mink client retries (appends carry their writer's sequence, so a retry is not stored twice).
    const through = await relay('seal.protocol', () => encoder.encode('MSG mink.node.1.rpc 12 _INBOX.x.y 1500\r\n{"op":"append"}'));
    try {
      const failure = requestJson(connection, 'seal.protocol', { n: 3 });
      await expect(failure).rejects.toBeInstanceOf(TimeoutError);
      await expect(failure).rejects.toThrow(/^the reply on seal\.protocol was damaged in transit, so whether the request was carried out is unknown: the reply of \d+ bytes is not sealed \(it starts "\{\\"error\\":\{\\"code\\""\)$/);
      expect(handled).toEqual([]);
      expect(JSON.parse(decoder.decode(wire[0]!.reply!))).toMatchObject({ error: { code: 'InvalidArgument', message: expect.stringMatching(/^the request is not JSON/) } });
    } finally {
      await through.close();
    }
  });

  it('refuses a reply damaged on the way back as a Timeout: the request ran, its caller cannot know its outcome', async () => {
    const through = await relay(
      'seal.reply',
      (request) => request,
      (reply) => {
        const damaged = Uint8Array.from(reply);
        damaged[REPLY_SEAL_BYTES] ^= 0x01;
        return damaged;
      },
    );
    try {
      const failure = requestJson(connection, 'seal.reply', { n: 4 });
      await expect(failure).rejects.toBeInstanceOf(TimeoutError);
      await expect(failure).rejects.toThrow(/the CRC-32 of the reply's \d+ bytes is 0x[0-9a-f]{8}, its seal says/);
      expect(handled).toEqual([{ n: 4 }]);
    } finally {
      await through.close();
    }
  });

  it('refuses the sealed reply to another request', async () => {
    // Proves a reply is bound to its request: a server that delivered another request's reply here is caught.
    const other = sealRequest([encoder.encode('{"n":99}')]);
    const otherReply = await connection.request('seal.echo', other.message, { timeout: 5_000 });
    const through = await relay('seal.swapped', (request) => request, () => Uint8Array.from(otherReply.data));
    try {
      await expect(requestJson(connection, 'seal.swapped', { n: 5 })).rejects.toThrow(/the reply answers the request of CRC-32 0x[0-9a-f]{8}, not this one/);
    } finally {
      await through.close();
    }
  });

  it('answers a request that is not sealed unsealed, as before (a foreign client, a probe)', async () => {
    const reply = await connection.request('seal.echo', encoder.encode('{"n":6}'), { timeout: 5_000 });
    expect(JSON.parse(decoder.decode(reply.data))).toEqual({ result: { n: 6 } });
  });
});

describe('coalesced requests on a real nats-server', () => {
  let dataDir: string;
  let server: NatsServerHandle;
  let connection: NatsConnection;
  let observer: NatsConnection;
  /** Every message that reached the subject 'co.echo' (seen by a second connection), unsealed: how the requests travelled. */
  const seen: Uint8Array[] = [];
  /** The bodies the handler was called with, in the order it was called. */
  const handled: unknown[] = [];

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'mink-rpc-co-'));
    server = await startNatsServer({ dataDir });
    connection = await connect({ servers: server.url });
    observer = await connect({ servers: server.url });
    observer.subscribe('co.echo', {
      callback: (_error, msg) => {
        // The foreign client's raw request of the last test is not sealed: not one of those counted here.
        if (msg.data[0] === SEAL_MARKER) seen.push(unsealed(msg.data));
      },
    });
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
    expect(decoder.decode(messages[0]!)).toBe('{"n":7}');
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

