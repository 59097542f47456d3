/**
 * One Apache Iceberg v2 table of mink's lake (docs/architecture.md §9) at `lake/{table}/` in the cluster's bucket:
 *
 *     lake/{table}/metadata/v{N}-{tag}.metadata.json   table metadata, version N (1, 2, ...) written by the round `tag`
 *     lake/{table}/metadata/version-hint.text         `{N}-{tag}` of the latest committed round, written after its commit
 *     lake/{table}/metadata/snap-{id}-{tag}-{uuid}.avro the manifest list of a snapshot
 *     lake/{table}/metadata/{tag}-{uuid}-m{i}.avro    manifests
 *     lake/{table}/data/__bucket={b}/{tag}-{first}-{last}-{uuid}.parquet   data files (the round, the offsets of their records)
 *
 * This is the layout of Iceberg's file-system ("Hadoop") catalog, which DuckDB, Spark and PyIceberg read
 * given the table's location: a reader takes the hint's text `{N}-{tag}` and opens `v{N}-{tag}.metadata.json`
 * (DuckDB's iceberg extension resolves `v%s.metadata.json` from the hint).
 *
 * The lake is not its own commit point: mink's metadata log is. A tiering round writes its data files, its
 * manifests and `v{N+1}-{tag}.metadata.json` under names no other round uses (`tag` names the round, e.g.
 * `r42` for tiering epoch 42), and the round counts only once the metadata log recorded that metadata key.
 * So two rounds racing from the same base (a fenced worker and its successor) both write their files and
 * neither clobbers the other; the log picks one, and the loser's files stay unreferenced. The hint is
 * written by `publishHint` only after the log commit, so it never names a round the log refused; a lost
 * hint is harmless, because mink finds the metadata through its view, not through the hint.
 *
 * Every object a round writes has its tag in its name, so even two rounds that drew the same uuids and
 * snapshot id could not overwrite each other's (readers never parse these names; Iceberg only suggests them).
 *
 * A commit still refuses to write a metadata key that exists (a read before the write, not a conditional
 * put, see LakeObjectStore): with unique tags that only happens when one round is committed twice, which
 * must not overwrite what the first attempt wrote.
 *
 * An instance remembers the state of its last `load` (or its own last commit): `commit`, `tieredOffsets`
 * and `dataFiles` work on that state and never re-read behind the caller's back.
 */
import { randomInt, randomUUID } from 'node:crypto';
import { InvalidArgumentError } from '@mink/protocol';

import { ENTRY_STATUS, type ManifestEntry, type ManifestFile, decodeManifest, decodeManifestList, encodeManifest, encodeManifestList } from './avro-manifests';
import { type DataFile, intBound, longOfBound } from './data-file';
import { LakeCommitConflictError } from './errors';
import { type IcebergSchema, LAKE_OFFSET_COLUMN, fieldNamed } from './iceberg-schema';
import { LAKE_LIMITS } from './lake-limits';
import { type LakeObjectStore, getOrNull } from './lake-store';
import {
  type LakeMetadataKeyParts,
  checkCommitTag,
  checkLakeTableName,
  lakeHintKey,
  lakeMetadataKey,
  parseLakeMetadataKey,
  publishLakeHint,
  readLakeHint,
} from './metadata-keys';
import type { ParquetDataFile } from './parquet-of-arrow';
import {
  type Snapshot,
  type TableMetadata,
  currentSchemaOf,
  currentSnapshotOf,
  mergeTieredOffsets,
  newTableMetadata,
  partitionSpecOf,
  snapshotSummaryOf,
  tieredOffsetsOf,
  withSnapshot,
} from './table-metadata';

/** Where ids and time come from; tests pass their own to get stable names. */
export interface LakeIdSource {
  uuid(): string;
  /** A positive snapshot id within the safe integers (JSON and Avro readers in JavaScript read them exactly). */
  snapshotId(): number;
  nowMs(): number;
}

export const SYSTEM_ID_SOURCE: LakeIdSource = {
  uuid: () => randomUUID(),
  snapshotId: () => randomInt(1, 2 ** 48),
  nowMs: () => Date.now(),
};

export interface IcebergTableOptions {
  store: LakeObjectStore;
  /** The mink table's name: the lake table is at `lake/{tableName}/`. */
  tableName: string;
  /**
   * The URI of the store's key space, which manifests and metadata record locations under, e.g.
   * `s3://mink-data` (plus the store's key prefix if it has one, e.g. `s3://mink-data/cluster-a`).
   */
  storeUri: string;
  /** The schema a new lake table gets (`icebergSchemaOf`); an existing table keeps the one in its metadata. */
  schema: IcebergSchema;
  ids?: LakeIdSource;
}

/** The table as a `load` found it. */
export interface LoadedTable {
  /** The metadata object loaded (`lake/{table}/metadata/v{N}-{tag}.metadata.json`); null before the table's first commit. */
  metadataKey: string | null;
  /** The metadata version (N of the key); 0 before the first commit. */
  version: number;
  metadata: TableMetadata | null;
  currentSnapshot: Snapshot | null;
}

export interface CommitRequest {
  /** Data files already stored (`writeDataFile`), to add. */
  added: readonly DataFile[];
  /** Locations of live data files to remove (copy-on-write: a bucket's new file replaces its old one). */
  removed?: readonly string[];
  /** Per bucket tiered by this round, the offset after its last record now in the lake. */
  offsets: ReadonlyMap<number, number>;
  /** Further summary keys (e.g. the round's id); the spec's keys and `mink.offsets` take precedence. */
  summary?: Readonly<Record<string, string>>;
  /** The round's name in the keys it writes (`v{N+1}-{tag}.metadata.json`), unique per round: e.g. `r42`. See `checkCommitTag`. */
  tag: string;
}

export interface CommitResult {
  snapshot: Snapshot;
  /** The metadata object written, for the metadata log to record and `publishHint` to name once it did. */
  metadataKey: string;
}

export class IcebergTable {
  private readonly store: LakeObjectStore;
  private readonly ids: LakeIdSource;
  private readonly storeUri: string;
  private readonly creationSchema: IcebergSchema;
  /** Key of the table's folder, with a trailing slash: `lake/{table}/`. */
  readonly root: string;
  /** The table's location as Iceberg records it: `{storeUri}/lake/{table}`. */
  readonly location: string;
  readonly tableName: string;
  private state: LoadedTable | null = null;

  constructor(options: IcebergTableOptions) {
    checkLakeTableName(options.tableName);
    this.store = options.store;
    this.ids = options.ids ?? SYSTEM_ID_SOURCE;
    this.tableName = options.tableName;
    this.storeUri = options.storeUri.replace(/\/+$/, '');
    this.creationSchema = options.schema;
    this.root = `lake/${options.tableName}/`;
    this.location = `${this.storeUri}/lake/${options.tableName}`;
  }

  /**
   * Reads the metadata object `metadataKey` (as the metadata view records it and `commit` returns it), or
   * takes the table as having no commit yet when it is null: no snapshot, nothing tiered, the creation
   * schema. Nothing else is read: the view, not the store's listing or the hint, says which metadata is
   * current. Throws InvalidArgumentError for a key that is not a metadata key of this table, NotFoundError
   * (from the store) when the object is missing, and a plain Error for metadata that is not this table's.
   */
  async load(metadataKey: string | null): Promise<LoadedTable> {
    if (metadataKey === null) {
      this.state = { metadataKey: null, version: 0, metadata: null, currentSnapshot: null };
      return this.state;
    }
    const { version } = this.partsOfMetadataKey(metadataKey);
    const metadata = JSON.parse(Buffer.from(await this.store.get(metadataKey)).toString('utf8')) as TableMetadata;
    if (metadata['format-version'] !== 2) throw new Error(`${metadataKey} has format version ${metadata['format-version']}, expected 2`);
    // The checks the spec asks of a reader: a table is not replaced by another under the same name, and
    // its locations are where this instance will look for them.
    if (metadata.location !== this.location) throw new Error(`${metadataKey} is of the table at ${metadata.location}, not ${this.location}`);
    const knownUuid = this.state?.metadata?.['table-uuid'];
    if (knownUuid !== undefined && knownUuid !== metadata['table-uuid']) {
      throw new Error(`lake table '${this.tableName}' changed its uuid from ${knownUuid} to ${metadata['table-uuid']}`);
    }
    this.state = { metadataKey, version, metadata, currentSnapshot: currentSnapshotOf(metadata) };
    return this.state;
  }

  /** The schema data files are written with: the loaded table's current one, or the creation schema for a new table. */
  schema(): IcebergSchema {
    const metadata = this.loaded().metadata;
    return metadata === null ? this.creationSchema : currentSchemaOf(metadata);
  }

  /** Per bucket, the offset after its last record in the lake, from the loaded table's current snapshot (empty before one). */
  tieredOffsets(): Map<number, number> {
    const snapshot = this.loaded().currentSnapshot;
    return snapshot === null ? new Map() : tieredOffsetsOf(snapshot.summary);
  }

  /**
   * Stores a written data file of the round `tag` under `data/__bucket={b}/` and returns it as a commit
   * adds it. The key names the round and a fresh uuid, so no other round's file is ever overwritten.
   */
  async writeDataFile(file: ParquetDataFile, tag: string): Promise<DataFile> {
    checkCommitTag(tag);
    const key = `${this.root}data/__bucket=${file.bucket}/${tag}-${file.offsets.first}-${file.offsets.last}-${this.ids.uuid()}.parquet`;
    await this.store.put(key, file.bytes);
    return { ...file.metrics, path: this.uriOf(key), bucket: file.bucket };
  }

  /** The live data files of the loaded table's current snapshot (metadata → manifest list → manifests). */
  async dataFiles(): Promise<DataFile[]> {
    const { currentSnapshot } = this.loaded();
    if (currentSnapshot === null) return [];
    const files: DataFile[] = [];
    for (const manifest of await this.readManifestList(currentSnapshot['manifest-list'])) {
      for (const entry of await this.readManifest(manifest.path)) if (entry.status !== ENTRY_STATUS.deleted) files.push(entry.dataFile);
    }
    return files;
  }

  /** The manifests a manifest list (by its location) names. */
  async readManifestList(location: string): Promise<ManifestFile[]> {
    return (await decodeManifestList(await this.store.get(this.keyOf(location)))).manifests;
  }

  /** The entries of a manifest (by its location). */
  async readManifest(location: string): Promise<ManifestEntry[]> {
    return (await decodeManifest(await this.store.get(this.keyOf(location)))).entries;
  }

  /**
   * Commits a snapshot on the loaded state: `added` files become live, `removed` ones are marked deleted
   * in rewritten manifests, the summary records the merged tiered offsets. A commit may change no file if
   * it moves a bucket's tiered offset forward (a snapshot of the same files that records more tiered). Writes
   * `v{N+1}-{tag}.metadata.json` (creating the table at version 1 when it has none) and not the hint:
   * the caller records the returned key in the metadata log and then calls `publishHint`.
   * Throws LakeCommitConflictError when that key already exists (this round committed before),
   * InvalidArgumentError for a bad tag, for a commit that changes nothing, when a removed path is not
   * live, a file is added twice, or an added one is already live (checked against the manifests the
   * commit reads: those it rewrites or merges). On success the instance's state is the new version; on a failure it stays the loaded one,
   * and files written before the failure are left unreferenced.
   */
  async commit(request: CommitRequest): Promise<CommitResult> {
    checkCommitTag(request.tag);
    const base = this.loaded();
    const removed = new Set(request.removed ?? []);
    const addedPaths = new Set(request.added.map((file) => file.path));
    if (addedPaths.size !== request.added.length) throw new InvalidArgumentError('a data file is added twice');
    // A commit that changes no file still counts when it moves a tiered offset: a primary-key table's round
    // whose changes cancel out (a key put and deleted) has tiered its range, and the lake must say so.
    const baseOffsets = base.currentSnapshot === null ? new Map<number, number>() : tieredOffsetsOf(base.currentSnapshot.summary);
    const movesAnOffset = [...request.offsets].some(([bucket, offset]) => offset > (baseOffsets.get(bucket) ?? 0));
    if (request.added.length === 0 && removed.size === 0 && !movesAnOffset) throw new InvalidArgumentError('a commit must add or remove a data file, or move a tiered offset forward');
    for (const path of addedPaths) if (removed.has(path)) throw new InvalidArgumentError(`data file ${path} is both added and removed`);

    const version = base.version + 1;
    const metadataKey = this.metadataKeyOf(version, request.tag);
    // Checked before any work, and again right before the metadata is written.
    if ((await getOrNull(this.store, metadataKey)) !== null) throw new LakeCommitConflictError(this.tableName, metadataKey);
    const nowMs = this.ids.nowMs();
    const metadata = base.metadata ?? newTableMetadata(this.ids.uuid(), this.location, this.creationSchema, nowMs);
    const schema = currentSchemaOf(metadata);
    const partitionSpec = partitionSpecOf(schema);
    const parent = base.currentSnapshot;
    const sequenceNumber = metadata['last-sequence-number'] + 1;
    const snapshotId = this.freshSnapshotId(metadata);
    // Before anything is written: a bucket's tiered offset going back is a broken invariant.
    const offsets = mergeTieredOffsets(parent === null ? new Map() : tieredOffsetsOf(parent.summary), request.offsets);
    const offsetField = fieldNamed(schema, LAKE_OFFSET_COLUMN).id;
    for (const file of request.added) {
      const upper = file.upperBounds.get(offsetField);
      const tiered = offsets.get(file.bucket) ?? 0;
      if (upper !== undefined && longOfBound(upper) >= tiered) {
        throw new Error(`data file ${file.path} holds offset ${longOfBound(upper)} of bucket ${file.bucket}, which is tiered only up to ${tiered}`);
      }
    }

    // The parent's manifests with live files are carried over as they are, except that the manifests holding
    // a removed file are rewritten together into one (their other files as existing: a compaction touches one
    // manifest per round it replaces, and should not write as many back), and that once a snapshot would
    // carry LAKE_LIMITS.manifestsPerSnapshotMax manifests they are all merged into one. Manifests are read
    // only then; a plain append reads none.
    const parentManifests =
      parent === null ? [] : (await this.readManifestList(parent['manifest-list'])).filter((manifest) => manifest.addedFilesCount + manifest.existingFilesCount > 0);
    const merging = parentManifests.length >= LAKE_LIMITS.manifestsPerSnapshotMax;
    const carried: ManifestFile[] = [];
    // The entries of the manifests rewritten (or all merged), written back as one manifest.
    const merged: ManifestEntry[] = [];
    const removedFiles: DataFile[] = [];
    for (const manifest of parentManifests) {
      if (removed.size === 0 && !merging) {
        carried.push(manifest);
        continue;
      }
      const live = (await this.readManifest(manifest.path)).filter((entry) => entry.status !== ENTRY_STATUS.deleted);
      for (const entry of live) {
        if (addedPaths.has(entry.dataFile.path)) throw new InvalidArgumentError(`data file ${entry.dataFile.path} is already live`);
      }
      if (!merging && !live.some((entry) => removed.has(entry.dataFile.path))) {
        carried.push(manifest);
        continue;
      }
      const next: ManifestEntry[] = live.map((entry) => {
        // Existing and deleted entries carry their sequence numbers explicitly (spec: sequence number inheritance).
        const dataSequence = entry.sequenceNumber ?? manifest.sequenceNumber;
        const fileSequence = entry.fileSequenceNumber ?? manifest.sequenceNumber;
        if (removed.has(entry.dataFile.path)) {
          removedFiles.push(entry.dataFile);
          return { status: ENTRY_STATUS.deleted, snapshotId, sequenceNumber: dataSequence, fileSequenceNumber: fileSequence, dataFile: entry.dataFile };
        }
        return {
          status: ENTRY_STATUS.existing,
          snapshotId: entry.snapshotId ?? manifest.addedSnapshotId,
          sequenceNumber: dataSequence,
          fileSequenceNumber: fileSequence,
          dataFile: entry.dataFile,
        };
      });
      merged.push(...next);
    }
    const missing = [...removed].filter((path) => !removedFiles.some((file) => file.path === path));
    if (missing.length > 0) throw new InvalidArgumentError(`data files to remove are not live: ${missing.join(', ')}`);

    const manifests: ManifestFile[] = [];
    let manifestIndex = 0;
    const manifestUuid = this.ids.uuid();
    const writeManifest = async (entries: ManifestEntry[]): Promise<ManifestFile> => {
      const key = `${this.root}metadata/${request.tag}-${manifestUuid}-m${manifestIndex++}.avro`;
      const bytes = await encodeManifest({ schema, partitionSpec }, entries);
      await this.store.put(key, bytes);
      return manifestFileOf(this.uriOf(key), bytes.byteLength, snapshotId, sequenceNumber, entries);
    };
    if (request.added.length > 0) {
      manifests.push(
        await writeManifest(
          request.added.map((dataFile) => ({ status: ENTRY_STATUS.added, snapshotId, sequenceNumber: null, fileSequenceNumber: null, dataFile })),
        ),
      );
    }
    if (merged.length > 0) manifests.push(await writeManifest(merged));
    manifests.push(...carried);

    const manifestListKey = `${this.root}metadata/snap-${snapshotId}-${request.tag}-${this.ids.uuid()}.avro`;
    await this.store.put(
      manifestListKey,
      await encodeManifestList({ snapshotId, parentSnapshotId: parent?.['snapshot-id'] ?? null, sequenceNumber }, manifests),
    );

    const changedBuckets = new Set([...request.added, ...removedFiles].map((file) => file.bucket));
    const summary = snapshotSummaryOf(
      parent?.summary ?? null,
      {
        addedFiles: request.added.length,
        addedRecords: sumOf(request.added, (file) => file.recordCount),
        addedBytes: sumOf(request.added, (file) => file.fileSizeBytes),
        removedFiles: removedFiles.length,
        removedRecords: sumOf(removedFiles, (file) => file.recordCount),
        removedBytes: sumOf(removedFiles, (file) => file.fileSizeBytes),
        changedPartitions: changedBuckets.size,
      },
      offsets,
      request.summary,
    );
    const snapshot: Snapshot = {
      'snapshot-id': snapshotId,
      ...(parent === null ? {} : { 'parent-snapshot-id': parent['snapshot-id'] }),
      'sequence-number': sequenceNumber,
      'timestamp-ms': nowMs,
      'manifest-list': this.uriOf(manifestListKey),
      summary,
      'schema-id': schema['schema-id'],
    };
    const previousMetadataFile = base.metadataKey === null ? null : this.uriOf(base.metadataKey);
    const next = withSnapshot(metadata, snapshot, previousMetadataFile, nowMs);

    // The check closest to the write: the same key written since the first check is an attempt of the same round.
    if ((await getOrNull(this.store, metadataKey)) !== null) throw new LakeCommitConflictError(this.tableName, metadataKey);
    await this.store.put(metadataKey, Buffer.from(JSON.stringify(next, null, 2), 'utf8'));
    this.state = { metadataKey, version, metadata: next, currentSnapshot: snapshot };
    return { snapshot, metadataKey };
  }

  /** `publishLakeHint` for a metadata key of this table (InvalidArgumentError for another table's). */
  async publishHint(metadataKey: string): Promise<boolean> {
    this.partsOfMetadataKey(metadataKey);
    return publishLakeHint(this.store, metadataKey);
  }

  /** `readLakeHint` of this table. */
  readHint(): Promise<string | null> {
    return readLakeHint(this.store, this.tableName);
  }

  /** The key of `v{version}-{tag}.metadata.json` of this table. */
  metadataKeyOf(version: number, tag: string): string {
    return lakeMetadataKey(this.tableName, version, tag);
  }

  /** The parts of a metadata key of this table; InvalidArgumentError for any other key. */
  partsOfMetadataKey(metadataKey: string): LakeMetadataKeyParts {
    const parts = parseLakeMetadataKey(metadataKey);
    if (parts.tableName !== this.tableName) throw new InvalidArgumentError(`'${metadataKey}' is not a metadata key of lake table '${this.tableName}'`);
    return parts;
  }

  hintKey(): string {
    return lakeHintKey(this.tableName);
  }

  /** The store key of a location under the store's URI. */
  keyOf(location: string): string {
    const prefix = `${this.storeUri}/`;
    if (!location.startsWith(prefix)) throw new Error(`location ${location} is not under ${prefix}`);
    return location.slice(prefix.length);
  }

  uriOf(key: string): string {
    return `${this.storeUri}/${key}`;
  }

  private loaded(): LoadedTable {
    if (this.state === null) throw new Error(`lake table '${this.tableName}': load() it first`);
    return this.state;
  }

  private freshSnapshotId(metadata: TableMetadata): number {
    const taken = new Set(metadata.snapshots.map((snapshot) => snapshot['snapshot-id']));
    for (;;) {
      const id = this.ids.snapshotId();
      if (!Number.isSafeInteger(id) || id <= 0) throw new Error(`snapshot id ${id} is not a positive safe integer`);
      if (!taken.has(id)) return id;
    }
  }
}

/** The manifest list's entry of a manifest written by snapshot `snapshotId` at `sequenceNumber`. */
function manifestFileOf(path: string, length: number, snapshotId: number, sequenceNumber: number, entries: readonly ManifestEntry[]): ManifestFile {
  const withStatus = (status: number) => entries.filter((entry) => entry.status === status);
  const added = withStatus(ENTRY_STATUS.added);
  const existing = withStatus(ENTRY_STATUS.existing);
  const deleted = withStatus(ENTRY_STATUS.deleted);
  const liveSequences = [...added.map(() => sequenceNumber), ...existing.map((entry) => entry.sequenceNumber ?? sequenceNumber)];
  const buckets = entries.map((entry) => entry.dataFile.bucket);
  return {
    path,
    length,
    partitionSpecId: 0,
    content: 0,
    sequenceNumber,
    minSequenceNumber: liveSequences.length === 0 ? sequenceNumber : Math.min(...liveSequences),
    addedSnapshotId: snapshotId,
    addedFilesCount: added.length,
    existingFilesCount: existing.length,
    deletedFilesCount: deleted.length,
    addedRowsCount: sumOf(added, (entry) => entry.dataFile.recordCount),
    existingRowsCount: sumOf(existing, (entry) => entry.dataFile.recordCount),
    deletedRowsCount: sumOf(deleted, (entry) => entry.dataFile.recordCount),
    partitions: [{ containsNull: false, lowerBound: intBound(Math.min(...buckets)), upperBound: intBound(Math.max(...buckets)) }],
  };
}

function sumOf<T>(items: readonly T[], value: (item: T) => number): number {
  return items.reduce((total, item) => total + value(item), 0);
}
