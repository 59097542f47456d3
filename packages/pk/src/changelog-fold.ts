/**
 * The fold of a PK bucket's changelog into its KV tablet (docs/architecture.md §8.3, issue 5): the changelog is the truth
 * and the tablet is the fold of it. `+I` and `+U` store the row under its key, `-D` removes the key, `-U`
 * changes nothing (the `+U` after it stores the new row). The replay after a failover folds with
 * foldChanges; live writes apply their planned key states with tabletWritesOf, which gives the same tablet.
 */
import type { ColumnSpec } from '@mink/meta';
import type { ChangeType, Row } from '@mink/records';

import type { PkWrite } from './batch';
import type { ChangeRecord } from './changelog';
import { keyText, primaryKeyBytes } from './keys';
import { encodeStoredRow } from './stored-row';

/** One write to the tablet: the stored bytes of `key`'s row, or null to remove the key (the shape of @mink/kv's KvWrite). */
export interface TabletWrite {
  key: Uint8Array;
  value: Uint8Array | null;
}

/**
 * The tablet writes of `changes` (in changelog order): one per key, holding the last row stored under it
 * or null when the last change deleted it, ordered by each key's last change. `keyColumns` is the tablet
 * key order of the primary key (keyColumnOrder).
 */
export function foldChanges(columns: readonly ColumnSpec[], keyColumns: readonly string[], changes: readonly { changeType: string; row: Row }[]): TabletWrite[] {
  const writes = new Map<string, TabletWrite>();
  for (const change of changes) {
    if (change.changeType === '-U') continue;
    const key = primaryKeyBytes(change.row, keyColumns);
    const value = change.changeType === '-D' ? null : encodeStoredRow(columns, change.row);
    const text = keyText(key);
    // Re-inserting keeps the order of last change, which LMDB does not need but makes the batch readable.
    writes.delete(text);
    writes.set(text, { key, value });
  }
  return [...writes.values()];
}

/**
 * The tablet writes of planned writes (PkWrite, in plan order, several requests' one after another): the
 * last state of each key, stored or removed, ordered by each key's last write. For the writes of a plan
 * this is what foldChanges makes of the plan's change records (property-tested), without deriving each
 * change's key again: the leader applies a committed group's writes with it, and a replay folds the
 * changelog with foldChanges.
 */
export function tabletWritesOf(columns: readonly ColumnSpec[], planned: readonly PkWrite[]): TabletWrite[] {
  const writes = new Map<string, PkWrite>();
  for (const write of planned) {
    writes.delete(write.text);
    writes.set(write.text, write);
  }
  return Array.from(writes.values(), (write) => ({ key: write.key, value: write.row === null ? null : encodeStoredRow(columns, write.row) }));
}

/**
 * The change records of a changelog batch starting at `startOffset` that a tablet at `appliedOffset` has
 * not applied yet: those at `appliedOffset` and after (all of them when the batch starts later). `rows`
 * and `changeTypes` are the batch's, index for index.
 */
export function unappliedChanges(startOffset: number, rows: readonly Row[], changeTypes: readonly ChangeType[], appliedOffset: number): ChangeRecord[] {
  const skip = Math.max(0, appliedOffset - startOffset);
  return rows.slice(skip).map((row, index) => ({ changeType: changeTypes[skip + index]!, row }));
}
