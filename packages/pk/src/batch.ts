/**
 * The plan of one batch of puts and deletes on one PK bucket.
 *
 * Operations apply in order, and each sees the effect of the earlier ones of the same batch, so a batch
 * means the same as its operations sent one by one. The plan is all or nothing: a bad operation throws
 * InvalidArgumentError and no plan exists, so a rejected request writes nothing.
 */
import { LIMITS } from '@mink/config';
import type { PkOptions, TableRecord } from '@mink/meta';
import { InvalidArgumentError } from '@mink/protocol';
import type { Row } from '@mink/records';

import { type ChangeRecord, checkPartialPut, planDelete, planPut } from './changelog';
import { keyColumnOrder, keyText, primaryKeyBytes } from './keys';

/**
 * One operation of a batch. A put's `row` and a delete's `key` are canonical rows (see @mink/records);
 * a delete's `key` needs only the primary key columns.
 */
export type PkOperation = { kind: 'put'; row: Row; partialColumns?: string[] } | { kind: 'delete'; key: Row };

/** The final state of one key after a batch: the row to store, or null to remove the key. */
export interface PkWrite {
  key: Uint8Array;
  /** The key's `keyText`, by which writes not applied yet are tracked. */
  text: string;
  row: Row | null;
}

/**
 * What a batch does. `changes` are in operation order and go to the changelog first; `writes` hold one
 * entry per key the batch changed, in the order the batch first changed them, and go to the KV tablet
 * after. A key whose operations all left it as it was has no write.
 */
export interface BatchPlan {
  writes: PkWrite[];
  changes: ChangeRecord[];
}

/**
 * Plans `operations` on `table` given `lookup`, which returns the stored row of a tablet key, given with
 * its `keyText` (undefined when there is none). `lookup` is called at most once per key; later operations
 * on a key see the state the earlier ones left.
 */
export function planBatch(
  options: PkOptions,
  table: Pick<TableRecord, 'columns' | 'primaryKey' | 'bucketKey'>,
  lookup: (key: Uint8Array, text: string) => Row | undefined,
  operations: readonly PkOperation[],
): BatchPlan {
  if (operations.length > LIMITS.pkBatchOperationsMax) {
    throw new InvalidArgumentError(`a batch holds at most ${LIMITS.pkBatchOperationsMax} operations, got ${operations.length}`);
  }
  const keyColumns = keyColumnOrder(table.primaryKey, table.bucketKey);
  // The state of every key seen so far: null once deleted. Insertion order of `writes` is first-change order.
  const seen = new Map<string, Row | null | undefined>();
  const writes = new Map<string, PkWrite>();
  const changes: ChangeRecord[] = [];

  const currentOf = (key: Uint8Array, text: string): Row | undefined => {
    if (!seen.has(text)) seen.set(text, lookup(key, text));
    return seen.get(text) ?? undefined;
  };

  operations.forEach((operation, index) => {
    try {
      // A partial put without a key column would otherwise be reported as a row without a key value.
      if (operation.kind === 'put' && operation.partialColumns !== undefined) {
        checkPartialPut(options, table.columns, table.primaryKey, operation.partialColumns);
      }
      const key = primaryKeyBytes(operation.kind === 'put' ? operation.row : operation.key, keyColumns);
      const text = keyText(key);
      const current = currentOf(key, text);
      const plan =
        operation.kind === 'put'
          ? planPut(options, table.columns, table.primaryKey, current, operation.row, operation.partialColumns)
          : planDelete(options, current);
      if (plan.next === undefined) return;
      seen.set(text, plan.next);
      const write = writes.get(text);
      if (write === undefined) writes.set(text, { key, text, row: plan.next });
      else write.row = plan.next;
      changes.push(...plan.changes);
    } catch (error) {
      // Name the operation so a client sending many can find the bad one.
      if (error instanceof InvalidArgumentError) throw new InvalidArgumentError(`operation ${index}: ${error.message}`);
      throw error;
    }
  });
  return { writes: [...writes.values()], changes };
}
