import { ERROR_CODES } from '../wire/codes';
import { KafkaDecodeError, KafkaReader } from '../wire/reader';
import { KafkaWriter } from '../wire/writer';
import { decodeFetchRequest, encodeFetchResponse, FETCH_VERSIONS, type FetchRequest, type FetchResponse } from './fetch';
import { bytesEncoder, kafkajsApi, KafkajsCompression, kafkajsRecordBatch, prefixesNotRefused, wholeBodyDecoder } from './kafka-oracle.fixture';
import { encodeRecordBatch, setBaseOffset } from './record-batch';

// kafkajs is the oracle: its client-side request encoders and response decoders.
const kafkajs = kafkajsApi('fetch');
const decoded = wholeBodyDecoder(decodeFetchRequest);
const encoded = bytesEncoder(encodeFetchResponse);

const KAFKAJS_VERSIONS = [4, 5, 6, 7, 8, 9, 10, 11];

const FETCH_OFFSET = 2 ** 40;

async function kafkajsRequestBytes(version: number): Promise<Uint8Array> {
  const bytes = await kafkajs.requestBytes(version, {
    replicaId: -1,
    maxWaitTime: 500,
    minBytes: 1,
    maxBytes: 52_428_800,
    isolationLevel: 1,
    sessionId: 12,
    sessionEpoch: 3,
    rackId: 'rack-a',
    topics: [
      {
        topic: 'orders',
        partitions: [
          { partition: 0, currentLeaderEpoch: 5, fetchOffset: String(FETCH_OFFSET), logStartOffset: 7, maxBytes: 1_048_576 },
          { partition: 2, currentLeaderEpoch: 6, fetchOffset: '0', logStartOffset: 0, maxBytes: 65_536 },
        ],
      },
      { topic: 'audit', partitions: [{ partition: 1, currentLeaderEpoch: 0, fetchOffset: '99', logStartOffset: 1, maxBytes: 1 }] },
    ],
    forgottenTopics: [{ topic: 'old', partitions: [1, 2] }],
  });
  return new Uint8Array(bytes);
}

/** What each version carries of the request above; the rest takes the spec's defaults. */
function expectedRequest(version: number): FetchRequest {
  const since = <T>(first: number, value: T, otherwise: T): T => (version >= first ? value : otherwise);
  return {
    replicaId: -1,
    maxWaitMs: 500,
    minBytes: 1,
    maxBytes: 52_428_800,
    isolationLevel: 1,
    sessionId: since(7, 12, 0),
    sessionEpoch: since(7, 3, -1),
    topics: [
      {
        topic: 'orders',
        partitions: [
          { partition: 0, currentLeaderEpoch: since(9, 5, -1), fetchOffset: FETCH_OFFSET, logStartOffset: since(5, 7, -1), partitionMaxBytes: 1_048_576 },
          { partition: 2, currentLeaderEpoch: since(9, 6, -1), fetchOffset: 0, logStartOffset: since(5, 0, -1), partitionMaxBytes: 65_536 },
        ],
      },
      { topic: 'audit', partitions: [{ partition: 1, currentLeaderEpoch: since(9, 0, -1), fetchOffset: 99, logStartOffset: since(5, 1, -1), partitionMaxBytes: 1 }] },
    ],
    forgottenTopicsData: since(7, [{ topic: 'old', partitions: [1, 2] }], []),
    rackId: since(11, 'rack-a', ''),
  };
}

describe('decodeFetchRequest against kafkajs', () => {
  // Each row proves that a fetch as kafkajs sends it decodes to its fields, with the defaults of the spec
  // for the fields the version lacks.
  it.each(KAFKAJS_VERSIONS)('v%i', async (version) => {
    expect(decoded(await kafkajsRequestBytes(version), version)).toEqual(expectedRequest(version));
  });

  it.each(KAFKAJS_VERSIONS)('refuses every truncation of a kafkajs v%i request with KafkaDecodeError', async (version) => {
    const frame = await kafkajsRequestBytes(version);
    expect(prefixesNotRefused(frame, (reader) => decodeFetchRequest(reader, version))).toEqual([]);
  });

  it('refuses an unknown isolation level', async () => {
    const frame = await kafkajsRequestBytes(11);
    frame[16] = 2; // replica_id, max_wait_ms, min_bytes, max_bytes, then isolation_level
    expect(() => decodeFetchRequest(new KafkaReader(frame), 11)).toThrow(/isolation_level: unknown level 2/);
  });

  it('refuses bytes after the body', async () => {
    const frame = await kafkajsRequestBytes(6);
    const longer = new Uint8Array(frame.byteLength + 2);
    longer.set(frame);
    expect(() => decodeFetchRequest(new KafkaReader(longer), 6)).toThrow(/2 bytes after the request body/);
  });

  it.each([0, 3, 12])('refuses version %i with KafkaDecodeError', async (version) => {
    const frame = await kafkajsRequestBytes(11);
    expect(() => decodeFetchRequest(new KafkaReader(frame), version)).toThrow(KafkaDecodeError);
  });
});

/** Three stored batches at offsets 100-101, 102-103 and 104-105: one of ours, one kafkajs, one kafkajs gzip. */
async function storedBatches(): Promise<Uint8Array[]> {
  const ours = encodeRecordBatch({
    baseOffset: 100,
    records: [
      { timestamp: 1_700_000_000_000, key: Buffer.from('k100'), value: Buffer.from('v100'), headers: [{ key: 'h', value: Buffer.from('x') }] },
      { timestamp: 1_700_000_000_001, key: null, value: Buffer.from('v101') },
    ],
  });
  const kafkajsBatch = async (compression: number, first: number): Promise<Uint8Array> => {
    const messages = [first, first + 1].map((offset, index) => ({ key: Buffer.from(`k${offset}`), value: Buffer.from(`v${offset}`), timestamp: 1_700_000_000_002 + index }));
    const batch = await kafkajsRecordBatch({ compression, messages });
    // As mink stores a produced batch: its base offset assigned in place.
    setBaseOffset(batch, first);
    return batch;
  };
  return [ours, await kafkajsBatch(KafkajsCompression.None, 102), await kafkajsBatch(KafkajsCompression.GZIP, 104)];
}

function fetchResponse(batches: Uint8Array[]): FetchResponse {
  return {
    throttleTimeMs: 25,
    errorCode: ERROR_CODES.NONE,
    sessionId: 12,
    responses: [
      {
        topic: 'orders',
        partitions: [
          { partitionIndex: 0, errorCode: ERROR_CODES.NONE, highWatermark: 110, lastStableOffset: 108, logStartOffset: 3, abortedTransactions: [{ producerId: 7, firstOffset: 100 }], preferredReadReplica: 2, records: batches },
          { partitionIndex: 1, errorCode: ERROR_CODES.NONE, highWatermark: 0, lastStableOffset: 0, logStartOffset: 0, abortedTransactions: null, records: null },
          { partitionIndex: 2, errorCode: ERROR_CODES.NONE, highWatermark: 5, lastStableOffset: 5, logStartOffset: 5, records: [] },
        ],
      },
      { topic: 'audit', partitions: [{ partitionIndex: 3, errorCode: ERROR_CODES.NONE, highWatermark: 2 ** 40, lastStableOffset: 2 ** 40, logStartOffset: 0, records: batches.slice(0, 1) }] },
    ],
  };
}

describe('encodeFetchResponse against kafkajs', () => {
  // Each row proves that kafkajs reads the partition fields and the stored batches (ours, kafkajs's own,
  // and a gzip one served as received) back as messages at their offsets, partitions after them included.
  it.each(KAFKAJS_VERSIONS)('v%i', async (version) => {
    const { decode, parse } = kafkajs.response(version);
    const decodedByKafkajs = await parse(await decode(encoded(version, fetchResponse(await storedBatches()))));

    const since = <T extends object>(first: number, fields: T): T | object => (version >= first ? fields : {});
    expect(decodedByKafkajs).toMatchObject({
      ...(version >= 8 ? { throttleTime: 0, clientSideThrottleTime: 25 } : { throttleTime: 25 }),
      ...since(7, { errorCode: 0, sessionId: 12 }),
    });
    const partition = (fields: { partition: number; highWatermark: string; lastStableOffset: string; lastStartOffset: string; abortedTransactions: object[]; preferredReadReplica: number }) => ({
      partition: fields.partition,
      errorCode: 0,
      highWatermark: fields.highWatermark,
      lastStableOffset: fields.lastStableOffset,
      ...since(5, { lastStartOffset: fields.lastStartOffset }), // kafkajs's spelling of log_start_offset
      abortedTransactions: fields.abortedTransactions,
      ...since(11, { preferredReadReplica: fields.preferredReadReplica }),
    });
    const [orders, audit] = decodedByKafkajs.responses;
    expect(orders.topicName).toBe('orders');
    expect(orders.partitions.map(({ messages, ...fields }: { messages: unknown }) => fields)).toEqual([
      partition({ partition: 0, highWatermark: '110', lastStableOffset: '108', lastStartOffset: '3', abortedTransactions: [{ producerId: '7', firstOffset: '100' }], preferredReadReplica: 2 }),
      partition({ partition: 1, highWatermark: '0', lastStableOffset: '0', lastStartOffset: '0', abortedTransactions: [], preferredReadReplica: -1 }),
      partition({ partition: 2, highWatermark: '5', lastStableOffset: '5', lastStartOffset: '5', abortedTransactions: [], preferredReadReplica: -1 }),
    ]);
    const messages = orders.partitions[0].messages as { offset: string; key: Buffer | null; value: Buffer; timestamp: string; headers: object }[];
    expect(messages.map((message) => [message.offset, message.key?.toString() ?? null, message.value.toString()])).toEqual([
      ['100', 'k100', 'v100'],
      ['101', null, 'v101'],
      ['102', 'k102', 'v102'],
      ['103', 'k103', 'v103'],
      ['104', 'k104', 'v104'],
      ['105', 'k105', 'v105'],
    ]);
    expect(messages[0]).toMatchObject({ timestamp: '1700000000000', headers: { h: Buffer.from('x') } });
    expect(orders.partitions[1].messages).toEqual([]);
    expect(orders.partitions[2].messages).toEqual([]);

    expect(audit.topicName).toBe('audit');
    expect(audit.partitions[0]).toMatchObject({ partition: 3, highWatermark: String(2 ** 40) });
    expect(audit.partitions[0].messages.map((message: { offset: string }) => message.offset)).toEqual(['100', '101']);
  });

  it('carries a partition error code to kafkajs', async () => {
    const { decode, parse } = kafkajs.response(11);
    const response: FetchResponse = {
      throttleTimeMs: 0,
      responses: [{ topic: 'orders', partitions: [{ partitionIndex: 0, errorCode: ERROR_CODES.OFFSET_OUT_OF_RANGE, highWatermark: -1, lastStableOffset: -1, logStartOffset: -1, records: null }] }],
    };
    await expect(parse(await decode(encoded(11, response)))).rejects.toMatchObject({ name: 'KafkaJSOffsetOutOfRange', topic: 'orders', partition: 0 });
  });

  it('writes each stored batch as a part of its own, after one length for them all', async () => {
    const batches = await storedBatches();
    const writer = new KafkaWriter();
    encodeFetchResponse(writer, 11, fetchResponse(batches));
    const parts = writer.finish();
    for (const batch of batches) expect(parts.filter((part) => part === batch)).toHaveLength(batch === batches[0] ? 2 : 1);
    // The part before the first batch ends with the record set's length: the three batches together.
    const before = parts[parts.indexOf(batches[0]!) - 1]!;
    const length = new DataView(before.buffer, before.byteOffset + before.byteLength - 4, 4).getInt32(0);
    expect(length).toBe(batches.reduce((total, batch) => total + batch.byteLength, 0));
  });

  it.each([3, 12])('refuses to encode version %i', (version) => {
    expect(() => encoded(version, { throttleTimeMs: 0, responses: [] })).toThrow(RangeError);
  });
});

describe('FETCH_VERSIONS', () => {
  it('covers the versions kafkajs speaks', () => {
    expect(FETCH_VERSIONS).toEqual({ min: KAFKAJS_VERSIONS[0], max: KAFKAJS_VERSIONS[KAFKAJS_VERSIONS.length - 1] });
  });
});
