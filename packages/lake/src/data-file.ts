/**
 * What Iceberg's manifests record about a data file (the spec's `data_file` struct) beyond where it is:
 * its size, its rows and per-column metrics keyed by field id. Bounds are in Iceberg's single-value
 * serialization (Appendix D: little-endian int/long/double, one byte for a boolean); a column without an
 * entry has no bound recorded, which readers take as "unknown", never as "empty".
 */
export interface DataFileMetrics {
  recordCount: number;
  fileSizeBytes: number;
  /** Field id → bytes its column takes in the file. */
  columnSizes: ReadonlyMap<number, number>;
  /** Field id → values in its column, nulls included. */
  valueCounts: ReadonlyMap<number, number>;
  /** Field id → null values in its column. */
  nullValueCounts: ReadonlyMap<number, number>;
  /** Field id → a value no larger than any non-null value of its column. */
  lowerBounds: ReadonlyMap<number, Uint8Array>;
  /** Field id → a value no smaller than any non-null value of its column. */
  upperBounds: ReadonlyMap<number, Uint8Array>;
  /** Where each row group starts in the file, ascending (a reader may split the file there). */
  splitOffsets: readonly number[];
}

/**
 * A data file of a lake table: Parquet, in the partition of one bucket (the table is partitioned by
 * identity on `__bucket`, so every file holds the rows of one bucket).
 */
export interface DataFile extends DataFileMetrics {
  /** Full location as manifests record it (`s3://bucket/lake/{table}/data/...`). */
  path: string;
  bucket: number;
}

/** A little-endian 32-bit integer in Iceberg's single-value serialization (`int`). */
export function intBound(value: number): Uint8Array {
  const bytes = new Uint8Array(4);
  new DataView(bytes.buffer).setInt32(0, value, true);
  return bytes;
}

/** A little-endian 64-bit integer in Iceberg's single-value serialization (`long`, `timestamptz`). */
export function longBound(value: number | bigint): Uint8Array {
  const bytes = new Uint8Array(8);
  new DataView(bytes.buffer).setBigInt64(0, BigInt(value), true);
  return bytes;
}

/** The value of a `long` bound as a number (exact for the safe integers, which offsets are). */
export function longOfBound(bytes: Uint8Array): number {
  if (bytes.byteLength !== 8) throw new Error(`a long bound has 8 bytes, got ${bytes.byteLength}`);
  return Number(new DataView(bytes.buffer, bytes.byteOffset, 8).getBigInt64(0, true));
}
