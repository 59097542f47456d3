import { KafkaDecodeError, KafkaReader } from '../wire/reader';
import { ERROR_CODES } from '../wire/codes';
import { bytesEncoder, kafkajsApi, KafkajsCompression, KafkajsLong, type KafkajsMessage, kafkajsRecordBatch, prefixesNotRefused, wholeBodyDecoder } from './kafka-oracle.fixture';
import { decodeProduceRequest, encodeProduceResponse, PRODUCE_VERSIONS, type ProduceResponse } from './produce';
import { decodeRecords, splitRecordBatches } from './record-batch';

// kafkajs is the oracle: its client-side request encoders and response decoders.
const kafkajs = kafkajsApi('produce');
const decoded = wholeBodyDecoder(decodeProduceRequest);
const encoded = bytesEncoder(encodeProduceResponse);

const KAFKAJS_VERSIONS = [3, 4, 5, 6, 7];

const ORDERS: KafkajsMessage[] = [
  { key: Buffer.from('order-1'), value: Buffer.from('{"total":3}'), timestamp: 1_700_000_000_200, headers: { source: Buffer.from('web') } },
  { key: Buffer.from('order-2'), value: null, timestamp: 1_700_000_000_100 },
];
const AUDIT: KafkajsMessage[] = [{ key: null, value: Buffer.from('login'), timestamp: 1_700_000_000_300 }];

interface ProducerFields {
  transactionalId: string | null;
  producerId: number;
  producerEpoch: number;
  compression: number;
}

const topicData = [
  { topic: 'orders', partitions: [{ partition: 0, firstSequence: 10, messages: ORDERS }, { partition: 3, firstSequence: 0, messages: AUDIT }] },
  { topic: 'audit', partitions: [{ partition: 1, firstSequence: 5, messages: AUDIT }] },
];

async function kafkajsRequestBytes(version: number, producer: ProducerFields): Promise<Uint8Array> {
  const bytes = await kafkajs.requestBytes(version, { acks: -1, timeout: 30_000, topicData, ...producer, producerId: KafkajsLong.fromValue(producer.producerId) });
  return new Uint8Array(bytes);
}

/** The batch kafkajs puts into one partition's record set, built as requests/produce/v3/request.js builds it. */
async function kafkajsPartitionBatch(messages: KafkajsMessage[], firstSequence: number, producer: ProducerFields): Promise<Uint8Array> {
  // kafkajs sorts the timestamps as strings; these all have 13 digits, so that is numeric order, and the
  // last of them is the largest.
  const timestamps = messages.map((message) => message.timestamp).sort();
  return kafkajsRecordBatch({
    messages,
    compression: producer.compression,
    firstTimestamp: timestamps[0]!,
    producerId: producer.producerId,
    producerEpoch: producer.producerEpoch,
    firstSequence,
    transactional: producer.transactionalId !== null,
  });
}

describe('decodeProduceRequest against kafkajs', () => {
  const producers: { name: string; producer: ProducerFields }[] = [
    { name: 'a transactional producer, uncompressed', producer: { transactionalId: 'tx-orders', producerId: 4242, producerEpoch: 3, compression: KafkajsCompression.None } },
    { name: 'a plain producer, gzip', producer: { transactionalId: null, producerId: -1, producerEpoch: 0, compression: KafkajsCompression.GZIP } },
  ];
  const cases = KAFKAJS_VERSIONS.flatMap((version) => producers.map(({ name, producer }) => ({ version, name, producer })));

  // Each row proves that a produce request as kafkajs sends it decodes to its fields, with each partition's
  // record set handed over byte for byte as kafkajs encoded it.
  it.each(cases)('v$version, $name', async ({ version, producer }) => {
    const frame = await kafkajsRequestBytes(version, producer);
    const request = decoded(frame, version);
    expect(request).toEqual({
      transactionalId: producer.transactionalId,
      acks: -1,
      timeoutMs: 30_000,
      topicData: [
        { name: 'orders', partitionData: [{ index: 0, records: expect.any(Uint8Array) }, { index: 3, records: expect.any(Uint8Array) }] },
        { name: 'audit', partitionData: [{ index: 1, records: expect.any(Uint8Array) }] },
      ],
    });
    const partitions = request.topicData.flatMap((topic) => topic.partitionData);
    const expected = [
      await kafkajsPartitionBatch(ORDERS, 10, producer),
      await kafkajsPartitionBatch(AUDIT, 0, producer),
      await kafkajsPartitionBatch(AUDIT, 5, producer),
    ];
    partitions.forEach((partition, index) => {
      expect(Buffer.from(partition.records!)).toEqual(Buffer.from(expected[index]!));
      // A view of the frame, not a copy.
      expect(partition.records!.buffer).toBe(frame.buffer);
    });

    const [batch, ...more] = splitRecordBatches(partitions[0]!.records!);
    expect(more).toEqual([]);
    expect(batch).toMatchObject({
      baseOffset: 0,
      recordCount: 2,
      producerId: producer.producerId,
      producerEpoch: producer.producerEpoch,
      baseSequence: 10,
      transactional: producer.transactionalId !== null,
      compression: producer.compression === KafkajsCompression.GZIP ? 'gzip' : 'none',
      baseTimestamp: 1_700_000_000_100,
      maxTimestamp: 1_700_000_000_200,
    });
    if (batch!.compression === 'none') {
      expect(decodeRecords(batch!).map((record) => [record.offset, record.timestamp, Buffer.from(record.key!).toString(), record.value && Buffer.from(record.value).toString()])).toEqual([
        [0, 1_700_000_000_200, 'order-1', '{"total":3}'],
        [1, 1_700_000_000_100, 'order-2', null],
      ]);
    }
  });

  it('refuses every truncation of a kafkajs request with KafkaDecodeError', async () => {
    const frame = await kafkajsRequestBytes(7, producers[0]!.producer);
    expect(prefixesNotRefused(frame, (reader) => decodeProduceRequest(reader, 7))).toEqual([]);
  });

  it('refuses bytes after the body', async () => {
    const frame = await kafkajsRequestBytes(7, producers[0]!.producer);
    const longer = new Uint8Array(frame.byteLength + 1);
    longer.set(frame);
    expect(() => decodeProduceRequest(new KafkaReader(longer), 7)).toThrow(/1 bytes after the request body/);
  });

  it.each([0, 2, 9, 3.5])('refuses version %p with KafkaDecodeError', async (version) => {
    const frame = await kafkajsRequestBytes(7, producers[0]!.producer);
    expect(() => decodeProduceRequest(new KafkaReader(frame), version)).toThrow(KafkaDecodeError);
  });
});

describe('encodeProduceResponse against kafkajs', () => {
  const response: ProduceResponse = {
    responses: [
      {
        name: 'orders',
        partitionResponses: [
          { index: 0, errorCode: ERROR_CODES.NONE, baseOffset: 2 ** 40, logAppendTimeMs: -1, logStartOffset: 12 },
          { index: 3, errorCode: ERROR_CODES.NONE, baseOffset: 7, logAppendTimeMs: 1_700_000_000_999, logStartOffset: 0 },
        ],
      },
      { name: 'audit', partitionResponses: [{ index: 1, errorCode: ERROR_CODES.NONE, baseOffset: 0, logAppendTimeMs: -1, logStartOffset: -1 }] },
    ],
    throttleTimeMs: 25,
  };

  // Each row proves that kafkajs's response decoder reads back what was encoded, version fields included.
  it.each(KAFKAJS_VERSIONS)('v%i', async (version) => {
    const { decode, parse } = kafkajs.response(version);
    const decodedByKafkajs = await parse(await decode(encoded(version, response)));
    const withLogStart = (fields: object, logStartOffset: string) => (version >= 5 ? { ...fields, logStartOffset } : fields);
    expect(decodedByKafkajs.topics).toEqual([
      {
        topicName: 'orders',
        partitions: [
          withLogStart({ partition: 0, errorCode: 0, baseOffset: String(2 ** 40), logAppendTime: '-1' }, '12'),
          withLogStart({ partition: 3, errorCode: 0, baseOffset: '7', logAppendTime: '1700000000999' }, '0'),
        ],
      },
      { topicName: 'audit', partitions: [withLogStart({ partition: 1, errorCode: 0, baseOffset: '0', logAppendTime: '-1' }, '-1')] },
    ]);
    // From v6 kafkajs reads the throttle time as one the client must apply itself (KIP-219).
    expect(version >= 6 ? decodedByKafkajs.clientSideThrottleTime : decodedByKafkajs.throttleTime).toBe(25);
  });

  it('carries a partition error code to kafkajs', async () => {
    const { decode, parse } = kafkajs.response(7);
    const failed: ProduceResponse = {
      responses: [{ name: 'orders', partitionResponses: [{ index: 0, errorCode: ERROR_CODES.NOT_LEADER_OR_FOLLOWER, baseOffset: -1, logAppendTimeMs: -1, logStartOffset: -1 }] }],
      throttleTimeMs: 0,
    };
    await expect(parse(await decode(encoded(7, failed)))).rejects.toMatchObject({ type: 'NOT_LEADER_FOR_PARTITION' });
  });

  it.each([2, 9])('refuses to encode version %i', (version) => {
    expect(() => encoded(version, response)).toThrow(RangeError);
  });
});

describe('Produce v8 (kafkajs stops at v7): vectors built by hand from ProduceRequest.json and ProduceResponse.json', () => {
  const hex = (...fields: string[]): string => fields.join('');
  const text = (value: string): string => Buffer.from(value).toString('hex');

  it('decodes a v8 request, whose layout is v3’s', () => {
    const frame = hex(
      'ffff', // transactional_id null
      'ffff', // acks -1
      '00007530', // timeout_ms 30000
      '00000001', // one topic
      '0006', text('orders'),
      '00000002', // two partitions
      '00000000', '00000003', text('abc'), // index 0, records "abc"
      '00000007', 'ffffffff', // index 7, records null
    );
    const reader = new KafkaReader(new Uint8Array(Buffer.from(frame, 'hex')));
    expect(decodeProduceRequest(reader, 8)).toEqual({
      transactionalId: null,
      acks: -1,
      timeoutMs: 30_000,
      topicData: [{ name: 'orders', partitionData: [{ index: 0, records: new Uint8Array([0x61, 0x62, 0x63]) }, { index: 7, records: null }] }],
    });
  });

  const response: ProduceResponse = {
    responses: [
      {
        name: 'orders',
        partitionResponses: [
          { index: 0, errorCode: ERROR_CODES.NONE, baseOffset: 42, logAppendTimeMs: -1, logStartOffset: 0 },
          {
            index: 7,
            errorCode: ERROR_CODES.INVALID_RECORD,
            baseOffset: -1,
            logAppendTimeMs: -1,
            logStartOffset: -1,
            recordErrors: [
              { batchIndex: 1, batchIndexErrorMessage: 'bad' },
              { batchIndex: 4, batchIndexErrorMessage: null },
            ],
            errorMessage: '2 bad records',
          },
        ],
      },
    ],
    throttleTimeMs: 5,
  };

  /** The response above by hand; v7 lacks the record errors and error message of each partition. */
  function expectedResponse(version: 7 | 8): string {
    const since8 = (...fields: string[]): string => (version >= 8 ? hex(...fields) : '');
    return hex(
      '00000001', // one topic
      '0006', text('orders'),
      '00000002', // two partitions
      '00000000', '0000', '000000000000002a', 'ffffffffffffffff', '0000000000000000', // index 0, NONE, base offset 42, append time -1, log start 0
      since8('00000000', 'ffff'), // no record errors, error message null
      '00000007', '0057', 'ffffffffffffffff', 'ffffffffffffffff', 'ffffffffffffffff', // index 7, INVALID_RECORD (87), -1, -1, -1
      since8(
        '00000002', // two record errors
        '00000001', '0003', text('bad'),
        '00000004', 'ffff',
        '000d', text('2 bad records'),
      ),
      '00000005', // throttle_time_ms
    );
  }

  it.each([7, 8] as const)('encodes a response with record errors and an error message at v%i', (version) => {
    expect(Buffer.from(encoded(version, response)).toString('hex')).toBe(expectedResponse(version));
  });
});
