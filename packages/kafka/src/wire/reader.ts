/**
 * Reads the primitive types of the Kafka protocol (https://kafka.apache.org/protocol#protocol_types) from
 * one request or response body. Every read checks that the bytes are there and throws `KafkaDecodeError`
 * naming the field when they are not, so a malformed frame is a refusal of that frame, never a crash.
 */

/** A frame that does not decode: truncated, a negative length where none is allowed, a bad varint. */
export class KafkaDecodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KafkaDecodeError';
  }
}

const textDecoder = new TextDecoder('utf-8', { fatal: true });

export class KafkaReader {
  private readonly view: DataView;
  private position: number;

  private readonly frame: Uint8Array;

  constructor(frame: Uint8Array, start = 0) {
    this.frame = frame;
    this.view = new DataView(frame.buffer, frame.byteOffset, frame.byteLength);
    this.position = start;
  }

  /** Bytes read so far, from the start of the array. */
  get offset(): number {
    return this.position;
  }

  get remaining(): number {
    return this.frame.byteLength - this.position;
  }

  private need(count: number, what: string): void {
    if (count < 0 || this.position + count > this.frame.byteLength) {
      throw new KafkaDecodeError(`${what}: needs ${count} bytes at byte ${this.position}, the frame has ${this.frame.byteLength - this.position} left`);
    }
  }

  boolean(what = 'boolean'): boolean {
    return this.int8(what) !== 0;
  }

  int8(what = 'int8'): number {
    this.need(1, what);
    return this.view.getInt8(this.position++);
  }

  int16(what = 'int16'): number {
    this.need(2, what);
    const value = this.view.getInt16(this.position);
    this.position += 2;
    return value;
  }

  int32(what = 'int32'): number {
    this.need(4, what);
    const value = this.view.getInt32(this.position);
    this.position += 4;
    return value;
  }

  uint32(what = 'uint32'): number {
    this.need(4, what);
    const value = this.view.getUint32(this.position);
    this.position += 4;
    return value;
  }

  int64(what = 'int64'): bigint {
    this.need(8, what);
    const value = this.view.getBigInt64(this.position);
    this.position += 8;
    return value;
  }

  /** An int64 that must be a safe integer (offsets, timestamps, producer ids). */
  int64Number(what = 'int64'): number {
    const value = this.int64(what);
    if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) throw new KafkaDecodeError(`${what}: ${value} is beyond the safe integers`);
    return Number(value);
  }

  float64(what = 'float64'): number {
    this.need(8, what);
    const value = this.view.getFloat64(this.position);
    this.position += 8;
    return value;
  }

  uuid(what = 'uuid'): Uint8Array {
    this.need(16, what);
    const value = this.frame.subarray(this.position, this.position + 16);
    this.position += 16;
    return value;
  }

  /** An unsigned varint (LEB128) of at most 32 bits. */
  uvarint(what = 'uvarint'): number {
    let value = 0;
    for (let shift = 0; shift <= 28; shift += 7) {
      this.need(1, what);
      const byte = this.frame[this.position++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) return value;
    }
    throw new KafkaDecodeError(`${what}: a varint longer than 5 bytes at byte ${this.position}`);
  }

  /** A zigzag-encoded signed varint of at most 32 bits. */
  varint(what = 'varint'): number {
    const raw = this.uvarint(what);
    return raw % 2 === 0 ? raw / 2 : -(raw + 1) / 2;
  }

  /** A zigzag-encoded signed varlong; must be a safe integer. */
  varlong(what = 'varlong'): number {
    let raw = 0n;
    for (let shift = 0n; shift <= 63n; shift += 7n) {
      this.need(1, what);
      const byte = this.frame[this.position++]!;
      raw |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) {
        const value = (raw >> 1n) ^ -(raw & 1n);
        if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) throw new KafkaDecodeError(`${what}: ${value} is beyond the safe integers`);
        return Number(value);
      }
    }
    throw new KafkaDecodeError(`${what}: a varlong longer than 10 bytes at byte ${this.position}`);
  }

  /** `length` raw bytes, as a view of the frame (no copy). */
  raw(length: number, what = 'bytes'): Uint8Array {
    this.need(length, what);
    const value = this.frame.subarray(this.position, this.position + length);
    this.position += length;
    return value;
  }

  private text(length: number, what: string): string {
    const bytes = this.raw(length, what);
    try {
      return textDecoder.decode(bytes);
    } catch {
      throw new KafkaDecodeError(`${what}: not valid UTF-8`);
    }
  }

  string(what = 'string'): string {
    const length = this.int16(what);
    if (length < 0) throw new KafkaDecodeError(`${what}: a null string where one is required`);
    return this.text(length, what);
  }

  nullableString(what = 'string'): string | null {
    const length = this.int16(what);
    return length < 0 ? null : this.text(length, what);
  }

  compactString(what = 'string'): string {
    const length = this.uvarint(what) - 1;
    if (length < 0) throw new KafkaDecodeError(`${what}: a null string where one is required`);
    return this.text(length, what);
  }

  compactNullableString(what = 'string'): string | null {
    const length = this.uvarint(what) - 1;
    return length < 0 ? null : this.text(length, what);
  }

  bytes(what = 'bytes'): Uint8Array {
    const length = this.int32(what);
    if (length < 0) throw new KafkaDecodeError(`${what}: null bytes where they are required`);
    return this.raw(length, what);
  }

  nullableBytes(what = 'bytes'): Uint8Array | null {
    const length = this.int32(what);
    return length < 0 ? null : this.raw(length, what);
  }

  compactBytes(what = 'bytes'): Uint8Array {
    const length = this.uvarint(what) - 1;
    if (length < 0) throw new KafkaDecodeError(`${what}: null bytes where they are required`);
    return this.raw(length, what);
  }

  compactNullableBytes(what = 'bytes'): Uint8Array | null {
    const length = this.uvarint(what) - 1;
    return length < 0 ? null : this.raw(length, what);
  }

  /** An array with an int32 count; null (-1) reads as an empty array unless `nullable` says otherwise. */
  array<T>(readItem: (reader: KafkaReader, index: number) => T, what = 'array'): T[] {
    const count = this.int32(what);
    return this.items(count < 0 ? 0 : count, readItem, what);
  }

  nullableArray<T>(readItem: (reader: KafkaReader, index: number) => T, what = 'array'): T[] | null {
    const count = this.int32(what);
    return count < 0 ? null : this.items(count, readItem, what);
  }

  compactArray<T>(readItem: (reader: KafkaReader, index: number) => T, what = 'array'): T[] {
    const count = this.uvarint(what) - 1;
    return this.items(count < 0 ? 0 : count, readItem, what);
  }

  compactNullableArray<T>(readItem: (reader: KafkaReader, index: number) => T, what = 'array'): T[] | null {
    const count = this.uvarint(what) - 1;
    return count < 0 ? null : this.items(count, readItem, what);
  }

  private items<T>(count: number, readItem: (reader: KafkaReader, index: number) => T, what: string): T[] {
    // Every item takes at least one byte, so a count beyond the bytes left is malformed (and never allocated).
    if (count > this.remaining) throw new KafkaDecodeError(`${what}: ${count} items announced with ${this.remaining} bytes left`);
    const items: T[] = [];
    for (let index = 0; index < count; index++) items.push(readItem(this, index));
    return items;
  }

  /** Skips a tagged-field section of a flexible version (mink reads no tagged field). */
  taggedFields(what = 'tagged fields'): void {
    const count = this.uvarint(what);
    for (let index = 0; index < count; index++) {
      this.uvarint(what);
      const size = this.uvarint(what);
      this.raw(size, what);
    }
  }
}
