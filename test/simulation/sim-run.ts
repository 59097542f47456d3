import { writeFileSync } from 'node:fs';
import * as perfHooks from 'node:perf_hooks';
import { bucketsOfTable, kafkaTopicSpec, type View } from '@mink/meta';
import { LIMITS } from '@mink/config';
import { UnavailableError } from '@mink/protocol';
import { MetaStore } from '@mink/metalog';
import type { MinkClient } from '@mink/client';
import { InvariantViolation, LogInvariants, checkStoredKeys, checkStoredRows, type KeyHistory, type SentRow, type StoredRow } from './invariants';
import { SIM_LEASE_TTL_MS, SIM_LOG_LATENCY_MS_MAX, SIM_TICK_MS, SimClient, SimCoordinator, SimDataNode, SimWorld } from './sim-cluster';
import { SimRandom } from './sim-random';
import { SimKafkaProducer, checkStoredRecords, type StoredRecord } from './sim-kafka';

export const SIM_TABLE = 'sim';
const BUCKETS = 4;
/** The PK table of the run: keys owned by one writer each (key % writers), versions rising per writer. */
export const SIM_PK_TABLE = 'simkv';
const PK_BUCKETS = 2;
const PK_KEYS = 40;
/** The Kafka topic of the run (a `kafka`-format table), produced to by `KafkaWorkload`. */
export const SIM_TOPIC = 'simtopic';
const TOPIC_PARTITIONS = 3;
/** Batches a Kafka producer keeps queued or in flight at most (one in flight per partition). */
const KAFKA_BATCHES_QUEUED_MAX = 8;
const DATA_NODES = ['1', '2', '3'];
const COORDINATORS = ['c1', 'c2'];
const WRITERS = 2;
const APPENDS_IN_FLIGHT_MAX = 16;
/** A dead leader's buckets move within lease_ttl + tick of its death (docs/ownership.md), plus this margin. */
const RELEAD_MARGIN_MS = 1_000;

/** The simulated wall clock at the start of every seed. */
const SIM_START_MS = Date.UTC(2026, 0, 1);

export interface SimOptions {
  steps: number;
}

/** What one seed did, for the coverage assertions and the note. */
export interface SeedReport {
  seed: number;
  simulatedMs: number;
  acknowledgedRows: number;
  unacknowledgedRows: number;
  acknowledgedPuts: number;
  acknowledgedKafkaRecords: number;
  storedRows: number;
  faults: Record<string, number>;
  acceptedEntries: number;
}

/** A failure of one seed: the seed, the simulated time and the last log lines, to replay it with MINK_SIM_SEED. */
export class SeedFailure extends Error {
  constructor(
    readonly seed: number,
    message: string,
    readonly logTail: string[],
  ) {
    super(`seed ${seed}: ${message}\nreplay: MINK_SIM_SEED=${seed} npx jest test/unit/cluster-simulation --selectProjects unit\n${logTail.join('\n')}`);
  }
}

type Advance = (ms: number) => Promise<void>;

/**
 * One seeded run of a whole cluster (2 coordinators, 3 data nodes, 2 writers, 2 Kafka producers) in
 * simulated time: the production coordinator, lease, heartbeats, liveness, bucket sync, takeover, WAL
 * writer, compactor, client retries and Kafka broker over in-memory ports. Faults drawn from the seed: kill -9 and restart of data nodes and
 * coordinators, pauses past lease_ttl, message loss/duplication/delay, storage errors and slowness.
 * Invariants are checked after every step (LogInvariants, re-leading in time) and at the end (every
 * acknowledged row stored exactly once and in order: checkStoredRows; every acknowledged Kafka record
 * exactly once at its acknowledged offset: checkStoredRecords).
 *
 * `advance` moves the fake clock (jest's modern timers), running every timer and promise due.
 */
export async function runSeed(seed: number, options: SimOptions, advance: Advance): Promise<SeedReport> {
  // Every seed starts at the same instant, so nothing depends on when it runs.
  jest.setSystemTime(SIM_START_MS);
  const random = new SimRandom(seed);
  // Jitter of backoffs and the like comes from Math.random: seeded too, apart from the simulation's choices.
  const jitter = new SimRandom(seed ^ 0x5bd1e995);
  const mathRandom = jest.spyOn(Math, 'random').mockImplementation(jitter.next);
  const world = new SimWorld(random);
  const faults: Record<string, number> = {};
  const count = (fault: string) => (faults[fault] = (faults[fault] ?? 0) + 1);
  const startedAtMs = Date.now();
  const run = new ClusterRun(world, random, advance);
  try {
    await run.start();
    const invariants = new LogInvariants();
    run.observe(invariants);
    await run.createTables();
    const workload = new Workload(run.writers.map((writer) => writer.client));
    const puts = new PutWorkload(run.writers.map((writer) => writer.client));
    // Kafka connections that break before an answer arrives (the answer lost, the request perhaps carried out).
    const kafkaAnswerLostChance = random.chance(0.5) ? random.integer(1, 10) / 100 : 0;
    const kafka = new KafkaWorkload(run, random, () => kafkaAnswerLostChance);
    // Faults of this seed's network and storage: some seeds run clean, others lossy or slow.
    const lossy = random.chance(0.5);
    world.bus.faults = lossy ? { dropChance: random.integer(0, 3) / 100, duplicateChance: random.integer(0, 5) / 100, delayMsMax: random.integer(0, 40) } : world.bus.faults;
    world.storageFaults = random.chance(0.5) ? { failChance: random.integer(1, 10) / 100, lostAnswerChance: 0.5, latencyMsMax: random.integer(0, 80) } : world.storageFaults;
    // Metadata log appends that fail (a JetStream publish lost on the way, or its ack lost after it landed).
    const logFaultChance = random.chance(0.5) ? random.integer(1, 5) / 100 : 0;
    /** The step at which a stall of the metadata log ends (a JetStream leader election), or -1. */
    let stallEndsAtStep = -1;
    for (let step = 0; step < options.steps; step++) {
      if (step === stallEndsAtStep) {
        world.logLatencyMsMax = SIM_LOG_LATENCY_MS_MAX;
        stallEndsAtStep = -1;
      } else if (stallEndsAtStep < 0 && random.chance(logFaultChance / 2)) {
        // Every append takes up to a second or so each way for a while: commits queue behind it.
        world.logLatencyMsMax = random.integer(200, 1_200);
        stallEndsAtStep = step + random.integer(5, 30);
        count('metadata log stalled');
      }
      if (random.chance(0.6)) workload.send(random);
      if (random.chance(0.4)) puts.send(random);
      if (random.chance(0.4)) kafka.send(random);
      if (random.chance(logFaultChance)) {
        if (random.chance(0.3)) {
          // A JetStream leader failover: an append and its retries fail, so its proposer is told the
          // outcome is unknown, and the first append lands later all the same.
          world.log.failNextAppends(1, 'lands-late', random.integer(20, 1_500));
          world.log.failNextAppends(LIMITS.proposeAttemptsMax - 1, 'lost-request');
          count('metadata append landed late');
        } else {
          world.log.failNextAppends(1, random.chance(0.5) ? 'lost-request' : 'lost-ack');
          count('metadata append lost');
        }
      }
      for (const resumed of run.resumeDue()) count(resumed);
      const fault = await run.maybeInjectFault();
      if (fault) count(fault);
      await advance(random.integer(10, 200));
      try {
        run.checkReleads();
      } catch (error) {
        throw error instanceof InvariantViolation ? new InvariantViolation(`step ${step}: ${error.message}`) : error;
      }
      if (run.failure) throw run.failure;
    }
    // Heal: every process back, faults off, and every call settled; then read everything back.
    world.bus.faults = { dropChance: 0, duplicateChance: 0, delayMsMax: 0 };
    kafka.heal();
    world.storageFaults = { failChance: 0, lostAnswerChance: 0, latencyMsMax: 0 };
    world.log.clearFaults();
    world.logLatencyMsMax = SIM_LOG_LATENCY_MS_MAX;
    await run.healAll();
    await workload.settle(advance);
    await puts.settle(advance);
    await kafka.settle(advance);
    await run.waitAllLed(advance);
    const stored = await run.readBack();
    checkStoredRows(stored, workload.acknowledged, workload.unacknowledged);
    checkStoredKeys(await run.lookUpKeys(PK_KEYS), puts.history);
    checkStoredRecords(await run.readTopic(), kafka.producers);
    faults['Kafka batch refused for reusing sequences'] = kafka.producers.reduce((sum, producer) => sum + producer.refusedReuses, 0);
    if (run.failure) throw run.failure;
    if (world.storageFailures > 0) faults['storage call failed'] = world.storageFailures;
    // What the PK buckets went through, from their log lines: snapshots taken, restores from one.
    const said = (message: string, extra = '') => world.logLines.filter((line) => line.includes(`"msg":"${message}"`) && line.includes(extra)).length;
    faults['KV snapshot committed'] = said('committed KV snapshot');
    faults['PK bucket restored from a snapshot'] = said('restored PK bucket', '"snapshot":"kv/');
    return {
      seed,
      simulatedMs: Date.now() - startedAtMs,
      acknowledgedRows: workload.acknowledged.size,
      acknowledgedPuts: puts.acknowledgedCalls,
      acknowledgedKafkaRecords: kafka.producers.reduce((sum, producer) => sum + producer.acknowledged.length, 0),
      unacknowledgedRows: workload.unacknowledged.size,
      storedRows: stored.length,
      faults,
      acceptedEntries: invariants.accepted,
    };
  } catch (error) {
    throw new SeedFailure(seed, `${error instanceof Error ? (error.stack ?? error.message) : String(error)}`, world.logLines.slice(-40));
  } finally {
    run.stopAll();
    // The seed's processes are gone, but their timers (heartbeats, ticks, sync rounds) would keep firing
    // through every later seed: dropped here, so each seed starts with a clock of its own.
    jest.clearAllTimers();
    mathRandom.mockRestore();
    if (process.env.MINK_SIM_TRACE) writeFileSync(process.env.MINK_SIM_TRACE, world.logLines.join('\n'));
  }
}

/** The processes of one run, their faults, and the re-lead check. */
class ClusterRun {
  readonly dataNodes = new Map<string, SimDataNode>();
  readonly coordinators = new Map<string, SimCoordinator>();
  readonly writers: SimClient[] = [];
  private readonly lives = new Map<string, number>();
  /** Since when each data node has not been running (killed or paused); absent while it runs. */
  private readonly downSince = new Map<string, number>();
  /** Since when each data node has run without a break; absent while it does not. */
  private readonly upSince = new Map<string, number>();
  /** The last time a coordinator was killed, paused, resumed or restarted. */
  private lastCoordinatorEventMs = 0;
  private oracle: MetaStore | null = null;
  /** When each paused process resumes. */
  private readonly resumeAt = new Map<SimDataNode | SimCoordinator, number>();
  failure: Error | null = null;

  constructor(
    private readonly world: SimWorld,
    private readonly random: SimRandom,
    private readonly advance: Advance,
  ) {}

  private nextLife(name: string): number {
    const life = (this.lives.get(name) ?? 0) + 1;
    this.lives.set(name, life);
    return life;
  }

  /** Waits, moving simulated time, until `promise` settles (at most `limitMs` of simulated time). */
  async settle<T>(promise: Promise<T>, what: string, limitMs = 120_000): Promise<T> {
    let settled = false;
    let value: T | undefined;
    let failure: unknown;
    promise.then(
      (result) => {
        settled = true;
        value = result;
      },
      (error: unknown) => {
        settled = true;
        failure = error ?? new Error('rejected');
      },
    );
    const deadline = Date.now() + limitMs;
    while (!settled && Date.now() < deadline) await this.advance(20);
    if (!settled) throw new InvariantViolation(`${what} did not finish within ${limitMs} ms of simulated time`);
    if (failure !== undefined) throw failure;
    return value as T;
  }

  async start(): Promise<void> {
    for (const id of COORDINATORS) await this.startCoordinator(id);
    for (const id of DATA_NODES) if (!(await this.startDataNode(id))) throw new InvariantViolation(`data node ${id} did not start on a healthy log`);
    for (let index = 0; index < WRITERS; index++) this.writers.push(new SimClient(this.world, `writer-${index}`));
  }

  private async startCoordinator(id: string): Promise<void> {
    const coordinator = new SimCoordinator(this.world, id, this.nextLife(`c-${id}`));
    this.coordinators.set(id, coordinator);
    this.lastCoordinatorEventMs = Date.now();
    await this.settle(coordinator.start(), `starting ${coordinator.name}`);
  }

  /**
   * Starts data node `id`; false when its registration failed (a metadata log outage): like the real data
   * node, the process then exits, so it stays dead until restarted.
   */
  private async startDataNode(id: string): Promise<boolean> {
    const node = new SimDataNode(this.world, id, this.nextLife(`n-${id}`));
    this.dataNodes.set(id, node);
    try {
      await this.settle(node.start(), `starting ${node.name}`);
    } catch (error) {
      if (!(error instanceof UnavailableError)) throw error;
      node.kill();
      return false;
    }
    this.downSince.delete(id);
    this.upSince.set(id, Date.now());
    return true;
  }

  /** An observer's own copy of the view, fed every entry with the view before it. */
  observe(invariants: LogInvariants): void {
    void (async () => {
      const oracle = await MetaStore.open(this.world.log);
      let before: View = oracle.view;
      oracle.onApplied((view, seq, command, outcome) => {
        try {
          invariants.observe(before, seq, command, outcome);
        } catch (error) {
          this.failure ??= error instanceof Error ? error : new Error(String(error));
        }
        before = view;
      });
      await oracle.start();
      this.oracle = oracle;
    })();
  }

  get view(): View {
    if (!this.oracle) throw new Error('the observer has not started');
    return this.oracle.view;
  }

  /** The log table and the PK table of the workload, once every bucket of both is led. */
  async createTables(): Promise<void> {
    const client = this.writers[0].client;
    const spec = {
      name: SIM_TABLE,
      columns: [
        { name: 'id', type: 'int64' },
        { name: 'writer', type: 'string' },
        { name: 'seq', type: 'int64' },
      ],
      bucketKey: ['id'],
      buckets: BUCKETS,
    };
    await this.settle(client.createTable(spec), 'creating the table');
    const pkSpec = {
      name: SIM_PK_TABLE,
      columns: [
        { name: 'k', type: 'int64' },
        { name: 'v', type: 'int64' },
        { name: 'writer', type: 'string' },
      ],
      primaryKey: ['k'],
      buckets: PK_BUCKETS,
    };
    await this.settle(client.createTable(pkSpec), 'creating the PK table');
    await this.settle(client.createTable(kafkaTopicSpec(SIM_TOPIC, TOPIC_PARTITIONS)), 'creating the Kafka topic');
    await this.waitAllLed(this.advance);
  }

  /** Waits until every bucket of the table is open at a leader that runs. */
  async waitAllLed(advance: Advance, limitMs = 120_000): Promise<void> {
    const deadline = Date.now() + limitMs;
    for (;;) {
      const view = this.view;
      const buckets = [...bucketsOfTable(view, SIM_TABLE), ...bucketsOfTable(view, SIM_PK_TABLE), ...bucketsOfTable(view, SIM_TOPIC)];
      const running = (nodeId: string | null) => nodeId !== null && this.dataNodes.get(nodeId)?.gate.running === true;
      if (buckets.length === BUCKETS + PK_BUCKETS + TOPIC_PARTITIONS && buckets.every((bucket) => running(bucket.leader) && bucket.stream.state === 'open')) return;
      if (Date.now() >= deadline) {
        throw new InvariantViolation(`buckets not all open at running leaders after ${limitMs} ms: ${JSON.stringify(buckets.map((bucket) => [bucket.leader, bucket.stream.state]))}`);
      }
      await advance(50);
    }
  }

  /** Resumes the paused processes whose pause is over. */
  resumeDue(): string[] {
    const now = Date.now();
    const resumed: string[] = [];
    for (const [process, atMs] of [...this.resumeAt]) {
      if (atMs > now) continue;
      this.resumeAt.delete(process);
      process.resume();
      if (process instanceof SimDataNode) {
        this.downSince.delete(process.nodeId);
        this.upSince.set(process.nodeId, now);
        resumed.push('resume data node');
      } else {
        this.lastCoordinatorEventMs = now;
        resumed.push('resume coordinator');
      }
    }
    return resumed;
  }

  /** One fault now and then: kill -9 or pause of a data node or a coordinator, or a restart of a dead one. */
  async maybeInjectFault(): Promise<string | null> {
    const random = this.random;
    if (!random.chance(0.04)) return null;
    const nodes = [...this.dataNodes.values()];
    const running = nodes.filter((node) => node.gate.running);
    const dead = nodes.filter((node) => node.gate.state === 'dead');
    const paused = nodes.filter((node) => node.gate.state === 'paused');
    const coordinators = [...this.coordinators.values()];
    const action = random.integer(0, 7);
    const now = Date.now();
    // At most one data node and one coordinator down at a time: a single failure, as the promise is made for.
    if (action <= 1 && running.length === nodes.length) {
      const node = random.choice(running);
      node.kill();
      this.downSince.set(node.nodeId, now);
      this.upSince.delete(node.nodeId);
      return 'kill data node';
    }
    if (action === 2 && running.length === nodes.length) {
      const node = random.choice(running);
      node.pause();
      this.downSince.set(node.nodeId, now);
      this.upSince.delete(node.nodeId);
      // Shorter than lease_ttl (nobody notices), past it (taken over, comes back fenced), or past the request timeout.
      this.resumeAt.set(node, now + random.choice([random.integer(200, 2_000), random.integer(3_500, 8_000), random.integer(10_000, 20_000)]));
      return 'pause data node';
    }

    if (action === 4 && dead.length > 0) {
      return (await this.startDataNode(random.choice(dead).nodeId)) ? 'restart data node' : 'data node exited at start (registration failed)';
    }
    if (action === 5 && coordinators.every((coordinator) => coordinator.gate.running)) {
      random.choice(coordinators).kill();
      this.lastCoordinatorEventMs = now;
      return 'kill coordinator';
    }
    if (action === 6 && coordinators.every((coordinator) => coordinator.gate.running)) {
      const coordinator = random.choice(coordinators);
      coordinator.pause();
      this.lastCoordinatorEventMs = now;
      this.resumeAt.set(coordinator, now + random.choice([random.integer(200, 2_000), random.integer(3_500, 8_000)]));
      return 'pause coordinator';
    }
    if (action === 7) {
      const down = coordinators.filter((coordinator) => !coordinator.gate.running);
      if (down.length === 0) return null;
      const coordinator = random.choice(down);
      if (coordinator.gate.state === 'paused') return null;
      await this.startCoordinator(coordinator.replicaId);
      return 'restart coordinator';
    }
    return null;
  }

  /**
   * A bucket whose leader stopped is led elsewhere within lease_ttl + tick (+ a margin), counted from when
   * the leader stopped or the coordinators last changed (a new lease holder waits out the old lease and
   * its joining grace, 2 × lease_ttl), as long as another data node ran all that time.
   */
  checkReleads(): void {
    if (!this.oracle) return;
    const now = Date.now();
    const coordinatorsSteadyAt = this.lastCoordinatorEventMs + 2 * SIM_LEASE_TTL_MS;
    for (const bucket of [...bucketsOfTable(this.view, SIM_TABLE), ...bucketsOfTable(this.view, SIM_PK_TABLE), ...bucketsOfTable(this.view, SIM_TOPIC)]) {
      const leader = bucket.leader;
      if (leader === null) continue;
      const downSince = this.downSince.get(leader);
      if (downSince === undefined) continue;
      const from = Math.max(downSince, coordinatorsSteadyAt);
      const otherUp = [...this.upSince.entries()].some(([nodeId, since]) => nodeId !== leader && since <= from - SIM_LEASE_TTL_MS);
      if (!otherUp) continue;
      if (now - from > SIM_LEASE_TTL_MS + SIM_TICK_MS + RELEAD_MARGIN_MS) {
        throw new InvariantViolation(`bucket ${bucket.bucket} still led by ${leader} (epoch ${bucket.leaderEpoch}), down for ${now - downSince} ms (${now - from} ms since coordinators were steady)`);
      }
    }
  }

  /** Every paused process resumed, every dead one restarted. */
  async healAll(): Promise<void> {
    this.resumeAt.clear();
    for (const coordinator of [...this.coordinators.values()]) {
      if (coordinator.gate.state === 'paused') coordinator.resume();
      if (coordinator.gate.state === 'dead') await this.startCoordinator(coordinator.replicaId);
    }
    for (const node of [...this.dataNodes.values()]) {
      if (node.gate.state === 'paused') {
        node.resume();
        this.downSince.delete(node.nodeId);
        this.upSince.set(node.nodeId, Date.now());
      }
      // Faults are off by now, so a registration fails only for a cause of its own.
      if (node.gate.state === 'dead' && !(await this.startDataNode(node.nodeId))) throw new InvariantViolation(`data node ${node.nodeId} did not start once healed`);
    }
  }

  /** Every record of every bucket of `tableName`, scanned through the client from offset 0 to the high watermark. */
  private async scanAll(tableName: string, buckets: number): Promise<{ bucket: number; offset: number; row: Record<string, unknown> }[]> {
    const table = this.writers[0].client.table(tableName);
    const records: { bucket: number; offset: number; row: Record<string, unknown> }[] = [];
    for (let bucket = 0; bucket < buckets; bucket++) {
      let offset = 0;
      for (;;) {
        const page = await this.settle(table.scan({ bucket, offset, limit: 1000 }), `scanning ${tableName} bucket ${bucket} at ${offset}`);
        for (const record of page.records) records.push({ bucket, offset: record.offset, row: record.row });
        offset = page.nextOffset;
        if (offset >= page.highWatermark) break;
      }
    }
    return records;
  }

  /** Every row of the log table. */
  async readBack(): Promise<StoredRow[]> {
    const records = await this.scanAll(SIM_TABLE, BUCKETS);
    return records.map(({ bucket, offset, row }) => ({ id: Number(row.id), writer: String(row.writer), seq: Number(row.seq), bucket, offset }));
  }

  /** Every record of the Kafka topic (the topic's rows: key and value bytes). */
  async readTopic(): Promise<StoredRecord[]> {
    const records = await this.scanAll(SIM_TOPIC, TOPIC_PARTITIONS);
    return records.map(({ bucket, offset, row }) => ({ value: textOfBytes(row.value), partition: bucket, offset }));
  }

  /** The stored row of every key of the PK table (null for a key never stored), looked up through the client. */
  async lookUpKeys(keys: number): Promise<(Record<string, unknown> | null)[]> {
    const table = this.writers[0].client.table(SIM_PK_TABLE);
    const result = await this.settle(table.lookup(Array.from({ length: keys }, (_, key) => ({ k: key }))), 'looking up every key');
    return result.rows;
  }

  stopAll(): void {
    for (const process of [...this.dataNodes.values(), ...this.coordinators.values(), ...this.writers]) process.kill();
    void this.oracle?.stop();
  }
}

/** The calls a workload has sent and not seen answered. */
class CallsInFlight {
  private readonly calls = new Set<Promise<void>>();

  constructor(private readonly what: string) {}

  get size(): number {
    return this.calls.size;
  }

  add(call: Promise<void>): void {
    const tracked = call.finally(() => this.calls.delete(tracked));
    this.calls.add(tracked);
  }

  /** Moves time until every call has an answer (the client's own timeouts and retries bound it). */
  async settle(advance: Advance, limitMs = 300_000): Promise<void> {
    const deadline = Date.now() + limitMs;
    while (this.calls.size > 0) {
      if (Date.now() >= deadline) throw new InvariantViolation(`${this.calls.size} ${this.what} still unanswered after ${limitMs} ms of simulated time`);
      await advance(50);
    }
  }
}

/** The writers' appends: unique ids, each writer's calls numbered, acknowledged or not. */
class Workload {
  readonly acknowledged = new Map<number, SentRow>();
  readonly unacknowledged = new Map<number, SentRow>();
  private readonly inFlight = new CallsInFlight('appends');
  private nextId = 1;
  private readonly nextSeq: number[];

  constructor(private readonly clients: MinkClient[]) {
    this.nextSeq = clients.map(() => 1);
  }

  send(random: SimRandom): void {
    if (this.inFlight.size >= APPENDS_IN_FLIGHT_MAX) return;
    const writer = random.integer(0, this.clients.length - 1);
    const seq = this.nextSeq[writer]++;
    const rows: SentRow[] = [];
    for (let count = random.integer(1, 12); count > 0; count--) rows.push({ id: this.nextId++, writer: `w${writer}`, seq });
    const call = this.clients[writer]
      .table(SIM_TABLE)
      .append(rows)
      .then(
        () => {
          for (const row of rows) this.acknowledged.set(row.id, row);
        },
        () => {
          for (const row of rows) this.unacknowledged.set(row.id, row);
        },
      );
    this.inFlight.add(call);
  }

  settle(advance: Advance): Promise<void> {
    return this.inFlight.settle(advance);
  }
}

/**
 * The writers' puts and deletes to the PK table: each key belongs to one writer (key % writers), each call
 * carries a version that rises with every call of its writer (a put stores it in the row; a delete of a
 * key is one in five calls), so the order of a key's writes is their versions' order. Remembers, per key,
 * the versions put and deleted and the newest acknowledged write.
 */
class PutWorkload {
  readonly history = new Map<number, KeyHistory>();
  acknowledgedCalls = 0;
  private readonly inFlight = new CallsInFlight('puts and deletes');
  private readonly nextVersion: number[];

  constructor(private readonly clients: MinkClient[]) {
    this.nextVersion = clients.map(() => 1);
  }

  send(random: SimRandom): void {
    if (this.inFlight.size >= APPENDS_IN_FLIGHT_MAX) return;
    const writer = random.integer(0, this.clients.length - 1);
    const version = this.nextVersion[writer]++;
    const keys = new Set<number>();
    for (let count = random.integer(1, 4); count > 0; count--) keys.add(random.integer(0, PK_KEYS / this.clients.length - 1) * this.clients.length + writer);
    const kind = random.integer(0, 4) === 0 ? 'delete' : 'put';
    for (const key of keys) {
      const history = this.history.get(key) ?? { puts: new Set<number>(), deletes: [] };
      if (kind === 'put') history.puts.add(version);
      else history.deletes.push(version);
      this.history.set(key, history);
    }
    const table = this.clients[writer].table(SIM_PK_TABLE);
    const written = kind === 'put' ? table.put([...keys].map((k) => ({ k, v: version, writer: `w${writer}` }))) : table.delete([...keys].map((k) => ({ k })));
    const call = written.then(
      () => {
        this.acknowledgedCalls += 1;
        for (const key of keys) {
          const history = this.history.get(key)!;
          if ((history.acknowledged?.version ?? 0) < version) history.acknowledged = { version, kind };
        }
      },
      () => undefined,
    );
    this.inFlight.add(call);
  }

  settle(advance: Advance): Promise<void> {
    return this.inFlight.settle(advance);
  }
}

/**
 * The Kafka producers of the run: one that retries a batch until it is answered (librdkafka) and one that
 * gives up after a few attempts and takes its sequences back (kafkajs), each record value unique.
 */
class KafkaWorkload {
  readonly producers: SimKafkaProducer[];
  private nextValue = 1;

  constructor(run: ClusterRun, random: SimRandom, answerLost: () => number) {
    const nodes = () => run.dataNodes;
    const view = () => run.view;
    const lost = () => (this.healed ? 0 : answerLost());
    this.producers = [
      new SimKafkaProducer('kafka-retrying', 'retrying', SIM_TOPIC, TOPIC_PARTITIONS, nodes, view, random, lost),
      new SimKafkaProducer('kafka-giving-up', 'giving-up', SIM_TOPIC, TOPIC_PARTITIONS, nodes, view, random, lost),
    ];
  }

  private healed = false;

  /** No more lost answers: the batches still queued get theirs. */
  heal(): void {
    this.healed = true;
  }

  send(random: SimRandom): void {
    const producer = random.choice(this.producers);
    if (producer.inFlight >= KAFKA_BATCHES_QUEUED_MAX) return;
    // The giving-up producer's batches are all of one size, so a batch that takes a given-up one's sequences
    // back covers the very same run (kafkajs's batches of one send often are): the case that must be refused.
    const size = producer === this.producers[1] ? 3 : random.integer(1, 5);
    const values = Array.from({ length: size }, () => `${producer.name}-${this.nextValue++}`);
    producer.send(random.integer(0, TOPIC_PARTITIONS - 1), values);
  }

  /** Moves time until every queued batch is answered or given up. */
  async settle(advance: Advance, limitMs = 300_000): Promise<void> {
    const deadline = Date.now() + limitMs;
    while (this.producers.some((producer) => producer.inFlight > 0)) {
      if (Date.now() >= deadline) throw new InvariantViolation(`Kafka batches still unanswered after ${limitMs} ms of simulated time`);
      await advance(50);
    }
  }
}

/** The text of a bytes value as a scan returns it (base64 in JSON, or the bytes themselves). */
function textOfBytes(value: unknown): string {
  if (typeof value === 'string') return Buffer.from(value, 'base64').toString('utf8');
  if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8');
  throw new InvariantViolation(`a topic record's value is ${JSON.stringify(value)}, not bytes`);
}

/** Puts node:perf_hooks' clock on jest's fake clock (jest fakes the global `performance` only). */
/** Jest hooks that run each test of the enclosing block on the simulated clock (jest's modern timers, performance.now too). */
export function useSimulatedClock(): void {
  let restorePerformance: () => void = () => undefined;
  beforeEach(() => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask'] });
    restorePerformance = fakePerformanceClock();
  });
  afterEach(() => {
    restorePerformance();
    jest.clearAllTimers();
    jest.useRealTimers();
    jest.restoreAllMocks();
  });
}

export function fakePerformanceClock(): () => void {
  const fake = globalThis.performance;
  const spy = jest.spyOn(perfHooks.performance, 'now').mockImplementation(() => fake.now());
  return () => spy.mockRestore();
}
