import { LIMITS } from '@mink/config';
import { bucketId as bucketIdOf, getIn, isStreamOpenBy, isWalSlice, ownRecord, valuesIn } from '@mink/meta';
import type { BucketRecord, CommitStreamObject, DataSlice, Outcome, StreamObjectSlice } from '@mink/meta';
import { MinkError } from '@mink/protocol';
import type { ObjectStore } from './object-store';
import { assertPackBounds, packedIndex, planPackedSlices, type SliceMove } from './packed-slice';
import { readSlicePayloads } from './slice-reads';
import { PeriodicRounds } from './periodic-rounds';
import { SILENT_LOGGER, type Clock, type MaintenanceLogger, type MetaAccess } from './ports';

/** Prefix of the keys of WAL objects (docs/architecture.md §7); slices in them are what compaction rewrites. */
export { WAL_KEY_PREFIX } from '@mink/meta';

/**
 * The key of the stream object that holds records [startOffset, endOffset) of a bucket's stream at stream
 * epoch `streamEpoch`, written by node incarnation `nodeEpoch` (docs/architecture.md §7). Partition names never hold `/`,
 * and the table id and bucket number hold no `-`, so the key names one stream and range unambiguously; the
 * node epoch keeps an object written by a fenced incarnation apart from the one its successor writes for
 * the same range, and the stream epoch one of a dropped partition's stream apart from the one of the same
 * name created again (its offsets start at 0 again, at higher epochs). Keys written before the stream epoch
 * was added end at the node epoch; they stay readable, since slices name their objects.
 */
export function streamObjectKey(tableId: number, partition: string | null, bucket: number, startOffset: number, endOffset: number, nodeEpoch: number, streamEpoch: number): string {
  return `streams/${tableId}-${partition ?? '_'}-${bucket}/${startOffset}-${endOffset}-${nodeEpoch}-${streamEpoch}`;
}

export interface CompactorOptions {
  nodeId: string;
  /** The incarnation this compactor belongs to; it compacts only streams this incarnation holds open. */
  nodeEpoch: number;
  store: ObjectStore;
  meta: MetaAccess;
  /** The stream epoch this node leads a bucket's stream at, or null when it does not lead it (yet). */
  isLeading: (bucketId: string) => { streamEpoch: number } | null;
  /** Stamps the commits, so the WAL objects they release start their grace period at this time. */
  clock: Clock;
  /** WAL slices a stream must hold before it is compacted; `LIMITS.compactionSlicesMin` when absent. */
  minSlices?: number;
  /** Bytes of batches gathered into one stream object; `LIMITS.streamObjectBytesMax` when absent. */
  objectBytesMax?: number;
  /** Stream objects one round writes for one stream at most; `LIMITS.compactionObjectsPerStreamRoundMax` when absent. */
  objectsPerStreamRoundMax?: number;
  /** Bytes and batches of one packed slice of a stream object; `LIMITS.streamPackedSliceBytesMax` and `…BatchesMax` when absent. */
  packBytesMax?: number;
  packBatchesMax?: number;
  /** Recent payloads this node still holds (the stream reader's cache): read without a GET. */
  cachedPayloadOf?: (bucketId: string, slice: DataSlice) => Uint8Array | undefined;
  logger?: MaintenanceLogger;
  /** Told the bytes of every stream object committed (metrics). */
  onCompacted?: (bytes: number) => void;
  /** Told, after a commit applied, where the batches moved: `from` their WAL slices `to` the slice of the stream object that packs them (the reader's `moveCached`). */
  onMoved?: (bucketId: string, moved: readonly SliceMove[]) => void;
}

/** The slices of one stream chosen for one stream object. */
interface CompactionPlan {
  bucketId: string;
  record: BucketRecord;
  streamEpoch: number;
  slices: DataSlice[];
  /** WAL slices of the stream after the chosen ones (what a bound left for another object). */
  walSlicesLeft: number;
}

/**
 * Whether a round compacts a stream again after it committed `objectsThisRound` stream objects of it in this
 * round, the last one leaving `walSlicesLeft` WAL slices behind: while they would start a compaction on their
 * own (`minSlices`), up to `objectsMax` objects per stream and round. A stream that takes more bytes per round
 * than one object holds is so kept within a round of its appends instead of falling further behind.
 */
export function compactsAgain(walSlicesLeft: number, minSlices: number, objectsThisRound: number, objectsMax: number): boolean {
  return walSlicesLeft >= minSlices && objectsThisRound < objectsMax;
}

/**
 * Compaction of one data node incarnation (docs/architecture.md §7): the committed batches of the streams it leads are
 * moved out of WAL objects, which mix streams, into one stream object per stream and range, so a WAL object
 * can be deleted once no stream points into it any more and a stream's history is read from few objects.
 *
 * A round looks at every stream this incarnation holds open and leads. A stream with at least `minSlices`
 * slices in WAL objects gets its first run of consecutive WAL slices (up to `objectBytesMax` bytes, at least
 * one slice) read from the node's cache of recent batches or with ranged GETs (one per run of back-to-back
 * slices of one WAL object), concatenated into one stream object, uploaded, and committed with
 * `CommitStreamObject`; while the WAL slices left would start a compaction on their own, the stream gets
 * another object in the same round, up to `objectsPerStreamRoundMax` (`compactsAgain`). The batches are packed (`planPackedSlices`): runs of them up to `packBytesMax` share
 * one slice, their index after them, so the view (which every process holds, and which a CommitWal copies a
 * stream's slices of) keeps a slice per ~1 MiB of a stream's history instead of one per append; readers cut
 * a packed slice back into its batches (`batchesOfSlice`). The view's slices are committed data, so a
 * compaction only covers offsets below the committed end and appends, which only add slices after it, never
 * conflict with it. The round finds everything through the view and never lists the object store.
 *
 * Failures never escape a round: a rejected commit (the node or the stream was fenced, the stream changed)
 * or a failed read or upload is logged and the stream is left for a later round. An object uploaded for a
 * rejected commit is an orphan no view will name, so it is deleted at once (best effort). An object whose
 * commit has an unknown outcome is kept, since the commit may still apply.
 */
export class Compactor {
  private readonly nodeId: string;
  private readonly nodeEpoch: number;
  private readonly store: ObjectStore;
  private readonly meta: MetaAccess;
  private readonly isLeading: (bucketId: string) => { streamEpoch: number } | null;
  private readonly clock: Clock;
  private readonly minSlices: number;
  private readonly objectBytesMax: number;
  private readonly objectsPerStreamRoundMax: number;
  private readonly logger: MaintenanceLogger;
  private readonly cachedPayloadOf: ((bucketId: string, slice: DataSlice) => Uint8Array | undefined) | undefined;
  private readonly onCompacted: ((bytes: number) => void) | undefined;
  private readonly onMoved: ((bucketId: string, moved: readonly SliceMove[]) => void) | undefined;
  private readonly pack: { bytesMax: number; batchesMax: number };
  private readonly rounds: PeriodicRounds<number>;

  constructor(options: CompactorOptions) {
    this.nodeId = options.nodeId;
    this.nodeEpoch = options.nodeEpoch;
    this.store = options.store;
    this.meta = options.meta;
    this.isLeading = options.isLeading;
    this.clock = options.clock;
    this.minSlices = options.minSlices ?? LIMITS.compactionSlicesMin;
    this.objectBytesMax = options.objectBytesMax ?? LIMITS.streamObjectBytesMax;
    this.objectsPerStreamRoundMax = options.objectsPerStreamRoundMax ?? LIMITS.compactionObjectsPerStreamRoundMax;
    this.cachedPayloadOf = options.cachedPayloadOf;
    this.onCompacted = options.onCompacted;
    this.onMoved = options.onMoved;
    this.pack = { bytesMax: options.packBytesMax ?? LIMITS.streamPackedSliceBytesMax, batchesMax: options.packBatchesMax ?? LIMITS.streamPackedSliceBatchesMax };
    this.logger = options.logger ?? SILENT_LOGGER;
    if (!(Number.isSafeInteger(this.minSlices) && this.minSlices >= 1) || !(this.objectBytesMax > 0) || !(Number.isSafeInteger(this.objectsPerStreamRoundMax) && this.objectsPerStreamRoundMax >= 1)) {
      throw new Error(
        `Compactor needs minSlices >= 1, objectBytesMax > 0 and objectsPerStreamRoundMax >= 1 (got ${this.minSlices}, ${this.objectBytesMax}, ${this.objectsPerStreamRoundMax})`,
      );
    }
    assertPackBounds(this.pack);
    this.rounds = new PeriodicRounds(
      () => this.runRound(),
      (error) => this.logger.warn({ error: describe(error) }, 'compaction round failed'),
    );
  }

  /**
   * Runs one round and resolves with the number of streams whose compaction committed. A call while a
   * round is in flight joins that round instead of starting a second one.
   */
  compactOnce(): Promise<number> {
    return this.rounds.runOnce();
  }

  /**
   * The replay of s3stream failover (docs/architecture.md §7, docs/ownership.md §4 ("Failover") step 3): after this node took a stream
   * over from a dead incarnation, every WAL slice the stream still has (the dead node's committed WAL) is
   * rewritten into stream objects now, whatever `minSlices` says, so the dead node's WAL objects can be
   * released. Resolves with the number of stream objects committed; failures are logged like a round's.
   */
  async compactStream(bucketId: string): Promise<number> {
    let committed = 0;
    for (let attempt = 0; attempt < LIMITS.streamObjectSlicesMax; attempt++) {
      const plan = this.plan(bucketId, 1);
      if (plan === null || !(await this.compact(plan))) break;
      committed++;
    }
    return committed;
  }

  /** Runs a round every `intervalMs` in the background until `stop`. */
  start(intervalMs: number): void {
    this.rounds.start(intervalMs);
  }

  /** Stops the background rounds and resolves once the round in flight has finished. */
  async stop(): Promise<void> {
    await this.rounds.stop();
  }

  /**
   * One pass over the streams this node has open, in the bucket map's order: putting 100 000 buckets in
   * table order (sorting the tables, naming every bucket of each) was most of a round that compacted
   * nothing. The pass yields to the event loop every `LIMITS.metaSnapshotYieldEveryMs` of work: at 100 000
   * buckets a round that compacted nothing ran as one synchronous stretch over every bucket, every 10 s,
   * on the loop that also sends the node's heartbeats.
   */
  private async runRound(): Promise<number> {
    let compacted = 0;
    let sliceStartedAtMs = performance.now();
    for (const record of valuesIn(this.meta.view.buckets)) {
      if (performance.now() - sliceStartedAtMs >= LIMITS.metaSnapshotYieldEveryMs) {
        await new Promise((resolve) => setImmediate(resolve));
        sliceStartedAtMs = performance.now();
      }
      // Streams another node holds are skipped without planning (a stream opened since the round began waits for the next).
      if (record.stream.node !== this.nodeId) continue;
      // Each stream is planned on the newest view, since earlier streams of the round took time.
      const bucketId = bucketIdOf(record.tableId, record.partition, record.bucket);
      let plan = this.plan(bucketId);
      if (plan === null || !(await this.compact(plan))) continue;
      compacted++;
      // A backlog of more than one object's worth is compacted on in this round (see compactsAgain).
      for (let objects = 1; compactsAgain(plan.walSlicesLeft, this.minSlices, objects, this.objectsPerStreamRoundMax); objects++) {
        plan = this.plan(bucketId);
        if (plan === null || !(await this.compact(plan))) break;
      }
    }
    return compacted;
  }

  /** The slices to compact in one stream, or null when this incarnation does not hold it or it has too few. */
  private plan(bucketId: string, minSlices: number = this.minSlices): CompactionPlan | null {
    const view = this.meta.view;
    if (ownRecord(view.nodes, this.nodeId)?.epoch !== this.nodeEpoch) return null;
    const leading = this.isLeading(bucketId);
    if (leading === null) return null;
    const record = getIn(view.buckets, bucketId);
    if (!record) return null;
    const stream = record.stream;
    if (!isStreamOpenBy(stream, { nodeId: this.nodeId, nodeEpoch: this.nodeEpoch }, leading.streamEpoch)) return null;
    // Slices in WAL objects are all in `slices` (a stream's `history` holds stream-object slices only).
    let walSlices = 0;
    for (const slice of stream.slices) if (isWalSlice(slice)) walSlices++;
    if (walSlices < minSlices) return null;

    const first = stream.slices.findIndex(isWalSlice);
    const slices: DataSlice[] = [];
    let bytes = 0;
    for (let index = first; index < stream.slices.length; index++) {
      const slice = stream.slices[index]!;
      if (!isWalSlice(slice)) break;
      if (slices.length > 0 && (bytes + slice.length > this.objectBytesMax || slices.length >= LIMITS.streamObjectSlicesMax)) break;
      slices.push(slice);
      bytes += slice.length;
    }
    return { bucketId, record, streamEpoch: leading.streamEpoch, slices, walSlicesLeft: walSlices - slices.length };
  }

  /** Reads, uploads and commits one stream object; true when the commit applied. Expected failures are logged. */
  private async compact(plan: CompactionPlan): Promise<boolean> {
    const { record, slices } = plan;
    const startOffset = slices[0]!.startOffset;
    const endOffset = slices[slices.length - 1]!.endOffset;
    const key = streamObjectKey(record.tableId, record.partition, record.bucket, startOffset, endOffset, this.nodeEpoch, record.stream.epoch);
    const context = { bucketId: plan.bucketId, object: key, startOffset, endOffset, slices: slices.length };

    let payloads: Uint8Array[];
    try {
      const cachedPayloadOf = this.cachedPayloadOf;
      payloads = await readSlicePayloads(this.store, slices, {
        readsInFlight: LIMITS.compactionReadsInFlightMax,
        readBytesMax: this.objectBytesMax,
        cached: cachedPayloadOf ? (slice) => cachedPayloadOf(plan.bucketId, slice) : undefined,
      });
    } catch (error) {
      // Typed errors (Unavailable, NotFound, …) are the store's expected failures; anything else is a bug.
      if (!(error instanceof MinkError)) throw error;
      this.logger.warn({ ...context, error: describe(error) }, 'compaction could not read the slices of a stream; it is left for a later round');
      return false;
    }
    // Consecutive batches are packed into slices of about `pack.bytesMax`, each followed by its index.
    const pieces: StreamObjectSlice[] = [];
    const parts: Uint8Array[] = [];
    const moves: { from: DataSlice[]; piece: StreamObjectSlice }[] = [];
    let position = 0;
    for (const { first, endExclusive } of planPackedSlices(slices, this.pack)) {
      const packed = slices.slice(first, endExclusive);
      const piece: StreamObjectSlice = { startOffset: packed[0]!.startOffset, endOffset: packed.at(-1)!.endOffset, position, length: 0 };
      for (let index = first; index < endExclusive; index++) {
        parts.push(payloads[index]!);
        piece.length += slices[index]!.length;
      }
      if (packed.length > 1) {
        const index = packedIndex(packed);
        parts.push(index);
        piece.length += index.byteLength;
        piece.batches = packed.length;
      }
      position += piece.length;
      pieces.push(piece);
      moves.push({ from: packed, piece });
    }
    try {
      // The slices go out as the object's parts, in order, without being joined into one array first.
      await this.store.put(key, parts);
    } catch (error) {
      this.logger.warn({ ...context, error: describe(error) }, 'compaction could not upload a stream object');
      // The upload may have landed although it failed; nothing will commit it.
      await this.discard(key);
      return false;
    }
    const command: CommitStreamObject = {
      type: 'CommitStreamObject',
      nodeId: this.nodeId,
      nodeEpoch: this.nodeEpoch,
      tableId: record.tableId,
      partition: record.partition,
      bucket: record.bucket,
      streamEpoch: plan.streamEpoch,
      object: key,
      startOffset,
      endOffset,
      slices: pieces,
      atMs: this.clock.nowMs(),
    };
    let outcome: Outcome;
    try {
      outcome = await this.meta.propose(command);
    } catch (error) {
      // The commit may still apply, and then the object is the stream's data: it must stay.
      this.logger.warn({ ...context, error: describe(error) }, 'the outcome of a compaction commit is unknown; its object is kept');
      return false;
    }
    if (outcome.ok) {
      this.onCompacted?.(position);
      this.onMoved?.(
        plan.bucketId,
        moves.map(({ from, piece }) => ({ from, to: { object: key, ...piece } })),
      );
      return true;
    }
    this.logger.warn(
      { ...context, code: outcome.rejection.code, reason: outcome.rejection.message },
      'a compaction commit was rejected; its uploaded object is deleted',
    );
    await this.discard(key);
    return false;
  }

  /**
   * Deletes an uploaded object no commit names. The view is checked first: an object of the same key whose
   * earlier commit had an unknown outcome and applied after all is the stream's data and must stay.
   */
  private async discard(key: string): Promise<void> {
    const view = this.meta.view;
    if (getIn(view.objects, key) !== undefined || getIn(view.garbage, key) !== undefined) return;
    try {
      await this.store.delete([key]);
    } catch (error) {
      this.logger.warn({ object: key, error: describe(error) }, 'could not delete an orphaned stream object');
    }
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
