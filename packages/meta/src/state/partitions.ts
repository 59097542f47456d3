/**
 * Time partitions of a partitioned table (docs/architecture.md §8.5, docs/ownership.md §2.1 ("Table or partition created")): which partition a
 * row belongs to, and the names partitions have. Names follow Fluss's auto-partitioning, in UTC:
 * `yyyyMMddHH` for unit `hour`, `yyyyMMdd` for unit `day` (e.g. `2026120117`, `20261201`), so they sort
 * in time order as text.
 *
 * A partition column is a `timestamp` column (the row's instant decides the partition) or a `string`
 * column (the value must be a partition name of the table's unit, as in Fluss).
 */
import type { ColumnType, PartitionSpec } from './view';

/** Partitions created ahead of the current one when a table does not say (`partition.precreate`). */
export const PARTITION_PRECREATE_DEFAULT = 2;

/** Column types a table may be partitioned by. */
export const PARTITION_COLUMN_TYPES: readonly ColumnType[] = ['timestamp', 'string'];

const UNIT_MS: Readonly<Record<PartitionSpec['unit'], number>> = { hour: 3_600_000, day: 86_400_000 };
const NAME_PATTERNS: Readonly<Record<PartitionSpec['unit'], RegExp>> = { hour: /^(\d{4})(\d{2})(\d{2})(\d{2})$/, day: /^(\d{4})(\d{2})(\d{2})$/ };
/** Years partition names may carry: four digits, and instants JavaScript dates hold exactly. */
const YEAR_MIN = 1970;
const YEAR_MAX = 9999;
/** The first and last instants (epoch ms) a partition name can carry: 1970-01-01T00:00Z and 9999-12-31T23:59:59.999Z. */
export const PARTITION_INSTANT_MIN_MS = Date.UTC(YEAR_MIN, 0, 1);
export const PARTITION_INSTANT_MAX_MS = Date.UTC(YEAR_MAX + 1, 0, 1) - 1;

/** The length of one partition of `unit` in milliseconds. */
export function partitionUnitMs(unit: PartitionSpec['unit']): number {
  return UNIT_MS[unit];
}

/** Whether the instant `epochMs` lies in the years partition names may carry (NaN fails both comparisons). */
function inNamedYears(epochMs: number): boolean {
  return epochMs >= PARTITION_INSTANT_MIN_MS && epochMs <= PARTITION_INSTANT_MAX_MS;
}

/**
 * The name of the partition of `unit` that holds the instant `epochMs` (UTC). `epochMs` must be a whole
 * number of milliseconds in the years 1970 to 9999 (a caller holding a value from outside goes through
 * `partitionOfValue`, which refuses it); anything else is a broken invariant of the caller and throws.
 */
export function partitionNameAt(unit: PartitionSpec['unit'], epochMs: number): string {
  if (!Number.isSafeInteger(epochMs) || !inNamedYears(epochMs)) {
    throw new Error(`invariant broken: ${epochMs} ms is not an instant in the years ${YEAR_MIN} to ${YEAR_MAX} that a partition name can carry`);
  }
  const date = new Date(epochMs);
  const two = (value: number) => String(value).padStart(2, '0');
  const day = `${String(date.getUTCFullYear()).padStart(4, '0')}${two(date.getUTCMonth() + 1)}${two(date.getUTCDate())}`;
  return unit === 'day' ? day : `${day}${two(date.getUTCHours())}`;
}

/** The first instant (epoch ms, UTC) of the partition named `name` of `unit`, or null when `name` is not such a name. */
export function partitionStartMs(unit: PartitionSpec['unit'], name: string): number | null {
  const match = NAME_PATTERNS[unit].exec(name);
  if (match === null) return null;
  const [year, month, day, hour] = match.slice(1).map(Number) as [number, number, number, number | undefined];
  if (year < YEAR_MIN || year > YEAR_MAX) return null;
  const start = Date.UTC(year, month - 1, day, hour ?? 0);
  // Date.UTC rolls over (month 13, day 32, hour 24), even past the last year: only a name that formats
  // back to itself is one.
  if (!inNamedYears(start)) return null;
  return partitionNameAt(unit, start) === name ? start : null;
}

/**
 * The partition a row belongs to, from the canonical value (see @mink/records row.ts) of its partition
 * column of type `type`: a timestamp's partition, or a string that is a partition name of the unit. A
 * reason to refuse the row otherwise.
 */
export function partitionOfValue(spec: PartitionSpec, type: ColumnType, value: unknown): { partition: string } | { refused: string } {
  if (value === null || value === undefined) return { refused: `partition column '${spec.column}' must hold a value` };
  if (type === 'timestamp' && typeof value === 'number') {
    if (!Number.isSafeInteger(value)) return { refused: `partition column '${spec.column}' holds ${value}, not a whole number of epoch milliseconds` };
    if (!inNamedYears(value)) return { refused: `partition column '${spec.column}' holds ${value}, outside the years ${YEAR_MIN} to ${YEAR_MAX}` };
    return { partition: partitionNameAt(spec.unit, value) };
  }
  if (type === 'string' && typeof value === 'string') {
    if (partitionStartMs(spec.unit, value) !== null) return { partition: value };
    const example = spec.unit === 'hour' ? '2026120117' : '20261201';
    return { refused: `partition column '${spec.column}' holds '${value.slice(0, 64)}', not a partition name of unit '${spec.unit}' (UTC ${spec.unit === 'hour' ? 'yyyyMMddHH' : 'yyyyMMdd'}, e.g. '${example}')` };
  }
  return { refused: `partition column '${spec.column}' of type ${type} cannot hold ${typeof value}` };
}
