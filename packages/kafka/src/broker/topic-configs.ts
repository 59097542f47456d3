/**
 * Kafka topic configs as mink's table properties (issue 40 item 3): what CreateTopics, DescribeConfigs,
 * AlterConfigs and IncrementalAlterConfigs say in Kafka's names, and what a topic's table stores. Pure.
 *
 * - `retention.ms` is the table's `table.log.ttl` (milliseconds; -1, keep for ever, is `0`); absent, mink's
 *   default retention of 7 days, which is Kafka's.
 * - `cleanup.policy=delete`, `compression.type=producer` and `message.timestamp.type=CreateTime` are what
 *   mink does: taken as they are, nothing stored; another value of them is refused.
 * - Any other config is refused by name (INVALID_CONFIG), so a client never believes a setting took effect.
 */
import { parseDurationMs } from '@mink/config';
import { LAKE_DEFAULTS, LOG_TTL_PROPERTY } from '@mink/meta';

export const RETENTION_MS = 'retention.ms';

/** Configs whose only value mink takes is what it does anyway. */
const FIXED_CONFIGS: Readonly<Record<string, string>> = {
  'cleanup.policy': 'delete',
  'compression.type': 'producer',
  'message.timestamp.type': 'CreateTime',
};

/** The configs mink takes, for messages. */
const TAKEN = `${RETENTION_MS}, and ${Object.entries(FIXED_CONFIGS)
  .map(([name, value]) => `${name}=${value}`)
  .join(', ')} as they are`;

/** A config refused, with the reason in words (the Kafka error is INVALID_CONFIG). */
export interface ConfigRefusal {
  refused: string;
}

/** The table property of a `retention.ms` value, or why it is refused. */
function logTtlOf(value: string): string | ConfigRefusal {
  if (!/^-?\d+$/.test(value.trim())) return { refused: `${RETENTION_MS} must be -1 or a positive number of milliseconds, got '${value}'` };
  const milliseconds = Number(value);
  if (milliseconds === -1) return '0';
  if (!Number.isSafeInteger(milliseconds) || milliseconds < 1) return { refused: `${RETENTION_MS} must be -1 or a positive number of milliseconds, got '${value}'` };
  return String(milliseconds);
}

/** Why a config other than retention.ms is refused, or null when it is a fixed one at mink's value. */
function refusalOfOther(name: string, value: string | null): ConfigRefusal | null {
  const fixed = Object.prototype.hasOwnProperty.call(FIXED_CONFIGS, name) ? FIXED_CONFIGS[name] : undefined;
  if (fixed === undefined) return { refused: `config '${name}' is not supported (mink takes ${TAKEN})` };
  if (value !== null && value !== fixed) return { refused: `config '${name}' can only be '${fixed}' in mink, got '${value}'` };
  return null;
}

/** The table properties of a new topic's configs (CreateTopics), or the first refusal. */
export function tablePropertiesOfTopicConfigs(configs: Readonly<Record<string, string>>): { properties: Record<string, string> } | ConfigRefusal {
  const mapped = tablePropertyChangesOfTopicConfigs(Object.entries(configs).map(([name, value]) => ({ name, value })));
  if ('refused' in mapped) return mapped;
  // Every config of a create has a value, so every property has one.
  const properties: Record<string, string> = {};
  for (const [name, value] of Object.entries(mapped.properties)) if (value !== null) properties[name] = value;
  return { properties };
}

/**
 * The table property changes of config changes (AlterConfigs sets, IncrementalAlterConfigs sets and
 * deletes): a value sets, null returns to the default (the property removed). Or the first refusal. One of
 * the table's own properties (`current`, as DescribeConfigs shows them) named with its current value is
 * taken and changes nothing, so a client that writes back what it described is not refused.
 */
export function tablePropertyChangesOfTopicConfigs(
  changes: readonly { name: string; value: string | null }[],
  current: Readonly<Record<string, string>> = {},
): { properties: Record<string, string | null> } | ConfigRefusal {
  const properties: Record<string, string | null> = {};
  for (const { name, value } of changes) {
    if (name !== LOG_TTL_PROPERTY && Object.prototype.hasOwnProperty.call(current, name) && current[name] === value) continue;
    if (name === RETENTION_MS) {
      if (value === null) {
        properties[LOG_TTL_PROPERTY] = null;
        continue;
      }
      const ttl = logTtlOf(value);
      if (typeof ttl !== 'string') return ttl;
      properties[LOG_TTL_PROPERTY] = ttl;
      continue;
    }
    const refused = refusalOfOther(name, value);
    if (refused) return refused;
  }
  return { properties };
}

/** A topic config as DescribeConfigs reports it. */
export interface TopicConfig {
  value: string;
  /** True when the topic does not set it (Kafka's DEFAULT_CONFIG source). */
  isDefault: boolean;
}

/**
 * The configs of a topic whose table has `properties`: retention.ms (from table.log.ttl, or the default),
 * the fixed ones (defaults), and the table's other properties as they are (mink's own, such as
 * `table.datalake.enabled`), by name.
 */
export function topicConfigsOfTableProperties(properties: Readonly<Record<string, string>>): Record<string, TopicConfig> {
  const configs: Record<string, TopicConfig> = {};
  const ttl = Object.prototype.hasOwnProperty.call(properties, LOG_TTL_PROPERTY) ? properties[LOG_TTL_PROPERTY] : undefined;
  configs[RETENTION_MS] = ttl === undefined ? { value: String(LAKE_DEFAULTS.logTtlMs), isDefault: true } : { value: /^\s*0\s*$/.test(ttl) ? '-1' : String(parseDurationMs(ttl, LOG_TTL_PROPERTY)), isDefault: false };
  for (const [name, value] of Object.entries(FIXED_CONFIGS)) configs[name] = { value, isDefault: true };
  for (const [name, value] of Object.entries(properties)) if (name !== LOG_TTL_PROPERTY) configs[name] = { value, isDefault: false };
  return configs;
}

/** One change of a topic's configs in Kafka's names: a value sets it, null returns it to its default. */
export interface TopicConfigChange {
  name: string;
  value: string | null;
}

/** A refusal that is Kafka's INVALID_REQUEST (a malformed request) rather than INVALID_CONFIG. */
export interface RequestRefusal {
  refused: string;
  invalidRequest: true;
}

/**
 * The changes of an AlterConfigs resource: its configs replace the topic's whole set, so `retention.ms`
 * not named (or named without a value, which Kafka skips) returns to its default. A name given twice is
 * refused.
 */
export function changesOfAlterConfigs(configs: readonly { name: string; value: string | null }[]): TopicConfigChange[] | RequestRefusal {
  const named = new Set<string>();
  const changes: TopicConfigChange[] = [];
  for (const { name, value } of configs) {
    if (named.has(name)) return { refused: `config '${name}' is named twice`, invalidRequest: true };
    named.add(name);
    if (value !== null) changes.push({ name, value });
  }
  if (!changes.some((change) => change.name === RETENTION_MS)) changes.push({ name: RETENTION_MS, value: null });
  return changes;
}

/** IncrementalAlterConfigs's config operations (the request's `config_operation`). */
const OPERATIONS = { set: 0, delete: 1, append: 2, subtract: 3 } as const;

/**
 * The changes of an IncrementalAlterConfigs resource: SET a value, DELETE back to the default. APPEND and
 * SUBTRACT apply to list configs, which mink has none of (INVALID_CONFIG); a name given twice, a SET
 * without a value and an unknown operation are malformed (INVALID_REQUEST).
 */
export function changesOfIncrementalAlterConfigs(configs: readonly { name: string; configOperation: number; value: string | null }[]): TopicConfigChange[] | ConfigRefusal | RequestRefusal {
  const named = new Set<string>();
  const changes: TopicConfigChange[] = [];
  for (const { name, configOperation, value } of configs) {
    if (named.has(name)) return { refused: `config '${name}' is named twice`, invalidRequest: true };
    named.add(name);
    switch (configOperation) {
      case OPERATIONS.set:
        if (value === null) return { refused: `a SET of config '${name}' needs a value`, invalidRequest: true };
        changes.push({ name, value });
        break;
      case OPERATIONS.delete:
        changes.push({ name, value: null });
        break;
      case OPERATIONS.append:
      case OPERATIONS.subtract:
        return { refused: `config '${name}' is not a list: ${configOperation === OPERATIONS.append ? 'APPEND' : 'SUBTRACT'} does not apply to it` };
      default:
        return { refused: `config operation ${configOperation} of '${name}' is unknown (0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT)`, invalidRequest: true };
    }
  }
  return changes;
}
