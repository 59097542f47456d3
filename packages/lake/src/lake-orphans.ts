/**
 * Orphan removal of a lake table (docs/lake.md): deleting the objects under
 * `lake/{table}/` that no kept snapshot and no kept metadata file names any more, once they are old enough
 * that nobody can still need them. Orphans come from three places: the data files, manifests and manifest
 * lists of snapshots that expired (LAKE_LIMITS.snapshotsRetainedMax), among them the files a copy-on-write
 * round (a primary-key bucket's merge, a log bucket's compaction) replaced; the metadata files of versions
 * that left the metadata log; and every object of a round that was fenced or failed before its log commit.
 *
 * The sweep is planned on a metadata object the metadata log has committed (the `basis`, normally the
 * round just committed) and is safe against what it cannot see:
 *   - Rounds after the basis (in flight, or committed since) write their objects after the basis was
 *     written, so an object listed no older than the basis (by the store's own clock) is never deleted.
 *     Every object a later snapshot references is either that young or was already live in the basis'
 *     current snapshot (a file once removed never becomes live again: names carry round tags and uuids),
 *     so even a sweeper that stalled after its commit cannot delete what a newer round needs.
 *   - Readers that loaded an older metadata file (a data node's union read, an outside engine) can read
 *     its files while it is among the kept versions (snapshotsRetainedMax - 1 rounds after it stopped
 *     being current), and after that while the objects are younger than the grace period
 *     (LAKE_LIMITS.orphanGraceMs). The grace counts from an object's write, not from when it stopped
 *     being needed: for a table whose rounds come faster than every grace / snapshotsRetainedMax, the kept
 *     versions are what protects such readers.
 *   - Only keys this writer names (lakeObjectOf) and whose round tag is the table's id are candidates:
 *     the hint, foreign files and those of a dropped table of the same name stay.
 *
 * `planLakeOrphans` decides from a listing, the reachable keys and the time, without I/O; `sweepLakeOrphans`
 * reads the metadata chain, lists, plans and deletes in batches.
 */
import { LAKE_LIMITS } from './lake-limits';
import type { IcebergTable } from './iceberg-table';
import { ENTRY_STATUS } from './avro-manifests';
import { lakeObjectOf, tableIdOfTag } from './metadata-keys';
import { retainedMetadataFilesOf } from './table-metadata';

/** One object of a listing of the table's folder, with its store-side write time. */
export interface ListedLakeObject {
  key: string;
  size: number;
  /** When the object was last written, by the store's clock (whole seconds on S3). */
  lastModifiedMs: number;
}

/** What the planner needs; all of it is data, so the decision is a pure function. */
export interface LakeOrphanPlanInput {
  tableName: string;
  /** The mink table's id: only objects whose round tag names it (`t{id}r{epoch}`) may be deleted. */
  tableId: number;
  /** The committed metadata object the plan is made on; it must be in the listing. */
  basisMetadataKey: string;
  /** Every object under `lake/{tableName}/`. */
  listed: readonly ListedLakeObject[];
  /** Keys the basis reaches (`reachableLakeKeys`): itself, the kept metadata files, manifest lists, manifests and live data files. */
  reachable: ReadonlySet<string>;
  /** This process's clock; an object is old once `lastModifiedMs + graceMs <= nowMs`. */
  nowMs: number;
  graceMs: number;
  /** At most this many keys are planned for deletion; more orphans are counted as deferred. */
  deleteKeysMax: number;
}

/** What a sweep would do, and why it leaves the rest. Counts are of listed objects, each counted once. */
export interface LakeOrphanPlan {
  /** Keys to delete, in ascending order. */
  delete: string[];
  /** Set when nothing may be deleted at all, saying why. */
  skipped: string | null;
  counts: {
    listed: number;
    /** Named by the basis' kept snapshots or metadata files. */
    reachable: number;
    /** The hint, keys of no known kind, and keys of another table id's rounds. */
    foreign: number;
    /** Orphans younger than the grace period or not older than the basis. */
    young: number;
    /** Orphans old enough, beyond `deleteKeysMax`: left for the next sweep. */
    deferred: number;
  };
}

/**
 * Which listed objects of a lake table to delete. An object is deleted only when all of these hold: its
 * name is one this writer gives (metadata, manifest list, manifest, data file) with a round tag of
 * `tableId`; the basis does not reach it; it was written before the basis (strictly earlier by the
 * store's clock, so objects of later rounds, which come after the basis, are never candidates); and it is
 * at least `graceMs` old by `nowMs`. Nothing is planned when the basis itself is not listed (the listing
 * cannot be trusted to be as new as the basis). The first `deleteKeysMax` candidates in key order are
 * returned. Refuses a bad grace, bound or basis with a plain Error: the caller's bug.
 */
export function planLakeOrphans(input: LakeOrphanPlanInput): LakeOrphanPlan {
  const { tableName, tableId, basisMetadataKey, listed, reachable, nowMs, graceMs, deleteKeysMax } = input;
  if (!Number.isSafeInteger(graceMs) || graceMs < 0) throw new Error(`an orphan grace period of ${graceMs} ms`);
  if (!Number.isSafeInteger(deleteKeysMax) || deleteKeysMax < 0) throw new Error(`an orphan delete bound of ${deleteKeysMax} keys`);
  if (!Number.isFinite(nowMs)) throw new Error(`the time ${nowMs}`);
  const basisName = lakeObjectOf(tableName, basisMetadataKey);
  if (basisName.kind !== 'metadata') throw new Error(`'${basisMetadataKey}' is not a metadata key of lake table '${tableName}'`);
  if (!reachable.has(basisMetadataKey)) throw new Error(`the reachable keys of '${tableName}' do not hold their basis ${basisMetadataKey}`);

  const counts = { listed: listed.length, reachable: 0, foreign: 0, young: 0, deferred: 0 };
  const basis = listed.find((object) => object.key === basisMetadataKey);
  if (basis === undefined) return { delete: [], skipped: `the listing of '${tableName}' does not hold ${basisMetadataKey}`, counts };

  const candidates: string[] = [];
  for (const object of listed) {
    if (reachable.has(object.key)) {
      counts.reachable++;
      continue;
    }
    const name = lakeObjectOf(tableName, object.key);
    if (name.kind === 'other' || name.kind === 'hint' || name.tag === null || tableIdOfTag(name.tag) !== tableId) {
      counts.foreign++;
      continue;
    }
    // A time that is not a number is not "old".
    const old = object.lastModifiedMs + graceMs <= nowMs && object.lastModifiedMs < basis.lastModifiedMs;
    if (!old) {
      counts.young++;
      continue;
    }
    candidates.push(object.key);
  }
  candidates.sort();
  counts.deferred = Math.max(0, candidates.length - deleteKeysMax);
  return { delete: candidates.slice(0, deleteKeysMax), skipped: null, counts };
}

/**
 * The keys the loaded metadata of `table` reaches: the metadata object itself, the metadata files its log
 * keeps, and for every kept snapshot its manifest list, each manifest listed there and the data files those
 * manifests hold live (added or existing; a file a manifest marks deleted is live only in an older snapshot,
 * which reaches it itself if it is kept). Each manifest is read once. Throws what the store throws (a
 * missing manifest list or manifest included): a sweep that cannot see everything deletes nothing.
 */
export async function reachableLakeKeys(table: IcebergTable, metadataKey: string): Promise<Set<string>> {
  const loaded = await table.load(metadataKey);
  const metadata = loaded.metadata;
  if (metadata === null) throw new Error(`lake table '${table.tableName}' has no metadata at ${metadataKey}`);
  const reachable = new Set<string>([metadataKey]);
  for (const location of retainedMetadataFilesOf(metadata)) reachable.add(table.keyOf(location));
  const manifestsRead = new Set<string>();
  for (const snapshot of metadata.snapshots) {
    reachable.add(table.keyOf(snapshot['manifest-list']));
    for (const manifest of await table.readManifestList(snapshot['manifest-list'])) {
      if (manifestsRead.has(manifest.path)) continue;
      manifestsRead.add(manifest.path);
      reachable.add(table.keyOf(manifest.path));
      for (const entry of await table.readManifest(manifest.path)) {
        if (entry.status !== ENTRY_STATUS.deleted) reachable.add(table.keyOf(entry.dataFile.path));
      }
    }
  }
  return reachable;
}

/** The store an orphan sweep needs: listing with write times, reads (through the table) and deletes. */
export interface LakeSweepStore {
  list(prefix: string): Promise<ListedLakeObject[]>;
  delete(keys: string[]): Promise<void>;
}

export interface LakeSweepRequest {
  /** The table, opened on the same store (its schema does not matter: the sweep only loads metadata). */
  table: IcebergTable;
  tableId: number;
  /** A metadata object the metadata log has committed. */
  basisMetadataKey: string;
  nowMs: number;
  /** LAKE_LIMITS.orphanGraceMs when absent. */
  graceMs?: number;
  /** LAKE_LIMITS.orphanDeleteKeysPerSweepMax when absent. */
  deleteKeysMax?: number;
  /** LAKE_LIMITS.orphanDeleteBatchKeys when absent. */
  batchKeys?: number;
}

/** What a sweep did. */
export interface LakeSweepResult {
  plan: LakeOrphanPlan;
  /** Keys deleted (in batches; a failed batch and the ones after it are not). */
  deleted: number;
  /** The failure that stopped the deletes, if one did; the keys left are deleted by a later sweep. */
  deleteError: unknown;
}

/**
 * One orphan sweep of a lake table on a committed metadata object: reads the keys it reaches, lists the
 * table's folder (after reading, so everything the listing holds that the reads did not name is at least
 * as old as the listing), plans with `planLakeOrphans` and deletes the planned keys in batches of
 * `batchKeys`. A failed delete stops the sweep and is returned, not thrown; a failed read or listing
 * throws before anything is deleted. Deleting is idempotent, so sweeps may overlap.
 */
export async function sweepLakeOrphans(store: LakeSweepStore, request: LakeSweepRequest): Promise<LakeSweepResult> {
  const { table } = request;
  const batchKeys = request.batchKeys ?? LAKE_LIMITS.orphanDeleteBatchKeys;
  if (!Number.isSafeInteger(batchKeys) || batchKeys < 1) throw new Error(`an orphan delete batch of ${batchKeys} keys`);
  const reachable = await reachableLakeKeys(table, request.basisMetadataKey);
  const listed = await store.list(table.root);
  const plan = planLakeOrphans({
    tableName: table.tableName,
    tableId: request.tableId,
    basisMetadataKey: request.basisMetadataKey,
    listed,
    reachable,
    nowMs: request.nowMs,
    graceMs: request.graceMs ?? LAKE_LIMITS.orphanGraceMs,
    deleteKeysMax: request.deleteKeysMax ?? LAKE_LIMITS.orphanDeleteKeysPerSweepMax,
  });
  let deleted = 0;
  for (let start = 0; start < plan.delete.length; start += batchKeys) {
    const keys = plan.delete.slice(start, start + batchKeys);
    try {
      await store.delete(keys);
    } catch (error) {
      return { plan, deleted, deleteError: error };
    }
    deleted += keys.length;
  }
  return { plan, deleted, deleteError: null };
}
