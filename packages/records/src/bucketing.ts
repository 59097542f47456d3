/**
 * Which bucket a row goes to (docs/architecture.md §8.1): `hash(bucket key) % buckets`.
 *
 * THE HASH AND THE KEY ENCODING MUST NEVER CHANGE. They decide where every row of every existing table
 * lives; a change would send new writes of a key to another bucket than its old rows, so lookups,
 * upserts and deletes of PK tables would miss them. Golden values in bucketing.spec.ts guard this.
 *
 * The hash is MurmurHash3 x86_32 with seed 0 over the key encoding below. Values are encoded by their
 * canonical JavaScript type (see row.ts), each with a one-byte tag and, where the length varies, a
 * four-byte little-endian length, so ('a', 'bc') and ('ab', 'c') differ:
 *
 * | value | bytes |
 * | --- | --- |
 * | null (or missing) | 0x00 |
 * | boolean | 0x01, then 0x00 or 0x01 |
 * | number or bigint | 0x02, length, the ASCII decimal text (JavaScript's Number#toString / BigInt#toString) |
 * | string | 0x03, length, the UTF-8 bytes |
 * | Uint8Array | 0x04, length, the bytes |
 *
 * Numbers and bigints share a tag and a decimal text so that an int64 hashes alike whether a caller holds
 * it as 5 or 5n; int32, float64 and timestamp values hash by their decimal text too, which ECMAScript
 * defines exactly (-0 and 0 both read "0").
 */
import { LIMITS } from '@mink/config';

import { type Row, fieldOf } from './row';

const TAG_NULL = 0x00;
const TAG_BOOLEAN = 0x01;
const TAG_NUMBER = 0x02;
const TAG_STRING = 0x03;
const TAG_BYTES = 0x04;

const BUCKET_HASH_SEED = 0;

/** The bucket of `row` among `buckets`, from the values of the `bucketKey` columns in that order. */
export function bucketOfRow(row: Row, bucketKey: string[], buckets: number): number {
  checkBuckets(buckets);
  if (bucketKey.length === 0) throw new Error('a row without a bucket key has no bucket of its own; use splitByBucket');
  return keyWrittenOf(row, bucketKey).bucket(buckets);
}

/**
 * Splits `rows` by bucket, keeping their order within each bucket. The map holds only buckets that get
 * rows, in the order of their first row.
 *
 * A table without a bucket key spreads whole batches instead of rows: every row goes to bucket
 * `spreadStart % buckets`, and the caller moves `spreadStart` on by one per batch.
 */
export function splitByBucket(rows: Row[], bucketKey: string[], buckets: number, spreadStart: number): Map<number, Row[]> {
  checkBuckets(buckets);
  if (!Number.isSafeInteger(spreadStart)) throw new Error(`spreadStart ${spreadStart} is not a safe integer`);
  const split = new Map<number, Row[]>();
  if (rows.length === 0) return split;
  if (bucketKey.length === 0) {
    // The double modulo keeps a negative start in range.
    split.set(((spreadStart % buckets) + buckets) % buckets, rows.slice());
    return split;
  }
  for (const row of rows) {
    const bucket = keyWrittenOf(row, bucketKey).bucket(buckets);
    const bucketRows = split.get(bucket);
    if (bucketRows === undefined) split.set(bucket, [row]);
    else bucketRows.push(row);
  }
  return split;
}

function checkBuckets(buckets: number): void {
  if (!Number.isInteger(buckets) || buckets < 1 || buckets > LIMITS.bucketsPerTableMax) {
    throw new Error(`buckets must be an integer from 1 to ${LIMITS.bucketsPerTableMax}, got ${buckets}`);
  }
}

/** The encoding of the bucket key values of `row` described at the top of this file (a copy of its own). */
export function bucketKeyBytes(row: Row, bucketKey: readonly string[]): Uint8Array {
  return keyWrittenOf(row, bucketKey).copy();
}

/**
 * The key encoding above written value by value into one reused buffer, then hashed: the bucket of a row
 * without building the row or a buffer per row (the gateway's one-pass append reader). Write the bucket
 * key's values in key order after `reset()`; `bucket()` gives what `bucketOfRow` gives for them.
 */
export class BucketKeyWriter {
  private bytes = Buffer.allocUnsafe(256);
  private length = 0;

  reset(): void {
    this.length = 0;
  }

  /** A canonical value (row.ts) of the key, of column `name` (for the error of a value that is not canonical). */
  value(value: unknown, name = ''): void {
    if (typeof value === 'number' || typeof value === 'bigint') {
      // Decimal text is ASCII: written char by char, cheaper than a UTF-8 encoding call for a few digits.
      const decimal = value.toString();
      this.reserve(5 + decimal.length);
      this.bytes[this.length++] = TAG_NUMBER;
      this.length = this.bytes.writeUInt32LE(decimal.length, this.length);
      for (let index = 0; index < decimal.length; index++) this.bytes[this.length++] = decimal.charCodeAt(index);
      return;
    }
    const part = keyPartOf(name, value);
    const content = part.content;
    this.reserve(5 + part.byteLength);
    this.bytes[this.length++] = part.tag;
    if (part.lengthPrefixed) this.length = this.bytes.writeUInt32LE(part.byteLength, this.length);
    if (typeof content === 'string') this.length += this.bytes.write(content, this.length, 'utf8');
    else {
      this.bytes.set(content, this.length);
      this.length += content.byteLength;
    }
  }

  /** A string value of the key given as its UTF-8 bytes `utf8[start, end)`. */
  utf8String(utf8: Buffer, start: number, end: number): void {
    this.reserve(5 + end - start);
    this.bytes[this.length++] = TAG_STRING;
    this.length = this.bytes.writeUInt32LE(end - start, this.length);
    this.length += utf8.copy(this.bytes, this.length, start, end);
  }

  /**
   * A number of the key given as its decimal text `ascii[start, end)`, which must be exactly what
   * `Number#toString` (or `BigInt#toString`) gives for it.
   */
  asciiNumber(ascii: Uint8Array, start: number, end: number): void {
    this.reserve(5 + end - start);
    this.bytes[this.length++] = TAG_NUMBER;
    this.length = this.bytes.writeUInt32LE(end - start, this.length);
    for (let index = start; index < end; index++) this.bytes[this.length++] = ascii[index]!;
  }

  bucket(buckets: number): number {
    checkBuckets(buckets);
    return murmur3Hash32(this.bytes, BUCKET_HASH_SEED, this.length) % buckets;
  }

  /** The key written so far, as bytes of its own. */
  copy(): Uint8Array {
    const bytes = Buffer.allocUnsafe(this.length);
    this.bytes.copy(bytes, 0, 0, this.length);
    return bytes;
  }

  private reserve(bytes: number): void {
    if (this.length + bytes <= this.bytes.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.bytes.length * 2, this.length + bytes));
    this.bytes.copy(grown, 0, 0, this.length);
    this.bytes = grown;
  }
}

/** One writer for bucketOfRow, splitByBucket and bucketKeyBytes, which use it within one synchronous call each. */
const SHARED_KEY_WRITER = new BucketKeyWriter();

/** The shared writer holding the key of `row`'s `bucketKey` values (valid until the next call). */
function keyWrittenOf(row: Row, bucketKey: readonly string[]): BucketKeyWriter {
  SHARED_KEY_WRITER.reset();
  for (const name of bucketKey) SHARED_KEY_WRITER.value(fieldOf(row, name), name);
  return SHARED_KEY_WRITER;
}

/** One value of a bucket key: its tag, then its content, with the content's length before it where it varies. */
interface KeyPart {
  tag: number;
  content: string | Uint8Array;
  lengthPrefixed: boolean;
  /** Bytes of the content (UTF-8 for text). */
  byteLength: number;
}

function keyPartOf(name: string, value: unknown): KeyPart {
  if (value === null || value === undefined) return { tag: TAG_NULL, content: EMPTY, lengthPrefixed: false, byteLength: 0 };
  if (typeof value === 'boolean') return { tag: TAG_BOOLEAN, content: value ? TRUE_BYTE : FALSE_BYTE, lengthPrefixed: false, byteLength: 1 };
  if (typeof value === 'number' || typeof value === 'bigint') {
    // Decimal text is ASCII, so its length in characters is its length in bytes.
    const decimal = value.toString();
    return { tag: TAG_NUMBER, content: decimal, lengthPrefixed: true, byteLength: decimal.length };
  }
  if (typeof value === 'string') return { tag: TAG_STRING, content: value, lengthPrefixed: true, byteLength: Buffer.byteLength(value, 'utf8') };
  if (value instanceof Uint8Array) return { tag: TAG_BYTES, content: value, lengthPrefixed: true, byteLength: value.byteLength };
  throw new Error(`bucket key column '${name}' holds a ${typeof value}, which is not a canonical value`);
}

const EMPTY = new Uint8Array(0);
const FALSE_BYTE = new Uint8Array([0]);
const TRUE_BYTE = new Uint8Array([1]);

/**
 * MurmurHash3 x86_32 (Austin Appleby's reference `MurmurHash3_x86_32`) of `bytes`, as an unsigned 32-bit
 * integer. Blocks are read little-endian as in the reference on x86. `length` hashes the first `length`
 * bytes only (a buffer reused for many keys, without a view per key).
 */
export function murmur3Hash32(bytes: Uint8Array, seed: number, length: number = bytes.length): number {
  const c1 = 0xcc9e2d51;
  const c2 = 0x1b873593;
  const blockCount = length >>> 2;
  let hash = seed >>> 0;
  for (let block = 0; block < blockCount; block++) {
    const at = block << 2;
    let k = bytes[at] | (bytes[at + 1] << 8) | (bytes[at + 2] << 16) | (bytes[at + 3] << 24);
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, c2);
    hash ^= k;
    hash = (hash << 13) | (hash >>> 19);
    hash = (Math.imul(hash, 5) + 0xe6546b64) | 0;
  }
  const tail = blockCount << 2;
  let k = 0;
  switch (length & 3) {
    case 3:
      k ^= bytes[tail + 2] << 16;
    // falls through
    case 2:
      k ^= bytes[tail + 1] << 8;
    // falls through
    case 1:
      k ^= bytes[tail];
      k = Math.imul(k, c1);
      k = (k << 15) | (k >>> 17);
      k = Math.imul(k, c2);
      hash ^= k;
  }
  hash ^= length;
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}
