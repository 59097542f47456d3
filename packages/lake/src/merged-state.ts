/**
 * The merged state of one bucket of a primary-key table, as a tiering round builds it (docs/architecture.md §8.3, lake:
 * "PK tables as merged state, copy-on-write per bucket"): the rows of the bucket's current lake file, then
 * the bucket's changelog from the lake offset on, folded in offset order by primary key exactly as the KV
 * tablet folds it (apps/data-node `foldOf`): `+I` and `+U` set the key's row, `-D` removes the key, `-U`
 * is skipped (a `+U` of the same key follows it). Every live row carries `__offset`, the offset of the
 * change that last wrote it, and `__timestamp`, that change's append time. The result is written as one
 * data file that replaces the old one, so readers need no delete files.
 *
 * Rows stay in Arrow: the state is a list of record batches in the lake's layout (segments) plus a key
 * index, a Map from each live key's text to where its row is (segment and row). Per row, JavaScript reads
 * the key columns into that text and the change type; the other columns are only copied as buffers when
 * the live rows are gathered into one batch (a fold). The index keeps keys in the order of their last
 * change (a key's entry is moved to the end when it changes), so the gathered rows, like the data file,
 * are in ascending `__offset` when the old file's were.
 *
 * Memory is bounded (LAKE_LIMITS): changelog batches are held until `pkChangelogFoldBytes` of them are,
 * then folded into the state; the folded state may hold at most `pkBucketStateBytesMax` bytes and the
 * index `pkBucketKeysMax` keys, or the merge stops with LakeBucketTooLargeError. So at most the state, the
 * batches held since the last fold and the next state are in memory at once, beside the index.
 *
 * No I/O and no time: the caller reads the old file (`lakeBatchesOfParquet`) and the changelog
 * (`changelogOfStoredBatch`) and writes the result (`parquetOfLakeBatches`).
 */
import { type Data, type RecordBatch, type Schema, Type } from 'apache-arrow';
import { CHANGE_TYPES } from '@mink/records';

import { gatherRows, recordBatchBytes } from './arrow-gather';
import { LakeBucketTooLargeError } from './errors';
import type { IcebergSchema } from './iceberg-schema';
import { LAKE_LIMITS } from './lake-limits';
import { type LakeChangelogBatch, checkLakeLayout, lakeArrowSchemaOf } from './parquet-of-arrow';

export interface MergedBucketStateOptions {
  /** The lake table's schema; its `identifier-field-ids` are the primary key. */
  schema: IcebergSchema;
  /** For messages. */
  tableName: string;
  bucket: number;
  /** LAKE_LIMITS.pkBucketStateBytesMax when absent; tests pass smaller bounds. */
  stateBytesMax?: number;
  /** LAKE_LIMITS.pkBucketKeysMax when absent. */
  keysMax?: number;
  /** LAKE_LIMITS.pkChangelogFoldBytes when absent. */
  foldBytes?: number;
}

/** Change type codes as stored (indexes into CHANGE_TYPES). */
const INSERT = CHANGE_TYPES.indexOf('+I');
const UPDATE_BEFORE = CHANGE_TYPES.indexOf('-U');
const UPDATE_AFTER = CHANGE_TYPES.indexOf('+U');
const DELETE = CHANGE_TYPES.indexOf('-D');

/** A row's place in the index: segment × 2^32 + row, exact as a double while segments stay below 2^21. */
const ROWS_PER_SEGMENT = 2 ** 32;
const SEGMENTS_MAX = 2 ** 21;

/**
 * The merge of one bucket. Call `addLakeRows` for each current data file of the bucket, then
 * `applyChangelog` for the range's changelog batches in offset order, then `finish` once.
 */
export class MergedBucketState {
  private readonly arrowSchema: Schema;
  private readonly keyPositions: number[];
  private readonly keyNames: string[];
  private readonly stateBytesMax: number;
  private readonly keysMax: number;
  private readonly foldBytes: number;
  private segments: RecordBatch[] = [];
  /** Live key text → segment × 2^32 + row, in the order of each key's last change. */
  private readonly index = new Map<string, number>();
  /** Bytes of the segments that are not changelog batches held since the last fold. */
  private stateBytes = 0;
  private heldChangelogBytes = 0;
  /** The offset after the last change applied; -1 before the changelog starts. */
  private nextOffset = -1;
  private finished = false;

  constructor(private readonly options: MergedBucketStateOptions) {
    const { schema } = options;
    const identifiers = schema['identifier-field-ids'] ?? [];
    if (identifiers.length === 0) throw new Error(`the lake table of '${options.tableName}' has no identifier fields: it is not a primary-key table's`);
    this.keyPositions = identifiers.map((id) => {
      const position = schema.fields.findIndex((field) => field.id === id);
      if (position < 0) throw new Error(`identifier field ${id} is not a field of the lake table of '${options.tableName}'`);
      return position;
    });
    this.keyNames = this.keyPositions.map((position) => schema.fields[position]!.name);
    this.arrowSchema = lakeArrowSchemaOf(schema);
    this.stateBytesMax = options.stateBytesMax ?? LAKE_LIMITS.pkBucketStateBytesMax;
    this.keysMax = options.keysMax ?? LAKE_LIMITS.pkBucketKeysMax;
    this.foldBytes = options.foldBytes ?? LAKE_LIMITS.pkChangelogFoldBytes;
  }

  /** Live keys now. */
  get keys(): number {
    return this.index.size;
  }

  /**
   * Takes the rows of one of the bucket's current data files (lake layout, `lakeBatchesOfParquet`) into the
   * state, before any changelog. Throws LakeBucketTooLargeError past the bounds, and a plain Error when a
   * key is already in the state (two live rows of one key: the lake is not what this merge writes).
   */
  addLakeRows(batches: readonly RecordBatch[], source: string): void {
    this.checkOpen();
    if (this.nextOffset >= 0) throw new Error('the rows of the current data files come before the changelog');
    for (const batch of batches) {
      if (batch.numRows === 0) continue;
      checkLakeLayout(this.arrowSchema, batch.schema.fields);
      this.stateBytes += recordBatchBytes(batch);
      if (this.stateBytes > this.stateBytesMax) this.tooLarge('bytes', this.stateBytes, this.stateBytesMax);
      const segment = this.pushSegment(batch);
      const keyOf = this.keyReaderOf(batch);
      for (let row = 0; row < batch.numRows; row++) {
        const key = keyOf(row);
        if (this.index.has(key)) throw new Error(`key ${JSON.stringify(key)} of bucket ${this.options.bucket} of '${this.options.tableName}' is live twice in the lake (again in ${source})`);
        this.index.set(key, segment * ROWS_PER_SEGMENT + row);
      }
      if (this.index.size > this.keysMax) this.tooLarge('keys', this.index.size, this.keysMax);
    }
  }

  /**
   * Applies the changes of `batch` at offsets [fromOffset, endOffset) (those it holds; a batch a range starts
   * or ends in is given whole). Changes must come in offset order without a gap from the first one applied.
   * Throws LakeBucketTooLargeError past the bounds, and a plain Error for an unknown change type, a key
   * column with nulls, or changes out of order.
   */
  applyChangelog(batch: LakeChangelogBatch, fromOffset: number, endOffset: number): void {
    this.checkOpen();
    const first = Math.max(0, fromOffset - batch.startOffset);
    const end = Math.min(batch.rows.numRows, endOffset - batch.startOffset);
    if (first >= end) return;
    if (batch.changeCodes.length < end) throw new Error(`a changelog batch of ${batch.rows.numRows} rows has ${batch.changeCodes.length} change types`);
    const firstOffset = batch.startOffset + first;
    if (this.nextOffset >= 0 && firstOffset !== this.nextOffset) {
      throw new Error(`bucket ${this.options.bucket} of '${this.options.tableName}': changes at offset ${firstOffset} follow those up to ${this.nextOffset}`);
    }
    checkLakeLayout(this.arrowSchema, batch.rows.schema.fields);
    const bytes = recordBatchBytes(batch.rows);
    if (this.heldChangelogBytes > 0 && this.heldChangelogBytes + bytes > this.foldBytes) this.fold();
    const segment = this.pushSegment(batch.rows);
    this.heldChangelogBytes += bytes;
    const keyOf = this.keyReaderOf(batch.rows);
    const codes = batch.changeCodes;
    for (let row = first; row < end; row++) {
      const code = codes[row]!;
      if (code === INSERT || code === UPDATE_AFTER) {
        const key = keyOf(row);
        // Deleted first, so the key moves to the end: the index stays in the order of last change.
        this.index.delete(key);
        this.index.set(key, segment * ROWS_PER_SEGMENT + row);
        if (this.index.size > this.keysMax) this.tooLarge('keys', this.index.size, this.keysMax);
      } else if (code === DELETE) {
        this.index.delete(keyOf(row));
      } else if (code !== UPDATE_BEFORE) {
        throw new Error(`change type code ${code} at offset ${batch.startOffset + row} of bucket ${this.options.bucket} of '${this.options.tableName}' is unknown`);
      }
    }
    this.nextOffset = batch.startOffset + end;
  }

  /**
   * The merged state as one record batch of the lake layout (live rows in the order of their last change),
   * or null when no key is live. The instance is done after it.
   */
  finish(): RecordBatch | null {
    this.checkOpen();
    this.fold();
    this.finished = true;
    const state = this.segments[0] ?? null;
    this.segments = [];
    this.index.clear();
    return state;
  }

  /** Gathers the live rows into one segment and drops the others. */
  private fold(): void {
    const count = this.index.size;
    const segments = new Uint32Array(count);
    const rows = new Uint32Array(count);
    let position = 0;
    for (const locator of this.index.values()) {
      const segment = Math.floor(locator / ROWS_PER_SEGMENT);
      segments[position] = segment;
      rows[position] = locator - segment * ROWS_PER_SEGMENT;
      position++;
    }
    const folded = count === 0 ? null : gatherRows(this.arrowSchema, this.segments, segments, rows);
    this.segments = [];
    this.heldChangelogBytes = 0;
    this.stateBytes = folded === null ? 0 : recordBatchBytes(folded);
    if (this.stateBytes > this.stateBytesMax) this.tooLarge('bytes', this.stateBytes, this.stateBytesMax);
    if (folded === null) return;
    this.segments.push(folded);
    // Setting an existing key keeps its place, so the order of last change survives the renumbering.
    position = 0;
    for (const key of this.index.keys()) this.index.set(key, position++);
  }

  private pushSegment(batch: RecordBatch): number {
    if (batch.numRows > ROWS_PER_SEGMENT) throw new Error(`a batch of ${batch.numRows} rows`);
    if (this.segments.length >= SEGMENTS_MAX) this.fold();
    this.segments.push(batch);
    return this.segments.length - 1;
  }

  /** The key text of each row of `batch`: one key column's value as text, or several, each behind its length. */
  private keyReaderOf(batch: RecordBatch): (row: number) => string {
    const pieces = this.keyPositions.map((position, index) => keyPieceReaderOf(batch.data.children[position]!, this.keyNames[index]!));
    if (pieces.length === 1) return pieces[0]!;
    return (row) => {
      let key = '';
      for (const piece of pieces) {
        const text = piece(row);
        key += `${text.length}:${text}`;
      }
      return key;
    };
  }

  private tooLarge(measure: 'bytes' | 'keys', amount: number, limit: number): never {
    throw new LakeBucketTooLargeError(this.options.tableName, this.options.bucket, measure, amount, limit);
  }

  private checkOpen(): void {
    if (this.finished) throw new Error('the merge of this bucket is finished');
  }
}

/**
 * The text of one key column's value per row. Distinct values give distinct texts and equal values equal
 * ones, with the equality of the KV tablet's keys (`bucketKeyBytes`: numbers by their decimal text, so -0
 * and 0 are one key). Timestamps are compared in the lake's microseconds, which keeps that equality.
 */
function keyPieceReaderOf(data: Data, name: string): (row: number) => string {
  // A key column never holds nulls: the lake requires the field and the PK write path refuses a null key.
  if (data.nullCount > 0) throw new Error(`primary key column '${name}' holds ${data.nullCount} nulls`);
  switch (data.type.typeId) {
    case Type.Bool: {
      const bits = data.values as Uint8Array;
      const { offset } = data;
      return (row) => ((bits[(offset + row) >> 3]! & (1 << ((offset + row) & 7))) !== 0 ? 't' : 'f');
    }
    case Type.Int:
    case Type.Float:
    case Type.Timestamp: {
      const values = data.values as Int32Array | Float64Array | BigInt64Array;
      return (row) => String(values[row]);
    }
    case Type.Utf8:
    case Type.Binary: {
      const offsets = data.valueOffsets as Int32Array;
      const bytes = data.values as Uint8Array;
      const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      // latin1 maps each byte to one character, so distinct byte strings stay distinct.
      const encoding = data.type.typeId === Type.Utf8 ? 'utf8' : 'latin1';
      return (row) => buffer.toString(encoding, offsets[row], offsets[row + 1]);
    }
    default:
      throw new Error(`primary key column '${name}' is of type ${data.type}, which is not a lake column type`);
  }
}
