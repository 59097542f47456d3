/**
 * A table read as a Kafka topic: one stored Arrow batch of a log table or of a PK table's changelog turned
 * into one Kafka record batch (v2, magic 2, uncompressed, CRC-32C, no producer) that a Kafka fetch can
 * return. Pure: no I/O, no clock.
 *
 * Record i of the batch is row i of the stored batch:
 *
 * - offset: the batch's start offset + i (the offset a scan gives the row).
 * - timestamp: the row's stored append time in epoch milliseconds, as a create time (each record carries
 *   its own; the batch's base timestamp is the first record's, its max timestamp the largest).
 * - value: the row as UTF-8 JSON, byte for byte the `row` object the HTTP scan returns for it (every
 *   column in table order; int64 as decimal strings, bytes as base64, timestamps as epoch ms): it is cut
 *   from the scan code's own JSON (encodeScanPage, scanJsonText), not rendered a second time.
 * - key: null for a log table. For a PK table, the UTF-8 JSON object of the primary key columns in key
 *   order, rendered as the scan renders those values: `{"id":5}`, or `{"id":"5"}` for an int64 column.
 * - headers: none for a log table. For a PK table's changelog one header `mink.change` whose value is the
 *   change type as the HTTP scan names it in `changeType`: `+I`, `-U`, `+U` or `-D` (UTF-8).
 *
 * Deletes: the changelog stores the whole row a delete removed (`-D`, like the `-U` of an update), so by
 * default its value is that row, exactly what the HTTP scan shows, and the header says it was deleted. A
 * consumer that reads the topic as a compacted one (a KTable) treats a non-null value as an upsert, so
 * `deletesAsTombstones` gives `-D` records a null value instead, Kafka's tombstone; the key still names
 * the deleted row.
 */
import type { ColumnSpec, TableKind } from '@mink/meta';
import { type StoredBatch, encodeScanPage, scanJsonText } from '@mink/records';

import { NO_PARTITION_LEADER_EPOCH, type RecordInput, encodeRecordBatch } from '../messages/record-batch';
import { RecordBatchConversionError, messageOf } from './conversion-error';

/** The header that carries the change type of a PK table's changelog record. */
export const CHANGE_TYPE_HEADER = 'mink.change';

/** What the conversion needs of a table; a `TableRecord` of the view is one. */
export interface TableAsTopic {
  /** The table's columns in table order. */
  columns: readonly ColumnSpec[];
  /** `pk`: the stored batches are changelog batches, with a change type per row. */
  kind: TableKind;
  /** The primary key's column names in key order; empty for a log table. */
  primaryKey: readonly string[];
}

export interface RecordBatchOfStoredRowsOptions {
  /** The batch's partition leader epoch: the bucket's leader epoch, or -1 (Kafka's "none", the default). */
  partitionLeaderEpoch?: number;
  /** Give `-D` records of a changelog a null value (a tombstone) instead of the deleted row. */
  deletesAsTombstones?: boolean;
}

/**
 * One uncompressed Kafka record batch of the rows of `stored`, a batch of `table` as its bucket's stream
 * holds it (the Arrow payload `encodeBatch` or `stampBatch` wrote, starting at `stored.startOffset`).
 * A table description the caller got wrong (a primary key column that is not a column, a PK table without
 * a primary key) is a bug and throws a plain Error; a payload that is not a batch of the table as
 * described throws RecordBatchConversionError `CorruptStoredRows`.
 */
export function recordBatchOfStoredRows(table: TableAsTopic, stored: StoredBatch, options: RecordBatchOfStoredRowsOptions = {}): Uint8Array {
  if (!Number.isSafeInteger(stored.startOffset) || stored.startOffset < 0) throw new Error(`start offset must be a non-negative safe integer, got ${stored.startOffset}`);
  const changelog = table.kind === 'pk';
  if (changelog && table.primaryKey.length === 0) throw new Error('a PK table must name its primary key columns');
  const keyColumns = table.primaryKey.map((name) => {
    const column = table.columns.find((candidate) => candidate.name === name);
    if (column === undefined) throw new Error(`primary key column '${name}' is not a column of the table`);
    return { ...column };
  });

  const values = scanRecordsOf(table.columns.map((column) => ({ ...column })), changelog, stored);
  const keys = changelog ? scanRecordsOf(keyColumns, false, stored) : undefined;
  if (values.length === 0) throw new RecordBatchConversionError('CorruptStoredRows', `stored batch at offset ${stored.startOffset} holds no rows`);

  const records = values.map((record, index): RecordInput => {
    // The scan numbers the rows from the start offset; two scans of one batch see the same rows.
    if (record.offset !== stored.startOffset + index || (keys !== undefined && keys[index]?.offset !== record.offset)) {
      throw new Error(`scan of the stored batch at ${stored.startOffset} gave offset ${record.offset} for row ${index}`);
    }
    const deleted = record.changeType === '-D';
    return {
      timestamp: record.timestamp,
      key: keys === undefined ? null : keys[index]!.row,
      value: deleted && options.deletesAsTombstones === true ? null : record.row,
      headers: record.changeType === undefined ? [] : [{ key: CHANGE_TYPE_HEADER, value: Buffer.from(record.changeType, 'utf8') }],
    };
  });
  return encodeRecordBatch({ baseOffset: stored.startOffset, records, partitionLeaderEpoch: options.partitionLeaderEpoch ?? NO_PARTITION_LEADER_EPOCH });
}

/** One record of a scan's JSON: its fields, and the JSON text of its `row` as UTF-8. */
interface ScanRecordText {
  offset: number;
  timestamp: number;
  changeType?: string;
  row: Uint8Array;
}

const NEWLINE = 0x0a;
const ROW_MARKER = Buffer.from(',"row":');

/**
 * The records of a scan of the whole of `stored` with `columns`, as the HTTP scan writes them. Each line
 * of scanJsonText is `{"offset":…,"timestamp":…[,"changeType":"…"],"row":{…}}`: the fields before the row
 * are numbers and a change type, none of which can hold `,"row":`, so its first occurrence starts the row,
 * which runs to the record's closing brace. JSON strings escape line breaks, so lines are records.
 */
function scanRecordsOf(columns: ColumnSpec[], changelog: boolean, stored: StoredBatch): ScanRecordText[] {
  let text: Buffer;
  try {
    const page = encodeScanPage({ columns, changelog }, [stored], stored.startOffset, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
    text = scanJsonText(Buffer.concat(page.stream), '\n').text;
  } catch (error) {
    throw new RecordBatchConversionError('CorruptStoredRows', `stored batch at offset ${stored.startOffset} is not a ${changelog ? 'changelog ' : ''}batch of the table: ${messageOf(error)}`, {
      cause: error,
    });
  }
  const records: ScanRecordText[] = [];
  let start = 0;
  while (start < text.length) {
    const newline = text.indexOf(NEWLINE, start);
    const end = newline < 0 ? text.length : newline;
    const line = text.subarray(start, end);
    const marker = line.indexOf(ROW_MARKER);
    if (marker < 0 || line[line.length - 1] !== 0x7d) throw new Error(`a scan record without a row: ${line.toString('utf8', 0, 200)}`);
    const fields = JSON.parse(`${line.toString('utf8', 0, marker)}}`) as { offset: number; timestamp: number; changeType?: string };
    records.push({ ...fields, row: line.subarray(marker + ROW_MARKER.length, line.length - 1) });
    start = end + 1;
  }
  return records;
}
