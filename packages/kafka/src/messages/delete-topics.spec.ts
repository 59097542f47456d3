/**
 * Proves the DeleteTopics codec reads what clients send and writes what they read: kafkajs's own request
 * encoders and response decoders for versions 0-1, and byte vectors written from the spec's field list for
 * every version 0-3 (2 and 3 are beyond kafkajs).
 */
import { ERROR_CODES } from '../wire/codes';
import { KafkaDecodeError, KafkaReader } from '../wire/reader';
import { KafkaWriter } from '../wire/writer';
import { decodeDeleteTopicsRequest, encodeDeleteTopicsResponse, type DeleteTopicsRequest, type DeleteTopicsResponse } from './delete-topics';
import { bytesEncoder, kafkajsApi, prefixesNotRefused, wholeBodyDecoder } from './kafka-oracle.fixture';

const kafkajs = kafkajsApi('deleteTopics');
const decoded = wholeBodyDecoder(decodeDeleteTopicsRequest);
const encoded = bytesEncoder(encodeDeleteTopicsResponse);
const KAFKAJS_VERSIONS = [0, 1];
const ALL_VERSIONS = [0, 1, 2, 3];

/** The request as DeleteTopicsRequest.json lays it out (the same in versions 0-3), written field by field. */
function specRequestBytes(request: DeleteTopicsRequest): Uint8Array {
  const writer = new KafkaWriter().int32(request.topicNames.length);
  for (const name of request.topicNames) writer.string(name);
  return writer.int32(request.timeoutMs).toBytes();
}

/** The response as DeleteTopicsResponse.json lays it out, written field by field; every field must be given. */
function specResponseBytes(version: number, response: Required<DeleteTopicsResponse>): Uint8Array {
  const writer = new KafkaWriter();
  if (version >= 1) writer.int32(response.throttleTimeMs);
  writer.int32(response.responses.length);
  for (const result of response.responses) writer.string(result.name).int16(result.errorCode);
  return writer.toBytes();
}

const REQUEST: DeleteTopicsRequest = { topicNames: ['orders', 'payments'], timeoutMs: 12_000 };

/** Sorted by name, as kafkajs sorts what it decodes. */
const RESPONSE: Required<DeleteTopicsResponse> = {
  throttleTimeMs: 9,
  responses: [
    { name: 'orders', errorCode: ERROR_CODES.NONE },
    { name: 'payments', errorCode: ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION },
  ],
};

describe('decodeDeleteTopicsRequest', () => {
  it.each(KAFKAJS_VERSIONS)('reads every field kafkajs sends in version %i', async (version) => {
    const body: Uint8Array = await kafkajs.requestBytes(version, { topics: REQUEST.topicNames, timeout: REQUEST.timeoutMs });
    expect(decoded(body, version)).toEqual(REQUEST);
  });

  it.each(ALL_VERSIONS)('reads version %i from bytes built from the spec', (version) => {
    expect(decoded(specRequestBytes(REQUEST), version)).toEqual(REQUEST);
  });

  it.each(ALL_VERSIONS)('refuses every truncation of a version %i request with KafkaDecodeError', (version) => {
    expect(prefixesNotRefused(specRequestBytes(REQUEST), (reader) => decodeDeleteTopicsRequest(reader, version))).toEqual([]);
  });

  it.each([-1, 4])('refuses version %i, which it does not serve, with KafkaDecodeError', (version) => {
    expect(() => decodeDeleteTopicsRequest(new KafkaReader(specRequestBytes(REQUEST)), version)).toThrow(KafkaDecodeError);
  });
});

describe('encodeDeleteTopicsResponse', () => {
  it.each(ALL_VERSIONS)('writes version %i exactly as the spec lays it out', (version) => {
    expect(encoded(version, RESPONSE)).toEqual(specResponseBytes(version, RESPONSE));
  });

  it.each(KAFKAJS_VERSIONS)('writes version %i so that kafkajs reads every field, and its client reports the topic error', async (version) => {
    const response = kafkajs.response(version);
    const decodedByKafkajs = await response.decode(encoded(version, RESPONSE));
    expect(decodedByKafkajs).toEqual({
      ...(version === 1 ? { throttleTime: 0, clientSideThrottleTime: 9 } : {}),
      topicErrors: RESPONSE.responses.map((result) => ({ topic: result.name, errorCode: result.errorCode })),
    });
    await expect(response.parse(decodedByKafkajs)).rejects.toMatchObject({ type: 'UNKNOWN_TOPIC_OR_PARTITION' });
  });

  it.each(ALL_VERSIONS)('writes throttle 0 in version %i when none is given', (version) => {
    expect(encoded(version, { responses: RESPONSE.responses })).toEqual(specResponseBytes(version, { ...RESPONSE, throttleTimeMs: 0 }));
  });

  it.each([-1, 4])('refuses to write version %i', (version) => {
    expect(() => encoded(version, RESPONSE)).toThrow(/outside the served versions/);
  });
});
