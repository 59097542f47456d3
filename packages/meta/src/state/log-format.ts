import type { ColumnSpec, TableSpec } from './view';

/**
 * How a log table stores its batches (docs/architecture.md §8.2), named by the table property `table.log.format` as in
 * Fluss: `arrow` (the default) stores Arrow IPC record batches, so scans project columns and tiering
 * writes Parquet without row-by-row work; `kafka` stores Kafka record batches (v2) as producers sent them,
 * so a Kafka fetch returns them without re-encoding. A Kafka topic is a log table of the `kafka` format.
 */
export type LogFormat = 'arrow' | 'kafka';

export const LOG_FORMAT_PROPERTY = 'table.log.format';

export const LOG_FORMATS: readonly LogFormat[] = ['arrow', 'kafka'];

/**
 * The columns of a table in the `kafka` format, one per part of a Kafka record: key and value as bytes,
 * headers as text. Record timestamps are the stored batches' own, not a column.
 */
export const KAFKA_TOPIC_COLUMNS: readonly ColumnSpec[] = [
  { name: 'key', type: 'bytes' },
  { name: 'value', type: 'bytes' },
  { name: 'headers', type: 'string' },
];

/** The storage format of a table; tables declared before the property existed are `arrow`. */
export function logFormatOf(table: { properties?: Record<string, string> }): LogFormat {
  return table.properties?.[LOG_FORMAT_PROPERTY] === 'kafka' ? 'kafka' : 'arrow';
}

/**
 * Why `spec` declares a storage format it cannot have, or null: the property must name a known format, and
 * a `kafka` table is an unpartitioned log table (no primary key) with exactly the Kafka topic columns, since
 * its stored batches hold nothing else.
 */
export function checkLogFormat(spec: TableSpec): string | null {
  const declared = spec.properties?.[LOG_FORMAT_PROPERTY];
  if (declared === undefined) return null;
  if (!(LOG_FORMATS as readonly string[]).includes(declared)) {
    return `property '${LOG_FORMAT_PROPERTY}' must be one of ${LOG_FORMATS.join(', ')}, got '${declared}'`;
  }
  if (declared !== 'kafka') return null;
  if (spec.primaryKey !== undefined && spec.primaryKey.length > 0) return `a table in the kafka format is a log table: it has no primary key`;
  if (spec.partition !== undefined) return `a table in the kafka format is not partitioned (its Kafka partitions are its buckets)`;
  const expected = KAFKA_TOPIC_COLUMNS.map((column) => `${column.name} ${column.type}`).join(', ');
  const declaredColumns = spec.columns.map((column) => `${column.name} ${column.type}`).join(', ');
  if (declaredColumns !== expected) return `a table in the kafka format has the columns ${expected}, not ${declaredColumns}`;
  return null;
}

/** The declaration of a Kafka topic as a table: `partitions` buckets, the topic columns, the kafka format. */
export function kafkaTopicSpec(name: string, partitions: number, properties: Record<string, string> = {}): TableSpec {
  return {
    name,
    columns: KAFKA_TOPIC_COLUMNS.map((column) => ({ ...column })),
    buckets: partitions,
    properties: { ...properties, [LOG_FORMAT_PROPERTY]: 'kafka' },
  };
}
