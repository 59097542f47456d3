import type { ColumnSpec, PkOptions } from '@mink/meta';
import { InvalidArgumentError } from '@mink/protocol';
import type { Row } from '@mink/records';

import { type ChangeRecord, planDelete, planPut } from './changelog';

const columns: ColumnSpec[] = [
  { name: 'id', type: 'int64' },
  { name: 'region', type: 'string' },
  { name: 'name', type: 'string' },
  { name: 'version', type: 'int64' },
];
const primaryKey = ['id', 'region'];

const lastWriteWins: PkOptions = { mergeEngine: 'last_write_wins', deleteBehavior: 'allow' };
const firstRow: PkOptions = { mergeEngine: 'first_row', deleteBehavior: 'ignore' };
const versioned: PkOptions = { mergeEngine: 'versioned', versionColumn: 'version', deleteBehavior: 'ignore' };

const row = (name: string | null, version: bigint | null = 1n): Row => ({ id: 1n, region: 'eu', name, version });

describe('planPut', () => {
  test.each<[string, PkOptions, Row | undefined, Row, Row | undefined, ChangeRecord[]]>([
    ['last_write_wins inserts a new key', lastWriteWins, undefined, row('a'), row('a'), [{ changeType: '+I', row: row('a') }]],
    [
      'last_write_wins replaces an existing row',
      lastWriteWins,
      row('a'),
      row('b'),
      row('b'),
      [
        { changeType: '-U', row: row('a') },
        { changeType: '+U', row: row('b') },
      ],
    ],
    [
      'last_write_wins reports a put of an equal row',
      lastWriteWins,
      row('a'),
      row('a'),
      row('a'),
      [
        { changeType: '-U', row: row('a') },
        { changeType: '+U', row: row('a') },
      ],
    ],
    ['first_row inserts a new key', firstRow, undefined, row('a'), row('a'), [{ changeType: '+I', row: row('a') }]],
    ['first_row keeps the first row', firstRow, row('a'), row('b'), undefined, []],
    ['versioned inserts a new key', versioned, undefined, row('a', 5n), row('a', 5n), [{ changeType: '+I', row: row('a', 5n) }]],
    [
      'versioned takes a higher version',
      versioned,
      row('a', 5n),
      row('b', 6n),
      row('b', 6n),
      [
        { changeType: '-U', row: row('a', 5n) },
        { changeType: '+U', row: row('b', 6n) },
      ],
    ],
    [
      'versioned takes an equal version (incoming wins)',
      versioned,
      row('a', 5n),
      row('b', 5n),
      row('b', 5n),
      [
        { changeType: '-U', row: row('a', 5n) },
        { changeType: '+U', row: row('b', 5n) },
      ],
    ],
    ['versioned ignores a lower version', versioned, row('a', 5n), row('b', 4n), undefined, []],
    ['versioned compares negative versions by value', versioned, row('a', -1n), row('b', -2n), undefined, []],
    ['a full put fills missing columns with null', lastWriteWins, undefined, { id: 1n, region: 'eu' }, row(null, null), [{ changeType: '+I', row: row(null, null) }]],
  ])('%s', (_case, options, current, incoming, next, changes) => {
    // Proves the merge engine's rule: which row is stored and which change records describe it.
    expect(planPut(options, columns, primaryKey, current, incoming)).toEqual({ next, changes });
  });

  test.each<[string, Row | undefined]>([
    ['no current row', undefined],
    ['a current row', row('a', 5n)],
  ])('versioned rejects a put without a version, given %s', (_case, current) => {
    // Proves a versionless row cannot slip in, since it could not be ordered against later puts.
    expect(() => planPut(versioned, columns, primaryKey, current, row('b', null))).toThrow(
      new InvalidArgumentError("version column 'version' must have a value in every put of a versioned table"),
    );
  });

  test('versioned compares int32 and timestamp versions held as numbers', () => {
    // Proves the comparison works for number versions too, not only for int64 bigints.
    const numbered: ColumnSpec[] = [
      { name: 'id', type: 'int64' },
      { name: 'at', type: 'timestamp' },
    ];
    const options: PkOptions = { mergeEngine: 'versioned', versionColumn: 'at', deleteBehavior: 'ignore' };
    expect(planPut(options, numbered, ['id'], { id: 1n, at: 10 }, { id: 1n, at: 9 }).next).toBeUndefined();
    expect(planPut(options, numbered, ['id'], { id: 1n, at: 10 }, { id: 1n, at: 11 }).next).toEqual({ id: 1n, at: 11 });
  });

  test('a stored versioned row without a version is a broken invariant', () => {
    // Proves corruption crashes instead of being silently overwritten or kept.
    const thrown = (() => {
      try {
        planPut(versioned, columns, primaryKey, row('a', null), row('b', 1n));
      } catch (error) {
        return error;
      }
    })();
    expect(thrown).toBeInstanceOf(Error);
    expect(thrown).not.toBeInstanceOf(InvalidArgumentError);
  });

  describe('partial puts', () => {
    test.each<[string, Row | undefined, Row, string[], Row | undefined, ChangeRecord[]]>([
      [
        'merge the named columns over the current row',
        row('a', 7n),
        { id: 1n, region: 'eu', name: 'b' },
        ['id', 'region', 'name'],
        row('b', 7n),
        [
          { changeType: '-U', row: row('a', 7n) },
          { changeType: '+U', row: row('b', 7n) },
        ],
      ],
      [
        'set other columns to null when the key is new',
        undefined,
        { id: 1n, region: 'eu', name: 'b' },
        ['id', 'region', 'name'],
        row('b', null),
        [{ changeType: '+I', row: row('b', null) }],
      ],
      [
        'may set a column to null',
        row('a', 7n),
        { id: 1n, region: 'eu', version: null },
        ['region', 'id', 'version'],
        row('a', null),
        [
          { changeType: '-U', row: row('a', 7n) },
          { changeType: '+U', row: row('a', null) },
        ],
      ],
      [
        'ignore values of columns they do not name',
        row('a', 7n),
        { id: 1n, region: 'eu', name: 'b', version: 99n },
        ['id', 'region', 'name'],
        row('b', 7n),
        [
          { changeType: '-U', row: row('a', 7n) },
          { changeType: '+U', row: row('b', 7n) },
        ],
      ],
    ])('%s', (_case, current, incoming, partialColumns, next, changes) => {
      // Proves a partial put changes exactly the columns it names and keeps or nulls the rest.
      expect(planPut(lastWriteWins, columns, primaryKey, current, incoming, partialColumns)).toEqual({ next, changes });
    });

    test.each<[string, PkOptions, string[], string]>([
      ['a missing primary key column', lastWriteWins, ['id', 'name'], "a partial put must set every primary key column; 'region' is missing"],
      ['an unknown column', lastWriteWins, ['id', 'region', 'colour'], "unknown column 'colour' in a partial put"],
      ['a column named twice', lastWriteWins, ['id', 'region', 'id'], "column 'id' is listed twice in a partial put"],
      ['first_row', firstRow, ['id', 'region', 'name'], "merge engine 'first_row' does not accept partial puts; put whole rows"],
      ['versioned', versioned, ['id', 'region', 'version'], "merge engine 'versioned' does not accept partial puts; put whole rows"],
    ])('reject %s', (_case, options, partialColumns, message) => {
      // Proves a malformed partial put is refused as a bad request, whether or not the key exists.
      for (const current of [undefined, row('a')]) {
        expect(() => planPut(options, columns, primaryKey, current, row('b'), partialColumns)).toThrow(new InvalidArgumentError(message));
      }
    });
  });
});

describe('planDelete', () => {
  const engines: [string, PkOptions['mergeEngine']][] = [
    ['last_write_wins', 'last_write_wins'],
    ['first_row', 'first_row'],
    ['versioned', 'versioned'],
  ];
  const optionsOf = (mergeEngine: PkOptions['mergeEngine'], deleteBehavior: PkOptions['deleteBehavior']): PkOptions =>
    mergeEngine === 'versioned' ? { mergeEngine, versionColumn: 'version', deleteBehavior: deleteBehavior as 'ignore' } : ({ mergeEngine, deleteBehavior } as PkOptions);

  test.each<[string, PkOptions, Row | undefined, { next: null | undefined; changes: ChangeRecord[] }]>([
    ['allow removes an existing row', lastWriteWins, row('a'), { next: null, changes: [{ changeType: '-D', row: row('a') }] }],
    ['allow changes nothing for a missing key', lastWriteWins, undefined, { next: undefined, changes: [] }],
    ...engines.flatMap(([name, engine]): [string, PkOptions, Row | undefined, { next: undefined; changes: [] }][] => [
      [`${name} with ignore keeps an existing row`, optionsOf(engine, 'ignore'), row('a'), { next: undefined, changes: [] }],
      [`${name} with ignore changes nothing for a missing key`, optionsOf(engine, 'ignore'), undefined, { next: undefined, changes: [] }],
    ]),
  ])('%s', (_case, options, current, expected) => {
    // Proves each delete behaviour's effect on the stored row and the changelog.
    expect(planDelete(options, current)).toEqual(expected);
  });

  test.each(engines.flatMap(([name, engine]) => [[`${name}, existing key`, engine, row('a')] as const, [`${name}, missing key`, engine, undefined] as const]))(
    'disable rejects every delete: %s',
    (_case, engine, current) => {
      // Proves a table that disables deletes refuses them as a bad request, under every merge engine.
      expect(() => planDelete(optionsOf(engine, 'disable'), current)).toThrow(new InvalidArgumentError('deletes are disabled for this table'));
    },
  );
});
