/**
 * DescribeConfigs (key 32), DescribeConfigsRequest.json / DescribeConfigsResponse.json, versions 0-2
 * (none flexible). Version 1 replaces each config's `is_default` flag with its source and adds synonyms;
 * version 2 is version 1 answered before throttling (KIP-219).
 */
import type { KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';
import { requireRequestVersion, requireResponseVersion, type VersionRange } from './header';

export const DESCRIBE_CONFIGS_VERSIONS: VersionRange = { min: 0, max: 2 };

/** The resource types a DescribeConfigs request can name (the broker's ConfigResource.Type ids). */
export const CONFIG_RESOURCE_TYPES = {
  unknown: 0,
  topic: 2,
  broker: 4,
  brokerLogger: 8,
} as const;

/** Where a config value comes from (the broker's ConfigSource ids), from the most specific to the default. */
export const CONFIG_SOURCES = {
  unknown: 0,
  dynamicTopicConfig: 1,
  dynamicBrokerConfig: 2,
  dynamicDefaultBrokerConfig: 3,
  staticBrokerConfig: 4,
  defaultConfig: 5,
  dynamicBrokerLoggerConfig: 6,
} as const;

/** The first version in which each field that is not in every version appears. */
const FIRST_VERSION_WITH = {
  includeSynonyms: 1,
  configSource: 1,
  synonyms: 1,
} as const;

export interface DescribeConfigsResource {
  /** One of CONFIG_RESOURCE_TYPES. */
  resourceType: number;
  resourceName: string;
  /** The keys asked for, or null for every key. */
  configurationKeys: string[] | null;
}

/** A decoded DescribeConfigs request; `includeSynonyms` is false below version 1. */
export interface DescribeConfigsRequest {
  resources: DescribeConfigsResource[];
  includeSynonyms: boolean;
}

export function decodeDescribeConfigsRequest(reader: KafkaReader, version: number): DescribeConfigsRequest {
  requireRequestVersion('DescribeConfigs', DESCRIBE_CONFIGS_VERSIONS, version);
  const resources = reader.array(
    (each): DescribeConfigsResource => ({
      resourceType: each.int8('DescribeConfigs resource_type'),
      resourceName: each.string('DescribeConfigs resource_name'),
      configurationKeys: each.nullableArray((key) => key.string('DescribeConfigs configuration key'), 'DescribeConfigs configuration_keys'),
    }),
    'DescribeConfigs resources',
  );
  const includeSynonyms = version >= FIRST_VERSION_WITH.includeSynonyms ? reader.boolean('DescribeConfigs include_synonyms') : false;
  return { resources, includeSynonyms };
}

export interface DescribeConfigsSynonym {
  name: string;
  value: string | null;
  /** One of CONFIG_SOURCES. */
  source: number;
}

export interface DescribeConfigsEntry {
  name: string;
  /** Null for a sensitive config or one without a value. */
  value: string | null;
  readOnly: boolean;
  /**
   * One of CONFIG_SOURCES, written from version 1. Version 0 has only an `is_default` flag, which is
   * written as `configSource === CONFIG_SOURCES.defaultConfig`, so the answer has one truth for both.
   */
  configSource: number;
  isSensitive: boolean;
  /** Written from version 1; empty when absent (and when the request did not include synonyms). */
  synonyms?: readonly DescribeConfigsSynonym[];
}

export interface DescribeConfigsResult {
  errorCode: number;
  /** The error's text, or null (also when absent). */
  errorMessage?: string | null;
  resourceType: number;
  resourceName: string;
  configs: readonly DescribeConfigsEntry[];
}

/** A DescribeConfigs answer, one result per resource of the request. */
export interface DescribeConfigsResponse {
  /** 0 when absent. */
  throttleTimeMs?: number;
  results: readonly DescribeConfigsResult[];
}

/** Writes the body of a DescribeConfigs response (no header, no size). */
export function encodeDescribeConfigsResponse(writer: KafkaWriter, version: number, response: DescribeConfigsResponse): void {
  requireResponseVersion('DescribeConfigs', DESCRIBE_CONFIGS_VERSIONS, version);
  writer.int32(response.throttleTimeMs ?? 0);
  writer.array(response.results, (each, result) => {
    each.int16(result.errorCode).nullableString(result.errorMessage ?? null).int8(result.resourceType).string(result.resourceName);
    each.array(result.configs, (inner, config) => {
      inner.string(config.name).nullableString(config.value).boolean(config.readOnly);
      if (version >= FIRST_VERSION_WITH.configSource) inner.int8(config.configSource);
      else inner.boolean(config.configSource === CONFIG_SOURCES.defaultConfig);
      inner.boolean(config.isSensitive);
      if (version >= FIRST_VERSION_WITH.synonyms) {
        inner.array(config.synonyms ?? [], (synonym, entry) => void synonym.string(entry.name).nullableString(entry.value).int8(entry.source));
      }
    });
  });
}
