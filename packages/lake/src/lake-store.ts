import { NotFoundError } from '@mink/protocol';

/**
 * The object storage a lake table lives in: a subset of s3stream's `ObjectStore`, so `S3ObjectStore` and
 * `InMemoryObjectStore` are passed as they are. Keys are the store's own (`lake/{table}/...`).
 *
 * Contract (as `ObjectStore`'s): `put` replaces the object as a whole and is durable once it resolves;
 * `get` fails with `NotFoundError` (@mink/protocol) for a missing key and with `UnavailableError` when the
 * store cannot be reached; `list` returns every key under a prefix in ascending order. No call is
 * conditional: S3-compatible emulators ignore `If-None-Match`, so a commit's "this version does not exist
 * yet" check is a read before the write, and writers must be fenced by whoever runs them.
 */
export interface LakeObjectStore {
  put(key: string, body: Uint8Array): Promise<void>;
  get(key: string): Promise<Uint8Array>;
  list(prefix: string): Promise<{ key: string; size: number }[]>;
}

/** The object at `key`, or null when there is none. */
export async function getOrNull(store: LakeObjectStore, key: string): Promise<Uint8Array | null> {
  try {
    return await store.get(key);
  } catch (error) {
    if (error instanceof NotFoundError) return null;
    throw error;
  }
}
