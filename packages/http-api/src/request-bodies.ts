/**
 * Shapes of the JSON bodies of the gateway's primary-key endpoints (docs/architecture.md §12). Each reader checks the
 * shape only — an object with the expected fields, arrays where arrays belong — and throws
 * InvalidArgumentError (HTTP 400) naming the endpoint and the field that is wrong. Unknown fields are
 * refused rather than ignored: a misspelt `columns` would otherwise turn a partial put into a full one
 * and set every other column to null. The rows, keys and prefixes themselves are checked against the
 * table by the client.
 */
import { checkName } from '@mink/meta';
import { InvalidArgumentError } from '@mink/protocol';

export interface PutBody {
  rows: unknown[];
  columns?: string[];
}

export interface DeleteBody {
  keys: unknown[];
}

export interface LookupBody {
  keys: unknown[];
  columns?: string[];
}

export interface PrefixLookupBody {
  prefixes: unknown[];
  columns?: string[];
  limit?: number;
}

/** `{rows:[…], columns?:[…]}` of POST /v1/tables/{name}/put. */
export function readPutBody(body: unknown): PutBody {
  const fields = readFields(body, 'put', '{rows: [...], columns?: [...]}', ['rows', 'columns']);
  return { rows: readArray(fields, 'rows', 'put'), ...optionalColumns(fields, 'put') };
}

/** `{keys:[…]}` of POST /v1/tables/{name}/delete. */
export function readDeleteBody(body: unknown): DeleteBody {
  const fields = readFields(body, 'delete', '{keys: [...]}', ['keys']);
  return { keys: readArray(fields, 'keys', 'delete') };
}

/** `{keys:[…], columns?:[…]}` of POST /v1/tables/{name}/lookup. */
export function readLookupBody(body: unknown): LookupBody {
  const fields = readFields(body, 'lookup', '{keys: [...], columns?: [...]}', ['keys', 'columns']);
  return { keys: readArray(fields, 'keys', 'lookup'), ...optionalColumns(fields, 'lookup') };
}

/** `{prefixes:[…], columns?:[…], limit?}` of POST /v1/tables/{name}/prefix-lookup. */
export function readPrefixLookupBody(body: unknown): PrefixLookupBody {
  const fields = readFields(body, 'prefix lookup', '{prefixes: [...], columns?: [...], limit?: n}', ['prefixes', 'columns', 'limit']);
  const result: PrefixLookupBody = { prefixes: readArray(fields, 'prefixes', 'prefix lookup'), ...optionalColumns(fields, 'prefix lookup') };
  if (fields.limit !== undefined) {
    // The range is the client's to check; here only the JSON type.
    if (typeof fields.limit !== 'number') throw new InvalidArgumentError(`prefix lookup body: limit must be a number, got ${typeof fields.limit}`);
    result.limit = fields.limit;
  }
  return result;
}

function readFields(body: unknown, endpoint: string, shape: string, allowed: string[]): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InvalidArgumentError(`${endpoint} body must be ${shape}`);
  const fields = body as Record<string, unknown>;
  const unknown = Object.keys(fields).find((field) => !allowed.includes(field));
  if (unknown !== undefined) {
    throw new InvalidArgumentError(`${endpoint} body has an unknown field '${unknown}'; it must be ${shape}`);
  }
  return fields;
}

function readArray(fields: Record<string, unknown>, field: string, endpoint: string): unknown[] {
  const value = Object.hasOwn(fields, field) ? fields[field] : undefined;
  if (value === undefined) throw new InvalidArgumentError(`${endpoint} body: ${field} is required`);
  if (!Array.isArray(value)) throw new InvalidArgumentError(`${endpoint} body: ${field} must be an array`);
  return value;
}

function optionalColumns(fields: Record<string, unknown>, endpoint: string): { columns?: string[] } {
  const value = Object.hasOwn(fields, 'columns') ? fields.columns : undefined;
  if (value === undefined) return {};
  if (!Array.isArray(value) || value.some((name) => typeof name !== 'string')) {
    throw new InvalidArgumentError(`${endpoint} body: columns must be an array of column names`);
  }
  return { columns: value as string[] };
}

/**
 * A boolean query parameter: `true`, `1` or bare (`?name`) is true, `false` or `0` false, absent
 * `absent`. Anything else is a 400 naming the parameter: a typo must never be read as either.
 */
export function readBooleanParameter(name: string, value: string | string[] | undefined, absent: boolean): boolean {
  if (value === undefined) return absent;
  if (value === 'true' || value === '1' || value === '') return true;
  if (value === 'false' || value === '0') return false;
  throw new InvalidArgumentError(`${name} must be true or false, got ${JSON.stringify(value)}`);
}

/**
 * The `dryRun` query parameter of `POST /v1/cluster/rebalance`: absent or `false`/`0` carries the moves out;
 * `true`, `1` or a bare `dryRun` only plans them. Anything else is a 400: a typo must never turn a dry run
 * into a real rebalance.
 */
export function readDryRun(value: string | string[] | undefined): boolean {
  return readBooleanParameter('dryRun', value, false);
}

/** What `GET /v1/cluster` lists besides the nodes, the counts by state and the table totals. */
export interface ClusterQuery {
  /** Whether the answer lists buckets. */
  listBuckets: boolean;
  /** Only the buckets of this table (a console showing one table's buckets out of 100 000). */
  table?: string;
}

/**
 * The query of `GET /v1/cluster`: `buckets=` as readBooleanParameter reads it, and `table=` as
 * clusterQueryOf reads it. A `table` given twice is a 400 too.
 */
export function readClusterQuery(buckets: string | string[] | undefined, table: string | string[] | undefined): ClusterQuery {
  const listBuckets = readBooleanParameter('buckets', buckets, true);
  if (table !== undefined && typeof table !== 'string') throw new InvalidArgumentError(`table must be given once, got ${JSON.stringify(table).slice(0, 140)}`);
  return clusterQueryOf(listBuckets, table);
}

/**
 * What `GET /v1/cluster` and the gRPC ClusterStatus list, whichever wire asked: every bucket, none, or the
 * buckets of `table` alone. A `table` that is empty or not a table name, or that comes with the buckets left
 * out (which lists none), is InvalidArgument; `omitting` is how the caller's wire names leaving them out.
 * Whether the table exists is the service's to say (NotFound).
 */
export function clusterQueryOf(listBuckets: boolean, table: string | undefined, omitting = 'buckets=false'): ClusterQuery {
  if (table === undefined) return { listBuckets };
  const wrong = checkName(table, 'table');
  if (wrong !== null) throw new InvalidArgumentError(wrong);
  if (!listBuckets) throw new InvalidArgumentError(`table lists the buckets of that table; it cannot go with ${omitting}`);
  return { listBuckets, table };
}

/**
 * The `group` query parameter of `GET /v1/kafka/groups`: absent lists every group; a group id (any
 * non-empty string, as Kafka's) lists that one. Given twice or empty is a 400.
 */
export function readGroupParameter(value: string | string[] | undefined): { group?: string } {
  if (value === undefined) return {};
  if (typeof value !== 'string' || value === '') throw new InvalidArgumentError(`group must be one group id, got ${JSON.stringify(value).slice(0, 140)}`);
  return { group: value };
}
