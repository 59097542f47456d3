/**
 * Proves the TCP side of the Kafka broker against a real listener on 127.0.0.1 and a fake frame handler:
 * size-prefixed frames are reassembled however TCP cuts them, responses leave in request order whatever
 * order their handlers finish in, a null answer sends nothing, and a bad frame or a failing handler closes
 * that one connection with a log line while the listener keeps serving the others.
 */
import { createConnection, type Socket } from 'node:net';
import { newKafkaSession } from '../broker/sasl-handlers';
import { KafkaListener, connectionCapReached, type KafkaConnectionInfo, type KafkaFrameHandler, type KafkaListenerLogger } from './kafka-listener';

/**
 * One turn of the event loop. Client and listener share this process and a loopback socket, so bytes a
 * client wrote sit in the listener's receive buffer when the write completes, and the next poll phase
 * reads them; a test that waits two turns after a write knows the listener has seen those bytes.
 */
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

async function turns(count: number): Promise<void> {
  for (let index = 0; index < count; index++) await turn();
}

/** A frame as a Kafka client sends it: int32 size, then the payload. */
function framed(payload: Uint8Array | string): Buffer {
  const body = typeof payload === 'string' ? Buffer.from(payload) : Buffer.from(payload);
  const size = Buffer.alloc(4);
  size.writeInt32BE(body.byteLength, 0);
  return Buffer.concat([size, body]);
}

/** Just a size prefix, for frames the listener must refuse before their payload arrives. */
function sizePrefix(size: number): Buffer {
  const bytes = Buffer.alloc(4);
  bytes.writeInt32BE(size, 0);
  return bytes;
}

class Deferred<T> {
  resolve!: (value: T) => void;
  reject!: (error: unknown) => void;
  readonly promise = new Promise<T>((resolve, reject) => {
    this.resolve = resolve;
    this.reject = reject;
  });
}

interface HandlerCall {
  payload: string;
  connection: KafkaConnectionInfo;
  answer: Deferred<Uint8Array[] | null>;
}

/**
 * A frame handler the test answers by hand: each call waits for `answer` of its entry in `calls`. Frames are
 * short texts, so a test reads them as strings.
 */
class ScriptedHandler {
  readonly calls: HandlerCall[] = [];
  private readonly waiters: Array<{ count: number; resolve: () => void }> = [];

  readonly handle: KafkaFrameHandler = (frame, connection) => {
    const call: HandlerCall = { payload: Buffer.from(frame).toString(), connection, answer: new Deferred() };
    this.calls.push(call);
    for (const waiter of this.waiters.filter((each) => this.calls.length >= each.count)) waiter.resolve();
    return call.answer.promise;
  };

  /** Resolves once the handler has been called `count` times in all. */
  called(count: number): Promise<void> {
    if (this.calls.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ count, resolve }));
  }

  /** Answers call `index` with its payload prefixed by `re:`. */
  reply(index: number): void {
    this.calls[index]!.answer.resolve([Buffer.from(`re:${this.calls[index]!.payload}`)]);
  }
}

/** Answers every frame at once with its payload prefixed by `re:`, split in two parts as the broker writes them. */
const echo: KafkaFrameHandler = async (frame) => [Buffer.from('re:'), Buffer.from(frame)];

/** A client connection that reassembles the listener's size-prefixed responses. */
class TestClient {
  readonly responses: string[] = [];
  readonly closed: Promise<void>;
  private buffered = Buffer.alloc(0);
  private readonly waiters: Array<{ count: number; resolve: () => void; reject: (error: Error) => void }> = [];
  private isClosed = false;
  /** `host:port` of this end, as the listener logs its peer (the socket forgets it once closed). */
  readonly peer: string;

  private constructor(readonly socket: Socket) {
    this.peer = `${socket.localAddress}:${socket.localPort}`;
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
    // The listener destroys a connection it refuses; unread bytes on its side turn that into a reset.
    socket.on('error', () => undefined);
    this.closed = new Promise((resolve) =>
      socket.on('close', () => {
        this.isClosed = true;
        for (const waiter of this.waiters.splice(0)) waiter.reject(new Error(`closed after ${this.responses.length} responses: ${JSON.stringify(this.responses)}`));
        resolve();
      }),
    );
  }

  static connect(port: number): Promise<TestClient> {
    return new Promise((resolve, reject) => {
      const socket = createConnection({ host: '127.0.0.1', port }, () => {
        socket.off('error', reject);
        resolve(new TestClient(socket));
      });
      socket.setNoDelay(true);
      socket.once('error', reject);
    });
  }

  write(bytes: Uint8Array): Promise<void> {
    return new Promise((resolve, reject) => this.socket.write(bytes, (error) => (error ? reject(error) : resolve())));
  }

  /** Resolves with the first `count` responses once they have come; rejects if the connection closes first. */
  received(count: number): Promise<string[]> {
    if (this.responses.length >= count) return Promise.resolve(this.responses.slice(0, count));
    if (this.isClosed) return Promise.reject(new Error(`closed after ${this.responses.length} responses`));
    return new Promise<void>((resolve, reject) => this.waiters.push({ count, resolve, reject })).then(() => this.responses.slice(0, count));
  }

  private receive(chunk: Buffer): void {
    this.buffered = Buffer.concat([this.buffered, chunk]);
    while (this.buffered.byteLength >= 4 && this.buffered.byteLength >= 4 + this.buffered.readInt32BE(0)) {
      const size = this.buffered.readInt32BE(0);
      this.responses.push(this.buffered.subarray(4, 4 + size).toString());
      this.buffered = this.buffered.subarray(4 + size);
    }
    for (const waiter of this.waiters.filter((each) => this.responses.length >= each.count)) {
      this.waiters.splice(this.waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  }
}

interface LogLine {
  level: 'info' | 'warn';
  object: Record<string, unknown>;
  message: string;
}

const listeners: KafkaListener[] = [];
const clients: TestClient[] = [];

async function started(handler: KafkaFrameHandler, options: { frameBytesMax?: number; requestsInFlightMax?: number; inFlightBytesMax?: number; connectionsMax?: number; connectionsPerAddressMax?: number; idleMs?: number } = {}) {
  const log: LogLine[] = [];
  const logger: KafkaListenerLogger = {
    info: (object, message) => log.push({ level: 'info', object: object as Record<string, unknown>, message }),
    warn: (object, message) => log.push({ level: 'warn', object: object as Record<string, unknown>, message }),
  };
  const listener = new KafkaListener({ host: '127.0.0.1', port: 0, handler, logger, ...options });
  listeners.push(listener);
  const port = await listener.start();
  const connect = async (): Promise<TestClient> => {
    const client = await TestClient.connect(port);
    clients.push(client);
    return client;
  };
  return { listener, port, log, connect };
}

afterEach(async () => {
  for (const client of clients.splice(0)) client.socket.destroy();
  await Promise.all(listeners.splice(0).map((listener) => listener.stop()));
});

describe('KafkaListener framing', () => {
  it('reassembles a frame whose size prefix and payload arrive a byte at a time, and tells the handler the peer', async () => {
    const handler = new ScriptedHandler();
    const { connect } = await started(handler.handle);
    const client = await connect();

    for (const byte of framed('metadata please')) {
      await client.write(Buffer.of(byte));
      await turns(2);
    }
    await handler.called(1);
    handler.reply(0);

    expect(await client.received(1)).toEqual(['re:metadata please']);
    expect(handler.calls.map((call) => call.connection)).toEqual([{ peer: client.peer, session: newKafkaSession() }]);
  });

  it('reassembles a frame cut inside its size prefix after a whole frame in the same chunk', async () => {
    const { connect } = await started(echo);
    const client = await connect();
    const second = framed('second');

    await client.write(Buffer.concat([framed('first'), second.subarray(0, 2)]));
    expect(await client.received(1)).toEqual(['re:first']);
    await client.write(second.subarray(2, 7));
    await turns(2);
    await client.write(second.subarray(7));

    expect(await client.received(2)).toEqual(['re:first', 're:second']);
  });

  it('splits several frames that arrive in one chunk, an empty one among them', async () => {
    const handler = new ScriptedHandler();
    const { connect } = await started(handler.handle);
    const client = await connect();

    await client.write(Buffer.concat([framed('a'), framed(''), framed('ccc')]));
    await handler.called(3);
    [0, 1, 2].forEach((index) => handler.reply(index));

    expect(handler.calls.map((call) => call.payload)).toEqual(['a', '', 'ccc']);
    expect(await client.received(3)).toEqual(['re:a', 're:', 're:ccc']);
  });

  it('takes a frame of exactly frameBytesMax bytes', async () => {
    const { connect } = await started(echo, { frameBytesMax: 8 });
    const client = await connect();

    await client.write(framed('12345678'));

    expect(await client.received(1)).toEqual(['re:12345678']);
  });
});

describe('KafkaListener response order', () => {
  // Each row finishes the handlers of three pipelined requests in its own order; the client must get the
  // responses in request order all the same.
  it.each([
    { finished: [1, 0, 2] },
    { finished: [2, 1, 0] },
    { finished: [0, 2, 1] },
  ])('answers in request order when handlers finish in the order $finished', async ({ finished }) => {
    const handler = new ScriptedHandler();
    const { connect } = await started(handler.handle);
    const client = await connect();

    await client.write(Buffer.concat([framed('r0'), framed('r1'), framed('r2')]));
    await handler.called(3);
    for (const index of finished) handler.reply(index);

    expect(await client.received(3)).toEqual(['re:r0', 're:r1', 're:r2']);
  });

  it('sends nothing for a handler that answers null, even when it finishes after the next one', async () => {
    const handler = new ScriptedHandler();
    const { connect } = await started(handler.handle);
    const client = await connect();

    await client.write(Buffer.concat([framed('acks=0'), framed('after')]));
    await handler.called(2);
    handler.reply(1);
    handler.calls[0]!.answer.resolve(null);
    expect(await client.received(1)).toEqual(['re:after']);

    await client.write(framed('later'));
    await handler.called(3);
    handler.reply(2);
    expect(await client.received(2)).toEqual(['re:after', 're:later']);
  });

  it('keeps each connection in its own order', async () => {
    const handler = new ScriptedHandler();
    const { connect } = await started(handler.handle);
    const first = await connect();
    const second = await connect();

    await first.write(Buffer.concat([framed('a0'), framed('a1')]));
    await handler.called(2);
    await second.write(framed('b0'));
    await handler.called(3);
    // The second connection's answer is not held back by the first connection's slow request.
    handler.reply(2);
    expect(await second.received(1)).toEqual(['re:b0']);
    handler.reply(1);
    handler.reply(0);
    expect(await first.received(2)).toEqual(['re:a0', 're:a1']);
  });
});

describe('KafkaListener in-flight bound', () => {
  it('stops reading a connection once the frames in flight hold inFlightBytesMax, always taking one frame', async () => {
    const handler = new ScriptedHandler();
    const { connect } = await started(handler.handle, { inFlightBytesMax: 10 });
    const client = await connect();

    // 'big-frame-0' is 11 bytes, over the bound alone: taken, as one frame always is. The next waits for it.
    await client.write(framed('big-frame-0'));
    await handler.called(1);
    await client.write(framed('r1'));
    await turns(4);
    expect(handler.calls.map((call) => call.payload)).toEqual(['big-frame-0']);

    handler.reply(0);
    await handler.called(2);
    // 'r1' (2 bytes) and 'r2-abc' (6 bytes) fit together; 'r3-abc' would pass 10 bytes and waits.
    await client.write(Buffer.concat([framed('r2-abc'), framed('r3-abc')]));
    await handler.called(3);
    await turns(4);
    expect(handler.calls.map((call) => call.payload)).toEqual(['big-frame-0', 'r1', 'r2-abc']);
    // Answering 'r1' leaves 6 bytes in flight: 'r3-abc' would make 12, so it waits for 'r2-abc' too.
    handler.reply(1);
    await turns(4);
    expect(handler.calls).toHaveLength(3);
    handler.reply(2);
    await handler.called(4);
    handler.reply(3);
    expect(await client.received(4)).toEqual(['re:big-frame-0', 're:r1', 're:r2-abc', 're:r3-abc']);
  });

  it('stops reading a connection with requestsInFlightMax requests unanswered and reads on once one is answered', async () => {
    const handler = new ScriptedHandler();
    const { connect } = await started(handler.handle, { requestsInFlightMax: 2 });
    const client = await connect();

    await client.write(framed('r0'));
    await handler.called(1);
    await client.write(framed('r1'));
    await handler.called(2);
    await client.write(framed('r2'));
    await turns(4);
    expect(handler.calls.map((call) => call.payload)).toEqual(['r0', 'r1']);

    handler.reply(0);
    await handler.called(3);
    handler.reply(1);
    handler.reply(2);
    expect(await client.received(3)).toEqual(['re:r0', 're:r1', 're:r2']);
  });

  // Fails today: `receive` hands every whole frame of a chunk to the handler before it looks at the bound,
  // and `socket.pause()` only stops later chunks. Four small requests in one TCP chunk therefore all run at
  // once with requestsInFlightMax 2; a pipelining client sending hundreds of small requests in one write
  // gets them all in flight, whatever the bound.
  it('holds requests beyond requestsInFlightMax that arrive in the same chunk until earlier ones are answered', async () => {
    const handler = new ScriptedHandler();
    const { connect } = await started(handler.handle, { requestsInFlightMax: 2 });
    const client = await connect();

    await client.write(Buffer.concat([framed('r0'), framed('r1'), framed('r2'), framed('r3')]));
    await handler.called(2);
    await turns(4);
    expect(handler.calls.map((call) => call.payload)).toEqual(['r0', 'r1']);

    handler.reply(0);
    handler.reply(1);
    await handler.called(4);
    handler.reply(2);
    handler.reply(3);
    expect(await client.received(4)).toEqual(['re:r0', 're:r1', 're:r2', 're:r3']);
  });

  // Fails today: `flush` hands every settled response to `socket.write` without looking at its return value
  // or waiting for 'drain', and a request leaves the in-flight count as soon as its response is handed over.
  // A client that pipelines requests and reads no response therefore keeps the listener reading and
  // answering; the responses pile up in the socket's user-space buffer without a bound (64 MiB here, and a
  // fetch answer can be tens of MiB). Loopback's kernel buffers hold a few of them; a listener that counted
  // unsent responses as in flight would stop reading well before 32.
  it('stops reading a client that reads none of its responses', async () => {
    let handled = 0;
    const handler: KafkaFrameHandler = async () => {
      handled += 1;
      return [Buffer.alloc(1024 * 1024)];
    };
    const { connect } = await started(handler, { requestsInFlightMax: 4 });
    const client = await connect();
    client.socket.pause();

    for (let index = 0; index < 64; index++) {
      await client.write(framed(`fetch ${index}`));
      await turns(2);
    }

    expect(handled).toBeLessThan(32);
  });
});

describe('KafkaListener waiting for drain', () => {
  // Each 1 MiB response overfills the socket's buffer, so the listener waits for 'drain' every time; a wait
  // that left its 'close' listener behind would grow the socket's listeners by one per response (and make
  // Node warn of a leak past ten).
  it('leaves no listener behind on the socket after waiting for drain, however often', async () => {
    const { listener, connect } = await started(async () => [Buffer.alloc(1024 * 1024)]);
    const client = await connect();
    // The listener's side of the connection (private: the count is what this test is about).
    const served = () => [...(listener as unknown as { connections: Set<import('node:net').Socket> }).connections][0]!;
    await client.write(framed('fetch 0'));
    await client.received(1);
    const listenersAfterOne = { close: served().listenerCount('close'), drain: served().listenerCount('drain') };
    for (let index = 1; index < 15; index++) {
      await client.write(framed(`fetch ${index}`));
      await client.received(index + 1);
    }
    expect({ close: served().listenerCount('close'), drain: served().listenerCount('drain') }).toEqual(listenersAfterOne);
  });
});

describe('KafkaListener refusals', () => {
  // Each row sends a size prefix the listener must refuse: that connection closes with a log line, and a
  // connection opened before it keeps being answered.
  it.each([
    { name: 'a frame one byte over frameBytesMax', size: 1025, reason: 'a frame of 1025 bytes (the bound is 1024)' },
    { name: 'a frame of 2 GiB - 1', size: 2 ** 31 - 1, reason: `a frame of ${2 ** 31 - 1} bytes (the bound is 1024)` },
    { name: 'a negative size', size: -1, reason: 'a frame of -1 bytes (the bound is 1024)' },
  ])('closes only the connection that sends $name', async ({ size, reason }) => {
    const { connect, log } = await started(echo, { frameBytesMax: 1024 });
    const bystander = await connect();
    const offender = await connect();

    await offender.write(Buffer.concat([sizePrefix(size), Buffer.from('payload')]));
    await offender.closed;
    await bystander.write(framed('still there'));

    expect(await bystander.received(1)).toEqual(['re:still there']);
    expect(offender.responses).toEqual([]);
    expect(log).toEqual([{ level: 'warn', object: { peer: offender.peer, reason }, message: 'closing a Kafka connection' }]);
  });

  // Each row is a handler failing in one way; the connection closes after answering the request before it,
  // the reason is logged, and the listener takes new connections.
  it.each([
    { name: 'throws', fail: () => { throw new Error('unknown API key 99'); }, reason: 'unknown API key 99' },
    { name: 'rejects', fail: () => Promise.reject(new Error('truncated header')), reason: 'truncated header' },
    { name: 'rejects with a non-Error', fail: () => Promise.reject('bare string'), reason: 'bare string' },
  ])('closes the connection when the handler $name', async ({ fail, reason }) => {
    const handler: KafkaFrameHandler = (frame, connection) => (Buffer.from(frame).toString() === 'bad' ? fail() : echo(frame, connection));
    const { connect, log } = await started(handler);
    const client = await connect();

    await client.write(Buffer.concat([framed('good'), framed('bad'), framed('never')]));
    await client.closed;

    expect(client.responses).toEqual(['re:good']);
    expect(log).toEqual([{ level: 'warn', object: { peer: client.peer, reason }, message: 'closing a Kafka connection' }]);
    const next = await connect();
    await next.write(framed('next'));
    expect(await next.received(1)).toEqual(['re:next']);
  });

  it('closes the connection on a failure that finishes first, only once the requests before it are answered', async () => {
    const handler = new ScriptedHandler();
    const { connect, log } = await started(handler.handle);
    const client = await connect();

    await client.write(Buffer.concat([framed('slow'), framed('bad')]));
    await handler.called(2);
    handler.calls[1]!.answer.reject(new Error('malformed'));
    await turns(4);
    expect(log).toEqual([]);
    handler.reply(0);
    await client.closed;

    expect(client.responses).toEqual(['re:slow']);
    expect(log.map((line) => line.object.reason)).toEqual(['malformed']);
  });
});

describe('KafkaListener.stop', () => {
  it('closes every open connection and takes no new ones', async () => {
    const handler = new ScriptedHandler();
    const { listener, connect, port } = await started(handler.handle);
    const idle = await connect();
    const busy = await connect();
    await busy.write(framed('pending'));
    await handler.called(1);

    await listener.stop();
    await Promise.all([idle.closed, busy.closed]);

    await expect(TestClient.connect(port)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    // A handler finishing after stop writes nowhere and throws nowhere.
    handler.reply(0);
    await turns(2);
    expect(busy.responses).toEqual([]);
  });
});

describe('KafkaListener connection caps and idle timeout', () => {
  it.each<[number, number, ReturnType<typeof connectionCapReached>]>([
    [0, 0, null],
    [9, 2, null],
    [10, 0, 'connections'],
    [5, 3, 'connections-per-address'],
  ])('connectionCapReached(%i open, %i from the address) with caps 10 and 3 → %s', (open, fromAddress, cap) => {
    expect(connectionCapReached(open, fromAddress, { connectionsMax: 10, connectionsPerAddressMax: 3 })).toBe(cap);
  });

  it('closes a connection past the per-address cap at once, logs it once, and takes one again when another closes', async () => {
    const { connect, log } = await started(echo, { connectionsPerAddressMax: 2 });
    const first = await connect();
    const second = await connect();
    const third = await connect();
    await third.closed;
    expect(log.map((line) => [line.message, line.object.cap])).toEqual([['refusing Kafka connections: a connection cap is reached', 'connections-per-address']]);
    await second.write(framed('still served'));
    expect(await second.received(1)).toEqual(['re:still served']);

    first.socket.destroy();
    await first.closed;
    await turns(4);
    const fourth = await connect();
    await fourth.write(framed('after a close'));
    expect(await fourth.received(1)).toEqual(['re:after a close']);
  });

  it('closes a connection silent for the idle time, but not one waiting for an answer', async () => {
    const handler = new ScriptedHandler();
    const { connect, log } = await started(handler.handle, { idleMs: 50 });
    const idle = await connect();
    const waiting = await connect();
    await waiting.write(framed('long fetch'));
    await handler.called(1);
    await idle.closed;
    expect(log.map((line) => line.object.reason)).toEqual(['idle past the idle timeout']);
    handler.reply(0);
    expect(await waiting.received(1)).toEqual(['re:long fetch']);
  });
});
