/**
 * Proves the InitProducerId codec reads what clients send and writes what they read, for both versions
 * mink serves: against kafkajs's own request encoders and response decoders, and against byte vectors
 * written from the spec's field list.
 */
import { ERROR_CODES } from '../wire/codes';
import { KafkaDecodeError, KafkaReader } from '../wire/reader';
import { KafkaWriter } from '../wire/writer';
import { decodeInitProducerIdRequest, encodeInitProducerIdResponse, type InitProducerIdRequest, type InitProducerIdResponse } from './init-producer-id';
import { bytesEncoder, kafkajsApi, prefixesNotRefused, wholeBodyDecoder } from './kafka-oracle.fixture';

const kafkajs = kafkajsApi('initProducerId');
const decoded = wholeBodyDecoder(decodeInitProducerIdRequest);
const encoded = bytesEncoder(encodeInitProducerIdResponse);
const ALL_VERSIONS = [0, 1];

/** The request as InitProducerIdRequest.json lays it out (the same in versions 0-1). */
function specRequestBytes(request: InitProducerIdRequest): Uint8Array {
  return new KafkaWriter().nullableString(request.transactionalId).int32(request.transactionTimeoutMs).toBytes();
}

/** The response as InitProducerIdResponse.json lays it out (the same in versions 0-1). */
function specResponseBytes(response: Required<InitProducerIdResponse>): Uint8Array {
  return new KafkaWriter().int32(response.throttleTimeMs).int16(response.errorCode).int64(BigInt(response.producerId)).int16(response.producerEpoch).toBytes();
}

const REQUESTS: InitProducerIdRequest[] = [
  { transactionalId: null, transactionTimeoutMs: 60_000 },
  { transactionalId: 'payments-tx-1', transactionTimeoutMs: 15_000 },
];

/** A producer id above 2^32, so that both halves of the int64 are checked. */
const RESPONSE: Required<InitProducerIdResponse> = { throttleTimeMs: 21, errorCode: ERROR_CODES.NONE, producerId: 2 ** 40 + 77, producerEpoch: 3 };

const cases = ALL_VERSIONS.flatMap((version) => REQUESTS.map((request) => ({ version, request })));

describe('decodeInitProducerIdRequest', () => {
  it.each(cases)('reads what kafkajs sends in version $version for transactional id $request.transactionalId', async ({ version, request }) => {
    const args = { transactionalId: request.transactionalId, transactionTimeout: request.transactionTimeoutMs };
    const body: Uint8Array = await kafkajs.requestBytes(version, args);
    expect(decoded(body, version)).toEqual(request);
  });

  it.each(cases)('reads version $version for transactional id $request.transactionalId from bytes built from the spec', ({ version, request }) => {
    expect(decoded(specRequestBytes(request), version)).toEqual(request);
  });

  it.each(cases)('refuses every truncation of a version $version request with KafkaDecodeError', ({ version, request }) => {
    expect(prefixesNotRefused(specRequestBytes(request), (reader) => decodeInitProducerIdRequest(reader, version))).toEqual([]);
  });

  it.each([-1, 2])('refuses version %i, which it does not serve, with KafkaDecodeError', (version) => {
    expect(() => decodeInitProducerIdRequest(new KafkaReader(specRequestBytes(REQUESTS[0]!)), version)).toThrow(KafkaDecodeError);
  });
});

describe('encodeInitProducerIdResponse', () => {
  it.each(ALL_VERSIONS)('writes version %i exactly as the spec lays it out', (version) => {
    expect(encoded(version, RESPONSE)).toEqual(specResponseBytes(RESPONSE));
  });

  it.each(ALL_VERSIONS)('writes version %i so that kafkajs reads every field', async (version) => {
    const response = kafkajs.response(version);
    const decodedByKafkajs = await response.decode(encoded(version, RESPONSE));
    expect(decodedByKafkajs).toEqual({
      ...(version === 0 ? { throttleTime: 21 } : { throttleTime: 0, clientSideThrottleTime: 21 }),
      errorCode: 0,
      producerId: String(RESPONSE.producerId),
      producerEpoch: 3,
    });
    await expect(response.parse(decodedByKafkajs)).resolves.toBe(decodedByKafkajs);
  });

  it.each(ALL_VERSIONS)('writes an error in version %i that kafkajs reports', async (version) => {
    const response = kafkajs.response(version);
    const failed = { errorCode: ERROR_CODES.COORDINATOR_NOT_AVAILABLE, producerId: -1, producerEpoch: -1 };
    const bytes = encoded(version, failed);
    expect(bytes).toEqual(specResponseBytes({ ...failed, throttleTimeMs: 0 }));
    const decodedByKafkajs = await response.decode(bytes);
    expect(decodedByKafkajs.producerId).toBe('-1');
    await expect(response.parse(decodedByKafkajs)).rejects.toMatchObject({ type: 'GROUP_COORDINATOR_NOT_AVAILABLE' }); // kafkajs's name for code 15
  });

  it('refuses to write a producer id beyond the safe integers', () => {
    expect(() => encoded(0, { ...RESPONSE, producerId: 2 ** 60 })).toThrow(/not a safe integer/);
  });

  it.each([-1, 2])('refuses to write version %i', (version) => {
    expect(() => encoded(version, RESPONSE)).toThrow(/outside the served versions/);
  });
});
