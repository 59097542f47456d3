import { getIn, type ShardedMap, type TableRecord } from '@mink/meta';

/**
 * What one request to a data node counts in its metrics (DataNodeMetrics): which table and bucket it was
 * for, what it did, and how many rows and bytes it moved. Pure: the request and its answer in, figures out.
 * The table, partition and bucket are as the request names them, unchecked: `metricLabelsOf` turns them
 * into labels.
 */
export interface RequestFigures {
  table: string;
  /** The partition of the bucket, as named; null for a table that is not partitioned and for a table-wide request. */
  partition: string | null;
  /** The bucket's number; null for a table-wide request. */
  bucket: number | null;
  /** One of the operations the node knows (a fixed set, never the caller's string). */
  op: string;
  /** Rows appended, put, deleted or scanned, keys looked up, prefixes asked for. */
  rows: number;
  /** Bytes of the Arrow batch appended, put or deleted, or of the scan page answered; 0 where rows travel as JSON. */
  bytes: number;
}

const BUCKET_OPS = new Set(['append', 'put', 'delete', 'lookup', 'prefixLookup', 'scan']);
const TABLE_OPS = new Set(['appendTable', 'putTable', 'deleteTable']);

/** The figures of a request about table data, or null for one that is not (status, describeTable, bad input without a table). */
export function requestFigures(request: unknown, result: unknown): RequestFigures | null {
  if (typeof request !== 'object' || request === null) return null;
  const body = request as Record<string, unknown>;
  const op = body.op;
  if (typeof op !== 'string' || typeof body.table !== 'string' || (!BUCKET_OPS.has(op) && !TABLE_OPS.has(op))) return null;
  let bucket: number | null = null;
  if (BUCKET_OPS.has(op)) {
    if (!Number.isSafeInteger(body.bucket)) return null;
    bucket = body.bucket as number;
  }
  const partition = bucket !== null && typeof body.partition === 'string' ? body.partition : null;
  return { table: body.table, partition, bucket, op, rows: rowsOf(op, body, result), bytes: bytesOf(op, body, result) };
}

/** The label of a table, or of a bucket, that the view does not hold: no table name can be it. */
export const UNKNOWN_LABEL = '(unknown)';

/**
 * The `table` and `bucket` labels of a request's figures. A request names its table, partition and bucket
 * as its caller spelt them, before anything checks them (a refused request is counted too), so only what
 * `tables` (the view's tables by name) holds becomes a label: the table's name, and its bucket as
 * `<partition>/<bucket>` for a live partition, the number alone otherwise, `all` for a table-wide request.
 * A table the view does not hold is `UNKNOWN_LABEL` for both, a bucket or partition it does not have is
 * `UNKNOWN_LABEL` for the bucket; so the series are bounded by the tables and buckets that exist, whatever
 * callers send.
 */
export function metricLabelsOf(figures: Pick<RequestFigures, 'table' | 'partition' | 'bucket'>, tables: ShardedMap<TableRecord>): { table: string; bucket: string } {
  const table = getIn(tables, figures.table);
  if (table === undefined) return { table: UNKNOWN_LABEL, bucket: UNKNOWN_LABEL };
  if (figures.bucket === null) return { table: table.name, bucket: 'all' };
  const known = Number.isSafeInteger(figures.bucket) && figures.bucket >= 0 && figures.bucket < table.buckets && (figures.partition === null || table.partitions.includes(figures.partition));
  if (!known) return { table: table.name, bucket: UNKNOWN_LABEL };
  return { table: table.name, bucket: figures.partition === null ? String(figures.bucket) : `${figures.partition}/${figures.bucket}` };
}

function rowsOf(op: string, body: Record<string, unknown>, result: unknown): number {
  switch (op) {
    case 'append':
    case 'appendTable': {
      // The rows the leader stored: known from its answer (a batch's row count is not in the request's JSON).
      const answer = result as { count?: unknown; appended?: unknown } | undefined;
      const count = op === 'append' ? answer?.count : answer?.appended;
      return typeof count === 'number' ? count : 0;
    }
    case 'put':
    case 'delete': {
      // Rows or keys sent as an Arrow batch: counted from the answer (the request's JSON does not hold them).
      if (body.batch instanceof Uint8Array) {
        const operations = (result as { operations?: unknown } | undefined)?.operations;
        return typeof operations === 'number' ? operations : 0;
      }
      return lengthOf(op === 'put' ? body.rows : body.keys);
    }
    case 'putTable':
      return lengthOf(body.rows);
    case 'deleteTable':
    case 'lookup':
      return lengthOf(body.keys);
    case 'prefixLookup':
      return lengthOf(body.prefixes);
    case 'scan': {
      const page = (result as { result?: { records?: unknown } } | undefined)?.result;
      return typeof page?.records === 'number' ? page.records : 0;
    }
    default:
      return 0;
  }
}

function bytesOf(op: string, body: Record<string, unknown>, result: unknown): number {
  if (op === 'append' || op === 'put' || op === 'delete') return body.batch instanceof Uint8Array ? body.batch.byteLength : 0;
  if (op === 'scan') {
    const bytes = (result as { bytes?: unknown } | undefined)?.bytes;
    if (bytes instanceof Uint8Array) return bytes.byteLength;
    if (Array.isArray(bytes)) return bytes.reduce((sum: number, part: unknown) => sum + (part instanceof Uint8Array ? part.byteLength : 0), 0);
  }
  return 0;
}

function lengthOf(value: unknown): number {
  return Array.isArray(value) ? value.length : 0;
}
