/**
 * Consumer-group membership on a real local cluster, driven by librdkafka (Debian's python3-confluent-kafka),
 * one Python process per group member so members can be started, closed or killed one by one:
 * static members (KIP-345, `group.instance.id`) survive `kill -9` and a restart within their session without
 * a rebalance, getting their partitions back while the other member's assignment never changes; consumers
 * with librdkafka's `cooperative-sticky` assignor (KIP-429, incremental rebalancing over the classic protocol)
 * join one after the other and one leaves, every partition ending with exactly one owner, every record
 * consumed and committed exactly once, and no member giving up a partition it keeps.
 */
import { execFile, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Kafka, logLevel, type Admin, type Consumer } from 'kafkajs';
import { LocalCluster } from '@mink/devcluster';
import { KafkaReader, KafkaWriter } from '@mink/kafka';
import { SHORT_LEASE_CLUSTER, eventually, kafkaBrokersOf, temporaryDirectory } from './helpers';
import { exchangeFrame } from './kafka/raw-kafka';

jest.setTimeout(120_000);

const run = promisify(execFile);
// Debian's binding lives with Debian's python (/usr/bin/python3), not with one a version manager put first on PATH.
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const SCRIPT = join(__dirname, 'kafka', 'librdkafka-static-group.py');
const SESSION_TIMEOUT_MS = 10_000;
/** The consumers' heartbeat.interval.ms (set in the script): a member learns of a rebalance within one. */
const HEARTBEAT_INTERVAL_MS = 500;
/** The cluster's MINK_KAFKA_GROUP_MAX_SIZE: above the three members the cooperative test runs, with room for a stray handed-out id. */
const GROUP_MAX_SIZE = 4;

/** One line the script prints (see librdkafka-static-group.py). */
interface ConsumerEvent {
  event: 'assign' | 'revoke' | 'lost' | 'record' | 'committed' | 'commit-error' | 'error' | 'closed';
  atMs: number;
  partitions?: number[];
  partition?: number;
  offset?: number;
  value?: string;
  offsets?: Record<string, number>;
  error?: string;
}

/** A librdkafka group member in a Python process of its own, with every event it printed so far. */
class PythonConsumer {
  readonly events: ConsumerEvent[] = [];
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly exited: Promise<void>;
  private stderr = '';

  constructor(
    readonly name: string,
    args: string[],
  ) {
    this.child = spawn(PYTHON, [SCRIPT, 'consume', ...args]);
    let partial = '';
    this.child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop()!;
      for (const line of lines) if (line.trim() !== '') this.events.push(JSON.parse(line) as ConsumerEvent);
    });
    this.child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-20_000);
    });
    this.exited = new Promise((resolve) => this.child.on('exit', () => resolve()));
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** The rebalance callbacks, in order. */
  callbacks(): ConsumerEvent[] {
    return this.events.filter((event) => event.event === 'assign' || event.event === 'revoke' || event.event === 'lost');
  }

  /** The partitions the member holds after its callbacks so far (assign adds, revoke and lost take away). */
  owned(): number[] {
    const owned = new Set<number>();
    for (const callback of this.callbacks()) for (const partition of callback.partitions!) callback.event === 'assign' ? owned.add(partition) : owned.delete(partition);
    return [...owned].sort((a, b) => a - b);
  }

  records(): ConsumerEvent[] {
    return this.events.filter((event) => event.event === 'record');
  }

  /** Whether the member committed everything it consumed (one past the last record of each partition it read). */
  committedAll(): boolean {
    const next = new Map<number, number>();
    for (const record of this.records()) next.set(record.partition!, record.offset! + 1);
    const committed = new Map<number, number>();
    for (const event of this.events) if (event.event === 'committed') for (const [partition, offset] of Object.entries(event.offsets!)) committed.set(Number(partition), offset);
    return [...next].every(([partition, offset]) => committed.get(partition) === offset);
  }

  /** Closes the consumer as an application does (its standard input closing ends the poll loop), and waits for the process to end. */
  async close(): Promise<void> {
    this.child.stdin.end();
    await this.exited;
  }

  /** `kill -9` of the Python process: no LeaveGroup, no commit, the connection simply drops. */
  async kill(): Promise<void> {
    this.child.kill('SIGKILL');
    await this.exited;
  }

  /** What went wrong, for a failing expectation: the last events and librdkafka's log. */
  describe(): string {
    return `${this.name} (pid ${this.child.pid}): ${JSON.stringify(this.events.filter((event) => event.event !== 'record').slice(-20))}\n${this.stderr.slice(-2_000)}`;
  }
}

/** A member of a DescribeGroups v4 answer, with the static instance id that only v4 carries. */
interface DescribedMember {
  memberId: string;
  groupInstanceId: string | null;
}

/**
 * DescribeGroups v4 of `groupId`, asked of every broker until its coordinator answers (the others answer
 * NOT_COORDINATOR): kafkajs speaks only v0–2, which carry no instance ids.
 */
async function describeGroupV4(brokers: string[], groupId: string): Promise<{ state: string; protocol: string; members: DescribedMember[] }> {
  for (const broker of brokers) {
    const body = new KafkaWriter()
      .int16(15)
      .int16(4)
      .int32(1)
      .nullableString('mink-e2e-groups')
      .array([groupId], (item, id) => void item.string(id))
      .boolean(false)
      .toBytes();
    const frame = Buffer.concat([Buffer.alloc(4), Buffer.from(body)]);
    frame.writeInt32BE(body.byteLength, 0);
    const answer = await exchangeFrame(broker, frame, 'DescribeGroups v4');
    const reader = new KafkaReader(answer);
    reader.int32(); // correlation id
    reader.int32(); // throttle time
    const [group] = reader.array((item) => {
      const errorCode = item.int16();
      item.string(); // group id
      const state = item.string();
      item.string(); // protocol type
      const protocol = item.string();
      const members = item.array((member) => {
        const described = { memberId: member.string(), groupInstanceId: member.nullableString() };
        member.string(); // client id
        member.string(); // client host
        member.bytes(); // metadata
        member.bytes(); // assignment
        return described;
      });
      item.int32(); // authorized operations
      return { errorCode, state, protocol, members };
    });
    if (group!.errorCode === 0) return group!;
  }
  throw new Error(`no broker coordinates ${groupId}`);
}

/**
 * Whether `members` hold `partitions` partitions between them, each exactly once, and none of them had a
 * rebalance callback for `quietMs` (a rebalance reaches every member within a heartbeat interval).
 */
function settled(members: PythonConsumer[], partitions: number, quietMs = 4 * HEARTBEAT_INTERVAL_MS): boolean {
  const owned = members.flatMap((member) => member.owned());
  const lastCallbackMs = Math.max(...members.flatMap((member) => member.callbacks().map((callback) => callback.atMs)));
  return owned.length === partitions && new Set(owned).size === partitions && members.every((member) => member.owned().length > 0) && Date.now() - lastCallbackMs >= quietMs;
}

describe('consumer groups of librdkafka on a real local cluster', () => {
  const directory = temporaryDirectory('kafka-groups');
  let cluster: LocalCluster;
  let brokers: string[];
  let bootstrap: string;
  let admin: Admin;
  const consumers: PythonConsumer[] = [];

  beforeAll(async () => {
    // Groups of at most GROUP_MAX_SIZE members: the tests above stay within it, the last one goes past it.
    cluster = await LocalCluster.start({ dataDir: directory.path, ...SHORT_LEASE_CLUSTER, env: { MINK_KAFKA_GROUP_MAX_SIZE: String(GROUP_MAX_SIZE) } });
    brokers = kafkaBrokersOf(cluster);
    bootstrap = brokers.join(',');
    admin = new Kafka({ clientId: 'mink-e2e-groups', brokers, logLevel: logLevel.NOTHING, retry: { retries: 10, initialRetryTime: 200 } }).admin();
    await admin.connect();
  });

  afterAll(async () => {
    // Every Python process ends even when a test failed midway.
    for (const consumer of consumers) await consumer.kill().catch(() => undefined);
    await admin?.disconnect().catch(() => undefined);
    await cluster?.stop();
    if (process.env.MINK_E2E_KEEP) console.log('kept', directory.path);
    else directory.remove();
  });

  function startConsumer(name: string, topic: string, group: string, instance: string | null, strategy: string): PythonConsumer {
    const consumer = new PythonConsumer(name, [bootstrap, topic, group, instance ?? '-', strategy, String(SESSION_TIMEOUT_MS)]);
    consumers.push(consumer);
    return consumer;
  }

  async function script(...args: string[]): Promise<void> {
    const { stdout } = await run(PYTHON, [SCRIPT, ...args], { timeout: 60_000 });
    const last = JSON.parse(stdout.trim().split('\n').pop()!) as { event: string; unsent?: number; errors?: string[] };
    if (last.event === 'produced') expect({ unsent: last.unsent, errors: last.errors }).toEqual({ unsent: 0, errors: [] });
  }

  /** Waits for `what`, failing with every member's recent events and log. */
  async function until(what: string, members: PythonConsumer[], condition: () => boolean, timeoutMs = 45_000): Promise<void> {
    await eventually(what, condition, timeoutMs).catch((error: Error) => {
      throw new Error(`${error.message}\n${members.map((member) => member.describe()).join('\n')}`);
    });
  }

  it('static members: a consumer killed with kill -9 and restarted within its session gets its partitions back, the other member sees no rebalance', async () => {
    const topic = 'static-orders';
    const group = 'static-readers';
    await script('create', bootstrap, topic, '4');
    await script('produce', bootstrap, topic, '0', '200');
    // librdkafka's default assignors (range, roundrobin): eager, so any rebalance revokes everything.
    const survivor = startConsumer('survivor', topic, group, 'static-a', 'range,roundrobin');
    const victim = startConsumer('victim', topic, group, 'static-b', 'range,roundrobin');
    const both = [survivor, victim];
    await until('the two static members to split the 4 partitions and read and commit the 200 records', both, () =>
      settled(both, 4) && survivor.records().length + victim.records().length >= 200 && both.every((member) => member.committedAll()),
    );
    const before = await describeGroupV4(brokers, group);
    expect(before.state).toBe('Stable');
    expect(before.members.map((member) => member.groupInstanceId).sort()).toEqual(['static-a', 'static-b']);
    const victimPartitions = victim.owned();
    const survivorCallbacks = survivor.callbacks().length;

    await victim.kill();
    const restarted = startConsumer('restarted', topic, group, 'static-b', 'range,roundrobin');
    await until('the restarted member to get its assignment', [restarted], () => restarted.owned().length > 0);
    const restartedAtMs = Date.now();
    // Well within the session timeout, so the group still held the old incarnation when the new one joined.
    expect(restarted.callbacks()[0]!.atMs - victim.events.at(-1)!.atMs).toBeLessThan(SESSION_TIMEOUT_MS);
    expect(restarted.owned()).toEqual(victimPartitions);

    await script('produce', bootstrap, topic, '200', '200');
    await until('the records produced after the restart read by their owners, and four heartbeat intervals passed', [survivor, restarted], () => {
      const after = [...survivor.records(), ...restarted.records()].filter((record) => Number(record.value!.slice(1)) >= 200);
      return after.length >= 200 && Date.now() - restartedAtMs >= 4 * HEARTBEAT_INTERVAL_MS;
    });
    // No rebalance: the survivor's callback never fired again and it holds what it held.
    expect(survivor.callbacks()).toHaveLength(survivorCallbacks);
    expect([...survivor.owned(), ...restarted.owned()].sort()).toEqual([0, 1, 2, 3]);
    // The restarted member read only its partitions, from where its previous incarnation had committed.
    expect(restarted.records().every((record) => victimPartitions.includes(record.partition!) && Number(record.value!.slice(1)) >= 200)).toBe(true);
    const values = [...survivor.records(), ...victim.records(), ...restarted.records()].map((record) => record.value!);
    expect(values.sort()).toEqual(Array.from({ length: 400 }, (_, index) => `v${index}`).sort());

    // The coordinator replaced the killed member's id under the same instance id.
    const after = await describeGroupV4(brokers, group);
    expect(after.state).toBe('Stable');
    const idOf = (described: typeof before, instance: string) => described.members.find((member) => member.groupInstanceId === instance)!.memberId;
    expect(idOf(after, 'static-a')).toBe(idOf(before, 'static-a'));
    expect(idOf(after, 'static-b')).not.toBe(idOf(before, 'static-b'));
    await Promise.all([survivor.close(), restarted.close()]);
  });

  it('cooperative-sticky: members join one after the other and one leaves; each record is consumed and committed once, and kept partitions are never revoked', async () => {
    const topic = 'cooperative-orders';
    const group = 'cooperative-readers';
    const partitions = 6;
    await script('create', bootstrap, topic, String(partitions));
    let produced = 0;
    const produce = async (count: number) => {
      await script('produce', bootstrap, topic, String(produced), String(count));
      produced += count;
    };
    await produce(300);
    const first = startConsumer('first', topic, group, null, 'cooperative-sticky');
    await until('the first member to hold every partition', [first], () => settled([first], partitions));
    await produce(100);
    const second = startConsumer('second', topic, group, null, 'cooperative-sticky');
    await until('two members to share the partitions', [first, second], () => settled([first, second], partitions));
    await produce(100);
    const third = startConsumer('third', topic, group, null, 'cooperative-sticky');
    await until('three members to share the partitions', [first, second, third], () => settled([first, second, third], partitions));
    expect((await admin.describeGroups([group])).groups[0]).toMatchObject({ state: 'Stable', protocol: 'cooperative-sticky' });
    await produce(100);
    // A dynamic member leaves on close: it revokes (and commits) its partitions and sends LeaveGroup.
    await third.close();
    expect(third.events.at(-1)!.event).toBe('closed');
    await until('the two remaining members to share the partitions', [first, second], () => settled([first, second], partitions));
    await produce(100);

    const everyone = [first, second, third];
    await until('every record consumed and committed', everyone, () => everyone.reduce((sum, member) => sum + member.records().length, 0) >= produced && everyone.every((member) => member.committedAll()));
    // Exactly once across the group: each record read by one member, once.
    const values = everyone.flatMap((member) => member.records().map((record) => record.value!));
    const seen = new Set<string>();
    const twice: string[] = [];
    for (const value of values) {
      if (seen.has(value)) twice.push(value);
      seen.add(value);
    }
    // A record read twice means a partition was read again from an older committed offset: say by whom, with
    // every member's assignments, revocations and commits (a CI run on a loaded machine saw 49 such records).
    if (twice.length > 0) {
      const byMember = everyone.map((member) => `${member.name}: ${JSON.stringify(member.events.filter((event) => event.event !== 'record'))}`);
      throw new Error(`${twice.length} records consumed twice (the first: ${twice.slice(0, 5).join(', ')}); each member's events but its records:\n${byMember.join('\n')}`);
    }
    expect(values.sort()).toEqual(Array.from({ length: produced }, (_, index) => `v${index}`).sort());
    // Every partition ends with exactly one owner, and the group committed up to the end of each.
    const owners = [first, second].flatMap((member) => member.owned());
    expect(owners.sort()).toEqual(Array.from({ length: partitions }, (_, index) => index));
    const committed = (await admin.fetchOffsets({ groupId: group, topics: [topic] }))[0]!.partitions;
    const ends = await admin.fetchTopicOffsets(topic);
    expect(committed.sort((a, b) => a.partition - b.partition).map((partition) => partition.offset)).toEqual(ends.sort((a, b) => a.partition - b.partition).map((end) => end.high));
    expect(committed.reduce((sum, partition) => sum + Number(partition.offset), 0)).toBe(produced);

    // Cooperative, not eager: a callback names only the partitions that move. No member revoked a partition
    // its next assignment gave it back, and none but the one that closed ever revoked all it held.
    for (const member of everyone) {
      const callbacks = member.callbacks();
      let owned = new Set<number>();
      for (const [index, callback] of callbacks.entries()) {
        if (callback.event === 'assign') {
          owned = new Set([...owned, ...callback.partitions!]);
          continue;
        }
        const nextAssign = callbacks.slice(index + 1).find((later) => later.event === 'assign');
        expect({ member: member.name, revokedThenGivenBack: callback.partitions!.filter((partition) => nextAssign?.partitions!.includes(partition)) }).toEqual({ member: member.name, revokedThenGivenBack: [] });
        for (const partition of callback.partitions!) owned.delete(partition);
        if (member !== third) expect({ member: member.name, keepsSome: owned.size > 0 }).toEqual({ member: member.name, keepsSome: true });
      }
    }
    // The first member held partitions from its first assignment to the end: it kept some through both joins and the leave.
    expect(first.callbacks().filter((callback) => callback.event === 'revoke').length).toBeGreaterThan(0);
    expect(first.events.some((event) => event.event === 'lost')).toBe(false);
    await Promise.all([first.close(), second.close()]);
  });

  it('a group at MINK_KAFKA_GROUP_MAX_SIZE refuses one more kafkajs member with GROUP_MAX_SIZE_REACHED; the members keep their partitions', async () => {
    const topic = 'capped-orders';
    const group = 'capped-readers';
    await admin.createTopics({ topics: [{ topic, numPartitions: GROUP_MAX_SIZE }], waitForLeaders: true });
    const kafka = new Kafka({ clientId: 'mink-e2e-capped', brokers, logLevel: logLevel.NOTHING, retry: { retries: 5, initialRetryTime: 200 } });
    const members: Consumer[] = [];
    const crashes: string[] = [];
    const startMember = async (): Promise<Consumer> => {
      const consumer = kafka.consumer({ groupId: group, sessionTimeout: SESSION_TIMEOUT_MS, heartbeatInterval: HEARTBEAT_INTERVAL_MS, retry: { retries: 2, initialRetryTime: 200 } });
      members.push(consumer);
      consumer.on(consumer.events.CRASH, (event) => crashes.push((event.payload.error as Error & { type?: string }).type ?? event.payload.error.message));
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      await consumer.run({ eachMessage: async () => undefined });
      return consumer;
    };
    try {
      // Joined one at a time, each waiting for the group to settle, so no handed-out id is pending when the next comes.
      for (let count = 1; count <= GROUP_MAX_SIZE; count++) {
        await startMember();
        await eventually(`${count} members in a Stable group`, async () => {
          const described = (await admin.describeGroups([group])).groups[0]!;
          return described.state === 'Stable' && described.members.length === count;
        }, 45_000);
      }
      const before = (await admin.describeGroups([group])).groups[0]!;

      // One more: its JoinGroup is refused with the cap's code, which kafkajs does not retry.
      const refused = await startMember().then(
        () => eventually('the fifth member to crash', () => crashes.length > 0, 30_000).then(() => crashes[0]!),
        (error: Error & { type?: string }) => error.type ?? error.message,
      );
      expect(refused).toBe('GROUP_MAX_SIZE_REACHED');
      // The members in the group are untouched: same generation of the same four, each holding a partition.
      const after = (await admin.describeGroups([group])).groups[0]!;
      expect({ state: after.state, members: after.members.map((member) => member.memberId).sort() }).toEqual({ state: 'Stable', members: before.members.map((member) => member.memberId).sort() });
      // The refusal is counted on the coordinating node's /metrics.
      const counts = await Promise.all(
        cluster.processes().filter((each) => each.role === 'data-node').map(async (each) => {
          const text = await (await fetch(`http://127.0.0.1:${each.ports.http}/metrics`)).text();
          return Number(/^mink_kafka_group_joins_refused\{cap="group"[^}]*\} (\d+)$/m.exec(text)?.[1] ?? 0);
        }),
      );
      expect(counts.reduce((sum, count) => sum + count, 0)).toBeGreaterThanOrEqual(1);
    } finally {
      await Promise.all(members.map((member) => member.disconnect().catch(() => undefined)));
    }
  });
});
