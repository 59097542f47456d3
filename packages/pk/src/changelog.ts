/**
 * The merge of one put or delete with the current row of its key, and the change records it produces.
 *
 * These functions only plan: the caller appends the changes to the bucket's changelog, then applies
 * `next` to the KV tablet, then acknowledges (issue 5, write order). `next` is undefined when the
 * operation leaves the key as it was, so the caller writes nothing and the changelog gets nothing.
 */
import type { ColumnSpec, PkOptions } from '@mink/meta';
import { InvalidArgumentError } from '@mink/protocol';
import { type ChangeType, type Row, fieldOf, setField } from '@mink/records';


export type { ChangeType };

/** One entry of a PK bucket's changelog: the full row before (`-U`, `-D`) or after (`+I`, `+U`) a change. */
export interface ChangeRecord {
  changeType: ChangeType;
  row: Row;
}

/** The outcome of one put: the row to store (undefined when the key stays as it was) and its changes. */
export interface PutPlan {
  next: Row | undefined;
  changes: ChangeRecord[];
}

/** The outcome of one delete: null to remove the key, undefined when the key stays as it was. */
export interface DeletePlan {
  next: null | undefined;
  changes: ChangeRecord[];
}

/**
 * Plans a put of `incoming` onto `current`, the stored row of the same key (undefined when there is none).
 *
 * - A full put (no `partialColumns`) sets every column; columns `incoming` lacks become null.
 * - A partial put sets only `partialColumns`, which must name every primary key column and only columns of
 *   the table; the other columns keep their current values, or are null when the key is new. Only
 *   `last_write_wins` accepts partial puts.
 * - `last_write_wins` stores the merged row: `+I` for a new key, else `-U` current then `+U` merged, even
 *   when the two are equal, so a changelog reader sees every acknowledged put.
 * - `first_row` stores the row only when the key is new; a put of an existing key changes nothing.
 * - `versioned` replaces the current row unless the incoming version is lower; on an equal version the
 *   incoming row wins, as with Paimon's sequence field, so replaying a retried write is harmless and the
 *   last writer of a version is what a reader sees. A put without a version is rejected, because there is
 *   no order in which it could be placed.
 *
 * Throws InvalidArgumentError for a bad request; nothing is planned then.
 */
export function planPut(
  options: PkOptions,
  columns: readonly ColumnSpec[],
  primaryKey: readonly string[],
  current: Row | undefined,
  incoming: Row,
  partialColumns?: readonly string[],
): PutPlan {
  if (partialColumns !== undefined) checkPartialPut(options, columns, primaryKey, partialColumns);
  const merged = partialColumns === undefined ? wholeRow(columns, incoming) : mergedRow(columns, current, incoming, partialColumns);

  switch (options.mergeEngine) {
    case 'last_write_wins':
      return replacing(current, merged);
    case 'first_row':
      return current === undefined ? { next: merged, changes: [{ changeType: '+I', row: merged }] } : unchanged();
    case 'versioned': {
      const incomingVersion = fieldOf(merged, options.versionColumn);
      if (incomingVersion === null || incomingVersion === undefined) {
        throw new InvalidArgumentError(`version column '${options.versionColumn}' must have a value in every put of a versioned table`);
      }
      if (current === undefined) return replacing(current, merged);
      const currentVersion = fieldOf(current, options.versionColumn);
      // Every stored row got past the check above, so a stored row without a version is a broken invariant.
      if (!isVersion(currentVersion)) throw new Error(`stored row has no version in column '${options.versionColumn}'`);
      if (!isVersion(incomingVersion)) throw new Error(`version column '${options.versionColumn}' holds a non-numeric value`);
      return incomingVersion < currentVersion ? unchanged() : replacing(current, merged);
    }
  }
}

/**
 * Plans a delete of the key whose stored row is `current` (undefined when there is none). `allow` removes
 * the row with a `-D` of it; deleting a missing key changes nothing. `ignore` changes nothing. `disable`
 * rejects the delete with InvalidArgumentError, whether or not the key exists, so a client learns at once
 * that the table never deletes.
 */
export function planDelete(options: PkOptions, current: Row | undefined): DeletePlan {
  switch (options.deleteBehavior) {
    case 'disable':
      throw new InvalidArgumentError('deletes are disabled for this table');
    case 'ignore':
      return { next: undefined, changes: [] };
    case 'allow':
      return current === undefined ? { next: undefined, changes: [] } : { next: null, changes: [{ changeType: '-D', row: current }] };
  }
}

function replacing(current: Row | undefined, merged: Row): PutPlan {
  if (current === undefined) return { next: merged, changes: [{ changeType: '+I', row: merged }] };
  return {
    next: merged,
    changes: [
      { changeType: '-U', row: current },
      { changeType: '+U', row: merged },
    ],
  };
}

function unchanged(): PutPlan {
  return { next: undefined, changes: [] };
}

function isVersion(value: unknown): value is number | bigint {
  return typeof value === 'number' || typeof value === 'bigint';
}

/**
 * Checks the column list of a partial put: only `last_write_wins` accepts one, and it must name every
 * primary key column and only columns of the table, each once. Throws InvalidArgumentError otherwise.
 * `planPut` calls it; a caller may call it first to report a bad list before it looks at the row's key.
 */
export function checkPartialPut(options: PkOptions, columns: readonly ColumnSpec[], primaryKey: readonly string[], partialColumns: readonly string[]): void {
  if (options.mergeEngine !== 'last_write_wins') {
    throw new InvalidArgumentError(`merge engine '${options.mergeEngine}' does not accept partial puts; put whole rows`);
  }
  const named = new Set<string>();
  for (const name of partialColumns) {
    if (!columns.some((column) => column.name === name)) throw new InvalidArgumentError(`unknown column '${name}' in a partial put`);
    if (named.has(name)) throw new InvalidArgumentError(`column '${name}' is listed twice in a partial put`);
    named.add(name);
  }
  const missing = primaryKey.find((name) => !named.has(name));
  if (missing !== undefined) throw new InvalidArgumentError(`a partial put must set every primary key column; '${missing}' is missing`);
}

/** A new row holding every column of the table in table order, from `incoming` (missing values null). */
function wholeRow(columns: readonly ColumnSpec[], incoming: Row): Row {
  const row: Row = {};
  for (const column of columns) setField(row, column.name, valueOrNull(fieldOf(incoming, column.name)));
  return row;
}

/** A new row with `partialColumns` from `incoming` and every other column from `current` (null without one). */
function mergedRow(columns: readonly ColumnSpec[], current: Row | undefined, incoming: Row, partialColumns: readonly string[]): Row {
  const row: Row = {};
  for (const column of columns) {
    const source = partialColumns.includes(column.name) ? incoming : current;
    setField(row, column.name, source === undefined ? null : valueOrNull(fieldOf(source, column.name)));
  }
  return row;
}

function valueOrNull(value: unknown): unknown {
  return value === undefined ? null : value;
}
