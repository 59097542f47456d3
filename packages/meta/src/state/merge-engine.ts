/**
 * How a PK table merges writes, read from its `properties` (docs/architecture.md §8.3, after Fluss's merge engines and
 * `table.delete.behavior`).
 *
 * | property | values |
 * | --- | --- |
 * | `merge-engine` | `last_write_wins` (default), `first_row`, `versioned` |
 * | `version-column` | required for `versioned` and rejected otherwise: an `int32`, `int64` or `timestamp` column |
 * | `delete-behavior` | `allow` (default for `last_write_wins`), `ignore` (default for the others), `disable` |
 *
 * `first_row` keeps the first row of a key forever and `versioned` keeps the row with the highest version,
 * so a delete would let an older or later row take the key again and break the engine's promise. As in
 * Fluss, both engines therefore ignore deletes unless the table disables them, and naming `allow` for them
 * is rejected rather than silently overridden, so the table says what it does. Both also reject partial
 * puts (see changelog.ts in @mink/pk), as Fluss does.
 */
import type { ColumnType, TableRecord } from './view';
import { InvalidArgumentError } from '@mink/protocol';

export type MergeEngine = 'last_write_wins' | 'first_row' | 'versioned';
export type DeleteBehavior = 'allow' | 'ignore' | 'disable';

export const MERGE_ENGINE_PROPERTY = 'merge-engine';
export const VERSION_COLUMN_PROPERTY = 'version-column';
export const DELETE_BEHAVIOR_PROPERTY = 'delete-behavior';

const MERGE_ENGINES: readonly MergeEngine[] = ['last_write_wins', 'first_row', 'versioned'];
const DELETE_BEHAVIORS: readonly DeleteBehavior[] = ['allow', 'ignore', 'disable'];
const VERSION_COLUMN_TYPES: readonly ColumnType[] = ['int32', 'int64', 'timestamp'];

/**
 * The merge options of one PK table. `versionColumn` is set exactly when `mergeEngine` is `versioned`,
 * and `deleteBehavior` is never `allow` unless `mergeEngine` is `last_write_wins`.
 */
export type PkOptions =
  | { mergeEngine: 'last_write_wins'; deleteBehavior: DeleteBehavior }
  | { mergeEngine: 'first_row'; deleteBehavior: Exclude<DeleteBehavior, 'allow'> }
  | { mergeEngine: 'versioned'; versionColumn: string; deleteBehavior: Exclude<DeleteBehavior, 'allow'> };

/**
 * Reads the merge options of `table` from its properties. Throws InvalidArgumentError naming the property
 * and the accepted values when one is wrong, so table creation can call it to reject a bad table.
 * Properties this module does not know are left to others.
 */
export function parsePkOptions(table: Pick<TableRecord, 'columns' | 'primaryKey' | 'properties'>): PkOptions {
  if (table.primaryKey.length === 0) throw new InvalidArgumentError('merge options apply only to tables with a primary key');
  const properties = table.properties;
  const mergeEngine = oneOf(properties, MERGE_ENGINE_PROPERTY, MERGE_ENGINES) ?? 'last_write_wins';
  const versionColumnName = propertyOf(properties, VERSION_COLUMN_PROPERTY);
  const deleteBehavior = oneOf(properties, DELETE_BEHAVIOR_PROPERTY, DELETE_BEHAVIORS);

  if (mergeEngine !== 'versioned' && versionColumnName !== undefined) {
    throw new InvalidArgumentError(`property '${VERSION_COLUMN_PROPERTY}' applies only to ${MERGE_ENGINE_PROPERTY} 'versioned', not '${mergeEngine}'`);
  }
  if (mergeEngine === 'last_write_wins') return { mergeEngine, deleteBehavior: deleteBehavior ?? 'allow' };

  if (deleteBehavior === 'allow') {
    throw new InvalidArgumentError(
      `${MERGE_ENGINE_PROPERTY} '${mergeEngine}' cannot allow deletes: set ${DELETE_BEHAVIOR_PROPERTY} to 'ignore' (its default) or 'disable'`,
    );
  }
  const forcedBehavior = deleteBehavior ?? 'ignore';
  if (mergeEngine === 'first_row') return { mergeEngine, deleteBehavior: forcedBehavior };

  if (versionColumnName === undefined) {
    throw new InvalidArgumentError(`${MERGE_ENGINE_PROPERTY} 'versioned' needs property '${VERSION_COLUMN_PROPERTY}' naming an int32, int64 or timestamp column`);
  }
  const versionColumn = table.columns.find((column) => column.name === versionColumnName);
  if (versionColumn === undefined) {
    throw new InvalidArgumentError(`${VERSION_COLUMN_PROPERTY} '${versionColumnName}' is not a column of the table`);
  }
  if (!VERSION_COLUMN_TYPES.includes(versionColumn.type)) {
    throw new InvalidArgumentError(
      `${VERSION_COLUMN_PROPERTY} '${versionColumnName}' is of type ${versionColumn.type}; it must be one of ${VERSION_COLUMN_TYPES.join(', ')}`,
    );
  }
  return { mergeEngine, versionColumn: versionColumnName, deleteBehavior: forcedBehavior };
}

/** The value of property `name`, or undefined when the table does not set it. */
function propertyOf(properties: Record<string, string>, name: string): string | undefined {
  return Object.hasOwn(properties, name) ? properties[name] : undefined;
}

function oneOf<T extends string>(properties: Record<string, string>, name: string, accepted: readonly T[]): T | undefined {
  const value = propertyOf(properties, name);
  if (value === undefined) return undefined;
  if (!(accepted as readonly string[]).includes(value)) {
    throw new InvalidArgumentError(`property '${name}' must be one of ${accepted.map((each) => `'${each}'`).join(', ')}, got '${value}'`);
  }
  return value as T;
}
