/**
 * AlterConfigs (key 33), AlterConfigsRequest.json / AlterConfigsResponse.json, versions 0-1 (version 2 is
 * the first flexible one). The requests of both versions are the same; version 1 is version 0 answered
 * before throttling (KIP-219). Each resource's dynamic configs are replaced as a whole by the set given,
 * so a key left out returns to its default; IncrementalAlterConfigs (incremental-alter-configs.ts) changes
 * keys one at a time instead, and its answer is this one, written by the same code.
 */
import type { KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';
import { requireRequestVersion, requireResponseVersion, type VersionRange } from './header';

export const ALTER_CONFIGS_VERSIONS: VersionRange = { min: 0, max: 1 };

export interface AlterableConfig {
  name: string;
  /** The value to set. Nullable on the wire; Kafka skips such a key, which leaves it out of the new set. */
  value: string | null;
}

export interface AlterConfigsResource {
  /** One of CONFIG_RESOURCE_TYPES (describe-configs.ts). */
  resourceType: number;
  resourceName: string;
  /** The whole new set of the resource's dynamic configs, in the order sent. */
  configs: AlterableConfig[];
}

/** A decoded AlterConfigs request (the same in versions 0 and 1). */
export interface AlterConfigsRequest {
  resources: AlterConfigsResource[];
  /** True to check the change and answer as if it were made, without making it. */
  validateOnly: boolean;
}

export function decodeAlterConfigsRequest(reader: KafkaReader, version: number): AlterConfigsRequest {
  requireRequestVersion('AlterConfigs', ALTER_CONFIGS_VERSIONS, version);
  const resources = reader.array(
    (each): AlterConfigsResource => ({
      resourceType: each.int8('AlterConfigs resource_type'),
      resourceName: each.string('AlterConfigs resource_name'),
      configs: each.array(
        (config): AlterableConfig => ({ name: config.string('AlterConfigs config name'), value: config.nullableString('AlterConfigs config value') }),
        'AlterConfigs configs',
      ),
    }),
    'AlterConfigs resources',
  );
  const validateOnly = reader.boolean('AlterConfigs validate_only');
  return { resources, validateOnly };
}

export interface AlterConfigsResourceResult {
  errorCode: number;
  /** The error's text, or null (also when absent). */
  errorMessage?: string | null;
  resourceType: number;
  resourceName: string;
}

/**
 * An AlterConfigs answer, one result per resource of the request; also the answer of
 * IncrementalAlterConfigs, whose response has the same fields.
 */
export interface AlterConfigsResponse {
  /** 0 when absent. */
  throttleTimeMs?: number;
  responses: readonly AlterConfigsResourceResult[];
}

/** Writes the body of an AlterConfigs response (no header, no size). */
export function encodeAlterConfigsResponse(writer: KafkaWriter, version: number, response: AlterConfigsResponse): void {
  requireResponseVersion('AlterConfigs', ALTER_CONFIGS_VERSIONS, version);
  encodeAlterConfigsResults(writer, response);
}

/**
 * Writes the body shared by every non-flexible answer of AlterConfigs (versions 0-1) and
 * IncrementalAlterConfigs (version 0): the throttle time and one result per resource. It checks no
 * version, so each API's encoder checks its own range before calling it.
 */
export function encodeAlterConfigsResults(writer: KafkaWriter, response: AlterConfigsResponse): void {
  writer.int32(response.throttleTimeMs ?? 0);
  writer.array(
    response.responses,
    (each, result) => void each.int16(result.errorCode).nullableString(result.errorMessage ?? null).int8(result.resourceType).string(result.resourceName),
  );
}
