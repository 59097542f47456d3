import {
  type CompactionFile,
  type DataFile,
  type IcebergTable,
  LAKE_LIMITS,
  LAKE_OFFSET_COLUMN,
  type ParquetDataFile,
  checkOffsetRun,
  fieldNamed,
  lakeBatchesOfParquet,
  longOfBound,
  parquetOfLakeBatches,
  planLogBucketCompaction,
  recordBatchBytes,
} from '@mink/lake';
import { InvalidArgumentError } from '@mink/protocol';
import type { TieringRoundDeps } from './round-executor';

/** Bounds of small-file compaction of a log table's bucket; LAKE_LIMITS' when absent (tests pass smaller ones, never larger). */
export type LogCompactionBounds = Partial<Record<'smallFileBytes' | 'smallFilesMax' | 'arrowBytesMax', number>>;

/** The bounds in force: each given one checked against LAKE_LIMITS' own (InvalidArgumentError), the others LAKE_LIMITS'. */
export function logCompactionBoundsOf(given: LogCompactionBounds = {}): Required<LogCompactionBounds> {
  const limits: Required<LogCompactionBounds> = {
    smallFileBytes: LAKE_LIMITS.logCompactionSmallFileBytes,
    smallFilesMax: LAKE_LIMITS.logCompactionSmallFilesMax,
    arrowBytesMax: LAKE_LIMITS.logCompactionArrowBytesMax,
  };
  for (const [name, value] of Object.entries(given)) {
    const limit = limits[name as keyof LogCompactionBounds];
    if (limit === undefined) throw new InvalidArgumentError(`'${name}' is not a bound of compacting a log bucket`);
    if (value !== undefined && (!Number.isSafeInteger(value) || value < 1 || value > limit)) {
      throw new InvalidArgumentError(`the compaction bound ${name} must be a whole number from 1 to ${limit}, not ${value}`);
    }
  }
  return { ...limits, ...Object.fromEntries(Object.entries(given).filter(([, value]) => value !== undefined)) };
}

/** The data files of one bucket a log round has to hand before its commit. */
export interface LogBucketFiles {
  /** Live in the round's base snapshot. */
  base: readonly DataFile[];
  /** Stored by this round, to be added by its commit. */
  stored: readonly DataFile[];
  /** The round's last file of the bucket, written but not stored yet (a small one is held back until the bucket's compaction is decided). */
  pending: ParquetDataFile | null;
}

/** What compacting one bucket did; nothing of it is visible before the round's commit. */
export interface LogBucketCompaction {
  /** The rewritten files, stored, for the commit to add. */
  written: DataFile[];
  /** Base files they replace, for the commit to remove. */
  removed: DataFile[];
  /** Files this round stored and then rewrote: the commit must not add them (they are left to the orphan sweep). */
  dropped: DataFile[];
  /** Whether the pending file went into a rewritten file (else the caller stores it as it is). */
  pendingRewritten: boolean;
  /** Rows the rewritten files hold. */
  rows: number;
  /** Parquet bytes read back from the store. */
  sourceBytes: number;
}

/** The planner's handle of the pending file, which has no path yet. */
const PENDING_ID = '(this round, not stored yet)';

/** One decoded file of a group being gathered into one output. */
interface DecodedFile {
  file: CompactionFile;
  batches: ReturnType<typeof lakeBatchesOfParquet>;
  arrowBytes: number;
}

/**
 * Small-file compaction of one bucket of a log table (docs/lake.md), run by the round
 * that tiers the bucket: once the bucket's live files (the base's, the ones this round stored and its
 * pending last one) hold more than `smallFilesMax` small ones, each run of adjacent small files
 * (planLogBucketCompaction) is read back (parquet-wasm into Arrow), checked to hold exactly its offsets,
 * concatenated in offset order and written as ONE file that replaces the run in the round's own snapshot
 * (copy-on-write, as a primary-key bucket).
 *
 * Memory: the decoded files of one output at a time, at most `arrowBytesMax` bytes of Arrow (plus the
 * file being decoded): a run beyond it is cut into several outputs, and a file that alone is beyond it is
 * left as it is (logged). A heartbeat comes before every read and before every file is stored. Throws what
 * the heartbeat throws, and a plain Error for a broken invariant (a file whose rows are not its offsets,
 * an output that does not hold exactly the rows of the files it replaces).
 */
export async function compactLogBucket(
  context: { deps: TieringRoundDeps; lake: IcebergTable; tag: string; bounds: Required<LogCompactionBounds>; log: (message: string, fields: object) => void },
  bucket: number,
  files: LogBucketFiles,
): Promise<LogBucketCompaction> {
  const { deps, lake, bounds } = context;
  const tableName = deps.table.name;
  const schema = lake.schema();
  const offsetField = fieldNamed(schema, LAKE_OFFSET_COLUMN).id;
  const offsetBound = (file: DataFile, which: 'lowerBounds' | 'upperBounds') => {
    const bound = file[which].get(offsetField);
    if (bound === undefined) throw new Error(`log data file ${file.path} of '${tableName}' records no ${LAKE_OFFSET_COLUMN} bounds`);
    return longOfBound(bound);
  };
  const byId = new Map<string, { kind: 'base' | 'stored'; dataFile: DataFile } | { kind: 'pending'; parquet: ParquetDataFile }>();
  const candidates: CompactionFile[] = [];
  for (const [kind, list] of [['base', files.base] as const, ['stored', files.stored] as const]) {
    for (const dataFile of list) {
      if (dataFile.bucket !== bucket) continue;
      byId.set(dataFile.path, { kind, dataFile });
      candidates.push({ id: dataFile.path, firstOffset: offsetBound(dataFile, 'lowerBounds'), lastOffset: offsetBound(dataFile, 'upperBounds'), records: dataFile.recordCount, sizeBytes: dataFile.fileSizeBytes });
    }
  }
  if (files.pending !== null) {
    const { pending } = files;
    byId.set(PENDING_ID, { kind: 'pending', parquet: pending });
    candidates.push({ id: PENDING_ID, firstOffset: pending.offsets.first, lastOffset: pending.offsets.last, records: pending.metrics.recordCount, sizeBytes: pending.metrics.fileSizeBytes });
  }

  const outcome: LogBucketCompaction = { written: [], removed: [], dropped: [], pendingRewritten: false, rows: 0, sourceBytes: 0 };
  const plan = planLogBucketCompaction(candidates, bounds);
  if (plan.runs.length === 0) {
    if (plan.smallFiles > bounds.smallFilesMax) context.log('tiering round did not compact a bucket', { bucket, smallFiles: plan.smallFiles, reason: plan.reason });
    return outcome;
  }

  const decode = async (file: CompactionFile): Promise<DecodedFile> => {
    const source = byId.get(file.id)!;
    let bytes: Uint8Array;
    if (source.kind === 'pending') bytes = source.parquet.bytes;
    else {
      await deps.heartbeat();
      bytes = await deps.store.get(lake.keyOf(source.dataFile.path));
      outcome.sourceBytes += bytes.byteLength;
    }
    const batches = lakeBatchesOfParquet(schema, bytes);
    const end = checkOffsetRun(schema, batches, file.firstOffset, `log data file ${file.id} of bucket ${bucket} of '${tableName}'`);
    if (end !== file.lastOffset + 1) throw new Error(`log data file ${file.id} of bucket ${bucket} of '${tableName}' ends at offset ${end - 1}, its bounds at ${file.lastOffset}`);
    return { file, batches, arrowBytes: batches.reduce((total, batch) => total + recordBatchBytes(batch), 0) };
  };

  const flush = async (group: DecodedFile[]): Promise<void> => {
    if (group.length < 2) return;
    const first = group[0]!.file;
    const last = group.at(-1)!.file;
    const records = group.reduce((total, decoded) => total + decoded.file.records, 0);
    const written = parquetOfLakeBatches({ schema, bucket, batches: group.flatMap((decoded) => decoded.batches) });
    // Exactly once: the output holds the replaced files' rows, which were each checked to be exactly their offsets.
    if (written.metrics.recordCount !== records || written.offsets.first !== first.firstOffset || written.offsets.last !== last.lastOffset) {
      throw new Error(
        `the compacted file of bucket ${bucket} of '${tableName}' holds ${written.metrics.recordCount} rows at offsets ${written.offsets.first}..${written.offsets.last}, ` +
          `the ${group.length} files it replaces ${records} rows at ${first.firstOffset}..${last.lastOffset}`,
      );
    }
    await deps.heartbeat();
    const dataFile = await lake.writeDataFile(written, context.tag);
    outcome.written.push(dataFile);
    outcome.rows += records;
    for (const { file } of group) {
      const source = byId.get(file.id)!;
      if (source.kind === 'base') outcome.removed.push(source.dataFile);
      else if (source.kind === 'stored') outcome.dropped.push(source.dataFile);
      else outcome.pendingRewritten = true;
    }
    context.log('tiering round compacted log files of a bucket', { bucket, replacedFiles: group.length, rows: records, fromOffset: first.firstOffset, endOffset: last.lastOffset + 1, fileBytes: dataFile.fileSizeBytes });
  };

  for (const run of plan.runs) {
    let group: DecodedFile[] = [];
    let groupBytes = 0;
    for (const file of run) {
      const decoded = await decode(file);
      if (decoded.arrowBytes > bounds.arrowBytesMax) {
        // Joined with anything it would only be larger: the file stays as it is, and so does the run around it.
        await flush(group);
        group = [];
        groupBytes = 0;
        context.log('tiering round left a log file uncompacted: beyond the memory bound', { bucket, file: file.id, arrowBytes: decoded.arrowBytes, arrowBytesMax: bounds.arrowBytesMax });
        continue;
      }
      if (groupBytes + decoded.arrowBytes > bounds.arrowBytesMax) {
        await flush(group);
        group = [];
        groupBytes = 0;
      }
      group.push(decoded);
      groupBytes += decoded.arrowBytes;
    }
    await flush(group);
  }
  return outcome;
}
