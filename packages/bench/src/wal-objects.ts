import type { ObjectStore } from '@mink/s3stream';
import { WAL_KEY_PREFIX } from './bench-limits';
import type { WalObjectsWritten } from './results';
import { ratePerSecond } from './stats';

/**
 * Size of every WAL object in the bucket (or of every object under `prefix`), by key. Listing is for
 * maintenance and benchmarks only (docs/architecture.md §5).
 */
export async function listWalObjects(store: ObjectStore, prefix: string = WAL_KEY_PREFIX): Promise<Map<string, number>> {
  const listed = await store.list(prefix);
  return new Map(listed.map((entry) => [entry.key, entry.size]));
}

/**
 * The WAL objects in `after` that were not in `before`: what a scenario uploaded. Nothing else deletes
 * WAL objects while a bench runs (no tiering rounds yet), so the difference of two listings is exact.
 */
export function walObjectsWrittenSince(before: ReadonlyMap<string, number>, after: ReadonlyMap<string, number>, elapsedMs: number): WalObjectsWritten {
  let objects = 0;
  let bytes = 0;
  for (const [key, size] of after) {
    if (before.has(key)) continue;
    objects += 1;
    bytes += size;
  }
  return { objects, bytes, averageObjectBytes: objects === 0 ? 0 : bytes / objects, bytesPerSecond: ratePerSecond(bytes, elapsedMs) };
}
