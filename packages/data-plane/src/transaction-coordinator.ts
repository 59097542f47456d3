import { LIMITS } from '@mink/config';
import type { MinkClient } from '@mink/client';
import { bucketId, getIn, type TableRecord, type TableSpec } from '@mink/meta';
import { MinkError, UnavailableError } from '@mink/protocol';
import { bucketOfRow } from '@mink/records';
import {
  ERROR_CODES,
  addOffsetsTransition,
  addPartitionsTransition,
  completeTransition,
  endTxnTransition,
  initProducerIdTransition,
  needsProducerId,
  timeoutTransition,
  txnOffsetCommitTransition,
  type PendingOffset,
  type TopicPartition,
  type TransactionState,
  type TransactionTransition,
} from '@mink/kafka';
import type { ClusterMember, Logger } from '@mink/runtime';
import type { DataPlane } from './data-plane';

/**
 * The primary-key table of Kafka transactional ids' state (issue 40 item 2): one row per id, its state as
 * JSON (`TransactionState`), keyed by a shard of the id so that a coordinator can list the ids of a bucket
 * it has just taken over. An id's transaction coordinator is the leader of its shard's bucket, so
 * coordinators move with failover like any bucket, and the state is as durable as any PK write.
 */
export const TRANSACTIONS_TABLE = '__transaction_state';
const TRANSACTIONS_BUCKET_KEY = ['shard'];
const TRANSACTIONS_TABLE_SPEC: TableSpec = {
  name: TRANSACTIONS_TABLE,
  columns: [
    { name: 'shard', type: 'int32' },
    { name: 'transactional_id', type: 'string' },
    { name: 'state', type: 'string' },
  ],
  primaryKey: ['shard', 'transactional_id'],
  bucketKey: TRANSACTIONS_BUCKET_KEY,
  buckets: LIMITS.kafkaTransactionBuckets,
};

/** The shard of a transactional id: FNV-1a of its UTF-8 bytes, modulo `LIMITS.kafkaTransactionShards`. */
export function transactionShardOf(transactionalId: string): number {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(transactionalId)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % LIMITS.kafkaTransactionShards;
}

/** The bucket of `__transaction_state` a shard's rows live in. */
function bucketOfShard(table: TableRecord, shard: number): number {
  return bucketOfRow({ shard }, TRANSACTIONS_BUCKET_KEY, table.buckets);
}

/** Where an id's transaction coordinator is: here, at another node (by node id), or nowhere yet. */
export type TransactionCoordinatorPlace = { kind: 'here' } | { kind: 'elsewhere'; leader: string } | { kind: 'unavailable'; reason: string };

/** What the transaction APIs answer: a Kafka error code, and for InitProducerId the producer's id and epoch. */
export interface TransactionAnswer {
  errorCode: number;
  producerId?: number;
  producerEpoch?: number;
}

/** The Kafka topic-partitions and consumer offsets a transaction coordinator writes, where they are led. */
export interface TransactionOutcomeWriter {
  /** Writes a transaction marker to one partition at its leader; resolves once it is committed. */
  marker(partition: TopicPartition, marker: { producerId: number; producerEpoch: number; commit: boolean; coordinatorEpoch: number }): Promise<void>;
  /** Stores a committed transaction's consumer offsets (puts to the offsets table), durably. */
  offsets(offsets: readonly PendingOffset[]): Promise<void>;
}

/**
 * A data node's transaction coordinator for the transactional ids whose bucket of `__transaction_state` it
 * leads (Kafka's TransactionCoordinator, the decisions in @mink/kafka's transaction-state.ts). Each request
 * of an id runs alone (a lock per id): its state is read, the transition decided, the next state stored
 * durably, and only then is the request answered. A transaction that reaches PrepareCommit or PrepareAbort
 * is completed afterwards: its markers are written to every partition of it (and a commit's offsets
 * stored), then CompleteCommit or CompleteAbort is stored. A sweep every `kafkaTransactionSweepMs` completes
 * what a previous coordinator left in Prepare (after its node died) and aborts transactions open past their
 * timeout; a marker written twice is harmless (the partition finds no transaction open).
 */
export class TransactionCoordinator {
  private readonly locks = new Map<string, Promise<unknown>>();
  private sweepTimer: NodeJS.Timeout | undefined;
  private creatingTable: Promise<void> | null = null;

  constructor(
    private readonly member: ClusterMember,
    private readonly client: MinkClient,
    private readonly nodeId: string,
    private readonly dataPlane: () => DataPlane | null,
    private readonly outcomes: TransactionOutcomeWriter,
    private readonly logger: Logger,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /** Starts the sweep (completing and timing out transactions of the buckets led here). */
  start(): void {
    if (this.sweepTimer) return;
    this.sweepTimer = setInterval(() => void this.sweep(), LIMITS.kafkaTransactionSweepMs);
    this.sweepTimer.unref();
  }

  stop(): void {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
  }

  /** Where a transactional id's coordinator is; the first request of any id creates the state table. */
  place(transactionalId: string): TransactionCoordinatorPlace {
    const view = this.member.view;
    const table = getIn(view.tables, TRANSACTIONS_TABLE);
    if (!table) {
      this.createTable();
      return { kind: 'unavailable', reason: `the transaction state table ${TRANSACTIONS_TABLE} is being created` };
    }
    const bucket = bucketOfShard(table, transactionShardOf(transactionalId));
    const record = getIn(view.buckets, bucketId(table.id, null, bucket));
    if (!record?.leader) return { kind: 'unavailable', reason: `bucket ${bucket} of ${TRANSACTIONS_TABLE} has no leader yet` };
    if (record.leader !== this.nodeId) return { kind: 'elsewhere', leader: record.leader };
    if (!this.dataPlane()?.serves(TRANSACTIONS_TABLE, bucket)) return { kind: 'unavailable', reason: `bucket ${bucket} of ${TRANSACTIONS_TABLE} is opening here` };
    return { kind: 'here' };
  }

  /** InitProducerId with a transactional id. */
  initProducerId(transactionalId: string, timeoutMs: number): Promise<TransactionAnswer> {
    return this.locked(transactionalId, async () => {
      const current = this.load(transactionalId);
      const fresh = needsProducerId(current) ? await this.allocateProducerId() : null;
      const transition = initProducerIdTransition(current, transactionalId, timeoutMs, this.nowMs(), fresh);
      await this.apply(transition);
      if (transition.refusal) return { errorCode: transition.refusal.errorCode };
      return { errorCode: ERROR_CODES.NONE, producerId: transition.next!.producerId, producerEpoch: transition.next!.producerEpoch };
    });
  }

  addPartitions(transactionalId: string, producerId: number, producerEpoch: number, partitions: readonly TopicPartition[]): Promise<TransactionAnswer> {
    return this.decide(transactionalId, (current, nowMs) => addPartitionsTransition(current, transactionalId, producerId, producerEpoch, partitions, nowMs));
  }

  addOffsets(transactionalId: string, producerId: number, producerEpoch: number, group: string): Promise<TransactionAnswer> {
    return this.decide(transactionalId, (current, nowMs) => addOffsetsTransition(current, transactionalId, producerId, producerEpoch, group, nowMs));
  }

  txnOffsets(transactionalId: string, producerId: number, producerEpoch: number, offsets: readonly PendingOffset[]): Promise<TransactionAnswer> {
    return this.decide(transactionalId, (current, nowMs) => txnOffsetCommitTransition(current, transactionalId, producerId, producerEpoch, offsets, nowMs));
  }

  endTxn(transactionalId: string, producerId: number, producerEpoch: number, commit: boolean): Promise<TransactionAnswer> {
    return this.decide(transactionalId, (current, nowMs) => endTxnTransition(current, transactionalId, producerId, producerEpoch, commit, nowMs));
  }

  /** One request of an id: decided on its stored state, the next state stored before the answer. */
  private decide(transactionalId: string, transition: (current: TransactionState | null, nowMs: number) => TransactionTransition): Promise<TransactionAnswer> {
    return this.locked(transactionalId, async () => {
      const decided = transition(this.load(transactionalId), this.nowMs());
      await this.apply(decided);
      return { errorCode: decided.refusal?.errorCode ?? ERROR_CODES.NONE };
    });
  }

  /** Stores a transition's next state, and starts completing it when it is to be completed. */
  private async apply(transition: TransactionTransition): Promise<void> {
    const next = transition.next;
    if (!next) return;
    await this.store(next);
    if (next.state === 'PrepareCommit' || next.state === 'PrepareAbort') void this.complete(next.transactionalId);
  }

  /**
   * Writes the markers of an id's transaction in Prepare (and a commit's offsets), then stores its
   * completion. Runs under the id's lock; a failure leaves it in Prepare for the next sweep.
   */
  private complete(transactionalId: string): Promise<void> {
    return this.locked(transactionalId, async () => {
      const state = this.load(transactionalId);
      if (!state || (state.state !== 'PrepareCommit' && state.state !== 'PrepareAbort')) return;
      const commit = state.state === 'PrepareCommit';
      const marker = { producerId: state.producerId, producerEpoch: state.producerEpoch, commit, coordinatorEpoch: this.coordinatorEpochOf(transactionalId) };
      await Promise.all(state.partitions.map((partition) => this.outcomes.marker(partition, marker)));
      if (commit && state.pendingOffsets.length > 0) await this.outcomes.offsets(state.pendingOffsets);
      await this.store(completeTransition(state, this.nowMs()));
    }).catch((error: unknown) => {
      this.logger.warn({ err: error, transactionalId }, 'could not complete a transaction yet; the sweep tries again');
    });
  }

  /** Completes what is in Prepare and aborts what is open past its timeout, for the buckets led here. */
  private async sweep(): Promise<void> {
    const data = this.dataPlane();
    const table = getIn(this.member.view.tables, TRANSACTIONS_TABLE);
    if (!data || !table) return;
    for (let shard = 0; shard < LIMITS.kafkaTransactionShards; shard++) {
      const bucket = bucketOfShard(table, shard);
      if (!data.serves(TRANSACTIONS_TABLE, bucket)) continue;
      let rows: Record<string, unknown>[];
      try {
        rows = data.prefixLookup({ op: 'prefixLookup', table: TRANSACTIONS_TABLE, tableId: table.id, partition: null, bucket, prefixes: [{ shard }] }).results[0]!.rows;
      } catch {
        continue;
      }
      for (const row of rows) {
        const state = JSON.parse(String(row.state)) as TransactionState;
        if (state.state === 'PrepareCommit' || state.state === 'PrepareAbort') void this.complete(state.transactionalId);
        else if (timeoutTransition(state, this.nowMs())) void this.abortTimedOut(state.transactionalId);
      }
    }
  }

  private abortTimedOut(transactionalId: string): Promise<void> {
    return this.locked(transactionalId, async () => {
      const current = this.load(transactionalId);
      const next = current && timeoutTransition(current, this.nowMs());
      if (!next) return;
      this.logger.info({ transactionalId, producerId: next.producerId, timeoutMs: next.timeoutMs }, 'aborting a transaction open past its timeout');
      await this.apply({ next });
    }).catch((error: unknown) => this.logger.warn({ err: error, transactionalId }, 'could not abort a timed-out transaction yet'));
  }

  /** The stored state of an id, read from the bucket led here (throws Unavailable when it is not). */
  private load(transactionalId: string): TransactionState | null {
    const { data, address } = this.bucketOf(transactionalId);
    const [row] = data.lookup({ op: 'lookup', ...address, keys: [{ shard: transactionShardOf(transactionalId), transactional_id: transactionalId }] }).rows;
    return row ? (JSON.parse(String(row.state)) as TransactionState) : null;
  }

  /** Stores an id's state durably (a put to its bucket, answered once committed). */
  private async store(state: TransactionState): Promise<void> {
    const { data, address } = this.bucketOf(state.transactionalId);
    await data.put({ op: 'put', ...address, rows: [{ shard: transactionShardOf(state.transactionalId), transactional_id: state.transactionalId, state: JSON.stringify(state) }] });
  }

  private bucketOf(transactionalId: string) {
    const table = getIn(this.member.view.tables, TRANSACTIONS_TABLE);
    const data = this.dataPlane();
    if (!table || !data) throw new UnavailableError(`the transaction state of '${transactionalId}' is not served here yet`);
    const bucket = bucketOfShard(table, transactionShardOf(transactionalId));
    return { data, address: { table: TRANSACTIONS_TABLE, tableId: table.id, partition: null, bucket } };
  }

  /** The bucket of `__transaction_state` holding an id's state (the table must exist). */
  bucketOfId(transactionalId: string): number {
    const table = getIn(this.member.view.tables, TRANSACTIONS_TABLE);
    if (!table) throw new UnavailableError(`the transaction state table ${TRANSACTIONS_TABLE} does not exist yet`);
    return bucketOfShard(table, transactionShardOf(transactionalId));
  }

  /** The leader epoch of the id's bucket: a coordinator's epoch, which markers carry. */
  private coordinatorEpochOf(transactionalId: string): number {
    const { address } = this.bucketOf(transactionalId);
    return getIn(this.member.view.buckets, bucketId(address.tableId, null, address.bucket))?.leaderEpoch ?? 0;
  }

  private async allocateProducerId(): Promise<number> {
    const outcome = await this.member.store.propose({ type: 'AllocateProducerId' });
    if (!outcome.ok || outcome.producerId === undefined) throw new UnavailableError(`no producer id was allocated: ${outcome.ok ? 'the outcome named none' : outcome.rejection.message}`);
    return outcome.producerId;
  }

  /** Runs `work` after every earlier call for the same id has settled. */
  private locked<T>(transactionalId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(transactionalId) ?? Promise.resolve();
    const run = previous.catch(() => undefined).then(work);
    const settled = run.catch(() => undefined);
    this.locks.set(transactionalId, settled);
    void settled.then(() => {
      if (this.locks.get(transactionalId) === settled) this.locks.delete(transactionalId);
    });
    return run;
  }

  /** Creates the state table once, on the first transactional request of any node; a create lost to another node's is fine. */
  private createTable(): void {
    if (this.creatingTable) return;
    this.creatingTable = this.client
      .createTable(TRANSACTIONS_TABLE_SPEC)
      .then((created) => this.member.store.waitForSeq(created.metaSeq, LIMITS.proposeTimeoutMs))
      .catch((error: unknown) => {
        if (!(error instanceof MinkError && error.code === 'Conflict')) this.logger.warn({ err: error }, `could not create ${TRANSACTIONS_TABLE} yet`);
      })
      .finally(() => {
        this.creatingTable = null;
      });
  }
}
