/**
 * The Iceberg schema of a mink table's lake table (docs/architecture.md §9, lake): the table's columns in table order
 * with field ids 1..n, then the system columns `__bucket` (int), `__offset` (long) and `__timestamp`
 * (timestamptz), as Fluss lays out its lake tables.
 *
 * Types: boolean → boolean, int32 → int, int64 → long, float64 → double, string → string, bytes → binary,
 * timestamp → timestamptz. mink stores a timestamp as epoch milliseconds in an Arrow
 * `Timestamp(millisecond, "UTC")`, an instant, so it maps to Iceberg's `timestamptz` (an instant stored as
 * UTC), not `timestamp` (a wall-clock time). Iceberg stores every timestamp in microseconds, so the Parquet
 * writer multiplies by 1000. `__timestamp` is the record's append time (the stored batch's `$ts`
 * column), an instant as well.
 *
 * Nullability: a column of the primary key is `required` (the PK write path refuses a null key), every
 * other column is `optional` (mink stores every column nullable). The system columns are `required`. The
 * primary key's columns are the schema's `identifier-field-ids`.
 *
 * Field ids are given once, when the lake table is created; a reader or writer of an existing lake table
 * takes them from its metadata (`IcebergSchema`), never recomputes them, so the system columns keep their
 * ids if columns are ever added.
 */
import { InvalidArgumentError } from '@mink/protocol';
import type { ColumnSpec, ColumnType } from '@mink/meta';

/** Name of the system column holding each row's bucket. */
export const LAKE_BUCKET_COLUMN = '__bucket';
/** Name of the system column holding each row's offset in its bucket's stream. */
export const LAKE_OFFSET_COLUMN = '__offset';
/** Name of the system column holding each row's append time. */
export const LAKE_TIMESTAMP_COLUMN = '__timestamp';
/** The system columns, in the order they follow the table's columns. */
export const LAKE_SYSTEM_COLUMNS: readonly string[] = [LAKE_BUCKET_COLUMN, LAKE_OFFSET_COLUMN, LAKE_TIMESTAMP_COLUMN];

/** The Iceberg primitive types a lake table uses. */
export type IcebergType = 'boolean' | 'int' | 'long' | 'double' | 'string' | 'binary' | 'timestamptz';

/** One field of an Iceberg schema, as the table metadata's JSON writes it (Iceberg spec, Appendix C). */
export interface IcebergField {
  id: number;
  name: string;
  required: boolean;
  type: IcebergType;
}

/** An Iceberg schema as the table metadata's JSON writes it. Fields are in schema order. */
export interface IcebergSchema {
  type: 'struct';
  'schema-id': number;
  'identifier-field-ids'?: number[];
  fields: IcebergField[];
}

/** The Iceberg type of each mink column type. */
export const ICEBERG_TYPE_OF: Readonly<Record<ColumnType, IcebergType>> = {
  boolean: 'boolean',
  int32: 'int',
  int64: 'long',
  float64: 'double',
  string: 'string',
  bytes: 'binary',
  timestamp: 'timestamptz',
};

/** The mink column type of each Iceberg type a lake table uses (the inverse of ICEBERG_TYPE_OF). */
export const COLUMN_TYPE_OF: Readonly<Record<IcebergType, ColumnType>> = {
  boolean: 'boolean',
  int: 'int32',
  long: 'int64',
  double: 'float64',
  string: 'string',
  binary: 'bytes',
  timestamptz: 'timestamp',
};

/**
 * The schema (id 0) of a new lake table for a mink table with `columns` and `primaryKey` (empty for a
 * log table). Throws InvalidArgumentError when a column takes a system column's name (the metadata rules
 * do not reserve them), or the primary key names a column the table does not have or names one twice.
 */
export function icebergSchemaOf(columns: readonly ColumnSpec[], primaryKey: readonly string[] = []): IcebergSchema {
  if (columns.length === 0) throw new InvalidArgumentError('a lake table needs at least one column');
  const seen = new Set<string>();
  for (const column of columns) {
    if (LAKE_SYSTEM_COLUMNS.includes(column.name)) {
      throw new InvalidArgumentError(`column '${column.name}' takes the name of a lake system column (${LAKE_SYSTEM_COLUMNS.join(', ')})`);
    }
    if (seen.has(column.name)) throw new InvalidArgumentError(`column '${column.name}' is listed twice`);
    if (!(column.type in ICEBERG_TYPE_OF)) throw new InvalidArgumentError(`column '${column.name}' has the unknown type '${String(column.type)}'`);
    seen.add(column.name);
  }
  const keyed = new Set<string>();
  for (const name of primaryKey) {
    if (!seen.has(name)) throw new InvalidArgumentError(`primary key column '${name}' is not a column of the table`);
    if (keyed.has(name)) throw new InvalidArgumentError(`primary key column '${name}' is listed twice`);
    keyed.add(name);
  }
  const fields: IcebergField[] = columns.map((column, index) => ({
    id: index + 1,
    name: column.name,
    required: keyed.has(column.name),
    type: ICEBERG_TYPE_OF[column.type],
  }));
  fields.push({ id: columns.length + 1, name: LAKE_BUCKET_COLUMN, required: true, type: 'int' });
  fields.push({ id: columns.length + 2, name: LAKE_OFFSET_COLUMN, required: true, type: 'long' });
  fields.push({ id: columns.length + 3, name: LAKE_TIMESTAMP_COLUMN, required: true, type: 'timestamptz' });
  const schema: IcebergSchema = { type: 'struct', 'schema-id': 0, fields };
  if (primaryKey.length > 0) schema['identifier-field-ids'] = primaryKey.map((name) => fields.find((field) => field.name === name)!.id);
  return schema;
}

/** The field of `schema` named `name`; a schema of a lake table without it is not one this package wrote (plain Error). */
export function fieldNamed(schema: IcebergSchema, name: string): IcebergField {
  const field = schema.fields.find((candidate) => candidate.name === name);
  if (field === undefined) throw new Error(`the lake table's schema has no field '${name}'`);
  return field;
}

/** The table's own columns of a lake schema: every field but the system columns, in schema order. */
export function tableFieldsOf(schema: IcebergSchema): IcebergField[] {
  return schema.fields.filter((field) => !LAKE_SYSTEM_COLUMNS.includes(field.name));
}

/** The largest field id of `schema` (the metadata's `last-column-id` for a table with one schema). */
export function lastColumnIdOf(schema: IcebergSchema): number {
  return schema.fields.reduce((highest, field) => Math.max(highest, field.id), 0);
}
