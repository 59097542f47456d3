import { InvalidArgumentError } from '@mink/protocol';

/**
 * Several requests to one subject in one NATS message, and their replies in one reply, as a Kafka client
 * sends one produce request per broker for many partitions: the message is this marker byte (which neither
 * JSON text nor the binary framing of rpc.ts starts with), the number of parts as a 32-bit little-endian
 * integer, then each part as its length (32-bit little-endian) and its bytes. A part is a whole request
 * (JSON, or JSON with binary bytes) or a whole reply, as it would travel alone.
 */
export const MULTI_MARKER = 0x01;
const COUNT_BYTES = 4;
const LENGTH_BYTES = 4;

/** True when `data` is a multi message (see MULTI_MARKER). */
export function isMultiMessage(data: Uint8Array): boolean {
  return data.length > 0 && data[0] === MULTI_MARKER;
}

/** The bytes a multi message of parts of `partBytes` bytes takes. */
export function multiMessageBytes(partBytes: readonly number[]): number {
  let total = 1 + COUNT_BYTES;
  for (const bytes of partBytes) total += LENGTH_BYTES + bytes;
  return total;
}

/**
 * One multi message of `parts`, in order, as pieces to send back to back: its header and each part's length
 * (written here) between the parts' own pieces (not copied). A part may be given as pieces sent back to back.
 */
export function multiMessagePieces(parts: readonly (Uint8Array | readonly Uint8Array[])[]): Uint8Array[] {
  const header = Buffer.allocUnsafe(1 + COUNT_BYTES + LENGTH_BYTES * parts.length);
  header[0] = MULTI_MARKER;
  header.writeUInt32LE(parts.length, 1);
  const pieces: Uint8Array[] = [header.subarray(0, 1 + COUNT_BYTES)];
  parts.forEach((part, index) => {
    const each = part instanceof Uint8Array ? [part] : part;
    const at = 1 + COUNT_BYTES + LENGTH_BYTES * index;
    header.writeUInt32LE(each.reduce((sum, piece) => sum + piece.byteLength, 0), at);
    pieces.push(header.subarray(at, at + LENGTH_BYTES), ...each);
  });
  return pieces;
}

/**
 * The parts of a multi message (views of `data`, no copies). Throws InvalidArgumentError naming what is
 * wrong when it is not one: no marker, no parts, a length beyond the message, or bytes after the last part.
 */
export function decodeMultiMessage(data: Uint8Array): Uint8Array[] {
  const refuse = (reason: string) => new InvalidArgumentError(`a multi-request message ${reason}`);
  if (!isMultiMessage(data)) throw refuse('must start with its marker byte');
  if (data.length < 1 + COUNT_BYTES) throw refuse('is shorter than its header');
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const count = view.getUint32(1, true);
  if (count === 0) throw refuse('holds no parts');
  const parts: Uint8Array[] = [];
  let position = 1 + COUNT_BYTES;
  for (let index = 0; index < count; index++) {
    if (position + LENGTH_BYTES > data.length) throw refuse(`announces ${count} parts but ends after ${index}`);
    const length = view.getUint32(position, true);
    position += LENGTH_BYTES;
    if (position + length > data.length) throw refuse(`part ${index} announces ${length} bytes but ${data.length - position} remain`);
    parts.push(data.subarray(position, position + length));
    position += length;
  }
  if (position !== data.length) throw refuse(`has ${data.length - position} bytes after its ${count} parts`);
  return parts;
}

/**
 * How requests queued in order, of `partBytes` bytes each, travel: consecutive runs, each at most
 * `partsMax` requests whose multi message fits `messageBytesMax`, and none holding two requests with the
 * same `apartKeys` entry (when given). A request too large to share a message with another one travels
 * alone (as it would without grouping, so an oversize one is refused as such).
 */
export function groupForMultiMessages(partBytes: readonly number[], messageBytesMax: number, partsMax: number, apartKeys?: readonly (string | undefined)[]): number[][] {
  const groups: number[][] = [];
  let current: number[] = [];
  let currentKeys = new Set<string>();
  let currentBytes = 1 + COUNT_BYTES;
  partBytes.forEach((bytes, index) => {
    const added = LENGTH_BYTES + bytes;
    const apartKey = apartKeys?.[index];
    if (current.length > 0 && (current.length >= partsMax || currentBytes + added > messageBytesMax || (apartKey !== undefined && currentKeys.has(apartKey)))) {
      groups.push(current);
      current = [];
      currentKeys = new Set();
      currentBytes = 1 + COUNT_BYTES;
    }
    current.push(index);
    if (apartKey !== undefined) currentKeys.add(apartKey);
    currentBytes += added;
  });
  if (current.length > 0) groups.push(current);
  return groups;
}
