/**
 * The Kafka listener of the data nodes on a real local cluster, driven by clients nobody here wrote:
 * kafkajs creates a topic, reads its metadata, produces keyed records with headers and lists offsets;
 * librdkafka (kcat) reads every partition back, produces with each compression codec and reads those back;
 * `kill -9` of a partition leader while kafkajs produces with acks=-1 loses no acknowledged record; kafkajs
 * consumers in a group share partitions, rebalance as members come and go and resume from committed
 * offsets, also after `kill -9` of the group's coordinator; librdkafka's Python binding creates, produces
 * (lz4) and consumes in a group that commits; a malformed, oversized or random frame closes
 * only its own connection; the topic is a table of the HTTP API that refuses row appends and scans.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Kafka, logLevel, type Admin, type Consumer, type ConsumerConfig, type Producer } from 'kafkajs';
import { LIMITS } from '@mink/config';
import { LocalCluster } from '@mink/devcluster';
import { bucketOfRow } from '@mink/records';
import { SHORT_LEASE_CLUSTER, eventually, http, kafkaBrokersOf, temporaryDirectory } from './helpers';
import { kcatConsume } from './kafka/kcat';
import { KafkajsLong, rawKafkaRequest } from './kafka/raw-kafka';

jest.setTimeout(240_000);

const run = promisify(execFile);

/** The produce errors a client retries after a leader change: NOT_LEADER_OR_FOLLOWER and LEADER_NOT_AVAILABLE. */
const ERROR_CODES_RETRIED = { notLeader: 6, leaderNotAvailable: 5 };

describe('the Kafka listener on a real local cluster', () => {
  const directory = temporaryDirectory('kafka');
  let cluster: LocalCluster;
  let kafka: Kafka;
  let admin: Admin;
  const producers: Producer[] = [];
  const consumers: Consumer[] = [];
  let brokers: string[];

  beforeAll(async () => {
    cluster = await LocalCluster.start({ dataDir: directory.path, ...SHORT_LEASE_CLUSTER });
    brokers = kafkaBrokersOf(cluster);
    // Every data node as a bootstrap server, as a Kafka user lists several: kafkajs refreshes metadata through them only, so one dead seed must not cut it off.
    kafka = new Kafka({
      clientId: 'mink-e2e',
      brokers,
      logLevel: process.env.MINK_E2E_KAFKA_LOG ? logLevel.DEBUG : logLevel.NOTHING,
      logCreator: () => (entry) => {
        if (process.env.MINK_E2E_KAFKA_LOG) appendFileSync(process.env.MINK_E2E_KAFKA_LOG, `${JSON.stringify({ ...entry.log, level: entry.level, namespace: entry.namespace })}\n`);
      },
      retry: { retries: 10, initialRetryTime: 200 },
    });
    admin = kafka.admin();
    await admin.connect();
  });

  afterAll(async () => {
    // Every client is disconnected even when a test failed midway: their retry timers would keep jest alive.
    for (const consumer of consumers) await consumer.disconnect().catch(() => undefined);
    for (const producer of producers) await producer.disconnect().catch(() => undefined);
    await admin?.disconnect().catch(() => undefined);
    await cluster?.stop();
    if (process.env.MINK_E2E_KEEP) console.log('kept', directory.path);
    else directory.remove();
  });

  function groupConsumer(config: ConsumerConfig): Consumer {
    const created = kafka.consumer(config);
    consumers.push(created);
    return created;
  }

  async function producer(options: { idempotent?: boolean } = {}): Promise<Producer> {
    // An idempotent kafkajs producer keeps one request in flight per broker, as it must for ordered retries.
    const idempotent = options.idempotent ? { idempotent: true, maxInFlightRequests: 1 } : {};
    const created = kafka.producer({ allowAutoTopicCreation: false, retry: { retries: 20, initialRetryTime: 100, maxRetryTime: 1_000 }, ...idempotent });
    await created.connect();
    producers.push(created);
    return created;
  }

  it('kafkajs creates a topic and produces; librdkafka reads exactly those records back, with offsets, keys and headers', async () => {
    expect(await admin.createTopics({ topics: [{ topic: 'orders', numPartitions: 3, replicationFactor: 3 }], waitForLeaders: true })).toBe(true);
    // A second create of the same name is refused with TOPIC_ALREADY_EXISTS, which kafkajs reports as false.
    expect(await admin.createTopics({ topics: [{ topic: 'orders', numPartitions: 3 }] })).toBe(false);
    // A name mink cannot take is INVALID_TOPIC_EXCEPTION, as Kafka answers one it cannot take.
    const invalid = await admin.createTopics({ topics: [{ topic: 'no spaces here', numPartitions: 1 }] }).catch((error: { errors?: Array<{ type: string }> }) => error);
    expect((invalid as { errors?: Array<{ type: string }> }).errors?.map((error) => error.type)).toEqual(['INVALID_TOPIC_EXCEPTION']);

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

    // The data nodes count produces and fetches per topic and partition on /metrics: every record produced once.
    const metrics = await Promise.all(
      cluster
        .processes()
        .filter((process) => process.role === 'data-node' && process.running)
        .map(async (process) => (await (await fetch(`http://127.0.0.1:${process.ports.http}/metrics`)).text())),
    );
    const rowsOf = (op: string) =>
      metrics
        .flatMap((text) => text.split('\n'))
        .filter((line) => line.startsWith('mink_bucket_rows_total{') && line.includes('table="orders"') && line.includes(`op="${op}"`))
        .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
    expect(rowsOf('kafkaProduce')).toBe(sent.length);
    expect(rowsOf('kafkaFetch')).toBeGreaterThanOrEqual(sent.length);
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

  /**
   * Creates a two-partition topic and produces batches of 20 records into it with `sender` (acks=-1) while
   * the leader of partition 0 is killed with SIGKILL, until 400 more records were acknowledged after the
   * kill; then reads both partitions back through a surviving node and restarts the victim.
   */
  async function produceThroughLeaderKill(topic: string, sender: Producer): Promise<{ acknowledged: string[]; failedSends: string[]; consumed: string[] }> {
    expect(await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true })).toBe(true);
    const metadata = await admin.fetchTopicMetadata({ topics: [topic] });
    const victim = String(metadata.topics[0]!.partitions.find((partition) => partition.partitionId === 0)!.leader);
    const survivor = brokers.find((_, index) => String(index + 1) !== victim)!;
    const acknowledged: string[] = [];
    const failedSends: string[] = [];
    let sending = true;
    let next = 0;
    let sends = 0;
    const load = (async () => {
      while (sending) {
        // One partition per send: kafkajs 2.2.4 retries a send only towards brokers that have not answered
        // it, so records whose partition moves during the send to a broker that already answered for another
        // partition are never sent again, yet the send resolves (src/producer/sendMessages.js); a send that
        // goes to one leader cannot be caught that way.
        const partition = sends++ % 2;
        const batch = Array.from({ length: 20 }, () => ({ value: `${topic}-${next++}`, partition }));
        try {
          await sender.send({ topic, acks: -1, messages: batch });
          acknowledged.push(...batch.map((message) => message.value));
        } catch (error) {
          // Not acknowledged: nothing is owed for these.
          failedSends.push(String(error));
        }
      }
    })();
    await eventually('some records acknowledged', async () => (acknowledged.length >= 200 ? true : undefined));
    cluster.kill('data-node', victim, 'SIGKILL');
    const atKill = acknowledged.length;
    await eventually('acknowledgements after the kill', async () => (acknowledged.length >= atKill + 400 ? true : undefined), 60_000);
    sending = false;
    await load;
    const consumed = (await Promise.all([0, 1].map((partition) => kcatConsume(survivor, topic, partition)))).flat().map((record) => record.value);
    await cluster.restart('data-node', victim);
    return { acknowledged, failedSends, consumed };
  }

  it('kill -9 of a partition leader while kafkajs produces with acks=-1 loses no acknowledged record', async () => {
    const { acknowledged, consumed } = await produceThroughLeaderKill('failover', await producer());
    const stored = new Set(consumed);
    // At least once without an idempotent producer: every acknowledged record is stored (a retried batch may be stored twice).
    expect(acknowledged.filter((value) => !stored.has(value))).toEqual([]);
  });

  it('kill -9 of a partition leader under an idempotent kafkajs producer: every acknowledged record is stored exactly once', async () => {
    const { acknowledged, failedSends, consumed } = await produceThroughLeaderKill('exactly-once', await producer({ idempotent: true }));
    // A fresh reader sees every acknowledged record once and no record twice: a batch retried after the
    // kill, whose first attempt the dead leader had committed, was answered from the committed writer state.
    const counts = new Map<string, number>();
    for (const value of consumed) counts.set(value, (counts.get(value) ?? 0) + 1);
    expect([...counts].filter(([, count]) => count > 1)).toEqual([]);
    expect(acknowledged.filter((value) => !counts.has(value))).toEqual([]);
    // The retries outlast the failover, so no send gave up (a send that gave up could leave its sequences behind).
    expect(failedSends).toEqual([]);
  });

  it('a new leader after kill -9 answers a producer\'s retried batch with its original offset, a sequence gap and a fenced epoch with their errors', async () => {
    expect(await admin.createTopics({ topics: [{ topic: 'sequences', numPartitions: 1 }], waitForLeaders: true })).toBe(true);
    const leaderOf = async () => {
      const metadata = await admin.fetchTopicMetadata({ topics: ['sequences'] });
      return String(metadata.topics[0]!.partitions[0]!.leader);
    };
    const victim = await leaderOf();
    const initialized = await rawKafkaRequest(brokers[0]!, 'initProducerId', 1, { transactionTimeout: 30_000 });
    expect(initialized.errorCode).toBe(0);
    const producerId = KafkajsLong.fromValue(initialized.producerId);
    const produce = async (node: string, epoch: number, firstSequence: number, values: string[]) => {
      const decoded = await rawKafkaRequest(brokers[Number(node) - 1]!, 'produce', 7, {
        acks: -1,
        timeout: 30_000,
        producerId,
        producerEpoch: epoch,
        topicData: [{ topic: 'sequences', partitions: [{ partition: 0, firstSequence, messages: values.map((value) => ({ value, timestamp: Date.now() })) }] }],
      });
      const partition = decoded.topics[0].partitions[0];
      return { errorCode: partition.errorCode as number, baseOffset: Number(partition.baseOffset) };
    };

    expect(await produce(victim, 0, 0, ['a0', 'a1', 'a2'])).toEqual({ errorCode: 0, baseOffset: 0 });
    // The same batch again (a retry whose answer was lost): its original offset, nothing stored twice.
    expect(await produce(victim, 0, 0, ['a0', 'a1', 'a2'])).toEqual({ errorCode: 0, baseOffset: 0 });
    expect(await produce(victim, 0, 3, ['b0', 'b1'])).toEqual({ errorCode: 0, baseOffset: 3 });

    cluster.kill('data-node', victim, 'SIGKILL');
    const successor = await eventually('another leader for the partition', async () => {
      const leader = await leaderOf().catch(() => victim);
      return leader !== victim ? leader : undefined;
    }, 60_000);
    // The new leader knows the producer's batches from the committed writer state alone.
    const retried = await eventually('the retried batch answered by the new leader', async () => {
      const answer = await produce(successor, 0, 3, ['b0', 'b1']);
      return answer.errorCode === ERROR_CODES_RETRIED.notLeader || answer.errorCode === ERROR_CODES_RETRIED.leaderNotAvailable ? undefined : answer;
    }, 60_000);
    expect(retried).toEqual({ errorCode: 0, baseOffset: 3 });
    expect(await produce(successor, 0, 9, ['gap'])).toEqual({ errorCode: 45, baseOffset: -1 }); // OUT_OF_ORDER_SEQUENCE_NUMBER
    expect(await produce(successor, 0, 5, ['c0'])).toEqual({ errorCode: 0, baseOffset: 5 });
    // A newer epoch of the producer starts its sequences afresh and fences the older one.
    expect(await produce(successor, 1, 0, ['d0'])).toEqual({ errorCode: 0, baseOffset: 6 });
    expect(await produce(successor, 0, 6, ['stale'])).toEqual({ errorCode: 47, baseOffset: -1 }); // INVALID_PRODUCER_EPOCH

    const stored = await kcatConsume(brokers[Number(successor) - 1]!, 'sequences', 0);
    expect(stored.map((record) => `${record.offset}:${record.value}`)).toEqual(['0:a0', '1:a1', '2:a2', '3:b0', '4:b1', '5:c0', '6:d0']);
    await cluster.restart('data-node', victim);
  });

  it('kafkajs consumers in a group split the partitions, rebalance when one joins and one leaves, and resume from committed offsets', async () => {
    expect(await admin.createTopics({ topics: [{ topic: 'grouped', numPartitions: 4 }], waitForLeaders: true })).toBe(true);
    const sender = await producer();
    const produce = async (from: number, count: number) => {
      await sender.send({ topic: 'grouped', acks: -1, messages: Array.from({ length: count }, (_, index) => ({ key: `k${from + index}`, value: `g-${from + index}` })) });
    };
    await produce(0, 200);

    type Member = { consumer: Consumer; seen: string[]; assigned: number[] };
    const members: Member[] = [];
    const join = async (): Promise<Member> => {
      const consumer = groupConsumer({ groupId: 'readers', sessionTimeout: 6_000, heartbeatInterval: 500, rebalanceTimeout: 10_000, retry: { retries: 20 } });
      const member: Member = { consumer, seen: [], assigned: [] };
      consumer.on(consumer.events.GROUP_JOIN, (event) => {
        member.assigned = (event.payload.memberAssignment['grouped'] ?? []).slice().sort();
      });
      await consumer.connect();
      await consumer.subscribe({ topic: 'grouped', fromBeginning: true });
      await consumer.run({ eachMessage: async ({ message }) => void member.seen.push(message.value!.toString()) });
      members.push(member);
      return member;
    };
    const seenByAll = () => new Set(members.flatMap((member) => member.seen));
    const assignmentsOf = (group: Member[]) => group.map((member) => member.assigned).flat().sort();

    const [first, second] = [await join(), await join()];
    await eventually('two members share the four partitions', async () => (assignmentsOf([first!, second!]).join() === '0,1,2,3' && first!.assigned.length === 2 ? true : undefined), 60_000);
    await eventually('the first 200 records consumed', async () => (seenByAll().size === 200 ? true : undefined), 60_000);

    const third = await join();
    await eventually('three members share the four partitions', async () => {
      const all = assignmentsOf([first!, second!, third]);
      return all.join() === '0,1,2,3' && [first!, second!, third].every((member) => member.assigned.length >= 1) ? true : undefined;
    }, 60_000);
    await produce(200, 100);
    await eventually('the next 100 records consumed', async () => (seenByAll().size === 300 ? true : undefined), 60_000);

    await second!.consumer.disconnect();
    await eventually('two members share the four partitions again', async () => (assignmentsOf([first!, third]).join() === '0,1,2,3' ? true : undefined), 60_000);
    await produce(300, 100);
    await eventually('all 400 records consumed', async () => (seenByAll().size === 400 ? true : undefined), 60_000);
    const described = await admin.describeGroups(['readers']);
    expect(described.groups[0]!.state).toBe('Stable');
    expect(described.groups[0]!.members).toHaveLength(2);

    // The group's committed offsets reach every partition's end, and a fresh member starts there.
    await first!.consumer.disconnect();
    await third.consumer.disconnect();
    await eventually('offsets committed to the end', async () => {
      const offsets = await admin.fetchOffsets({ groupId: 'readers', topics: ['grouped'] });
      const ends = await admin.fetchTopicOffsets('grouped');
      const committed = offsets[0]!.partitions.sort((a, b) => a.partition - b.partition).map((partition) => partition.offset);
      return committed.join() === ends.sort((a, b) => a.partition - b.partition).map((end) => end.high).join() ? true : undefined;
    }, 30_000);
    members.length = 0;
    const resumed = await join();
    await produce(400, 50);
    await eventually('only the new records consumed after the restart', async () => (resumed.seen.length >= 50 ? true : undefined), 60_000);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(resumed.seen.sort()).toEqual(Array.from({ length: 50 }, (_, index) => `g-${400 + index}`).sort());
    await resumed.consumer.disconnect();
  });

  it('kill -9 of the group coordinator: the group finds the new coordinator and resumes from its committed offsets', async () => {
    expect(await admin.createTopics({ topics: [{ topic: 'resilient', numPartitions: 2 }], waitForLeaders: true })).toBe(true);
    const sender = await producer();
    // One send per partition (see the partition-leader kill above for why, with kafkajs).
    const produce = async (from: number, count: number) => {
      for (const partition of [0, 1]) {
        const messages = Array.from({ length: count }, (_, index) => ({ value: `r-${from + index}`, partition: (from + index) % 2 })).filter((message) => message.partition === partition);
        await sender.send({ topic: 'resilient', acks: -1, messages });
      }
    };
    await produce(0, 200);
    const seen: string[] = [];
    const consumers = await Promise.all(
      [0, 1].map(async () => {
        const consumer = groupConsumer({ groupId: 'survivors', sessionTimeout: 6_000, heartbeatInterval: 500, retry: { retries: 30, initialRetryTime: 200, maxRetryTime: 2_000 } });
        await consumer.connect();
        await consumer.subscribe({ topic: 'resilient', fromBeginning: true });
        await consumer.run({ autoCommitInterval: 100, eachMessage: async ({ message }) => void seen.push(message.value!.toString()) });
        return consumer;
      }),
    );
    await eventually('the first 200 records consumed and committed', async () => {
      if (new Set(seen).size < 200) return undefined;
      const offsets = await admin.fetchOffsets({ groupId: 'survivors', topics: ['resilient'] });
      const ends = await admin.fetchTopicOffsets('resilient');
      const committed = offsets[0]!.partitions.sort((a, b) => a.partition - b.partition).map((partition) => partition.offset).join();
      return committed === ends.sort((a, b) => a.partition - b.partition).map((end) => end.high).join() ? true : undefined;
    }, 60_000);

    // The coordinator is the leader of the offsets table's bucket the group id hashes to.
    const status = (await http(cluster.gatewayUrl, 'GET', '/v1/cluster')).body;
    const groupBucket = bucketOfRow({ group: 'survivors' }, ['group'], LIMITS.kafkaGroupBuckets);
    const coordinator = status.buckets.find((bucket: any) => bucket.table === '__consumer_offsets' && bucket.bucket === groupBucket).leader as string;
    cluster.kill('data-node', coordinator, 'SIGKILL');
    await eventually('the group bucket re-led', async () => {
      const now = (await http(cluster.gatewayUrl, 'GET', '/v1/cluster')).body;
      const bucket = now.buckets.find((candidate: any) => candidate.table === '__consumer_offsets' && candidate.bucket === groupBucket);
      return bucket.leader !== coordinator && bucket.state === 'open' ? true : undefined;
    }, 30_000);
    // The process comes back, as under a supervisor: kafkajs keeps a broker it once saw in its pool and stops
    // all its fetchers while one of them cannot connect, so a broker gone for good stalls it (not mink's doing).
    await cluster.restart('data-node', coordinator);
    await produce(200, 100);
    await eventually('the 100 records produced after the kill consumed', async () => (new Set(seen).size >= 300 ? true : undefined), 90_000);
    // Resumed from the committed offsets: none of the first 200 records was delivered again.
    const firstRound = seen.filter((value) => Number(value.slice(2)) < 200);
    expect(firstRound).toHaveLength(200);
    expect(new Set(seen)).toEqual(new Set(Array.from({ length: 300 }, (_, index) => `r-${index}`)));
    await Promise.all(consumers.map((consumer) => consumer.disconnect()));
  });

  it('librdkafka (python3-confluent-kafka) creates a topic, produces idempotently with lz4 and reads it back in a consumer group that commits', async () => {
    // Debian's binding lives with Debian's python (/usr/bin/python3), not with one a version manager put first on PATH.
    const python = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
    const script = join(__dirname, 'kafka', 'librdkafka-group.py');
    const { stdout } = await run(python, [script, brokers.join(','), 'librdkafka', '300'], { timeout: 120_000 });
    const outcome = JSON.parse(stdout.trim().split('\n').pop()!) as { unsent: number; seen: string[]; deliveries: number; committed: number; errors: string[]; deliveryErrors: string[]; idempotence: { state: string; producerId: number } };
    expect(outcome.unsent).toBe(0);
    expect(outcome.deliveryErrors).toEqual([]);
    // The producer ran idempotently: it holds a producer id from InitProducerId.
    expect(outcome.idempotence).toEqual({ state: 'Assigned', producerId: expect.any(Number) });
    expect(outcome.idempotence.producerId).toBeGreaterThanOrEqual(0);
    expect(outcome.seen).toEqual(Array.from({ length: 300 }, (_, index) => `v${index}`).sort());
    expect(outcome.deliveries).toBe(300);
    // The group's committed offsets add up to every record read (offsets are per partition, from 0).
    expect(outcome.committed).toBe(300);
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
    // 200 frames of random bytes behind a valid size and a served API key: none takes the node down.
    for (let index = 0; index < 200; index++) {
      const body = randomBytes(8 + Math.floor(Math.random() * 120));
      body.writeInt16BE([0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 19, 20, 32][index % 17]!, 0);
      body.writeInt16BE(index % 12, 2);
      const frame = Buffer.concat([Buffer.alloc(4), body]);
      frame.writeInt32BE(body.byteLength, 0);
      await new Promise<void>((resolve) => {
        const socket = connect(Number(port), host!, () => socket.end(frame));
        socket.setTimeout(2_000, () => socket.destroy());
        socket.on('close', () => resolve());
        socket.on('error', () => undefined);
      });
    }
    expect(cluster.processes().filter((process) => process.role === 'data-node').every((process) => process.running)).toBe(true);
    // The node is still up and answers metadata.
    const topics = await admin.listTopics();
    expect(topics.sort()).toEqual(['__consumer_offsets', 'codecs', 'exactly-once', 'failover', 'grouped', 'librdkafka', 'orders', 'resilient', 'sequences']);
  });

  it('reads mink\'s own log and primary-key tables as topics: JSON rows as values, the primary key as keys, the change type in a header', async () => {
    const created = await http(cluster.gatewayUrl, 'POST', '/v1/tables', { name: 'events', columns: [{ name: 'id', type: 'int64' }, { name: 'note', type: 'string' }], buckets: 1 });
    expect(created.status).toBe(201);
    expect((await http(cluster.gatewayUrl, 'POST', '/v1/tables/events/append', { rows: [{ id: 1, note: 'one' }, { id: 2, note: null }] })).status).toBe(200);
    const events = await kcatConsume(brokers[0]!, 'events', 0);
    expect(events.map((record) => ({ offset: record.offset, key: record.key, value: JSON.parse(record.value) }))).toEqual([
      { offset: 0, key: '', value: { id: '1', note: 'one' } },
      { offset: 1, key: '', value: { id: '2', note: null } },
    ]);

    const accounts = await http(cluster.gatewayUrl, 'POST', '/v1/tables', {
      name: 'accounts',
      columns: [{ name: 'id', type: 'int64' }, { name: 'balance', type: 'int64' }],
      primaryKey: ['id'],
      buckets: 1,
    });
    expect(accounts.status).toBe(201);
    expect((await http(cluster.gatewayUrl, 'POST', '/v1/tables/accounts/put', { rows: [{ id: 7, balance: 10 }] })).status).toBe(200);
    expect((await http(cluster.gatewayUrl, 'POST', '/v1/tables/accounts/put', { rows: [{ id: 7, balance: 20 }] })).status).toBe(200);
    expect((await http(cluster.gatewayUrl, 'POST', '/v1/tables/accounts/delete', { keys: [{ id: 7 }] })).status).toBe(200);
    const changes = await kcatConsume(brokers[2]!, 'accounts', 0);
    expect(changes.map((record) => ({ key: JSON.parse(record.key), value: JSON.parse(record.value), headers: record.headers }))).toEqual([
      { key: { id: '7' }, value: { id: '7', balance: '10' }, headers: 'mink.change=+I' },
      { key: { id: '7' }, value: { id: '7', balance: '10' }, headers: 'mink.change=-U' },
      { key: { id: '7' }, value: { id: '7', balance: '20' }, headers: 'mink.change=+U' },
      { key: { id: '7' }, value: { id: '7', balance: '20' }, headers: 'mink.change=-D' },
    ]);

    // They are read-only topics: a produce or a DeleteTopics is refused, and the tables stay.
    const sender = await producer();
    await expect(sender.send({ topic: 'events', acks: -1, messages: [{ value: 'x' }] })).rejects.toThrow(/invalid topic/i);
    await expect(admin.deleteTopics({ topics: ['accounts'], timeout: 5_000 })).rejects.toThrow();
    expect((await http(cluster.gatewayUrl, 'GET', '/v1/tables/accounts')).status).toBe(200);
    const described = await admin.fetchTopicMetadata({ topics: ['events', 'accounts'] });
    // kafkajs lists the topics of its metadata cache in no set order.
    expect(described.topics.map((topic) => [topic.name, topic.partitions.length]).sort()).toEqual([
      ['accounts', 1],
      ['events', 1],
    ]);
  });

  it('creates a topic kcat produces to by a new name; AlterConfigs sets retention.ms as the table TTL; DeleteRecords moves the log start', async () => {
    // `seq 1 1000 | kcat -P -t clicks`, as a Kafka user would: librdkafka's Metadata creates the topic (auto-creation is on by default).
    await new Promise<void>((resolve, reject) => {
      const child = execFile('kcat', ['-b', brokers[1]!, '-P', '-t', 'clicks', '-X', 'acks=all'], { timeout: 60_000 }, (error) => (error ? reject(error) : resolve()));
      child.stdin!.end(`${Array.from({ length: 1_000 }, (_, index) => index + 1).join('\n')}\n`);
    });
    const [clicks] = (await admin.fetchTopicMetadata({ topics: ['clicks'] })).topics;
    expect(clicks!.partitions).toHaveLength(1);
    const produced = await kcatConsume(brokers[0]!, 'clicks', 0);
    // Every line exactly once. Not in order: kcat's producer is not idempotent, and a batch sent while the new
    // partition's bucket is still opening is retried after later ones were stored, as a Kafka broker may answer a
    // new partition NOT_LEADER (CI saw '1' stored last). An idempotent producer keeps the order (kafka-failover.e2e).
    expect(produced.map((record) => Number(record.value)).sort((a, b) => a - b)).toEqual(Array.from({ length: 1_000 }, (_, index) => index + 1));

    const TOPIC = 2; // ConfigResourceTypes.TOPIC
    const retentionOf = async () => {
      const described = await admin.describeConfigs({ resources: [{ type: TOPIC, name: 'clicks', configNames: ['retention.ms'] }], includeSynonyms: false });
      const entry = described.resources[0]!.configEntries[0]!;
      return { value: entry.configValue, isDefault: entry.isDefault };
    };
    expect(await retentionOf()).toEqual({ value: String(7 * 24 * 3_600_000), isDefault: true });
    await admin.alterConfigs({ validateOnly: false, resources: [{ type: TOPIC, name: 'clicks', configEntries: [{ name: 'retention.ms', value: '86400000' }] }] });
    expect(await retentionOf()).toEqual({ value: '86400000', isDefault: false });
    expect((await http(cluster.gatewayUrl, 'GET', '/v1/tables/clicks')).body.properties).toEqual({ 'table.log.ttl': '86400000', 'table.log.format': 'kafka' });
    // A config mink does not honour is refused by name, and nothing changes.
    await expect(admin.alterConfigs({ validateOnly: false, resources: [{ type: TOPIC, name: 'clicks', configEntries: [{ name: 'cleanup.policy', value: 'compact' }] }] })).rejects.toMatchObject({
      type: 'INVALID_CONFIG',
    });
    expect(await retentionOf()).toEqual({ value: '86400000', isDefault: false });

    // DeleteRecords: the log starts at 400 from now on, for every node and every client.
    // kafkajs finds the partition's leader in its metadata cache only, which its other admin calls refresh for other topics.
    await admin.fetchTopicMetadata({ topics: ['clicks'] });
    await admin.deleteTopicRecords({ topic: 'clicks', partitions: [{ partition: 0, offset: '400' }] });
    expect(await admin.fetchTopicOffsets('clicks')).toEqual([expect.objectContaining({ partition: 0, low: '400', high: '1000' })]);
    for (const broker of brokers) {
      const kept = await kcatConsume(broker, 'clicks', 0);
      expect({ broker, first: kept[0], count: kept.length }).toEqual({ broker, first: expect.objectContaining({ offset: 400, value: produced[400]!.value }), count: 600 });
    }
  });

  it('serves a topic as a table of the HTTP API: scans give key and value as base64 and the headers, row appends are refused, DeleteTopics drops it', async () => {
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
    // The 300 records kafkajs produced in the first test, read back over HTTP, bucket by bucket.
    const scanned: Array<{ key: string; value: string; headers: unknown }> = [];
    for (const bucket of [0, 1, 2]) {
      const scan = await http(cluster.gatewayUrl, 'GET', `/v1/tables/orders/scan?bucket=${bucket}&offset=0&limit=1000`);
      expect(scan.status).toBe(200);
      const records = scan.body.records as Array<{ offset: string | number; row: { key: string; value: string; headers: string } }>;
      expect(records.map((record) => Number(record.offset))).toEqual(records.map((_, index) => index));
      for (const { row } of records) {
        scanned.push({ key: Buffer.from(row.key, 'base64').toString(), value: Buffer.from(row.value, 'base64').toString(), headers: JSON.parse(row.headers) });
      }
    }
    expect(scanned).toHaveLength(300);
    for (const record of scanned) {
      const index = Number(record.value.slice('value-'.length));
      expect(record).toEqual({ key: `key-${index % 17}`, value: `value-${index}`, headers: [{ key: 'seq', value: Buffer.from(String(index)).toString('base64') }] });
    }

    await admin.deleteTopics({ topics: ['codecs'] });
    expect((await admin.listTopics()).sort()).toEqual(['__consumer_offsets', 'accounts', 'clicks', 'events', 'exactly-once', 'failover', 'grouped', 'librdkafka', 'orders', 'resilient', 'sequences']);
    expect((await http(cluster.gatewayUrl, 'GET', '/v1/tables/codecs')).status).toBe(404);
  });
});
