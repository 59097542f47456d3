/**
 * Consumer groups' committed offsets expire once a group has had no members for the retention
 * (`MINK_KAFKA_OFFSETS_RETENTION_MS`, Kafka's offsets.retention.minutes), on a real one-node cluster driven
 * by kafkajs: offsets committed without a group member go after the retention, those of a group with a
 * live consumer stay while it is there, and go once it has left and the retention has passed.
 */
import { Kafka, logLevel, type Admin, type Consumer } from 'kafkajs';
import { LocalCluster } from '@mink/devcluster';
import { ONE_NODE_CLUSTER, eventually, kafkaBrokersOf, temporaryDirectory } from './helpers';

jest.setTimeout(120_000);

const RETENTION_MS = 4_000;
const TOPIC = 'retained';

describe('Kafka offsets retention on a real cluster', () => {
  const directory = temporaryDirectory('kafka-offsets-retention');
  let cluster: LocalCluster;
  let kafka: Kafka;
  let admin: Admin;
  let consumer: Consumer | null = null;

  beforeAll(async () => {
    cluster = await LocalCluster.start({ dataDir: directory.path, ...ONE_NODE_CLUSTER, env: { MINK_KAFKA_OFFSETS_RETENTION_MS: String(RETENTION_MS) } });
    kafka = new Kafka({ clientId: 'retention-e2e', brokers: kafkaBrokersOf(cluster), logLevel: logLevel.NOTHING, retry: { retries: 10, initialRetryTime: 200 } });
    admin = kafka.admin();
    await admin.connect();
  });

  afterAll(async () => {
    await consumer?.disconnect().catch(() => undefined);
    await admin?.disconnect().catch(() => undefined);
    await cluster?.stop();
    directory.remove();
  });

  /** The committed offset of partition 0 of the topic for `groupId`, or null when it has none. */
  async function committed(groupId: string): Promise<string | null> {
    const [topic] = await admin.fetchOffsets({ groupId, topics: [TOPIC] });
    const offset = topic!.partitions.find((each) => each.partition === 0)!.offset;
    return offset === '-1' ? null : offset;
  }

  it('expires the offsets of a group without members after the retention, and keeps those of a group with a member until it leaves', async () => {
    expect(await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 1 }], waitForLeaders: true })).toBe(true);
    const producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    await producer.send({ topic: TOPIC, acks: -1, messages: Array.from({ length: 10 }, (_, index) => ({ value: `record-${index}` })) });
    await producer.disconnect();

    // A live group: a consumer that reads everything and commits, and stays a member.
    consumer = kafka.consumer({ groupId: 'live', sessionTimeout: 10_000, heartbeatInterval: 500 });
    await consumer.connect();
    await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
    let read = 0;
    await consumer.run({ autoCommitInterval: 200, eachMessage: async () => void read++ });
    await eventually('the live group read and committed every record', async () => read === 10 && (await committed('live')) === '10');

    // A group without members: offsets set by an administrator (kcat's and kafkajs's standalone commits).
    // Taken before the commit: the coordinator counts the retention from when it took the commit.
    const setAtMs = Date.now();
    await admin.setOffsets({ groupId: 'standalone', topic: TOPIC, partitions: [{ partition: 0, offset: '5' }] });
    expect(await committed('standalone')).toBe('5');

    await eventually('the standalone offsets expired', async () => (await committed('standalone')) === null, { timeoutMs: 30_000, intervalMs: 250 });
    // Not before the retention: the sweep counts from the commit.
    expect(Date.now() - setAtMs).toBeGreaterThanOrEqual(RETENTION_MS);
    // The group with a member keeps its offsets all along.
    expect(await committed('live')).toBe('10');

    const leftAtMs = Date.now();
    await consumer.disconnect();
    consumer = null;
    await eventually('the live group’s offsets expired once it had no members', async () => (await committed('live')) === null, { timeoutMs: 30_000, intervalMs: 250 });
    // A sweep may have last seen its member up to one sweep interval (a quarter of the retention) before it left.
    expect(Date.now() - leftAtMs).toBeGreaterThanOrEqual(RETENTION_MS - RETENTION_MS / 4);
  });
});
