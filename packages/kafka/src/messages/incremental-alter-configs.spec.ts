/**
 * Proves the IncrementalAlterConfigs codec reads what clients send and writes what they read, for the one
 * version mink serves (0). kafkajs has no client for this API, so the vectors are written and read field
 * by field from the spec's field list with kafkajs's primitive Encoder and Decoder, an implementation
 * independent of ours.
 */
import { ERROR_CODES } from '../wire/codes';
import { KafkaDecodeError, KafkaReader } from '../wire/reader';
import type { AlterConfigsResourceResult } from './alter-configs';
import { CONFIG_RESOURCE_TYPES } from './describe-configs';
import {
  CONFIG_OPERATIONS,
  decodeIncrementalAlterConfigsRequest,
  encodeIncrementalAlterConfigsResponse,
  type IncrementalAlterConfigsRequest,
  type IncrementalAlterConfigsResponse,
} from './incremental-alter-configs';
import { bytesEncoder, KafkajsDecoder, KafkajsEncoder, kafkajsModule, prefixesNotRefused, wholeBodyDecoder } from './kafka-oracle.fixture';

const decoded = wholeBodyDecoder(decodeIncrementalAlterConfigsRequest);
const encoded = bytesEncoder(encodeIncrementalAlterConfigsResponse);
const kafkajsErrors = kafkajsModule('protocol/error');

/** The request as IncrementalAlterConfigsRequest.json lays it out, written field by field by kafkajs's Encoder. */
function specRequestBytes(request: IncrementalAlterConfigsRequest): Uint8Array {
  const encoder = new KafkajsEncoder().writeInt32(request.resources.length);
  for (const resource of request.resources) {
    encoder.writeInt8(resource.resourceType).writeString(resource.resourceName).writeInt32(resource.configs.length);
    for (const config of resource.configs) encoder.writeString(config.name).writeInt8(config.configOperation).writeString(config.value);
  }
  return new Uint8Array(encoder.writeBoolean(request.validateOnly).buffer);
}

/** Reads a response field by field as IncrementalAlterConfigsResponse.json lays it out, with kafkajs's Decoder. */
function readBySpec(bytes: Uint8Array): Required<IncrementalAlterConfigsResponse> {
  const decoder = new KafkajsDecoder(Buffer.from(bytes));
  const throttleTimeMs: number = decoder.readInt32();
  const responses: AlterConfigsResourceResult[] = decoder.readArray((each: typeof decoder) => ({
    errorCode: each.readInt16(),
    errorMessage: each.readString(),
    resourceType: each.readInt8(),
    resourceName: each.readString(),
  }));
  expect(decoder.offset).toBe(bytes.byteLength);
  return { throttleTimeMs, responses };
}

/** Every operation, a null value for the delete, and validate_only set, so that no field is at its zero. */
const REQUEST: IncrementalAlterConfigsRequest = {
  resources: [
    {
      resourceType: CONFIG_RESOURCE_TYPES.topic,
      resourceName: 'orders',
      configs: [
        { name: 'retention.ms', configOperation: CONFIG_OPERATIONS.set, value: '3600000' },
        { name: 'segment.ms', configOperation: CONFIG_OPERATIONS.delete, value: null },
        { name: 'cleanup.policy', configOperation: CONFIG_OPERATIONS.append, value: 'compact' },
      ],
    },
    { resourceType: CONFIG_RESOURCE_TYPES.broker, resourceName: '1', configs: [{ name: 'listeners', configOperation: CONFIG_OPERATIONS.subtract, value: 'PLAIN://:9093' }] },
    { resourceType: CONFIG_RESOURCE_TYPES.topic, resourceName: 'payments', configs: [] },
  ],
  validateOnly: true,
};

const RESPONSE: Required<IncrementalAlterConfigsResponse> = {
  throttleTimeMs: 4,
  responses: [
    { errorCode: ERROR_CODES.NONE, errorMessage: null, resourceType: CONFIG_RESOURCE_TYPES.topic, resourceName: 'orders' },
    { errorCode: ERROR_CODES.INVALID_CONFIG, errorMessage: 'listeners cannot be altered.', resourceType: CONFIG_RESOURCE_TYPES.broker, resourceName: '1' },
    { errorCode: ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: null, resourceType: CONFIG_RESOURCE_TYPES.topic, resourceName: 'payments' },
  ],
};

describe('decodeIncrementalAlterConfigsRequest', () => {
  it('uses the operation ids of the broker (AlterConfigOp.OpType)', () => {
    expect(CONFIG_OPERATIONS).toEqual({ set: 0, delete: 1, append: 2, subtract: 3 });
  });

  it('reads version 0 from bytes built from the spec', () => {
    expect(decoded(specRequestBytes(REQUEST), 0)).toEqual(REQUEST);
  });

  it('passes an operation id it does not know through, for the broker to refuse', () => {
    const request = { resources: [{ resourceType: CONFIG_RESOURCE_TYPES.topic, resourceName: 't', configs: [{ name: 'n', configOperation: 9, value: 'v' }] }], validateOnly: false };
    expect(decoded(specRequestBytes(request), 0)).toEqual(request);
  });

  it('refuses every truncation of a version 0 request with KafkaDecodeError', () => {
    expect(prefixesNotRefused(specRequestBytes(REQUEST), (reader) => decodeIncrementalAlterConfigsRequest(reader, 0))).toEqual([]);
  });

  it('refuses a null resource name with KafkaDecodeError', () => {
    const bytes = new KafkajsEncoder().writeInt32(1).writeInt8(CONFIG_RESOURCE_TYPES.topic).writeString(null).writeInt32(0).writeBoolean(false).buffer;
    expect(() => decodeIncrementalAlterConfigsRequest(new KafkaReader(bytes), 0)).toThrow(KafkaDecodeError);
  });

  it.each([-1, 1])('refuses version %i, which it does not serve, with KafkaDecodeError', (version) => {
    expect(() => decodeIncrementalAlterConfigsRequest(new KafkaReader(specRequestBytes(REQUEST)), version)).toThrow(KafkaDecodeError);
  });
});

describe('encodeIncrementalAlterConfigsResponse', () => {
  it('writes version 0 so that every field reads back as the spec lays it out', () => {
    expect(readBySpec(encoded(0, RESPONSE))).toEqual(RESPONSE);
  });

  it('writes error codes that kafkajs maps to the errors meant, and success as no error', () => {
    const failed = readBySpec(encoded(0, RESPONSE)).responses.filter((result) => kafkajsErrors.failure(result.errorCode));
    expect(failed.map((result) => kafkajsErrors.createErrorFromCode(result.errorCode).type)).toEqual(['INVALID_CONFIG', 'UNKNOWN_TOPIC_OR_PARTITION']);
  });

  it('writes the spec defaults for fields left out', () => {
    const minimal: IncrementalAlterConfigsResponse = { responses: [{ errorCode: 0, resourceType: CONFIG_RESOURCE_TYPES.topic, resourceName: 't' }] };
    expect(readBySpec(encoded(0, minimal))).toEqual({ throttleTimeMs: 0, responses: [{ errorCode: 0, errorMessage: null, resourceType: CONFIG_RESOURCE_TYPES.topic, resourceName: 't' }] });
  });

  it.each([-1, 1])('refuses to write version %i', (version) => {
    expect(() => encoded(version, RESPONSE)).toThrow(/IncrementalAlterConfigs response version .* is outside the served versions/);
  });
});
