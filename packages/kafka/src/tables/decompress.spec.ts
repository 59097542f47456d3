import { gzipSync } from 'node:zlib';
import { compressSync as snappyCompress } from 'snappy';

import { LZ4_DEFAULT, LZ4_LINKED_BLOCKS, ZSTD_TWO_FRAMES, cliVectorPlainText } from './cli-vectors.fixture';
import { RecordBatchConversionError, type RecordBatchConversionErrorCode } from './conversion-error';
import { decompressRecords } from './decompress';

const PLAIN = cliVectorPlainText();

function outcomeOf(attempt: () => Uint8Array): { code: RecordBatchConversionErrorCode } | { output: Buffer } | { other: string } {
  try {
    return { output: Buffer.from(attempt()) };
  } catch (error) {
    if (error instanceof RecordBatchConversionError) return { code: error.code };
    return { other: String(error) };
  }
}

/** A skippable zstd frame (magic 0x184D2A5x) holding `content`. */
function skippableFrame(content: Buffer, magicNibble = 0): Buffer {
  const header = Buffer.alloc(8);
  header.writeUInt32LE(0x184d2a50 + magicNibble, 0);
  header.writeUInt32LE(content.length, 4);
  return Buffer.concat([header, content]);
}

describe('decompressRecords reads what the reference tools write', () => {
  const cases: Array<{ name: string; codec: 'lz4' | 'zstd' | 'gzip' | 'snappy'; compressed: Buffer; plain: Buffer }> = [
    { name: 'lz4: 64 KiB linked blocks that refer back across blocks, block and content checksums, content size', codec: 'lz4', compressed: LZ4_LINKED_BLOCKS, plain: PLAIN },
    { name: 'lz4: the tool default (4 MiB independent blocks, content checksum)', codec: 'lz4', compressed: LZ4_DEFAULT, plain: PLAIN },
    { name: 'zstd: a frame with content size and checksum, then a streamed frame without either', codec: 'zstd', compressed: ZSTD_TWO_FRAMES, plain: Buffer.concat([PLAIN, PLAIN]) },
    { name: 'zstd: skippable frames before, between and after', codec: 'zstd', compressed: skippableFramesAround(ZSTD_TWO_FRAMES), plain: Buffer.concat([PLAIN, PLAIN]) },
    { name: 'gzip: node:zlib', codec: 'gzip', compressed: gzipSync(PLAIN), plain: PLAIN },
    { name: 'snappy: one raw block', codec: 'snappy', compressed: snappyCompress(PLAIN), plain: PLAIN },
  ];
  it.each(cases)('$name', ({ codec, compressed, plain }) => {
    expect(Buffer.from(decompressRecords(codec, compressed, 1 << 20)).equals(plain)).toBe(true);
  });

  it('returns an uncompressed section as it is', () => {
    expect(decompressRecords('none', PLAIN, PLAIN.length)).toBe(PLAIN);
  });
});

/** The two frames of the vector with skippable frames around and between them. */
function skippableFramesAround(twoFrames: Buffer): Buffer {
  // The first frame's length: the vector is a.zst followed by stream.zst, and a.zst ends where the second magic starts.
  const second = twoFrames.indexOf(Buffer.from([0x28, 0xb5, 0x2f, 0xfd]), 4);
  return Buffer.concat([skippableFrame(Buffer.from('before')), twoFrames.subarray(0, second), skippableFrame(Buffer.alloc(0), 15), twoFrames.subarray(second), skippableFrame(Buffer.from('after'), 3)]);
}

describe('decompressRecords holds the output to its bound', () => {
  const cases: Array<{ name: string; codec: 'lz4' | 'zstd' | 'gzip' | 'snappy'; compressed: Buffer; bytesMax: number; code: RecordBatchConversionErrorCode | 'ok' }> = [
    { name: 'lz4 at exactly its content size', codec: 'lz4', compressed: LZ4_LINKED_BLOCKS, bytesMax: PLAIN.length + 64 * 1024, code: 'ok' },
    { name: 'lz4 below its content size', codec: 'lz4', compressed: LZ4_LINKED_BLOCKS, bytesMax: PLAIN.length - 1, code: 'RecordBatchTooLarge' },
    { name: 'zstd below the two frames', codec: 'zstd', compressed: ZSTD_TWO_FRAMES, bytesMax: 2 * PLAIN.length - 1, code: 'RecordBatchTooLarge' },
    { name: 'gzip at exactly its size', codec: 'gzip', compressed: gzipSync(PLAIN), bytesMax: PLAIN.length, code: 'ok' },
    { name: 'gzip one byte below', codec: 'gzip', compressed: gzipSync(PLAIN), bytesMax: PLAIN.length - 1, code: 'RecordBatchTooLarge' },
    { name: 'snappy at exactly its size', codec: 'snappy', compressed: snappyCompress(PLAIN), bytesMax: PLAIN.length, code: 'ok' },
    { name: 'snappy one byte below', codec: 'snappy', compressed: snappyCompress(PLAIN), bytesMax: PLAIN.length - 1, code: 'RecordBatchTooLarge' },
  ];
  it.each(cases)('$name: $code', ({ codec, compressed, bytesMax, code }) => {
    const outcome = outcomeOf(() => decompressRecords(codec, compressed, bytesMax));
    expect('code' in outcome ? outcome.code : 'output' in outcome ? 'ok' : outcome.other).toBe(code);
  });
});

describe('decompressRecords refuses malformed frames', () => {
  const withByte = (bytes: Buffer, position: number, value: number): Buffer => Object.assign(Buffer.from(bytes), { [position]: value });
  const cases: Array<{ name: string; codec: 'lz4' | 'zstd'; compressed: Buffer; message: RegExp }> = [
    { name: 'lz4: bytes after the frame', codec: 'lz4', compressed: Buffer.concat([LZ4_DEFAULT, Buffer.from([0])]), message: /1 bytes after the frame/ },
    { name: 'lz4: frame version 0', codec: 'lz4', compressed: withByte(LZ4_DEFAULT, 4, LZ4_DEFAULT[4]! & 0x3f), message: /frame version 0/ },
    { name: 'lz4: a reserved block maximum size', codec: 'lz4', compressed: withByte(LZ4_DEFAULT, 5, 0x10), message: /reserved block maximum size id 1/ },
    { name: 'lz4: a wrong content checksum', codec: 'lz4', compressed: withByte(LZ4_DEFAULT, LZ4_DEFAULT.length - 1, LZ4_DEFAULT[LZ4_DEFAULT.length - 1]! ^ 1), message: /lz4-compressed records/ },
    { name: 'zstd: the reserved bit of a frame header', codec: 'zstd', compressed: withByte(ZSTD_TWO_FRAMES, 4, ZSTD_TWO_FRAMES[4]! | 0x08), message: /reserved bit/ },
    { name: 'zstd: bytes after the last frame', codec: 'zstd', compressed: Buffer.concat([ZSTD_TWO_FRAMES, Buffer.from([1, 2])]), message: /ends inside a frame magic/ },
    { name: 'zstd: nothing but a skippable frame', codec: 'zstd', compressed: skippableFrame(Buffer.from('x')), message: /no Zstandard frame/ },
    {
      name: 'zstd: a 2 GiB window in a frame without content size',
      codec: 'zstd',
      compressed: Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, (31 - 10) << 3, 0x01, 0x00, 0x00]),
      message: /a frame with a 2147483648-byte window/,
    },
  ];
  it.each(cases)('$name', ({ codec, compressed, message }) => {
    expect(() => decompressRecords(codec, compressed, 1 << 20)).toThrow(RecordBatchConversionError);
    expect(() => decompressRecords(codec, compressed, 1 << 20)).toThrow(message);
  });

  it.each([
    { codec: 'lz4' as const, compressed: LZ4_LINKED_BLOCKS, plain: PLAIN },
    { codec: 'zstd' as const, compressed: ZSTD_TWO_FRAMES, plain: Buffer.concat([PLAIN, PLAIN]) },
    { codec: 'snappy' as const, compressed: snappyCompress(PLAIN), plain: PLAIN },
    { codec: 'gzip' as const, compressed: gzipSync(PLAIN), plain: PLAIN },
  ])('$codec: every cut-off prefix is refused as a RecordBatchConversionError, or (at a frame boundary) reads as a prefix', ({ codec, compressed, plain }) => {
    const unexpected: string[] = [];
    for (let length = 0; length < compressed.length; length++) {
      const outcome = outcomeOf(() => decompressRecords(codec, compressed.subarray(0, length), 1 << 20));
      if ('other' in outcome) unexpected.push(`${length}: ${outcome.other}`);
      if ('output' in outcome && !plain.subarray(0, outcome.output.length).equals(outcome.output)) unexpected.push(`${length}: decoded ${outcome.output.length} bytes that are not a prefix`);
    }
    expect(unexpected).toEqual([]);
  });
});
