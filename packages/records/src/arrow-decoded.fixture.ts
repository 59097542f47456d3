import { Message, type RecordBatch as RecordBatchHeader } from 'apache-arrow/ipc/metadata/message';

/** The figures apache-arrow decodes from the flatbuffer metadata of a record batch message (for specs comparing writers and readers of it). */
export function recordBatchFiguresByArrow(metadata: Uint8Array) {
  const message = Message.decode(metadata);
  const header = message.header() as RecordBatchHeader;
  return {
    version: message.version,
    headerType: message.headerType,
    bodyLength: Number(message.bodyLength),
    length: header.length,
    nodes: header.nodes.map((node) => ({ length: node.length, nullCount: node.nullCount })),
    buffers: header.buffers.map((buffer) => ({ offset: buffer.offset, length: buffer.length })),
    compression: header.compression,
  };
}
