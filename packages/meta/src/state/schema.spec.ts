import { LIMITS } from '@mink/config';
import { validateTableSpec } from './schema';

const logColumns = [
  { name: 'ts', type: 'timestamp' },
  { name: 'user', type: 'string' },
  { name: 'payload', type: 'bytes' },
];

/** A valid partitioned PK table; each invalid case below changes one thing about it. */
function validBody(): Record<string, unknown> {
  return {
    name: 'orders',
    columns: [
      { name: 'day', type: 'timestamp' },
      { name: 'order_id', type: 'int64' },
      { name: 'amount', type: 'float64' },
    ],
    primaryKey: ['day', 'order_id'],
    bucketKey: ['order_id'],
    buckets: 4,
    partition: { column: 'day', unit: 'day', retain: 7 },
    properties: { 'merge.engine': 'first_row' },
  };
}

function withField(field: string, value: unknown): Record<string, unknown> {
  return { ...validBody(), [field]: value };
}

function withoutField(field: string): Record<string, unknown> {
  const body = validBody();
  delete body[field];
  return body;
}

describe('validateTableSpec accepts the three kinds of table and returns a normalized copy', () => {
  it('accepts a log table, keeping absent optional fields absent (no defaults are added)', () => {
    const input = { name: 'events', columns: logColumns, buckets: 3 };
    const result = validateTableSpec(input);
    expect(result).toEqual({ ok: true, spec: { name: 'events', columns: logColumns, buckets: 3 } });
    if (!result.ok) return;
    expect(Object.keys(result.spec)).toEqual(['name', 'columns', 'buckets']);
    // The spec is a copy: changing it afterwards must not reach back into the request body.
    expect(result.spec.columns).not.toBe(input.columns);
    expect(result.spec.columns[0]).not.toBe(input.columns[0]);
  });

  it('accepts an unpartitioned PK table with a bucket key taken from the primary key', () => {
    const input = {
      name: 'users.v2',
      columns: [
        { name: 'tenant', type: 'string' },
        { name: 'id', type: 'int64' },
        { name: 'name', type: 'string' },
      ],
      primaryKey: ['tenant', 'id'],
      bucketKey: ['tenant'],
      buckets: LIMITS.bucketsPerTableMax,
    };
    expect(validateTableSpec(input)).toEqual({ ok: true, spec: input });
  });

  it('accepts a partitioned PK table and copies its partition and properties', () => {
    const input = validBody();
    const result = validateTableSpec(input);
    expect(result).toEqual({ ok: true, spec: input });
    if (!result.ok) return;
    expect(result.spec.partition).not.toBe(input.partition);
    expect(result.spec.properties).not.toBe(input.properties);
    expect(result.spec.primaryKey).not.toBe(input.primaryKey);
  });

  it('accepts a partitioned log table partitioned by a timestamp column, with retain and precreate left out', () => {
    const input = { name: '_raw-logs', columns: logColumns, buckets: 1, partition: { column: 'ts', unit: 'hour' } };
    expect(validateTableSpec(input)).toEqual({ ok: true, spec: input });
  });

  it.each([0, 1, LIMITS.partitionPrecreateMax])('accepts partition.precreate %d and keeps it', (precreate) => {
    // Proves the number of partitions created ahead reaches the log as declared, zero included (only the current one).
    const input = { name: 'clicks', columns: logColumns, buckets: 1, partition: { column: 'ts', unit: 'hour', retain: 24, precreate } };
    expect(validateTableSpec(input)).toEqual({ ok: true, spec: input });
  });

  it('accepts a table partitioned by a string column holding partition names', () => {
    // Proves the second partition column type: a PK table keyed by a day string, as in Fluss.
    const input = {
      name: 'visits',
      columns: [
        { name: 'day', type: 'string' },
        { name: 'user', type: 'int64' },
      ],
      primaryKey: ['day', 'user'],
      buckets: 2,
      partition: { column: 'day', unit: 'day', precreate: 1 },
    };
    expect(validateTableSpec(input)).toEqual({ ok: true, spec: input });
  });

  it('accepts names of exactly the maximal length', () => {
    const name = 'n'.repeat(LIMITS.nameLengthMax);
    expect(validateTableSpec({ name, columns: [{ name, type: 'int32' }], buckets: 1 }).ok).toBe(true);
  });
});

describe('validateTableSpec rejects each invalid spec with a message naming the offending field or value', () => {
  const tooManyColumns = Array.from({ length: LIMITS.columnsPerTableMax + 1 }, (_, index) => ({ name: `c${index}`, type: 'int32' }));
  const cases: [string, unknown, string][] = [
    ['a body that is not an object', [1, 2], 'table spec must be an object'],
    ['null', null, 'table spec must be an object'],
    ['an unknown top-level field', withField('replication', 3), "unknown field 'replication' in table spec"],
    ['two unknown top-level fields', { ...withField('a', 1), b: 2 }, "unknown fields 'a', 'b' in table spec"],
    ['a missing name', withoutField('name'), 'name is required'],
    ['a name that is not a string', withField('name', 7), 'name must be a string'],
    ['an empty name', withField('name', ''), 'name must not be empty'],
    ['a name with a space', withField('name', 'my table'), "name 'my table' is invalid"],
    ['a name starting with a digit', withField('name', '1table'), "name '1table' is invalid"],
    ['a name starting with a dash', withField('name', '-x'), "name '-x' is invalid"],
    ['a name that is too long', withField('name', 'a'.repeat(LIMITS.nameLengthMax + 1)), `name is longer than ${LIMITS.nameLengthMax} characters`],
    ['missing columns', withoutField('columns'), 'columns is required'],
    ['columns that are not an array', withField('columns', { a: 'int32' }), 'columns must be an array'],
    ['no columns', { name: 't', columns: [], buckets: 1 }, 'columns must not be empty'],
    ['too many columns', { name: 't', columns: tooManyColumns, buckets: 1 }, `columns has more than ${LIMITS.columnsPerTableMax} entries`],
    ['a column that is not an object', { name: 't', columns: ['a'], buckets: 1 }, 'columns[0] must be an object'],
    ['a column with an unknown field', { name: 't', columns: [{ name: 'a', type: 'int32', nullable: true }], buckets: 1 }, "unknown field 'nullable' in columns[0]"],
    ['a column without a name', { name: 't', columns: [{ type: 'int32' }], buckets: 1 }, 'columns[0].name must be a string'],
    ['a column with an invalid name', { name: 't', columns: [{ name: 'a', type: 'int32' }, { name: 'b c', type: 'int32' }], buckets: 1 }, "columns[1].name 'b c' is invalid"],
    ['a column of an unknown type', { name: 't', columns: [{ name: 'x', type: 'foo' }], buckets: 1 }, "unknown type 'foo' for column 'x'"],
    ['a column without a type', { name: 't', columns: [{ name: 'x' }], buckets: 1 }, "unknown type 'undefined' for column 'x'"],
    ['a type in the wrong case', { name: 't', columns: [{ name: 'x', type: 'INT64' }], buckets: 1 }, "unknown type 'INT64' for column 'x'"],
    ['a duplicate column', { name: 't', columns: [{ name: 'x', type: 'int32' }, { name: 'x', type: 'string' }], buckets: 1 }, "duplicate column 'x'"],
    ['a column named like a scan system column', { name: 't', columns: [{ name: '_offset', type: 'int64' }], buckets: 1 }, "column name '_offset' is reserved for the system columns of scans (_offset, _timestamp, _change)"],
    ['a primary key that is not an array', withField('primaryKey', 'order_id'), 'primaryKey must be an array of column names'],
    ['an empty primary key', withField('primaryKey', []), 'primaryKey must not be empty'],
    ['a primary key of non-strings', withField('primaryKey', [1]), 'primaryKey must be an array of column names'],
    ['a primary key naming a missing column', withField('primaryKey', ['day', 'nope']), "primary key column 'nope' is not a column of the table"],
    ['a primary key repeating a column', withField('primaryKey', ['day', 'order_id', 'day']), "duplicate primary key column 'day'"],
    ['an empty bucket key', withField('bucketKey', []), 'bucketKey must not be empty'],
    ['a bucket key naming a missing column', withField('bucketKey', ['ghost']), "bucket key column 'ghost' is not a column of the table"],
    ['a bucket key repeating a column', withField('bucketKey', ['order_id', 'order_id']), "duplicate bucket key column 'order_id'"],
    ['a bucket key outside the primary key', withField('bucketKey', ['amount']), "bucket key column 'amount' is not part of the primary key"],
    ['missing buckets', withoutField('buckets'), 'buckets is required'],
    ['zero buckets', withField('buckets', 0), `buckets must be an integer between 1 and ${LIMITS.bucketsPerTableMax}`],
    ['too many buckets', withField('buckets', LIMITS.bucketsPerTableMax + 1), 'buckets must be an integer between 1 and 1024'],
    ['fractional buckets', withField('buckets', 2.5), 'buckets must be an integer between 1 and 1024'],
    ['buckets as a string', withField('buckets', '4'), 'buckets must be an integer between 1 and 1024'],
    ['a partition that is not an object', withField('partition', 'day'), 'partition must be an object'],
    ['a partition with an unknown field', withField('partition', { column: 'day', unit: 'day', every: 2 }), "unknown field 'every' in partition"],
    ['a partition without a column', withField('partition', { unit: 'day' }), 'partition.column must be a column name'],
    ['a partition on a missing column', withField('partition', { column: 'when', unit: 'day' }), "partition column 'when' is not a column of the table"],
    ['a partition with an unknown unit', withField('partition', { column: 'day', unit: 'week' }), "partition.unit must be one of 'hour', 'day'"],
    ['a partition with zero retain', withField('partition', { column: 'day', unit: 'day', retain: 0 }), 'partition.retain must be a positive integer'],
    ['a partition with fractional retain', withField('partition', { column: 'day', unit: 'day', retain: 1.5 }), 'partition.retain must be a positive integer'],
    ['a partition with negative retain', withField('partition', { column: 'day', unit: 'day', retain: -2 }), 'partition.retain must be a positive integer'],
    ['a partition with retain as a string', withField('partition', { column: 'day', unit: 'day', retain: '7' }), 'partition.retain must be a positive integer'],
    ['a partition with negative precreate', withField('partition', { column: 'day', unit: 'day', precreate: -1 }), `partition.precreate must be an integer between 0 and ${LIMITS.partitionPrecreateMax}`],
    ['a partition with precreate above the bound', withField('partition', { column: 'day', unit: 'day', precreate: LIMITS.partitionPrecreateMax + 1 }), 'partition.precreate must be an integer between 0 and 48'],
    ['a partition with fractional precreate', withField('partition', { column: 'day', unit: 'day', precreate: 0.5 }), 'partition.precreate must be an integer between 0 and 48'],
    ['a partition with precreate as a string', withField('partition', { column: 'day', unit: 'day', precreate: '2' }), 'partition.precreate must be an integer between 0 and 48'],
    ['a partition with precreate null', withField('partition', { column: 'day', unit: 'day', precreate: null }), 'partition.precreate must be an integer between 0 and 48'],
    [
      'a partition on an int64 column',
      { ...validBody(), partition: { column: 'order_id', unit: 'day' } },
      "partition column 'order_id' is of type int64: a table is partitioned by a column of type timestamp or string",
    ],
    ['a partition on a float64 column', { ...validBody(), partition: { column: 'amount', unit: 'hour' } }, "partition column 'amount' is of type float64"],
    [
      'a partition on a bytes column',
      { name: 't', columns: logColumns, buckets: 1, partition: { column: 'payload', unit: 'day' } },
      "partition column 'payload' is of type bytes: a table is partitioned by a column of type timestamp or string",
    ],
    [
      'a PK table partitioned by a column outside the key',
      { ...validBody(), columns: [...(validBody().columns as object[]), { name: 'shipped', type: 'timestamp' }], partition: { column: 'shipped', unit: 'day' } },
      "partition column 'shipped' must be part of the primary key",
    ],
    [
      'a PK table whose key is only the partition column',
      { ...withoutField('bucketKey'), primaryKey: ['day'] },
      "primary key must have a column besides the partition column 'day'",
    ],
    ['properties that are not an object', withField('properties', ['a']), 'properties must be an object'],
    ['a property that is not a string', withField('properties', { 'merge.engine': 'versioned', 'version.column': 3 }), "property 'version.column' must be a string"],
    ['a property with an empty name', withField('properties', { '': 'x' }), 'property names must not be empty'],
    ['a property named __proto__', withField('properties', JSON.parse('{"__proto__": "x"}')), "property name '__proto__' is reserved"],
  ];

  it.each(cases)('rejects %s', (_description, input, expectedMessage) => {
    const result = validateTableSpec(input);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.message).toContain(expectedMessage);
  });

  it('keeps the base body of the invalid cases valid, so each case fails for the reason it names', () => {
    expect(validateTableSpec(validBody()).ok).toBe(true);
  });
});
