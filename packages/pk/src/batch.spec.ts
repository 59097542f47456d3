import { LIMITS } from '@mink/config';
import type { ColumnSpec, PkOptions } from '@mink/meta';
import { InvalidArgumentError } from '@mink/protocol';
import type { Row } from '@mink/records';

import { type BatchPlan, type PkOperation, planBatch } from './batch';
import { keyColumnOrder, keyText, prefixBytes, primaryKeyBytes } from './keys';

const columns: ColumnSpec[] = [
  { name: 'id', type: 'int64' },
  { name: 'name', type: 'string' },
  { name: 'version', type: 'int64' },
];
const table = { columns, primaryKey: ['id'], bucketKey: [] as string[] };

const lastWriteWins: PkOptions = { mergeEngine: 'last_write_wins', deleteBehavior: 'allow' };
const firstRow: PkOptions = { mergeEngine: 'first_row', deleteBehavior: 'ignore' };
const versioned: PkOptions = { mergeEngine: 'versioned', versionColumn: 'version', deleteBehavior: 'ignore' };

const row = (id: bigint, name: string | null, version: bigint | null = 1n): Row => ({ id, name, version });
const key = (id: bigint): string => keyText(primaryKeyBytes({ id }, ['id']));
const put = (value: Row, partialColumns?: string[]): PkOperation => (partialColumns ? { kind: 'put', row: value, partialColumns } : { kind: 'put', row: value });
const remove = (id: bigint): PkOperation => ({ kind: 'delete', key: { id } });

/** The plan with tablet keys as text, so expectations compare data rather than buffers. */
function readable(plan: BatchPlan): { writes: [string, Row | null][]; changes: BatchPlan['changes'] } {
  for (const write of plan.writes) expect(write.text).toBe(keyText(write.key));
  return { writes: plan.writes.map((write) => [keyText(write.key), write.row]), changes: plan.changes };
}

/** A lookup over `stored` that counts its calls per key. */
function storeOf(stored: Row[]): { lookup: (bytes: Uint8Array, text: string) => Row | undefined; calls: Map<string, number> } {
  const rows = new Map(stored.map((each) => [key(each.id as bigint), each]));
  const calls = new Map<string, number>();
  return {
    calls,
    lookup: (bytes, given) => {
      const text = keyText(bytes);
      expect(given).toBe(text);
      calls.set(text, (calls.get(text) ?? 0) + 1);
      return rows.get(text);
    },
  };
}

describe('planBatch', () => {
  test.each<[string, PkOptions, Row[], PkOperation[], ReturnType<typeof readable>]>([
    [
      'a put then a delete of a new key inserts and deletes it',
      lastWriteWins,
      [],
      [put(row(1n, 'a')), remove(1n)],
      {
        writes: [[key(1n), null]],
        changes: [
          { changeType: '+I', row: row(1n, 'a') },
          { changeType: '-D', row: row(1n, 'a') },
        ],
      },
    ],
    [
      'two puts of a new key insert then update it',
      lastWriteWins,
      [],
      [put(row(1n, 'a')), put(row(1n, 'b'))],
      {
        writes: [[key(1n), row(1n, 'b')]],
        changes: [
          { changeType: '+I', row: row(1n, 'a') },
          { changeType: '-U', row: row(1n, 'a') },
          { changeType: '+U', row: row(1n, 'b') },
        ],
      },
    ],
    [
      'a delete then a put of a stored key re-inserts it',
      lastWriteWins,
      [row(1n, 'old')],
      [remove(1n), put(row(1n, 'new'))],
      {
        writes: [[key(1n), row(1n, 'new')]],
        changes: [
          { changeType: '-D', row: row(1n, 'old') },
          { changeType: '+I', row: row(1n, 'new') },
        ],
      },
    ],
    [
      'a partial put merges over a put earlier in the batch',
      lastWriteWins,
      [],
      [put(row(1n, 'a', 3n)), put({ id: 1n, name: 'b' }, ['id', 'name'])],
      {
        writes: [[key(1n), row(1n, 'b', 3n)]],
        changes: [
          { changeType: '+I', row: row(1n, 'a', 3n) },
          { changeType: '-U', row: row(1n, 'a', 3n) },
          { changeType: '+U', row: row(1n, 'b', 3n) },
        ],
      },
    ],
    [
      'writes follow first-change order and changes follow operation order',
      lastWriteWins,
      [row(2n, 'two')],
      [put(row(3n, 'c')), remove(2n), put(row(3n, 'd')), remove(9n)],
      {
        writes: [
          [key(3n), row(3n, 'd')],
          [key(2n), null],
        ],
        changes: [
          { changeType: '+I', row: row(3n, 'c') },
          { changeType: '-D', row: row(2n, 'two') },
          { changeType: '-U', row: row(3n, 'c') },
          { changeType: '+U', row: row(3n, 'd') },
        ],
      },
    ],
    [
      'first_row keeps the first put of the batch and ignores the delete',
      firstRow,
      [],
      [put(row(1n, 'a')), put(row(1n, 'b')), remove(1n)],
      { writes: [[key(1n), row(1n, 'a')]], changes: [{ changeType: '+I', row: row(1n, 'a') }] },
    ],
    ['first_row writes nothing for a stored key', firstRow, [row(1n, 'old')], [put(row(1n, 'b'))], { writes: [], changes: [] }],
    [
      'versioned compares each put with the one before it in the batch',
      versioned,
      [row(1n, 'stored', 5n)],
      [put(row(1n, 'lower', 4n)), put(row(1n, 'higher', 7n)), put(row(1n, 'between', 6n)), remove(1n)],
      {
        writes: [[key(1n), row(1n, 'higher', 7n)]],
        changes: [
          { changeType: '-U', row: row(1n, 'stored', 5n) },
          { changeType: '+U', row: row(1n, 'higher', 7n) },
        ],
      },
    ],
  ])('%s', (_case, options, stored, operations, expected) => {
    // Proves a batch means the same as its operations one by one: each sees the state the earlier ones left.
    expect(readable(planBatch(options, table, storeOf(stored).lookup, operations))).toEqual(expected);
  });

  test('looks up each key at most once', () => {
    // Proves the tablet is read once per key, and that later operations use the batch's own state instead.
    const store = storeOf([row(1n, 'a')]);
    planBatch(lastWriteWins, table, store.lookup, [put(row(1n, 'b')), remove(1n), put(row(1n, 'c')), put(row(2n, 'x'))]);
    expect(Object.fromEntries(store.calls)).toEqual({ [key(1n)]: 1, [key(2n)]: 1 });
  });

  test.each<[string, PkOptions, PkOperation[], string]>([
    ['a partial put without the key column', lastWriteWins, [put(row(1n, 'a')), put({ name: 'b' }, ['name'])], "operation 1: a partial put must set every primary key column; 'id' is missing"],
    ['a delete on a table that disables deletes', { mergeEngine: 'last_write_wins', deleteBehavior: 'disable' }, [put(row(1n, 'a')), remove(1n)], 'operation 1: deletes are disabled for this table'],
    ['a delete without a key value', lastWriteWins, [{ kind: 'delete', key: {} }], "operation 0: primary key column 'id' must have a value"],
    ['a versioned put without a version', versioned, [put(row(1n, 'a', null))], "operation 0: version column 'version' must have a value in every put of a versioned table"],
  ])('rejects the whole batch for %s', (_case, options, operations, message) => {
    // Proves one bad operation rejects the batch, naming the operation, so nothing of it is written.
    expect(() => planBatch(options, table, storeOf([]).lookup, operations)).toThrow(new InvalidArgumentError(message));
  });

  test('rejects a batch with more operations than the limit', () => {
    // Proves the batch bound holds before any row is planned.
    const operations = Array.from({ length: LIMITS.pkBatchOperationsMax + 1 }, (_, index) => put(row(BigInt(index), 'a')));
    expect(() => planBatch(lastWriteWins, table, storeOf([]).lookup, operations)).toThrow(InvalidArgumentError);
  });

  test('keys of a table whose bucket key is not a primary key prefix start with the bucket-key prefix', () => {
    // Proves batch writes use key order, so a prefix lookup by bucket key finds the rows the batch wrote.
    const events = {
      columns: [
        { name: 'day', type: 'int32' },
        { name: 'user', type: 'string' },
        { name: 'count', type: 'int64' },
      ] satisfies ColumnSpec[],
      primaryKey: ['day', 'user'],
      bucketKey: ['user'],
    };
    const plan = planBatch(lastWriteWins, events, () => undefined, [put({ day: 1, user: 'ann', count: 1n }), put({ day: 2, user: 'ann', count: 2n })]);
    const prefix = keyText(prefixBytes(['ann'], keyColumnOrder(events.primaryKey, events.bucketKey).slice(0, 1)));
    expect(plan.writes.map((write) => keyText(write.key).startsWith(prefix))).toEqual([true, true]);
    expect(new Set(plan.writes.map((write) => keyText(write.key))).size).toBe(2);
  });
});
