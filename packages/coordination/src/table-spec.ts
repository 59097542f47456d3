import { parsePkOptions, validateTableSpec, type TableSpec } from '@mink/meta';
import { InvalidArgumentError } from '@mink/protocol';

/**
 * The spec of a table to create, checked before anything is proposed: its schema (as the metadata log
 * checks it again when it applies the command) and, for a table with a primary key, its merge options,
 * so a table whose `merge-engine`, `version-column` or `delete-behavior` its buckets could never open
 * with is refused up front. Throws InvalidArgumentError (HTTP 400) naming what is wrong.
 */
export function checkCreateTableSpec(input: unknown): TableSpec {
  const validated = validateTableSpec(input);
  if (!validated.ok) throw new InvalidArgumentError(validated.message);
  const { spec } = validated;
  if (spec.primaryKey !== undefined) {
    parsePkOptions({ columns: spec.columns, primaryKey: spec.primaryKey, properties: spec.properties ?? {} });
  }
  return spec;
}
