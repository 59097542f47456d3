/**
 * Proves the DeleteRecords codec reads what clients send and writes what they read, for every version
 * mink serves (0-1): against kafkajs's own request encoders and response decoders, and against byte
 * vectors written from the spec's field list.
 */
import { ERROR_CODES } from '../wire/codes';
import { KafkaDecodeError, KafkaReader } from '../wire/reader';
import { KafkaWriter } from '../wire/writer';
import { decodeDeleteRecordsRequest, DELETE_RECORDS_HIGH_WATERMARK, encodeDeleteRecordsResponse, type DeleteRecordsRequest, type DeleteRecordsResponse } from './delete-records';
import { bytesEncoder, kafkajsApi, kafkajsModule, prefixesNotRefused, wholeBodyDecoder } from './kafka-oracle.fixture';

const kafkajs = kafkajsApi('deleteRecords');
const decoded = wholeBodyDecoder(decodeDeleteRecordsRequest);
const encoded = bytesEncoder(encodeDeleteRecordsResponse);
const ALL_VERSIONS = [0, 1];

/**
 * kafkajs's DeleteRecords response decoder of `version`. Unlike the other APIs' it is a factory of the
 * request's topics (its parse reports the offset asked for with each failed partition), which the
 * fixture's `kafkajsApi(...).response` does not call, so it is reached here directly.
 */
function kafkajsResponse(version: number, requestTopics: object[]): { decode(bytes: Buffer): Promise<any>; parse(decoded: any): Promise<any> } {
  return kafkajsModule(`protocol/requests/deleteRecords/v${version}/response`)({ topics: requestTopics });
}

/** The request as DeleteRecordsRequest.json lays it out (the same in versions 0-1), written field by field. */
function specRequestBytes(request: DeleteRecordsRequest): Uint8Array {
  const writer = new KafkaWriter().int32(request.topics.length);
  for (const topic of request.topics) {
    writer.string(topic.name).int32(topic.partitions.length);
    for (const partition of topic.partitions) writer.int32(partition.partitionIndex).int64(partition.offset);
  }
  return writer.int32(request.timeoutMs).toBytes();
}

/** The response as DeleteRecordsResponse.json lays it out (the same in versions 0-1), written field by field; every field must be given. */
function specResponseBytes(response: DeleteRecordsResponse): Uint8Array {
  const writer = new KafkaWriter().int32(response.throttleTimeMs!).int32(response.topics.length);
  for (const topic of response.topics) {
    writer.string(topic.name).int32(topic.partitions.length);
    for (const partition of topic.partitions) writer.int32(partition.partitionIndex).int64(partition.lowWatermark).int16(partition.errorCode);
  }
  return writer.toBytes();
}

/** An offset above 2^32, so that both halves of an int64 are checked. */
const OFFSET_LARGE = 2 ** 40 + 5;

const REQUEST: DeleteRecordsRequest = {
  topics: [
    {
      name: 'orders',
      partitions: [
        { partitionIndex: 0, offset: OFFSET_LARGE },
        { partitionIndex: 3, offset: DELETE_RECORDS_HIGH_WATERMARK },
      ],
    },
    { name: 'payments', partitions: [{ partitionIndex: 1, offset: 42 }] },
  ],
  timeoutMs: 7_000,
};

/** REQUEST in the shape kafkajs's request encoders take (offsets as strings, as its admin client passes them). */
const KAFKAJS_TOPICS = REQUEST.topics.map((topic) => ({
  topic: topic.name,
  partitions: topic.partitions.map((partition) => ({ partition: partition.partitionIndex, offset: String(partition.offset) })),
}));

/** Sorted by name, as kafkajs sorts what it decodes; the first topic holds the error, as kafkajs's parse reports only that one. */
const RESPONSE: DeleteRecordsResponse = {
  throttleTimeMs: 5,
  topics: [
    {
      name: 'orders',
      partitions: [
        { partitionIndex: 0, lowWatermark: OFFSET_LARGE, errorCode: ERROR_CODES.NONE },
        { partitionIndex: 3, lowWatermark: -1, errorCode: ERROR_CODES.OFFSET_OUT_OF_RANGE },
      ],
    },
    { name: 'payments', partitions: [{ partitionIndex: 1, lowWatermark: 42, errorCode: ERROR_CODES.NONE }] },
  ],
};

describe('decodeDeleteRecordsRequest', () => {
  it.each(ALL_VERSIONS)('reads every field kafkajs sends in version %i', async (version) => {
    const body: Uint8Array = await kafkajs.requestBytes(version, { topics: KAFKAJS_TOPICS, timeout: REQUEST.timeoutMs });
    expect(decoded(body, version)).toEqual(REQUEST);
  });

  it.each(ALL_VERSIONS)('reads version %i from bytes built from the spec, a topic without partitions as none', (version) => {
    const request = { topics: [...REQUEST.topics, { name: 'empty', partitions: [] }], timeoutMs: 0 };
    expect(decoded(specRequestBytes(request), version)).toEqual(request);
  });

  it.each(ALL_VERSIONS)('refuses every truncation of a version %i request with KafkaDecodeError', (version) => {
    expect(prefixesNotRefused(specRequestBytes(REQUEST), (reader) => decodeDeleteRecordsRequest(reader, version))).toEqual([]);
  });

  it('refuses an offset beyond the safe integers with KafkaDecodeError', () => {
    const bytes = new KafkaWriter().int32(1).string('t').int32(1).int32(0).int64(2n ** 60n).int32(1000).toBytes();
    expect(() => decodeDeleteRecordsRequest(new KafkaReader(bytes), 0)).toThrow(KafkaDecodeError);
  });

  it.each([-1, 2])('refuses version %i, which it does not serve, with KafkaDecodeError', (version) => {
    expect(() => decodeDeleteRecordsRequest(new KafkaReader(specRequestBytes(REQUEST)), version)).toThrow(KafkaDecodeError);
  });
});

describe('encodeDeleteRecordsResponse', () => {
  it.each(ALL_VERSIONS)('writes version %i exactly as the spec lays it out', (version) => {
    expect(encoded(version, RESPONSE)).toEqual(specResponseBytes(RESPONSE));
  });

  it.each(ALL_VERSIONS)('writes version %i so that kafkajs reads every field, and its client reports the partition error with its offset', async (version) => {
    const response = kafkajsResponse(version, KAFKAJS_TOPICS);
    const decodedByKafkajs = await response.decode(Buffer.from(encoded(version, RESPONSE)));
    expect(decodedByKafkajs).toEqual({
      ...(version === 0 ? { throttleTime: 5 } : { throttleTime: 0, clientSideThrottleTime: 5 }),
      topics: RESPONSE.topics.map((topic) => ({
        topic: topic.name,
        partitions: topic.partitions.map((partition) => ({ partition: partition.partitionIndex, lowWatermark: BigInt(partition.lowWatermark), errorCode: partition.errorCode })),
      })),
    });
    await expect(response.parse(decodedByKafkajs)).rejects.toMatchObject({
      name: 'KafkaJSDeleteTopicRecordsError',
      partitions: [{ partition: 3, offset: String(DELETE_RECORDS_HIGH_WATERMARK), error: expect.objectContaining({ type: 'OFFSET_OUT_OF_RANGE' }) }],
    });
  });

  it.each(ALL_VERSIONS)('writes throttle 0 in version %i when none is given', (version) => {
    expect(encoded(version, { topics: RESPONSE.topics })).toEqual(specResponseBytes({ ...RESPONSE, throttleTimeMs: 0 }));
  });

  it.each([-1, 2])('refuses to write version %i', (version) => {
    expect(() => encoded(version, RESPONSE)).toThrow(/outside the served versions/);
  });
});
