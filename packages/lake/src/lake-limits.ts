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
} as const;
