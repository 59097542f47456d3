/**
 * The Kafka listener of the data nodes on a real local cluster, driven by clients nobody here wrote:
 * kafkajs creates a topic, reads its metadata, produces keyed records with headers and lists offsets;
 * librdkafka (kcat) reads every partition back, produces with each compression codec and reads those back;
 * `kill -9` of a partition leader while kafkajs produces with acks=-1 loses no acknowledged record; a
 * malformed or oversized frame closes only its own connection; the topic is a table of the HTTP API that
 * refuses row appends and scans.
 */
import { execFile } from 'node:child_process';
import { connect } from 'node:net';
import { promisify } from 'node:util';
import { Kafka, logLevel, type Admin, type Producer } from 'kafkajs';
import { LocalCluster } from '@mink/devcluster';
import { SHORT_LEASE_CLUSTER, eventually, http, temporaryDirectory } from './helpers';

jest.setTimeout(240_000);

const run = promisify(execFile);

/** A record as kcat prints it with `-f '%p|%o|%k|%s|%h\n'`. */
interface ConsumedRecord {
  partition: number;
  offset: number;
  key: string;
  value: string;
  headers: string;
}

/** Every record of one partition from the beginning, read by librdkafka (kcat) until the end of the partition. */
async function kcatConsume(broker: string, topic: string, partition: number): Promise<ConsumedRecord[]> {
  const { stdout } = await run('kcat', ['-b', broker, '-C', '-t', topic, '-p', String(partition), '-o', 'beginning', '-e', '-q', '-f', '%p|%o|%k|%s|%h\\n'], { timeout: 60_000 });
  return stdout
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => {
      const [p, o, key, value, headers] = line.split('|');
      return { partition: Number(p), offset: Number(o), key: key!, value: value!, headers: headers! };
    });
}

describe('the Kafka listener on a real local cluster', () => {
  const directory = temporaryDirectory('kafka');
  let cluster: LocalCluster;
  let kafka: Kafka;
  let admin: Admin;
  const producers: Producer[] = [];
  let brokers: string[];

  beforeAll(async () => {
    cluster = await LocalCluster.start({ dataDir: directory.path, ...SHORT_LEASE_CLUSTER });
    brokers = cluster
      .processes()
      .filter((process) => process.role === 'data-node')
      .map((process) => `127.0.0.1:${process.ports.kafka}`);
    kafka = new Kafka({ clientId: 'mink-e2e', brokers: [brokers[0]!], logLevel: logLevel.NOTHING, retry: { retries: 10, initialRetryTime: 200 } });
    admin = kafka.admin();
    await admin.connect();
  });

  afterAll(async () => {
    for (const producer of producers) await producer.disconnect().catch(() => undefined);
    await admin?.disconnect().catch(() => undefined);
    await cluster?.stop();
    directory.remove();
  });

  async function producer(): Promise<Producer> {
    const created = kafka.producer({ allowAutoTopicCreation: false, retry: { retries: 20, initialRetryTime: 100, maxRetryTime: 1_000 } });
    await created.connect();
    producers.push(created);
    return created;
  }

  it('kafkajs creates a topic and produces; librdkafka reads exactly those records back, with offsets, keys and headers', async () => {
    expect(await admin.createTopics({ topics: [{ topic: 'orders', numPartitions: 3, replicationFactor: 3 }], waitForLeaders: true })).toBe(true);
    // A second create of the same name is refused with TOPIC_ALREADY_EXISTS, which kafkajs reports as false.
    expect(await admin.createTopics({ topics: [{ topic: 'orders', numPartitions: 3 }] })).toBe(false);

    const metadata = await admin.fetchTopicMetadata({ topics: ['orders'] });
    const leaders = metadata.topics[0]!.partitions.map((partition) => partition.leader);
    expect(leaders).toHaveLength(3);
    // Buckets spread over the data nodes: every partition is led, by more than one node between them.
    expect(leaders.every((leader) => leader >= 1 && leader <= 3)).toBe(true);
    expect(new Set(leaders).size).toBeGreaterThan(1);

    const sender = await producer();
    const sent = Array.from({ length: 300 }, (_, index) => ({ key: `key-${index % 17}`, value: `value-${index}`, headers: { seq: String(index) } }));
    let middleMs = 0;
    for (let start = 0; start < sent.length; start += 50) {
      if (start === 150) {
        // A time strictly between the records of the first half and those of the second (record timestamps are the producer's clock, in ms).
        await new Promise((resolve) => setTimeout(resolve, 20));
        middleMs = Date.now();
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const acks = await sender.send({ topic: 'orders', acks: -1, messages: sent.slice(start, start + 50) });
      expect(acks.every((ack) => ack.errorCode === 0)).toBe(true);
    }

    const consumed = (await Promise.all([0, 1, 2].map((partition) => kcatConsume(brokers[1]!, 'orders', partition)))).flat();
    expect(consumed).toHaveLength(sent.length);
    expect(consumed.map((record) => record.value).sort()).toEqual(sent.map((message) => message.value).sort());
    for (const record of consumed) {
      const index = Number(record.value.slice('value-'.length));
      expect(record.key).toBe(`key-${index % 17}`);
      expect(record.headers).toBe(`seq=${index}`);
    }
    // Each partition's offsets run from 0 without a gap, and one key always lands in one partition.
    for (const partition of [0, 1, 2]) {
      const offsets = consumed.filter((record) => record.partition === partition).map((record) => record.offset);
      expect(offsets).toEqual(offsets.map((_, index) => index));
    }
    const partitionsOfKey = new Map<string, Set<number>>();
    for (const record of consumed) partitionsOfKey.set(record.key, (partitionsOfKey.get(record.key) ?? new Set()).add(record.partition));
    expect([...partitionsOfKey.values()].every((partitions) => partitions.size === 1)).toBe(true);

    const offsets = await admin.fetchTopicOffsets('orders');
    const counts = [0, 1, 2].map((partition) => consumed.filter((record) => record.partition === partition).length);
    expect(offsets.sort((a, b) => a.partition - b.partition).map((offset) => [offset.low, offset.high])).toEqual(counts.map((count) => ['0', String(count)]));
    // By timestamp: a time before everything answers offset 0 of each partition; a time after everything
    // answers -1, which kafkajs turns into the partition's end.
    const byEarlyTime = await admin.fetchTopicOffsetsByTimestamp('orders', Date.now() - 3_600_000);
    expect(byEarlyTime.sort((a, b) => a.partition - b.partition).map((offset) => offset.offset)).toEqual(counts.map((count) => (count > 0 ? '0' : String(count))));
    // A time between the halves answers, per partition, the offset of its first record of the second half.
    const byMiddleTime = await admin.fetchTopicOffsetsByTimestamp('orders', middleMs);
    const firstHalf = [0, 1, 2].map((partition) => consumed.filter((record) => record.partition === partition && Number(record.value.slice('value-'.length)) < 150).length);
    expect(byMiddleTime.sort((a, b) => a.partition - b.partition).map((offset) => offset.offset)).toEqual(firstHalf.map(String));
    const byLateTime = await admin.fetchTopicOffsetsByTimestamp('orders', Date.now() + 3_600_000);
    expect(byLateTime.sort((a, b) => a.partition - b.partition).map((offset) => offset.offset)).toEqual(counts.map(String));
  });

  it('librdkafka produces with every compression codec and reads each batch back as sent', async () => {
    expect(await admin.createTopics({ topics: [{ topic: 'codecs', numPartitions: 1 }], waitForLeaders: true })).toBe(true);
    const codecs = ['none', 'gzip', 'snappy', 'lz4', 'zstd'];
    for (const codec of codecs) {
      const lines = Array.from({ length: 20 }, (_, index) => `${codec}-${index}`).join('\n');
      await new Promise<void>((resolve, reject) => {
        const child = execFile('kcat', ['-b', brokers[2]!, '-P', '-t', 'codecs', '-p', '0', '-z', codec, '-X', 'acks=all'], { timeout: 60_000 }, (error) => (error ? reject(error) : resolve()));
        child.stdin!.end(`${lines}\n`);
      });
    }
    const consumed = await kcatConsume(brokers[0]!, 'codecs', 0);
    expect(consumed.map((record) => record.value)).toEqual(codecs.flatMap((codec) => Array.from({ length: 20 }, (_, index) => `${codec}-${index}`)));
    expect(consumed.map((record) => record.offset)).toEqual(consumed.map((_, index) => index));
  });

  it('kill -9 of a partition leader while kafkajs produces with acks=-1 loses no acknowledged record', async () => {
    expect(await admin.createTopics({ topics: [{ topic: 'failover', numPartitions: 2 }], waitForLeaders: true })).toBe(true);
    const metadata = await admin.fetchTopicMetadata({ topics: ['failover'] });
    const victim = String(metadata.topics[0]!.partitions.find((partition) => partition.partitionId === 0)!.leader);
    const survivor = brokers.find((_, index) => String(index + 1) !== victim)!;
    const sender = await producer();
    const acknowledged: string[] = [];
    let sending = true;
    let next = 0;
    const load = (async () => {
      while (sending) {
        const batch = Array.from({ length: 20 }, () => ({ value: `m-${next++}` }));
        try {
          await sender.send({ topic: 'failover', acks: -1, messages: batch });
          acknowledged.push(...batch.map((message) => message.value));
        } catch {
          // Not acknowledged: nothing is owed for these.
        }
      }
    })();
    await eventually('some records acknowledged', async () => (acknowledged.length >= 200 ? true : undefined));
    cluster.kill('data-node', victim, 'SIGKILL');
    const atKill = acknowledged.length;
    await eventually('acknowledgements after the kill', async () => (acknowledged.length >= atKill + 400 ? true : undefined), 60_000);
    sending = false;
    await load;

    const consumed = (await Promise.all([0, 1].map((partition) => kcatConsume(survivor, 'failover', partition)))).flat().map((record) => record.value);
    const stored = new Set(consumed);
    // At least once without an idempotent producer: every acknowledged record is stored (a retried batch may be stored twice).
    expect(acknowledged.filter((value) => !stored.has(value))).toEqual([]);
  });

  it('closes a connection that sends a malformed or oversized frame, and keeps serving the others', async () => {
    const [host, port] = brokers[0]!.split(':');
    const closedAfter = (bytes: Buffer) =>
      new Promise<boolean>((resolve) => {
        const socket = connect(Number(port), host!, () => socket.write(bytes));
        const timer = setTimeout(() => {
          socket.destroy();
          resolve(false);
        }, 10_000);
        socket.on('close', () => {
          clearTimeout(timer);
          resolve(true);
        });
        socket.on('error', () => undefined);
      });
    const garbage = Buffer.alloc(4 + 12);
    garbage.writeInt32BE(12, 0);
    garbage.writeInt16BE(3, 4); // Metadata
    garbage.writeInt16BE(1, 6);
    garbage.writeInt32BE(7, 8);
    garbage.writeInt16BE(200, 12); // a client id longer than the frame
    expect(await closedAfter(garbage)).toBe(true);
    const oversized = Buffer.alloc(4);
    oversized.writeInt32BE(0x7fffffff, 0);
    expect(await closedAfter(oversized)).toBe(true);
    const unknownApi = Buffer.alloc(4 + 10);
    unknownApi.writeInt32BE(10, 0);
    unknownApi.writeInt16BE(999, 4);
    unknownApi.writeInt16BE(0, 6);
    unknownApi.writeInt32BE(1, 8);
    unknownApi.writeInt16BE(-1, 12);
    expect(await closedAfter(unknownApi)).toBe(true);
    // The node is still up and answers metadata.
    const topics = await admin.listTopics();
    expect(topics.sort()).toEqual(['codecs', 'failover', 'orders']);
  });

  it('shows a topic as a table of the HTTP API that refuses row appends and scans, and deletes it', async () => {
    const table = await http(cluster.gatewayUrl, 'GET', '/v1/tables/orders');
    expect(table.status).toBe(200);
    expect(table.body.columns).toEqual([
      { name: 'key', type: 'bytes' },
      { name: 'value', type: 'bytes' },
      { name: 'headers', type: 'string' },
    ]);
    const append = await http(cluster.gatewayUrl, 'POST', '/v1/tables/orders/append', { rows: [{ key: 'AA==', value: 'AA==', headers: '' }] });
    expect(append.status).toBe(400);
    expect(append.body.error.message).toMatch(/Kafka topic/);
    const scan = await http(cluster.gatewayUrl, 'GET', '/v1/tables/orders/scan?bucket=0&offset=0');
    expect(scan.status).toBe(400);

    await admin.deleteTopics({ topics: ['codecs'] });
    expect((await admin.listTopics()).sort()).toEqual(['failover', 'orders']);
    expect((await http(cluster.gatewayUrl, 'GET', '/v1/tables/codecs')).status).toBe(404);
  });
});
