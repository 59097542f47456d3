import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AckPolicy, DeliverPolicy, connect, type NatsConnection } from 'nats';
import { startNatsServer, type NatsServerHandle } from '@mink/devcluster';
import { pullAvailable, streamSeqOfDelivery } from './pull-available';

describe('streamSeqOfDelivery', () => {
  it.each<[string, string | undefined, number | null]>([
    ['the old nine-token form', '$JS.ACK.MINK_META.tail_1.1.42.7.1700000000000000000.3', 42],
    ['the form with a domain, an account hash and a token', '$JS.ACK._.ACCOUNTHASH.MINK_META.tail_1.1.43.8.1700000000000000000.0.RANDOM', 43],
    ['no reply subject', undefined, null],
    ['an ordinary inbox', '_INBOX.abc.def', null],
    ['a sequence that is not a number', '$JS.ACK.MINK_META.tail_1.1.x.7.1700000000000000000.3', null],
    ['sequence 0', '$JS.ACK.MINK_META.tail_1.1.0.7.1700000000000000000.3', null],
    ['too few tokens', '$JS.ACK.MINK_META.tail_1.1.42', null],
  ])('reads %s', (_case, subject, expected) => {
    // Proves the tail takes an entry's sequence from where JetStream puts it, and refuses anything else.
    expect(streamSeqOfDelivery(subject)).toBe(expected);
  });
});

describe('pullAvailable on a real nats-server', () => {
  let dataDir: string;
  let server: NatsServerHandle;
  let connection: NatsConnection;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'mink-pull-'));
    server = await startNatsServer({ dataDir });
    connection = await connect({ servers: server.url });
  });

  afterAll(async () => {
    await connection?.close();
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function drain(pull: ReturnType<typeof pullAvailable>): Promise<number[]> {
    const seqs: number[] = [];
    for await (const entry of pull.entries) seqs.push(entry.seq);
    return seqs;
  }

  it('delivers every held entry exactly once across pulls: a full batch, the rest, then nothing', async () => {
    // Proves no entry is lost between pulls (nats.js's fetch could stop listening before the server had sent the whole batch).
    const manager = await connection.jetstreamManager();
    await manager.streams.add({ name: 'PULL', subjects: ['pull'] });
    await manager.consumers.add('PULL', { name: 'reader', ack_policy: AckPolicy.None, deliver_policy: DeliverPolicy.All, mem_storage: true });
    const jetStream = connection.jetstream();
    for (let index = 0; index < 300; index++) await jetStream.publish('pull', new TextEncoder().encode(String(index)));
    expect(await drain(pullAvailable(connection, 'PULL', 'reader', 256))).toEqual(Array.from({ length: 256 }, (_unused, index) => index + 1));
    expect(await drain(pullAvailable(connection, 'PULL', 'reader', 256))).toEqual(Array.from({ length: 44 }, (_unused, index) => index + 257));
    expect(await drain(pullAvailable(connection, 'PULL', 'reader', 256))).toEqual([]);
    await jetStream.publish('pull', new TextEncoder().encode('late'));
    // The server tells its consumers of a stored message asynchronously (nats-server signals them from a queue
    // after the publish is acknowledged), so a pull right after the publish may find nothing yet, as the
    // metadata tail's next pull would: pull until the entry comes, then once more. It comes exactly once.
    const late: string[] = [];
    for (let pulls = 0; late.length === 0 && pulls < 100; pulls++) {
      for await (const entry of pullAvailable(connection, 'PULL', 'reader', 256).entries) late.push(`${entry.seq}:${new TextDecoder().decode(entry.data)}`);
      if (late.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(late).toEqual(['301:late']);
    expect(await drain(pullAvailable(connection, 'PULL', 'reader', 256))).toEqual([]);
  });

  it('waits on the server for the first entry when asked to, then ends with what is held', async () => {
    // Proves an idle paced tail's pull is answered as an entry is stored, not at the end of its wait, and
    // that a wait nothing arrives in ends empty (so the tail asks again instead of hanging).
    const manager = await connection.jetstreamManager();
    await manager.streams.add({ name: 'WAIT', subjects: ['wait'] });
    await manager.consumers.add('WAIT', { name: 'reader', ack_policy: AckPolicy.None, deliver_policy: DeliverPolicy.All, mem_storage: true });
    expect(await drain(pullAvailable(connection, 'WAIT', 'reader', 256, 300))).toEqual([]);
    const startedAtMs = performance.now();
    const pull = drain(pullAvailable(connection, 'WAIT', 'reader', 256, 20_000));
    await new Promise((resolve) => setTimeout(resolve, 200));
    await connection.jetstream().publish('wait', new TextEncoder().encode('first'));
    expect(await pull).toEqual([1]);
    // Answered by the entry, far inside the 20 s wait.
    expect(performance.now() - startedAtMs).toBeLessThan(10_000);
    expect(await drain(pullAvailable(connection, 'WAIT', 'reader', 256))).toEqual([]);
  });

  it('ends its iteration when stopped, as for a pull of a consumer the server no longer has', async () => {
    // Proves a pull that is never answered can be given up on.
    const pull = pullAvailable(connection, 'PULL', 'no_such_consumer', 256);
    setTimeout(() => pull.stop(), 100);
    expect(await drain(pull)).toEqual([]);
  });
});
