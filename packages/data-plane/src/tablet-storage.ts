import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { LmdbKvTablet, packSnapshotFile, restoreTabletFromFile, type KvTablet } from '@mink/kv';
import type { ObjectStore } from '@mink/s3stream';

/** A snapshot of a tablet uploaded as an object: the changelog offset its state includes and its size. */
export interface UploadedSnapshot {
  appliedOffset: number;
  bytes: number;
}

/**
 * Where a PK bucket's KV tablet lives on the node and how its snapshots travel to and from object storage.
 * Production keeps LMDB tablets in a local folder and moves snapshots as gzip archives streamed through
 * files (`LMDB_TABLETS`); the cluster simulation keeps tablets in memory (its storage is in memory too).
 */
export interface TabletStorage {
  /** An empty tablet in `directory` (whatever an earlier run left there is removed first). */
  openEmpty(directory: string): Promise<KvTablet>;
  /** The tablet of the snapshot object `object`, restored into `directory`, with the snapshot's size in bytes. */
  restore(objectStore: ObjectStore, object: string, directory: string): Promise<{ tablet: KvTablet; bytes: number }>;
  /** Uploads a consistent snapshot of `tablet` (applies may go on) under the key `keyOf` gives for its offset. */
  upload(objectStore: ObjectStore, tablet: KvTablet, directory: string, keyOf: (appliedOffset: number) => string): Promise<UploadedSnapshot & { object: string }>;
}

/** LMDB tablets in local folders; snapshot archives packed into a file and streamed, so none is held in memory. */
export const LMDB_TABLETS: TabletStorage = {
  async openEmpty(directory) {
    await prepare(directory);
    return LmdbKvTablet.open(directory);
  },

  async restore(objectStore, object, directory) {
    await prepare(directory);
    // The archive goes through a file beside the tablet's folder, so restoring holds none of it in memory.
    const archivePath = `${directory}.archive`;
    try {
      const bytes = await objectStore.getToFile(object, archivePath);
      return { tablet: await restoreTabletFromFile(archivePath, directory), bytes };
    } finally {
      await rm(archivePath, { force: true });
    }
  },

  async upload(objectStore, tablet, directory, keyOf) {
    const folder = await mkdtemp(`${directory}-snapshot-`);
    // The archive is packed into a file and uploaded from it, so a snapshot holds none of the table in memory.
    const archivePath = `${folder}.archive`;
    try {
      let appliedOffset: number;
      let bytes: number;
      try {
        const snapshot = await tablet.snapshot(folder);
        appliedOffset = snapshot.appliedOffset;
        bytes = (await packSnapshotFile(folder, snapshot, archivePath)).bytes;
      } finally {
        await rm(folder, { recursive: true, force: true });
      }
      const object = keyOf(appliedOffset);
      await objectStore.putFile(object, archivePath);
      return { object, appliedOffset, bytes };
    } finally {
      await rm(archivePath, { force: true });
    }
  },
};

/** Empties a tablet's folder and makes its parent (a fresh process has not made it yet). */
async function prepare(directory: string): Promise<void> {
  await rm(directory, { recursive: true, force: true });
  await mkdir(dirname(directory), { recursive: true });
}
