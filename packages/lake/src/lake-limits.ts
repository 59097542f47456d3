/**
 * Every bound of the lake writer in one place (STYLE 6), each with its unit and the reason for its value.
 * They bound what one process holds in memory for one data file and what a table's metadata keeps.
 */
export const LAKE_LIMITS = {
  /**
   * Rows per Parquet row group. One row group per file is what a tiering round usually writes (a bucket's
   * batches of one round); larger files are cut so a reader can split them (each row group's start is a
   * split offset in the manifest).
   */
  parquetRowGroupRowsMax: 1_048_576,
  /**
   * Bytes of stored batches one data file is written from. The batches, their IPC copy for WebAssembly and
   * the Parquet output are all in memory at once (parquet-wasm's memory also never shrinks), so a tiering
   * round cuts a bucket's batches into files of at most this much.
   */
  parquetSourceBytesMax: 256 * 1024 * 1024,
  /**
   * Manifests a snapshot carries over before a commit merges them into one. Every append adds a manifest,
   * and readers open every manifest of a snapshot, so without merging a log table's planning cost would
   * grow with its number of rounds.
   */
  manifestsPerSnapshotMax: 64,
  /** Characters of a commit tag (`r{tieringEpoch}` takes at most 17), which names metadata and data files. */
  commitTagCharactersMax: 32,
  /** Snapshots a metadata file keeps (the newest); older ones are dropped from the list, not their files. */
  snapshotsRetainedMax: 100,
  /** Entries of `metadata-log` a metadata file keeps (Iceberg's `write.metadata.previous-versions-max` default). */
  metadataLogEntriesMax: 100,
  /** Bytes an Avro block of a manifest or manifest list holds before the encoder starts the next block. */
  avroBlockBytes: 64 * 1024,
  /**
   * Bytes of Arrow data (every lake column of the live rows) one bucket of a primary-key table may hold as
   * its merged state. A round rewrites the bucket's whole state into one data file (copy-on-write), and
   * the state, its IPC copy for WebAssembly and WebAssembly's own copy are in memory at once (as are the
   * old state and the next one while a fold gathers), so a round's peak for one bucket is about three times
   * this, plus `pkChangelogFoldBytes` and the key index: about 0.6 GiB at these values. Half of
   * `parquetSourceBytesMax`, as the state is held in the wider lake layout while it is merged.
   */
  pkBucketStateBytesMax: 128 * 1024 * 1024,
  /**
   * Live keys of one bucket of a primary-key table while a round merges it: the key index holds one string
   * and one number per key (measured: 63 MiB of heap for 1 000 000 int64 keys; longer string keys take
   * more), so this bounds it near 140 MiB for int64 keys.
   */
  pkBucketKeysMax: 2_097_152,
  /**
   * Bytes of changelog batches a round holds for one bucket before it folds them into the merged state
   * (gathering the live rows into one batch and dropping the rest), so a long range of updates to few keys
   * is merged in bounded memory. Each fold copies the state once: larger means fewer copies, more memory.
   */
  pkChangelogFoldBytes: 32 * 1024 * 1024,
} as const;

// The bounds are related: a merged state is written as one data file, and is folded more than once per state's worth.
if (LAKE_LIMITS.pkBucketStateBytesMax > LAKE_LIMITS.parquetSourceBytesMax) throw new Error('LAKE_LIMITS.pkBucketStateBytesMax exceeds parquetSourceBytesMax');
if (LAKE_LIMITS.pkChangelogFoldBytes > LAKE_LIMITS.pkBucketStateBytesMax) throw new Error('LAKE_LIMITS.pkChangelogFoldBytes exceeds pkBucketStateBytesMax');
