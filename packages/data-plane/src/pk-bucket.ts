import { randomBytes } from 'node:crypto';
import { LIMITS } from '@mink/config';
import type { KvTablet } from '@mink/kv';
import { LMDB_TABLETS, type TabletStorage } from './tablet-storage';
import { bucketId as bucketIdOf, getIn, parsePkOptions, type KvSnapshotRecord, type PkOptions, type TableRecord } from '@mink/meta';
import {
  afterAccepting,
  afterFailing,
  decidePkWriterOrder,
  decodeStoredRow,
  foldChanges,
  insertBatchesOf,
  mayPlan,
  keyColumnOrder,
  nextGroupCommitStep,
  operationsOfParts,
  partOutcomesOf,
  planGroup,
  prefixBytes,
  primaryKeyBytes,
  rangesOfRequests,
  storedRowJson,
  tabletWritesOf,
  unappliedChanges,
  type ChangeRecord,
  type GroupCommitLimits,
  type GroupRequestPlan,
  type PartPlan,
  type PkOperation,
  type PkWrite,
} from '@mink/pk';
import { MinkError, NotFoundError, UnavailableError, errorOfCode } from '@mink/protocol';
import { changelogOfInserts, decodeBatch, encodeBatch, fieldOf, type CheckedBatch, type Row } from '@mink/records';
import type { MetaAccess, ObjectStore, StreamReader, WalAppendRequest, WalAppendResult } from '@mink/s3stream';

/** Where a PK bucket lives and what it acts with; one per open bucket. */
export interface PkBucketDeps {
  nodeId: string;
  nodeEpoch: number;
  meta: MetaAccess;
  objectStore: ObjectStore;
  wal: { append(request: WalAppendRequest): Promise<WalAppendResult> };
  reader: Pick<StreamReader, 'read'>;
  /** A folder of its own for the tablet; emptied first, removed on close. */
  directory: string;
  logger: { info(fields: Record<string, unknown>, message: string): void; warn(fields: Record<string, unknown>, message: string): void };
  nowMs: () => number;
  /** Told of each restore and committed snapshot (metrics). */
  observer?: PkBucketObserver;
  /** Where tablets live and how snapshots move (LMDB_TABLETS when absent). */
  tablets?: TabletStorage;
  /** Bounds of group commit in place of those of LIMITS (tests that pipeline single-operation requests). */
  groupCommit?: Partial<GroupCommitLimits>;
}

/** What PK buckets report for metrics. */
export interface PkBucketObserver {
  /** A tablet was restored from a snapshot of `snapshotBytes` (0 without one) plus a replay, in `seconds`. */
  restored(seconds: number, snapshotBytes: number): void;
  /** A snapshot archive of `bytes` was committed. */
  snapshotCommitted(bytes: number): void;
  /** A group commit started with `requests` queued requests holding `operations` puts and deletes. */
  groupStarted?(requests: number, operations: number): void;
}

export interface PkBucketAddress {
  tableId: number;
  partition: string | null;
  bucket: number;
}

/** What one put or delete request did: its change records took offsets [baseOffset, baseOffset + count). */
export interface PkWriteOutcome {
  operations: number;
  baseOffset: number;
  count: number;
  /** A retry of a request written before, answered without writing it again (baseOffset -1, count 0). */
  duplicate?: true;
  /** For a request of several parts (puts of several calls merged by a client): what each part did, in order, or its error. */
  parts?: PkPartOutcome[];
}

/** What one part of a request of several did: as a request's outcome, or why it alone was refused. */
export type PkPartOutcome = { operations: number; baseOffset: number; count: number; duplicate?: true } | { error: unknown };

/** A request's place in its writer's order (see decidePkWriterOrder): the writer id, its sequence, the newest it had acknowledged. */
export interface PkWriterSequence {
  id: string;
  seq: number;
  acked: number;
  /** The newest sequence the writer had acknowledged, even above `seq` (see decidePkWriterOrder). */
  newestAcked?: number;
}

/** What this leader knows of one writer: its order (PkWriterKnown), its requests in flight and the outcomes it remembers. */
interface PkWriter {
  id: string;
  next: number;
  failedAt: number | null;
  pending: Map<number, Promise<PkWriteOutcome>>;
  remembered: Map<number, PkWriteOutcome>;
}

interface QueuedWrite {
  operations: readonly PkOperation[];
  /** The operations of each part, for a request of several (each planned as a request of its own). */
  parts?: readonly (readonly PkOperation[])[];
  /** The Arrow batches of a put's whole rows, one row per operation in order, when it came as a batch. */
  inserts?: readonly CheckedBatch[];
  /** The writer and sequence of a numbered request. */
  writer?: { state: PkWriter; seq: number };
  resolve: (outcome: PkWriteOutcome) => void;
  reject: (error: unknown) => void;
}

const GROUP_COMMIT_LIMITS: GroupCommitLimits = {
  groupsInFlightMax: LIMITS.pkGroupsInFlightMax,
  groupOperationsMax: LIMITS.pkGroupOperationsMax,
  groupOperationsPipelined: LIMITS.pkGroupOperationsPipelined,
};

/** A planned group in flight: its requests with their change records, and its batch's append. */
interface GroupInFlight {
  planned: { queued: QueuedWrite; changes: ChangeRecord[]; parts?: PartPlan[] }[];
  /**
   * The final key states its planned requests left, in request order: what its commit applies to the
   * tablet. Their entries in `pendingWrites` may belong to a later group since.
   */
  writes: PkWrite[];
  changes: ChangeRecord[];
  /** The changelog offset the plan assumes the batch starts at. */
  baseOffset: number;
  /** Settles with the append's outcome; never rejects. */
  appended: Promise<{ ok: true } | { ok: false; error: unknown }>;
}
/** Records one read of the changelog asks for during replay. */
const REPLAY_READ_RECORDS = 10_000;

/**
 * One primary-key bucket led by this node (docs/architecture.md §8.3, issue 5): its KV tablet, the order of its writes,
 * and its snapshots.
 *
 * The changelog (the bucket's stream) is the truth; the tablet is the fold of it: `+I` and `+U` store the
 * row under its key, `-D` removes the key, `-U` changes nothing. Opening restores the newest snapshot the
 * view names and replays the changelog from the snapshot's offset to the committed end; live writes apply
 * the key states their plan left (tabletWritesOf), which is what the fold of their own change records gives
 * (property-tested in @mink/pk), so a replay after failover yields the same table.
 *
 * Writes are ordered per bucket and group-committed: the requests queued when a group starts are planned
 * together (each against the state the earlier ones leave), and their change records go to the changelog as
 * one batch; only after that batch is committed are they applied to the tablet and acknowledged. A lookup
 * therefore sees every acknowledged write and nothing unacknowledged.
 *
 * Groups are pipelined: up to `LIMITS.pkGroupsInFlightMax` are in the WAL at once (another starts while one
 * is in flight only once `LIMITS.pkGroupOperationsPipelined` operations wait; fewer go together in the group
 * after it, see nextGroupCommitStep), each planned against the tablet plus the writes of the groups before
 * it that are not applied yet (`pendingWrites`), and each naming the offset its plan assumes
 * (`expectedStartOffset`), so a group planned on a predecessor that then failed is refused by the WAL writer
 * unwritten rather than stored on a state that never was. Groups settle strictly in order. After a failure no group starts until those in flight have settled; the tablet then
 * catches up with the committed changelog and planning starts afresh from it.
 */
export class PkBucket {
  private readonly queue: QueuedWrite[] = [];
  private closed = false;
  /** Set when a group's commit failed: the changelog may hold records the tablet lacks. */
  private mustCatchUp = false;
  private catchingUp = false;
  /** Groups started and not settled, oldest first. */
  private readonly inFlight: GroupInFlight[] = [];
  /** Settles the groups in flight one after another; resolves when the last one started has settled. */
  private settling: Promise<void> = Promise.resolve();
  /**
   * The writes of the groups in flight, not applied to the tablet yet, by key text: the row (null when
   * deleted) and the group that wrote it last. Planning reads it before the tablet.
   */
  private readonly pendingWrites = new Map<string, { row: Row | null; group: GroupInFlight }>();
  /** The offset the next group's batch starts at, if every group in flight commits. */
  private plannedEnd: number;
  private snapshotInFlight: Promise<KvSnapshotRecord | null> | null = null;
  private lastSnapshotOffset: number;
  /** The primary key columns in tablet key order (keyColumnOrder), fixed for the table's life. */
  private readonly keyColumns: string[];
  /** The bounds of group commit: LIMITS', or those the deps give instead. */
  private readonly groupCommitLimits: GroupCommitLimits;
  /** The writers whose numbered requests this leader took, least recently used first (at most `LIMITS.pkWritersRememberedMax`). */
  private readonly writers = new Map<string, PkWriter>();

  private constructor(
    private readonly deps: PkBucketDeps,
    readonly address: PkBucketAddress,
    readonly streamEpoch: number,
    private readonly table: TableRecord,
    private readonly options: PkOptions,
    private readonly tablet: KvTablet,
    restoredFrom: number,
  ) {
    this.lastSnapshotOffset = restoredFrom;
    this.plannedEnd = restoredFrom;
    this.keyColumns = keyColumnOrder(table.primaryKey, table.bucketKey);
    this.groupCommitLimits = { ...GROUP_COMMIT_LIMITS, ...deps.groupCommit };
  }

  get id(): string {
    return bucketIdOf(this.address.tableId, this.address.partition, this.address.bucket);
  }

  /** The changelog offset the tablet includes: every record below it is applied. */
  get appliedOffset(): number {
    return this.tablet.appliedOffset();
  }

  /**
   * Restores the bucket's tablet from the newest snapshot in the view (or starts empty) and replays the
   * changelog up to its committed end. Call after the stream is open here at `streamEpoch`: from then on
   * no other node can commit to it, so the end read here is final for everything written before.
   */
  static async open(deps: PkBucketDeps, address: PkBucketAddress, streamEpoch: number): Promise<PkBucket> {
    const id = bucketIdOf(address.tableId, address.partition, address.bucket);
    const record = getIn(deps.meta.view.buckets, id);
    const table = record ? getIn(deps.meta.view.tables, record.table) : undefined;
    if (!record || !table || table.id !== address.tableId) throw new NotFoundError(`bucket ${id} no longer exists`);
    const options = parsePkOptions(table);
    const started = Date.now();
    const tablets = deps.tablets ?? LMDB_TABLETS;
    const newest = record.kvSnapshots.at(-1);
    let tablet: KvTablet;
    let downloadedBytes = 0;
    let downloadMs = 0;
    if (newest) {
      const restored = await tablets.restore(deps.objectStore, newest.object, deps.directory);
      tablet = restored.tablet;
      downloadedBytes = restored.bytes;
      downloadMs = Date.now() - started;
    } else {
      tablet = await tablets.openEmpty(deps.directory);
    }
    const restoredMs = Date.now() - started;
    const bucket = new PkBucket(deps, address, streamEpoch, table, options, tablet, tablet.appliedOffset());
    try {
      const fromOffset = tablet.appliedOffset();
      await bucket.replayTo(bucket.committedEnd());
      bucket.plannedEnd = tablet.appliedOffset();
      deps.logger.info(
        {
          table: table.name,
          bucket: address.bucket,
          snapshot: newest?.object ?? null,
          snapshotBytes: downloadedBytes,
          replayedFrom: fromOffset,
          replayedTo: tablet.appliedOffset(),
          downloadMs,
          unpackMs: restoredMs - downloadMs,
          replayMs: Date.now() - started - restoredMs,
          ms: Date.now() - started,
        },
        'restored PK bucket',
      );
      deps.observer?.restored((Date.now() - started) / 1000, downloadedBytes);
      return bucket;
    } catch (error) {
      await tablet.destroy().catch(() => undefined);
      throw error;
    }
  }

  /**
   * Queues one request's puts and deletes; resolves once its change records are durable and applied. A
   * request numbered by its writer (`writer`) is planned in its writer's sequence order, as
   * decidePkWriterOrder decides: a retry of one in flight or remembered gets its outcome, one that
   * arrived ahead of an earlier sequence is refused `Unavailable` (to be sent again after that one), and
   * once one fails the writer's later requests that wait here are refused with it. `partCounts` cuts a
   * request of several parts (puts of several calls a client merged) into its parts: each is planned as a
   * request of its own, and the outcome says what each did, or why it alone was refused (`parts`).
   */
  write(operations: readonly PkOperation[], writer?: PkWriterSequence, inserts?: readonly CheckedBatch[], partCounts?: readonly number[]): Promise<PkWriteOutcome> {
    if (this.closed) return Promise.reject(this.closedError());
    let parts: PkOperation[][] | undefined;
    try {
      parts = partCounts === undefined ? undefined : operationsOfParts(operations, partCounts);
    } catch (error) {
      return Promise.reject(error);
    }
    const request = { operations, ...(inserts ? { inserts } : {}), ...(parts ? { parts } : {}) };
    if (writer === undefined) {
      return new Promise<PkWriteOutcome>((resolve, reject) => {
        this.queue.push({ ...request, resolve, reject });
        this.pump();
      });
    }
    const known = this.writers.get(writer.id);
    const decision = decidePkWriterOrder({ seq: writer.seq, acked: writer.acked, newestAcked: writer.newestAcked, known });
    switch (decision.kind) {
      case 'join':
        return known!.pending.get(writer.seq)!;
      case 'answer':
        return Promise.resolve(known!.remembered.get(writer.seq)!);
      case 'outOfOrder':
        return Promise.reject(
          new UnavailableError(`writer ${writer.id} sequence ${writer.seq} arrived before sequence ${decision.expected} of bucket ${this.address.bucket}: send it again after that one`, 0),
        );
      case 'forgotten':
        return Promise.reject(
          new MinkError('Conflict', `writer ${writer.id} sequence ${writer.seq} is older than what bucket ${this.address.bucket} remembers of it (next ${decision.next})`),
        );
      case 'written': {
        const written = (count: number) => ({ operations: count, baseOffset: -1, count: 0, duplicate: true as const });
        return Promise.resolve({ ...written(operations.length), ...(parts ? { parts: parts.map((part) => written(part.length)) } : {}) });
      }
      case 'accept':
        return this.acceptNumbered(request, known ?? { id: writer.id, next: 0, failedAt: null, pending: new Map(), remembered: new Map() }, writer.seq);
    }
  }

  private acceptNumbered(request: Pick<QueuedWrite, 'operations' | 'inserts' | 'parts'>, state: PkWriter, seq: number): Promise<PkWriteOutcome> {
    Object.assign(state, afterAccepting(seq));
    // Most recently used last; the least recently used writer with nothing in flight is forgotten first.
    this.writers.delete(state.id);
    this.writers.set(state.id, state);
    if (this.writers.size > LIMITS.pkWritersRememberedMax) {
      for (const [id, other] of this.writers) {
        if (other.pending.size > 0) continue;
        this.writers.delete(id);
        break;
      }
    }
    const outcome = new Promise<PkWriteOutcome>((resolve, reject) => {
      this.queue.push({
        ...request,
        writer: { state, seq },
        resolve: (result) => {
          state.pending.delete(seq);
          state.remembered.set(seq, result);
          if (state.remembered.size > LIMITS.writerBatchesRemembered) state.remembered.delete(state.remembered.keys().next().value!);
          resolve(result);
        },
        reject: (error) => {
          state.pending.delete(seq);
          this.writerFailed(state, seq);
          reject(error);
        },
      });
    });
    state.pending.set(seq, outcome);
    this.pump();
    return outcome;
  }

  /** Notes that a writer's request failed and refuses its later requests still waiting to be planned. */
  private writerFailed(state: PkWriter, seq: number): void {
    state.failedAt = afterFailing(state.failedAt, seq);
    const refused: QueuedWrite[] = [];
    for (let index = this.queue.length - 1; index >= 0; index--) {
      const queued = this.queue[index]!;
      if (queued.writer?.state === state && !mayPlan(queued.writer.seq, state.failedAt)) refused.unshift(...this.queue.splice(index, 1));
    }
    for (const queued of refused) {
      queued.reject(new UnavailableError(`sequence ${seq} of writer ${state.id} failed on bucket ${this.address.bucket}; sequence ${queued.writer!.seq} was not written`, 0));
    }
  }

  /** The stored row of each key (canonical key rows), as JSON projected to `projection`, or null. */
  lookup(keys: readonly Row[], projection?: readonly string[]): (Record<string, unknown> | null)[] {
    this.assertOpen();
    const values = this.tablet.getMany(keys.map((key) => primaryKeyBytes(key, this.keyColumns)));
    return values.map((value) => (value === undefined ? null : storedRowJson(this.table.columns, value, projection)));
  }

  /**
   * The rows whose bucket-key columns hold the values of `prefix`: at most `limit` of them, and no more than
   * fit in `bytesMax` bytes of JSON (at least one), so the answer fits one reply. `truncated` tells that more exist.
   */
  prefixLookup(prefix: Row, limit: number, bytesMax: number, projection?: readonly string[]): { rows: Record<string, unknown>[]; truncated: boolean } {
    this.assertOpen();
    const columns = this.table.bucketKey;
    const entries = this.tablet.scanPrefix(prefixBytes(columns.map((column) => fieldOf(prefix, column)), columns), limit + 1);
    const rows: Record<string, unknown>[] = [];
    let bytes = 0;
    for (const entry of entries.slice(0, limit)) {
      const row = storedRowJson(this.table.columns, entry.value, projection);
      bytes += JSON.stringify(row).length + 1;
      if (rows.length > 0 && bytes > bytesMax) return { rows, truncated: true };
      rows.push(row);
    }
    return { rows, truncated: entries.length > limit };
  }

  /**
   * Up to `limit` stored rows in key order after the key `after` (from the first when null), with the key
   * of the last one to pass as `after` for the next page (null when none are left): a sweep of the whole
   * bucket in pages.
   */
  rowsAfter(after: Uint8Array | null, limit: number): { rows: Record<string, unknown>[]; lastKey: Uint8Array | null } {
    this.assertOpen();
    const entries = this.tablet.scanPrefix(new Uint8Array(0), limit, after ?? undefined);
    return { rows: entries.map((entry) => storedRowJson(this.table.columns, entry.value)), lastKey: entries.at(-1)?.key ?? null };
  }

  /**
   * Uploads a consistent snapshot of the tablet and commits it with CommitKvSnapshot at this bucket's stream
   * epoch (so a deposed leader's snapshot is refused). Does nothing when nothing was applied since the last
   * one. Concurrent calls share one snapshot.
   */
  snapshot(): Promise<KvSnapshotRecord | null> {
    this.snapshotInFlight ??= this.takeSnapshot().finally(() => {
      this.snapshotInFlight = null;
    });
    return this.snapshotInFlight;
  }

  /**
   * Stops taking writes and waits for the group in flight. With `finalSnapshot` (a clean close) the tablet
   * is snapshotted first, so the next leader replays little. Then the tablet and its folder are removed: the
   * next open restores from object storage.
   */
  async close(options: { finalSnapshot: boolean }): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const queued of this.queue.splice(0)) queued.reject(this.closedError());
    await this.settling;
    await this.snapshotInFlight?.catch(() => undefined);
    if (options.finalSnapshot && !this.mustCatchUp) {
      await this.takeSnapshot().catch((error) => this.deps.logger.warn({ err: error, bucketId: this.id }, 'final KV snapshot failed'));
    }
    await this.tablet.destroy().catch((error) => this.deps.logger.warn({ err: error, bucketId: this.id }, 'could not remove the KV tablet'));
  }

  /**
   * Takes the steps nextGroupCommitStep decides: starts groups while requests are queued and fewer than
   * `LIMITS.pkGroupsInFlightMax` are in flight (small ones wait for the group in flight); after a failure,
   * once the groups in flight have settled, catches the tablet up with the committed changelog (one
   * catch-up at a time) and goes on from there.
   */
  private pump(): void {
    for (;;) {
      const next = nextGroupCommitStep(
        { closed: this.closed, catchingUp: this.catchingUp, mustCatchUp: this.mustCatchUp, groupsInFlight: this.inFlight.length, queued: this.queue },
        this.groupCommitLimits,
      );
      switch (next.step) {
        case 'idle':
          return;
        case 'catchUp':
          this.startCatchUp();
          return;
        case 'startGroup':
          this.startGroup(this.queue.splice(0, next.requests));
          break;
      }
    }
  }

  /** Catches the tablet up with the committed changelog, then pumps again; a failure fails the requests waiting. */
  private startCatchUp(): void {
    this.catchingUp = true;
    void this.catchUp()
      .then(
        () => {
          this.mustCatchUp = false;
          this.plannedEnd = this.tablet.appliedOffset();
        },
        (error: unknown) => {
          // The requests waiting now fail with the reason; the next write tries to catch up again.
          for (const queued of this.queue.splice(0)) queued.reject(error);
        },
      )
      .finally(() => {
        this.catchingUp = false;
        this.pump();
      });
  }

  /** Plans one group (planGroup) against the tablet and the writes in flight, hands its batch to the WAL and queues its settling. */
  private startGroup(group: QueuedWrite[]): void {
    if (this.deps.observer?.groupStarted) {
      let operations = 0;
      for (const queued of group) operations += queued.operations.length;
      this.deps.observer.groupStarted(group.length, operations);
    }
    const lookup = (key: Uint8Array, text: string): Row | undefined => {
      const pending = this.pendingWrites.get(text);
      if (pending !== undefined) return pending.row ?? undefined;
      const stored = this.tablet.get(key);
      return stored === undefined ? undefined : decodeStoredRow(this.table.columns, stored);
    };
    // Each part of a request of several is planned as a request of its own, in order.
    const plan = planGroup(this.options, this.table, lookup, group.flatMap((queued) => queued.parts ?? [queued.operations]));
    const inFlight: GroupInFlight = { planned: [], writes: [], changes: plan.changes, baseOffset: this.plannedEnd, appended: Promise.resolve({ ok: true }) };
    const take = (request: GroupRequestPlan): ChangeRecord[] => {
      if (!request.planned) return [];
      for (const write of request.writes) {
        this.pendingWrites.set(write.text, { row: write.row, group: inFlight });
        inFlight.writes.push(write);
      }
      return request.changes;
    };
    let next = 0;
    for (const queued of group) {
      if (queued.parts !== undefined) {
        // A refused part is answered its error alone; the request's other parts go on, as they would sent apart.
        const parts = queued.parts.map((operations): PartPlan => {
          const request = plan.requests[next++]!;
          return request.planned ? { planned: true, operations: operations.length, changes: request.changes.length } : { planned: false, error: request.error };
        });
        const changes = plan.requests.slice(next - parts.length, next).flatMap(take);
        inFlight.planned.push({ queued, changes, parts });
        continue;
      }
      const request = plan.requests[next++]!;
      if (!request.planned) {
        // A bad request is refused on its own; the others of the group go on.
        queued.reject(request.error);
        continue;
      }
      inFlight.planned.push({ queued, changes: take(request) });
    }
    if (inFlight.changes.length > 0) {
      try {
        const payload = this.changelogBatchOf(inFlight);
        inFlight.appended = this.deps.wal
          .append({
            bucketId: this.id,
            ...this.address,
            streamEpoch: this.streamEpoch,
            payload,
            recordCount: inFlight.changes.length,
            expectedStartOffset: inFlight.baseOffset,
          })
          .then(
            () => ({ ok: true as const }),
            (error: unknown) => ({ ok: false as const, error }),
          );
      } catch (error) {
        inFlight.appended = Promise.resolve({ ok: false, error });
      }
      this.plannedEnd += inFlight.changes.length;
    }
    this.inFlight.push(inFlight);
    this.settling = this.settling.then(() => this.settle(inFlight));
  }

  /**
   * The changelog batch of a group: built from its requests' incoming Arrow columns when its records are
   * exactly their rows as `+I` (insertBatchesOf: puts of new keys), else encoded from its change records.
   */
  private changelogBatchOf(group: GroupInFlight): Uint8Array {
    const nowMs = this.deps.nowMs();
    const inserts = insertBatchesOf(group.planned.map(({ queued, changes }) => ({ operations: queued.operations.length, changes, inserts: queued.inserts })));
    if (inserts !== null) {
      const batch = changelogOfInserts(this.table.columns, inserts, nowMs);
      if (batch.rowCount === group.changes.length) return batch.payload;
    }
    return encodeBatch(
      this.table.columns,
      group.changes.map((change) => change.row),
      nowMs,
      group.changes.map((change) => change.changeType),
    );
  }

  /**
   * Settles the oldest group in flight once its append is done: applies its changes to the tablet and
   * acknowledges its requests, or fails them (and, through `mustCatchUp`, the plans made on it). Never rejects.
   */
  private async settle(group: GroupInFlight): Promise<void> {
    const outcome = await group.appended;
    try {
      if (!outcome.ok) throw outcome.error;
      if (this.mustCatchUp) {
        throw new UnavailableError(`an earlier write to bucket ${this.address.bucket} of table '${this.table.name}' failed; this one was not written`);
      }
      if (group.changes.length > 0) {
        if (group.baseOffset !== this.tablet.appliedOffset()) {
          throw new Error(`changelog batch at ${group.baseOffset} does not follow the tablet's applied offset ${this.tablet.appliedOffset()}`);
        }
        // The planned writes leave the tablet as folding the group's change records would (tabletWritesOf), keys already derived.
        await this.tablet.apply(tabletWritesOf(this.table.columns, group.writes), group.baseOffset + group.changes.length);
      }
      const startOffset = group.changes.length > 0 ? group.baseOffset : this.tablet.appliedOffset();
      const ranges = rangesOfRequests(group.planned.map((each) => each.changes.length), startOffset);
      group.planned.forEach(({ queued, parts }, index) => {
        const range = ranges[index]!;
        queued.resolve({ operations: queued.operations.length, ...range, ...(parts ? { parts: partOutcomesOf(parts, range.baseOffset) } : {}) });
      });
    } catch (error) {
      this.mustCatchUp = true;
      for (const { queued } of group.planned) queued.reject(error);
    } finally {
      this.inFlight.shift();
      for (const { text } of group.writes) if (this.pendingWrites.get(text)?.group === group) this.pendingWrites.delete(text);
      if (this.mustCatchUp && this.inFlight.length === 0) this.pendingWrites.clear();
      this.pump();
    }
  }

  private async catchUp(): Promise<void> {
    await this.replayTo(this.committedEnd());
  }

  /** Applies the committed changelog from the tablet's offset up to `target` (a batch boundary). */
  private async replayTo(target: number): Promise<void> {
    while (this.tablet.appliedOffset() < target) {
      const from = this.tablet.appliedOffset();
      const read = await this.deps.reader.read(this.id, from, REPLAY_READ_RECORDS);
      if (read.batches.length === 0) throw new Error(`changelog of bucket ${this.id} ends at ${read.highWatermark}, below ${target}`);
      for (const batch of read.batches) {
        if (batch.endOffset <= this.tablet.appliedOffset()) continue;
        const decoded = decodeBatch(this.table.columns, batch.payload);
        if (!decoded.changeTypes) throw new Error(`changelog batch at ${batch.startOffset} of bucket ${this.id} has no change types`);
        const changes = unappliedChanges(batch.startOffset, decoded.rows, decoded.changeTypes, this.tablet.appliedOffset());
        await this.tablet.apply(foldChanges(this.table.columns, this.keyColumns, changes), batch.endOffset);
        if (batch.endOffset >= target) break;
      }
    }
  }

  private committedEnd(): number {
    const record = getIn(this.deps.meta.view.buckets, this.id);
    if (!record) throw new NotFoundError(`bucket ${this.id} no longer exists`);
    return record.stream.endOffset;
  }

  private async takeSnapshot(): Promise<KvSnapshotRecord | null> {
    const applied = this.tablet.appliedOffset();
    if (applied === this.lastSnapshotOffset) return null;
    const { tableId, partition, bucket } = this.address;
    const { object, appliedOffset, bytes: archiveBytes } = await (this.deps.tablets ?? LMDB_TABLETS).upload(
      this.deps.objectStore,
      this.tablet,
      this.deps.directory,
      (offset) => `kv/${tableId}/${partition ?? '_'}/${bucket}/${this.streamEpoch}-${offset}-${randomBytes(4).toString('hex')}`,
    );
    const outcome = await this.deps.meta.propose({
      type: 'CommitKvSnapshot',
      nodeId: this.deps.nodeId,
      nodeEpoch: this.deps.nodeEpoch,
      tableId,
      partition,
      bucket,
      streamEpoch: this.streamEpoch,
      object,
      appliedOffset,
      bytes: archiveBytes,
      atMs: this.deps.nowMs(),
    });
    if (!outcome.ok) {
      // Refused for good (fenced, or an equal or newer snapshot exists): the upload is nobody's.
      await this.deps.objectStore.delete([object]).catch(() => undefined);
      throw errorOfCode(outcome.rejection.code, outcome.rejection.message);
    }
    this.lastSnapshotOffset = appliedOffset;
    this.deps.observer?.snapshotCommitted(archiveBytes);
    this.deps.logger.info({ table: this.table.name, bucket, object, appliedOffset, bytes: archiveBytes }, 'committed KV snapshot');
    return { object, appliedOffset, bytes: archiveBytes, streamEpoch: this.streamEpoch };
  }

  private assertOpen(): void {
    if (this.closed) throw this.closedError();
  }

  private closedError(): UnavailableError {
    return new UnavailableError(`bucket ${this.address.bucket} of table '${this.table.name}' is closing on node ${this.deps.nodeId}`);
  }
}
