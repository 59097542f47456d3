import type { ColumnSpec, ColumnType } from '@mink/meta';
import { InvalidArgumentError } from '@mink/protocol';
import { ICEBERG_TYPE_OF, COLUMN_TYPE_OF, icebergSchemaOf, lastColumnIdOf, tableFieldsOf } from './iceberg-schema';

describe('icebergSchemaOf', () => {
  it.each<[ColumnType, string]>([
    ['boolean', 'boolean'],
    ['int32', 'int'],
    ['int64', 'long'],
    ['float64', 'double'],
    ['string', 'string'],
    ['bytes', 'binary'],
    ['timestamp', 'timestamptz'],
  ])('maps a %s column to Iceberg %s, optional, with field id 1', (columnType, icebergType) => {
    // Proves each mink type's Iceberg type (timestamps are instants: timestamptz) and that the mapping inverts.
    const schema = icebergSchemaOf([{ name: 'c', type: columnType }]);
    expect(schema.fields[0]).toEqual({ id: 1, name: 'c', required: false, type: icebergType });
    expect(COLUMN_TYPE_OF[ICEBERG_TYPE_OF[columnType]]).toBe(columnType);
  });

  it('numbers the columns 1..n in table order and appends the three required system columns', () => {
    // Proves the layout the Parquet writer and every reader rely on: table columns, then __bucket, __offset, __timestamp.
    const schema = icebergSchemaOf([
      { name: 'b', type: 'string' },
      { name: 'a', type: 'int64' },
    ]);
    expect(schema).toEqual({
      type: 'struct',
      'schema-id': 0,
      fields: [
        { id: 1, name: 'b', required: false, type: 'string' },
        { id: 2, name: 'a', required: false, type: 'long' },
        { id: 3, name: '__bucket', required: true, type: 'int' },
        { id: 4, name: '__offset', required: true, type: 'long' },
        { id: 5, name: '__timestamp', required: true, type: 'timestamptz' },
      ],
    });
    expect(tableFieldsOf(schema).map((field) => field.name)).toEqual(['b', 'a']);
    expect(lastColumnIdOf(schema)).toBe(5);
  });

  it('makes the primary key columns required and the identifier fields, in key order', () => {
    // Proves a PK table's key is declared as Iceberg's row identity and cannot be null.
    const schema = icebergSchemaOf(
      [
        { name: 'tenant', type: 'string' },
        { name: 'value', type: 'float64' },
        { name: 'id', type: 'int64' },
      ],
      ['id', 'tenant'],
    );
    expect(schema.fields.slice(0, 3).map((field) => [field.name, field.required])).toEqual([
      ['tenant', true],
      ['value', false],
      ['id', true],
    ]);
    expect(schema['identifier-field-ids']).toEqual([3, 1]);
  });

  it.each<[string, ColumnSpec[], string[], RegExp]>([
    ['no columns', [], [], /at least one column/],
    ['a column named __bucket', [{ name: '__bucket', type: 'int32' }], [], /system column/],
    ['a column named __offset', [{ name: '__offset', type: 'int64' }], [], /system column/],
    ['a column named __timestamp', [{ name: '__timestamp', type: 'timestamp' }], [], /system column/],
    ['a column listed twice', [{ name: 'a', type: 'int32' }, { name: 'a', type: 'int64' }], [], /listed twice/],
    ['an unknown type', [{ name: 'a', type: 'decimal' as ColumnType }], [], /unknown type/],
    ['a key naming a missing column', [{ name: 'a', type: 'int32' }], ['b'], /not a column/],
    ['a key naming a column twice', [{ name: 'a', type: 'int32' }], ['a', 'a'], /listed twice/],
  ])('refuses %s', (_case, columns, primaryKey, message) => {
    // Proves invalid tables are refused as InvalidArgumentError naming the problem, not turned into a broken lake schema.
    expect(() => icebergSchemaOf(columns, primaryKey)).toThrow(InvalidArgumentError);
    expect(() => icebergSchemaOf(columns, primaryKey)).toThrow(message);
  });
});
