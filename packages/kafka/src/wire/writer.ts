/**
 * Writes the primitive types of the Kafka protocol. Small fields go into a growing scratch chunk; large
 * byte arrays (record batches of a fetch) are appended as parts of their own with `rawPart`, never copied,
 * so a response is a list of parts written to the socket as they are.
 */

const textEncoder = new TextEncoder();
const CHUNK_BYTES = 4096;
/** Byte arrays at least this long are kept as parts of their own instead of being copied into a chunk. */
const PART_BYTES_MIN = 1024;

export class KafkaWriter {
  private readonly parts: Uint8Array[] = [];
  private chunk = new Uint8Array(CHUNK_BYTES);
  private view = new DataView(this.chunk.buffer);
  private used = 0;
  private total = 0;

  /** Bytes written so far. */
  get length(): number {
    return this.total;
  }

  private room(count: number): void {
    if (this.used + count <= this.chunk.byteLength) return;
    this.flushChunk();
    const size = Math.max(CHUNK_BYTES, count);
    this.chunk = new Uint8Array(size);
    this.view = new DataView(this.chunk.buffer);
  }

  private flushChunk(): void {
    if (this.used > 0) this.parts.push(this.chunk.subarray(0, this.used));
    this.chunk = this.chunk.subarray(this.used);
    this.view = new DataView(this.chunk.buffer, this.chunk.byteOffset, this.chunk.byteLength);
    this.used = 0;
  }

  boolean(value: boolean): this {
    return this.int8(value ? 1 : 0);
  }

  int8(value: number): this {
    this.room(1);
    this.view.setInt8(this.used, value);
    this.used += 1;
    this.total += 1;
    return this;
  }

  int16(value: number): this {
    this.room(2);
    this.view.setInt16(this.used, value);
    this.used += 2;
    this.total += 2;
    return this;
  }

  int32(value: number): this {
    this.room(4);
    this.view.setInt32(this.used, value);
    this.used += 4;
    this.total += 4;
    return this;
  }

  uint32(value: number): this {
    this.room(4);
    this.view.setUint32(this.used, value);
    this.used += 4;
    this.total += 4;
    return this;
  }

  int64(value: bigint | number): this {
    this.room(8);
    this.view.setBigInt64(this.used, BigInt(value));
    this.used += 8;
    this.total += 8;
    return this;
  }

  float64(value: number): this {
    this.room(8);
    this.view.setFloat64(this.used, value);
    this.used += 8;
    this.total += 8;
    return this;
  }

  uuid(value: Uint8Array): this {
    if (value.byteLength !== 16) throw new Error(`a uuid has 16 bytes, got ${value.byteLength}`);
    return this.raw(value);
  }

  uvarint(value: number): this {
    if (!Number.isSafeInteger(value) || value < 0 || value > 0xffffffff) throw new Error(`uvarint out of range: ${value}`);
    this.room(5);
    let rest = value;
    while (rest >= 0x80) {
      this.chunk[this.used++] = (rest & 0x7f) | 0x80;
      rest = Math.floor(rest / 128);
      this.total++;
    }
    this.chunk[this.used++] = rest;
    this.total++;
    return this;
  }

  varint(value: number): this {
    return this.uvarint(value >= 0 ? value * 2 : -value * 2 - 1);
  }

  varlong(value: number | bigint): this {
    const signed = BigInt(value);
    let rest = (signed << 1n) ^ (signed >> 63n);
    rest = BigInt.asUintN(64, rest);
    this.room(10);
    while (rest >= 0x80n) {
      this.chunk[this.used++] = Number(rest & 0x7fn) | 0x80;
      rest >>= 7n;
      this.total++;
    }
    this.chunk[this.used++] = Number(rest);
    this.total++;
    return this;
  }

  /** Bytes copied into the chunk (short) or kept as a part (long); the caller must not change them. */
  raw(bytes: Uint8Array): this {
    if (bytes.byteLength >= PART_BYTES_MIN) return this.rawPart(bytes);
    this.room(bytes.byteLength);
    this.chunk.set(bytes, this.used);
    this.used += bytes.byteLength;
    this.total += bytes.byteLength;
    return this;
  }

  /** Bytes kept as a part of their own, not copied; the caller must not change them until they are sent. */
  rawPart(bytes: Uint8Array): this {
    this.flushChunk();
    if (bytes.byteLength > 0) this.parts.push(bytes);
    this.total += bytes.byteLength;
    return this;
  }

  string(value: string): this {
    const bytes = textEncoder.encode(value);
    if (bytes.byteLength > 0x7fff) throw new Error(`a string of ${bytes.byteLength} bytes is too long for an int16 length`);
    return this.int16(bytes.byteLength).raw(bytes);
  }

  nullableString(value: string | null | undefined): this {
    return value === null || value === undefined ? this.int16(-1) : this.string(value);
  }

  compactString(value: string): this {
    const bytes = textEncoder.encode(value);
    return this.uvarint(bytes.byteLength + 1).raw(bytes);
  }

  compactNullableString(value: string | null | undefined): this {
    return value === null || value === undefined ? this.uvarint(0) : this.compactString(value);
  }

  bytes(value: Uint8Array): this {
    return this.int32(value.byteLength).raw(value);
  }

  nullableBytes(value: Uint8Array | null | undefined): this {
    return value === null || value === undefined ? this.int32(-1) : this.bytes(value);
  }

  compactBytes(value: Uint8Array): this {
    return this.uvarint(value.byteLength + 1).raw(value);
  }

  compactNullableBytes(value: Uint8Array | null | undefined): this {
    return value === null || value === undefined ? this.uvarint(0) : this.compactBytes(value);
  }

  array<T>(items: readonly T[], writeItem: (writer: KafkaWriter, item: T) => void): this {
    this.int32(items.length);
    for (const item of items) writeItem(this, item);
    return this;
  }

  nullableArray<T>(items: readonly T[] | null | undefined, writeItem: (writer: KafkaWriter, item: T) => void): this {
    if (items === null || items === undefined) return this.int32(-1);
    return this.array(items, writeItem);
  }

  compactArray<T>(items: readonly T[], writeItem: (writer: KafkaWriter, item: T) => void): this {
    this.uvarint(items.length + 1);
    for (const item of items) writeItem(this, item);
    return this;
  }

  compactNullableArray<T>(items: readonly T[] | null | undefined, writeItem: (writer: KafkaWriter, item: T) => void): this {
    if (items === null || items === undefined) return this.uvarint(0);
    return this.compactArray(items, writeItem);
  }

  /** An empty tagged-field section (mink writes no tagged field). */
  taggedFields(): this {
    return this.uvarint(0);
  }

  /** The parts written, in order; the writer must not be used afterwards. */
  finish(): Uint8Array[] {
    this.flushChunk();
    return this.parts;
  }

  /** Everything written, joined into one array (for tests and small messages). */
  toBytes(): Uint8Array {
    const parts = this.finish();
    if (parts.length === 1) return parts[0]!;
    const joined = new Uint8Array(this.total);
    let position = 0;
    for (const part of parts) {
      joined.set(part, position);
      position += part.byteLength;
    }
    return joined;
  }
}
