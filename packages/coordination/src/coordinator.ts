import { performance } from 'node:perf_hooks';
import { bucketId, bucketShardOf, bucketsOfTable, getIn, lakeSettingsOf, tablesInIdOrder, type BucketLeadOutcome, type BucketToLead, type Command } from '@mink/meta';
import { Batcher, CoordinatorLease, SnapshotScheduler, purgeBeforeSeq, runLease } from '@mink/metalog';
import { assignBuckets, decideAdmission, orphanReleadsDue, planRebalance, planStreamTrims, planTieringRound, retentionPace, withEndSample, type EndSample, type Move } from '@mink/ownership';
import {
  InvalidArgumentError,
  MinkError,
  NotFoundError,
  ConflictError,
  UnavailableError,
  SUBJECTS,
  type CoordinatorRequest,
  type CreateTableResult,
  type RebalanceResult,
  type ReleadBucketsResult,
  type TieringRoundAssignment,
} from '@mink/protocol';
import { requestJson } from '@mink/transport';
import { LIMITS } from '@mink/config';
import { GarbageCollector } from '@mink/s3stream';
import type { ClusterMember, Logger, ServiceState } from '@mink/runtime';
import { Gauge, Counter } from 'prom-client';
import { checkCreateTableSpec } from './table-spec';
import { PartitionLifecycle } from './partition-lifecycle';
import { bucketsByState } from './cluster-figures';
import { moveLogLines } from './move-log';

/** A request that has already been forwarded once; a non-holder answers it with Unavailable. */
type Envelope = CoordinatorRequest & { forwarded?: boolean };

/**
 * One coordinator replica. All replicas answer coordinator actions; only the lease holder carries them
 * out (others forward to it), and only the holder runs the tick loop that re-leads orphaned buckets.
 * Every ownership change is a `LeadBucket` carrying this holder's coordinator epoch, so a holder that
 * lost the lease without noticing is refused by the log itself.
 *
 * The coordinator app (apps/coordinator) starts it (`start`: it competes for the lease) once the application is
 * bootstrapped, and stops it (`stop`: lease released, loops finished) at shutdown, after the NATS endpoints have
 * closed and before the process leaves the cluster. Its requests arrive through the app's
 * CoordinatorRequestsController (`handle`).
 */
export class Coordinator {
  private lease!: CoordinatorLease;
  private stopLease: (() => Promise<void>) | null = null;
  private tickTimer: NodeJS.Timeout | null = null;
  /** Snapshots the metadata view and purges the log below the snapshots; runs only while holding the lease. */
  private snapshotScheduler: SnapshotScheduler | null = null;
  private garbageCollector: GarbageCollector | null = null;
  /** The coordinator epoch registered after acquiring the lease; null while not holding it. */
  private epoch: number | null = null;
  /** When this replica acquired the lease (wall clock); orphans of nodes not seen since are re-led with care (releadsNow). */
  private acquiredAtMs = 0;
  /** Data nodes this replica has seen live since it took the lease. */
  private readonly seenLiveSinceAcquired = new Set<string>();
  /**
   * Data nodes seen joining (catching up with the log, or registered beyond this view) since the lease was
   * acquired and not live since, with when each last made progress (Date.now()): their buckets are held back
   * while they join (releadsNow) even while a heartbeat of theirs is late. A node loading a snapshot of
   * 100 000 buckets on a busy machine blocked its heartbeats for more than lease_ttl, and the holder gave all
   * its buckets away 25 s into its grace.
   */
  private readonly seenJoiningSinceAcquired = new Map<string, number>();
  private ticking = false;
  /**
   * The retention loop's observations of each stream's committed end, by table id and bucket id, and when
   * it last looked at each table's buckets; emptied on taking the lease.
   */
  private readonly endSamples = new Map<number, { visitedAtMs: number; samples: Map<string, EndSample[]> }>();
  private retentionTimer: NodeJS.Timeout | null = null;
  private retaining = false;
  /** When this holder last heard from the worker of each table's tiering round, by table name; emptied on taking the lease. */
  private readonly tieringHeartbeats = new Map<string, number>();
  /** True while a RegisterCoordinator of this replica is in flight. */
  private registering = false;
  /** The round being given out: rounds are given one at a time. */
  private takingRound: Promise<unknown> = Promise.resolve();
  /** Creates and drops admitted and not finished (see decideAdmission). */
  private actionsInFlight = 0;
  /** Every LeadBucket of the holder goes through here, so re-leads asked for at once share log entries. */
  private readonly leader = new Batcher<BucketToLead, BucketLeadOutcome>((buckets) => this.leadBuckets(buckets), LIMITS.leadBucketsPerCommandMax, 1, bucketShardOf);
  private readonly holderGauge: Gauge;
  private readonly releadCounter: Counter;
  private readonly gcDeletedCounter: Counter;
  private readonly gcDeletedBytesCounter: Counter;
  private readonly seenLiveGauge: Gauge;
  private readonly refusedCounter: Counter;
  private readonly partitionCounter: Counter<'action'>;
  /** Creates partitions ahead and drops those past retain; its rounds act only while this replica holds the lease. */
  private readonly partitions: PartitionLifecycle;

  constructor(
    private readonly member: ClusterMember,
    private readonly logger: Logger,
    state: ServiceState,
  ) {
    this.holderGauge = new Gauge({ name: 'mink_coordinator_lease_held', help: '1 while this replica holds the lease', registers: [state.registry] });
    this.releadCounter = new Counter({ name: 'mink_coordinator_releads_total', help: 'LeadBucket proposals for orphaned buckets', registers: [state.registry] });
    this.gcDeletedCounter = new Counter({ name: 'mink_gc_objects_deleted_total', help: 'Unreferenced objects this replica deleted from storage and the view', registers: [state.registry] });
    this.gcDeletedBytesCounter = new Counter({
      name: 'mink_gc_bytes_deleted_total',
      help: 'Bytes of the unreferenced objects this replica deleted, as far as the view knew their sizes (objects committed before sizes were kept count 0)',
      registers: [state.registry],
    });
    const coordinator = this;
    new Gauge({
      name: 'mink_coordinator_epoch',
      help: 'The coordinator epoch in the view (it rises with every lease takeover)',
      registers: [state.registry],
      collect() {
        this.set(coordinator.member.view.coordinator.epoch);
      },
    });
    new Gauge({
      name: 'mink_cluster_buckets',
      help: "Buckets of every table by state in this replica's view: open, closed (a move or failover in progress), unled, leader_dead (led by a node not live)",
      labelNames: ['state'],
      registers: [state.registry],
      collect() {
        for (const [bucketState, count] of Object.entries(bucketsByState(coordinator.member.view, coordinator.member.liveNodes()))) this.set({ state: bucketState }, count);
      },
    });
    this.seenLiveGauge = new Gauge({
      name: 'mink_coordinator_nodes_seen_live',
      help: 'Data nodes the lease holder has seen alive since it took the lease (whose buckets it re-leads as soon as they die)',
      registers: [state.registry],
    });
    this.refusedCounter = new Counter({
      name: 'mink_coordinator_admission_refused_total',
      help: 'Creates and drops answered Unavailable by admission control',
      registers: [state.registry],
    });
    this.partitionCounter = new Counter({
      name: 'mink_coordinator_partitions_total',
      help: 'Partitions this replica created ahead or dropped past retain, by action',
      labelNames: ['action'],
      registers: [state.registry],
    });
    const clockOffsetMs = member.config.partitionClockOffsetMs;
    this.partitions = new PartitionLifecycle(
      {
        view: () => this.member.view,
        actingEpoch: () => this.actingEpoch(),
        liveNodes: () => this.member.liveNodes(),
        propose: async (command) => {
          const outcome = await this.member.store.propose(command);
          // As for every proposal of the holder: a stale coordinator epoch means another replica took over.
          if (!outcome.ok && outcome.rejection.code === 'Fenced') this.stepDown('coordinator epoch fenced');
          return outcome;
        },
        planningNowMs: () => Date.now() + clockOffsetMs,
        wallNowMs: () => Date.now(),
        changed: (action) => this.partitionCounter.inc({ action: action === 'create' ? 'created' : 'dropped' }),
        logger: this.logger,
      },
      LIMITS.partitionActionsPerRoundMax,
    );
  }

  /** Competes for `lease` (by default the lease bucket of the process's NATS connection; the cluster simulation gives its own). */
  async start(lease?: CoordinatorLease): Promise<void> {
    const { nc, config } = this.member;
    this.lease = lease ?? (await CoordinatorLease.open(nc, config.nodeId, config.leaseTtlMs));
    const runner = runLease({
      lease: this.lease,
      onAcquired: () => void this.becomeHolder(),
      onLost: () => this.stepDown('lease lost'),
      onError: (error) => this.logger.warn({ err: error }, 'lease attempt failed'),
    });
    this.stopLease = runner.stop;
    this.tickTimer = setInterval(() => void this.tick(), config.coordinatorTickMs);
    this.retentionTimer = setInterval(() => void this.retain(), LIMITS.retentionIntervalMs);
    const clockOffsetMs = config.partitionClockOffsetMs;
    if (clockOffsetMs !== 0) this.logger.warn({ partitionClockOffsetMs: clockOffsetMs }, 'the partition loop plans with a clock moved by MINK_PARTITION_CLOCK_OFFSET_MS');
    this.partitions.start(LIMITS.partitionIntervalMs);
    this.logger.info({ leaseTtlMs: config.leaseTtlMs, coordinatorTickMs: config.coordinatorTickMs }, 'coordinator replica started');
  }

  /** Stops acting; the NATS endpoints have closed before (the transport closes ahead of the shutdown hooks). */
  async stop(): Promise<void> {
    if (this.tickTimer) clearInterval(this.tickTimer);
    if (this.retentionTimer) clearInterval(this.retentionTimer);
    // A snapshot or partition round in flight finishes before the connection it uses goes away.
    await this.partitions.stop();
    // The holder leaves a snapshot of the view as it is now, so the next start replays nothing behind it;
    // it still holds the lease meanwhile, so no other replica acts on a half-stopped cluster.
    await this.stopSnapshots({ final: this.actingEpoch() !== null });
    await this.stopGarbageCollection();
    // The runner releases the lease on stop, so another replica takes over at once.
    await this.stopLease?.();
    this.stepDown('stopping');
  }

  /**
   * Registers this replica, which holds the lease, as coordinator with a new coordinator epoch, then starts
   * the holder's loops. Whenever the lease is held and this replica is not the acting coordinator — its
   * registration failed (a metadata log outage), or a newer coordinator epoch fenced it (a registration of
   * another replica, or a late one of its own, that landed after it registered) — it registers again at
   * the next tick: a holder that does not act would hold the lease and do nothing, so no orphaned bucket
   * would be re-led until it lost the lease.
   */
  private async becomeHolder(): Promise<void> {
    if (this.registering) return;
    this.registering = true;
    try {
      const outcome = await this.member.store.proposeOrThrow({ type: 'RegisterCoordinator', coordinatorId: this.member.config.nodeId });
      // A lease lost meanwhile: the epoch is not this replica's to act on (the next holder registers anew).
      if (!this.lease.isHeld()) return;
      this.epoch = outcome.epoch!;
      this.acquiredAtMs = Date.now();
      this.seenLiveSinceAcquired.clear();
      this.seenJoiningSinceAcquired.clear();
      this.seenLiveGauge.set(0);
      // Rounds of the previous holder count as silent until their workers heartbeat to this one.
      this.tieringHeartbeats.clear();
      // Records count as new from now on: a new holder trims a stream one TTL after it first sees it at the earliest.
      this.endSamples.clear();
      this.holderGauge.set(1);
      this.logger.info({ coordinatorEpoch: this.epoch }, 'acquired the coordinator lease');
      this.startSnapshots();
      this.startGarbageCollection();
      // Partitions due now (a holder that was away, or a clock that moved) are created without waiting a round.
      void this.partitions.requestRound();
    } catch (error) {
      this.logger.error({ err: error }, 'could not register as coordinator; trying again at the next tick while the lease is held');
    } finally {
      this.registering = false;
    }
  }

  private stepDown(reason: string): void {
    if (this.epoch !== null) this.logger.warn({ coordinatorEpoch: this.epoch, reason }, 'no longer the coordinator');
    this.epoch = null;
    this.holderGauge.set(0);
    void this.stopSnapshots();
    void this.stopGarbageCollection();
  }

  /** docs/architecture.md §3: the holder snapshots the view every `metaSnapshotEveryCommands` entries and purges the log. */
  private startSnapshots(): void {
    if (this.snapshotScheduler || !this.lease.isHeld()) return;
    const scheduler = new SnapshotScheduler({
      store: this.member.store,
      log: this.member.log,
      snapshots: this.member.snapshots,
      everyCommands: this.member.config.metaSnapshotEveryCommands,
      // Entries a live data node still applying a burst has not reached are kept, so it tails instead of reloading.
      purgePoint: (oldestKeptSnapshotSeq) =>
        purgeBeforeSeq({
          oldestKeptSnapshotSeq,
          members: this.member.liveness.progressOfLiveNodes(this.member.view, this.member.config.leaseTtlMs),
          nowMs: performance.now(),
          stalledAfterMs: LIMITS.metaMemberStalledAfterMs,
          marginEntriesMax: LIMITS.metaPurgeMarginEntriesMax,
        }),
      onSnapshot: (round) => this.logger.info({ seq: round.seq, purgedBeforeSeq: round.purgedBeforeSeq, durationMs: round.durationMs }, 'metadata view snapshotted'),
      onError: (error) => this.logger.warn({ err: error }, 'metadata view snapshot failed'),
    });
    this.snapshotScheduler = scheduler;
    scheduler.start().catch((error: unknown) => this.logger.warn({ err: error }, 'could not start metadata view snapshots'));
  }

  /** docs/architecture.md §5: objects no slice references are deleted after a grace period, by the holder only. */
  private startGarbageCollection(): void {
    if (this.garbageCollector) return;
    const collector = new GarbageCollector({
      store: this.member.objectStore,
      meta: this.member.store,
      clock: { nowMs: () => Date.now() },
      logger: this.logger,
      onDeleted: (objects, bytes) => {
        this.gcDeletedCounter.inc(objects);
        this.gcDeletedBytesCounter.inc(bytes);
      },
    });
    this.garbageCollector = collector;
    collector.start(LIMITS.garbageCollectionIntervalMs);
  }

  private stopGarbageCollection(): Promise<void> {
    const collector = this.garbageCollector;
    this.garbageCollector = null;
    return collector?.stop() ?? Promise.resolve();
  }

  private stopSnapshots({ final = false }: { final?: boolean } = {}): Promise<void> {
    const scheduler = this.snapshotScheduler;
    this.snapshotScheduler = null;
    if (!scheduler) return Promise.resolve();
    return final ? scheduler.stopWithSnapshot() : scheduler.stop();
  }

  /** The coordinator epoch if this replica may act now, else null. */
  private actingEpoch(): number | null {
    if (this.epoch === null || !this.lease.isHeld()) return null;
    return this.epoch;
  }

  /**
   * docs/architecture.md §9, retention (lease holder only, fenced by its coordinator epoch): samples each stream's
   * committed end, and trims streams below what has been committed for longer than the table's TTL
   * (planStreamTrims; the log keeps the lake offset and a PK bucket's newest KV snapshot). The released
   * objects go to the garbage collector.
   */
  private async retain(): Promise<void> {
    const epoch = this.actingEpoch();
    if (epoch === null || this.retaining) return;
    this.retaining = true;
    try {
      const view = this.member.view;
      const nowMs = Date.now();
      const tableIds = new Set<number>();
      const visited: string[] = [];
      for (const table of tablesInIdOrder(view)) {
        const name = table.name;
        const ttlMs = lakeSettingsOf(table.properties).logTtlMs;
        if (ttlMs === null) continue;
        tableIds.add(table.id);
        const { sampleSpacingMs, visitEveryMs } = retentionPace(ttlMs, LIMITS.retentionIntervalMs, LIMITS.retentionSamplesPerTtl);
        const previous = this.endSamples.get(table.id);
        if (previous !== undefined && nowMs - previous.visitedAtMs < visitEveryMs) continue;
        // The table's current buckets only: those of a dropped partition leave with this visit.
        const samples = new Map<string, EndSample[]>();
        for (const record of bucketsOfTable(view, name)) {
          const id = bucketId(record.tableId, record.partition, record.bucket);
          samples.set(id, withEndSample(previous?.samples.get(id) ?? [], record.stream.endOffset, nowMs, sampleSpacingMs, ttlMs));
        }
        this.endSamples.set(table.id, { visitedAtMs: nowMs, samples });
        visited.push(name);
      }
      for (const id of [...this.endSamples.keys()]) if (!tableIds.has(id)) this.endSamples.delete(id);
      const trims = planStreamTrims(view, (id, tableId) => this.endSamples.get(tableId)?.samples.get(id), nowMs, visited);
      for (let start = 0; start < trims.length; start += LIMITS.trimStreamsPerCommandMax) {
        const streams = trims.slice(start, start + LIMITS.trimStreamsPerCommandMax);
        await this.member.store.proposeOrThrow({ type: 'TrimStreams', coordinatorEpoch: epoch, streams, atMs: Date.now() });
      }
      if (trims.length > 0) this.logger.info({ streams: trims.length }, 'streams trimmed to their retention');
    } catch (error) {
      this.logger.warn({ err: error }, 'retention round failed');
    } finally {
      this.retaining = false;
    }
  }

  /** docs/ownership.md §2.2 ("Node stops heartbeating"): on each tick re-lead buckets whose leader is not live. */
  private async tick(): Promise<void> {
    // A registration that landed after this replica's (another replica's, or a late one of its own) fences
    // it even when it proposes nothing; as the lease holder it registers again.
    if (this.epoch !== null && this.member.view.coordinator.epoch > this.epoch) this.stepDown('a newer coordinator epoch is in the view');
    if (this.epoch === null && this.lease.isHeld()) void this.becomeHolder();
    const epoch = this.actingEpoch();
    if (epoch === null || this.ticking) return;
    this.ticking = true;
    try {
      const live = this.member.liveNodes();
      for (const node of live) {
        this.seenLiveSinceAcquired.add(node);
        // Live now: a death from here on is an ordinary one, re-led after lease_ttl.
        this.seenJoiningSinceAcquired.delete(node);
      }
      const nowMs = Date.now();
      for (const [node, progressAgeMs] of this.member.liveness.joiningNodes(this.member.view, this.member.config.leaseTtlMs)) {
        this.seenJoiningSinceAcquired.set(node, Math.max(this.seenJoiningSinceAcquired.get(node) ?? 0, nowMs - progressAgeMs));
      }
      this.seenLiveGauge.set(this.seenLiveSinceAcquired.size);
      // Right after taking the lease (a restarting cluster), leaders not seen alive yet or still joining are
      // waited for, so their buckets are not all handed to the first node that comes up.
      const timing = {
        nowMs,
        acquiredAtMs: this.acquiredAtMs,
        leaseTtlMs: this.member.config.leaseTtlMs,
        seenLiveSinceAcquired: this.seenLiveSinceAcquired,
        joining: this.seenJoiningSinceAcquired,
        joiningGraceMs: LIMITS.coordinatorJoiningGraceMs,
        joiningStalledAfterMs: LIMITS.coordinatorJoiningStalledAfterMs,
        joiningGraceMaxMs: LIMITS.coordinatorJoiningGraceMaxMs,
      };
      const moves = orphanReleadsDue(this.member.view, live, timing);
      if (moves.length > 0) this.logger.info({ count: moves.length }, 're-leading orphaned buckets');
      await this.applyMoves(epoch, moves);
      this.releadCounter.inc(moves.length);
    } catch (error) {
      this.logger.error({ err: error }, 'coordinator tick failed');
    } finally {
      this.ticking = false;
    }
  }

  /** A coordinator action from SUBJECTS.coordinatorRpc or this replica's SUBJECTS.coordinatorDirect. */
  async handle(body: unknown): Promise<unknown> {
    const request = body as Envelope;
    // Anything may arrive on the subject: a body that is not a request is the sender's mistake, not ours.
    if (typeof request !== 'object' || request === null || typeof (request as { op?: unknown }).op !== 'string') {
      throw new InvalidArgumentError('a coordinator request must be an object with a string op');
    }
    if (request.op === 'whoHolds') return this.whoHolds();
    const epoch = this.actingEpoch();
    if (epoch === null) return this.forward(request);
    // This holder's tail of the log is paced (LIMITS.metaTailPacedIntervalMs): before deciding on tables and
    // buckets, its view catches up with everything the log holds, so it never answers from a view older
    // than the caller's (a table just dropped through a data node, say). A round's heartbeat reads only what
    // this holder wrote, and a round planned from a view up to a pace old merely tiers a little less.
    if (request.op !== 'takeTieringRound' && request.op !== 'tieringHeartbeat') await this.member.store.catchUp(LIMITS.proposeTimeoutMs);
    switch (request.op) {
      case 'createTable':
        return this.admitted(() => this.createTable(epoch, request.spec));
      case 'dropTable':
        return this.admitted(() => this.dropTable(epoch, request.name));
      case 'alterTable':
        return this.admitted(() => this.alterTable(epoch, request.name, request.properties));
      case 'deleteRecords':
        return this.admitted(() => this.deleteRecords(epoch, request));
      case 'releadBucket':
        return this.releadBucket(epoch, request);
      case 'releadBuckets':
        return this.releadBuckets(request);
      case 'rebalance':
        return this.rebalance(epoch, request.dryRun);
      case 'takeTieringRound':
        return this.takeTieringRound(epoch, request.worker);
      case 'tieringHeartbeat':
        return this.tieringHeartbeat(epoch, request);
      default:
        throw new InvalidArgumentError(`unknown coordinator action '${(request as { op?: unknown }).op}'`);
    }
  }

  /**
   * docs/architecture.md §9: gives a due tiering round to the worker asking (planTieringRound), started in the log under
   * this holder's epoch and the table's next tiering epoch. Rounds are given one at a time, so two workers
   * asking together never start the same table twice (the second would fence the first).
   */
  private takeTieringRound(epoch: number, worker: string): Promise<TieringRoundAssignment> {
    if (typeof worker !== 'string' || worker.length === 0) return Promise.reject(new InvalidArgumentError('worker must be a non-empty string'));
    const take = async (): Promise<TieringRoundAssignment> => {
      const nowMs = Date.now();
      const planned = planTieringRound(this.member.view, { nowMs, roundTimeoutMs: this.tieringRoundTimeoutMs(), heartbeatAtMs: this.tieringHeartbeats });
      if (planned === null) return { round: null };
      const { table, ranges } = planned;
      const outcome = await this.member.store.proposeOrThrow({ type: 'StartTieringRound', coordinatorEpoch: epoch, table: table.name, tableId: table.id, worker, ranges, atMs: nowMs });
      this.tieringHeartbeats.set(table.name, nowMs);
      this.logger.info({ table: table.name, tieringEpoch: outcome.tieringEpoch, worker, buckets: ranges.length }, 'tiering round started');
      return { round: { table: table.name, tableId: table.id, tieringEpoch: outcome.tieringEpoch!, coordinatorEpoch: epoch, ranges, metadataKey: table.lake?.metadataKey ?? null } };
    };
    const taken = this.takingRound.then(take, take);
    this.takingRound = taken.catch(() => undefined);
    return taken;
  }

  /** A round's worker is alive: noted while the round is the table's current one under this holder's epoch, else Fenced. */
  private tieringHeartbeat(epoch: number, request: { table: string; tieringEpoch: number; coordinatorEpoch: number }): Record<string, never> {
    if (request.coordinatorEpoch !== epoch) throw new MinkError('Fenced', `coordinator epoch ${request.coordinatorEpoch} is not the holder's ${epoch}: the round must be taken again`);
    const round = getIn(this.member.view.tables, request.table)?.lake?.round;
    if (!round || round.epoch !== request.tieringEpoch) {
      throw new MinkError('Fenced', `tiering epoch ${request.tieringEpoch} of '${request.table}' is not the round in progress (${round ? `epoch ${round.epoch} is` : 'none is'})`);
    }
    this.tieringHeartbeats.set(request.table, Date.now());
    return {};
  }

  /** How long a round's worker may stay silent before its round goes to another: a lease, like a node's. */
  private tieringRoundTimeoutMs(): number {
    return this.member.config.leaseTtlMs;
  }

  /**
   * Runs a create or drop if admission lets it (bounded actions in flight, data nodes not far behind the
   * log); otherwise answers Unavailable with a Retry-After so the caller comes back later.
   */
  private async admitted<T>(action: () => Promise<T>): Promise<T> {
    const decision = decideAdmission({
      inFlight: this.actionsInFlight,
      inFlightMax: LIMITS.coordinatorActionsInFlightMax,
      appliedSeq: this.member.view.seq,
      memberAppliedSeqs: this.member.liveness.progressOfLiveNodes(this.member.view, this.member.config.leaseTtlMs).map((progress) => progress.appliedSeq),
      memberLagEntriesMax: LIMITS.coordinatorAdmissionLagEntriesMax,
      retryAfterMs: LIMITS.coordinatorRetryAfterMs,
    });
    if (!decision.admit) {
      this.refusedCounter.inc();
      throw new UnavailableError(decision.reason, decision.retryAfterMs);
    }
    this.actionsInFlight += 1;
    try {
      return await action();
    } catch (error) {
      // This replica's epoch was fenced by a newer holder: the log refused the entry, so nothing was done, and
      // the caller may ask again (the new holder answers). Not the caller's conflict, as a 409 would say.
      if (error instanceof MinkError && error.code === 'Fenced') {
        throw new UnavailableError(`the coordinator changed while this request was decided, and nothing was done; ask again (${error.message})`, LIMITS.coordinatorRetryAfterMs);
      }
      throw error;
    } finally {
      this.actionsInFlight -= 1;
    }
  }

  private whoHolds(): { coordinatorId: string; epoch: number } {
    const { coordinator } = this.member.view;
    if (!coordinator.node) throw new UnavailableError('no coordinator has registered yet');
    return { coordinatorId: coordinator.node, epoch: coordinator.epoch };
  }

  /** docs/ownership.md §6.4 ("Coordinator action on a non-leader node: forwarded to the lease holder"). */
  private async forward(request: Envelope): Promise<unknown> {
    const holder = this.member.view.coordinator.node;
    if (request.forwarded || !holder || holder === this.member.config.nodeId) {
      throw new UnavailableError('no coordinator holds the lease right now', 500);
    }
    return requestJson(this.member.nc, SUBJECTS.coordinatorDirect(holder), { ...request, forwarded: true });
  }

  private async createTable(epoch: number, input: unknown): Promise<CreateTableResult & { metaSeq: number }> {
    const spec = checkCreateTableSpec(input);
    if (getIn(this.member.view.tables, spec.name)) throw new ConflictError(`table '${spec.name}' already exists`);
    const live = [...this.member.liveNodes()];
    if (live.length === 0) throw new UnavailableError('no live data node to lead the new table', 1000);
    const nowMs = Date.now();
    // docs/ownership.md §2.1 ("Table or partition created"): bucket i goes to live node (i + start) % n. The assignment travels
    // in the CreateTable entry itself (leader epoch 1 for each bucket), not as one LeadBucket per bucket.
    const leaders = spec.partition ? undefined : assignBuckets(spec.buckets, live, nowMs);
    const created = await this.propose({ type: 'CreateTable', coordinatorEpoch: epoch, spec, createdAtMs: nowMs, ...(leaders ? { leaders } : {}) });
    const tableId = created.tableId!;
    const table = getIn(this.member.view.tables, spec.name);
    const results = (leaders ?? []).map((leader, bucket) => {
      const record = table ? getIn(this.member.view.buckets, bucketId(table.id, null, bucket)) : undefined;
      return { bucket, partition: null, leader, leaderEpoch: record?.leaderEpoch ?? 1 };
    });
    this.logger.info({ table: spec.name, tableId, buckets: spec.buckets }, 'table created');
    // A partitioned table gets its current partition and those ahead before the create is answered, so a
    // write right after it finds them (the round never rejects: a failure is logged and the loop retries).
    if (spec.partition) await this.partitions.requestRound();
    return { tableId, name: spec.name, leaders: results, metaSeq: this.member.view.seq };
  }

  private async dropTable(epoch: number, name: string): Promise<{ tableId: number; metaSeq: number }> {
    if (typeof name !== 'string' || !getIn(this.member.view.tables, name)) throw new NotFoundError(`table '${name}' does not exist`);
    const outcome = await this.propose({ type: 'DropTable', coordinatorEpoch: epoch, name, atMs: Date.now() });
    this.logger.info({ table: name }, 'table dropped');
    return { tableId: outcome.tableId!, metaSeq: this.member.view.seq };
  }

  /** The alterable properties of a table (AlterTable checks which and their values). */
  private async alterTable(epoch: number, name: string, properties: Record<string, string | null>): Promise<{ metaSeq: number }> {
    if (typeof name !== 'string' || !getIn(this.member.view.tables, name)) throw new NotFoundError(`table '${name}' does not exist`);
    if (typeof properties !== 'object' || properties === null || Array.isArray(properties)) throw new InvalidArgumentError('properties must be an object of strings (or null to remove one)');
    await this.propose({ type: 'AlterTable', coordinatorEpoch: epoch, name, properties });
    this.logger.info({ table: name, properties }, 'table altered');
    return { metaSeq: this.member.view.seq };
  }

  /** Kafka's DeleteRecords on one bucket: proposes DeleteRecords and answers the stream's start after it. */
  private async deleteRecords(epoch: number, request: Extract<CoordinatorRequest, { op: 'deleteRecords' }>): Promise<{ startOffset: number; metaSeq: number }> {
    const { table: name, bucket, offset } = request;
    const table = typeof name === 'string' ? getIn(this.member.view.tables, name) : undefined;
    if (!table) throw new NotFoundError(`table '${name}' does not exist`);
    if (!Number.isSafeInteger(bucket) || bucket < 0 || bucket >= table.buckets || table.partition) throw new NotFoundError(`bucket ${bucket} of table '${name}' does not exist`);
    if (!Number.isSafeInteger(offset) || offset < -1) throw new InvalidArgumentError(`offset must be -1 (the high watermark) or a non-negative integer, not ${offset}`);
    const id = bucketId(table.id, null, bucket);
    const record = getIn(this.member.view.buckets, id);
    if (!record) throw new NotFoundError(`bucket ${bucket} of table '${name}' does not exist`);
    const startOffset = offset === -1 ? record.stream.endOffset : offset;
    await this.propose({ type: 'DeleteRecords', coordinatorEpoch: epoch, tableId: table.id, partition: null, bucket, startOffset, atMs: Date.now() });
    const after = getIn(this.member.view.buckets, id);
    this.logger.info({ table: name, bucket, startOffset: after?.stream.startOffset }, 'records deleted below an offset');
    return { startOffset: after?.stream.startOffset ?? startOffset, metaSeq: this.member.view.seq };
  }

  private async releadBucket(epoch: number, request: Extract<CoordinatorRequest, { op: 'releadBucket' }>): Promise<{ leaderEpoch: number; metaSeq: number }> {
    const outcome = await this.propose({
      type: 'LeadBucket',
      coordinatorEpoch: epoch,
      tableId: request.tableId,
      partition: request.partition,
      bucket: request.bucket,
      leader: request.to,
      expectedLeaderEpoch: request.expectedLeaderEpoch,
    });
    return { leaderEpoch: outcome.leaderEpoch!, metaSeq: this.member.view.seq };
  }

  /** A restarted data node's re-leads, gathered with any other LeadBucket of this turn into LeadBuckets entries. */
  private async releadBuckets(request: Extract<CoordinatorRequest, { op: 'releadBuckets' }>): Promise<ReleadBucketsResult> {
    if (typeof request.to !== 'string' || !Array.isArray(request.buckets) || request.buckets.length > LIMITS.leadBucketsPerCommandMax * 16) {
      throw new InvalidArgumentError('releadBuckets needs {to: node id, buckets: [{tableId, partition, bucket, expectedLeaderEpoch}]}');
    }
    const led = await Promise.all(
      request.buckets.map((bucket) =>
        this.leader.submit({
          tableId: bucket.tableId,
          partition: bucket.partition,
          bucket: bucket.bucket,
          leader: request.to,
          expectedLeaderEpoch: bucket.expectedLeaderEpoch,
        }),
      ),
    );
    return {
      led: led.map((outcome) => (outcome.ok ? outcome : { ok: false as const, code: outcome.rejection.code, message: outcome.rejection.message })),
      metaSeq: this.member.view.seq,
    };
  }

  /** One LeadBuckets entry for the buckets gathered by `leader`, under the epoch this replica acts with now. */
  private async leadBuckets(buckets: BucketToLead[]): Promise<BucketLeadOutcome[]> {
    const epoch = this.actingEpoch();
    if (epoch === null) throw new UnavailableError('this replica no longer holds the coordinator lease', LIMITS.coordinatorRetryAfterMs);
    const outcome = await this.propose({ type: 'LeadBuckets', coordinatorEpoch: epoch, buckets }, { timeoutMs: LIMITS.syncProposeTimeoutMs });
    return outcome.led!;
  }

  /** `mink cluster rebalance`: orphans first, then from loaded nodes to idle ones, one LeadBucket per move. */
  private async rebalance(epoch: number, dryRun: boolean): Promise<RebalanceResult & { metaSeq: number }> {
    const moves = planRebalance(this.member.view, this.member.liveNodes());
    if (!dryRun) await this.applyMoves(epoch, moves);
    return {
      dryRun,
      moves: moves.map((move) => ({ table: move.table, ...(move.partition !== null ? { partition: move.partition } : {}), bucket: move.bucket, from: move.from, to: move.to })),
      metaSeq: this.member.view.seq,
    };
  }

  /** Every move as a LeadBucket conditional on the leader epoch the plan saw, gathered into LeadBuckets entries. */
  private async applyMoves(_epoch: number, moves: Move[]): Promise<void> {
    const outcomes = await Promise.all(
      moves.map((move) =>
        this.leader
          .submit({ tableId: move.tableId, partition: move.partition, bucket: move.bucket, leader: move.to, expectedLeaderEpoch: move.expectedLeaderEpoch })
          .then(
            (outcome) => ({ move, outcome }),
            (error: unknown) => ({ move, error }),
          ),
      ),
    );
    for (const line of moveLogLines(outcomes)) this.logger[line.level](line.fields, line.msg);
  }

  private async propose(command: Command, options: { timeoutMs?: number } = {}) {
    try {
      return await this.member.store.proposeOrThrow(command, options);
    } catch (error) {
      if (error instanceof MinkError && error.code === 'Fenced') this.stepDown('coordinator epoch fenced');
      throw error;
    }
  }
}
