import type { TieringRange } from '@mink/meta';
import {
  type DataFile,
  type IcebergTable,
  LAKE_LIMITS,
  LAKE_OFFSET_COLUMN,
  LakeBucketTooLargeError,
  MergedBucketState,
  changelogOfStoredBatch,
  fieldNamed,
  lakeBatchesOfParquet,
  longOfBound,
  parquetOfLakeBatches,
} from '@mink/lake';
import { forEachBatchOfRange } from './range-reader';
import type { TieringRoundDeps } from './round-executor';

/** What merging one bucket of a primary-key table did: at most one file added, the bucket's old files removed. */
export interface PkBucketOutcome {
  /** The bucket's new data file (stored, not yet committed); null when no key is live. */
  added: DataFile | null;
  /** The bucket's data files in the base snapshot, all replaced by `added`. */
  removed: DataFile[];
  /** Live keys after the range: the new file's rows. */
  keys: number;
  /** Bytes of the old files and the changelog batches read. */
  sourceBytes: number;
}

/** Bounds of the merge; LAKE_LIMITS' when absent (tests pass smaller ones). */
export type PkMergeBounds = Partial<Record<'stateBytesMax' | 'keysMax' | 'foldBytes', number>>;

/**
 * Tiers one bucket's range of a primary-key table as merged state, copy-on-write (docs/architecture.md §8.3): reads the
 * bucket's live data files of the base snapshot back into Arrow, folds the range's changelog into them by
 * primary key (MergedBucketState), and stores the result as one new data file of the round, whose rows
 * carry the offsets of the changes that last wrote them. The caller commits it with the old files removed;
 * a bucket left without a live key gets no new file, only its old ones removed.
 *
 * A heartbeat comes before every read and before the file is stored. Memory: the bounds of
 * MergedBucketState, plus one old file's Parquet bytes while it is decoded. Throws what the heartbeat
 * throws, LakeBucketTooLargeError beyond the bounds (before reading a file whose row count alone is over
 * them), and a plain Error for a broken invariant (the stream's, or a written file whose offsets are not
 * within what the lake will say is tiered).
 */
export async function mergePrimaryKeyBucket(
  context: { deps: TieringRoundDeps; lake: IcebergTable; tag: string; tieringEpoch: number; bounds?: PkMergeBounds },
  range: TieringRange,
  liveFiles: readonly DataFile[],
): Promise<PkBucketOutcome> {
  const { deps, lake } = context;
  const tableName = deps.table.name;
  const schema = lake.schema();
  const offsetField = fieldNamed(schema, LAKE_OFFSET_COLUMN).id;
  const lowestOffset = (file: DataFile) => {
    const bound = file.lowerBounds.get(offsetField);
    return bound === undefined ? 0 : longOfBound(bound);
  };
  // Oldest rows first, so the merged rows stay in ascending offset order.
  const removed = liveFiles.filter((file) => file.bucket === range.bucket).sort((left, right) => lowestOffset(left) - lowestOffset(right));
  const state = new MergedBucketState({ schema, tableName, bucket: range.bucket, ...context.bounds });
  const keysMax = context.bounds?.keysMax ?? LAKE_LIMITS.pkBucketKeysMax;
  let sourceBytes = 0;

  for (const file of removed) {
    if (state.keys + file.recordCount > keysMax) throw new LakeBucketTooLargeError(tableName, range.bucket, 'keys', state.keys + file.recordCount, keysMax);
    await deps.heartbeat();
    const bytes = await deps.store.get(lake.keyOf(file.path));
    sourceBytes += bytes.byteLength;
    state.addLakeRows(lakeBatchesOfParquet(schema, bytes), file.path);
  }

  await forEachBatchOfRange(deps, { tableName, tieringEpoch: context.tieringEpoch }, range, (batch, share) => {
    sourceBytes += batch.payload.byteLength;
    const changelog = changelogOfStoredBatch(schema, range.bucket, batch.payload, batch.startOffset);
    const records = changelog.reduce((total, changes) => total + changes.rows.numRows, 0);
    if (records !== batch.endOffset - batch.startOffset) {
      throw new Error(`the stored batch of bucket ${range.bucket} of '${tableName}' for offsets [${batch.startOffset}, ${batch.endOffset}) holds ${records} records`);
    }
    for (const changes of changelog) state.applyChangelog(changes, share.fromOffset, share.endOffset);
  });

  const keys = state.keys;
  const merged = state.finish();
  if (merged === null) return { added: null, removed, keys, sourceBytes };
  const file = parquetOfLakeBatches({ schema, bucket: range.bucket, batches: [merged] });
  if (file.metrics.recordCount !== keys || file.offsets.last >= range.endOffset) {
    throw new Error(`the merged state of bucket ${range.bucket} of '${tableName}' has ${keys} keys up to offset ${range.endOffset}, its file ${file.metrics.recordCount} rows at offsets ${file.offsets.first}..${file.offsets.last}`);
  }
  await deps.heartbeat();
  return { added: await lake.writeDataFile(file, context.tag), removed, keys, sourceBytes };
}
