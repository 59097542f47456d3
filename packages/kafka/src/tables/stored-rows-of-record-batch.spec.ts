import { dirname } from 'node:path';
import { crc32c } from '@aws-crypto/crc32c';
import { KAFKA_TOPIC_COLUMNS } from '@mink/meta';
import { decodeBatch, encodeScanPage, scanJsonRecords } from '@mink/records';
import fc from 'fast-check';

import { KafkajsCompression, KafkajsDecoder, KafkajsLong, type KafkajsMessage, kafkajsModule, kafkajsRecordBatch } from '../messages/kafka-oracle.fixture';
import { encodeRecordBatch, encodeTransactionMarker } from '../messages/record-batch';
import { RecordBatchConversionError, type RecordBatchConversionErrorCode } from './conversion-error';
import { storedRowsOfRecordBatch } from './stored-rows-of-record-batch';

/*
 * kafkajs writes the batches (its RecordBatch and Record encoders), with its gzip codec and, registered
 * here as a kafkajs user would, snappy from kafkajs-snappy (raw blocks, snappyjs), lz4 from lz4js (an LZ4
 * frame) and zstd from zstd-codec (the reference C library compiled to JavaScript): none of them is the
 * library that mink decompresses with. kafkajs's decoder then reads the same batch, as a second oracle.
 */
const compressionModule = kafkajsModule('protocol/message/compression');
const CODECS: Record<number, () => unknown> = compressionModule.Codecs;
const decodeKafkajsBatch = kafkajsModule('protocol/recordBatch/v0/decoder');
const kafkajsBatchEncoder = kafkajsModule('protocol/recordBatch/v0').RecordBatch;
const kafkajsRecord = kafkajsModule('protocol/recordBatch/record/v0');
const lz4js = require('lz4js');
const { ZstdCodec } = require('zstd-codec');
// snappyjs is kafkajs-snappy's own dependency; reached through it so the spec compresses exactly as that codec does.
const snappyjs = require(require.resolve('snappyjs', { paths: [dirname(require.resolve('kafkajs-snappy'))] }));

interface Codec {
  compress(encoder: { buffer: Buffer }): Promise<Buffer>;
  decompress(buffer: Buffer): Promise<Buffer>;
}

let zstd: { compress(bytes: Uint8Array, level: number): Uint8Array; decompress(bytes: Uint8Array): Uint8Array };

/** Xerial framing as Kafka's Java client writes it: the 16-byte header, then blocks of `blockBytes` input each compressed alone. */
function xerialSnappy(input: Buffer, blockBytes: number): Buffer {
  const parts: Buffer[] = [Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00, 0, 0, 0, 1, 0, 0, 0, 1])];
  for (let start = 0; start < input.length; start += blockBytes) {
    const block = Buffer.from(snappyjs.compress(input.subarray(start, start + blockBytes)));
    const length = Buffer.alloc(4);
    length.writeInt32BE(block.length);
    parts.push(length, block);
  }
  return Buffer.concat(parts);
}

const kafkajsSnappy = (): Codec => require('kafkajs-snappy')();
const xerialCodec = (): Codec => ({ compress: async (encoder) => xerialSnappy(encoder.buffer, 1024), decompress: kafkajsSnappy().decompress });
const lz4Codec = (): Codec => ({ compress: async (encoder) => Buffer.from(lz4js.compress(encoder.buffer)), decompress: async (buffer) => Buffer.from(lz4js.decompress(buffer)) });
const zstdCodec = (): Codec => ({ compress: async (encoder) => Buffer.from(zstd.compress(encoder.buffer, 3)), decompress: async (buffer) => Buffer.from(zstd.decompress(buffer)) });

const savedCodecs = { ...CODECS };
beforeAll(async () => {
  zstd = await new Promise((resolve) => ZstdCodec.run((loaded: { Simple: new () => typeof zstd }) => resolve(new loaded.Simple())));
  CODECS[KafkajsCompression.LZ4] = lz4Codec;
  CODECS[KafkajsCompression.ZSTD] = zstdCodec;
  CODECS[KafkajsCompression.Snappy] = kafkajsSnappy;
});
afterAll(() => Object.assign(CODECS, savedCodecs));

/** The compressions tested, each as a kafkajs compression type and the codec kafkajs writes it with. */
const COMPRESSIONS: Array<{ name: string; type: number; codec?: () => unknown }> = [
  { name: 'none', type: KafkajsCompression.None },
  { name: 'gzip', type: KafkajsCompression.GZIP },
  { name: 'snappy (raw, as kafkajs-snappy and librdkafka write it)', type: KafkajsCompression.Snappy, codec: kafkajsSnappy },
  { name: 'snappy (xerial-framed, as the Java client writes it)', type: KafkajsCompression.Snappy, codec: xerialCodec },
  { name: 'lz4', type: KafkajsCompression.LZ4, codec: lz4Codec },
  { name: 'zstd', type: KafkajsCompression.ZSTD, codec: zstdCodec },
];

/** A kafkajs batch with `compression`, its codec swapped in for the encode and the decode that follows. */
async function kafkajsBatch(compression: (typeof COMPRESSIONS)[number], messages: KafkajsMessage[], firstOffset = 0): Promise<Uint8Array> {
  if (compression.codec) CODECS[compression.type] = compression.codec;
  return kafkajsRecordBatch({ messages, compression: compression.type, firstOffset });
}

async function decodeWithKafkajs(batch: Uint8Array): Promise<{ records: Array<{ offset: string; timestamp: string; key: Buffer | null; value: Buffer | null; headers: Record<string, Buffer | Buffer[]> }> }> {
  return decodeKafkajsBatch(new KafkajsDecoder(Buffer.from(batch)));
}

const text = (value: string): Buffer => Buffer.from(value, 'utf8');
const TOPIC_COLUMNS = KAFKA_TOPIC_COLUMNS.map((column) => ({ ...column }));
const base64 = (bytes: Uint8Array | null): string | null => (bytes === null ? null : Buffer.from(bytes).toString('base64'));

/** Messages with null and empty keys and values, repeated and non-ASCII header keys, a null header value, timestamps out of order. */
function messagesOf(count: number): KafkajsMessage[] {
  return Array.from({ length: count }, (_, index): KafkajsMessage => ({
    key: index % 4 === 1 ? null : index % 4 === 2 ? Buffer.alloc(0) : text(`key-${index}`),
    value: index % 5 === 3 ? null : index % 7 === 0 ? Buffer.alloc(700 + index, index % 256) : text(`value ${index} ✓`),
    timestamp: 1_700_000_000_000 + ((index * 37) % 11) - 5,
    headers: index % 3 === 0 ? {} : { trace: text(`t${index}`), 'ünï': [text('one'), text('two')] },
  }));
}

/** The headers column as the converter writes it, from kafkajs's message (headers in its key order, arrays flattened). */
function headersColumnOf(message: KafkajsMessage): string {
  const headers = Object.entries(message.headers ?? {}).flatMap(([key, value]) => (Array.isArray(value) ? value.map((one) => ({ key, value: one })) : [{ key, value }]));
  return JSON.stringify(headers.map(({ key, value }) => ({ key, value: base64(typeof value === 'string' ? text(value) : value) })));
}

describe('storedRowsOfRecordBatch on batches kafkajs writes', () => {
  it.each(COMPRESSIONS)('$name: one row per record, key and value as bytes, headers as JSON, each record its own timestamp, offsets from the base offset', async (compression) => {
    const messages = messagesOf(40);
    const batch = await kafkajsBatch(compression, messages, 5_000);
    const stored = storedRowsOfRecordBatch(batch);
    expect(stored.startOffset).toBe(5_000);
    expect(stored.recordCount).toBe(40);

    const decoded = decodeBatch(TOPIC_COLUMNS, stored.payload);
    expect(decoded.changeTypes).toBeUndefined();
    expect(decoded.timestampsMs).toEqual(messages.map((message) => message.timestamp));
    expect(decoded.rows.map((row) => [base64(row.key as Uint8Array | null), base64(row.value as Uint8Array | null), row.headers])).toEqual(
      messages.map((message) => [base64(message.key), base64(message.value), headersColumnOf(message)]),
    );

    // kafkajs's decoder agrees on every record of the same batch.
    const kafkajs = await decodeWithKafkajs(batch);
    expect(kafkajs.records.map((record) => [Number(record.offset), Number(record.timestamp), base64(record.key), base64(record.value)])).toEqual(
      decoded.rows.map((row, index) => [5_000 + index, decoded.timestampsMs[index], base64(row.key as Uint8Array | null), base64(row.value as Uint8Array | null)]),
    );
  });

  it('serves the payload through the scan code unchanged: the HTTP JSON gives key and value in base64, headers, timestamps and offsets', async () => {
    const messages = messagesOf(6);
    const stored = storedRowsOfRecordBatch(await kafkajsBatch(COMPRESSIONS[5]!, messages, 70));
    const page = encodeScanPage({ columns: TOPIC_COLUMNS, changelog: false }, [stored], 72, 100, 1 << 20);
    expect(page).toMatchObject({ records: 4, nextOffset: 76 });
    expect(scanJsonRecords(Buffer.concat(page.stream)).map((line) => JSON.parse(line))).toEqual(
      messages.slice(2).map((message, index) => ({ offset: 72 + index, timestamp: message.timestamp, row: { key: base64(message.key), value: base64(message.value), headers: headersColumnOf(message) } })),
    );
  });

  it('gives every record of a log-append-time batch the batch max timestamp, as Kafka consumers read it', () => {
    const batch = encodeRecordBatch({
      baseOffset: 3,
      timestampType: 'logAppendTime',
      records: [
        { timestamp: 10, key: null, value: text('a') },
        { timestamp: 30, key: null, value: text('b') },
        { timestamp: 20, key: null, value: text('c') },
      ],
    });
    expect(decodeBatch(TOPIC_COLUMNS, storedRowsOfRecordBatch(batch).payload).timestampsMs).toEqual([30, 30, 30]);
  });

  it('writes a record without headers as [] and a null header value as null', () => {
    const batch = encodeRecordBatch({
      baseOffset: 0,
      records: [
        { timestamp: 1, key: null, value: null },
        { timestamp: 1, key: null, value: null, headers: [{ key: 'k', value: null }, { key: 'k', value: Uint8Array.from([0xff]) }] },
      ],
    });
    expect(decodeBatch(TOPIC_COLUMNS, storedRowsOfRecordBatch(batch).payload).rows.map((row) => row.headers)).toEqual(['[]', '[{"key":"k","value":null},{"key":"k","value":"/w=="}]']);
  });

  it.each([
    [true, 'commit'],
    [false, 'abort'],
  ])('reads a transaction marker (commit %p) as one row named by its mink.control header, so every offset of a topic is a row', (commit, name) => {
    // Proves a scan of a topic that holds transactions keeps its offsets contiguous and says which rows are markers.
    const marker = encodeTransactionMarker({ producerId: 7, producerEpoch: 0, commit, coordinatorEpoch: 2, timestamp: 5 });
    const converted = storedRowsOfRecordBatch(marker);
    expect(converted.recordCount).toBe(1);
    const { rows, timestampsMs } = decodeBatch(TOPIC_COLUMNS, converted.payload);
    expect(rows.map((row) => row.headers)).toEqual([JSON.stringify([{ key: 'mink.control', value: Buffer.from(name).toString('base64') }])]);
    expect(timestampsMs).toEqual([5]);
  });

  it('round-trips any records through every codec (property)', async () => {
    const message = fc.record({
      key: fc.option(fc.uint8Array({ maxLength: 40 }).map((bytes) => Buffer.from(bytes)), { nil: null }),
      value: fc.option(fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)), { nil: null }),
      timestamp: fc.integer({ min: 0, max: 2 ** 45 }),
      headers: fc.dictionary(fc.string({ minLength: 1, maxLength: 5 }), fc.uint8Array({ maxLength: 8 }).map((bytes) => Buffer.from(bytes)), { maxKeys: 3 }),
    });
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...COMPRESSIONS), fc.array(message, { minLength: 1, maxLength: 25 }), fc.nat(2 ** 40), async (compression, messages, firstOffset) => {
        const stored = storedRowsOfRecordBatch(await kafkajsBatch(compression, messages, firstOffset));
        expect(stored).toMatchObject({ startOffset: firstOffset, recordCount: messages.length });
        const decoded = decodeBatch(TOPIC_COLUMNS, stored.payload);
        expect(decoded.timestampsMs).toEqual(messages.map((one) => one.timestamp));
        expect(decoded.rows.map((row) => [base64(row.key as Uint8Array | null), base64(row.value as Uint8Array | null), row.headers])).toEqual(
          messages.map((one) => [base64(one.key), base64(one.value), headersColumnOf(one)]),
        );
      }),
      { numRuns: 120 },
    );
  });
});

/** `batch` (uncompressed) with its records section replaced by `records` and the codec bits set to `codec`, with a correct CRC and length. */
function withRecordsSection(batch: Uint8Array, codec: number, records: Uint8Array): Uint8Array {
  const out = new Uint8Array(61 + records.byteLength);
  out.set(batch.subarray(0, 61));
  out.set(records, 61);
  const view = new DataView(out.buffer);
  view.setInt32(8, out.byteLength - 12);
  view.setInt16(21, (view.getInt16(21) & ~0x07) | codec);
  return withFreshCrc(out);
}

function withFreshCrc(batch: Uint8Array): Uint8Array {
  new DataView(batch.buffer, batch.byteOffset, batch.byteLength).setUint32(17, crc32c(batch.subarray(21)));
  return batch;
}

function codeOf(attempt: () => unknown): RecordBatchConversionErrorCode | string {
  try {
    attempt();
  } catch (error) {
    if (error instanceof RecordBatchConversionError) return error.code;
    return `not a RecordBatchConversionError: ${String(error)}`;
  }
  return 'no error';
}

/** The records section of an uncompressed batch: the bytes after its 61-byte header. */
const recordsOf = (batch: Uint8Array): Uint8Array => batch.subarray(61);

describe('storedRowsOfRecordBatch refuses what it cannot read', () => {
  const plain = encodeRecordBatch({ baseOffset: 0, records: [{ timestamp: 1, key: text('k'), value: text('v') }, { timestamp: 2, key: null, value: text('w') }] });
  const records = Buffer.from(recordsOf(plain));

  /** A batch of two records whose offset deltas are `deltas`, written by kafkajs's own encoders. */
  async function withOffsetDeltas(deltas: number[]): Promise<Uint8Array> {
    const encoder = await kafkajsBatchEncoder({
      compression: KafkajsCompression.None,
      firstOffset: KafkajsLong.fromValue(0),
      firstTimestamp: 1,
      maxTimestamp: 1,
      partitionLeaderEpoch: 0,
      lastOffsetDelta: deltas.length - 1,
      transactional: false,
      producerId: KafkajsLong.fromValue(-1),
      producerEpoch: 0,
      firstSequence: 0,
      records: deltas.map((offsetDelta) => kafkajsRecord({ key: null, value: text('x'), offsetDelta, timestampDelta: 0 })),
    });
    return new Uint8Array(encoder.buffer);
  }

  const cases: Array<{ name: string; batch: () => Promise<Uint8Array> | Uint8Array; code: RecordBatchConversionErrorCode; message: RegExp; options?: { decompressedBytesMax: number } }> = [
    { name: 'a CRC that does not match', batch: () => Object.assign(new Uint8Array(plain), { [70]: plain[70]! ^ 1 }), code: 'CorruptRecordBatch', message: /CRC-32C mismatch/ },
    { name: 'a cut-off batch', batch: () => plain.subarray(0, plain.byteLength - 1), code: 'CorruptRecordBatch', message: /partial batch/ },
    { name: 'a legacy message set (magic 1)', batch: () => Object.assign(new Uint8Array(plain), { [16]: 1 }), code: 'UnsupportedRecordBatch', message: /magic 1/ },
    { name: 'a control batch that is no transaction marker', batch: () => encodeRecordBatch({ baseOffset: 0, control: true, records: [{ timestamp: 1, key: Uint8Array.from([0, 0, 0, 9]), value: null }] }), code: 'UnsupportedRecordBatch', message: /not a transaction marker/ },
    { name: 'an offset gap (deltas 0, 2)', batch: () => withOffsetDeltas([0, 2]), code: 'UnsupportedRecordBatch', message: /record 1 has offset delta 2/ },
    { name: 'offset deltas out of order (1, 0)', batch: () => withOffsetDeltas([1, 0]), code: 'UnsupportedRecordBatch', message: /record 0 has offset delta 1/ },
    { name: 'an undefined compression codec (5)', batch: () => withRecordsSection(plain, 5, records), code: 'CorruptRecordBatch', message: /unknown compression codec 5/ },
    { name: 'records that end early', batch: () => withRecordsSection(plain, 0, records.subarray(0, records.length - 1)), code: 'CorruptRecordBatch', message: /record batch at offset 0/ },
    { name: 'gzip: not a gzip stream', batch: () => withRecordsSection(plain, 1, records), code: 'CorruptRecordBatch', message: /gzip-compressed records: incorrect header check/ },
    { name: 'snappy: a raw block that does not decode', batch: () => withRecordsSection(plain, 2, Uint8Array.from([0x05, 0xff, 0xff, 0xff])), code: 'CorruptRecordBatch', message: /snappy-compressed records/ },
    { name: 'snappy: a xerial block past the end', batch: () => withRecordsSection(plain, 2, xerialWithBlockLength(1000)), code: 'CorruptRecordBatch', message: /xerial block of 1000 bytes/ },
    { name: 'snappy: a xerial block of negative length', batch: () => withRecordsSection(plain, 2, xerialWithBlockLength(-1)), code: 'CorruptRecordBatch', message: /xerial block of -1 bytes/ },
    { name: 'snappy: a raw block declaring 4 GiB', batch: () => withRecordsSection(plain, 2, Uint8Array.from([0xff, 0xff, 0xff, 0xff, 0x0f, 0x00])), code: 'RecordBatchTooLarge', message: /4294967295 bytes/ },
    { name: 'lz4: not a frame', batch: () => withRecordsSection(plain, 3, records), code: 'CorruptRecordBatch', message: /not an LZ4 frame/ },
    { name: 'lz4: a frame declaring 1 TiB of content', batch: () => withRecordsSection(plain, 3, lz4FrameDeclaring(2 ** 40)), code: 'RecordBatchTooLarge', message: /1099511627776 bytes/ },
    { name: 'zstd: not a frame', batch: () => withRecordsSection(plain, 4, records), code: 'CorruptRecordBatch', message: /not a Zstandard frame/ },
    { name: 'zstd: a frame declaring 1 TiB of content', batch: () => withRecordsSection(plain, 4, zstdFrameDeclaring(2 ** 40)), code: 'RecordBatchTooLarge', message: /1099511627776-byte buffer|up to 1099511627776 bytes/ },
    { name: 'zstd: a frame that needs a dictionary', batch: () => withRecordsSection(plain, 4, Uint8Array.from([0x28, 0xb5, 0x2f, 0xfd, 0x21, 0x07, 0x05, 0x01, 0x00, 0x00])), code: 'UnsupportedRecordBatch', message: /dictionary 7/ },
    {
      name: 'zstd: RLE blocks that expand past the bound',
      batch: () => withRecordsSection(plain, 4, zstdRleFrame(40, 128 * 1024)),
      code: 'RecordBatchTooLarge',
      message: /up to 5242880 bytes/,
      options: { decompressedBytesMax: 1 << 20 },
    },
    { name: 'zstd: an RLE block larger than the block maximum', batch: () => withRecordsSection(plain, 4, zstdRleFrame(1, 128 * 1024 + 1)), code: 'CorruptRecordBatch', message: /more than the 131072-byte block maximum/ },
  ];
  it.each(cases)('$name: $code', async ({ batch, code, message, options }) => {
    const bytes = await batch();
    expect(codeOf(() => storedRowsOfRecordBatch(bytes, options))).toBe(code);
    expect(() => storedRowsOfRecordBatch(bytes, options)).toThrow(message);
  });

  it.each(COMPRESSIONS.filter((compression) => compression.name !== 'none'))('$name: refuses records that would decompress past the bound, before decompressing where the format tells', async (compression) => {
    const batch = await kafkajsBatch(compression, messagesOf(30));
    expect(codeOf(() => storedRowsOfRecordBatch(batch, { decompressedBytesMax: 500 }))).toBe('RecordBatchTooLarge');
  });

  it.each(COMPRESSIONS.filter((compression) => compression.name !== 'none'))('$name: a compressed section holding fewer records than the header counts is corrupt', async (compression) => {
    const batch = await kafkajsBatch(compression, messagesOf(3));
    // The record count and last offset delta sit in the uncompressed header: claiming 4 leaves the decoder short.
    const claimed = new Uint8Array(batch);
    new DataView(claimed.buffer).setInt32(23, 3);
    new DataView(claimed.buffer).setInt32(57, 4);
    expect(codeOf(() => storedRowsOfRecordBatch(withFreshCrc(claimed)))).toBe('CorruptRecordBatch');
  });

  it('never throws anything but RecordBatchConversionError on compressed sections changed at random, CRC made to match (fuzz)', async () => {
    const originals = await Promise.all(COMPRESSIONS.map((compression) => kafkajsBatch(compression, messagesOf(12))));
    fc.assert(
      fc.property(fc.nat(originals.length - 1), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 6 }), fc.option(fc.nat(), { nil: undefined }), (which, changes, cut) => {
        const original = originals[which]!;
        let section = new Uint8Array(recordsOf(original));
        for (const [position, byte] of changes) section[position % section.byteLength] = byte;
        if (cut !== undefined) section = section.subarray(0, cut % section.byteLength);
        const codec = new DataView(original.buffer, original.byteOffset).getInt16(21) & 0x07;
        const outcome = codeOf(() => storedRowsOfRecordBatch(withRecordsSection(original, codec, section)));
        expect(['no error', 'CorruptRecordBatch', 'UnsupportedRecordBatch', 'RecordBatchTooLarge']).toContain(outcome);
      }),
      { numRuns: 3000 },
    );
  });
});

/** A xerial header and one block whose length field says `length`, followed by 8 bytes. */
function xerialWithBlockLength(length: number): Uint8Array {
  const out = Buffer.alloc(16 + 4 + 8);
  Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00, 0, 0, 0, 1, 0, 0, 0, 1]).copy(out);
  out.writeInt32BE(length, 16);
  return out;
}

/** An LZ4 frame header declaring `contentSize` bytes, with one tiny uncompressed block and the end mark. */
function lz4FrameDeclaring(contentSize: number): Uint8Array {
  const out = Buffer.alloc(4 + 2 + 8 + 1 + 4 + 1 + 4);
  out.writeUInt32LE(0x184d2204, 0);
  out[4] = 0x68; // Version 01, independent blocks, content size present.
  out[5] = 0x40; // 64 KiB blocks.
  out.writeBigUInt64LE(BigInt(contentSize), 6);
  out[14] = 0; // Header checksum (wrong, but the bound is checked first).
  out.writeUInt32LE(0x80000001, 15);
  out[19] = 0x41;
  out.writeUInt32LE(0, 20);
  return out;
}

/** A zstd frame header declaring `contentSize` bytes (8-byte field, single segment), then one empty raw last block. */
function zstdFrameDeclaring(contentSize: number): Uint8Array {
  const out = Buffer.alloc(4 + 1 + 8 + 3);
  out.writeUInt32LE(0xfd2fb528, 0);
  out[4] = 0xe0; // Content size flag 3 (8 bytes), single segment.
  out.writeBigUInt64LE(BigInt(contentSize), 5);
  out.writeUIntLE(1, 13, 3); // Last block, raw, size 0.
  return out;
}

/** A zstd frame without content size (1 MiB window) of `blocks` RLE blocks of `blockBytes` each. */
function zstdRleFrame(blocks: number, blockBytes: number): Uint8Array {
  const parts: Buffer[] = [Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, (20 - 10) << 3])];
  for (let index = 0; index < blocks; index++) {
    const header = Buffer.alloc(4);
    header.writeUIntLE((blockBytes << 3) | (1 << 1) | (index === blocks - 1 ? 1 : 0), 0, 3);
    header[3] = 0x61;
    parts.push(header);
  }
  return Buffer.concat(parts);
}
