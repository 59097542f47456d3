import pino, { type Logger } from 'pino';
import { Registry } from 'prom-client';
import { readServiceConfig, type ServiceConfig } from '@mink/config';
import { Coordinator } from '@mink/coordination';
import { BucketSyncMetrics, DataNodeKafkaBackend, Incarnation, notRegistered, type IncarnationContext } from '@mink/data-plane';
import { kafkaBroker, type KafkaFrameHandler } from '@mink/kafka';
import { MinkClient } from '@mink/client';
import { CoordinatorLease, Heartbeater, LivenessTracker, MetaStore, ViewSnapshots } from '@mink/metalog';
import { SUBJECTS } from '@mink/protocol';
import type { ClusterMember, ServiceState } from '@mink/runtime';
import { InMemoryObjectStore, StreamReader } from '@mink/s3stream';
import { InMemoryMetaLog } from '@mink/testing';
import { serveJson } from '@mink/transport';
import { InMemoryKvBucket } from './in-memory-kv';
import { ProcessGate } from './process-gate';
import { SimBus, type SimConnection } from './sim-bus';
import { GatedMetaLog, NO_STORAGE_FAULTS, SimObjectStore, type StorageFaults } from './sim-ports';
import type { SimRandom } from './sim-random';
import { IN_MEMORY_TABLETS } from './sim-tablets';

/** Timings of the simulated cluster: those of the fault tests on real processes (lease 3 s, tick 0.5 s). */
export const SIM_LEASE_TTL_MS = 3_000;
export const SIM_TICK_MS = 500;
/** The longest one-way trip of a metadata log append when the log is healthy. */
export const SIM_LOG_LATENCY_MS_MAX = 5;

/** The shared world every simulated process reaches through its own gate: log, buckets, storage, bus. */
export class SimWorld {
  readonly log = new InMemoryMetaLog();
  readonly heartbeats = new InMemoryKvBucket('mink_heartbeats');
  readonly lease = new InMemoryKvBucket('mink_lease');
  readonly snapshotPointers = new InMemoryKvBucket('mink_snapshots');
  readonly objects = new InMemoryObjectStore({ nowMs: () => Date.now() });
  readonly bus: SimBus;
  storageFaults: StorageFaults = NO_STORAGE_FAULTS;
  /** Storage calls failed by `storageFaults` so far. */
  storageFailures = 0;
  /** The longest one-way trip of a metadata log append (JetStream publish); a stall raises it for a while. */
  logLatencyMsMax = SIM_LOG_LATENCY_MS_MAX;
  /** Every process's log lines, newest last, to print when a seed fails. */
  readonly logLines: string[] = [];

  constructor(readonly random: SimRandom) {
    this.bus = new SimBus(random);
  }

  config(nodeId: string): ServiceConfig {
    return readServiceConfig({
      MINK_NODE_ID: nodeId,
      MINK_LEASE_TTL_MS: String(SIM_LEASE_TTL_MS),
      MINK_COORDINATOR_TICK_MS: String(SIM_TICK_MS),
      // No metadata snapshots: the in-memory log is never purged.
      MINK_META_SNAPSHOT_EVERY: String(1_000_000_000),
      // KV snapshots of PK buckets every few seconds, so a run restores from snapshots plus replays.
      MINK_KV_SNAPSHOT_INTERVAL: '4s',
    });
  }

  logger(name: string): Logger {
    return pino(
      { level: 'info', base: { process: name }, timestamp: () => `,"t":${Date.now()}` },
      { write: (line: string) => void this.logLines.push(line.trimEnd()) },
    );
  }

  /** The log as process `gate` reaches it: each append takes 1–`logLatencyMsMax` ms each way. */
  metaLog(gate: ProcessGate): GatedMetaLog {
    return new GatedMetaLog(this.log, gate, () => this.random.integer(1, this.logLatencyMsMax));
  }

  objectStore(gate: ProcessGate): SimObjectStore {
    return new SimObjectStore(this.objects, gate, this.random, () => this.storageFaults, () => (this.storageFailures += 1));
  }

  /** A name for a process's tablets: they live in memory (IN_MEMORY_TABLETS), so nothing is written there. */
  tabletsDirOf(name: string): string {
    return `/simulated/${name}/kv`;
  }

}

/** What every simulated service has: a gate, a bus connection and its own copy of the view. */
abstract class SimProcess {
  readonly gate: ProcessGate;
  readonly connection: SimConnection;
  protected readonly logger: Logger;

  constructor(
    protected readonly world: SimWorld,
    readonly name: string,
  ) {
    this.gate = new ProcessGate(name);
    this.connection = world.bus.connection(this.gate);
    this.logger = world.logger(name);
  }

  /** kill -9: nothing it started completes, nothing reaches it. */
  kill(): void {
    this.gate.kill();
    this.connection.close();
  }

  pause(): void {
    this.gate.pause();
  }

  resume(): void {
    this.gate.resume();
  }

  /**
   * What ClusterMember.join gives a service, over the simulated ports: its own copy of the view (caught up
   * with the log), its liveness tracker, the log, the snapshots and the object store as this process
   * reaches them.
   */
  protected async join(config: ServiceConfig): Promise<ClusterMember> {
    const store = await MetaStore.open(this.world.metaLog(this.gate));
    await store.start();
    await store.catchUp(60_000);
    const liveness = await LivenessTracker.over(this.world.heartbeats.as(this.gate));
    const objectStore = this.world.objectStore(this.gate);
    return {
      nc: this.connection.asNats(),
      store,
      liveness,
      config,
      objectStore,
      log: this.world.metaLog(this.gate),
      snapshots: new ViewSnapshots({ store: objectStore, kv: this.world.snapshotPointers.as(this.gate) }),
      get view() {
        return store.view;
      },
      liveNodes: () => liveness.liveNodes(store.view, config.leaseTtlMs),
    } as unknown as ClusterMember;
  }
}

/**
 * A data node as apps/data-node runs it: heartbeats from joining (epoch 0), its copy of the view, then
 * incarnations (`Incarnation.begin`, the production code) that serve the node's subjects; a fenced
 * incarnation is abandoned and a new one registered, as DataNode does.
 */
export class SimDataNode extends SimProcess {
  private incarnation: Incarnation | null = null;
  private reincarnating = false;
  private context: IncarnationContext | null = null;
  member: ClusterMember | null = null;
  /** The node's Kafka broker (production handlers over `DataNodeKafkaBackend`), as its listener serves it. */
  kafka: KafkaFrameHandler | null = null;

  constructor(
    world: SimWorld,
    readonly nodeId: string,
    readonly life: number,
  ) {
    super(world, `data-node-${nodeId}#${life}`);
  }

  async start(): Promise<void> {
    const config = this.world.config(this.nodeId);
    const heartbeater = new Heartbeater(this.world.heartbeats.as(this.gate), (error) => this.logger.warn({ err: error }, 'heartbeat failed'));
    await heartbeater.start(this.nodeId, 'data-node', 0, Math.floor(config.leaseTtlMs / 5));
    const member = await this.join(config);
    const { store, objectStore } = member;
    this.member = member;
    heartbeater.trackLease(config.leaseTtlMs * (1 - 1 / 5));
    heartbeater.reportAppliedSeq(() => store.view.seq);
    const state = { registry: new Registry() } as ServiceState;
    this.context = {
      member,
      config,
      logger: this.logger,
      heartbeater,
      objectStore,
      reader: new StreamReader({ store: objectStore, meta: store }),
      metrics: new BucketSyncMetrics(state),
      httpPort: 0,
      tabletsDir: this.world.tabletsDirOf(this.name),
      tablets: IN_MEMORY_TABLETS,
    };
    const handle = (body: unknown) => (this.incarnation ? this.incarnation.handle(body) : notRegistered(this.nodeId));
    this.incarnation = await Incarnation.begin(this.context);
    this.kafka = kafkaBroker(new DataNodeKafkaBackend(member, MinkClient.over(this.connection.asNats(), { scanOverHttp: false }), config, () => this.incarnation?.data ?? null, this.logger));
    store.onApplied(() => this.checkFenced());
    const onError = (error: unknown) => this.logger.error({ err: error }, 'node request failed');
    serveJson(member.nc, SUBJECTS.nodeRpc(SUBJECTS.nodeAddress(this.nodeId)), handle, { onError });
    serveJson(member.nc, SUBJECTS.anyNodeRpc, handle, { queue: SUBJECTS.nodesQueue, onError });
  }

  private checkFenced(): void {
    const fenced = this.incarnation;
    if (this.reincarnating || !this.member || !fenced?.isFenced(this.member, this.nodeId)) return;
    this.reincarnating = true;
    this.incarnation = null;
    this.logger.warn({ nodeEpoch: fenced.nodeEpoch }, 'this incarnation was fenced by a takeover; registering a new one');
    void (async () => {
      try {
        await fenced.abandon();
        this.incarnation = await Incarnation.begin(this.context!);
      } catch (error) {
        // As the real data node: a new incarnation that cannot register ends the process.
        this.logger.fatal({ err: error }, 'could not register a new incarnation');
        this.kill();
      } finally {
        this.reincarnating = false;
      }
    })();
  }
}

/** A coordinator replica: the production Coordinator over the simulated lease bucket, log and storage. */
export class SimCoordinator extends SimProcess {
  private coordinator: Coordinator | null = null;

  constructor(
    world: SimWorld,
    readonly replicaId: string,
    readonly life: number,
  ) {
    super(world, `coordinator-${replicaId}#${life}`);
  }

  async start(): Promise<void> {
    const config = this.world.config(this.replicaId);
    const member = await this.join(config);
    const coordinator = new Coordinator(member, this.logger, { registry: new Registry() } as ServiceState);
    this.coordinator = coordinator;
    await coordinator.start(new CoordinatorLease(this.world.lease.as(this.gate), this.replicaId, config.leaseTtlMs));
    const onError = (error: unknown) => this.logger.error({ err: error }, 'coordinator request failed');
    serveJson(member.nc, SUBJECTS.coordinatorRpc, (body) => coordinator.handle(body), { queue: SUBJECTS.coordinatorQueue, onError });
    serveJson(member.nc, SUBJECTS.coordinatorDirect(this.replicaId), (body) => coordinator.handle(body), { onError });
  }
}

/** A client process (the producer of the workload): the production MinkClient over the bus. It never fails. */
export class SimClient extends SimProcess {
  readonly client: MinkClient;

  constructor(world: SimWorld, name: string) {
    super(world, name);
    this.client = MinkClient.over(this.connection.asNats(), { scanOverHttp: false });
  }
}
