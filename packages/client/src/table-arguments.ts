/**
 * Checks of the arguments of TableClient calls that the table's route can decide before anything is
 * sent. Each throws InvalidArgumentError with a message that names the table and what is wrong; rows,
 * keys and prefixes themselves are checked by validateRows of @mink/records.
 */
import { LIMITS } from '@mink/config';
import { InvalidArgumentError, type TableRoute } from '@mink/protocol';
import { describeValue } from '@mink/records';

/** Log tables take appends; primary-key tables take puts, deletes and lookups. */
export function requireKind(route: TableRoute, kind: TableRoute['kind']): void {
  if (route.kind === kind) return;
  if (route.kind === 'log') throw new InvalidArgumentError(`table '${route.table}' is a log table: use append`);
  throw new InvalidArgumentError(`table '${route.table}' is a primary-key table: use put`);
}

/**
 * The route of a primary-key table, checked. Its bucket key is never empty (it defaults to the primary
 * key), so every key has a bucket; an empty one would be a broken view.
 */
export function requirePrimaryKeyTable(route: TableRoute): TableRoute {
  requireKind(route, 'pk');
  if (route.primaryKey.length === 0 || route.bucketKey.length === 0) {
    throw new Error(`primary-key table '${route.table}' has primary key [${route.primaryKey}] and bucket key [${route.bucketKey}]; neither may be empty`);
  }
  return route;
}

/**
 * The `columns` of a partial put: names of the table's columns, which must include every primary key
 * column (the rows are upserted by key). Duplicates are left to validateRows, which names them.
 */
export function partialPutColumnsOf(route: TableRoute, columns: unknown): string[] {
  const names = columnNamesOf(columns, 'columns of a partial put');
  const unknown = names.find((name) => !route.columns.some((column) => column.name === name));
  if (unknown !== undefined) throw new InvalidArgumentError(`unknown column '${unknown}' in the columns of a partial put to table '${route.table}'`);
  const missing = route.primaryKey.filter((name) => !names.includes(name));
  if (missing.length > 0) {
    throw new InvalidArgumentError(
      `the columns of a partial put to table '${route.table}' must include every primary key column; missing ${missing.map((name) => `'${name}'`).join(', ')}`,
    );
  }
  return names;
}

/**
 * The `columns` projection of a lookup or prefix lookup: distinct names of the table's columns, in the
 * order the rows should hold them. An empty projection is allowed: it tells which keys exist.
 */
export function projectionOf(route: TableRoute, columns: unknown): string[] {
  const names = columnNamesOf(columns, 'columns');
  const seen = new Set<string>();
  for (const name of names) {
    if (!route.columns.some((column) => column.name === name)) throw new InvalidArgumentError(`unknown column '${name}' in columns of table '${route.table}'`);
    if (seen.has(name)) throw new InvalidArgumentError(`column '${name}' is listed twice in columns`);
    seen.add(name);
  }
  return names;
}

/** Keys or prefixes of a call: a non-empty array (each element is checked by validateRows). */
export function requireItems(value: unknown, what: 'keys' | 'prefixes'): unknown[] {
  if (!Array.isArray(value)) throw new InvalidArgumentError(`${what} must be an array, got ${describeValue(value)}`);
  if (value.length === 0) throw new InvalidArgumentError(`${what} must not be empty`);
  return value;
}

/**
 * A prefix lookup needs a bucket key that leaves some primary key columns out: all rows of a prefix are
 * then in one bucket, and there can be more than one of them. With the whole key, a prefix is a key.
 */
export function requireProperPrefixBucketKey(route: TableRoute): void {
  if (route.primaryKey.every((name) => route.bucketKey.includes(name))) {
    throw new InvalidArgumentError(
      `table '${route.table}': prefix lookup needs a bucket key that is a proper prefix of the primary key; use lookup`,
    );
  }
}

/**
 * The columns a prefix of a prefix lookup holds: the bucket key, and on a partitioned table the partition
 * column too (unless the bucket key has it), whose value picks the partition to look in. A prefix without
 * the partition column is refused here, naming it, before validateRows checks the values.
 */
export function prefixColumnsOf(route: TableRoute, prefixes: readonly unknown[]): string[] {
  const partitionColumn = route.partition?.column;
  if (partitionColumn === undefined || route.bucketKey.includes(partitionColumn)) return route.bucketKey;
  const columns = [...route.bucketKey, partitionColumn];
  const lacking = prefixes.findIndex((prefix) => typeof prefix === 'object' && prefix !== null && !Object.hasOwn(prefix, partitionColumn));
  if (lacking !== -1) {
    throw new InvalidArgumentError(
      `prefix ${lacking} of a prefix lookup in table '${route.table}' has no partition column '${partitionColumn}': on a partitioned table a prefix holds the bucket key (${route.bucketKey.map((name) => `'${name}'`).join(', ')}) and the partition column, which picks the partition`,
    );
  }
  return columns;
}

/** The `limit` of a prefix lookup (rows per prefix), or undefined for the data node's default. */
export function prefixLimitOf(limit: unknown): number | undefined {
  if (limit === undefined) return undefined;
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1 || limit > LIMITS.prefixLookupRowsMax) {
    throw new InvalidArgumentError(`limit must be an integer from 1 to ${LIMITS.prefixLookupRowsMax}, got ${describeValue(limit)}`);
  }
  return limit;
}

function columnNamesOf(columns: unknown, what: string): string[] {
  if (!Array.isArray(columns) || columns.some((name) => typeof name !== 'string')) {
    throw new InvalidArgumentError(`${what} must be an array of column names, got ${describeValue(columns)}`);
  }
  return columns as string[];
}

/** A scan's bucket, offset, limit and wait, checked, with their defaults filled in. */
export function scanArgumentsOf(options: { bucket: unknown; offset?: unknown; limit?: unknown; waitMs?: unknown }): { bucket: number; offset: number; limit: number; waitMs: number } {
  const { bucket, offset = 0, limit = LIMITS.scanRecordsDefault, waitMs = 0 } = options;
  if (typeof bucket !== 'number' || !Number.isSafeInteger(bucket) || bucket < 0) throw new InvalidArgumentError(`bucket must be a non-negative integer, got ${describeValue(bucket)}`);
  if (typeof offset !== 'number' || !Number.isSafeInteger(offset) || offset < 0) throw new InvalidArgumentError(`offset must be a non-negative integer, got ${describeValue(offset)}`);
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1 || limit > LIMITS.scanRecordsMax) {
    throw new InvalidArgumentError(`limit must be an integer from 1 to ${LIMITS.scanRecordsMax}, got ${describeValue(limit)}`);
  }
  if (typeof waitMs !== 'number' || !Number.isSafeInteger(waitMs) || waitMs < 0 || waitMs > LIMITS.scanWaitMsMax) {
    throw new InvalidArgumentError(`wait must be from 0 to ${LIMITS.scanWaitMsMax} ms, got ${describeValue(waitMs)}`);
  }
  return { bucket, offset, limit, waitMs };
}
