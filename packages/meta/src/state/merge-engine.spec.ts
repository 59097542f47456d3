import type { ColumnSpec } from './view';
import { InvalidArgumentError } from '@mink/protocol';

import { type PkOptions, parsePkOptions } from './merge-engine';

const columns: ColumnSpec[] = [
  { name: 'id', type: 'int64' },
  { name: 'name', type: 'string' },
  { name: 'version32', type: 'int32' },
  { name: 'version64', type: 'int64' },
  { name: 'updatedAt', type: 'timestamp' },
  { name: 'score', type: 'float64' },
];

const tableWith = (properties: Record<string, string>) => ({ columns, primaryKey: ['id'], properties });

describe('parsePkOptions', () => {
  test.each<[string, Record<string, string>, PkOptions]>([
    ['no properties', {}, { mergeEngine: 'last_write_wins', deleteBehavior: 'allow' }],
    ['unrelated properties', { 'snapshot-interval': '60s' }, { mergeEngine: 'last_write_wins', deleteBehavior: 'allow' }],
    ['last_write_wins, named', { 'merge-engine': 'last_write_wins' }, { mergeEngine: 'last_write_wins', deleteBehavior: 'allow' }],
    ['last_write_wins, ignore', { 'delete-behavior': 'ignore' }, { mergeEngine: 'last_write_wins', deleteBehavior: 'ignore' }],
    ['last_write_wins, disable', { 'delete-behavior': 'disable' }, { mergeEngine: 'last_write_wins', deleteBehavior: 'disable' }],
    ['first_row forces ignore', { 'merge-engine': 'first_row' }, { mergeEngine: 'first_row', deleteBehavior: 'ignore' }],
    ['first_row, ignore', { 'merge-engine': 'first_row', 'delete-behavior': 'ignore' }, { mergeEngine: 'first_row', deleteBehavior: 'ignore' }],
    ['first_row, disable', { 'merge-engine': 'first_row', 'delete-behavior': 'disable' }, { mergeEngine: 'first_row', deleteBehavior: 'disable' }],
    [
      'versioned on int32 forces ignore',
      { 'merge-engine': 'versioned', 'version-column': 'version32' },
      { mergeEngine: 'versioned', versionColumn: 'version32', deleteBehavior: 'ignore' },
    ],
    [
      'versioned on int64',
      { 'merge-engine': 'versioned', 'version-column': 'version64' },
      { mergeEngine: 'versioned', versionColumn: 'version64', deleteBehavior: 'ignore' },
    ],
    [
      'versioned on timestamp, disable',
      { 'merge-engine': 'versioned', 'version-column': 'updatedAt', 'delete-behavior': 'disable' },
      { mergeEngine: 'versioned', versionColumn: 'updatedAt', deleteBehavior: 'disable' },
    ],
  ])('reads %s', (_case, properties, expected) => {
    // Proves each accepted combination of properties yields the documented options and defaults.
    expect(parsePkOptions(tableWith(properties))).toEqual(expected);
  });

  test.each<[string, Record<string, string>, string]>([
    ['an unknown merge engine', { 'merge-engine': 'last_row' }, "property 'merge-engine' must be one of 'last_write_wins', 'first_row', 'versioned', got 'last_row'"],
    ['an unknown delete behavior', { 'delete-behavior': 'drop' }, "property 'delete-behavior' must be one of 'allow', 'ignore', 'disable', got 'drop'"],
    [
      'first_row with allow',
      { 'merge-engine': 'first_row', 'delete-behavior': 'allow' },
      "merge-engine 'first_row' cannot allow deletes: set delete-behavior to 'ignore' (its default) or 'disable'",
    ],
    [
      'versioned with allow',
      { 'merge-engine': 'versioned', 'version-column': 'version64', 'delete-behavior': 'allow' },
      "merge-engine 'versioned' cannot allow deletes: set delete-behavior to 'ignore' (its default) or 'disable'",
    ],
    ['versioned without a version column', { 'merge-engine': 'versioned' }, "merge-engine 'versioned' needs property 'version-column' naming an int32, int64 or timestamp column"],
    ['a version column that does not exist', { 'merge-engine': 'versioned', 'version-column': 'nope' }, "version-column 'nope' is not a column of the table"],
    [
      'a float64 version column',
      { 'merge-engine': 'versioned', 'version-column': 'score' },
      "version-column 'score' is of type float64; it must be one of int32, int64, timestamp",
    ],
    [
      'a string version column',
      { 'merge-engine': 'versioned', 'version-column': 'name' },
      "version-column 'name' is of type string; it must be one of int32, int64, timestamp",
    ],
    ['a version column without versioned', { 'version-column': 'version64' }, "property 'version-column' applies only to merge-engine 'versioned', not 'last_write_wins'"],
    [
      'a version column with first_row',
      { 'merge-engine': 'first_row', 'version-column': 'version64' },
      "property 'version-column' applies only to merge-engine 'versioned', not 'first_row'",
    ],
  ])('rejects %s', (_case, properties, message) => {
    // Proves a bad table is refused with a message that names the property and what it accepts.
    expect(() => parsePkOptions(tableWith(properties))).toThrow(new InvalidArgumentError(message));
  });

  test('a table without a primary key has no merge options', () => {
    // Proves a log table cannot be mistaken for a PK table with default options.
    expect(() => parsePkOptions({ columns, primaryKey: [], properties: {} })).toThrow(InvalidArgumentError);
  });
});
