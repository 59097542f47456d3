/**
 * A byte range of an object: the bytes at positions `start` up to, but not including, `endExclusive`.
 * Both are whole numbers and `start < endExclusive`; an empty range cannot be asked for.
 */
export interface ByteRange {
  start: number;
  endExclusive: number;
}

/** One entry of a listing. */
export interface ListedObject {
  key: string;
  /** Length of the object in bytes. */
  size: number;
}

/**
 * The port through which s3stream reaches object storage (DESIGN §3, §4). Keys are opaque strings; an
 * adapter may place them under a prefix of its own, which callers never see.
 *
 * Contract shared by every implementation (checked by `describeObjectStoreContract`):
 * - `put` replaces the whole object atomically: a `get` sees either the old or the new body, never a mix.
 *   Once `put` resolves, the body is durable and later mutation of the caller's array does not affect it.
 * - `get` resolves with a fresh array the caller may keep or mutate. A range whose `endExclusive` lies beyond
 *   the end of the object is clipped to the object, as S3 does; a range starting at or beyond the end is
 *   refused with `InvalidArgumentError`, as is a malformed range. A missing key fails with `NotFoundError`.
 * - `delete` removes every listed key; keys that do not exist are ignored, so a repeated delete succeeds.
 * - `list` is for maintenance and tests only: readers find data through the metadata view and never list
 *   (DESIGN §4). It returns every key under the prefix, across all pages, in ascending order of the keys'
 *   UTF-8 bytes.
 * - Requests that cannot reach the store fail with `UnavailableError` after the adapter's own retries.
 *
 * Calls are independent: an implementation may run them concurrently and in any order, so a caller that
 * needs a `put` to be visible before a `get` awaits the `put` first.
 */
export interface ObjectStore {
  put(key: string, body: Uint8Array): Promise<void>;
  /** Whole object, or the byte range [start, endExclusive). Throws NotFoundError when missing. */
  get(key: string, range?: ByteRange): Promise<Uint8Array>;
  /** Missing keys are fine. */
  delete(keys: string[]): Promise<void>;
  /** Only for maintenance/tests (readers never list to find data): keys under a prefix, all pages. */
  list(prefix: string): Promise<ListedObject[]>;
}
