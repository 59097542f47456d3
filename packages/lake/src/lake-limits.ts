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
  /**
   * Snapshots a metadata file keeps, the newest (snapshot expiry): a reader may time-travel to these, and
   * their objects are never orphans. Every commit adds one snapshot, so a file a round replaces stays
   * readable for this many more rounds (and then until it is `orphanGraceMs` old). Small, because every
   * orphan sweep reads each kept snapshot's manifest list.
   */
  snapshotsRetainedMax: 8,
  /**
   * Entries of `metadata-log` a metadata file keeps: one per kept snapshot besides the current one, since
   * each metadata version adds exactly one snapshot. The metadata files named there are kept with their
   * snapshots; older ones are orphans.
   */
  metadataLogEntriesMax: 7,
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
  /**
   * Bytes of Parquet below which a log table's data file is small. Log rounds add one file per bucket, so
   * at low throughput a bucket gathers many small files, which every reader opens one by one; compaction
   * rewrites runs of small files into one. A file at or above this is left as it is.
   */
  logCompactionSmallFileBytes: 8 * 1024 * 1024,
  /**
   * Small data files one bucket of a log table may keep: a round after which a bucket holds more rewrites
   * its adjacent small files into one (copy-on-write, in the round's own snapshot). So a bucket keeps at
   * most this many small files while they fit `logCompactionArrowBytesMax`, and a compaction rewrites about
   * this many files' worth of rows (it runs once every this many rounds of a quiet bucket).
   */
  logCompactionSmallFilesMax: 8,
  /**
   * Bytes of Arrow data (the lake layout, as `lakeBatchesOfParquet` decodes it) one compacted file is
   * written from. The decoded files, their IPC copy for WebAssembly and the Parquet output are in memory at
   * once, as for a primary-key bucket's state, so the same bound: a run of files beyond it is cut into
   * several outputs, and a file that alone is beyond it stays as it is.
   */
  logCompactionArrowBytesMax: 128 * 1024 * 1024,
  /**
   * Age (by the store's LastModified) a lake object must reach before an orphan sweep deletes it, when no
   * kept snapshot or kept metadata file names it. Rounds in flight write objects no metadata names yet, and
   * readers that loaded an older metadata file may still fetch its files: both are younger than this. It
   * must exceed a round's duration by far; the tiering worker takes MINK_LAKE_ORPHAN_GRACE_MS instead.
   */
  orphanGraceMs: 10 * 60 * 1000,
  /** Orphaned lake objects one sweep (after one round of one table) deletes at most; the rest wait for the next round. */
  orphanDeleteKeysPerSweepMax: 1_000,
  /** Keys per delete request of an orphan sweep; a failed batch stops the sweep, leaving the rest for the next one. */
  orphanDeleteBatchKeys: 250,
} as const;

// The bounds are related: a merged state is written as one data file, and is folded more than once per state's worth.
if (LAKE_LIMITS.pkBucketStateBytesMax > LAKE_LIMITS.parquetSourceBytesMax) throw new Error('LAKE_LIMITS.pkBucketStateBytesMax exceeds parquetSourceBytesMax');
if (LAKE_LIMITS.pkChangelogFoldBytes > LAKE_LIMITS.pkBucketStateBytesMax) throw new Error('LAKE_LIMITS.pkChangelogFoldBytes exceeds pkBucketStateBytesMax');
// One metadata file per kept snapshot: the log names the older ones, the current one is the metadata itself.
if (LAKE_LIMITS.metadataLogEntriesMax !== LAKE_LIMITS.snapshotsRetainedMax - 1) throw new Error('LAKE_LIMITS.metadataLogEntriesMax must be snapshotsRetainedMax - 1');
// A compacted file is one data file, decoded like a primary-key bucket's state; a compaction joins at least two files.
if (LAKE_LIMITS.logCompactionArrowBytesMax > LAKE_LIMITS.parquetSourceBytesMax) throw new Error('LAKE_LIMITS.logCompactionArrowBytesMax exceeds parquetSourceBytesMax');
if (LAKE_LIMITS.logCompactionSmallFileBytes > LAKE_LIMITS.logCompactionArrowBytesMax) throw new Error('LAKE_LIMITS.logCompactionSmallFileBytes exceeds logCompactionArrowBytesMax');
if (LAKE_LIMITS.logCompactionSmallFilesMax < 1) throw new Error('LAKE_LIMITS.logCompactionSmallFilesMax must be at least 1');
if (LAKE_LIMITS.orphanDeleteBatchKeys > LAKE_LIMITS.orphanDeleteKeysPerSweepMax) throw new Error('LAKE_LIMITS.orphanDeleteBatchKeys exceeds orphanDeleteKeysPerSweepMax');
