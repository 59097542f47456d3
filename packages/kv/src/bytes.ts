/** Bytewise (memcmp) order of two byte strings, a shorter string first when it is a prefix of the longer: the order LMDB keeps keys in. */
export function compareBytes(left: Uint8Array, right: Uint8Array): number {
  return Buffer.compare(asBuffer(left), asBuffer(right));
}

/** Whether `key` starts with `prefix`. */
export function hasPrefix(key: Uint8Array, prefix: Uint8Array): boolean {
  if (key.length < prefix.length) return false;
  for (let index = 0; index < prefix.length; index++) if (key[index] !== prefix[index]) return false;
  return true;
}

/**
 * The smallest byte string greater than every key that starts with `prefix`, or undefined when there is none
 * (an empty prefix or one of only 0xff bytes), in which case a scan runs to the end of the keys.
 */
export function prefixEnd(prefix: Uint8Array): Uint8Array | undefined {
  let length = prefix.length;
  while (length > 0 && prefix[length - 1] === 0xff) length--;
  if (length === 0) return undefined;
  const end = Uint8Array.prototype.slice.call(prefix, 0, length);
  end[length - 1] += 1;
  return end;
}

/** A Buffer view of the same memory, without copying, so bytes can be handed to APIs that want a Buffer. */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** A copy that shares no memory with `bytes`, so neither side can change the other later. */
export function copyBytes(bytes: Uint8Array): Uint8Array {
  return Uint8Array.prototype.slice.call(bytes);
}
