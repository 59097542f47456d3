/**
 * Which data files of one bucket of a log table a tiering round rewrites into one (small-file compaction,
 * docs/lake.md), as a pure function of the bucket's files. A log round adds one file per
 * bucket, so a bucket tiered often at low throughput gathers many small files; readers open each, and
 * manifests list each.
 *
 * A log table's lake holds every offset of a bucket once, and each of its files holds a contiguous run of
 * offsets (a round's range, or a run of such files rewritten). A compaction rewrites ADJACENT small files
 * only (one's last offset + 1 is the next one's first), so its output again holds a contiguous run: readers
 * that prune by `__offset` bounds (the union read) never meet a file whose bounds span another file.
 */
import type { RecordBatch } from 'apache-arrow';
import { type IcebergSchema, LAKE_OFFSET_COLUMN } from './iceberg-schema';

/** A data file of the bucket as the planner sees it; `id` is the caller's handle (a path, or a file not stored yet). */
export interface CompactionFile {
  id: string;
  /** The file's first and last `__offset` (inclusive). */
  firstOffset: number;
  lastOffset: number;
  records: number;
  sizeBytes: number;
}

export interface LogCompactionBounds {
  /** A file smaller than this (Parquet bytes) is small: LAKE_LIMITS.logCompactionSmallFileBytes. */
  smallFileBytes: number;
  /** A bucket with more small files than this is compacted: LAKE_LIMITS.logCompactionSmallFilesMax. */
  smallFilesMax: number;
}

/** What to rewrite: runs of adjacent small files in offset order, each of two files or more. */
export interface LogCompactionPlan {
  runs: CompactionFile[][];
  /** Small files among `files`. */
  smallFiles: number;
  /** Why nothing is rewritten, when `runs` is empty. */
  reason: string | null;
}

/**
 * The runs of adjacent small files to rewrite, once the bucket holds more than `smallFilesMax` small files
 * (none otherwise). Each run is a maximal sequence of small files with no gap and no large file between
 * them, in offset order; runs of one file are left out (nothing to join). Throws a plain Error for files
 * that are not a log bucket's (a file whose records are not exactly its offsets, two files sharing an
 * offset): a broken invariant of the lake. Bad bounds are a plain Error too (the caller's bug).
 */
export function planLogBucketCompaction(files: readonly CompactionFile[], bounds: LogCompactionBounds): LogCompactionPlan {
  if (!Number.isSafeInteger(bounds.smallFileBytes) || bounds.smallFileBytes < 1) throw new Error(`a small-file size of ${bounds.smallFileBytes} bytes`);
  if (!Number.isSafeInteger(bounds.smallFilesMax) || bounds.smallFilesMax < 1) throw new Error(`a bound of ${bounds.smallFilesMax} small files`);
  const sorted = [...files].sort((left, right) => left.firstOffset - right.firstOffset);
  for (const [index, file] of sorted.entries()) {
    if (!Number.isSafeInteger(file.firstOffset) || file.firstOffset < 0 || file.lastOffset < file.firstOffset || file.records !== file.lastOffset - file.firstOffset + 1) {
      throw new Error(`log data file ${file.id} holds ${file.records} records at offsets ${file.firstOffset}..${file.lastOffset}`);
    }
    const previous = sorted[index - 1];
    if (previous !== undefined && file.firstOffset <= previous.lastOffset) {
      throw new Error(`log data files ${previous.id} and ${file.id} both hold offset ${file.firstOffset}`);
    }
  }
  const isSmall = (file: CompactionFile) => file.sizeBytes < bounds.smallFileBytes;
  const smallFiles = sorted.filter(isSmall).length;
  if (smallFiles <= bounds.smallFilesMax) return { runs: [], smallFiles, reason: `${smallFiles} small files, at most ${bounds.smallFilesMax} kept` };

  const runs: CompactionFile[][] = [];
  let run: CompactionFile[] = [];
  const close = () => {
    if (run.length >= 2) runs.push(run);
    run = [];
  };
  for (const file of sorted) {
    if (!isSmall(file)) {
      close();
      continue;
    }
    const last = run.at(-1);
    if (last !== undefined && last.lastOffset + 1 !== file.firstOffset) close();
    run.push(file);
  }
  close();
  return { runs, smallFiles, reason: runs.length === 0 ? `${smallFiles} small files, none next to another` : null };
}

/**
 * Checks that `batches` (a log data file read back in the lake layout, or several in order) hold exactly
 * the offsets `firstOffset`, `firstOffset + 1`, ... in that order, one row each, and returns the offset
 * after the last row. What makes a rewrite exactly-once: the rows it writes are the rows of the files it
 * replaces, no offset lost or repeated. Reads the `__offset` column's 64-bit values as two 32-bit words
 * (no BigInt per row). Throws a plain Error naming `what` at the first offset out of place.
 */
export function checkOffsetRun(schema: IcebergSchema, batches: readonly RecordBatch[], firstOffset: number, what: string): number {
  const column = schema.fields.findIndex((field) => field.name === LAKE_OFFSET_COLUMN);
  if (column < 0) throw new Error(`the lake schema has no ${LAKE_OFFSET_COLUMN} column`);
  let next = firstOffset;
  for (const batch of batches) {
    const data = batch.data.children[column]!;
    if (data.nullCount > 0) throw new Error(`${what} has rows without an ${LAKE_OFFSET_COLUMN}`);
    const values = data.values as BigInt64Array;
    const words = new Int32Array(values.buffer, values.byteOffset, values.length * 2);
    for (let row = 0; row < batch.numRows; row++) {
      const low = words[row * 2]! >>> 0;
      const high = words[row * 2 + 1]!;
      const offset = high * 2 ** 32 + low;
      if (offset !== next) throw new Error(`${what} holds offset ${offset} where ${next} was expected`);
      next++;
    }
  }
  return next;
}
