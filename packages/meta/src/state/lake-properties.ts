import { parseDurationMs } from '@mink/config';
import { PARTITION_INSTANT_MAX_MS, partitionNameAt, partitionStartMs, partitionUnitMs } from './partitions';
import type { TableRecord, TableSpec } from './view';

/** Table properties of the lake and of retention (Fluss's names, docs/architecture.md §9). */
export const LAKE_ENABLED_PROPERTY = 'table.datalake.enabled';
export const LAKE_FRESHNESS_PROPERTY = 'table.datalake.freshness';
export const LOG_TTL_PROPERTY = 'table.log.ttl';

/** The properties `AlterTable` may change after a table was created. */
export const ALTERABLE_PROPERTIES: readonly string[] = [LAKE_ENABLED_PROPERTY, LAKE_FRESHNESS_PROPERTY, LOG_TTL_PROPERTY];

/** What a table gets when it does not set them: the lake off, tiered every 3 minutes when on, streams kept 7 days. */
export const LAKE_DEFAULTS = {
  freshnessMs: 3 * 60_000,
  logTtlMs: 7 * 24 * 3_600_000,
} as const;

/** A table's lake and retention settings, read from its properties (which `checkLakeProperties` accepted). */
export interface LakeSettings {
  enabled: boolean;
  /** How often a round is due: the lake lags the stream by at most about this much. */
  freshnessMs: number;
  /** Stream data older than this may be trimmed; null keeps it forever (`0`). */
  logTtlMs: number | null;
}

/** Durations as properties take them: `3m`, `1h`, `500ms`, plain milliseconds, and days (`7d`). */
function durationMs(text: string, what: string): number {
  const days = /^\s*(\d+(?:\.\d+)?)\s*d\s*$/.exec(text);
  if (days) {
    const milliseconds = Math.round(Number(days[1]) * 86_400_000);
    if (milliseconds <= 0) throw new Error(`${what}: '${text}' must be greater than zero`);
    return milliseconds;
  }
  return parseDurationMs(text, what);
}

/** Why a table's lake or retention properties are wrong, or null. */
export function checkLakeProperties(properties: Record<string, string> | undefined): string | null {
  try {
    lakeSettingsOf(properties ?? {});
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}

/** The lake and retention settings of a table's properties; throws naming a bad value. */
export function lakeSettingsOf(properties: Record<string, string>): LakeSettings {
  const enabled = properties[LAKE_ENABLED_PROPERTY];
  if (enabled !== undefined && enabled !== 'true' && enabled !== 'false') {
    throw new Error(`property '${LAKE_ENABLED_PROPERTY}' must be 'true' or 'false', got '${enabled}'`);
  }
  const freshness = properties[LAKE_FRESHNESS_PROPERTY];
  const ttl = properties[LOG_TTL_PROPERTY];
  return {
    enabled: enabled === 'true',
    freshnessMs: freshness === undefined ? LAKE_DEFAULTS.freshnessMs : durationMs(freshness, `property '${LAKE_FRESHNESS_PROPERTY}'`),
    logTtlMs: ttl === undefined ? LAKE_DEFAULTS.logTtlMs : /^\s*0\s*$/.test(ttl) ? null : durationMs(ttl, `property '${LOG_TTL_PROPERTY}'`),
  };
}

/** Why `spec` cannot have the lake it asks for, or null: the lake tiers tables in the Arrow format. */
export function checkLakeSpec(spec: TableSpec): string | null {
  const bad = checkLakeProperties(spec.properties);
  if (bad !== null) return bad;
  if (spec.properties?.[LAKE_ENABLED_PROPERTY] !== 'true') return null;
  if (spec.properties?.['table.log.format'] === 'kafka') return `a Kafka topic cannot have '${LAKE_ENABLED_PROPERTY}' yet`;
  return null;
}

/** Lake buckets are Iceberg `int` values (`__bucket`). */
const LAKE_BUCKET_MAX = 2 ** 31 - 1;

/**
 * The lake bucket of a stream bucket: the `__bucket` of its rows in the lake, the key of its lake offset
 * (`LakeRecord.offsets`) and of the ranges of a tiering round. For an unpartitioned table it is the bucket
 * number; for a partitioned one, the partition's ordinal (its start in units since the epoch) times the
 * table's bucket count plus the bucket, so every bucket of every partition, dropped ones included, has its
 * own. Null when the partition name is not one of the table's unit, or the value passes an Iceberg int
 * (hourly partitions of 1 024 buckets past the year 2209).
 */
export function lakeBucketOf(table: Pick<TableRecord, 'partition' | 'buckets'>, partition: string | null, bucket: number): number | null {
  if (table.partition === undefined) return partition === null ? bucket : null;
  if (partition === null) return null;
  const startMs = partitionStartMs(table.partition.unit, partition);
  if (startMs === null) return null;
  const lakeBucket = (startMs / partitionUnitMs(table.partition.unit)) * table.buckets + bucket;
  return Number.isSafeInteger(lakeBucket) && lakeBucket >= 0 && lakeBucket <= LAKE_BUCKET_MAX ? lakeBucket : null;
}

/**
 * The stream bucket of a lake bucket (see `lakeBucketOf`), whether or not that partition exists now; null
 * for a number no partition name can carry (past the year 9999), which only a malformed command holds.
 */
export function streamBucketOfLake(table: Pick<TableRecord, 'partition' | 'buckets'>, lakeBucket: number): { partition: string | null; bucket: number } | null {
  if (table.partition === undefined) return { partition: null, bucket: lakeBucket };
  const startMs = Math.floor(lakeBucket / table.buckets) * partitionUnitMs(table.partition.unit);
  if (!(startMs >= 0 && startMs <= PARTITION_INSTANT_MAX_MS)) return null;
  return { partition: partitionNameAt(table.partition.unit, startMs), bucket: lakeBucket % table.buckets };
}
