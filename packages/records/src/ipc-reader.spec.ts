import { encodeBatch } from './arrow-codec';
import { readIpcStream } from './ipc-reader';

describe('readIpcStream', () => {
  // Proves a stream lying at any byte offset of a Node Buffer (a NATS message, an HTTP body) is read with
  // 8-byte aligned bodies and the same values as one at offset 0.
  it.each([0, 1, 3, 8])('reads a stream at byte offset %i of a Buffer with aligned bodies', (shift) => {
    const columns = [
      { name: 'id', type: 'int64' as const },
      { name: 'name', type: 'string' as const },
    ];
    const stream = encodeBatch(columns, [{ id: 7n, name: 'ann' }, { id: 8n, name: 'bo' }], 5);
    const backing = Buffer.alloc(stream.byteLength + shift);
    backing.set(stream, shift);
    const read = readIpcStream(backing.subarray(shift));
    const expected = readIpcStream(stream);
    expect(read.batches.map((batch) => batch.columns.map((column) => [...column.buffers.map((buffer) => [...buffer])]))).toEqual(
      expected.batches.map((batch) => batch.columns.map((column) => [...column.buffers.map((buffer) => [...buffer])])),
    );
    for (const batch of read.batches) for (const column of batch.columns) for (const buffer of column.buffers) if (buffer.byteLength > 0) expect(buffer.byteOffset % 8).toBe(0);
  });
});
