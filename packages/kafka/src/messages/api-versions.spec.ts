/**
 * Proves the ApiVersions codec reads what clients send and writes what they read: kafkajs's own request
 * encoders and response decoders for versions 0-2, byte vectors written from the spec's field list for
 * every version (3 is flexible and beyond kafkajs), and the KIP-511 answer to a version mink does not serve.
 */
import { API_KEYS, ERROR_CODES } from '../wire/codes';
import { KafkaDecodeError, KafkaReader } from '../wire/reader';
import { KafkaWriter } from '../wire/writer';
import {
  API_VERSIONS_VERSIONS,
  apiVersionsResponseVersion,
  decodeApiVersionsRequest,
  encodeApiVersionsResponse,
  unsupportedApiVersionsResponse,
} from './api-versions';
import { responseHeaderVersion } from './header';
import { bytesEncoder, kafkajsApi, prefixesNotRefused, wholeBodyDecoder } from './kafka-oracle.fixture';

const kafkajs = kafkajsApi('apiVersions');
const decoded = wholeBodyDecoder(decodeApiVersionsRequest);
const encoded = bytesEncoder(encodeApiVersionsResponse);
const KAFKAJS_VERSIONS = [0, 1, 2];
const ALL_VERSIONS = [0, 1, 2, 3];

/** The response as ApiVersionsResponse.json lays it out, written field by field. */
function specResponseBytes(version: number, response: { errorCode: number; apiKeys: Array<[number, number, number]>; throttleTimeMs: number }): Uint8Array {
  const writer = new KafkaWriter().int16(response.errorCode);
  if (version >= 3) writer.uvarint(response.apiKeys.length + 1);
  else writer.int32(response.apiKeys.length);
  for (const [apiKey, min, max] of response.apiKeys) {
    writer.int16(apiKey).int16(min).int16(max);
    if (version >= 3) writer.uvarint(0);
  }
  if (version >= 1) writer.int32(response.throttleTimeMs);
  if (version >= 3) writer.uvarint(0);
  return writer.toBytes();
}

const RESPONSE = {
  errorCode: ERROR_CODES.NONE,
  apiKeys: [
    { apiKey: API_KEYS.Produce, minVersion: 0, maxVersion: 7 },
    { apiKey: API_KEYS.Metadata, minVersion: 0, maxVersion: 8 },
    { apiKey: API_KEYS.ApiVersions, minVersion: 0, maxVersion: 3 },
  ],
  throttleTimeMs: 250,
};
const RESPONSE_AS_TUPLES = { ...RESPONSE, apiKeys: RESPONSE.apiKeys.map((each): [number, number, number] => [each.apiKey, each.minVersion, each.maxVersion]) };

describe('decodeApiVersionsRequest', () => {
  it.each(KAFKAJS_VERSIONS)('reads the empty body kafkajs sends for version %i', async (version) => {
    const body = await kafkajs.requestBytes(version);
    const reader = new KafkaReader(body);
    expect(body.byteLength).toBe(0);
    expect(decodeApiVersionsRequest(reader, version)).toEqual({ clientSoftwareName: null, clientSoftwareVersion: null });
  });

  it('reads version 3: two compact strings, then tagged fields it skips', () => {
    const bytes = new KafkaWriter()
      .compactString('apache-kafka-java')
      .compactString('3.7.0')
      .uvarint(1)
      .uvarint(9)
      .uvarint(1)
      .int8(1)
      .toBytes();
    expect(decoded(bytes, 3)).toEqual({ clientSoftwareName: 'apache-kafka-java', clientSoftwareVersion: '3.7.0' });
  });

  it('refuses every truncation of a version 3 request with KafkaDecodeError', () => {
    const bytes = new KafkaWriter().compactString('librdkafka').compactString('2.0.2').taggedFields().toBytes();
    expect(prefixesNotRefused(bytes, (reader) => decodeApiVersionsRequest(reader, 3))).toEqual([]);
  });

  it('refuses a null client software name, which the spec does not allow', () => {
    const bytes = new KafkaWriter().uvarint(0).compactString('1.0').taggedFields().toBytes();
    expect(() => decodeApiVersionsRequest(new KafkaReader(bytes), 3)).toThrow(KafkaDecodeError);
  });

  it.each([-1, 4])('refuses version %i, which it does not serve, with KafkaDecodeError', (version) => {
    expect(() => decodeApiVersionsRequest(new KafkaReader(new Uint8Array(0)), version)).toThrow(KafkaDecodeError);
  });
});

describe('encodeApiVersionsResponse', () => {
  it.each(ALL_VERSIONS)('writes version %i exactly as the spec lays it out', (version) => {
    expect(encoded(version, RESPONSE)).toEqual(specResponseBytes(version, RESPONSE_AS_TUPLES));
  });

  it.each(KAFKAJS_VERSIONS)('writes version %i so that kafkajs reads every field', async (version) => {
    const response = kafkajs.response(version);
    const decodedByKafkajs = await response.decode(encoded(version, RESPONSE));
    await expect(response.parse(decodedByKafkajs)).resolves.toBe(decodedByKafkajs);
    expect(decodedByKafkajs.errorCode).toBe(0);
    expect(decodedByKafkajs.apiVersions).toEqual(RESPONSE.apiKeys);
    // kafkajs reports the throttle of version 2 on as client-side (the broker answered before throttling).
    if (version === 1) expect(decodedByKafkajs.throttleTime).toBe(250);
    if (version === 2) expect(decodedByKafkajs.clientSideThrottleTime).toBe(250);
  });

  it('writes throttle 0 when none is given', () => {
    expect(encoded(1, { errorCode: 0, apiKeys: [] })).toEqual(specResponseBytes(1, { errorCode: 0, apiKeys: [], throttleTimeMs: 0 }));
  });

  it.each([-1, 4])('refuses to write version %i', (version) => {
    expect(() => encoded(version, RESPONSE)).toThrow(/outside the served versions/);
  });
});

describe('an ApiVersions request of a version mink does not serve (KIP-511)', () => {
  it.each([
    [0, 0],
    [3, 3],
    [4, 0],
    [17, 0],
  ])('answers a request of version %i in version %i', (requested, answered) => {
    expect(apiVersionsResponseVersion(requested)).toBe(answered);
  });

  it('answers with response header v0, whatever the version asked', () => {
    expect(responseHeaderVersion(API_KEYS.ApiVersions, 4)).toBe(0);
  });

  it('answers UNSUPPORTED_VERSION and the ApiVersions range, which kafkajs reads as UNSUPPORTED_VERSION', async () => {
    const version = apiVersionsResponseVersion(5);
    const bytes = encoded(version, unsupportedApiVersionsResponse());
    const range: [number, number, number] = [API_KEYS.ApiVersions, API_VERSIONS_VERSIONS.min, API_VERSIONS_VERSIONS.max];

    expect(bytes).toEqual(specResponseBytes(0, { errorCode: ERROR_CODES.UNSUPPORTED_VERSION, apiKeys: [range], throttleTimeMs: 0 }));
    await expect(kafkajs.response(0).decode(bytes)).rejects.toMatchObject({ type: 'UNSUPPORTED_VERSION' });
  });
});
