import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { LmdbKvTablet, packSnapshotFile, restoreTabletFromFile, type KvTablet, type KvWrite } from '@mink/kv';
import { bucketId as bucketIdOf, getIn, ownRecord, type KvSnapshotRecord, type TableRecord } from '@mink/meta';
import {
  decodeStoredRow,
  encodeStoredRow,
  keyColumnOrder,
  keyText,
  parsePkOptions,
  planBatch,
  prefixBytes,
  primaryKeyBytes,
  storedRowJson,
  type ChangeRecord,
  type PkOperation,
  type PkOptions,
} from '@mink/pk';
import { NotFoundError, UnavailableError, errorOfCode } from '@mink/protocol';
import { decodeBatch, encodeBatch, fieldOf, type Row } from '@mink/records';
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
}

interface QueuedWrite {
  operations: readonly PkOperation[];
  resolve: (outcome: PkWriteOutcome) => void;
  reject: (error: unknown) => void;
}

/** Operations one group commit plans together at most; requests beyond wait for the next group. */
const GROUP_OPERATIONS_MAX = 50_000;
/** Groups of one bucket in the WAL at once (their batches commit in order). */
export const PK_GROUPS_IN_FLIGHT_MAX = 4;

/** A planned group in flight: its requests with their change records, and its batch's append. */
interface GroupInFlight {
  planned: { queued: QueuedWrite; changes: ChangeRecord[] }[];
  changes: ChangeRecord[];
  /** The changelog offset the plan assumes the batch starts at. */
  baseOffset: number;
  /** Key texts of the writes it planned (their entries in `pendingWrites` may belong to a later group since). */
  keys: string[];
  /** Settles with the append's outcome; never rejects. */
  appended: Promise<{ ok: true } | { ok: false; error: unknown }>;
}
/** Records one read of the changelog asks for during replay. */
const REPLAY_READ_RECORDS = 10_000;

/**
 * One primary-key bucket led by this node (DESIGN §5, issue 5): its KV tablet, the order of its writes,
 * and its snapshots.
 *
 * The changelog (the bucket's stream) is the truth; the tablet is the fold of it: `+I` and `+U` store the
 * row under its key, `-D` removes the key, `-U` changes nothing. Opening restores the newest snapshot the
 * view names and replays the changelog from the snapshot's offset to the committed end; live writes apply
 * their own change records with the same fold, so a replay after failover yields the same table.
 *
 * Writes are ordered per bucket and group-committed: the requests queued when a group starts are planned
 * together (each against the state the earlier ones leave), and their change records go to the changelog as
 * one batch; only after that batch is committed are they applied to the tablet and acknowledged. A lookup
 * therefore sees every acknowledged write and nothing unacknowledged.
 *
 * Groups are pipelined: up to `PK_GROUPS_IN_FLIGHT_MAX` are in the WAL at once, each planned against the
 * tablet plus the writes of the groups before it that are not applied yet (`pendingWrites`), and each
 * naming the offset its plan assumes (`expectedStartOffset`), so a group planned on a predecessor that then
 * failed is refused by the WAL writer unwritten rather than stored on a state that never was. Groups settle
 * strictly in order. After a failure no group starts until those in flight have settled; the tablet then
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
    const table = record ? ownRecord(deps.meta.view.tables, record.table) : undefined;
    if (!record || !table || table.id !== address.tableId) throw new NotFoundError(`bucket ${id} no longer exists`);
    const options = parsePkOptions(table);
    const started = Date.now();
    await rm(deps.directory, { recursive: true, force: true });
    // The archive is downloaded beside the tablet's folder, whose parent a fresh process has not made yet.
    await mkdir(dirname(deps.directory), { recursive: true });
    const newest = record.kvSnapshots.at(-1);
    let tablet: KvTablet;
    let downloadedBytes = 0;
    let downloadMs = 0;
    if (newest) {
      // The archive goes through a file beside the tablet's folder, so restoring holds none of it in memory.
      const archivePath = `${deps.directory}.archive`;
      try {
        downloadedBytes = await deps.objectStore.getToFile(newest.object, archivePath);
        downloadMs = Date.now() - started;
        tablet = await restoreTabletFromFile(archivePath, deps.directory);
      } finally {
        await rm(archivePath, { force: true });
      }
    } else {
      tablet = await LmdbKvTablet.open(deps.directory);
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
      return bucket;
    } catch (error) {
      await tablet.destroy().catch(() => undefined);
      throw error;
    }
  }

  /** Queues one request's puts and deletes; resolves once its change records are durable and applied. */
  write(operations: readonly PkOperation[]): Promise<PkWriteOutcome> {
    if (this.closed) return Promise.reject(this.closedError());
    return new Promise<PkWriteOutcome>((resolve, reject) => {
      this.queue.push({ operations, resolve, reject });
      this.pump();
    });
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
   * Starts groups while requests are queued and fewer than `PK_GROUPS_IN_FLIGHT_MAX` are in flight. After a
   * failure it first waits for the groups in flight to settle, then catches the tablet up with the
   * committed changelog (one catch-up at a time), and goes on from there.
   */
  private pump(): void {
    if (this.closed || this.catchingUp || this.queue.length === 0) return;
    if (this.mustCatchUp) {
      if (this.inFlight.length > 0) return;
      this.catchingUp = true;
      void this.catchUp().then(
        () => {
          this.mustCatchUp = false;
          this.plannedEnd = this.tablet.appliedOffset();
        },
        (error: unknown) => {
          // The requests waiting now fail with the reason; the next write tries to catch up again.
          for (const queued of this.queue.splice(0)) queued.reject(error);
        },
      ).finally(() => {
        this.catchingUp = false;
        this.pump();
      });
      return;
    }
    while (this.queue.length > 0 && this.inFlight.length < PK_GROUPS_IN_FLIGHT_MAX && !this.mustCatchUp) {
      const group: QueuedWrite[] = [];
      let operations = 0;
      while (this.queue.length > 0 && (group.length === 0 || operations + this.queue[0]!.operations.length <= GROUP_OPERATIONS_MAX)) {
        const next = this.queue.shift()!;
        operations += next.operations.length;
        group.push(next);
      }
      this.startGroup(group);
    }
  }

  /** Plans one group against the tablet and the writes in flight, hands its batch to the WAL and queues its settling. */
  private startGroup(group: QueuedWrite[]): void {
    const lookup = (key: Uint8Array): Row | undefined => {
      const pending = this.pendingWrites.get(keyText(key));
      if (pending !== undefined) return pending.row ?? undefined;
      const stored = this.tablet.get(key);
      return stored === undefined ? undefined : decodeStoredRow(this.table.columns, stored);
    };
    const inFlight: GroupInFlight = { planned: [], changes: [], baseOffset: this.plannedEnd, keys: [], appended: Promise.resolve({ ok: true }) };
    for (const queued of group) {
      try {
        const plan = planBatch(this.options, this.table, lookup, queued.operations);
        for (const write of plan.writes) {
          const text = keyText(write.key);
          this.pendingWrites.set(text, { row: write.row, group: inFlight });
          inFlight.keys.push(text);
        }
        inFlight.planned.push({ queued, changes: plan.changes });
      } catch (error) {
        // A bad request is refused on its own; the others of the group go on.
        queued.reject(error);
      }
    }
    inFlight.changes = inFlight.planned.flatMap((each) => each.changes);
    if (inFlight.changes.length > 0) {
      try {
        const payload = encodeBatch(
          this.table.columns,
          inFlight.changes.map((change) => change.row),
          this.deps.nowMs(),
          inFlight.changes.map((change) => change.changeType),
        );
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
        await this.tablet.apply(this.foldOf(group.changes), group.baseOffset + group.changes.length);
      }
      let offset = group.changes.length > 0 ? group.baseOffset : this.tablet.appliedOffset();
      for (const { queued, changes: own } of group.planned) {
        queued.resolve({ operations: queued.operations.length, baseOffset: offset, count: own.length });
        offset += own.length;
      }
    } catch (error) {
      this.mustCatchUp = true;
      for (const { queued } of group.planned) queued.reject(error);
    } finally {
      this.inFlight.shift();
      for (const key of group.keys) if (this.pendingWrites.get(key)?.group === group) this.pendingWrites.delete(key);
      if (this.mustCatchUp && this.inFlight.length === 0) this.pendingWrites.clear();
      this.pump();
    }
  }

  private async catchUp(): Promise<void> {
    await this.replayTo(this.committedEnd());
  }

  /** The tablet writes of change records: the last row stored under each key, or null when it was deleted. */
  private foldOf(changes: readonly { changeType: string; row: Row }[]): KvWrite[] {
    const writes = new Map<string, KvWrite>();
    for (const change of changes) {
      if (change.changeType === '-U') continue;
      const key = primaryKeyBytes(change.row, this.keyColumns);
      const value = change.changeType === '-D' ? null : encodeStoredRow(this.table.columns, change.row);
      const text = keyText(key);
      // Re-inserting keeps the order of last change, which LMDB does not need but makes the batch readable.
      writes.delete(text);
      writes.set(text, { key, value });
    }
    return [...writes.values()];
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
        const skip = Math.max(0, this.tablet.appliedOffset() - batch.startOffset);
        const changes = decoded.rows.slice(skip).map((row, index) => ({ changeType: decoded.changeTypes![skip + index]!, row }));
        await this.tablet.apply(this.foldOf(changes), batch.endOffset);
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
    const folder = await mkdtemp(`${this.deps.directory}-snapshot-`);
    // The archive is packed into a file and uploaded from it, so a snapshot holds none of the table in memory.
    const archivePath = `${folder}.archive`;
    let archiveBytes: number;
    let appliedOffset: number;
    const { tableId, partition, bucket } = this.address;
    let object: string;
    try {
      try {
        const snapshot = await this.tablet.snapshot(folder);
        appliedOffset = snapshot.appliedOffset;
        archiveBytes = (await packSnapshotFile(folder, snapshot, archivePath)).bytes;
      } finally {
        await rm(folder, { recursive: true, force: true });
      }
      object = `kv/${tableId}/${partition ?? '_'}/${bucket}/${this.streamEpoch}-${appliedOffset}-${randomBytes(4).toString('hex')}`;
      await this.deps.objectStore.putFile(object, archivePath);
    } finally {
      await rm(archivePath, { force: true });
    }
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
