/**
 * What one request to a data node counts in its metrics (DataNodeMetrics): which table and bucket it was
 * for, what it did, and how many rows and bytes it moved. Pure: the request and its answer in, figures out.
 */
export interface RequestFigures {
  table: string;
  /** The bucket's number, `<partition>/<bucket>` for a bucket of a partition, or `all` for a table-wide request. */
  bucket: string;
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
  let bucket = 'all';
  if (BUCKET_OPS.has(op)) {
    if (!Number.isSafeInteger(body.bucket)) return null;
    bucket = typeof body.partition === 'string' ? `${body.partition}/${String(body.bucket)}` : String(body.bucket);
  }
  return { table: body.table, bucket, op, rows: rowsOf(op, body, result), bytes: bytesOf(op, body, result) };
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
