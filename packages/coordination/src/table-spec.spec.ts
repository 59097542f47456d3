import { InvalidArgumentError } from '@mink/protocol';

import { checkCreateTableSpec } from './table-spec';

const PK_TABLE = {
  name: 'orders',
  columns: [
    { name: 'id', type: 'int64' },
    { name: 'version', type: 'int64' },
    { name: 'note', type: 'string' },
  ],
  primaryKey: ['id'],
  buckets: 4,
};

describe('checkCreateTableSpec', () => {
  test.each<[string, unknown, RegExp]>([
    ['an unknown merge engine', { ...PK_TABLE, properties: { 'merge-engine': 'nope' } }, /merge-engine/],
    ['a versioned table without a version column', { ...PK_TABLE, properties: { 'merge-engine': 'versioned' } }, /needs property 'version-column'/],
    ['a versioned table whose version column does not exist', { ...PK_TABLE, properties: { 'merge-engine': 'versioned', 'version-column': 'v' } }, /'v' is not a column/],
    ['a version column of a string type', { ...PK_TABLE, properties: { 'merge-engine': 'versioned', 'version-column': 'note' } }, /must be one of/],
    ['a version column without the versioned engine', { ...PK_TABLE, properties: { 'version-column': 'version' } }, /applies only to/],
    ['first_row allowing deletes', { ...PK_TABLE, properties: { 'merge-engine': 'first_row', 'delete-behavior': 'allow' } }, /cannot allow deletes/],
    ['a bad schema', { ...PK_TABLE, buckets: 0 }, /buckets/],
  ])('refuses %s as InvalidArgument', (_case, spec, message) => {
    // Proves a table its buckets could never open with is refused before anything is proposed.
    expect(() => checkCreateTableSpec(spec)).toThrow(InvalidArgumentError);
    expect(() => checkCreateTableSpec(spec)).toThrow(message);
  });

  test.each<[string, unknown]>([
    ['a PK table with default options', PK_TABLE],
    ['a versioned PK table', { ...PK_TABLE, properties: { 'merge-engine': 'versioned', 'version-column': 'version' } }],
    ['a first_row PK table', { ...PK_TABLE, properties: { 'merge-engine': 'first_row' } }],
    // Merge options are a PK matter: a log table's properties are left to whoever reads them.
    ['a log table', { name: 'events', columns: [{ name: 'at', type: 'timestamp' }], buckets: 2, properties: { 'merge-engine': 'nope' } }],
  ])('accepts %s', (_case, spec) => {
    // Proves valid specs come back as the validated spec.
    expect(checkCreateTableSpec(spec).name).toBe((spec as { name: string }).name);
  });
});
