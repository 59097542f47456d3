import { crc32c } from '@aws-crypto/crc32c';
import { ERROR_CODES } from '../wire/codes';
import {
  CompressedRecordBatchError,
  decodeRecords,
  encodeRecordBatch,
  encodeTransactionMarker,
  transactionMarkerTypeOf,
  InvalidRecordBatchError,
  readRecordBatch,
  setBaseOffset,
  offsetCountOf,
  setPartitionLeaderEpoch,
  splitRecordBatches,
  type RecordInput,
} from './record-batch';
import { KafkajsCompression, KafkajsDecoder, kafkajsModule, kafkajsRecordBatch, type KafkajsMessage } from './kafka-oracle.fixture';

const decodeKafkajsBatch = kafkajsModule('protocol/recordBatch/v0/decoder');

interface KafkajsDecodedRecord {
  offset: string;
  timestamp: string;
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, Buffer | Buffer[]>;
}

async function decodeWithKafkajs(batch: Uint8Array): Promise<{ firstOffset: string; partitionLeaderEpoch: number; records: KafkajsDecodedRecord[]; [field: string]: unknown }> {
  return decodeKafkajsBatch(new KafkajsDecoder(Buffer.from(batch.buffer, batch.byteOffset, batch.byteLength)));
}

/** Recomputes the CRC after a test changed bytes it covers, so that a later check fails on purpose. */
function withFreshCrc(batch: Uint8Array): Uint8Array {
  new DataView(batch.buffer, batch.byteOffset, batch.byteLength).setUint32(17, crc32c(batch.subarray(21)));
  return batch;
}

const concat = (...arrays: Uint8Array[]): Uint8Array => new Uint8Array(Buffer.concat(arrays));
const text = (value: string): Buffer => Buffer.from(value, 'utf8');

const MESSAGES: KafkajsMessage[] = [
  { key: text('key-0'), value: text('value-0'), timestamp: 1_700_000_000_000, headers: { trace: text('abc'), 'ünïcode': text('✓') } },
  { key: null, value: null, timestamp: 1_700_000_000_005 },
  { key: text('key-2'), value: Buffer.alloc(3000, 7), timestamp: 1_699_999_999_990, headers: { repeated: [text('one'), text('two')] } },
];

describe('splitRecordBatches on kafkajs batches', () => {
  it('reads every header field of an uncompressed batch, as a view of the record set', async () => {
    const bytes = await kafkajsRecordBatch({ messages: MESSAGES, firstOffset: 17, partitionLeaderEpoch: 4, transactional: true, producerId: 4242, producerEpoch: 3, firstSequence: 99 });
    const [batch, ...rest] = splitRecordBatches(bytes);
    expect(rest).toEqual([]);
    expect(batch).toMatchObject({
      baseOffset: 17,
      batchLength: bytes.byteLength - 12,
      partitionLeaderEpoch: 4,
      magic: 2,
      crc: new DataView(bytes.buffer, bytes.byteOffset).getUint32(17),
      attributes: 0x10,
      compression: 'none',
      timestampType: 'createTime',
      transactional: true,
      control: false,
      lastOffsetDelta: 2,
      baseTimestamp: 1_700_000_000_000,
      maxTimestamp: 1_700_000_000_005,
      producerId: 4242,
      producerEpoch: 3,
      baseSequence: 99,
      recordCount: 3,
    });
    expect(batch!.bytes).toEqual(bytes);
    expect(batch!.bytes.buffer).toBe(bytes.buffer);
  });

  it('reads the header of a gzip batch, whose count sits outside the compressed records', async () => {
    const bytes = await kafkajsRecordBatch({ messages: MESSAGES, compression: KafkajsCompression.GZIP });
    const [batch] = splitRecordBatches(bytes);
    expect(batch).toMatchObject({ compression: 'gzip', attributes: 1, recordCount: 3, lastOffsetDelta: 2, producerId: -1, transactional: false });
    expect(() => decodeRecords(batch!)).toThrow(CompressedRecordBatchError);
  });

  it('splits back-to-back batches into views at the right positions', async () => {
    const first = await kafkajsRecordBatch({ messages: MESSAGES.slice(0, 1), firstOffset: 0 });
    const second = await kafkajsRecordBatch({ messages: MESSAGES, firstOffset: 1, compression: KafkajsCompression.GZIP });
    const third = encodeRecordBatch({ baseOffset: 4, records: [{ timestamp: 5, key: null, value: text('x') }] });
    const set = concat(first, second, third);
    const batches = splitRecordBatches(set);
    expect(batches.map((batch) => [batch.baseOffset, batch.recordCount, batch.compression, batch.bytes.byteOffset])).toEqual([
      [0, 1, 'none', 0],
      [1, 3, 'gzip', first.byteLength],
      [4, 1, 'none', first.byteLength + second.byteLength],
    ]);
    expect(batches.every((batch) => batch.bytes.buffer === set.buffer)).toBe(true);
  });

  it('gives no batches for an empty record set', () => {
    expect(splitRecordBatches(new Uint8Array(0))).toEqual([]);
  });
});

describe('decodeRecords', () => {
  it("gives back the records kafkajs encoded, as kafkajs's own decoder reads them", async () => {
    const bytes = await kafkajsRecordBatch({ messages: MESSAGES, firstOffset: 1000 });
    const ours = decodeRecords(readRecordBatch(bytes));
    const theirs = (await decodeWithKafkajs(bytes)).records;
    expect(ours).toHaveLength(3);
    ours.forEach((record, index) => {
      const expected = theirs[index]!;
      expect(String(record.offset)).toBe(expected.offset);
      expect(String(record.timestamp)).toBe(expected.timestamp);
      expect(record.key === null ? null : Buffer.from(record.key)).toEqual(expected.key);
      expect(record.value === null ? null : Buffer.from(record.value)).toEqual(expected.value);
      const headers: Record<string, Buffer | Buffer[]> = {};
      for (const header of record.headers) {
        const value = Buffer.from(header.value!);
        const seen = headers[header.key];
        headers[header.key] = seen === undefined ? value : ([] as Buffer[]).concat(seen, value);
      }
      expect(headers).toEqual(expected.headers);
    });
    // And against the messages themselves, so that a bug shared with kafkajs would still show.
    expect(ours.map((record) => [record.offset, record.timestamp])).toEqual([
      [1000, 1_700_000_000_000],
      [1001, 1_700_000_000_005],
      [1002, 1_699_999_999_990],
    ]);
    expect(ours[0]!.headers).toEqual([
      { key: 'trace', value: new Uint8Array(text('abc')) },
      { key: 'ünïcode', value: new Uint8Array(text('✓')) },
    ]);
    expect(ours[1]).toMatchObject({ key: null, value: null, headers: [] });
    expect(ours[2]!.headers.map((header) => [header.key, Buffer.from(header.value!).toString()])).toEqual([
      ['repeated', 'one'],
      ['repeated', 'two'],
    ]);
  });

  it('reads every record of a log-append-time batch at the max timestamp, as Kafka consumers do', () => {
    const bytes = encodeRecordBatch({
      baseOffset: 0,
      timestampType: 'logAppendTime',
      records: [
        { timestamp: 10, key: null, value: null },
        { timestamp: 30, key: null, value: null },
      ],
    });
    expect(decodeRecords(readRecordBatch(bytes)).map((record) => record.timestamp)).toEqual([30, 30]);
  });

  const corruptRecordCases: { name: string; build: () => Uint8Array }[] = [
    {
      name: 'a record count above the records present',
      build: () => {
        const bytes = encodeRecordBatch({ baseOffset: 0, records: [{ timestamp: 1, key: null, value: null }, { timestamp: 1, key: null, value: null }] });
        const view = new DataView(bytes.buffer, bytes.byteOffset);
        view.setInt32(57, 3);
        view.setInt32(23, 2);
        return withFreshCrc(bytes);
      },
    },
    {
      name: 'bytes after the last record',
      build: () => {
        const bytes = concat(encodeRecordBatch({ baseOffset: 0, records: [{ timestamp: 1, key: null, value: text('v') }] }), new Uint8Array([0, 0]));
        new DataView(bytes.buffer, bytes.byteOffset).setInt32(8, bytes.byteLength - 12);
        return withFreshCrc(bytes);
      },
    },
    {
      name: 'a record length beyond the batch',
      build: () => {
        const bytes = encodeRecordBatch({ baseOffset: 0, records: [{ timestamp: 1, key: null, value: text('v') }] });
        bytes[61] = 0x7e; // zigzag 63: far more than the record's bytes
        return withFreshCrc(bytes);
      },
    },
    {
      name: 'a header key that is not UTF-8',
      build: () => {
        const bytes = encodeRecordBatch({ baseOffset: 0, records: [{ timestamp: 1, key: null, value: null, headers: [{ key: 'k', value: null }] }] });
        bytes[bytes.indexOf(0x6b /* 'k' */, 61)] = 0xff;
        return withFreshCrc(bytes);
      },
    },
  ];

  it.each(corruptRecordCases)('refuses $name with CORRUPT_MESSAGE', ({ build }) => {
    const batch = readRecordBatch(build());
    expect(() => decodeRecords(batch)).toThrow(InvalidRecordBatchError);
    expect(() => decodeRecords(batch)).toThrow(expect.objectContaining({ code: ERROR_CODES.CORRUPT_MESSAGE }));
  });
});

describe('encodeRecordBatch', () => {
  const records: RecordInput[] = [
    { timestamp: 1_700_000_000_500, key: text('a'), value: text('first'), headers: [{ key: 'h', value: text('1') }, { key: 'h', value: text('2') }] },
    { timestamp: 1_700_000_000_100, key: null, value: Buffer.alloc(2048, 1) },
    { timestamp: 1_700_000_000_900, key: text('c'), value: null, headers: [{ key: 'null-valued', value: null }] },
  ];

  it("writes a batch kafkajs's decoder reads back field by field", async () => {
    const bytes = encodeRecordBatch({ baseOffset: 500, partitionLeaderEpoch: 9, producerId: 77, producerEpoch: 2, baseSequence: 40, transactional: true, records });
    const decoded = await decodeWithKafkajs(bytes);
    expect(decoded).toMatchObject({
      firstOffset: '500',
      partitionLeaderEpoch: 9,
      firstTimestamp: '1700000000500',
      maxTimestamp: '1700000000900',
      producerId: '77',
      producerEpoch: 2,
      firstSequence: 40,
      lastOffsetDelta: 2,
      inTransaction: true,
      isControlBatch: false,
    });
    expect(decoded.records.map((record) => [record.offset, record.timestamp, record.key?.toString() ?? null])).toEqual([
      ['500', '1700000000500', 'a'],
      ['501', '1700000000100', null],
      ['502', '1700000000900', 'c'],
    ]);
    expect(decoded.records[0]!.headers).toEqual({ h: [text('1'), text('2')] });
    expect(decoded.records[1]!.value).toEqual(Buffer.alloc(2048, 1));
    expect(decoded.records[2]!.value).toBeNull();
    expect(decoded.records[2]!.headers).toEqual({ 'null-valued': null });
  });

  it('round-trips through splitRecordBatches and decodeRecords', () => {
    const bytes = encodeRecordBatch({ baseOffset: 3, records });
    const [batch] = splitRecordBatches(bytes);
    expect(batch).toMatchObject({ baseOffset: 3, partitionLeaderEpoch: -1, producerId: -1, producerEpoch: -1, baseSequence: -1, recordCount: 3, baseTimestamp: 1_700_000_000_500, maxTimestamp: 1_700_000_000_900 });
    const decoded = decodeRecords(batch!);
    expect(decoded).toEqual(
      records.map((record, index) => ({ offset: 3 + index, timestamp: record.timestamp, key: record.key && new Uint8Array(record.key), value: record.value && new Uint8Array(record.value), headers: (record.headers ?? []).map((header) => ({ key: header.key, value: header.value && new Uint8Array(header.value) })) })),
    );
  });

  it('refuses an empty batch', () => {
    expect(() => encodeRecordBatch({ baseOffset: 0, records: [] })).toThrow('at least one record');
  });
});

describe('setBaseOffset and setPartitionLeaderEpoch', () => {
  it('rewrite the header in place and leave the CRC valid', async () => {
    const bytes = await kafkajsRecordBatch({ messages: MESSAGES, firstOffset: 0 });
    const crcBefore = readRecordBatch(bytes).crc;
    setBaseOffset(bytes, 2 ** 40);
    setPartitionLeaderEpoch(bytes, 12);
    const batch = readRecordBatch(bytes);
    expect(batch).toMatchObject({ baseOffset: 2 ** 40, partitionLeaderEpoch: 12, crc: crcBefore });
    const decoded = await decodeWithKafkajs(bytes);
    expect(decoded.partitionLeaderEpoch).toBe(12);
    expect(decoded.records.map((record) => record.offset)).toEqual([String(2 ** 40), String(2 ** 40 + 1), String(2 ** 40 + 2)]);
  });

  it('refuse values a header cannot hold', () => {
    const bytes = encodeRecordBatch({ baseOffset: 0, records: [{ timestamp: 0, key: null, value: null }] });
    expect(() => setBaseOffset(bytes, -1)).toThrow();
    expect(() => setBaseOffset(bytes, 2 ** 53)).toThrow();
    expect(() => setPartitionLeaderEpoch(bytes, -2)).toThrow();
    expect(() => setBaseOffset(bytes.subarray(0, 20), 1)).toThrow();
  });
});

describe('refusals', () => {
  const valid = encodeRecordBatch({ baseOffset: 0, records: [{ timestamp: 1, key: text('k'), value: text('v') }, { timestamp: 2, key: null, value: text('w') }] });
  const copy = (): Uint8Array => new Uint8Array(valid);
  const change = (edit: (bytes: Uint8Array, view: DataView) => void, freshCrc = false) => (): Uint8Array => {
    const bytes = copy();
    edit(bytes, new DataView(bytes.buffer));
    return freshCrc ? withFreshCrc(bytes) : bytes;
  };
  const { CORRUPT_MESSAGE, UNSUPPORTED_FOR_MESSAGE_FORMAT } = ERROR_CODES;

  it.each<{ name: string; build: () => Uint8Array; code: number; message: RegExp; position?: number }>([
    { name: 'a batch cut by one byte', build: () => valid.subarray(0, valid.byteLength - 1), code: CORRUPT_MESSAGE, message: /partial batch/ },
    { name: 'a set cut inside the offset and length', build: () => valid.subarray(0, 10), code: CORRUPT_MESSAGE, message: /partial batch/ },
    { name: 'a partial batch after a whole one', build: () => concat(valid, valid.subarray(0, 30)), code: CORRUPT_MESSAGE, message: /partial batch/, position: valid.byteLength },
    { name: 'three bytes of garbage after a batch', build: () => concat(valid, new Uint8Array([1, 2, 3])), code: CORRUPT_MESSAGE, message: /partial batch/, position: valid.byteLength },
    { name: 'a negative batch length', build: change((_, view) => view.setInt32(8, -5)), code: CORRUPT_MESSAGE, message: /negative batch length/ },
    { name: 'magic 1 (a legacy message set)', build: change((bytes) => (bytes[16] = 1)), code: UNSUPPORTED_FOR_MESSAGE_FORMAT, message: /message format v1/ },
    { name: 'magic 0 (a legacy message set)', build: change((bytes) => (bytes[16] = 0)), code: UNSUPPORTED_FOR_MESSAGE_FORMAT, message: /message format v0/ },
    { name: 'magic 3', build: change((bytes) => (bytes[16] = 3)), code: CORRUPT_MESSAGE, message: /unknown magic 3/ },
    { name: 'a batch length shorter than the v2 header', build: () => { const bytes = copy().subarray(0, 50); new DataView(bytes.buffer).setInt32(8, 38); return bytes; }, code: CORRUPT_MESSAGE, message: /shorter than the 49-byte/ },
    { name: 'a flipped bit in a value', build: change((bytes) => (bytes[bytes.byteLength - 2]! ^= 0x01)), code: CORRUPT_MESSAGE, message: /CRC-32C mismatch/ },
    { name: 'a changed producer id', build: change((bytes) => (bytes[50]! ^= 0x10)), code: CORRUPT_MESSAGE, message: /CRC-32C mismatch/ },
    { name: 'a changed attribute', build: change((bytes) => (bytes[22]! ^= 0x08)), code: CORRUPT_MESSAGE, message: /CRC-32C mismatch/ },
    { name: 'a wrong CRC', build: change((bytes) => (bytes[17]! ^= 0x80)), code: CORRUPT_MESSAGE, message: /CRC-32C mismatch/ },
    { name: 'compression codec 5', build: change((_, view) => view.setInt16(21, 5), true), code: CORRUPT_MESSAGE, message: /unknown compression codec 5/ },
    { name: 'a record count of 3 with a last offset delta of 1', build: change((_, view) => view.setInt32(57, 3), true), code: CORRUPT_MESSAGE, message: /does not match last offset delta 1/ },
    { name: 'a record count of 0', build: change((_, view) => { view.setInt32(57, 0); view.setInt32(23, -1); }, true), code: CORRUPT_MESSAGE, message: /at least one record/ },
    { name: 'a base offset beyond the safe integers', build: change((_, view) => view.setBigInt64(0, 2n ** 60n)), code: CORRUPT_MESSAGE, message: /base offset .* safe integers/ },
  ])('refuses $name', ({ build, code, message, position }) => {
    let thrown: unknown;
    try {
      splitRecordBatches(build());
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(InvalidRecordBatchError);
    expect(thrown).toMatchObject({ name: 'InvalidRecordBatchError', code, position: position ?? 0 });
    expect((thrown as Error).message).toMatch(message);
  });

  it('refuses bytes after a batch that must stand alone', () => {
    expect(() => readRecordBatch(concat(valid, valid))).toThrow(/bytes after the record batch/);
  });

  it('accepts the unchanged batch the refusals start from', () => {
    expect(splitRecordBatches(valid)).toHaveLength(1);
  });
});

describe('offsetCountOf', () => {
  it('reads the offsets a batch takes from its header, as a produce counts them', () => {
    const records = Array.from({ length: 5 }, (_, index) => ({ key: null, value: new TextEncoder().encode(`v${index}`), headers: [], timestamp: 1_000 + index }));
    expect(offsetCountOf(encodeRecordBatch({ baseOffset: 42, records }))).toBe(5);
    expect(offsetCountOf(encodeRecordBatch({ baseOffset: 0, records: records.slice(0, 1) }))).toBe(1);
  });

  it('counts nothing for bytes too short to hold the last offset delta', () => {
    expect(offsetCountOf(new Uint8Array(26))).toBe(0);
  });
});

describe('encodeTransactionMarker', () => {
  it.each([
    [true, 'commit', 1],
    [false, 'abort', 0],
  ])('a %s marker is a transactional control batch kafkajs reads as such, with the control type in its key', async (commit, type, code) => {
    // Proves consumers (kafkajs here) see the marker as Kafka writes it: they skip control batches, and a
    // read_committed one learns from it where an aborted transaction ends.
    const marker = encodeTransactionMarker({ producerId: 4_000_000_000, producerEpoch: 3, commit, coordinatorEpoch: 9, timestamp: 1_700_000_000_000 });
    const decoded = await decodeWithKafkajs(marker);
    expect(decoded).toMatchObject({ inTransaction: true, isControlBatch: true, producerId: '4000000000', producerEpoch: 3, firstSequence: -1, lastOffsetDelta: 0 });
    expect(decoded.records).toHaveLength(1);
    expect([...decoded.records[0]!.key!]).toEqual([0, 0, 0, code]);
    expect([...decoded.records[0]!.value!]).toEqual([0, 0, 0, 0, 0, 9]);
    expect(transactionMarkerTypeOf(readRecordBatch(marker))).toBe(type);
  });

  it('a batch of records is no marker', () => {
    expect(transactionMarkerTypeOf(readRecordBatch(encodeRecordBatch({ baseOffset: 0, records: [{ timestamp: 1, key: null, value: null }] })))).toBeNull();
  });
});

