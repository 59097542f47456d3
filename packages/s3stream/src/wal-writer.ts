import { LIMITS } from '@mink/config';
import { WAL_KEY_PREFIX, bucketId as bucketIdOf, describeCommittedSequence, describeMalformedTransaction, getIn, isStreamOpenBy, writerOf } from '@mink/meta';
import type { CommitWal, DataSlice, Rejection, View, WalRange, WalTransaction } from '@mink/meta';
import { ConflictError, InvalidArgumentError, MinkError, NotFoundError, UnavailableError, errorOfCode } from '@mink/protocol';
import type { ObjectStore } from './object-store';
import { walObjectDue } from './wal-flush';
import type { MetaAccess } from './ports';

/** One batch of records for one stream, as the bucket's leader hands it to its WAL writer. */
export interface WalAppendRequest {
  /** `bucketId(tableId, partition, bucket)`; it must agree with the three fields below. */
  bucketId: string;
  tableId: number;
  partition: string | null;
  bucket: number;
  /** The stream epoch the leader opened the stream at; a commit at any other epoch is fenced. */
  streamEpoch: number;
  /**
   * The encoded batch, stored as one slice and returned whole by reads. Not empty. It is handed over with the
   * call: it is uploaded as it is (not copied into the object first) and the commit listener may keep it, so
   * the appender never changes it afterwards.
   */
  payload: Uint8Array;
  /** Records in the batch: the offsets it takes. A positive integer. */
  recordCount: number;
  /** Passed through to the commit for idempotent writes; the view remembers it as the writer's last batch. */
  writer?: { id: string; seq: number };
  /** Passed through to the commit for a Kafka transaction's batch or marker (StreamRecord.transactions). */
  transaction?: WalTransaction;
  /**
   * Writes the batch's first offset into the payload once the writer has assigned it, before the upload: a
   * Kafka record batch carries its base offset, so a fetch serves the stored bytes as they are. Called at
   * most once; it must not change the payload's length.
   */
  stampBaseOffset?: (payload: Uint8Array, baseOffset: number) => void;
  /**
   * The offset the batch must start at. A writer whose batch depends on the ones before it (a PK bucket
   * plans its changes against the state its earlier batches leave) names it, so that after an earlier batch
   * of the stream failed, or a commit of unknown outcome landed, the batch is refused unwritten
   * (`Unavailable`) instead of being stored at another offset than the one it was planned for.
   */
  expectedStartOffset?: number;
}

/** Where an acknowledged batch landed: offsets [baseOffset, baseOffset + count). */
export interface WalAppendResult {
  baseOffset: number;
  count: number;
}

/**
 * Called once per batch after its commit applied, in commit order, before the append is acknowledged; the
 * stream reader's `cache` fits here, so recent data is read without a GET. `payload` is the array the
 * appender handed over, which nobody changes any more, so a listener may keep it. It must not throw.
 */
export type CommittedListener = (bucketId: string, slice: DataSlice, payload: Uint8Array) => void;

export interface WalWriterOptions {
  nodeId: string;
  /** The incarnation this writer belongs to; every commit carries it, so a later incarnation fences this one. */
  nodeEpoch: number;
  store: ObjectStore;
  meta: MetaAccess;
  /** Queued bytes that trigger a flush at once; `LIMITS.walFlushBytes` when absent. */
  flushBytes?: number;
  /** How long queued appends wait for more before a smaller flush; `LIMITS.walLingerMs` when absent. */
  lingerMs?: number;
  /** Whether appends queued while no object is in flight go out at the end of that turn of the event loop, without lingering; `LIMITS.walFlushWhenIdle` when absent. */
  flushWhenIdle?: boolean;
  /** Bytes that may wait for a flush before appends are refused; `LIMITS.walQueuedBytesMax` when absent. */
  queuedBytesMax?: number;
  /** Objects uploaded at once (committed in order); `LIMITS.walUploadsInFlightMax` when absent, 1 for one at a time. */
  uploadsInFlight?: number;
  onCommitted?: CommittedListener;
  /** Told how long each object took to upload and to commit (metrics); never changes what the writer does. */
  observer?: WalObserver;
  /**
   * Told each time an object reaches a point of its life, synchronously, before the writer goes on: fault
   * tests stop the process right there (`MINK_TEST_CRASH_AT`, see `crashHookOf`). Absent in production.
   */
  reached?: (point: WalPoint) => void;
}

/**
 * The points of a WAL object's life a fault test may kill its writer at: `uploading` just before the upload
 * starts (nothing stored), `uploaded` after the object is stored and before its CommitWal is proposed (stored,
 * never committed), `committed` after the commit applied and before any append of it is acknowledged
 * (committed, never answered).
 */
export const WAL_POINTS = ['uploading', 'uploaded', 'committed'] as const;
export type WalPoint = (typeof WAL_POINTS)[number];

/** What a WAL writer reports of each object it writes. */
export interface WalObserver {
  /** An object of `bytes` was uploaded (or failed to) in `seconds`. */
  uploaded(bytes: number, seconds: number, ok: boolean): void;
  /** An object's CommitWal took `seconds` and was applied (`refusedCode` null) or refused or of unknown outcome (its error code). */
  committed(seconds: number, refusedCode: string | null): void;
}

/** An append waiting in the queue or riding in the flush in flight. */
interface PendingAppend {
  request: WalAppendRequest;
  resolve: (result: WalAppendResult) => void;
  reject: (error: Error) => void;
}

/** An append placed in the object being flushed, with the offsets and bytes it was given there. */
interface PlacedAppend {
  pending: PendingAppend;
  range: WalRange;
}

/** A WAL object formed and being uploaded, waiting for its turn to commit. */
interface ObjectInFlight {
  key: string;
  /** The appends it still carries: a failure of an earlier object takes out the ranges of that object's streams. */
  placed: PlacedAppend[];
  /** Resolves with the upload's error, or null once the object is stored. Never rejects. */
  uploaded: Promise<Error | null>;
}

/** Digits of the per-writer sequence in a WAL object key, so keys of one incarnation sort in flush order. */
const WAL_SEQUENCE_DIGITS = 12;

/** The key of the `sequence`-th WAL object of a node incarnation (docs/architecture.md §5). */
export function walObjectKey(nodeId: string, nodeEpoch: number, sequence: number): string {
  return `${WAL_KEY_PREFIX}${nodeId}/${nodeEpoch}/${String(sequence).padStart(WAL_SEQUENCE_DIGITS, '0')}`;
}

/**
 * The write path of one data node incarnation (docs/architecture.md §4, §4). Appends from all streams the node leads are
 * queued and flushed as one WAL object when the queued bytes reach `flushBytes` or `lingerMs` after the
 * queue became non-empty; the object is uploaded, then committed with one `CommitWal`. An append is
 * acknowledged only when that commit applied without rejection, so a fenced incarnation may upload but can
 * never acknowledge.
 *
 * Flushing (`walObjectDue`): an object is formed when the queue holds `flushBytes`, or, when no other object
 * is in flight, once the oldest queued append has waited `lingerMs` or (`flushWhenIdle`) at the end of the
 * turn of the event loop in which appends were queued with nothing in flight; so several objects are in
 * flight only when they are full, and under load appends gather into larger objects while the one before
 * uploads and commits.
 *
 * Ordering: up to `uploadsInFlight` objects are uploaded at once, but they are committed one at a time in
 * the order they were formed, and appends enter objects in the order `append` was called, so the batches
 * of a stream commit in call order with contiguous offsets. Offsets are assigned when an object is formed:
 * after the stream's range in the newest object still in flight, else from the stream's committed end in
 * the view, or from the end of this writer's last commit of the stream when the view has not caught up.
 *
 * Failures: a rejected commit fails every append of its object with the rejection's typed error; a failed
 * upload fails them with `UnavailableError`. Either way the appends queued behind them for the same streams
 * fail too, queued or placed in a later object in flight (with the same error when it is `Fenced`, else with
 * `UnavailableError`), because a client that retries the failed batch expects its later batches not to
 * overtake it; appends to other streams proceed. An append to a stream that the view
 * already shows is not open by this incarnation at the append's stream epoch fails with `Fenced` before any
 * upload, so one moved bucket does not make the all-or-nothing commit fail the node's other streams.
 */
export class WalWriter {
  private readonly nodeId: string;
  private readonly nodeEpoch: number;
  private readonly store: ObjectStore;
  private readonly meta: MetaAccess;
  private readonly flushBytes: number;
  private readonly lingerMs: number;
  private readonly flushWhenIdle: boolean;
  private readonly queuedBytesMax: number;
  private readonly uploadsInFlight: number;
  private readonly onCommitted: CommittedListener | undefined;
  private readonly observer: WalObserver | undefined;
  private readonly reached: (point: WalPoint) => void;

  private queue: PendingAppend[] = [];
  private queuedBytes = 0;
  private lingerTimer: NodeJS.Timeout | undefined;
  /** True once the oldest queued append has waited `lingerMs`; cleared when an object is formed. */
  private lingerExpired = false;
  /** Set when an append is queued with no object in flight, to end that turn of the event loop (`flushWhenIdle`). */
  private idleTurn: NodeJS.Immediate | undefined;
  /** True once the turn in which appends were queued with nothing in flight has ended; cleared when an object is formed. */
  private idleTurnEnded = false;
  /** Objects formed and not yet committed (or failed), in the order they commit. */
  private inFlight: ObjectInFlight[] = [];
  /** True while the commit loop runs over `inFlight`. */
  private committing = false;
  private closing = false;
  private idleWaiters: (() => void)[] = [];
  /** Sequence of the next WAL object of this incarnation. */
  private nextSequence = 0;
  /**
   * The end of this writer's last accepted commit per stream, kept until the view shows it. `MetaStore`
   * updates its view before `propose` resolves, so this matters only for a view that lags its proposals.
   */
  private readonly committedEndByStream = new Map<string, number>();

  constructor(options: WalWriterOptions) {
    this.nodeId = options.nodeId;
    this.nodeEpoch = options.nodeEpoch;
    this.store = options.store;
    this.meta = options.meta;
    this.flushBytes = options.flushBytes ?? LIMITS.walFlushBytes;
    this.lingerMs = options.lingerMs ?? LIMITS.walLingerMs;
    this.flushWhenIdle = options.flushWhenIdle ?? LIMITS.walFlushWhenIdle;
    this.queuedBytesMax = options.queuedBytesMax ?? LIMITS.walQueuedBytesMax;
    this.uploadsInFlight = options.uploadsInFlight ?? LIMITS.walUploadsInFlightMax;
    this.onCommitted = options.onCommitted;
    this.observer = options.observer;
    this.reached = options.reached ?? (() => undefined);
    if (!(this.flushBytes > 0) || !(this.lingerMs >= 0) || !(this.queuedBytesMax >= this.flushBytes) || !(Number.isSafeInteger(this.uploadsInFlight) && this.uploadsInFlight >= 1)) {
      throw new Error(
        `WalWriter needs flushBytes > 0, lingerMs >= 0, queuedBytesMax >= flushBytes and uploadsInFlight >= 1 (got ${this.flushBytes}, ${this.lingerMs}, ${this.queuedBytesMax}, ${this.uploadsInFlight})`,
      );
    }
  }

  /** Bytes of appends waiting for a flush (not counting the objects in flight). */
  get queuedByteCount(): number {
    return this.queuedBytes;
  }

  /**
   * Queues one batch and resolves with its offsets once the WAL object holding it is committed. Rejects with
   * `InvalidArgumentError` for a malformed request, `UnavailableError` when the queue is full, the writer is
   * closed or the upload failed, and the rejection's typed error (`Fenced`, `Conflict`, …) when the commit
   * was refused.
   */
  append(request: WalAppendRequest): Promise<WalAppendResult> {
    const malformed = describeMalformedRequest(request);
    if (malformed !== null) return Promise.reject(new InvalidArgumentError(`append: ${malformed}`));
    if (this.closing) return Promise.reject(new UnavailableError(`the WAL writer of node ${this.nodeId} epoch ${this.nodeEpoch} is closed`));
    const size = request.payload.byteLength;
    if (size > this.queuedBytesMax) {
      return Promise.reject(new InvalidArgumentError(`append: a batch of ${size} bytes exceeds the ${this.queuedBytesMax} bytes a WAL writer can queue`));
    }
    if (this.queuedBytes + size > this.queuedBytesMax) {
      return Promise.reject(
        new UnavailableError(`the WAL writer of node ${this.nodeId} has ${this.queuedBytes} bytes queued: a batch of ${size} bytes does not fit below ${this.queuedBytesMax}`),
      );
    }
    return new Promise<WalAppendResult>((resolve, reject) => {
      this.queue.push({ request, resolve, reject });
      this.queuedBytes += size;
      this.armLingerTimer();
      this.armIdleTurn();
      this.maybeFlush();
    });
  }

  /** Stops taking appends, flushes everything queued and resolves once no object is in flight. */
  async close(): Promise<void> {
    this.closing = true;
    this.maybeFlush();
    if (this.inFlight.length === 0 && this.queue.length === 0) {
      this.clearLingerTimer();
      this.clearIdleTurn();
      return;
    }
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  private armLingerTimer(): void {
    if (this.lingerTimer !== undefined || this.lingerExpired) return;
    this.lingerTimer = setTimeout(() => {
      this.lingerTimer = undefined;
      this.lingerExpired = true;
      this.maybeFlush();
    }, this.lingerMs);
  }

  private clearLingerTimer(): void {
    if (this.lingerTimer !== undefined) clearTimeout(this.lingerTimer);
    this.lingerTimer = undefined;
  }

  /** With nothing in flight, the queue goes out once the appends of this turn of the event loop are in it. */
  private armIdleTurn(): void {
    if (!this.flushWhenIdle || this.idleTurn !== undefined || this.idleTurnEnded || this.inFlight.length > 0) return;
    this.idleTurn = setImmediate(() => {
      this.idleTurn = undefined;
      this.idleTurnEnded = true;
      this.maybeFlush();
    });
  }

  private clearIdleTurn(): void {
    if (this.idleTurn !== undefined) clearImmediate(this.idleTurn);
    this.idleTurn = undefined;
    this.idleTurnEnded = false;
  }

  /** Forms and starts uploading objects while fewer than `uploadsInFlight` are in flight and the queue is due: full enough, lingered, or closing. */
  private maybeFlush(): void {
    while (this.inFlight.length < this.uploadsInFlight) {
      if (this.queue.length === 0) {
        this.clearLingerTimer();
        this.clearIdleTurn();
        this.lingerExpired = false;
        if (this.closing && this.inFlight.length === 0) this.notifyIdle();
        return;
      }
      const due = walObjectDue({
        closing: this.closing,
        queuedBytes: this.queuedBytes,
        flushBytes: this.flushBytes,
        inFlight: this.inFlight.length,
        lingerExpired: this.lingerExpired,
        idleTurnEnded: this.idleTurnEnded,
      });
      if (due === null) return;
      const batch = this.takeBatch();
      // What stays queued lingers afresh from now; if the uploads in flight outlast the linger, it follows right after.
      this.clearLingerTimer();
      this.clearIdleTurn();
      this.lingerExpired = false;
      if (this.queue.length > 0) this.armLingerTimer();
      this.startUpload(batch);
    }
  }

  /** Takes appends from the head of the queue: up to `flushBytes` (at least one) and the ranges one commit may hold. */
  private takeBatch(): PendingAppend[] {
    let bytes = 0;
    let count = 0;
    for (const pending of this.queue) {
      const size = pending.request.payload.byteLength;
      if (count > 0 && (bytes + size > this.flushBytes || count >= LIMITS.walRangesPerObjectMax)) break;
      bytes += size;
      count++;
    }
    const batch = this.queue.slice(0, count);
    this.queue = this.queue.slice(count);
    this.queuedBytes -= bytes;
    return batch;
  }

  private notifyIdle(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  /** Places `batch` in a new object, starts its upload and queues it for its commit. */
  private startUpload(batch: PendingAppend[]): void {
    const placed = this.place(batch);
    if (placed.length === 0) return;
    const key = walObjectKey(this.nodeId, this.nodeEpoch, this.nextSequence++);
    // The batches go out as the object's parts, without being joined into one array first.
    const body = placed.map((entry) => entry.pending.request.payload);
    const started = performance.now();
    const bytes = body.reduce((sum, part) => sum + part.byteLength, 0);
    this.reached('uploading');
    const uploaded = this.store.put(key, body).then(
      () => {
        this.observer?.uploaded(bytes, (performance.now() - started) / 1000, true);
        return null;
      },
      (error: unknown) => {
        this.observer?.uploaded(bytes, (performance.now() - started) / 1000, false);
        return new UnavailableError(`upload of WAL object ${key} failed: ${describe(error)}`);
      },
    );
    this.inFlight.push({ key, placed, uploaded });
    this.runCommits();
  }

  /** Commits the objects in flight one at a time, in the order they were formed, forming more as places free up. */
  private runCommits(): void {
    if (this.committing) return;
    this.committing = true;
    void (async () => {
      while (this.inFlight.length > 0) {
        await this.commit(this.inFlight[0]!);
        this.inFlight.shift();
        this.maybeFlush();
      }
      this.committing = false;
      this.maybeFlush();
    })();
  }

  /** Waits for one object's upload and commits what it still carries; settles every append in it. Never throws. */
  private async commit(object: ObjectInFlight): Promise<void> {
    const uploadError = await object.uploaded;
    const { key, placed } = object;
    if (placed.length === 0) return;
    if (uploadError !== null) {
      this.fail(object, uploadError);
      return;
    }
    this.reached('uploaded');
    const command: CommitWal = { type: 'CommitWal', nodeId: this.nodeId, nodeEpoch: this.nodeEpoch, object: key, ranges: placed.map((entry) => entry.range) };
    let rejection: Error | undefined;
    const started = performance.now();
    try {
      const outcome = await this.meta.propose(command);
      if (!outcome.ok) rejection = errorOfCode(outcome.rejection.code, outcome.rejection.message);
    } catch (error) {
      // The outcome is unknown: the commit may still apply. The appends are not acknowledged, and a retry
      // by an idempotent writer is answered from the view if it did apply.
      rejection = error instanceof MinkError ? error : new UnavailableError(`commit of WAL object ${key} failed: ${describe(error)}`);
    }
    this.observer?.committed((performance.now() - started) / 1000, rejection === undefined ? null : rejection instanceof MinkError ? rejection.code : 'Internal');
    if (rejection !== undefined) {
      this.fail(object, rejection);
      return;
    }
    this.reached('committed');
    this.acknowledge(key, placed);
  }

  /**
   * Assigns offsets and byte positions to the appends of one object. Appends to a missing bucket or to a
   * stream the view shows is not open by this incarnation at their stream epoch are rejected here: the
   * commit would refuse them, and with them every other stream of the object.
   */
  private place(batch: PendingAppend[]): PlacedAppend[] {
    const view = this.meta.view;
    // A stream's next batch starts after its range in the newest object in flight (a failed object's
    // ranges have been taken out), else from its committed end below.
    const nextOffsetByStream = new Map<string, number>();
    for (const object of this.inFlight) for (const { pending, range } of object.placed) nextOffsetByStream.set(pending.request.bucketId, range.endOffset);
    const placed: PlacedAppend[] = [];
    let position = 0;
    for (const pending of batch) {
      const request = pending.request;
      const refusal = this.describeRefusal(view, request);
      if (refusal !== null) {
        pending.reject(refusal);
        continue;
      }
      const stream = getIn(view.buckets, request.bucketId)!.stream;
      // An earlier attempt of this batch whose commit's outcome was unknown may have applied since the leader
      // took this one: written again here, its records would be stored twice.
      const repeated = request.writer ? describeCommittedSequence(writerOf(stream, request.writer.id), request.writer.id, request.writer.seq) : null;
      if (repeated !== null) {
        pending.reject(new ConflictError(`bucket ${request.bucketId}: ${repeated}`));
        continue;
      }
      const committedEnd = stream.endOffset;
      const startOffset = nextOffsetByStream.get(request.bucketId) ?? Math.max(committedEnd, this.committedEndByStream.get(request.bucketId) ?? 0);
      if (request.expectedStartOffset !== undefined && request.expectedStartOffset !== startOffset) {
        pending.reject(new UnavailableError(`a batch of bucket ${request.bucketId} planned for offset ${request.expectedStartOffset} would start at ${startOffset}: not written`));
        continue;
      }
      const endOffset = startOffset + request.recordCount;
      nextOffsetByStream.set(request.bucketId, endOffset);
      request.stampBaseOffset?.(request.payload, startOffset);
      const length = request.payload.byteLength;
      const range: WalRange = {
        tableId: request.tableId,
        partition: request.partition,
        bucket: request.bucket,
        streamEpoch: request.streamEpoch,
        startOffset,
        endOffset,
        position,
        length,
        ...(request.writer ? { writer: { id: request.writer.id, seq: request.writer.seq } } : {}),
        ...(request.transaction ? { transaction: { ...request.transaction } } : {}),
      };
      placed.push({ pending, range });
      position += length;
    }
    return placed;
  }

  private describeRefusal(view: View, request: WalAppendRequest): MinkError | null {
    const record = getIn(view.buckets, request.bucketId);
    if (!record) return new NotFoundError(`bucket ${request.bucketId} does not exist`);
    const stream = record.stream;
    if (!isStreamOpenBy(stream, { nodeId: this.nodeId, nodeEpoch: this.nodeEpoch }, request.streamEpoch)) {
      return new MinkError(
        'Fenced',
        `the stream of bucket ${request.bucketId} is not open by node ${this.nodeId} at node epoch ${this.nodeEpoch} and stream epoch ${request.streamEpoch} ` +
          `(it is ${stream.state} by node ${stream.node ?? 'none'} at node epoch ${stream.nodeEpoch} and stream epoch ${stream.epoch})`,
      );
    }
    return null;
  }

  private acknowledge(key: string, placed: PlacedAppend[]): void {
    const view = this.meta.view;
    for (const { pending, range } of placed) {
      const id = pending.request.bucketId;
      this.committedEndByStream.set(id, range.endOffset);
      const slice: DataSlice = { object: key, startOffset: range.startOffset, endOffset: range.endOffset, position: range.position, length: range.length };
      if (this.onCommitted) {
        try {
          this.onCommitted(id, slice, pending.request.payload);
        } catch (error) {
          // A listener that throws is a bug; it must not cost the client its acknowledgement, so it crashes apart.
          setImmediate(() => {
            throw error;
          });
        }
      }
      pending.resolve({ baseOffset: range.startOffset, count: range.endOffset - range.startOffset });
    }
    // Forget ends the view has caught up with, so the map holds only streams whose commits it has not shown yet.
    for (const { pending } of placed) {
      const id = pending.request.bucketId;
      const record = getIn(view.buckets, id);
      if (record && record.stream.endOffset >= (this.committedEndByStream.get(id) ?? 0)) this.committedEndByStream.delete(id);
    }
  }

  /**
   * Fails the appends of one object and those behind them for the same streams: placed in a later object
   * in flight (their ranges are taken out before it commits) or still queued.
   */
  private fail(object: ObjectInFlight, error: Error): void {
    const placed = object.placed;
    object.placed = [];
    const streams = new Set(placed.map((entry) => entry.pending.request.bucketId));
    for (const stream of streams) this.committedEndByStream.delete(stream);
    for (const { pending } of placed) pending.reject(error);
    // A fenced stream is lost to this incarnation, so its later batches get the same answer; otherwise they
    // are merely unwritten and may be retried at once.
    const fenced = error instanceof MinkError && error.code === 'Fenced';
    const behindError = (bucketId: string) =>
      fenced ? error : new UnavailableError(`an earlier batch of bucket ${bucketId} failed (${error.message}); this one was not written so it cannot overtake the retry`);
    for (const later of this.inFlight) {
      if (later === object) continue;
      const taken = later.placed.filter((entry) => streams.has(entry.pending.request.bucketId));
      if (taken.length === 0) continue;
      later.placed = later.placed.filter((entry) => !streams.has(entry.pending.request.bucketId));
      for (const { pending } of taken) pending.reject(behindError(pending.request.bucketId));
    }
    const behind = this.queue.filter((pending) => streams.has(pending.request.bucketId));
    if (behind.length === 0) return;
    this.queue = this.queue.filter((pending) => !streams.has(pending.request.bucketId));
    for (const pending of behind) {
      this.queuedBytes -= pending.request.payload.byteLength;
      pending.reject(behindError(pending.request.bucketId));
    }
  }
}


function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function describeMalformedRequest(request: WalAppendRequest): string | null {
  for (const field of ['tableId', 'bucket', 'streamEpoch', 'recordCount'] as const) {
    if (!isCount(request[field])) return `${field} must be a non-negative integer, not ${String(request[field])}`;
  }
  if (request.recordCount === 0) return 'recordCount must be positive';
  if (request.partition !== null && typeof request.partition !== 'string') return 'partition must be a string or null';
  if (!(request.payload instanceof Uint8Array) || request.payload.byteLength === 0) return 'payload must be a non-empty byte array';
  if (request.bucketId !== bucketIdOf(request.tableId, request.partition, request.bucket)) {
    return `bucketId '${request.bucketId}' does not name table id ${request.tableId} partition ${request.partition ?? 'none'} bucket ${request.bucket}`;
  }
  if (request.expectedStartOffset !== undefined && !isCount(request.expectedStartOffset)) return 'expectedStartOffset must be a non-negative integer';
  if (request.writer !== undefined && (typeof request.writer.id !== 'string' || request.writer.id === '' || !isCount(request.writer.seq))) {
    return 'writer must be {id: a non-empty string, seq: a non-negative integer}';
  }
  if (request.transaction !== undefined) return describeMalformedTransaction(request.transaction);
  return null;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
