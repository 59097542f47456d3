import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { InvalidArgumentError } from '@mink/protocol';
import { compareBytes, copyBytes, hasPrefix } from './bytes';
import {
  assertValidApply,
  assertValidKey,
  assertValidLookup,
  assertValidScanLimit,
  type KvEntry,
  type KvSnapshot,
  type KvTablet,
  type KvWrite,
} from './kv-tablet';

/** The one file an in-memory snapshot writes. */
const SNAPSHOT_FILE = 'entries.bin';

/**
 * A KV tablet held in a sorted array, with the same contract as `LmdbKvTablet`, for simulation tests. Its
 * memory grows with the table, so it is not for production. A snapshot writes every entry into one file,
 * which `InMemoryKvTablet.restore` reads back.
 */
export class InMemoryKvTablet implements KvTablet {
  /** Entries sorted bytewise by key; inserts are linear, which is fine at simulation sizes. */
  private entries: KvEntry[] = [];
  private offset = 0;
  private highestRequestedOffset = 0;
  private closed = false;

  /** Reads a tablet back from a directory written by `snapshot`. */
  static async restore(directory: string): Promise<InMemoryKvTablet> {
    return InMemoryKvTablet.decode(await readFile(join(directory, SNAPSHOT_FILE)));
  }

  /** A tablet from the bytes of `encode` (the content of a snapshot's one file). */
  static decode(bytes: Uint8Array): InMemoryKvTablet {
    const encoded = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const tablet = new InMemoryKvTablet();
    tablet.offset = Number(encoded.readBigUInt64BE(0));
    tablet.highestRequestedOffset = tablet.offset;
    let position = 8;
    while (position < encoded.length) {
      const keyLength = encoded.readUInt32BE(position);
      const valueLength = encoded.readUInt32BE(position + 4);
      position += 8;
      const key = copyBytes(encoded.subarray(position, position + keyLength));
      position += keyLength;
      const value = copyBytes(encoded.subarray(position, position + valueLength));
      position += valueLength;
      tablet.entries.push({ key, value });
    }
    return tablet;
  }

  /** The whole state, as `decode` reads it: the applied offset, then every entry with its lengths. */
  encode(): { appliedOffset: number; bytes: Buffer } {
    this.assertOpen();
    const appliedOffset = this.offset;
    const parts: Buffer[] = [];
    const header = Buffer.alloc(8);
    header.writeBigUInt64BE(BigInt(appliedOffset));
    parts.push(header);
    for (const { key, value } of this.entries) {
      const lengths = Buffer.alloc(8);
      lengths.writeUInt32BE(key.length, 0);
      lengths.writeUInt32BE(value.length, 4);
      parts.push(lengths, Buffer.from(key), Buffer.from(value));
    }
    return { appliedOffset, bytes: Buffer.concat(parts) };
  }

  get(key: Uint8Array): Uint8Array | undefined {
    this.assertOpen();
    assertValidKey(key);
    const index = this.search(key);
    return index >= 0 ? copyBytes(this.entries[index].value) : undefined;
  }

  getMany(keys: readonly Uint8Array[]): (Uint8Array | undefined)[] {
    assertValidLookup(keys);
    return keys.map((key) => this.get(key));
  }

  scanPrefix(prefix: Uint8Array, limit: number, after?: Uint8Array): KvEntry[] {
    this.assertOpen();
    assertValidScanLimit(limit);
    if (prefix.length > 0) assertValidKey(prefix);
    if (after !== undefined) assertValidKey(after);
    const found: KvEntry[] = [];
    // Paging from `after`: the scan starts at the later of the prefix and `after`, and `after` itself is skipped.
    const from = after !== undefined && compareBytes(after, prefix) > 0 ? after : prefix;
    const start = this.search(from);
    for (let index = start >= 0 ? start : -start - 1; index < this.entries.length && found.length < limit; index++) {
      const entry = this.entries[index];
      if (!hasPrefix(entry.key, prefix)) break;
      if (from === after && compareBytes(entry.key, after) === 0) continue;
      found.push({ key: copyBytes(entry.key), value: copyBytes(entry.value) });
    }
    return found;
  }

  async apply(batch: readonly KvWrite[], appliedOffset: number): Promise<void> {
    this.assertOpen();
    assertValidApply(batch, appliedOffset, this.highestRequestedOffset);
    this.highestRequestedOffset = appliedOffset;
    // Yield once like a real engine's commit, so callers cannot rely on an apply finishing synchronously.
    await Promise.resolve();
    for (const write of batch) {
      const index = this.search(write.key);
      if (write.value === null) {
        if (index >= 0) this.entries.splice(index, 1);
      } else if (index >= 0) {
        this.entries[index] = { key: this.entries[index].key, value: copyBytes(write.value) };
      } else {
        this.entries.splice(-index - 1, 0, { key: copyBytes(write.key), value: copyBytes(write.value) });
      }
    }
    this.offset = appliedOffset;
  }

  appliedOffset(): number {
    return this.offset;
  }

  async snapshot(toDirectory: string): Promise<KvSnapshot> {
    // The state is captured synchronously, before the first await, so applies that follow are not in it.
    const { appliedOffset, bytes: encoded } = this.encode();
    await mkdir(toDirectory, { recursive: true });
    if ((await readdir(toDirectory)).length > 0) {
      throw new InvalidArgumentError(`snapshot directory ${toDirectory} is not empty`);
    }
    await writeFile(join(toDirectory, SNAPSHOT_FILE), encoded);
    return { appliedOffset, files: [SNAPSHOT_FILE], bytes: encoded.length };
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  async destroy(): Promise<void> {
    this.closed = true;
    this.entries = [];
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('the KV tablet is closed');
  }

  /** The index of `key`, or `-(insertion point) - 1` when it is absent. */
  private search(key: Uint8Array): number {
    let low = 0;
    let high = this.entries.length - 1;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      const order = compareBytes(this.entries[middle].key, key);
      if (order < 0) low = middle + 1;
      else if (order > 0) high = middle - 1;
      else return middle;
    }
    return -low - 1;
  }
}
