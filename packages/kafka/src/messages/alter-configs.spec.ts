/**
 * Proves the AlterConfigs codec reads what clients send and writes what they read, for every version
 * mink serves (0-1): against kafkajs's own request encoders and response decoders, and against byte
 * vectors written from the spec's field list.
 */
import { ERROR_CODES } from '../wire/codes';
import { KafkaDecodeError, KafkaReader } from '../wire/reader';
import { KafkaWriter } from '../wire/writer';
import { decodeAlterConfigsRequest, encodeAlterConfigsResponse, type AlterConfigsRequest, type AlterConfigsResponse } from './alter-configs';
import { CONFIG_RESOURCE_TYPES } from './describe-configs';
import { bytesEncoder, kafkajsApi, prefixesNotRefused, wholeBodyDecoder } from './kafka-oracle.fixture';

const kafkajs = kafkajsApi('alterConfigs');
const decoded = wholeBodyDecoder(decodeAlterConfigsRequest);
const encoded = bytesEncoder(encodeAlterConfigsResponse);
const ALL_VERSIONS = [0, 1];

/** The request as AlterConfigsRequest.json lays it out (the same in versions 0-1), written field by field. */
function specRequestBytes(request: AlterConfigsRequest): Uint8Array {
  const writer = new KafkaWriter().int32(request.resources.length);
  for (const resource of request.resources) {
    writer.int8(resource.resourceType).string(resource.resourceName).int32(resource.configs.length);
    for (const config of resource.configs) writer.string(config.name).nullableString(config.value);
  }
  return writer.boolean(request.validateOnly).toBytes();
}

/** The response as AlterConfigsResponse.json lays it out (the same in versions 0-1), written field by field; every field must be given. */
function specResponseBytes(response: AlterConfigsResponse): Uint8Array {
  const writer = new KafkaWriter().int32(response.throttleTimeMs!).int32(response.responses.length);
  for (const result of response.responses) writer.int16(result.errorCode).nullableString(result.errorMessage!).int8(result.resourceType).string(result.resourceName);
  return writer.toBytes();
}

/** Two resources, a null value among the configs, and validate_only set, so that no field is at its zero. */
const REQUEST: AlterConfigsRequest = {
  resources: [
    {
      resourceType: CONFIG_RESOURCE_TYPES.topic,
      resourceName: 'orders',
      configs: [
        { name: 'retention.ms', value: '3600000' },
        { name: 'cleanup.policy', value: null },
      ],
    },
    { resourceType: CONFIG_RESOURCE_TYPES.broker, resourceName: '1', configs: [{ name: 'log.retention.ms', value: '86400000' }] },
  ],
  validateOnly: true,
};

const RESPONSE: AlterConfigsResponse = {
  throttleTimeMs: 6,
  responses: [
    { errorCode: ERROR_CODES.NONE, errorMessage: null, resourceType: CONFIG_RESOURCE_TYPES.topic, resourceName: 'orders' },
    { errorCode: ERROR_CODES.POLICY_VIOLATION, errorMessage: 'Broker configs cannot be altered here.', resourceType: CONFIG_RESOURCE_TYPES.broker, resourceName: '1' },
  ],
};

describe('decodeAlterConfigsRequest', () => {
  it.each(ALL_VERSIONS)('reads every field kafkajs sends in version %i', async (version) => {
    const args = {
      resources: REQUEST.resources.map((each) => ({ type: each.resourceType, name: each.resourceName, configEntries: each.configs })),
      validateOnly: REQUEST.validateOnly,
    };
    const body: Uint8Array = await kafkajs.requestBytes(version, args);
    expect(decoded(body, version)).toEqual(REQUEST);
  });

  it.each(ALL_VERSIONS)('reads version %i from bytes built from the spec, a resource without configs as an empty set', (version) => {
    const request = { resources: [...REQUEST.resources, { resourceType: CONFIG_RESOURCE_TYPES.topic, resourceName: 'payments', configs: [] }], validateOnly: false };
    expect(decoded(specRequestBytes(request), version)).toEqual(request);
  });

  it.each(ALL_VERSIONS)('refuses every truncation of a version %i request with KafkaDecodeError', (version) => {
    expect(prefixesNotRefused(specRequestBytes(REQUEST), (reader) => decodeAlterConfigsRequest(reader, version))).toEqual([]);
  });

  it('refuses a null config name with KafkaDecodeError', () => {
    const bytes = new KafkaWriter().int32(1).int8(CONFIG_RESOURCE_TYPES.topic).string('orders').int32(1).int16(-1).nullableString('v').boolean(false).toBytes();
    expect(() => decodeAlterConfigsRequest(new KafkaReader(bytes), 0)).toThrow(KafkaDecodeError);
  });

  it.each([-1, 2])('refuses version %i, which it does not serve, with KafkaDecodeError', (version) => {
    expect(() => decodeAlterConfigsRequest(new KafkaReader(specRequestBytes(REQUEST)), version)).toThrow(KafkaDecodeError);
  });
});

describe('encodeAlterConfigsResponse', () => {
  it.each(ALL_VERSIONS)('writes version %i exactly as the spec lays it out', (version) => {
    expect(encoded(version, RESPONSE)).toEqual(specResponseBytes(RESPONSE));
  });

  it.each(ALL_VERSIONS)('writes version %i so that kafkajs reads every field, and its client reports the resource error', async (version) => {
    const response = kafkajs.response(version);
    const decodedByKafkajs = await response.decode(encoded(version, RESPONSE));
    expect(decodedByKafkajs).toEqual({
      ...(version === 0 ? { throttleTime: 6 } : { throttleTime: 0, clientSideThrottleTime: 6 }),
      resources: RESPONSE.responses.map((result) => ({
        errorCode: result.errorCode,
        errorMessage: result.errorMessage,
        resourceType: result.resourceType,
        resourceName: result.resourceName,
      })),
    });
    await expect(response.parse(decodedByKafkajs)).rejects.toMatchObject({ type: 'POLICY_VIOLATION' });
  });

  it.each(ALL_VERSIONS)('writes the spec defaults in version %i for fields left out', (version) => {
    const minimal: AlterConfigsResponse = { responses: [{ errorCode: 0, resourceType: CONFIG_RESOURCE_TYPES.topic, resourceName: 't' }] };
    const inFull: AlterConfigsResponse = { throttleTimeMs: 0, responses: [{ errorCode: 0, errorMessage: null, resourceType: CONFIG_RESOURCE_TYPES.topic, resourceName: 't' }] };
    expect(encoded(version, minimal)).toEqual(specResponseBytes(inFull));
  });

  it.each([-1, 2])('refuses to write version %i', (version) => {
    expect(() => encoded(version, RESPONSE)).toThrow(/outside the served versions/);
  });
});
