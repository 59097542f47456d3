/**
 * Proves the InitProducerId codec reads what clients send and writes what they read, for both versions
 * mink serves: against kafkajs's own request encoders and response decoders, and against byte vectors
 * written from the spec's field list.
 */
import { ERROR_CODES } from '../wire/codes';
import { KafkaDecodeError, KafkaReader } from '../wire/reader';
import { KafkaWriter } from '../wire/writer';
import { decodeInitProducerIdRequest, encodeInitProducerIdResponse, type InitProducerIdRequest, type InitProducerIdResponse } from './init-producer-id';

/** kafkajs's protocol modules have no types; as the oracle they are used as they are. */
const kafkajs = (version: number, part: 'request' | 'response'): any => require(`kafkajs/src/protocol/requests/initProducerId/v${version}/${part}`);
const ALL_VERSIONS = [0, 1];

function decoded(bytes: Uint8Array, version: number): InitProducerIdRequest {
  const reader = new KafkaReader(bytes);
  const request = decodeInitProducerIdRequest(reader, version);
  expect(reader.remaining).toBe(0);
  return request;
}

function encoded(version: number, response: InitProducerIdResponse): Uint8Array {
  const writer = new KafkaWriter();
  encodeInitProducerIdResponse(writer, version, response);
  return writer.toBytes();
}

/** The request as InitProducerIdRequest.json lays it out (the same in versions 0-1). */
function specRequestBytes(request: InitProducerIdRequest): Uint8Array {
  return new KafkaWriter().nullableString(request.transactionalId).int32(request.transactionTimeoutMs).toBytes();
}

/** The response as InitProducerIdResponse.json lays it out (the same in versions 0-1). */
function specResponseBytes(response: Required<InitProducerIdResponse>): Uint8Array {
  return new KafkaWriter().int32(response.throttleTimeMs).int16(response.errorCode).int64(BigInt(response.producerId)).int16(response.producerEpoch).toBytes();
}

/** Lengths of the proper prefixes of `bytes` that `decode` did not refuse with a KafkaDecodeError. */
function prefixesNotRefused(bytes: Uint8Array, decode: (reader: KafkaReader) => unknown): Array<{ length: number; outcome: string }> {
  const failures: Array<{ length: number; outcome: string }> = [];
  for (let length = 0; length < bytes.byteLength; length++) {
    try {
      decode(new KafkaReader(bytes.subarray(0, length)));
      failures.push({ length, outcome: 'decoded' });
    } catch (error) {
      if (!(error instanceof KafkaDecodeError)) failures.push({ length, outcome: String(error) });
    }
  }
  return failures;
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
    const body: Uint8Array = (await kafkajs(version, 'request')(args).encode()).buffer;
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
    const response = kafkajs(version, 'response');
    const decodedByKafkajs = await response.decode(Buffer.from(encoded(version, RESPONSE)));
    expect(decodedByKafkajs).toEqual({
      ...(version === 0 ? { throttleTime: 21 } : { throttleTime: 0, clientSideThrottleTime: 21 }),
      errorCode: 0,
      producerId: String(RESPONSE.producerId),
      producerEpoch: 3,
    });
    await expect(response.parse(decodedByKafkajs)).resolves.toBe(decodedByKafkajs);
  });

  it.each(ALL_VERSIONS)('writes an error in version %i that kafkajs reports', async (version) => {
    const response = kafkajs(version, 'response');
    const failed = { errorCode: ERROR_CODES.COORDINATOR_NOT_AVAILABLE, producerId: -1, producerEpoch: -1 };
    const bytes = encoded(version, failed);
    expect(bytes).toEqual(specResponseBytes({ ...failed, throttleTimeMs: 0 }));
    const decodedByKafkajs = await response.decode(Buffer.from(bytes));
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
