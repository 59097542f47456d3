/**
 * A byte range of an object: the bytes at positions `start` up to, but not including, `endExclusive`.
 * Both are whole numbers and `start < endExclusive`; an empty range cannot be asked for.
 */
export interface ByteRange {
  start: number;
  endExclusive: number;
}

/**
 * The largest file `putFile` uploads: S3 refuses a single PutObject above 5 GiB, and larger objects would need
 * a multipart upload, which this port does not offer. Every adapter refuses a larger file with
 * `InvalidArgumentError` before sending anything, so the fake and the real store agree. (An in-memory `put`
 * body cannot reach it: Node's buffers stop below.)
 */
export const OBJECT_PUT_BYTES_MAX = 5 * 1024 * 1024 * 1024;

/**
 * The bytes of an object to put: one array, or parts laid end to end. Parts are sent as they are, never
 * joined into one array first, so a writer that assembles an object from many batches (a WAL object, a
 * stream object) does not copy them once more on the way out.
 */
export type ObjectBody = Uint8Array | readonly Uint8Array[];

/** The parts of `body`, in order. */
export function partsOfBody(body: ObjectBody): readonly Uint8Array[] {
  return body instanceof Uint8Array ? [body] : body;
}

/** The length in bytes of the object `body` makes. */
export function lengthOfBody(body: ObjectBody): number {
  if (body instanceof Uint8Array) return body.byteLength;
  let length = 0;
  for (const part of body) length += part.byteLength;
  return length;
}

/** One entry of a listing. */
export interface ListedObject {
  key: string;
  /** Length of the object in bytes. */
  size: number;
  /**
   * When the object was last written (its `put`), in milliseconds since the epoch by the store's own clock:
   * S3's `LastModified`, which servers round down to whole seconds. For maintenance that must leave young
   * objects alone (orphan removal after a grace period); compare it with a local clock only with a margin.
   */
  lastModifiedMs: number;
}

/**
 * The port through which s3stream reaches object storage (docs/architecture.md §4, §4). Keys are opaque strings; an
 * adapter may place them under a prefix of its own, which callers never see.
 *
 * Contract shared by every implementation (checked by `describeObjectStoreContract`):
 * - `put` replaces the whole object atomically: a `get` sees either the old or the new body, never a mix.
 *   A body given as parts stores their bytes end to end. Once `put` resolves, the body is durable and later
 *   mutation of the caller's arrays does not affect it; until then they must not change.
 * - `putFile` stores the bytes of a local file as the object, with the same replace-as-a-whole rule as `put`.
 *   The file is read from disk as it is sent, so memory does not grow with its size; it must not change
 *   until the call resolves. A file larger than `OBJECT_PUT_BYTES_MAX` is refused with `InvalidArgumentError`
 *   and nothing is sent; a file that cannot be read fails with the file system's own error.
 * - `get` resolves with a fresh array the caller may keep or mutate. A range whose `endExclusive` lies beyond
 *   the end of the object is clipped to the object, as S3 does; a range starting at or beyond the end is
 *   refused with `InvalidArgumentError`, as is a malformed range. A missing key fails with `NotFoundError`.
 * - `getToFile` writes the whole object into a local file, creating it or replacing what it held (never
 *   appending), and resolves with the object's length in bytes once the file holds all of it. The bytes go to
 *   disk as they arrive, so memory does not grow with the object. A missing key fails with `NotFoundError`.
 *   After a failure the file's content is unspecified: the caller removes it.
 * - `delete` removes every listed key; keys that do not exist are ignored, so a repeated delete succeeds.
 * - `list` is for maintenance and tests only: readers find data through the metadata view and never list
 *   (docs/architecture.md §5). It returns every key under the prefix, across all pages, in ascending order of the keys'
 *   UTF-8 bytes, each with its size and the time it was last written (`lastModifiedMs`, whole seconds on S3).
 * - Requests that cannot reach the store fail with `UnavailableError` after the adapter's own retries.
 *
 * Calls are independent: an implementation may run them concurrently and in any order, so a caller that
 * needs a `put` to be visible before a `get` awaits the `put` first.
 */
export interface ObjectStore {
  put(key: string, body: ObjectBody): Promise<void>;
  /** Whole object, or the byte range [start, endExclusive). Throws NotFoundError when missing. */
  get(key: string, range?: ByteRange): Promise<Uint8Array>;
  /** Uploads the local file at `path` as the object, streamed from disk; at most `OBJECT_PUT_BYTES_MAX` bytes. */
  putFile(key: string, path: string): Promise<void>;
  /** Downloads the whole object into the local file at `path` (created or truncated); resolves with its length. */
  getToFile(key: string, path: string): Promise<number>;
  /** Missing keys are fine. */
  delete(keys: string[]): Promise<void>;
  /** Only for maintenance/tests (readers never list to find data): keys under a prefix, all pages. */
  list(prefix: string): Promise<ListedObject[]>;
}
