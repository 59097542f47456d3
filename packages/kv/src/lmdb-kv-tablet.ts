import { statfsSync } from 'node:fs';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { LIMITS } from '@mink/config';
import { join } from 'node:path';
import type * as Lmdb from 'lmdb';
import type { Database, RootDatabase } from 'lmdb';
import { InvalidArgumentError } from '@mink/protocol';
import { asBuffer, compareBytes, prefixEnd } from './bytes';
import {
  assertValidApply,
  assertValidKey,
  assertValidLookup,
  assertValidScanLimit,
  KvCommitFailedError,
  type KvEntry,
  type KvSnapshot,
  type KvTablet,
  type KvWrite,
} from './kv-tablet';

/** Options of `LmdbKvTablet.open`. */
export interface LmdbKvTabletOptions {
  /**
   * Whether a snapshot compacts while it copies (LMDB `MDB_CP_COMPACT`): the copy leaves out free pages and
   * is smaller, at some extra CPU. Defaults to true because snapshots travel to object storage.
   */
  compactSnapshots?: boolean;
  /**
   * The free bytes of the tablet's file system, read before each apply (statfs when absent). A test gives
   * one that reports room the disk no longer has, so that LMDB's own commit meets the full disk.
   */
  freeBytes?: (directory: string) => number;
}

/** The LMDB environment keeps two named databases: the entries, and the tablet's own state. */
const ENTRIES_DATABASE = 'entries';
const STATE_DATABASE = 'state';
/** The reserved key in the state database under which the applied offset is stored, as 8 bytes big-endian. */
const APPLIED_OFFSET_KEY = Buffer.from('appliedOffset');
/** LMDB keeps the whole environment in this file; the lock file beside it is per process and never copied. */
const DATA_FILE = 'data.mdb';
const LOCK_FILE = 'lock.mdb';

type BytesDatabase = Database<Buffer, Buffer>;

let lmdbModule: typeof Lmdb | undefined;

/**
 * lmdb-js, loaded with the first tablet opened: every data node imports the KV adapter, only one that leads a
 * primary-key bucket uses it, and loading it costs a process about 10 MiB of resident memory.
 */
function lmdb(): typeof Lmdb {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (lmdbModule ??= require('lmdb') as typeof Lmdb);
}

/**
 * A KV tablet on LMDB (lmdb-js). LMDB maps the data file into memory and the operating system pages it in
 * and out, so the process keeps no cache of keys or values and its resident memory does not grow with the
 * table. lmdb-js starts with a small map and grows it when a transaction fills it, so no `mapSize` is set.
 *
 * Entries and the applied offset live in two named databases of one environment, so one LMDB write
 * transaction commits both: that is what makes `apply` atomic, and why user keys need no reserved prefix.
 * Snapshots use LMDB's own environment copy (`backup`, i.e. `mdb_env_copy2`), which reads through one read
 * transaction on a native thread: the copy is consistent while later applies commit, and the offset a
 * snapshot reports is read back from the copy itself, so it is exactly the offset of the copied state.
 */
export class LmdbKvTablet implements KvTablet {
  /** The applied offset of the last commit, as stored in the state database (read there once, at open). */
  private applied: number;

  private constructor(
    private readonly directory: string,
    private readonly root: RootDatabase,
    private readonly entries: BytesDatabase,
    private readonly state: BytesDatabase,
    private readonly options: LmdbKvTabletOptions,
  ) {
    this.applied = decodeOffset(this.state.get(APPLIED_OFFSET_KEY));
  }

  /** Opens the tablet in `directory`, creating an empty one (applied offset 0) if there is none. */
  static async open(directory: string, options: LmdbKvTabletOptions = {}): Promise<LmdbKvTablet> {
    await mkdir(directory, { recursive: true });
    // An explicit `noSubdir: false` keeps the directory layout even if a directory name contains a dot.
    // No event-turn batching: every write here is a synchronous transaction of its own (see apply), and
    // lmdb-js's batching of asynchronous writes would add a commit promise that nobody holds, which a failed
    // commit (a full disk) would reject unhandled, ending the process.
    // No flush to disk (`noSync`): a PK bucket's tablet is never read after its process stops using it (the
    // bucket empties its folder before opening, removes it on close and restores from object storage), so
    // what a crash of the machine could lose is never read again. LMDB still writes its pages at each
    // commit, so a commit stays atomic and a full disk still fails it. Commits are synchronous (see apply),
    // which would otherwise wait for the flush on the event loop.
    const root = lmdb().open({ path: directory, noSubdir: false, maxDbs: 2, eventTurnBatching: false, noSync: true });
    const entries = root.openDB<Buffer, Buffer>({ name: ENTRIES_DATABASE, keyEncoding: 'binary', encoding: 'binary' });
    const state = root.openDB<Buffer, Buffer>({ name: STATE_DATABASE, keyEncoding: 'binary', encoding: 'binary' });
    return new LmdbKvTablet(directory, root, entries, state, options);
  }

  get(key: Uint8Array): Uint8Array | undefined {
    assertValidKey(key);
    return this.entries.get(asBuffer(key));
  }

  getMany(keys: readonly Uint8Array[]): (Uint8Array | undefined)[] {
    assertValidLookup(keys);
    // One read transaction for every key, so the values belong to one committed state.
    const transaction = this.root.useReadTransaction();
    try {
      return keys.map((key) => this.entries.get(asBuffer(key), { transaction }));
    } finally {
      transaction.done();
    }
  }

  scanPrefix(prefix: Uint8Array, limit: number, after?: Uint8Array): KvEntry[] {
    assertValidScanLimit(limit);
    if (prefix.length > 0) assertValidKey(prefix);
    if (after !== undefined) assertValidKey(after);
    if (limit === 0) return [];
    const end = prefixEnd(prefix);
    // Paging from `after`: the range starts at the later of the prefix and `after`, and `after` itself is skipped.
    const from = after !== undefined && compareBytes(after, prefix) > 0 ? after : prefix;
    const range = this.entries.getRange({
      start: from.length > 0 ? asBuffer(from) : undefined,
      end: end === undefined ? undefined : asBuffer(end),
      limit: from === after ? limit + 1 : limit,
      snapshot: true,
    });
    const found: KvEntry[] = [];
    for (const { key, value } of range) {
      if (from === after && compareBytes(key, after) === 0) continue;
      if (found.length < limit) found.push({ key, value });
    }
    return found;
  }

  /**
   * Commits the batch and its offset in one synchronous LMDB write transaction, on this thread, before
   * returning: without a flush this costs less CPU than handing the writes to lmdb-js's write thread
   * (measured in one process, batches of 500 puts of 230 bytes: 6.4 µs per put against 8–9 through the
   * write thread, and 11–14 with the flush), and applies reach LMDB in call order by construction. A
   * failed commit (a full disk) throws from the transaction and rejects the returned promise; LMDB has
   * aborted it, so nothing of the batch is stored and the offset stays.
   */
  async apply(batch: readonly KvWrite[], appliedOffset: number): Promise<void> {
    assertValidApply(batch, appliedOffset, this.applied);
    this.refuseWhenDiskIsFull(batch, appliedOffset);
    const encodedOffset = encodeOffset(appliedOffset);
    try {
      this.root.transactionSync(() => {
        for (const write of batch) {
          if (write.value === null) this.entries.removeSync(asBuffer(write.key));
          else this.entries.putSync(asBuffer(write.key), asBuffer(write.value));
        }
        this.state.putSync(APPLIED_OFFSET_KEY, encodedOffset);
      });
    } catch (error) {
      throw new KvCommitFailedError(`the KV tablet could not commit writes up to offset ${appliedOffset}: ${await describeCommitError(error)}`);
    }
    this.applied = appliedOffset;
  }

  /**
   * Refuses the batch, as a failed commit would, when the tablet's file system has less room than the batch
   * may need, so LMDB is seldom asked to commit into a full disk; when the disk fills after this check, the
   * commit fails and `apply` rejects the same way. The estimate is generous: twice the batch's bytes and
   * `LIMITS.kvDiskHeadroomBytes` for the pages LMDB grows its file by.
   */
  private refuseWhenDiskIsFull(batch: readonly KvWrite[], appliedOffset: number): void {
    let batchBytes = 0;
    for (const write of batch) batchBytes += write.key.byteLength + (write.value?.byteLength ?? 0);
    const neededBytes = 2 * batchBytes + LIMITS.kvDiskHeadroomBytes;
    const freeBytes = (this.options.freeBytes ?? freeBytesOf)(this.directory);
    if (freeBytes < neededBytes) {
      throw new KvCommitFailedError(
        `the KV tablet could not commit writes up to offset ${appliedOffset}: No space left on device (${freeBytes} bytes free for a batch that may need ${neededBytes})`,
      );
    }
  }

  appliedOffset(): number {
    return this.applied;
  }

  async snapshot(toDirectory: string): Promise<KvSnapshot> {
    await prepareEmptyDirectory(toDirectory);
    await this.root.backup(toDirectory, this.options.compactSnapshots ?? true);
    const appliedOffset = await readAppliedOffsetOfCopy(toDirectory);
    const bytes = (await stat(join(toDirectory, DATA_FILE))).size;
    return { appliedOffset, files: [DATA_FILE], bytes };
  }

  async close(): Promise<void> {
    await this.root.close();
  }

  async destroy(): Promise<void> {
    await this.close();
    await rm(this.directory, { recursive: true, force: true });
  }
}

/** Creates `directory` if needed and refuses one that holds files, so a snapshot never mixes with old files. */
async function prepareEmptyDirectory(directory: string): Promise<void> {
  await mkdir(directory, { recursive: true });
  const present = await readdir(directory);
  if (present.length > 0) throw new InvalidArgumentError(`snapshot directory ${directory} is not empty`);
}

/**
 * The applied offset stored in a copied environment. Opening the copy creates a lock file, which is removed
 * again so the snapshot holds only the data file.
 */
async function readAppliedOffsetOfCopy(directory: string): Promise<number> {
  const copy = lmdb().open({ path: directory, noSubdir: false, maxDbs: 2, readOnly: true });
  try {
    const state = copy.openDB<Buffer, Buffer>({ name: STATE_DATABASE, keyEncoding: 'binary', encoding: 'binary' });
    return decodeOffset(state.get(APPLIED_OFFSET_KEY));
  } finally {
    await copy.close();
    await rm(join(directory, LOCK_FILE), { force: true });
  }
}

/** The bytes free for an unprivileged writer on the file system of `directory`. */
function freeBytesOf(directory: string): number {
  const space = statfsSync(directory);
  return space.bavail * space.bsize;
}

function encodeOffset(offset: number): Buffer {
  const encoded = Buffer.alloc(8);
  encoded.writeBigUInt64BE(BigInt(offset));
  return encoded;
}

function decodeOffset(encoded: Buffer | undefined): number {
  if (encoded === undefined) return 0;
  if (encoded.length !== 8) throw new Error(`a KV tablet's stored applied offset has ${encoded.length} bytes, not 8`);
  return Number(encoded.readBigUInt64BE());
}

/**
 * lmdb-js reports a failed commit as "Commit failed (see commitError for details)", where `commitError` is
 * a promise rejected with the cause (ENOSPC, EIO) by the time the commit's own rejection is seen. It is
 * handled here, so it is not an unhandled rejection, and its message is the useful part.
 */
async function describeCommitError(error: unknown): Promise<string> {
  const message = error instanceof Error ? error.message : String(error);
  const commitError = (error as { commitError?: unknown } | null)?.commitError;
  if (!(commitError instanceof Promise)) return message;
  const cause = await Promise.race([commitError.then(() => undefined, (reason: unknown) => reason), new Promise((resolve) => setTimeout(resolve, 0))]);
  // The cause may come from another realm (lmdb's native side, a test sandbox): its message is read as data.
  const causeMessage = (cause as { message?: unknown } | undefined)?.message;
  return typeof causeMessage === 'string' ? `${message}: ${causeMessage}` : message;
}
