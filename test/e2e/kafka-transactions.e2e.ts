/**
 * Kafka transactions on a real local cluster (issue 40 item 2), with clients nobody here wrote: kafkajs's
 * transactional producer commits and aborts, a read_committed consumer sees every committed record once and
 * no aborted one while a read_uncommitted one sees both, consume-transform-produce commits a group's
 * offsets with the transaction (and not when it aborts), a second producer of the same transactional id
 * fences the first and aborts its open transaction, a transaction open past its timeout is aborted, and
 * a transaction survives `kill -9` of a partition leader and of its transaction coordinator. librdkafka's
 * transactional producer (python3-confluent-kafka) commits and aborts and its read_committed consumer reads
 * the committed records only.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { Kafka, logLevel, type Consumer, type Producer } from 'kafkajs';
import { LocalCluster } from '@mink/devcluster';
import { SHORT_LEASE_CLUSTER, eventually, http, kafkaBrokersOf, temporaryDirectory } from './helpers';
import { kcatConsume } from './kafka/kcat';
import { rawKafkaRequest } from './kafka/raw-kafka';

jest.setTimeout(240_000);

const run = promisify(execFile);

describe('Kafka transactions on a real local cluster', () => {
  const directory = temporaryDirectory('kafka-transactions');
  let cluster: LocalCluster;
  let brokers: string[];
  let kafka: Kafka;
  const producers: Producer[] = [];
  const consumers: Consumer[] = [];

  beforeAll(async () => {
    cluster = await LocalCluster.start({ dataDir: directory.path, ...SHORT_LEASE_CLUSTER });
    brokers = kafkaBrokersOf(cluster);
    kafka = new Kafka({ clientId: 'mink-transactions', brokers, logLevel: logLevel.NOTHING, retry: { retries: 12, initialRetryTime: 200, maxRetryTime: 2_000 } });
  });

  afterAll(async () => {
    for (const consumer of consumers) await consumer.disconnect().catch(() => undefined);
    for (const producer of producers) await producer.disconnect().catch(() => undefined);
    await cluster?.stop();
    if (process.env.MINK_E2E_KEEP) console.log('kept', directory.path);
    else directory.remove();
  });

  async function createTopic(topic: string, numPartitions: number): Promise<void> {
    const admin = kafka.admin();
    await admin.connect();
    try {
      expect(await admin.createTopics({ topics: [{ topic, numPartitions }], waitForLeaders: true })).toBe(true);
    } finally {
      await admin.disconnect();
    }
  }

  async function transactionalProducer(transactionalId: string, transactionTimeout = 60_000): Promise<Producer> {
    const producer = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1, transactionTimeout });
    producers.push(producer);
    await producer.connect();
    return producer;
  }

  /** Every record value of the topic a fresh kafkajs consumer reads, read_committed (kafkajs's default) or not. */
  async function readAll(topic: string, expected: number, readUncommitted = false, settleMs = 1_500): Promise<string[]> {
    const consumer = kafka.consumer({ groupId: `reader-${topic}-${readUncommitted}-${Date.now()}`, readUncommitted, maxWaitTimeInMs: 200 });
    consumers.push(consumer);
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const seen: string[] = [];
    let lastAt = Date.now();
    await consumer.run({
      eachMessage: async ({ message }) => {
        seen.push(message.value!.toString());
        lastAt = Date.now();
      },
    });
    // Until the expected count is in and nothing more has come for a while (so extra records would show).
    await eventually(`${expected} records of ${topic}`, async () => (seen.length >= expected && Date.now() - lastAt > settleMs ? true : undefined), 90_000);
    await consumer.disconnect();
    return seen;
  }

  const values = (prefix: string, count: number) => Array.from({ length: count }, (_, index) => `${prefix}-${index}`);

  it('kafkajs: committed transactions are read once and aborted ones never by read_committed; read_uncommitted reads both', async () => {
    await createTopic('txn-basic', 3);
    const producer = await transactionalProducer('basic');
    for (const [name, commit] of [['one', true], ['two', false], ['three', true]] as const) {
      const transaction = await producer.transaction();
      await transaction.send({ topic: 'txn-basic', messages: values(name, 30).map((value) => ({ key: value, value })) });
      if (commit) await transaction.commit();
      else await transaction.abort();
    }
    const committed = await readAll('txn-basic', 60);
    expect(committed.sort()).toEqual([...values('one', 30), ...values('three', 30)].sort());
    const everything = await readAll('txn-basic', 90, true);
    expect(everything.sort()).toEqual([...values('one', 30), ...values('two', 30), ...values('three', 30)].sort());
  });

  it('kafkajs: a read_committed consumer stops at an open transaction (the last stable offset) and reads it once committed', async () => {
    await createTopic('txn-open', 1);
    const producer = await transactionalProducer('open');
    const first = await producer.transaction();
    await first.send({ topic: 'txn-open', messages: values('before', 5).map((value) => ({ value })) });
    await first.commit();
    const open = await producer.transaction();
    await open.send({ topic: 'txn-open', messages: values('pending', 5).map((value) => ({ value })) });
    // The open transaction's records are stored (read_uncommitted sees them) but not stable.
    expect((await readAll('txn-open', 10, true)).sort()).toEqual([...values('before', 5), ...values('pending', 5)].sort());
    expect((await readAll('txn-open', 5)).sort()).toEqual(values('before', 5).sort());
    const admin = kafka.admin();
    await admin.connect();
    try {
      // kafkajs lists offsets read_committed: the latest is the last stable offset, after 5 records and their commit marker.
      expect((await admin.fetchTopicOffsets('txn-open'))[0]).toMatchObject({ high: '6' });
    } finally {
      await admin.disconnect();
    }
    await open.commit();
    expect((await readAll('txn-open', 10)).sort()).toEqual([...values('before', 5), ...values('pending', 5)].sort());
  });

  it('kafkajs: consume-transform-produce commits the group\'s offsets with the transaction, and not when it aborts', async () => {
    await createTopic('ctp-in', 2);
    await createTopic('ctp-out', 2);
    const plain = kafka.producer();
    producers.push(plain);
    await plain.connect();
    await plain.send({ topic: 'ctp-in', messages: values('in', 40).map((value) => ({ key: value, value })) });

    const producer = await transactionalProducer('transformer');
    const consumer = kafka.consumer({ groupId: 'transformers', maxWaitTimeInMs: 200 });
    consumers.push(consumer);
    await consumer.connect();
    await consumer.subscribe({ topic: 'ctp-in', fromBeginning: true });
    let batches = 0;
    let aborted = 0;
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch, resolveOffset }) => {
        const transaction = await producer.transaction();
        await transaction.send({ topic: 'ctp-out', messages: batch.messages.map((message) => ({ key: message.key, value: `out-${message.value!.toString()}` })) });
        const next = String(Number(batch.lastOffset()) + 1);
        await transaction.sendOffsets({ consumerGroupId: 'transformers', topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: next }] }] });
        // The first batch's transaction aborts: its output is dropped and its offsets are not committed, so it is read again.
        if (batches++ === 0) {
          aborted = batch.messages.length;
          await transaction.abort();
          throw new Error('aborted on purpose: the batch is read again');
        }
        await transaction.commit();
        for (const message of batch.messages) resolveOffset(message.offset);
      },
    });
    const admin = kafka.admin();
    await admin.connect();
    try {
      await eventually('the group\'s committed offsets at the end of the input', async () => {
        const offsets = await admin.fetchOffsets({ groupId: 'transformers', topics: ['ctp-in'] });
        const total = offsets[0]!.partitions.reduce((sum, partition) => sum + Math.max(0, Number(partition.offset)), 0);
        return total === 40 ? true : undefined;
      }, 90_000);
    } finally {
      await admin.disconnect();
    }
    await consumer.disconnect();
    expect(aborted).toBeGreaterThan(0);
    const output = await readAll('ctp-out', 40);
    expect(output.sort()).toEqual(values('in', 40).map((value) => `out-${value}`).sort());
    // The aborted transaction's records are stored all the same, and read_uncommitted sees them too.
    expect((await readAll('ctp-out', 40 + aborted, true)).length).toBe(40 + aborted);
  });

  it('kafkajs: a second producer of a transactional id fences the first and aborts its open transaction', async () => {
    await createTopic('txn-zombie', 2);
    const zombie = await transactionalProducer('fenced');
    const open = await zombie.transaction();
    await open.send({ topic: 'txn-zombie', messages: values('zombie', 10).map((value) => ({ key: value, value })) });
    // kafkajs asks for the transactional id's producer when the first transaction begins.
    const successor = await transactionalProducer('fenced');
    const next = await successor.transaction();
    // The zombie can neither write nor commit any more.
    await expect(open.send({ topic: 'txn-zombie', messages: [{ key: 'late', value: 'late' }] })).rejects.toThrow();
    await expect(open.commit()).rejects.toThrow();
    await next.send({ topic: 'txn-zombie', messages: values('successor', 10).map((value) => ({ key: value, value })) });
    await next.commit();
    expect((await readAll('txn-zombie', 10)).sort()).toEqual(values('successor', 10).sort());
  });

  it('kafkajs: a transaction open past its timeout is aborted by the coordinator', async () => {
    await createTopic('txn-timeout', 1);
    const producer = await transactionalProducer('slow', 2_000);
    const open = await producer.transaction();
    await open.send({ topic: 'txn-timeout', messages: values('late', 5).map((value) => ({ value })) });
    // Once aborted, the partition is stable again past the aborted records and the abort marker (kafkajs lists read_committed).
    const admin = kafka.admin();
    await admin.connect();
    try {
      expect((await admin.fetchTopicOffsets('txn-timeout'))[0]).toMatchObject({ high: '0' });
      await eventually('the open transaction aborted', async () => ((await admin.fetchTopicOffsets('txn-timeout'))[0]!.high === '6' ? true : undefined), 30_000);
    } finally {
      await admin.disconnect();
    }
    await expect(open.commit()).rejects.toThrow();
    const after = await transactionalProducer('slow', 2_000);
    const next = await after.transaction();
    await next.send({ topic: 'txn-timeout', messages: values('on-time', 5).map((value) => ({ value })) });
    await next.commit();
    expect((await readAll('txn-timeout', 5)).sort()).toEqual(values('on-time', 5).sort());
  });

  it('kafkajs: a transaction survives kill -9 of a partition leader and of its transaction coordinator, committed records read once', async () => {
    await createTopic('txn-faults', 3);
    const producer = await transactionalProducer('survivor');
    const admin = kafka.admin();
    await admin.connect();
    const leaderOf = async (partition: number) => String((await admin.fetchTopicMetadata({ topics: ['txn-faults'] })).topics[0]!.partitions.find((each) => each.partitionId === partition)!.leader);
    try {
      const transaction = await producer.transaction();
      await transaction.send({ topic: 'txn-faults', messages: values('before', 30).map((value) => ({ key: value, value })) });
      const partitionLeader = await leaderOf(0);
      cluster.kill('data-node', partitionLeader, 'SIGKILL');
      // One send per partition across the kill: kafkajs drops a moved partition from a send spanning several
      // (see kafka-failover.e2e.ts and docs/kafka.md), with or without transactions.
      await Promise.all([0, 1, 2].map((partition) => transaction.send({ topic: 'txn-faults', messages: values(`after-${partition}`, 10).map((value) => ({ key: value, value, partition })) })));
      await transaction.commit();
      await cluster.restart('data-node', partitionLeader);
      // Kill the coordinator of the id right after a commit: the markers may still be on their way; its successor writes them.
      const second = await producer.transaction();
      await second.send({ topic: 'txn-faults', messages: values('second', 30).map((value) => ({ key: value, value })) });
      await second.commit();
      const found = await rawKafkaRequest(brokers[0]!, 'findCoordinator', 1, { coordinatorKey: 'survivor', coordinatorType: 1 });
      expect(found.errorCode).toBe(0);
      const coordinator = String(found.coordinator.nodeId);
      cluster.kill('data-node', coordinator, 'SIGKILL');
      // The coordinator's successor completes the transaction: librdkafka, read_committed, reads all 90 from a live node.
      const live = brokers.find((_, index) => String(index + 1) !== coordinator)!;
      const committed = await eventually('every committed record readable', async () => {
        const read = (await Promise.all([0, 1, 2].map((partition) => kcatConsume(live, 'txn-faults', partition)))).flat().map((record) => record.value);
        return read.length >= 90 ? read : undefined;
      }, 60_000);
      const expected = [...values('before', 30), ...[0, 1, 2].flatMap((partition) => values(`after-${partition}`, 10)), ...values('second', 30)].sort();
      expect(committed.sort()).toEqual(expected);
      // kafkajs's consumers stall while a broker they know stays down (docs/kafka.md), so it reads once the node is back.
      await cluster.restart('data-node', coordinator);
      expect((await readAll('txn-faults', 90)).sort()).toEqual(expected);
    } finally {
      await admin.disconnect();
    }
  });

  it('kafkajs: kill -9 of the transaction coordinator and of the coordinator lease holder mid-transaction; the commit and the abort that follow hold', async () => {
    await createTopic('txn-coordinators', 3);
    const producer = await transactionalProducer('steadfast');
    const coordinatorOf = async () => {
      const found = await eventually('the transaction coordinator', async () => {
        const answer = await rawKafkaRequest(brokers[0]!, 'findCoordinator', 1, { coordinatorKey: 'steadfast', coordinatorType: 1 });
        return answer.errorCode === 0 ? answer : undefined;
      });
      return String(found.coordinator.nodeId);
    };
    const perPartition = (transaction: Awaited<ReturnType<Producer['transaction']>>, name: string) =>
      Promise.all([0, 1, 2].map((partition) => transaction.send({ topic: 'txn-coordinators', messages: values(`${name}-${partition}`, 10).map((value) => ({ key: value, value, partition })) })));

    // The transaction coordinator dies between the sends and the commit: the commit goes to its successor,
    // which restored the transaction's state (Ongoing, its partitions) from the state table.
    const first = await producer.transaction();
    await perPartition(first, 'first');
    const coordinator = await coordinatorOf();
    cluster.kill('data-node', coordinator, 'SIGKILL');
    await perPartition(first, 'first-more');
    await first.commit();
    await cluster.restart('data-node', coordinator);

    // The lease holder among mink's coordinators dies mid-transaction: transactions do not depend on it.
    const aborted = await producer.transaction();
    await perPartition(aborted, 'aborted');
    const holder = String((await http(cluster.gatewayUrl, 'GET', '/v1/cluster')).body.coordinator.node);
    cluster.kill('coordinator', holder, 'SIGKILL');
    await perPartition(aborted, 'aborted-more');
    await aborted.abort();
    const last = await producer.transaction();
    await perPartition(last, 'last');
    await last.commit();
    await cluster.restart('coordinator', holder);

    const expected = ['first', 'first-more', 'last'].flatMap((name) => [0, 1, 2].flatMap((partition) => values(`${name}-${partition}`, 10))).sort();
    expect((await readAll('txn-coordinators', expected.length)).sort()).toEqual(expected);
  });

  it('librdkafka (python3-confluent-kafka): a transactional producer commits and aborts through kill -9 of a partition leader mid-transaction; its read_committed consumer reads the committed records only', async () => {
    await createTopic('txn-librdkafka', 3);
    const admin = kafka.admin();
    await admin.connect();
    const leaderOf = async (partition: number) => String((await admin.fetchTopicMetadata({ topics: ['txn-librdkafka'] })).topics[0]!.partitions.find((each) => each.partitionId === partition)!.leader);
    // Debian's binding lives with Debian's python (/usr/bin/python3), not with one a version manager put first on PATH.
    const python = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
    const child = spawn(python, [join(__dirname, 'kafka', 'librdkafka-transactions.py'), brokers.join(','), 'txn-librdkafka', '--pause'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => void (stderr = (stderr + chunk.toString()).slice(-4_000)));
    let outcome: { committed: string[]; aborted: string[]; readCommitted: string[]; errors: string[] } | undefined;
    const killed: string[] = [];
    try {
      for await (const line of createInterface({ input: child.stdout })) {
        const parsed = JSON.parse(line) as { paused?: string } & Partial<NonNullable<typeof outcome>>;
        if (parsed.paused !== undefined) {
          // Halfway through a transaction (the committed ones and the aborted one alike), the leader of partition 0 dies.
          const victim = await leaderOf(0);
          cluster.kill('data-node', victim, 'SIGKILL');
          killed.push(victim);
          child.stdin.write('\n');
          if (killed.length < 3) void cluster.restart('data-node', victim);
        }
        if (parsed.committed) outcome = parsed as NonNullable<typeof outcome>;
      }
    } finally {
      await admin.disconnect();
    }
    if (!outcome) throw new Error(`the librdkafka producer printed no outcome: ${stderr}`);
    expect(killed).toHaveLength(3);
    expect(outcome.errors).toEqual([]);
    expect(outcome.readCommitted.sort()).toEqual([...outcome.committed].sort());
    expect(outcome.committed).toHaveLength(40);
    // The aborted records are stored (read_uncommitted sees them) and never read by read_committed.
    const live = brokers.find((_, index) => String(index + 1) !== killed.at(-1))!;
    const stored = (await Promise.all([0, 1, 2].map((partition) => kcatConsume(live, 'txn-librdkafka', partition, { readUncommitted: true })))).flat().map((record) => record.value);
    for (const value of outcome.aborted) expect(stored).toContain(value);
    expect(outcome.readCommitted.filter((value) => outcome!.aborted.includes(value))).toEqual([]);
    await cluster.restart('data-node', killed.at(-1)!);
  });

});
