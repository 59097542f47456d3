import { crc32 } from 'node:zlib';

/**
 * A sealed message: what mink's callers send over NATS and what its endpoints answer them, so that bytes
 * damaged between the two processes (in a NATS server, on a route, in a client library) are refused instead
 * of acted on. TCP's checksum and TLS's MAC protect a hop, not what a server does with a message between
 * hops; Kafka's record batches carry a CRC for the same reason.
 *
 * A sealed request is this marker byte (which neither JSON text, the binary framing of rpc.ts nor a multi
 * message starts with), the CRC-32 of the rest as a 32-bit little-endian integer, then the message as it
 * would travel unsealed. A sealed reply is the marker, the CRC-32 of its rest, the CRC-32 of the request it
 * answers (so that a caller never takes another request's reply for its own), then the reply.
 */
export const SEAL_MARKER = 0x02;
export const REQUEST_SEAL_BYTES = 5;
export const REPLY_SEAL_BYTES = 9;

/** What was received: the message inside a sealed one, the message itself when it is not sealed, or why a sealed one is refused. */
export type Opened =
  | { sealed: true; body: Uint8Array; crc: number }
  | { sealed: false; body: Uint8Array }
  /** `crc`: the request's CRC as its seal announces it, which the refusal names (its caller computed it). */
  | { damaged: string; crc: number };

function checksumOf(pieces: readonly Uint8Array[]): number {
  let crc = 0;
  for (const piece of pieces) crc = crc32(piece, crc);
  return crc;
}

/** One sealed message of `header` then `pieces` back to back (copied once); `header` is the seal, its CRC written here. */
function sealed(headerBytes: number, pieces: readonly Uint8Array[], fill: (out: Buffer) => void): { message: Uint8Array; crc: number } {
  let total = headerBytes;
  for (const piece of pieces) total += piece.byteLength;
  // Not zero-filled: every byte is written below.
  const out = Buffer.allocUnsafe(total);
  const crc = checksumOf(pieces);
  out[0] = SEAL_MARKER;
  out.writeUInt32LE(crc, 1);
  fill(out);
  let position = headerBytes;
  for (const piece of pieces) {
    out.set(piece, position);
    position += piece.byteLength;
  }
  return { message: out, crc };
}

/** The sealed request of `pieces` sent back to back, and its CRC (which the sealed reply names). */
export function sealRequest(pieces: readonly Uint8Array[]): { message: Uint8Array; crc: number } {
  return sealed(REQUEST_SEAL_BYTES, pieces, () => undefined);
}

/** The sealed reply of `pieces` sent back to back to the request whose CRC is `requestCrc`. */
export function sealReply(pieces: readonly Uint8Array[], requestCrc: number): Uint8Array {
  return sealed(REPLY_SEAL_BYTES, pieces, (out) => out.writeUInt32LE(requestCrc >>> 0, 5)).message;
}

/**
 * A request as received: the message inside when it is sealed and whole; the message itself when it is not
 * sealed (a client that does not seal, or a seal that was damaged: the endpoint answers it unsealed, which a
 * caller that sealed refuses); `damaged` when it is sealed and its CRC does not match.
 */
export function openRequest(data: Uint8Array): Opened {
  if (data.length === 0 || data[0] !== SEAL_MARKER) return { sealed: false, body: data };
  if (data.length < REQUEST_SEAL_BYTES) return { damaged: `a sealed request of ${data.length} bytes is shorter than its seal`, crc: 0 };
  const announced = readUint32(data, 1);
  const body = data.subarray(REQUEST_SEAL_BYTES);
  const crc = crc32(body);
  if (crc !== announced) return { damaged: `the CRC-32 of the request's ${body.length} bytes is ${hex(crc)}, its seal says ${hex(announced)}`, crc: announced };
  return { sealed: true, body, crc };
}

/**
 * The reply inside a sealed reply to the request whose CRC is `requestCrc`, or why it is refused: not sealed
 * (a sealed request is always answered sealed, so its seal was damaged), a CRC that does not match, or the
 * reply to another request.
 */
export function openReply(data: Uint8Array, requestCrc: number): { body: Uint8Array } | { damaged: string } {
  if (data.length === 0 || data[0] !== SEAL_MARKER) return { damaged: `the reply of ${data.length} bytes is not sealed (it starts ${JSON.stringify(Buffer.from(data.subarray(0, 16)).toString('latin1'))})` };
  if (data.length < REPLY_SEAL_BYTES) return { damaged: `a sealed reply of ${data.length} bytes is shorter than its seal` };
  const announced = readUint32(data, 1);
  const body = data.subarray(REPLY_SEAL_BYTES);
  const crc = crc32(body);
  if (crc !== announced) return { damaged: `the CRC-32 of the reply's ${body.length} bytes is ${hex(crc)}, its seal says ${hex(announced)}` };
  const answered = readUint32(data, 5);
  if (answered !== requestCrc >>> 0) return { damaged: `the reply answers the request of CRC-32 ${hex(answered)}, not this one (${hex(requestCrc)})` };
  return { body };
}

function readUint32(data: Uint8Array, position: number): number {
  return new DataView(data.buffer, data.byteOffset, data.byteLength).getUint32(position, true);
}

function hex(value: number): string {
  return `0x${(value >>> 0).toString(16).padStart(8, '0')}`;
}
