/**
 * Executes one tiering round of a table (docs/architecture.md §9): reads each bucket's range of committed batches, writes
 * Parquet data files into the table's Iceberg lake table, and commits one Iceberg snapshot under metadata
 * named by the round (`v{N+1}-t{tableId}r{tieringEpoch}.metadata.json`).
 *
 * A log table's records are appended: each bucket's range becomes new data files next to the old ones, and
 * once a bucket holds more than LAKE_LIMITS.logCompactionSmallFilesMax small files the round rewrites its
 * adjacent small files (the new one included) into one, which replaces them in the same commit
 * (log-bucket-compaction.ts). A primary-key table's stream is its changelog, and its lake holds the merged
 * state, copy-on-write per bucket: each bucket with changes gets ONE new data file, the rows of its old
 * file(s) with the range's changes folded in by primary key (pk-bucket-merge.ts), which replaces the old
 * file(s) in the same commit.
 * Readers therefore need no delete files (DuckDB and PyIceberg do not read equality deletes reliably).
 *
 * The metadata log, not the lake, is the commit point. The executor stops after the Iceberg commit and
 * returns the metadata key; the caller proposes `CommitTieringRound` with it, and only once that applied
 * publishes the version hint (`publishLakeHint`). A round fenced at any point before the log commit leaves
 * only objects no committed metadata names: its data files, manifests and perhaps its own metadata file,
 * all under names carrying its tag, so it can never overwrite a successor's files.
 *
 * Order of work, with a `heartbeat` (which throws once the round is fenced) before every read, before
 * every data file is stored and before the Iceberg commit:
 *   1. load the lake table at the plan's metadata key and check the plan against it;
 *   2. per bucket with a non-empty range, in bucket order:
 *      - log table: read batches from the range's start, cut at `fileSourceBytesMax` bytes of stored
 *        batches into data files (so one process holds at most one file's batches and its Parquet), and
 *        store each file, except a small last one, held until the bucket's compaction is decided (the
 *        base's live files are listed from its manifests once per round); then compact the bucket if it
 *        has too many small files, and store the last file unless the compaction took it in;
 *      - primary-key table: read the bucket's live files of the base snapshot (listed from its manifests
 *        once per round), fold the range's changelog into them within LAKE_LIMITS' pk bounds, and store
 *        the merged state as one file (none when no key is live);
 *   3. commit one snapshot with every file added, the replaced ones removed, and the merged tiered offsets
 *      (a primary-key round whose changes all cancel out commits a snapshot that only moves the offsets).
 * An empty round (every range empty) writes nothing and returns the plan's metadata key and snapshot
 * unchanged (`committed: false`); with no metadata key yet it is refused, as there is nothing to name (the
 * planner starts no round without records, so neither should happen in practice).
 */
import { type TableRecord, type TieringRange, lakeBucketOf, logFormatOf, streamBucketOfLake } from '@mink/meta';
import { InvalidArgumentError } from '@mink/protocol';
import {
  type DataFile,
  IcebergTable,
  LAKE_LIMITS,
  type LakeBatch,
  type LakeIdSource,
  type LakeObjectStore,
  type ParquetDataFile,
  icebergSchemaOf,
  lakeStoreUri,
  parquetOfArrow,
  roundTag,
} from '@mink/lake';
import type { ObjectStore } from '@mink/s3stream';
import { type LogCompactionBounds, compactLogBucket, logCompactionBoundsOf } from './log-bucket-compaction';
import { type PkMergeBounds, mergePrimaryKeyBucket } from './pk-bucket-merge';
import { forEachBatchOfRange } from './range-reader';

export type { TieringRange } from '@mink/meta';

/** A round as the coordinator hands it out: which ranges of which table, on top of which lake metadata. */
export interface TieringRoundPlan {
  tableId: number;
  tableName: string;
  /** The round's tiering epoch; its objects are tagged `t{tableId}r{tieringEpoch}` (roundTag). A retried round needs a new epoch. */
  tieringEpoch: number;
  /** At most one per bucket; the start of each is where the lake at `metadataKey` has the bucket tiered to. */
  ranges: TieringRange[];
  /** The lake's current metadata object as the view records it; null before the first committed round. */
  metadataKey: string | null;
}

/** What a round did; nothing of it is visible until the caller's `CommitTieringRound` applies. */
export interface RoundResult {
  /** False for an empty round, which wrote nothing: `metadataKey` and `snapshotId` are the plan's base then. */
  committed: boolean;
  /** The metadata object to record in the log (`lake/{table}/metadata/v{N}-r{tieringEpoch}.metadata.json`). */
  metadataKey: string;
  /** The current snapshot's id at `metadataKey`: an Iceberg long, as decimal text (as the view keeps it). */
  snapshotId: string;
  /** Per bucket, the offset below which the lake at `metadataKey` holds every record: earlier rounds' merged with this round's range ends. */
  offsets: Record<number, number>;
  /** Records written (for a primary-key table: the live rows of the buckets it rewrote). */
  rows: number;
  /** Bytes of Parquet written. */
  bytes: number;
  /** Bytes of stored batches read into those files (for a primary-key table also of the old files read back). */
  sourceBytes: number;
  /** Data files written from the round's records (a log table's new file that compaction took in before it was stored included; rewritten files are `compactedFiles`). */
  files: number;
  /** Data files the commit removed: a primary-key table's replaced files, a log table's compacted ones. */
  removedFiles: number;
  /** Log tables: files written by compaction, each replacing a run of small files (0 for a primary-key table). */
  compactedFiles: number;
  /** Log tables: Parquet bytes of the files compaction wrote. */
  compactedBytes: number;
  /** Log tables: Parquet bytes compaction read back from the store (a new file it took in from memory not included). */
  compactionSourceBytes: number;
  /** Log tables: rows of files of earlier rounds that compaction rewrote. */
  compactedRows: number;
}

/** One committed batch as the read port returns it: the records [startOffset, endOffset) of its payload. */
export interface TieringReadBatch {
  startOffset: number;
  endOffset: number;
  payload: Uint8Array;
}

export interface TieringRoundDeps {
  /** The cluster's object store; the lake table is at `lake/{table name}/` in it. */
  store: LakeObjectStore & ObjectStore;
  /**
   * The URI Iceberg records locations under: `s3://{bucket}` plus the store's key prefix. When absent it
   * is taken from the store's `bucket` and `prefix` (as `S3ObjectStore` has them).
   */
  storeUri?: string;
  /** The table from the worker's view: its id, name, kind, columns, primary key, buckets, properties, partition. */
  table: TableRecord;
  /**
   * Committed batches of `bucket` from `fromOffset`, in offset order, without gaps: the first may start
   * before `fromOffset`; at least one batch when `fromOffset` is below the bucket's committed end.
   */
  read: (bucket: number, fromOffset: number) => Promise<{ batches: TieringReadBatch[] }>;
  /** Throws once the round is fenced; the executor then stops at once, without committing. */
  heartbeat: () => Promise<void>;
  /** Progress: a line when the round starts, per data file stored (with running totals) and at the commit. */
  log?: (message: string, fields: object) => void;
  /** Where uuids, snapshot ids and time come from; tests pass fixed ones. */
  ids?: LakeIdSource;
  /** Bytes of stored batches one data file is written from; LAKE_LIMITS.parquetSourceBytesMax (its largest value) when absent. Log tables only. */
  fileSourceBytesMax?: number;
  /** Bounds of merging one bucket of a primary-key table; LAKE_LIMITS' pk bounds when absent (tests pass smaller ones, never larger). */
  pkMergeBounds?: PkMergeBounds;
  /** Bounds of compacting one bucket of a log table; LAKE_LIMITS' when absent (tests pass smaller ones, never larger). */
  logCompactionBounds?: LogCompactionBounds;
}

/**
 * Runs `plan` to its Iceberg commit and returns the metadata key for the caller to commit in the metadata
 * log. Does not write the version hint. Throws what `heartbeat` throws when fenced; InvalidArgumentError
 * for a plan or table it cannot tier (a Kafka topic, a plan of another table,
 * malformed ranges, an empty round of a table with no lake metadata yet), LakeBucketTooLargeError (an
 * InvalidArgumentError) for a primary-key bucket beyond the merge bounds; LakeCommitConflictError when this
 * epoch already committed on this base (a retry must come with a new epoch); and a plain Error for broken
 * invariants (the plan's start is not where the lake has a bucket tiered to, a read leaves a gap, stored
 * batches hold other records than their offsets say, a key live twice in a primary-key table's lake).
 */
export async function executeTieringRound(deps: TieringRoundDeps, plan: TieringRoundPlan): Promise<RoundResult> {
  const { table } = deps;
  checkTieringRound(table, plan);
  const fileSourceBytesMax = deps.fileSourceBytesMax ?? LAKE_LIMITS.parquetSourceBytesMax;
  if (!Number.isSafeInteger(fileSourceBytesMax) || fileSourceBytesMax < 1 || fileSourceBytesMax > LAKE_LIMITS.parquetSourceBytesMax) {
    throw new InvalidArgumentError(`fileSourceBytesMax must be a whole number of bytes from 1 to ${LAKE_LIMITS.parquetSourceBytesMax}, not ${fileSourceBytesMax}`);
  }
  for (const [name, value] of Object.entries(deps.pkMergeBounds ?? {})) checkPkBound(name, value);
  const compactionBounds = logCompactionBoundsOf(deps.logCompactionBounds);
  const log = deps.log ?? (() => undefined);
  const tag = roundTag(plan.tableId, plan.tieringEpoch);
  const ranges = [...plan.ranges].sort((left, right) => left.bucket - right.bucket);

  const lake = new IcebergTable({ store: deps.store, tableName: table.name, storeUri: storeUriOf(deps), schema: icebergSchemaOf(table.columns, table.primaryKey), ids: deps.ids });
  const base = await lake.load(plan.metadataKey);
  const tieredBefore = lake.tieredOffsets();
  for (const range of ranges) {
    const tiered = tieredBefore.get(range.bucket);
    if (tiered !== undefined && tiered !== range.startOffset) {
      throw new Error(`bucket ${range.bucket} of '${table.name}' is tiered up to ${tiered} in ${plan.metadataKey}, but round ${plan.tieringEpoch} starts it at ${range.startOffset}`);
    }
  }
  const offsetsAfter = new Map(tieredBefore);
  for (const range of ranges) offsetsAfter.set(range.bucket, range.endOffset);
  const progress = { rows: 0, bytes: 0, sourceBytes: 0, files: 0, removedFiles: 0, compactedFiles: 0, compactedBytes: 0, compactionSourceBytes: 0, compactedRows: 0 };
  const busy = ranges.filter((range) => range.startOffset < range.endOffset);
  if (busy.length === 0) {
    // Nothing to write: the round's result is its base, so the caller can still close it in the log.
    if (plan.metadataKey === null || base.currentSnapshot === null) {
      throw new InvalidArgumentError(`round ${plan.tieringEpoch} of '${table.name}' tiers no record and the lake has no snapshot yet: there is nothing to commit`);
    }
    log('tiering round is empty: nothing written', { metadataKey: plan.metadataKey });
    return { committed: false, metadataKey: plan.metadataKey, snapshotId: String(base.currentSnapshot['snapshot-id']), offsets: Object.fromEntries(offsetsAfter), ...progress };
  }
  log('tiering round started', { metadataKey: plan.metadataKey, buckets: busy.length, records: busy.reduce((total, range) => total + range.endOffset - range.startOffset, 0) });

  const added: DataFile[] = [];
  const removed: DataFile[] = [];
  if (table.primaryKey.length > 0) {
    await deps.heartbeat();
    const liveFiles = await lake.dataFiles();
    for (const range of busy) {
      const outcome = await mergePrimaryKeyBucket({ deps, lake, tag, tieringEpoch: plan.tieringEpoch, bounds: deps.pkMergeBounds }, range, liveFiles);
      removed.push(...outcome.removed);
      progress.sourceBytes += outcome.sourceBytes;
      progress.removedFiles += outcome.removed.length;
      if (outcome.added !== null) {
        added.push(outcome.added);
        progress.rows += outcome.added.recordCount;
        progress.bytes += outcome.added.fileSizeBytes;
        progress.files++;
      }
      log('tiering round merged a bucket', {
        bucket: range.bucket,
        fromOffset: range.startOffset,
        endOffset: range.endOffset,
        keys: outcome.keys,
        fileBytes: outcome.added?.fileSizeBytes ?? 0,
        replacedFiles: outcome.removed.length,
        ...progress,
      });
    }
  } else {
    // The base's live files, for compaction; a table's first round has none.
    let liveFiles: DataFile[] = [];
    if (base.currentSnapshot !== null) {
      await deps.heartbeat();
      liveFiles = await lake.dataFiles();
    }
    const context = { lake, tag, tieringEpoch: plan.tieringEpoch, fileSourceBytesMax, smallFileBytes: compactionBounds.smallFileBytes, log, progress };
    for (const range of busy) {
      const tiered = await tierLogRange(deps, context, range);
      const compaction = await compactLogBucket({ deps, lake, tag, bounds: compactionBounds, log }, range.bucket, {
        base: liveFiles.filter((file) => file.bucket === range.bucket),
        stored: tiered.stored,
        pending: tiered.pending,
      });
      const dropped = new Set(compaction.dropped.map((file) => file.path));
      added.push(...tiered.stored.filter((file) => !dropped.has(file.path)), ...compaction.written);
      removed.push(...compaction.removed);
      progress.compactedFiles += compaction.written.length;
      progress.compactedBytes += compaction.written.reduce((total, file) => total + file.fileSizeBytes, 0);
      progress.compactionSourceBytes += compaction.sourceBytes;
      progress.removedFiles += compaction.removed.length;
      progress.compactedRows += compaction.removed.reduce((total, file) => total + file.recordCount, 0);
      if (tiered.pending !== null && !compaction.pendingRewritten) added.push(await storeLogFile(deps, context, range.bucket, tiered.pending));
    }
  }

  await deps.heartbeat();
  const { snapshot, metadataKey } = await lake.commit({
    added,
    removed: removed.map((file) => file.path),
    offsets: new Map(ranges.map((range) => [range.bucket, range.endOffset])),
    summary: { 'mink.table-id': String(plan.tableId), 'mink.tiering-epoch': String(plan.tieringEpoch) },
    tag,
  });
  log('tiering round committed to the lake, not yet to the metadata log', { metadataKey, snapshotId: String(snapshot['snapshot-id']), ...progress });
  return { committed: true, metadataKey, snapshotId: String(snapshot['snapshot-id']), offsets: Object.fromEntries(lake.tieredOffsets()), ...progress };
}

/** What a log round's per-bucket work shares: where it writes, its bounds, its log and running totals. */
interface LogRangeContext {
  lake: IcebergTable;
  tag: string;
  tieringEpoch: number;
  fileSourceBytesMax: number;
  /** A last file smaller than this is held back (pending) for the bucket's compaction. */
  smallFileBytes: number;
  log: NonNullable<TieringRoundDeps['log']>;
  progress: Omit<RoundResult, 'committed' | 'metadataKey' | 'snapshotId' | 'offsets'>;
}

/**
 * Appends one bucket's range of a log table as data files of at most `fileSourceBytesMax` bytes of stored
 * batches each, slicing the batches a range starts or ends in (no per-row work). Every file is stored as it
 * is written except the last one when it is small: that one is returned pending, so a compaction can take
 * it in without storing it first (its Parquet bytes are below `smallFileBytes`, so holding them is cheap).
 */
async function tierLogRange(deps: TieringRoundDeps, context: LogRangeContext, range: TieringRange): Promise<{ stored: DataFile[]; pending: ParquetDataFile | null }> {
  const { lake, progress } = context;
  const tableName = deps.table.name;
  const stored: DataFile[] = [];
  // The batches of the file being gathered, the records they hold for it [fileStart, next), and their bytes.
  let pending: LakeBatch[] = [];
  let pendingBytes = 0;
  let fileStart = range.startOffset;
  let next = range.startOffset;
  const writeFile = (): ParquetDataFile => {
    const file = parquetOfArrow({ schema: lake.schema(), bucket: range.bucket, batches: pending });
    // The offsets a file covers come from the batches' own claims; the records they hold must agree.
    if (file.metrics.recordCount !== next - fileStart || file.offsets.first !== fileStart || file.offsets.last !== next - 1) {
      throw new Error(
        `the stored batches of bucket ${range.bucket} of '${tableName}' for offsets [${fileStart}, ${next}) hold ${file.metrics.recordCount} records at offsets ${file.offsets.first}..${file.offsets.last}`,
      );
    }
    progress.rows += file.metrics.recordCount;
    progress.bytes += file.metrics.fileSizeBytes;
    progress.files++;
    progress.sourceBytes += pendingBytes;
    pending = [];
    pendingBytes = 0;
    fileStart = next;
    return file;
  };
  await forEachBatchOfRange(deps, { tableName, tieringEpoch: context.tieringEpoch }, range, async (batch, share) => {
    if (pending.length > 0 && pendingBytes + batch.payload.byteLength > context.fileSourceBytesMax) stored.push(await storeLogFile(deps, context, range.bucket, writeFile()));
    const whole = batch.startOffset === share.fromOffset && batch.endOffset === share.endOffset;
    pending.push(whole ? { payload: batch.payload, startOffset: batch.startOffset } : { payload: batch.payload, startOffset: batch.startOffset, keep: share });
    pendingBytes += batch.payload.byteLength;
    next = share.endOffset;
  });
  const last = writeFile();
  if (last.metrics.fileSizeBytes < context.smallFileBytes) return { stored, pending: last };
  stored.push(await storeLogFile(deps, context, range.bucket, last));
  return { stored, pending: null };
}

/** Stores one new data file of a log round's bucket (after a heartbeat); it was counted when it was written. */
async function storeLogFile(deps: TieringRoundDeps, context: LogRangeContext, bucket: number, file: ParquetDataFile): Promise<DataFile> {
  await deps.heartbeat();
  const dataFile = await context.lake.writeDataFile(file, context.tag);
  const { progress } = context;
  context.log('tiering round stored a data file', {
    bucket,
    fromOffset: file.offsets.first,
    endOffset: file.offsets.last + 1,
    fileRows: file.metrics.recordCount,
    fileBytes: file.metrics.fileSizeBytes,
    ...progress,
  });
  return dataFile;
}

/** Refuses a merge bound that is not a positive whole number or is above LAKE_LIMITS' own. */
function checkPkBound(name: string, value: number | undefined): void {
  const limit = { stateBytesMax: LAKE_LIMITS.pkBucketStateBytesMax, keysMax: LAKE_LIMITS.pkBucketKeysMax, foldBytes: LAKE_LIMITS.pkChangelogFoldBytes }[name];
  if (limit === undefined) throw new InvalidArgumentError(`'${name}' is not a bound of merging a primary-key bucket`);
  if (value !== undefined && (!Number.isSafeInteger(value) || value < 1 || value > limit)) {
    throw new InvalidArgumentError(`the merge bound ${name} must be a whole number from 1 to ${limit}, not ${value}`);
  }
}

/** Refuses a table this executor cannot tier and a plan that is not one of `table`'s rounds. */
export function checkTieringRound(table: TableRecord, plan: TieringRoundPlan): void {
  if (plan.tableId !== table.id || plan.tableName !== table.name) {
    throw new InvalidArgumentError(`the round is of table '${plan.tableName}' with id ${plan.tableId}, not of '${table.name}' with id ${table.id}`);
  }
  if ((table.kind === 'pk') !== table.primaryKey.length > 0) {
    throw new InvalidArgumentError(`table '${table.name}' is of kind '${table.kind}' with ${table.primaryKey.length} primary key columns: only log tables without one and primary-key tables are tiered`);
  }
  if (logFormatOf(table) !== 'arrow') throw new InvalidArgumentError(`table '${table.name}' stores Kafka record batches: only tables in the Arrow format are tiered`);
  if (!Number.isSafeInteger(plan.tieringEpoch) || plan.tieringEpoch < 1) throw new InvalidArgumentError(`tiering epoch ${plan.tieringEpoch} is not a positive whole number`);
  const seen = new Set<number>();
  for (const { bucket, startOffset, endOffset } of plan.ranges) {
    // Buckets are lake buckets (lakeBucketOf): a partitioned table's name one bucket of one partition each.
    const stream = Number.isSafeInteger(bucket) && bucket >= 0 ? streamBucketOfLake(table, bucket) : null;
    if (stream === null || lakeBucketOf(table, stream.partition, stream.bucket) !== bucket || stream.bucket >= table.buckets) {
      throw new InvalidArgumentError(`bucket ${bucket} is not a lake bucket of '${table.name}' (${table.buckets} buckets${table.partition ? ' per partition' : ''})`);
    }
    if (seen.has(bucket)) throw new InvalidArgumentError(`the round names bucket ${bucket} twice`);
    seen.add(bucket);
    if (!Number.isSafeInteger(startOffset) || !Number.isSafeInteger(endOffset) || startOffset < 0 || endOffset < startOffset) {
      throw new InvalidArgumentError(`[${startOffset}, ${endOffset}) of bucket ${bucket} is not a range of offsets`);
    }
  }
}

/** The store's URI: given, or from the `bucket` and `prefix` of an `S3ObjectStore`. */
function storeUriOf(deps: TieringRoundDeps): string {
  if (deps.storeUri !== undefined) return deps.storeUri;
  const { bucket, prefix } = deps.store as unknown as { bucket?: unknown; prefix?: unknown };
  if (typeof bucket === 'string' && typeof prefix === 'string') return lakeStoreUri(bucket, prefix);
  throw new InvalidArgumentError('the object store names no bucket and prefix (an S3ObjectStore does): pass storeUri');
}
