import { BodyCompression, BufferRegion, FieldNode, Message, RecordBatch as RecordBatchHeader } from 'apache-arrow/ipc/metadata/message';
import { MessageHeader, MetadataVersion, Schema } from 'apache-arrow';
import { CompressionType } from 'apache-arrow/fb/compression-type';
import fc from 'fast-check';

import { recordBatchFiguresByArrow } from './arrow-decoded.fixture';
import { MESSAGE_HEADER, type RecordBatchMetadata, encodeRecordBatchMetadata, readMessageMetadata, readRecordBatchMetadata, recordBatchMetadataBytes } from './ipc-metadata';

/** What the reader makes of `metadata`: the message's figures and its record batch header. */
function read(metadata: Uint8Array): { headerType: number; bodyLength: number; batch: RecordBatchMetadata } {
  const message = readMessageMetadata(metadata);
  return { headerType: message.headerType, bodyLength: message.bodyLength, batch: readRecordBatchMetadata(metadata, message) };
}

const safeCount = fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER });
const header = fc.record({
  length: safeCount,
  nodes: fc.array(fc.record({ length: safeCount, nullCount: safeCount }), { maxLength: 12 }),
  buffers: fc.array(fc.record({ offset: safeCount, length: safeCount }), { maxLength: 30 }),
  bodyLength: safeCount,
});

describe('encodeRecordBatchMetadata', () => {
  it('writes what apache-arrow decodes to the same figures, and what readRecordBatchMetadata reads back', () => {
    // Proves the hand-laid flatbuffer is a record batch message any Arrow reader takes, figures up to 2^53 - 1 included.
    fc.assert(
      fc.property(header, ({ length, nodes, buffers, bodyLength }) => {
        const metadata = encodeRecordBatchMetadata(length, nodes, buffers, bodyLength);
        expect(recordBatchFiguresByArrow(metadata)).toEqual({ version: MetadataVersion.V5, headerType: MessageHeader.RecordBatch, bodyLength, length, nodes, buffers, compression: null });
        expect(read(metadata)).toEqual({ headerType: MESSAGE_HEADER.recordBatch, bodyLength, batch: { length, nodes, buffers, compressed: false } });
      }),
    );
  });

  it.each([
    [0, 0, 96],
    [1, 2, 144],
    [4, 9, 304],
  ])('lays %i field nodes and %i buffers out in %i bytes, every 64-bit figure 8-byte aligned', (nodes, buffers, bytes) => {
    // Proves the alignment the format's verifiers require (Arrow C++ checks it): the metadata starts 8-byte aligned in a stream, so positions within it must be.
    expect(recordBatchMetadataBytes(nodes, buffers)).toBe(bytes);
    const metadata = encodeRecordBatchMetadata(
      1,
      Array.from({ length: nodes }, () => ({ length: 1, nullCount: 0 })),
      Array.from({ length: buffers }, () => ({ offset: 0, length: 8 })),
      8,
    );
    expect(metadata.byteLength).toBe(bytes);
    const view = new DataView(metadata.buffer);
    const root = view.getUint32(0, true);
    const messageVtable = root - view.getInt32(root, true);
    const bodyLengthAt = root + view.getUint16(messageVtable + 4 + 2 * 3, true);
    const batch = root + 4 + view.getUint32(root + 4, true);
    const batchVtable = batch - view.getInt32(batch, true);
    const lengthAt = batch + view.getUint16(batchVtable + 4, true);
    const nodesAt = batch + 12 + view.getUint32(batch + 12, true) + 4;
    const buffersAt = batch + 16 + view.getUint32(batch + 16, true) + 4;
    expect([bodyLengthAt % 8, lengthAt % 8, nodesAt % 8, buffersAt % 8, root % 4, batch % 4]).toEqual([0, 0, 0, 0, 0, 0]);
  });

  it('refuses a figure beyond the safe integers', () => {
    expect(() => encodeRecordBatchMetadata(2 ** 53, [], [], 0)).toThrow('is not a safe integer');
    expect(() => encodeRecordBatchMetadata(1, [{ length: 1, nullCount: -0.5 }], [], 0)).toThrow('is not a safe integer');
  });
});

describe('readRecordBatchMetadata', () => {
  it('reads the metadata apache-arrow writes (its own layout), compression included', () => {
    // Proves the reader follows vtables and offsets wherever a writer puts them, not only where ours does.
    fc.assert(
      fc.property(header, fc.boolean(), ({ length, nodes, buffers, bodyLength }, compressed) => {
        const arrowHeader = new RecordBatchHeader(
          length,
          nodes.map((node) => new FieldNode(node.length, node.nullCount)),
          buffers.map((buffer) => new BufferRegion(buffer.offset, buffer.length)),
          compressed ? new BodyCompression(CompressionType.LZ4_FRAME) : null,
        );
        const metadata = Message.encode(Message.from(arrowHeader, bodyLength));
        expect(read(metadata)).toEqual({ headerType: MESSAGE_HEADER.recordBatch, bodyLength, batch: { length, nodes, buffers, compressed } });
      }),
    );
  });

  it('reads a schema message as one, with no record batch header', () => {
    const metadata = Message.encode(Message.from(new Schema([]), 0));
    const message = readMessageMetadata(metadata);
    expect(message.headerType).toBe(MESSAGE_HEADER.schema);
    expect(() => readRecordBatchMetadata(metadata, message)).toThrow('the message is not a record batch (header type 1)');
  });

  it('refuses metadata cut short anywhere, naming what lies outside it', () => {
    // Proves a truncated header is a readable refusal, never a read past the message.
    const metadata = encodeRecordBatchMetadata(3, [{ length: 3, nullCount: 1 }, { length: 3, nullCount: 0 }], [{ offset: 0, length: 8 }, { offset: 8, length: 24 }], 32);
    for (let cut = 0; cut < metadata.byteLength; cut++) {
      expect(() => read(metadata.subarray(0, cut))).toThrow(/lies outside the \d+ bytes of the message metadata|bytes long/);
    }
  });

  it('refuses a figure beyond the safe integers', () => {
    const metadata = encodeRecordBatchMetadata(3, [{ length: 3, nullCount: 0 }], [], 0);
    // The row count is the int64 at 64; its high word at 68.
    new DataView(metadata.buffer).setInt32(68, 0x200000, true);
    expect(() => read(metadata)).toThrow('the row count is beyond the safe integers');
    new DataView(metadata.buffer).setInt32(68, -0x80000000, true);
    expect(() => read(metadata)).toThrow('the row count is beyond the safe integers');
  });

  it('either reads or throws an Error for any corruption of a valid header, and never claims more than its bytes hold', () => {
    // Proves clients' bytes cannot make the reader crash the process, loop, or report figures it did not read.
    const metadata = encodeRecordBatchMetadata(5, [{ length: 5, nullCount: 2 }, { length: 5, nullCount: 0 }], [{ offset: 0, length: 8 }, { offset: 8, length: 40 }, { offset: 48, length: 8 }], 56);
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(metadata.byteLength - 1), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 6 }), (flips) => {
        const corrupt = Uint8Array.from(metadata);
        for (const [at, byte] of flips) corrupt[at] = byte;
        let result: ReturnType<typeof read> | undefined;
        try {
          result = read(corrupt);
        } catch (error) {
          expect(error).toBeInstanceOf(Error);
          return;
        }
        expect((result.batch.nodes.length + result.batch.buffers.length) * 16).toBeLessThanOrEqual(corrupt.byteLength);
      }),
    );
  });

  it('either reads or throws an Error for random bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 256 }), (bytes) => {
        try {
          read(bytes);
        } catch (error) {
          expect(error).toBeInstanceOf(Error);
        }
      }),
    );
  });
});
