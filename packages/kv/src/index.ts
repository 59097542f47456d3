export * from './kv-tablet';
export { compareBytes, prefixEnd } from './bytes';
export { LmdbKvTablet, type LmdbKvTabletOptions } from './lmdb-kv-tablet';
export { InMemoryKvTablet } from './in-memory-kv-tablet';
export { packSnapshotFile, unpackSnapshotFile, restoreTabletFromFile, type UnpackedSnapshot } from './snapshot-archive';
