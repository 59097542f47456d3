import { LIMITS } from '@mink/config';
import { InvalidArgumentError, UnavailableError } from '@mink/protocol';

/** One stored entry, as a scan returns it. */
export interface KvEntry {
  key: Uint8Array;
  value: Uint8Array;
}

/** One write of a batch: `value` null deletes the key, any other value replaces it. */
export interface KvWrite {
  key: Uint8Array;
  value: Uint8Array | null;
}

/** What a snapshot copied: the changelog offset its state includes and the files written into its directory. */
export interface KvSnapshot {
  /** Replay of the changelog starts here to bring a tablet restored from this snapshot up to date. */
  appliedOffset: number;
  /** File names, relative to the snapshot directory. */
  files: string[];
  /** Total size of those files. */
  bytes: number;
}

/**
 * The KV tablet of one primary-key bucket: byte keys to byte values, ordered bytewise, plus the changelog
 * offset the stored state includes.
 *
 * Contract:
 * - Keys hold 1 to `LIMITS.kvKeyBytesMax` bytes; values any number of bytes, including none.
 * - `apply` is atomic: every write of the batch and the new applied offset become visible together or not at
 *   all, and a crash of the process keeps them so (the LMDB tablet does not flush to disk, so a crash of the
 *   machine may not: a PK bucket never reopens a tablet a process left, it restores from object storage). Writes to one key within a batch take effect in batch order, so the last one wins. Batches
 *   are applied in call order. The offset never goes backwards; an apply with a smaller offset than an earlier
 *   call is a broken invariant of the caller and throws a plain Error.
 * - `appliedOffset` is the offset of the first changelog record not yet included (0 for a new tablet): a
 *   tablet restored from a snapshot replays the changelog from there.
 * - Reads see every apply whose promise has resolved. `getMany` and `scanPrefix` read one consistent state.
 * - `scanPrefix` returns at most `limit` entries whose keys start with `prefix`, in bytewise key order; an empty
 *   prefix scans all keys. With `after`, only keys bytewise greater than it: a caller pages through a range
 *   by passing the last key it got.
 * - `snapshot` writes a consistent copy into an empty or missing directory while applies continue; its
 *   `appliedOffset` is exactly the offset of the state copied.
 * - Returned byte arrays are copies the caller may keep and change.
 */
export interface KvTablet {
  get(key: Uint8Array): Uint8Array | undefined;
  /** Values in the order of `keys`, undefined for a missing key. */
  getMany(keys: readonly Uint8Array[]): (Uint8Array | undefined)[];
  scanPrefix(prefix: Uint8Array, limit: number, after?: Uint8Array): KvEntry[];
  apply(batch: readonly KvWrite[], appliedOffset: number): Promise<void>;
  appliedOffset(): number;
  snapshot(toDirectory: string): Promise<KvSnapshot>;
  /** Releases the tablet; its data stays where it is. */
  close(): Promise<void>;
  /** Closes the tablet and deletes its data. */
  destroy(): Promise<void>;
}

/** Rejects a key the tablet cannot store, with the reason. */
export function assertValidKey(key: Uint8Array): void {
  if (!(key instanceof Uint8Array)) throw new InvalidArgumentError('a KV key must be a Uint8Array');
  if (key.length === 0) throw new InvalidArgumentError('a KV key must not be empty');
  if (key.length > LIMITS.kvKeyBytesMax) {
    throw new InvalidArgumentError(`a KV key of ${key.length} bytes exceeds ${LIMITS.kvKeyBytesMax} bytes`);
  }
}

/** Rejects a batch or offset before anything of it is written, so a rejected apply leaves the tablet unchanged. */
/**
 * A commit the tablet could not make: the local disk is full (or failed). Nothing of the batch was applied
 * and the applied offset did not move, so the same batch may be applied again, which succeeds once the disk
 * takes writes again. An outage of the node's local disk, hence `Unavailable` to whoever wrote.
 */
export class KvCommitFailedError extends UnavailableError {}

export function assertValidApply(batch: readonly KvWrite[], appliedOffset: number, previousOffset: number): void {
  if (!Number.isSafeInteger(appliedOffset) || appliedOffset < 0) {
    throw new InvalidArgumentError(`an applied offset must be a non-negative safe integer (got ${appliedOffset})`);
  }
  if (batch.length > LIMITS.kvApplyWritesMax) {
    throw new InvalidArgumentError(`a KV batch of ${batch.length} writes exceeds ${LIMITS.kvApplyWritesMax}`);
  }
  for (const write of batch) {
    assertValidKey(write.key);
    if (write.value !== null && !(write.value instanceof Uint8Array)) {
      throw new InvalidArgumentError('a KV value must be a Uint8Array or null');
    }
  }
  // An offset going backwards means the caller replayed or reordered the changelog, which would silently
  // corrupt the tablet; it is an assertion, not an expected outcome.
  if (appliedOffset < previousOffset) {
    throw new Error(`KV applied offset went backwards from ${previousOffset} to ${appliedOffset}`);
  }
}

/** Rejects a scan limit outside 0..`LIMITS.kvScanEntriesMax`, which bounds the memory one scan holds. */
export function assertValidScanLimit(limit: number): void {
  if (!Number.isSafeInteger(limit) || limit < 0 || limit > LIMITS.kvScanEntriesMax) {
    throw new InvalidArgumentError(`a KV scan limit must be an integer in 0..${LIMITS.kvScanEntriesMax} (got ${limit})`);
  }
}

/** Rejects a lookup of more keys than `LIMITS.kvLookupKeysMax`, which bounds the memory one lookup holds. */
export function assertValidLookup(keys: readonly Uint8Array[]): void {
  if (keys.length > LIMITS.kvLookupKeysMax) {
    throw new InvalidArgumentError(`a KV lookup of ${keys.length} keys exceeds ${LIMITS.kvLookupKeysMax}`);
  }
  for (const key of keys) assertValidKey(key);
}
