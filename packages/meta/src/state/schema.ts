import { checkLakeSpec } from './lake-properties';
import { LIMITS } from '@mink/config';
import { checkLogFormat } from './log-format';
import { PARTITION_COLUMN_TYPES } from './partitions';
import { COLUMN_TYPES, type ColumnSpec, type ColumnType, type PartitionSpec, type TableSpec } from './view';

/**
 * Validation of a table declaration, the body of `POST /v1/tables` (docs/architecture.md §12). The gateway calls it to
 * answer 400 early, and `apply` calls it again on `CreateTable` because the log is the authority: a
 * command that bypassed the gateway must not put an invalid table into the view.
 *
 * The result is a normalized copy of the input: arrays and objects are fresh, fields appear in a fixed
 * order, and optional fields that were absent stay absent (no defaults are added here, so the spec
 * stored in the log is exactly what the user declared).
 */
export type TableSpecValidation = { ok: true; spec: TableSpec } | { ok: false; message: string };

/** Table and column names: an identifier that may also contain `.` and `-` after the first character. */
export const NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

/** Column names a table may not use: the system columns of an Arrow scan (`_offset`, `_timestamp`, `_change`). */
export const RESERVED_COLUMN_NAMES: readonly string[] = ['_offset', '_timestamp', '_change'];

export const PARTITION_UNITS: readonly PartitionSpec['unit'][] = ['hour', 'day'];

const TABLE_FIELDS = ['name', 'columns', 'primaryKey', 'bucketKey', 'buckets', 'partition', 'properties'];
const COLUMN_FIELDS = ['name', 'type'];
const PARTITION_FIELDS = ['column', 'unit', 'retain', 'precreate'];

/** Thrown inside this module only, so each check can stop validation with one short message. */
class SpecError extends Error {}

export function validateTableSpec(input: unknown): TableSpecValidation {
  try {
    return { ok: true, spec: readTableSpec(input) };
  } catch (error) {
    if (error instanceof SpecError) return { ok: false, message: error.message };
    throw error;
  }
}

/** A name error message, or null when `name` is a valid table or column name. */
export function checkName(name: unknown, what: string): string | null {
  if (typeof name !== 'string') return `${what} must be a string`;
  if (name.length === 0) return `${what} must not be empty`;
  if (name.length > LIMITS.nameLengthMax) return `${what} is longer than ${LIMITS.nameLengthMax} characters`;
  if (!NAME_PATTERN.test(name)) {
    return `${what} '${name}' is invalid: use letters, digits, '_', '.' and '-', starting with a letter or '_'`;
  }
  return null;
}

function readTableSpec(input: unknown): TableSpec {
  const body = readObject(input, 'table spec');
  rejectUnknownFields(body, TABLE_FIELDS, 'table spec');

  if (body.name === undefined) fail('name is required');
  requireName(body.name, 'name');
  const name = body.name as string;

  const columns = readColumns(body.columns);
  const columnTypes = new Map<string, ColumnType>(columns.map((column) => [column.name, column.type]));

  const primaryKey = body.primaryKey === undefined ? undefined : readColumnList(body.primaryKey, 'primaryKey', 'primary key', columnTypes);
  const bucketKey = body.bucketKey === undefined ? undefined : readColumnList(body.bucketKey, 'bucketKey', 'bucket key', columnTypes);
  if (bucketKey && primaryKey) {
    // As in Fluss: rows with one key must land in one bucket, so the bucket key may only use key columns.
    const missing = bucketKey.find((column) => !primaryKey.includes(column));
    if (missing !== undefined) fail(`bucket key column '${missing}' is not part of the primary key`);
  }

  const buckets = readBuckets(body.buckets);
  const partition = body.partition === undefined ? undefined : readPartition(body.partition, columnTypes);
  if (partition && primaryKey) {
    // A key must map to one partition, otherwise an upsert could leave an older version in another one.
    if (!primaryKey.includes(partition.column)) {
      fail(`partition column '${partition.column}' must be part of the primary key`);
    }
    if (primaryKey.length === 1) {
      fail(`primary key must have a column besides the partition column '${partition.column}'`);
    }
  }
  const properties = body.properties === undefined ? undefined : readProperties(body.properties);

  const spec: TableSpec = { name, columns, buckets };
  if (primaryKey) spec.primaryKey = primaryKey;
  if (bucketKey) spec.bucketKey = bucketKey;
  if (partition) spec.partition = partition;
  if (properties) spec.properties = properties;
  const formatError = checkLogFormat(spec);
  if (formatError !== null) fail(formatError);
  const lakeError = checkLakeSpec(spec);
  if (lakeError !== null) fail(lakeError);
  return spec;
}

function readColumns(value: unknown): ColumnSpec[] {
  if (value === undefined) fail('columns is required');
  if (!Array.isArray(value)) fail('columns must be an array');
  if (value.length === 0) fail('columns must not be empty');
  if (value.length > LIMITS.columnsPerTableMax) fail(`columns has more than ${LIMITS.columnsPerTableMax} entries`);
  const seen = new Set<string>();
  return value.map((entry: unknown, index: number) => {
    const column = readObject(entry, `columns[${index}]`);
    rejectUnknownFields(column, COLUMN_FIELDS, `columns[${index}]`);
    requireName(column.name, `columns[${index}].name`);
    const name = column.name as string;
    if (seen.has(name)) fail(`duplicate column '${name}'`);
    if (RESERVED_COLUMN_NAMES.includes(name)) fail(`column name '${name}' is reserved for the system columns of scans (${RESERVED_COLUMN_NAMES.join(', ')})`);
    seen.add(name);
    if (typeof column.type !== 'string' || !(COLUMN_TYPES as readonly string[]).includes(column.type)) {
      const shown = typeof column.type === 'string' ? column.type : JSON.stringify(column.type) ?? 'undefined';
      fail(`unknown type '${shown}' for column '${name}' (expected one of ${COLUMN_TYPES.join(', ')})`);
    }
    return { name, type: column.type as ColumnType };
  });
}

/** A primary or bucket key: a non-empty list of distinct, existing columns. */
function readColumnList(value: unknown, field: string, what: string, columnTypes: Map<string, ColumnType>): string[] {
  if (!Array.isArray(value)) fail(`${field} must be an array of column names`);
  if (value.length === 0) fail(`${field} must not be empty`);
  const seen = new Set<string>();
  for (const column of value) {
    if (typeof column !== 'string') fail(`${field} must be an array of column names`);
    if (!columnTypes.has(column)) fail(`${what} column '${column}' is not a column of the table`);
    if (seen.has(column)) fail(`duplicate ${what} column '${column}'`);
    seen.add(column);
  }
  return [...(value as string[])];
}

function readBuckets(value: unknown): number {
  if (value === undefined) fail('buckets is required');
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > LIMITS.bucketsPerTableMax) {
    fail(`buckets must be an integer between 1 and ${LIMITS.bucketsPerTableMax}`);
  }
  return value;
}

function readPartition(value: unknown, columnTypes: Map<string, ColumnType>): PartitionSpec {
  const partition = readObject(value, 'partition');
  rejectUnknownFields(partition, PARTITION_FIELDS, 'partition');
  if (typeof partition.column !== 'string') fail('partition.column must be a column name');
  const columnType = columnTypes.get(partition.column);
  if (columnType === undefined) fail(`partition column '${partition.column}' is not a column of the table`);
  if (!PARTITION_COLUMN_TYPES.includes(columnType)) {
    // A row's partition comes from an instant or from a partition name; no other type holds either.
    fail(`partition column '${partition.column}' is of type ${columnType}: a table is partitioned by a column of type ${PARTITION_COLUMN_TYPES.join(' or ')}`);
  }
  if (typeof partition.unit !== 'string' || !(PARTITION_UNITS as readonly string[]).includes(partition.unit)) {
    fail(`partition.unit must be one of ${PARTITION_UNITS.map((unit) => `'${unit}'`).join(', ')}`);
  }
  const result: PartitionSpec = { column: partition.column, unit: partition.unit as PartitionSpec['unit'] };
  if (partition.retain !== undefined) {
    if (typeof partition.retain !== 'number' || !Number.isSafeInteger(partition.retain) || partition.retain < 1) {
      fail('partition.retain must be a positive integer');
    }
    result.retain = partition.retain;
  }
  if (partition.precreate !== undefined) {
    const precreate = partition.precreate;
    if (typeof precreate !== 'number' || !Number.isSafeInteger(precreate) || precreate < 0 || precreate > LIMITS.partitionPrecreateMax) {
      fail(`partition.precreate must be an integer between 0 and ${LIMITS.partitionPrecreateMax}`);
    }
    result.precreate = precreate;
  }
  return result;
}

function readProperties(value: unknown): Record<string, string> {
  const properties = readObject(value, 'properties');
  const result: Record<string, string> = {};
  for (const [key, property] of Object.entries(properties)) {
    if (key.length === 0) fail('property names must not be empty');
    // Assigning `__proto__` on a plain object would change its prototype instead of adding a property.
    if (key === '__proto__') fail("property name '__proto__' is reserved");
    if (typeof property !== 'string') fail(`property '${key}' must be a string`);
    result[key] = property;
  }
  return result;
}

function readObject(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail(`${what} must be an object`);
  return value as Record<string, unknown>;
}

function rejectUnknownFields(value: Record<string, unknown>, known: string[], what: string): void {
  const unknown = Object.keys(value).filter((key) => !known.includes(key));
  if (unknown.length === 1) fail(`unknown field '${unknown[0]}' in ${what}`);
  if (unknown.length > 1) fail(`unknown fields ${unknown.map((key) => `'${key}'`).join(', ')} in ${what}`);
}

function requireName(value: unknown, what: string): void {
  const message = checkName(value, what);
  if (message !== null) fail(message);
}

function fail(message: string): never {
  throw new SpecError(message);
}
