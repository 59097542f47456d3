import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Controller, Inject, Module, type DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, MessagePattern, Payload } from '@nestjs/microservices';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { connect, type NatsConnection } from 'nats';
import { startNatsServer, type NatsServerHandle } from '@mink/devcluster';
import { MinkError, NotLeaderError, UnavailableError, type Redirect } from '@mink/protocol';
import { eventually } from '@mink/testing';
import { WithBinary, requestJson } from '@mink/transport';
import { NATS_REQUEST_TRANSPORT, NatsRequestContext, NatsRequestTransport, connectNatsRequests, type NatsRequestRoute } from './nats-request-transport';

/**
 * NatsRequestTransport under a real Nest application and a real nats-server, called with the client side of
 * @mink/transport (`requestJson`): the wire format is serveJson's, typed errors keep their code and details
 * through Nest's exception handling, unhandled routes find no responder, and queue groups share requests.
 */
const REDIRECT: Redirect = { table: 'events', bucket: 3, node: '2', to: 'node-2', leaderEpoch: 7, http: '127.0.0.1:9000' };
const ROUTES: Record<string, NatsRequestRoute> = {
  echo: { subject: 'test.echo' },
  binary: { subject: 'test.binary' },
  notLeader: { subject: 'test.notLeader' },
  unavailable: { subject: 'test.unavailable' },
  broken: { subject: 'test.broken' },
  shared: { subject: 'test.shared', queue: 'test-workers' },
  // Routed, but no controller handles it: never subscribed.
  unserved: { subject: 'test.unserved' },
};
const REPLICA_ID = Symbol('ReplicaId');

@Controller()
class TestRequestsController {
  constructor(@Inject(REPLICA_ID) private readonly replicaId: string) {}

  @MessagePattern('echo')
  echo(@Payload() body: unknown): unknown {
    return body;
  }

  @MessagePattern('binary')
  async binary(@Payload() body: { batch?: Uint8Array }): Promise<WithBinary> {
    const { batch, ...rest } = body;
    return new WithBinary({ echoed: rest, received: batch ? Array.from(batch) : null }, [Uint8Array.of(0, 255), Uint8Array.of(7)]);
  }

  @MessagePattern('notLeader')
  notLeader(): never {
    throw new NotLeaderError('bucket 3 of events is led by node 2', REDIRECT);
  }

  @MessagePattern('unavailable')
  async unavailable(): Promise<never> {
    throw new UnavailableError('registering a new incarnation', 750);
  }

  @MessagePattern('broken')
  broken(): never {
    throw new TypeError('a bug, not an outcome');
  }

  @MessagePattern('shared')
  shared(@Ctx() context: NatsRequestContext): { replica: string; subject: string } {
    return { replica: this.replicaId, subject: context.getSubject() };
  }
}

@Module({})
class TestModule {
  static register(connection: NatsConnection, replicaId: string, routes: Record<string, NatsRequestRoute>, onError: (error: unknown) => void): DynamicModule {
    return {
      module: TestModule,
      controllers: [TestRequestsController],
      providers: [
        { provide: REPLICA_ID, useValue: replicaId },
        { provide: NATS_REQUEST_TRANSPORT, useFactory: () => new NatsRequestTransport(connection, routes, onError) },
      ],
    };
  }
}

/** A Nest application serving TestRequestsController over its own connection, as a mink service would. */
async function startReplica(url: string, replicaId: string, routes: Record<string, NatsRequestRoute> = ROUTES) {
  const connection = await connect({ servers: url });
  const errors: unknown[] = [];
  const app = await NestFactory.create<NestFastifyApplication>(TestModule.register(connection, replicaId, routes, (error) => errors.push(error)), new FastifyAdapter(), {
    logger: false,
    abortOnError: false,
  });
  connectNatsRequests(app);
  await app.init();
  return {
    app,
    connection,
    errors,
    start: () => app.startAllMicroservices(),
    stop: async () => {
      await app.close();
      await connection.close();
    },
  };
}

describe('NatsRequestTransport on a real nats-server', () => {
  let dataDir: string;
  let server: NatsServerHandle;
  let caller: NatsConnection;
  let first: Awaited<ReturnType<typeof startReplica>>;
  let second: Awaited<ReturnType<typeof startReplica>>;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'mink-nats-transport-'));
    server = await startNatsServer({ dataDir });
    caller = await connect({ servers: server.url });
    first = await startReplica(server.url, 'first');
    second = await startReplica(server.url, 'second');
    await first.start();
    await second.start();
  });

  afterAll(async () => {
    await first?.stop();
    await second?.stop();
    await caller?.close();
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("answers with the handler's value, as serveJson does", async () => {
    // Proves the reply is the wire format of serveJson ({result}), which requestJson unwraps.
    await expect(requestJson(caller, 'test.echo', { op: 'status', n: 1 })).resolves.toEqual({ op: 'status', n: 1 });
    const raw = await caller.request('test.echo', new TextEncoder().encode('{"op":"x"}'));
    expect(JSON.parse(new TextDecoder().decode(raw.data))).toEqual({ result: { op: 'x' } });
  });

  it('carries binary bytes both ways, next to the JSON', async () => {
    // Proves the binary framing of requests (the body's batch) and of WithBinary replies goes through Nest unchanged.
    const answer = await requestJson<{ echoed: unknown; received: number[]; batch: Uint8Array }>(caller, 'test.binary', { op: 'append' }, undefined, Uint8Array.of(9, 0, 255));
    expect(answer.echoed).toEqual({ op: 'append' });
    expect(answer.received).toEqual([9, 0, 255]);
    expect(Array.from(answer.batch)).toEqual([0, 255, 7]);
  });

  it('answers a thrown MinkError as its typed error body, with its redirect or retry delay', async () => {
    // Proves Nest's RPC exception filter does not turn typed errors into 'Internal server error'.
    const notLeader = requestJson(caller, 'test.notLeader', {});
    await expect(notLeader).rejects.toBeInstanceOf(MinkError);
    await expect(notLeader).rejects.toMatchObject({ code: 'NotLeader', message: 'bucket 3 of events is led by node 2', details: { redirect: REDIRECT } });
    await expect(requestJson(caller, 'test.unavailable', {})).rejects.toMatchObject({ code: 'Unavailable', details: { retryAfterMs: 750 } });
  });

  it('answers any other error as Internal and reports it', async () => {
    // Proves a bug in a handler is the caller's Internal error and the service's log line, never a crash.
    await expect(requestJson(caller, 'test.broken', {})).rejects.toMatchObject({ code: 'Internal' });
    // Both replicas subscribe the subject outside any queue group: each answers, the caller keeps the first reply.
    await eventually('both replicas report the TypeError', () => [...first.errors, ...second.errors].filter((error) => error instanceof TypeError).length === 2, { timeoutMs: 5_000, intervalMs: 10 });
  });

  it('answers a request that is not JSON as InvalidArgument', async () => {
    // Proves malformed bodies are refused by the shared answering code, before any handler runs.
    const reply = await caller.request('test.echo', new TextEncoder().encode('{not json'));
    expect(JSON.parse(new TextDecoder().decode(reply.data))).toMatchObject({ error: { code: 'InvalidArgument' } });
  });

  it('leaves a routed pattern without a handler unsubscribed: its callers get Unavailable at once', async () => {
    // Proves the "no responders" answer of today: no wait for the request timeout.
    const startedMs = Date.now();
    await expect(requestJson(caller, 'test.unserved', {}, 10_000)).rejects.toBeInstanceOf(UnavailableError);
    expect(Date.now() - startedMs).toBeLessThan(2_000);
  });

  it('spreads the requests of a queue-group route over the replicas', async () => {
    // Proves the queue group: every request is answered once, and both replicas take some.
    const answers = await Promise.all(Array.from({ length: 60 }, () => requestJson<{ replica: string; subject: string }>(caller, 'test.shared', {})));
    const replicas = new Set(answers.map((answer) => answer.replica));
    expect(replicas).toEqual(new Set(['first', 'second']));
    expect(answers.every((answer) => answer.subject === 'test.shared')).toBe(true);
  });

  it('refuses to start when a handled pattern has no route', async () => {
    // Proves a wiring mistake fails the start instead of leaving an endpoint silently unserved.
    const { unavailable: _omitted, ...routes } = ROUTES;
    const replica = await startReplica(server.url, 'misrouted', routes);
    try {
      await expect(replica.start()).rejects.toThrow("no NATS subject for the message pattern 'unavailable'");
    } finally {
      await replica.stop();
    }
  });

  it('starts listening only once the server has its subscriptions (a flush answered), so no request right after start finds no responder', async () => {
    // Proves the cause of a flaky start is gone: subscriptions travel with the connection's next write, and a
    // request from another connection that overtook them found no responder. Start now waits for a flush.
    const replica = await startReplica(server.url, 'flushing', { echo: { subject: 'test.flushing' }, ...withoutEcho(ROUTES, 'flushing') });
    const flush = replica.connection.flush.bind(replica.connection);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const flushes: string[] = [];
    replica.connection.flush = async () => {
      flushes.push('asked');
      await gate;
      return flush();
    };
    let started = false;
    const starting = replica.start().then(() => (started = true));
    try {
      await eventually('the transport asked for a flush', () => flushes.length > 0, { timeoutMs: 5_000, intervalMs: 5 });
      // Whatever else start has to do settles within a turn of the event loop; the flush is still unanswered.
      await new Promise((resolve) => setImmediate(resolve));
      expect(started).toBe(false);
      release();
      await starting;
      await expect(requestJson(caller, 'test.flushing', { n: 2 })).resolves.toEqual({ n: 2 });
    } finally {
      release();
      await replica.stop();
    }
  });

  it('unsubscribes when the application closes, and leaves the connection open', async () => {
    // Proves a closed service stops answering (no responders) while its ClusterMember still owns the connection.
    const replica = await startReplica(server.url, 'closing', { echo: { subject: 'test.closing' }, ...withoutEcho(ROUTES, 'closing') });
    await replica.start();
    await expect(requestJson(caller, 'test.closing', { n: 1 })).resolves.toEqual({ n: 1 });
    await replica.app.close();
    expect(replica.connection.isClosed()).toBe(false);
    await expect(requestJson(caller, 'test.closing', {}, 10_000)).rejects.toBeInstanceOf(UnavailableError);
    await replica.connection.close();
  });
});

function withoutEcho(routes: Record<string, NatsRequestRoute>, suffix: string): Record<string, NatsRequestRoute> {
  const { echo: _echo, ...rest } = routes;
  // Subjects of its own, so that closing this replica leaves the shared ones served by the others.
  return Object.fromEntries(Object.entries(rest).map(([pattern, route]) => [pattern, { ...route, subject: `${route.subject}.${suffix}` }]));
}
