/**
 * The records section of a compressed Kafka record batch, decompressed, with a bound on the bytes it may
 * expand to. Kafka compresses the records of a v2 batch as a whole (everything after the 61-byte header)
 * with the codec in bits 0-2 of the attributes:
 *
 * - gzip (1): a gzip stream (RFC 1952), read with node:zlib.
 * - snappy (2): Kafka's Java client (and sarama) write xerial-framed snappy: the 16-byte header
 *   `\x82SNAPPY\0`, version and compatible version (int32 each), then blocks of a big-endian int32 length
 *   and one raw snappy block. librdkafka writes one raw snappy block. Both are read, told apart by the
 *   xerial magic (a raw block cannot start with it: its first byte is a varint of the length, and 0x82
 *   followed by 'S' would declare more than 10 MiB for a 16-byte header that carries no data).
 * - lz4 (3): one LZ4 frame (https://github.com/lz4/lz4/blob/dev/doc/lz4_Frame_format.md), as Kafka's
 *   clients have written since message format v1 fixed the header checksum.
 * - zstd (4): standard Zstandard frames (RFC 8878), skippable frames allowed, no dictionary.
 *
 * Decompression could turn a small batch into gigabytes, so before any codec allocates, the frames are
 * walked to find how large their output can be (declared content sizes, block counts times the block
 * maximum) and refused when that passes `bytesMax`; the output is checked again after.
 *
 * Failures are RecordBatchConversionErrors (`CorruptRecordBatch`, `UnsupportedRecordBatch`,
 * `RecordBatchTooLarge`), never a crash: snappy and lz4 run in napi-rs bindings of Rust crates that refuse
 * malformed input with an error, zstd in fzstd (pure JavaScript) behind the frame walk.
 */
import { gunzipSync } from 'node:zlib';
import { decompress as zstdDecompress } from 'fzstd';
import { decompressFrameSync as lz4DecompressFrame } from 'lz4-napi';
import { uncompressSync as snappyUncompress } from 'snappy';

import type { CompressionCodec } from '../messages/record-batch';
import { RecordBatchConversionError, messageOf } from './conversion-error';

/** Decompresses `compressed`, the records section of a batch compressed with `codec`, to at most `bytesMax` bytes. */
export function decompressRecords(codec: CompressionCodec, compressed: Uint8Array, bytesMax: number): Uint8Array {
  if (!Number.isSafeInteger(bytesMax) || bytesMax < 1) throw new Error(`bytesMax must be a positive integer, got ${bytesMax}`);
  let output: Uint8Array;
  switch (codec) {
    case 'none':
      output = compressed;
      break;
    case 'gzip':
      output = gunzip(compressed, bytesMax);
      break;
    case 'snappy':
      output = unsnappy(compressed, bytesMax);
      break;
    case 'lz4':
      output = unlz4(compressed, bytesMax);
      break;
    case 'zstd':
      output = unzstd(compressed, bytesMax);
      break;
  }
  if (output.byteLength > bytesMax) throw tooLarge(codec, `${output.byteLength} bytes`, bytesMax);
  return output;
}

function corrupt(codec: CompressionCodec, message: string, cause?: unknown): RecordBatchConversionError {
  return new RecordBatchConversionError('CorruptRecordBatch', `${codec}-compressed records: ${message}`, { cause });
}

function tooLarge(codec: CompressionCodec, what: string, bytesMax: number): RecordBatchConversionError {
  return new RecordBatchConversionError('RecordBatchTooLarge', `${codec}-compressed records decompress to ${what}, more than the ${bytesMax} bytes allowed`);
}

function viewOf(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function bufferOf(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function gunzip(compressed: Uint8Array, bytesMax: number): Uint8Array {
  try {
    return gunzipSync(compressed, { maxOutputLength: bytesMax });
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge('gzip', 'more', bytesMax);
    throw corrupt('gzip', messageOf(error), error);
  }
}

/** The magic of a xerial snappy stream, followed by two int32 versions. */
const XERIAL_MAGIC = Uint8Array.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);
const XERIAL_HEADER_BYTES = 16;

function isXerial(bytes: Uint8Array): boolean {
  if (bytes.byteLength < XERIAL_MAGIC.byteLength) return false;
  return XERIAL_MAGIC.every((byte, index) => bytes[index] === byte);
}

function unsnappy(compressed: Uint8Array, bytesMax: number): Uint8Array {
  const blocks: Uint8Array[] = [];
  if (isXerial(compressed)) {
    if (compressed.byteLength < XERIAL_HEADER_BYTES) throw corrupt('snappy', `a xerial header of ${compressed.byteLength} bytes, not ${XERIAL_HEADER_BYTES}`);
    const view = viewOf(compressed);
    let position = XERIAL_HEADER_BYTES;
    while (position < compressed.byteLength) {
      if (position + 4 > compressed.byteLength) throw corrupt('snappy', `a xerial block length at byte ${position} is cut off`);
      const length = view.getInt32(position);
      position += 4;
      if (length < 0 || position + length > compressed.byteLength) throw corrupt('snappy', `a xerial block of ${length} bytes at byte ${position} does not fit in ${compressed.byteLength} bytes`);
      blocks.push(compressed.subarray(position, position + length));
      position += length;
    }
  } else {
    blocks.push(compressed);
  }
  // Each raw block starts with its uncompressed length (a varint of up to 32 bits): all are checked against
  // the bound before any is decompressed.
  let declared = 0;
  for (const block of blocks) declared += snappyDeclaredLength(block);
  if (declared > bytesMax) throw tooLarge('snappy', `${declared} bytes`, bytesMax);
  const parts = blocks.map((block) => {
    try {
      return snappyUncompress(block, { asBuffer: true }) as Buffer;
    } catch (error) {
      throw corrupt('snappy', messageOf(error), error);
    }
  });
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
}

function snappyDeclaredLength(block: Uint8Array): number {
  let length = 0;
  for (let index = 0; index < 5; index++) {
    const byte = block[index];
    if (byte === undefined) throw corrupt('snappy', 'a raw block ends inside its length');
    length += (byte & 0x7f) * 2 ** (7 * index);
    if ((byte & 0x80) === 0) {
      if (length > 0xffffffff) throw corrupt('snappy', `a raw block declares ${length} bytes, more than 32 bits`);
      return length;
    }
  }
  throw corrupt('snappy', 'a raw block length longer than 5 bytes');
}

const LZ4_FRAME_MAGIC = 0x184d2204;
/** The block maximum sizes by the BD byte's bits 4-6; ids 0-3 are reserved. */
const LZ4_BLOCK_MAX_BYTES: Record<number, number> = { 4: 64 * 1024, 5: 256 * 1024, 6: 1024 * 1024, 7: 4 * 1024 * 1024 };

function unlz4(compressed: Uint8Array, bytesMax: number): Uint8Array {
  const bound = lz4FrameOutputBound(compressed);
  if (bound > bytesMax) throw tooLarge('lz4', `up to ${bound} bytes`, bytesMax);
  try {
    return lz4DecompressFrame(bufferOf(compressed));
  } catch (error) {
    throw corrupt('lz4', messageOf(error), error);
  }
}

/**
 * The most bytes decompressing one LZ4 frame can take: the sum over its blocks of the stored size of an
 * uncompressed block or the block maximum of a compressed one, or its declared content size if larger.
 * Checks the frame's structure on the way (the checksums are the decoder's to check).
 */
function lz4FrameOutputBound(frame: Uint8Array): number {
  const view = viewOf(frame);
  const need = (position: number, bytes: number, what: string): void => {
    if (position + bytes > frame.byteLength) throw corrupt('lz4', `the frame ends inside ${what} (byte ${position} of ${frame.byteLength})`);
  };
  need(0, 7, 'its header');
  const magic = view.getUint32(0, true);
  if (magic !== LZ4_FRAME_MAGIC) throw corrupt('lz4', `not an LZ4 frame: magic 0x${magic.toString(16)}`);
  const flags = frame[4]!;
  if (flags >> 6 !== 1) throw corrupt('lz4', `frame version ${flags >> 6}, not 1`);
  const blockChecksums = (flags & 0x10) !== 0;
  const hasContentSize = (flags & 0x08) !== 0;
  const contentChecksum = (flags & 0x04) !== 0;
  const hasDictionaryId = (flags & 0x01) !== 0;
  const blockMaxBytes = LZ4_BLOCK_MAX_BYTES[(frame[5]! >> 4) & 0x07];
  if (blockMaxBytes === undefined) throw corrupt('lz4', `reserved block maximum size id ${(frame[5]! >> 4) & 0x07}`);
  let position = 6;
  let contentSize: number | undefined;
  if (hasContentSize) {
    need(position, 8, 'its content size');
    const size = view.getBigUint64(position, true);
    contentSize = size > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(size);
    position += 8;
  }
  if (hasDictionaryId) position += 4;
  position += 1; // The header checksum.
  let bound = 0;
  for (;;) {
    need(position, 4, 'a block size');
    const word = view.getUint32(position, true);
    position += 4;
    if (word === 0) break;
    const stored = word & 0x7fffffff;
    const uncompressed = word >>> 31 === 1;
    if (stored > blockMaxBytes) throw corrupt('lz4', `a block of ${stored} bytes in a frame of ${blockMaxBytes}-byte blocks`);
    need(position, stored + (blockChecksums ? 4 : 0), 'a block');
    position += stored + (blockChecksums ? 4 : 0);
    bound += uncompressed ? stored : blockMaxBytes;
  }
  if (contentChecksum) {
    need(position, 4, 'its content checksum');
    position += 4;
  }
  if (position !== frame.byteLength) throw corrupt('lz4', `${frame.byteLength - position} bytes after the frame`);
  // A decoder may reserve the declared content size before it reads a block, and a frame that lies about it
  // still stops at its blocks' bound: the larger of the two bounds the memory.
  return Math.max(bound, contentSize ?? 0);
}

const ZSTD_FRAME_MAGIC = 0xfd2fb528;
/** Skippable frames have magics 0x184D2A50 to 0x184D2A5F. */
const ZSTD_SKIPPABLE_MAGIC = 0x184d2a50;
/** A block decompresses to at most min(window size, 128 KiB) (RFC 8878 §3.1.1.2.3). */
const ZSTD_BLOCK_MAX_BYTES = 128 * 1024;
/**
 * The largest window of a frame without a content size: 2^27 bytes, the reference decoder's default limit
 * (ZSTD_WINDOWLOG_LIMIT_DEFAULT), which Kafka's brokers decompress with. Producers' windows are far smaller
 * (2 MiB at the default level 3, 8 MiB at level 19).
 */
const ZSTD_WINDOW_BYTES_MAX = 2 ** 27;

function unzstd(compressed: Uint8Array, bytesMax: number): Uint8Array {
  const { bound, windowBytes } = zstdOutputBound(compressed);
  if (bound > bytesMax) throw tooLarge('zstd', `up to ${bound} bytes`, bytesMax);
  // fzstd allocates each frame's declared content size (within the bound above), or its window when it
  // declares none: that is held to what the reference decoder and Kafka's brokers accept.
  if (windowBytes > ZSTD_WINDOW_BYTES_MAX) {
    throw new RecordBatchConversionError('UnsupportedRecordBatch', `zstd-compressed records: a frame with a ${windowBytes}-byte window, more than the ${ZSTD_WINDOW_BYTES_MAX} bytes decoders accept`);
  }
  try {
    return zstdDecompress(compressed);
  } catch (error) {
    throw corrupt('zstd', messageOf(error), error);
  }
}

/**
 * The most bytes a sequence of Zstandard frames can decompress to, and the largest window of a frame that
 * declares no content size, from their frame and block headers (RFC 8878 §3.1.1). Refuses frames that need
 * a dictionary, reserved bits and block types, blocks beyond the block maximum, and bytes that are not frames.
 */
function zstdOutputBound(data: Uint8Array): { bound: number; windowBytes: number } {
  const view = viewOf(data);
  const need = (position: number, bytes: number, what: string): void => {
    if (position + bytes > data.byteLength) throw corrupt('zstd', `the data ends inside ${what} (byte ${position} of ${data.byteLength})`);
  };
  let position = 0;
  let bound = 0;
  let largestWindowBytes = 0;
  let frames = 0;
  while (position < data.byteLength) {
    need(position, 4, 'a frame magic');
    const magic = view.getUint32(position, true);
    if ((magic & 0xfffffff0) === ZSTD_SKIPPABLE_MAGIC) {
      need(position + 4, 4, 'a skippable frame size');
      const size = view.getUint32(position + 4, true);
      need(position + 8, size, 'a skippable frame');
      position += 8 + size;
      continue;
    }
    if (magic !== ZSTD_FRAME_MAGIC) throw corrupt('zstd', `not a Zstandard frame at byte ${position}: magic 0x${magic.toString(16)}`);
    frames++;
    need(position + 4, 1, 'a frame header');
    const descriptor = data[position + 4]!;
    position += 5;
    const contentSizeFlag = descriptor >> 6;
    const singleSegment = (descriptor & 0x20) !== 0;
    if ((descriptor & 0x08) !== 0) throw corrupt('zstd', 'a frame header with its reserved bit set');
    const contentChecksum = (descriptor & 0x04) !== 0;
    const dictionaryIdBytes = [0, 1, 2, 4][descriptor & 0x03]!;
    let windowBytes = 0;
    if (!singleSegment) {
      need(position, 1, 'a window descriptor');
      const windowDescriptor = data[position++]!;
      const windowBase = 2 ** (10 + (windowDescriptor >> 3));
      windowBytes = windowBase + (windowBase / 8) * (windowDescriptor & 0x07);
    }
    need(position, dictionaryIdBytes, 'a dictionary id');
    let dictionaryId = 0;
    for (let index = dictionaryIdBytes - 1; index >= 0; index--) dictionaryId = dictionaryId * 256 + data[position + index]!;
    position += dictionaryIdBytes;
    if (dictionaryId !== 0) {
      throw new RecordBatchConversionError('UnsupportedRecordBatch', `zstd-compressed records: a frame needs dictionary ${dictionaryId}; Kafka batches are compressed without one`);
    }
    const contentSizeBytes = [singleSegment ? 1 : 0, 2, 4, 8][contentSizeFlag]!;
    need(position, contentSizeBytes, 'a frame content size');
    let contentSize: number | undefined;
    if (contentSizeBytes > 0) {
      let size = 0;
      for (let index = contentSizeBytes - 1; index >= 0; index--) size = size * 256 + data[position + index]!;
      contentSize = contentSizeBytes === 2 ? size + 256 : size;
    }
    position += contentSizeBytes;
    if (singleSegment) windowBytes = contentSize!;
    const blockMaxBytes = Math.min(windowBytes, ZSTD_BLOCK_MAX_BYTES);
    let frameBound = 0;
    for (let last = false; !last; ) {
      need(position, 3, 'a block header');
      const header = data[position]! | (data[position + 1]! << 8) | (data[position + 2]! << 16);
      position += 3;
      last = (header & 1) === 1;
      const type = (header >> 1) & 0x03;
      const size = header >>> 3;
      // Raw and RLE blocks decompress to `size` bytes, a compressed block to at most the maximum; all are bounded by it.
      if (size > blockMaxBytes) throw corrupt('zstd', `a block of ${size} bytes, more than the ${blockMaxBytes}-byte block maximum`);
      switch (type) {
        case 0: // Raw: `size` bytes stored as they are.
          need(position, size, 'a raw block');
          position += size;
          frameBound += size;
          break;
        case 1: // RLE: one byte repeated `size` times.
          need(position, 1, 'an RLE block');
          position += 1;
          frameBound += size;
          break;
        case 2: // Compressed: `size` bytes of compressed data.
          need(position, size, 'a compressed block');
          position += size;
          frameBound += blockMaxBytes;
          break;
        default:
          throw corrupt('zstd', 'a block of the reserved type 3');
      }
    }
    if (contentChecksum) {
      need(position, 4, 'a content checksum');
      position += 4;
    }
    // With a declared content size fzstd decompresses into a buffer of that size and nothing more.
    bound += contentSize || frameBound;
    if (!contentSize) largestWindowBytes = Math.max(largestWindowBytes, windowBytes);
  }
  if (frames === 0) throw corrupt('zstd', 'no Zstandard frame');
  return { bound, windowBytes: largestWindowBytes };
}
