import fc from 'fast-check';
import type { ColumnSpec, PkOptions } from '@mink/meta';
import type { ChangeType, Row } from '@mink/records';

import type { PkOperation } from './batch';
import type { ChangeRecord } from './changelog';
import { foldChanges, tabletWritesOf, unappliedChanges, type TabletWrite } from './changelog-fold';
import { planGroup } from './group-commit';
import { encodeStoredRow } from './stored-row';
import { keyColumnOrder, keyText, primaryKeyBytes } from './keys';
import { storedRowJson } from './stored-row';

/** A table keyed by (tenant, id) and bucketed by tenant, so tablet keys start with the bucket key. */
const columns: ColumnSpec[] = [
  { name: 'tenant', type: 'string' },
  { name: 'id', type: 'int64' },
  { name: 'name', type: 'string' },
];
const keyColumns = keyColumnOrder(['id', 'tenant'], ['tenant']);

const row = (id: bigint, name: string | null, tenant = 't'): Row => ({ tenant, id, name });
const key = (id: bigint, tenant = 't'): string => keyText(primaryKeyBytes({ tenant, id }, keyColumns));
const change = (changeType: ChangeType, value: Row): ChangeRecord => ({ changeType, row: value });

describe('foldChanges', () => {
  it.each<[string, ChangeRecord[], [string, Record<string, unknown> | null][]]>([
    ['no change writes nothing', [], []],
    ['+I stores the row', [change('+I', row(1n, 'a'))], [[key(1n), { tenant: 't', id: '1', name: 'a' }]]],
    ['-U alone changes nothing', [change('-U', row(1n, 'a'))], []],
    ['-U then +U stores the new row', [change('-U', row(1n, 'a')), change('+U', row(1n, 'b'))], [[key(1n), { tenant: 't', id: '1', name: 'b' }]]],
    ['-D removes the key', [change('-D', row(1n, 'a'))], [[key(1n), null]]],
    ['+I then -D of one key leaves one removal', [change('+I', row(1n, 'a')), change('-D', row(1n, 'a'))], [[key(1n), null]]],
    ['-D then +I of one key stores the new row', [change('-D', row(1n, 'a')), change('+I', row(1n, 'b'))], [[key(1n), { tenant: 't', id: '1', name: 'b' }]]],
    [
      'one write per key, in the order of the last change of each key',
      [change('+I', row(1n, 'a')), change('+I', row(2n, 'b')), change('-U', row(1n, 'a')), change('+U', row(1n, 'c'))],
      [
        [key(2n), { tenant: 't', id: '2', name: 'b' }],
        [key(1n), { tenant: 't', id: '1', name: 'c' }],
      ],
    ],
    [
      'the same id under two tenants is two keys',
      [change('+I', row(1n, 'a', 't')), change('+I', row(1n, 'b', 'u'))],
      [
        [key(1n, 't'), { tenant: 't', id: '1', name: 'a' }],
        [key(1n, 'u'), { tenant: 'u', id: '1', name: 'b' }],
      ],
    ],
    ['a null column is stored as null', [change('+I', row(1n, null))], [[key(1n), { tenant: 't', id: '1', name: null }]]],
  ])('%s', (_name, changes, expected) => {
    // Proves the changelog's meaning for the tablet: +I/+U store the row, -D removes the key, -U changes nothing, the last change wins.
    const writes = foldChanges(columns, keyColumns, changes);
    expect(writes.map((write) => [keyText(write.key), write.value === null ? null : storedRowJson(columns, write.value)])).toEqual(expected);
  });
});

describe('tabletWritesOf', () => {
  /** The tablet writes as key text → stored bytes (hex) or null, the state they leave whatever their order. */
  const stateOf = (writes: TabletWrite[]) => new Map(writes.map((write) => [keyText(write.key), write.value === null ? null : Buffer.from(write.value).toString('hex')]));
  const versionedColumns: ColumnSpec[] = [...columns, { name: 'version', type: 'int64' }];
  const engines: PkOptions[] = [
    { mergeEngine: 'last_write_wins', deleteBehavior: 'allow' },
    { mergeEngine: 'last_write_wins', deleteBehavior: 'ignore' },
    { mergeEngine: 'first_row', deleteBehavior: 'ignore' },
    { mergeEngine: 'versioned', versionColumn: 'version', deleteBehavior: 'ignore' },
  ];
  const operation = fc.oneof(
    fc.record({ kind: fc.constant('put' as const), id: fc.integer({ min: 1, max: 4 }), name: fc.option(fc.constantFrom('a', 'b', 'c')), version: fc.integer({ min: 1, max: 3 }), partial: fc.boolean() }),
    fc.record({ kind: fc.constant('delete' as const), id: fc.integer({ min: 1, max: 4 }) }),
  );

  it('leaves the tablet as foldChanges of the plan\'s change records leaves it, for every merge engine', () => {
    // Proves the leader may apply a committed group's planned writes instead of folding its change records:
    // the two give every key the same stored bytes (or removal), so a live tablet equals a replayed one.
    fc.assert(
      fc.property(
        fc.constantFrom(...engines),
        fc.array(fc.record({ id: fc.integer({ min: 1, max: 4 }), name: fc.constantFrom('s', 't') }), { maxLength: 4 }),
        fc.array(fc.array(operation, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 4 }),
        (options, storedRows, requests) => {
          const table = { columns: versionedColumns, primaryKey: ['id', 'tenant'], bucketKey: ['tenant'] };
          const stored = new Map(storedRows.map(({ id, name }) => [key(BigInt(id)), { tenant: 't', id: BigInt(id), name, version: 2n } as Row]));
          const operations = requests.map((request) =>
            request.map((each): PkOperation => {
              if (each.kind === 'delete') return { kind: 'delete', key: { tenant: 't', id: BigInt(each.id) } };
              const full = { tenant: 't', id: BigInt(each.id), name: each.name, version: BigInt(each.version) };
              if (each.partial && options.mergeEngine === 'last_write_wins') return { kind: 'put', row: { tenant: 't', id: full.id, name: full.name }, partialColumns: ['tenant', 'id', 'name'] };
              return { kind: 'put', row: full };
            }),
          );
          const plan = planGroup(options, table, (_bytes, text) => stored.get(text), operations);
          const writes = plan.requests.flatMap((request) => (request.planned ? request.writes : []));
          expect(stateOf(tabletWritesOf(versionedColumns, writes))).toEqual(stateOf(foldChanges(versionedColumns, keyColumns, plan.changes)));
          for (const write of tabletWritesOf(versionedColumns, writes)) {
            if (write.value !== null) expect(Buffer.from(write.value).equals(Buffer.from(encodeStoredRow(versionedColumns, [...writes].reverse().find((each) => each.text === keyText(write.key))!.row!)))).toBe(true);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('unappliedChanges', () => {
  const rows = [row(1n, 'a'), row(1n, 'a'), row(1n, 'b'), row(2n, 'c')];
  const types: ChangeType[] = ['+I', '-U', '+U', '+I'];
  it.each<[string, number, number, number[]]>([
    ['a batch starting at the applied offset is applied whole', 10, 10, [0, 1, 2, 3]],
    ['a batch starting after the applied offset skips nothing (a replay never reads one)', 10, 7, [0, 1, 2, 3]],
    ['the records of a batch below the applied offset are skipped', 10, 12, [2, 3]],
    ['a batch wholly below the applied offset leaves nothing', 10, 14, []],
  ])('%s', (_name, startOffset, appliedOffset, indexes) => {
    // Proves a replay that resumes inside a batch (a snapshot taken between its records) applies each record once.
    expect(unappliedChanges(startOffset, rows, types, appliedOffset)).toEqual(indexes.map((index) => change(types[index]!, rows[index]!)));
  });
});
