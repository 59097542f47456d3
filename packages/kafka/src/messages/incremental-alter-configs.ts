/**
 * IncrementalAlterConfigs (key 44), IncrementalAlterConfigsRequest.json /
 * IncrementalAlterConfigsResponse.json, version 0 (version 1 is the first flexible one). Unlike
 * AlterConfigs, which replaces a resource's whole set of dynamic configs, each entry names one key and
 * what to do to it (KIP-339); keys not named are left as they are. The answer has AlterConfigs's fields
 * and is written by its code (alter-configs.ts).
 */
import type { KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';
import { encodeAlterConfigsResults, type AlterConfigsResponse } from './alter-configs';
import { requireRequestVersion, requireResponseVersion, type VersionRange } from './header';

export const INCREMENTAL_ALTER_CONFIGS_VERSIONS: VersionRange = { min: 0, max: 0 };

/** What an entry does to its key (the broker's AlterConfigOp.OpType ids). */
export const CONFIG_OPERATIONS = {
  /** Sets the key to the value. */
  set: 0,
  /** Returns the key to its default; the value is ignored (clients send null). */
  delete: 1,
  /** Adds the value's items to a list-typed key. */
  append: 2,
  /** Removes the value's items from a list-typed key. */
  subtract: 3,
} as const;

export interface IncrementalAlterableConfig {
  name: string;
  /** One of CONFIG_OPERATIONS; any other id is passed on as it is, for the broker to refuse. */
  configOperation: number;
  /** The operation's operand; null for a delete. */
  value: string | null;
}

export interface IncrementalAlterConfigsResource {
  /** One of CONFIG_RESOURCE_TYPES (describe-configs.ts). */
  resourceType: number;
  resourceName: string;
  /** The changes, in the order sent. */
  configs: IncrementalAlterableConfig[];
}

/** A decoded IncrementalAlterConfigs request. */
export interface IncrementalAlterConfigsRequest {
  resources: IncrementalAlterConfigsResource[];
  /** True to check the changes and answer as if they were made, without making them. */
  validateOnly: boolean;
}

export function decodeIncrementalAlterConfigsRequest(reader: KafkaReader, version: number): IncrementalAlterConfigsRequest {
  requireRequestVersion('IncrementalAlterConfigs', INCREMENTAL_ALTER_CONFIGS_VERSIONS, version);
  const resources = reader.array(
    (each): IncrementalAlterConfigsResource => ({
      resourceType: each.int8('IncrementalAlterConfigs resource_type'),
      resourceName: each.string('IncrementalAlterConfigs resource_name'),
      configs: each.array(
        (config): IncrementalAlterableConfig => ({
          name: config.string('IncrementalAlterConfigs config name'),
          configOperation: config.int8('IncrementalAlterConfigs config_operation'),
          value: config.nullableString('IncrementalAlterConfigs config value'),
        }),
        'IncrementalAlterConfigs configs',
      ),
    }),
    'IncrementalAlterConfigs resources',
  );
  const validateOnly = reader.boolean('IncrementalAlterConfigs validate_only');
  return { resources, validateOnly };
}

/** An IncrementalAlterConfigs answer, one result per resource of the request: AlterConfigs's fields. */
export type IncrementalAlterConfigsResponse = AlterConfigsResponse;

/** Writes the body of an IncrementalAlterConfigs response (no header, no size). */
export function encodeIncrementalAlterConfigsResponse(writer: KafkaWriter, version: number, response: IncrementalAlterConfigsResponse): void {
  requireResponseVersion('IncrementalAlterConfigs', INCREMENTAL_ALTER_CONFIGS_VERSIONS, version);
  encodeAlterConfigsResults(writer, response);
}
