import { InvalidArgumentError, NotFoundError } from '@mink/protocol';

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

/**
 * The URI of a store's key space as Iceberg metadata records locations under it (`IcebergTableOptions.storeUri`):
 * `s3://{bucket}` plus the store's key prefix, as `S3ObjectStore` takes both. The prefix is prepended to
 * keys verbatim, so it must be empty or end with `/` for `lake/{table}/` to be a folder of that URI.
 */
export function lakeStoreUri(bucket: string, prefix = ''): string {
  if (!/^[A-Za-z0-9._-]+$/.test(bucket)) throw new InvalidArgumentError(`'${bucket}' is not an S3 bucket name`);
  if (prefix !== '' && (!prefix.endsWith('/') || prefix.startsWith('/') || prefix.includes('//'))) {
    throw new InvalidArgumentError(`key prefix '${prefix}' must be empty or a folder ('name/'), for lake locations to be folders`);
  }
  return `s3://${bucket}${prefix === '' ? '' : `/${prefix.slice(0, -1)}`}`;
}
