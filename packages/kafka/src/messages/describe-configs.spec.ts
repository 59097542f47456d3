/**
 * Proves the DescribeConfigs codec reads what clients send and writes what they read, for every version
 * mink serves (0-2): against kafkajs's own request encoders and response decoders, and against byte
 * vectors written from the spec's field list.
 */
import { ERROR_CODES } from '../wire/codes';
import { KafkaDecodeError, KafkaReader } from '../wire/reader';
import { KafkaWriter } from '../wire/writer';
import {
  CONFIG_RESOURCE_TYPES,
  CONFIG_SOURCES,
  decodeDescribeConfigsRequest,
  encodeDescribeConfigsResponse,
  type DescribeConfigsEntry,
  type DescribeConfigsRequest,
  type DescribeConfigsResponse,
} from './describe-configs';
import { bytesEncoder, kafkajsApi, kafkajsModule, prefixesNotRefused, wholeBodyDecoder } from './kafka-oracle.fixture';

const kafkajs = kafkajsApi('describeConfigs');
const decoded = wholeBodyDecoder(decodeDescribeConfigsRequest);
const encoded = bytesEncoder(encodeDescribeConfigsResponse);
const kafkajsConfigSources = kafkajsModule('protocol/configSource');
const kafkajsResourceTypes = kafkajsModule('protocol/configResourceTypes');
const ALL_VERSIONS = [0, 1, 2];

/** The request as DescribeConfigsRequest.json lays it out, written field by field. */
function specRequestBytes(version: number, request: DescribeConfigsRequest): Uint8Array {
  const writer = new KafkaWriter().int32(request.resources.length);
  for (const resource of request.resources) {
    writer.int8(resource.resourceType).string(resource.resourceName);
    if (resource.configurationKeys === null) writer.int32(-1);
    else {
      writer.int32(resource.configurationKeys.length);
      for (const key of resource.configurationKeys) writer.string(key);
    }
  }
  if (version >= 1) writer.boolean(request.includeSynonyms);
  return writer.toBytes();
}

/** The response as DescribeConfigsResponse.json lays it out, written field by field; every field must be given. */
function specResponseBytes(version: number, response: DescribeConfigsResponse): Uint8Array {
  const writer = new KafkaWriter().int32(response.throttleTimeMs!).int32(response.results.length);
  for (const result of response.results) {
    writer.int16(result.errorCode).nullableString(result.errorMessage!).int8(result.resourceType).string(result.resourceName);
    writer.int32(result.configs.length);
    for (const config of result.configs) {
      writer.string(config.name).nullableString(config.value).boolean(config.readOnly);
      if (version === 0) writer.boolean(config.configSource === 5); // is_default
      if (version >= 1) writer.int8(config.configSource);
      writer.boolean(config.isSensitive);
      if (version >= 1) {
        writer.int32(config.synonyms!.length);
        for (const synonym of config.synonyms!) writer.string(synonym.name).nullableString(synonym.value).int8(synonym.source);
      }
    }
  }
  return writer.toBytes();
}

const REQUEST: DescribeConfigsRequest = {
  resources: [
    { resourceType: CONFIG_RESOURCE_TYPES.topic, resourceName: 'orders', configurationKeys: ['cleanup.policy', 'retention.ms'] },
    { resourceType: CONFIG_RESOURCE_TYPES.broker, resourceName: '1', configurationKeys: null },
  ],
  includeSynonyms: true,
};

const RESPONSE: DescribeConfigsResponse = {
  throttleTimeMs: 8,
  results: [
    {
      errorCode: ERROR_CODES.NONE,
      errorMessage: null,
      resourceType: CONFIG_RESOURCE_TYPES.topic,
      resourceName: 'orders',
      configs: [
        {
          name: 'cleanup.policy',
          value: 'delete',
          readOnly: false,
          configSource: CONFIG_SOURCES.defaultConfig,
          isSensitive: false,
          synonyms: [{ name: 'log.cleanup.policy', value: 'delete', source: CONFIG_SOURCES.defaultConfig }],
        },
        { name: 'retention.ms', value: '3600000', readOnly: false, configSource: CONFIG_SOURCES.dynamicTopicConfig, isSensitive: false, synonyms: [] },
        {
          name: 'sasl.jaas.config',
          value: null,
          readOnly: true,
          configSource: CONFIG_SOURCES.staticBrokerConfig,
          isSensitive: true,
          synonyms: [{ name: 'listener.sasl.jaas.config', value: null, source: CONFIG_SOURCES.staticBrokerConfig }],
        },
      ],
    },
    {
      errorCode: ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION,
      errorMessage: "Topic 'missing' does not exist.",
      resourceType: CONFIG_RESOURCE_TYPES.topic,
      resourceName: 'missing',
      configs: [],
    },
  ],
};

/** What kafkajs makes of one config entry: version 0 carries only is_default, from which it guesses a source. */
function kafkajsEntry(version: number, resourceType: number, config: DescribeConfigsEntry): object {
  const isDefault = config.configSource === CONFIG_SOURCES.defaultConfig;
  const sourceByResourceType: Record<number, number> = {
    [CONFIG_RESOURCE_TYPES.topic]: CONFIG_SOURCES.dynamicTopicConfig,
    [CONFIG_RESOURCE_TYPES.broker]: CONFIG_SOURCES.staticBrokerConfig,
  };
  const guessedSource = isDefault ? CONFIG_SOURCES.defaultConfig : (sourceByResourceType[resourceType] ?? CONFIG_SOURCES.unknown);
  return {
    configName: config.name,
    configValue: config.value,
    readOnly: config.readOnly,
    isDefault,
    configSource: version === 0 ? guessedSource : config.configSource,
    isSensitive: config.isSensitive,
    ...(version >= 1 ? { configSynonyms: config.synonyms!.map((each) => ({ configName: each.name, configValue: each.value, configSource: each.source })) } : {}),
  };
}

describe('decodeDescribeConfigsRequest', () => {
  it('uses the resource types and config sources kafkajs uses', () => {
    expect(CONFIG_RESOURCE_TYPES).toEqual({
      unknown: kafkajsResourceTypes.UNKNOWN,
      topic: kafkajsResourceTypes.TOPIC,
      broker: kafkajsResourceTypes.BROKER,
      brokerLogger: kafkajsResourceTypes.BROKER_LOGGER,
    });
    expect(CONFIG_SOURCES).toEqual({
      unknown: kafkajsConfigSources.UNKNOWN,
      dynamicTopicConfig: kafkajsConfigSources.TOPIC_CONFIG,
      dynamicBrokerConfig: kafkajsConfigSources.DYNAMIC_BROKER_CONFIG,
      dynamicDefaultBrokerConfig: kafkajsConfigSources.DYNAMIC_DEFAULT_BROKER_CONFIG,
      staticBrokerConfig: kafkajsConfigSources.STATIC_BROKER_CONFIG,
      defaultConfig: kafkajsConfigSources.DEFAULT_CONFIG,
      dynamicBrokerLoggerConfig: kafkajsConfigSources.DYNAMIC_BROKER_LOGGER_CONFIG,
    });
  });

  it.each(ALL_VERSIONS)('reads every field kafkajs sends in version %i; its empty key list means all keys', async (version) => {
    const args = {
      resources: REQUEST.resources.map((each) => ({ type: each.resourceType, name: each.resourceName, configNames: each.configurationKeys ?? [] })),
      includeSynonyms: true,
    };
    const body: Uint8Array = await kafkajs.requestBytes(version, args);
    expect(decoded(body, version)).toEqual({ ...REQUEST, includeSynonyms: version >= 1 });
  });

  it.each(ALL_VERSIONS)('reads version %i from bytes built from the spec, an empty key list as no keys', (version) => {
    const request = { resources: [...REQUEST.resources, { resourceType: 4, resourceName: '2', configurationKeys: [] }], includeSynonyms: version >= 1 };
    expect(decoded(specRequestBytes(version, request), version)).toEqual(request);
  });

  it.each(ALL_VERSIONS)('refuses every truncation of a version %i request with KafkaDecodeError', (version) => {
    expect(prefixesNotRefused(specRequestBytes(version, REQUEST), (reader) => decodeDescribeConfigsRequest(reader, version))).toEqual([]);
  });

  it.each([-1, 3])('refuses version %i, which it does not serve, with KafkaDecodeError', (version) => {
    expect(() => decodeDescribeConfigsRequest(new KafkaReader(specRequestBytes(2, REQUEST)), version)).toThrow(KafkaDecodeError);
  });
});

describe('encodeDescribeConfigsResponse', () => {
  it.each(ALL_VERSIONS)('writes version %i exactly as the spec lays it out', (version) => {
    expect(encoded(version, RESPONSE)).toEqual(specResponseBytes(version, RESPONSE));
  });

  it.each(ALL_VERSIONS)('writes version %i so that kafkajs reads every field, and its client reports the resource error', async (version) => {
    const response = kafkajs.response(version);
    const decodedByKafkajs = await response.decode(encoded(version, RESPONSE));
    expect(decodedByKafkajs).toEqual({
      ...(version <= 1 ? { throttleTime: 8 } : { throttleTime: 0, clientSideThrottleTime: 8 }),
      resources: RESPONSE.results.map((result) => ({
        errorCode: result.errorCode,
        errorMessage: result.errorMessage,
        resourceType: result.resourceType,
        resourceName: result.resourceName,
        configEntries: result.configs.map((config) => kafkajsEntry(version, result.resourceType, config)),
      })),
    });
    await expect(response.parse(decodedByKafkajs)).rejects.toMatchObject({ type: 'UNKNOWN_TOPIC_OR_PARTITION' });
  });

  it.each(ALL_VERSIONS)('writes the spec defaults in version %i for fields left out', (version) => {
    const config = { name: 'n', value: 'v', readOnly: false, configSource: CONFIG_SOURCES.dynamicTopicConfig, isSensitive: false };
    const minimal: DescribeConfigsResponse = { results: [{ errorCode: 0, resourceType: 2, resourceName: 't', configs: [config] }] };
    const inFull: DescribeConfigsResponse = { throttleTimeMs: 0, results: [{ errorCode: 0, errorMessage: null, resourceType: 2, resourceName: 't', configs: [{ ...config, synonyms: [] }] }] };
    expect(encoded(version, minimal)).toEqual(specResponseBytes(version, inFull));
  });

  it.each([-1, 3])('refuses to write version %i', (version) => {
    expect(() => encoded(version, RESPONSE)).toThrow(/outside the served versions/);
  });
});
