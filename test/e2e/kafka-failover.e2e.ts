/**
 * Acknowledged Kafka records survive the loss of a partition leader, with clients nobody here wrote
 * (issue 40). The scenario of the issue: an idempotent producer (acks=-1) sends 10 000 keyed records
 * (key k<i>, value <i>) to a topic of 6 partitions on 3 data nodes while the leader of two of them dies:
 * by `kill -9` after 5 000 records, by killing itself at a chosen point of a WAL object's life
 * (`MINK_TEST_CRASH_AT`: before its upload, uploaded but not committed, committed but not acknowledged), or
 * by `SIGSTOP` past the lease and `SIGCONT` after the failover. Each run then reads every partition back
 * with librdkafka and checks that every record the client was told is stored is stored exactly once, at the
 * offset it was acknowledged with, and that no record is stored twice.
 *
 * kafkajs 2.2.4 retries a send only towards brokers that have not answered it (src/producer/sendMessages.js
 * keys answers by broker): when a send spans partitions of several leaders and one dies, its partitions move
 * to nodes that already answered for their own, so kafkajs never sends them again, yet the send resolves
 * without them (with Apache Kafka as with mink). Its runs therefore send each partition's records on their
 * own (one `send` per partition, as docs/kafka.md advises kafkajs users), and one run sends as the issue did
 * and checks that the only records missing are those of partitions kafkajs left out of a send's result.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Kafka, Partitioners, logLevel, type Message, type Producer } from 'kafkajs';
import { LocalCluster } from '@mink/devcluster';
import { SHORT_LEASE_CLUSTER, eventually, kafkaBrokersOf, temporaryDirectory } from './helpers';
import { kcatConsume } from './kafka/kcat';

jest.setTimeout(300_000);

const PARTITIONS = 6;
const RECORDS = 10_000;
const RECORDS_PER_SEND = 100;
/** The data node that kills itself at a crash point: the tests re-arm it with a restart before each such run. */
const CRASHING_NODE = '1';

/** A record the client was told is stored, where it was told it is. */
interface Acknowledged {
  value: string;
  partition: number;
  offset: number;
}

/** How a run's leader dies: `kill -9` after half the records, at a WAL crash point, or paused past the lease. */
type LeaderLoss = { kind: 'kill' } | { kind: 'crash'; at: string } | { kind: 'pause' };

/** The partition kafkajs's default partitioner (murmur2 of the key, as Java's) gives each key on this topic. */
function partitionOfKey(topic: string): (key: string) => number {
  const partitioner = Partitioners.DefaultPartitioner();
  const partitionMetadata = Array.from({ length: PARTITIONS }, (_, partitionId) => ({ partitionId, leader: 0, partitionErrorCode: 0, replicas: [0], isr: [0] }));
  return (key) => partitioner({ topic, partitionMetadata, message: { key, value: null } });
}

describe('Kafka produce through a leader failover', () => {
  const directory = temporaryDirectory('kafka-failover');
  let cluster: LocalCluster;
  let brokers: string[];
  const producers: Producer[] = [];

  beforeAll(async () => {
    cluster = await LocalCluster.start({ dataDir: directory.path, ...SHORT_LEASE_CLUSTER });
    brokers = kafkaBrokersOf(cluster);
  });

  afterAll(async () => {
    for (const producer of producers) await producer.disconnect().catch(() => undefined);
    await cluster?.stop();
    if (process.env.MINK_E2E_KEEP) console.log('kept', directory.path);
    else directory.remove();
  });

  function kafka(): Kafka {
    // Every data node is a seed, as a Kafka user lists several; retries outlast a failover (lease 3 s + a tick).
    return new Kafka({ clientId: 'mink-failover', brokers, logLevel: logLevel.NOTHING, retry: { retries: 10, initialRetryTime: 200, maxRetryTime: 2_000 } });
  }

  /**
   * A topic of 6 partitions and the data node whose partitions the run loses: the leader of partition 0, or
   * the crashing node armed with `crashAt` (restarted before the topic exists, so it leads some of its partitions).
   */
  async function topicAndVictim(topic: string, loss: LeaderLoss): Promise<string> {
    if (loss.kind === 'crash') await cluster.restart('data-node', CRASHING_NODE, { env: { MINK_TEST_CRASH_AT: loss.at } });
    const admin = kafka().admin();
    await admin.connect();
    try {
      expect(await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS }], waitForLeaders: true })).toBe(true);
      const metadata = await admin.fetchTopicMetadata({ topics: [topic] });
      const leaders = metadata.topics[0]!.partitions.map((partition) => String(partition.leader));
      const victim = loss.kind === 'crash' ? CRASHING_NODE : leaders[0]!;
      // The victim leads several partitions at once: with 6 over 3 nodes, two.
      expect(leaders.filter((leader) => leader === victim).length).toBeGreaterThanOrEqual(1);
      return victim;
    } finally {
      await admin.disconnect();
    }
  }

  /** Loses the victim as the run says, when `acknowledged` records are in (a crash point needs no help). */
  function loseLeader(loss: LeaderLoss, victim: string): () => Promise<void> {
    let done = false;
    return async () => {
      if (done) return;
      done = true;
      if (loss.kind === 'kill') cluster.kill('data-node', victim, 'SIGKILL');
      if (loss.kind === 'pause') {
        cluster.pause('data-node', victim);
        // Past the lease: the coordinator re-leads its partitions and their new leaders fence its streams.
        setTimeout(() => cluster.resume('data-node', victim), 3 * SHORT_LEASE_CLUSTER.leaseTtlMs);
      }
    };
  }

  /** Brings the victim back as a plain data node (no crash point), whatever became of it. */
  async function restore(victim: string): Promise<void> {
    cluster.resume('data-node', victim);
    await cluster.restart('data-node', victim, { env: { MINK_TEST_CRASH_AT: undefined } });
  }

  /** Every stored record of the topic, read by librdkafka from a live node. */
  async function storedRecords(topic: string, victim: string): Promise<Acknowledged[]> {
    const reader = brokers.find((_, index) => String(index + 1) !== victim)!;
    const partitions = await Promise.all(Array.from({ length: PARTITIONS }, (_, partition) => kcatConsume(reader, topic, partition)));
    return partitions.flat().map((record) => ({ value: record.value, partition: record.partition, offset: record.offset }));
  }

  /** The records acknowledged but not stored where they were acknowledged, and the records stored more than once. */
  function violations(acknowledged: Acknowledged[], stored: Acknowledged[]) {
    const where = new Map<string, Acknowledged[]>();
    for (const record of stored) where.set(record.value, [...(where.get(record.value) ?? []), record]);
    return {
      notWhereAcknowledged: acknowledged.filter((record) => {
        const found = where.get(record.value);
        return found?.length !== 1 || found[0]!.partition !== record.partition || found[0]!.offset !== record.offset;
      }),
      storedTwice: [...where.values()].filter((records) => records.length > 1),
    };
  }

  /**
   * kafkajs as a user writes it, idempotent with one request in flight per broker: sends of 100 records, each
   * split by partition (`splitByPartition`, one send per partition, all at once) or as one send. Returns the
   * records acknowledged, at the offsets the send results give, and those of partitions a result left out.
   */
  async function kafkajsProduce(topic: string, splitByPartition: boolean, onProgress: (produced: number) => Promise<void>) {
    const producer = kafka().producer({ idempotent: true, maxInFlightRequests: 1 });
    producers.push(producer);
    await producer.connect();
    const partitionOf = partitionOfKey(topic);
    const acknowledged: Acknowledged[] = [];
    const leftOut: string[] = [];
    const failedSends: string[] = [];
    for (let first = 0; first < RECORDS; first += RECORDS_PER_SEND) {
      await onProgress(first);
      const byPartition = new Map<number, Message[]>();
      for (let index = first; index < first + RECORDS_PER_SEND; index++) {
        const message = { key: `k${index}`, value: String(index) };
        const partition = partitionOf(message.key);
        byPartition.set(partition, [...(byPartition.get(partition) ?? []), message]);
      }
      const sends = splitByPartition
        ? [...byPartition].map(([partition, messages]) => ({ topic, acks: -1, messages: messages.map((message) => ({ ...message, partition })) }))
        : [{ topic, acks: -1, messages: [...byPartition.values()].flat() }];
      await Promise.all(
        sends.map(async (send) => {
          try {
            const results = await producer.send(send);
            const answered = new Set<number>();
            for (const result of results) {
              answered.add(result.partition);
              byPartition.get(result.partition)!.forEach((message, index) => acknowledged.push({ value: String(message.value), partition: result.partition, offset: Number(result.baseOffset) + index }));
            }
            for (const message of send.messages) if (!answered.has(partitionOf(String(message.key)))) leftOut.push(String(message.value));
          } catch (error) {
            failedSends.push(String(error));
          }
        }),
      );
    }
    await producer.disconnect();
    return { acknowledged, leftOut, failedSends };
  }

  async function kafkajsRun(topic: string, loss: LeaderLoss, splitByPartition: boolean) {
    const victim = await topicAndVictim(topic, loss);
    const lose = loseLeader(loss, victim);
    const outcome = await kafkajsProduce(topic, splitByPartition, async (produced) => {
      if (produced >= RECORDS / 2 && loss.kind !== 'crash') await lose();
    });
    if (loss.kind === 'crash') expect((await cluster.waitForExit('data-node', victim)).signal).toBe('SIGKILL');
    const stored = await storedRecords(topic, victim);
    await restore(victim);
    return { ...outcome, stored, ...violations(outcome.acknowledged, stored) };
  }

  it.each<[string, LeaderLoss]>([
    ['kill -9 after half the records', { kind: 'kill' }],
    ['a crash before a WAL upload', { kind: 'crash', at: 'wal-uploading:20' }],
    ['a crash after the upload, before its commit', { kind: 'crash', at: 'wal-uploaded:20' }],
    ['a crash after the commit, before the answer', { kind: 'crash', at: 'wal-committed:20' }],
    ['SIGSTOP past the lease, then SIGCONT', { kind: 'pause' }],
  ])('kafkajs, one send per partition: %s loses no acknowledged record and stores none twice', async (_case, loss) => {
    const topic = `kafkajs-${loss.kind}-${loss.kind === 'crash' ? loss.at.split(':')[0] : 'timed'}`;
    const run = await kafkajsRun(topic, loss, true);
    expect(run.failedSends).toEqual([]);
    expect(run.leftOut).toEqual([]);
    expect(run.acknowledged).toHaveLength(RECORDS);
    expect(run.notWhereAcknowledged).toEqual([]);
    expect(run.storedTwice).toEqual([]);
    // Nothing else is stored either: every send was answered, so every stored record is an acknowledged one.
    expect(run.stored).toHaveLength(RECORDS);
  });

  it('kafkajs, sends spanning partitions (the issue as written): mink stores every record it answered; the only missing records are those kafkajs never sent again', async () => {
    const run = await kafkajsRun('kafkajs-spanning', { kind: 'kill' }, false);
    expect(run.failedSends).toEqual([]);
    expect(run.notWhereAcknowledged).toEqual([]);
    expect(run.storedTwice).toEqual([]);
    // Every record is stored or was left out of its send's result by kafkajs (its sends resolve without the
    // partitions that moved to a broker that had answered): none the client was told of is missing.
    const stored = new Set(run.stored.map((record) => record.value));
    const missing = Array.from({ length: RECORDS }, (_, index) => String(index)).filter((value) => !stored.has(value));
    expect(missing.filter((value) => !run.leftOut.includes(value))).toEqual([]);
    expect(run.acknowledged.length + run.leftOut.length).toBe(RECORDS);
    // kafkajs 2.2.4 did leave the moved partitions out (should this fail, kafkajs changed: revisit the note in docs/kafka.md).
    expect(run.leftOut.length).toBeGreaterThan(0);
  });

  /** librdkafka's idempotent producer through the loss: its delivery reports, and what is stored. */
  async function librdkafkaRun(topic: string, loss: LeaderLoss) {
    const victim = await topicAndVictim(topic, loss);
    const lose = loseLeader(loss, victim);
    // Debian's binding lives with Debian's python (/usr/bin/python3), not with one a version manager put first on PATH.
    const python = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
    const child = spawn(python, [join(__dirname, 'kafka', 'librdkafka-produce.py'), brokers.join(','), topic, String(RECORDS), '1000'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => void (stderr = (stderr + chunk.toString()).slice(-4_000)));
    let outcome: { delivered: [string, number, number][]; errors: string[]; unflushed: number } | undefined;
    for await (const line of createInterface({ input: child.stdout })) {
      const parsed = JSON.parse(line) as { acknowledged?: number } & Partial<NonNullable<typeof outcome>>;
      if (parsed.acknowledged !== undefined && parsed.acknowledged >= RECORDS / 2 && loss.kind !== 'crash') await lose();
      if (parsed.delivered) outcome = parsed as NonNullable<typeof outcome>;
    }
    if (!outcome) throw new Error(`the librdkafka producer printed no outcome: ${stderr}`);
    if (loss.kind === 'crash') expect((await cluster.waitForExit('data-node', victim)).signal).toBe('SIGKILL');
    const acknowledged = outcome.delivered.map(([value, partition, offset]) => ({ value, partition, offset }));
    const stored = await storedRecords(topic, victim);
    await restore(victim);
    return { outcome, acknowledged, stored, ...violations(acknowledged, stored) };
  }

  it.each<[string, LeaderLoss]>([
    ['kill -9 with records in flight', { kind: 'kill' }],
    ['a crash after the commit, before the answer', { kind: 'crash', at: 'wal-committed:20' }],
    ['SIGSTOP past the lease, then SIGCONT', { kind: 'pause' }],
  ])('librdkafka (enable.idempotence): %s loses no acknowledged record and stores none twice', async (_case, loss) => {
    const topic = `librdkafka-${loss.kind}`;
    const run = await librdkafkaRun(topic, loss);
    expect(run.outcome.errors).toEqual([]);
    expect(run.outcome.unflushed).toBe(0);
    expect(run.acknowledged).toHaveLength(RECORDS);
    expect(run.notWhereAcknowledged).toEqual([]);
    expect(run.storedTwice).toEqual([]);
    expect(run.stored).toHaveLength(RECORDS);
  });

  it('kafkajs, a send that failed although its batch was committed: the next batch under the same sequences is refused, not answered as stored', async () => {
    // kafkajs takes back a failed request's sequences whether or not its batch was committed (it has no
    // KIP-360 epoch bump), then numbers its next records with them. Kafka answers such a batch as a
    // duplicate of the committed one, so its records are acknowledged and stored nowhere; mink tells the two
    // apart by what they hold and refuses it (OUT_OF_ORDER_SEQUENCE_NUMBER), so the send fails instead.
    const topic = 'reused-sequences';
    await topicAndVictim(topic, { kind: 'crash', at: 'wal-committed:3' });
    const admin = kafka().admin();
    await admin.connect();
    const leaderOf = async (partition: number) => String((await admin.fetchTopicMetadata({ topics: [topic] })).topics[0]!.partitions.find((each) => each.partitionId === partition)!.leader);
    const partition = (await admin.fetchTopicMetadata({ topics: [topic] })).topics[0]!.partitions.find((each) => String(each.leader) === CRASHING_NODE)!.partitionId;
    // One quick retry (an idempotent kafkajs producer needs some): a send through the dead leader fails within
    // the lease, as one whose retries ran out does with the default lease of 30 s.
    const producer = new Kafka({ clientId: 'mink-reused', brokers, logLevel: logLevel.NOTHING, retry: { retries: 1, initialRetryTime: 100, maxRetryTime: 200 } }).producer({ idempotent: true, maxInFlightRequests: 1 });
    producers.push(producer);
    await producer.connect();
    const batch = (name: string) => ({ topic, acks: -1, messages: Array.from({ length: 10 }, (_, index) => ({ key: `${name}${index}`, value: `${name}${index}`, partition })) });
    try {
      expect((await producer.send(batch('a')))[0]!.baseOffset).toBe('0');
      expect((await producer.send(batch('b')))[0]!.baseOffset).toBe('10');
      // The third WAL object of the armed node holds batch c: committed, then the node dies before answering.
      await expect(producer.send(batch('c'))).rejects.toThrow();
      expect((await cluster.waitForExit('data-node', CRASHING_NODE)).signal).toBe('SIGKILL');
      await eventually('the partition led by another node', async () => ((await leaderOf(partition).catch(() => CRASHING_NODE)) !== CRASHING_NODE ? true : undefined), 60_000);
      // Batch d takes c's sequences back; sends that fail on the way (the dead node's address) leave them as they are.
      const refusal = await eventually('batch d answered by the new leader', async () => {
        try {
          return { sent: await producer.send(batch('d')) };
        } catch (error) {
          const type = (error as { type?: string }).type;
          return type === 'OUT_OF_ORDER_SEQUENCE_NUMBER' ? { type } : undefined;
        }
      }, 60_000);
      expect(refusal).toEqual({ type: 'OUT_OF_ORDER_SEQUENCE_NUMBER' });
      const stored = (await kcatConsume(brokers.find((_, index) => String(index + 1) !== CRASHING_NODE)!, topic, partition)).map((record) => `${record.offset}:${record.value}`);
      expect(stored).toEqual(['a', 'b', 'c'].flatMap((name, batchIndex) => Array.from({ length: 10 }, (_, index) => `${batchIndex * 10 + index}:${name}${index}`)));
    } finally {
      await admin.disconnect();
      await restore(CRASHING_NODE);
    }
  });

  it('a victim armed with a crash point kills itself there, and the failover that follows is the usual one', async () => {
    // Proves the crash point is a real kill -9 of the process (so the runs above test what they say), and
    // that the node restarted without it serves again.
    await cluster.restart('data-node', CRASHING_NODE, { env: { MINK_TEST_CRASH_AT: 'wal-uploaded:1' } });
    const admin = kafka().admin();
    await admin.connect();
    try {
      await admin.createTopics({ topics: [{ topic: 'armed', numPartitions: PARTITIONS }], waitForLeaders: true });
      const producer = kafka().producer({ idempotent: true, maxInFlightRequests: 1 });
      producers.push(producer);
      await producer.connect();
      const partitions = (await admin.fetchTopicMetadata({ topics: ['armed'] })).topics[0]!.partitions;
      const mine = partitions.find((partition) => String(partition.leader) === CRASHING_NODE)!.partitionId;
      const sent = producer.send({ topic: 'armed', acks: -1, messages: [{ key: 'a', value: 'a', partition: mine }] });
      expect((await cluster.waitForExit('data-node', CRASHING_NODE)).signal).toBe('SIGKILL');
      // The record was uploaded, never committed: the retry on the new leader stores it once.
      const [result] = await sent;
      expect(result!.baseOffset).toBe('0');
      await restore(CRASHING_NODE);
      await eventually('the restarted node serving Kafka', async () => ((await admin.fetchTopicMetadata({ topics: ['armed'] })).topics[0]!.partitions.length === PARTITIONS ? true : undefined));
    } finally {
      await admin.disconnect();
    }
  });
});
