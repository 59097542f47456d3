import { icebergSchemaOf } from '@mink/lake';
import {
  formatCell,
  identifiersOf,
  oneLineError,
  quoteIdentifier,
  quoteLiteral,
  renderQueryJsonLines,
  renderQueryTable,
  tablesNamedIn,
  uniqueColumnNames,
  viewSql,
} from './lake-sql';

describe('tablesNamedIn', () => {
  // Proves that a query gets a view for exactly the mink tables it may refer to, and never for a name
  // that only occurs in a string or a comment.
  const tables = ['events', 'Orders', 'web-clicks', 'a.b', 'id'];
  it.each<[string, string, string[]]>([
    ['a bare name', 'select count(*) from events', ['events']],
    ['names ignore case, as DuckDB does', 'SELECT * FROM EVENTS join orders using (id)', ['events', 'Orders', 'id']],
    ['a quoted name with a hyphen', 'select * from "web-clicks"', ['web-clicks']],
    ['a quoted name with a dot', 'select * from "a.b"', ['a.b']],
    ['a bare dotted name is a schema and a table, not the table a.b', 'select * from a.b', []],
    ['an unquoted hyphen is a minus', 'select web-clicks from t', []],
    ['a string literal names nothing', "select 'events' as name", []],
    ['an escaped quote does not end the literal', "select 'it''s events' from orders", ['Orders']],
    ['a line comment names nothing', 'select 1 -- from events\n', []],
    ['a block comment names nothing', 'select /* events */ 1', []],
    ['a doubled quote inside a quoted identifier', 'select * from "we""ird", events', ['events']],
    ['an unterminated literal runs to the end', "select 'events", []],
    ['a name that is only a column still counts', 'select id from orders', ['Orders', 'id']],
    ['each table once, in the order of the list', 'select * from orders, events, orders', ['events', 'Orders']],
    ['no table', 'select 42', []],
  ])('%s', (_name, sql, expected) => {
    expect(tablesNamedIn(sql, tables)).toEqual(expected);
  });

  it('reads quoted identifiers with their doubled quotes undone', () => {
    expect(identifiersOf('select "a""b" from t')).toEqual(['select', 'a"b', 'from', 't']);
  });
});

describe('quoting', () => {
  it.each<[string, string, string]>([
    ['a plain name', 'events', '"events"'],
    ['a name with a hyphen and a dot', 'web-clicks.v2', '"web-clicks.v2"'],
    ['a double quote is doubled', 'we"ird', '"we""ird"'],
  ])('identifier: %s', (_name, name, expected) => {
    expect(quoteIdentifier(name)).toBe(expected);
  });

  it.each<[string, string, string]>([
    ['a path', '/tmp/x/0.parquet', "'/tmp/x/0.parquet'"],
    ['a single quote is doubled', "/tmp/o'neil/0.parquet", "'/tmp/o''neil/0.parquet'"],
  ])('literal: %s', (_name, text, expected) => {
    expect(quoteLiteral(text)).toBe(expected);
  });
});

describe('viewSql', () => {
  const schema = icebergSchemaOf([
    { name: 'id', type: 'int64' },
    { name: 'ok', type: 'boolean' },
    { name: 'n', type: 'int32' },
    { name: 'f', type: 'float64' },
    { name: 's', type: 'string' },
    { name: 'b', type: 'bytes' },
    { name: 'ts', type: 'timestamp' },
  ]);

  it('reads the files with hive partitioning off', () => {
    expect(viewSql('web-clicks', ['/tmp/q/0/0.parquet', "/tmp/q/0/o'1.parquet"], schema)).toBe(
      `CREATE VIEW "web-clicks" AS SELECT * FROM read_parquet(['/tmp/q/0/0.parquet', '/tmp/q/0/o''1.parquet'], hive_partitioning = false)`,
    );
  });

  it('is an empty view with the typed columns of the schema when the lake has no file', () => {
    expect(viewSql('t', [], schema)).toBe(
      'CREATE VIEW "t" AS SELECT CAST(NULL AS BIGINT) AS "id", CAST(NULL AS BOOLEAN) AS "ok", CAST(NULL AS INTEGER) AS "n", ' +
        'CAST(NULL AS DOUBLE) AS "f", CAST(NULL AS VARCHAR) AS "s", CAST(NULL AS BLOB) AS "b", CAST(NULL AS TIMESTAMP WITH TIME ZONE) AS "ts", ' +
        'CAST(NULL AS INTEGER) AS "__bucket", CAST(NULL AS BIGINT) AS "__offset", CAST(NULL AS TIMESTAMP WITH TIME ZONE) AS "__timestamp" WHERE false',
    );
  });
});

describe('oneLineError', () => {
  it.each<[string, string, Map<string, string>, string]>([
    ['a parser error without its excerpt', 'Parser Error: syntax error at or near "selec"\n\nLINE 1: selec 1\n        ^', new Map(), 'Parser Error: syntax error at or near "selec"'],
    [
      'a catalog error keeps its suggestion',
      'Catalog Error: Table with name nope does not exist!\nDid you mean "pg_enum"?\n\nLINE 1: select * from nope\n                      ^',
      new Map(),
      'Catalog Error: Table with name nope does not exist! Did you mean "pg_enum"?',
    ],
    [
      'a missing table that has no lake says why',
      'Catalog Error: Table with name PLAIN does not exist!\nDid you mean "pg_enum"?\n\nLINE 1: select * from PLAIN',
      new Map([['plain', 'has no lake yet: no tiering round has committed (rounds are due every 3m)']]),
      "table 'plain' has no lake yet: no tiering round has committed (rounds are due every 3m)",
    ],
    [
      'the advice to install an extension is left out',
      'Missing Extension Error: File s3://x/y requires the extension httpfs to be loaded\n\nPlease try installing and loading the httpfs extension by running:\nINSTALL httpfs;',
      new Map(),
      'Missing Extension Error: File s3://x/y requires the extension httpfs to be loaded',
    ],
    ['a message of one line stays as it is', 'Binder Error: column "y" not found', new Map([['t', 'has no lake']]), 'Binder Error: column "y" not found'],
  ])('%s', (_name, message, withoutLake, expected) => {
    expect(oneLineError(message, withoutLake)).toBe(expected);
  });
});

describe('result rows', () => {
  it.each<[string, string[], string[]]>([
    ['distinct names stay', ['a', 'b'], ['a', 'b']],
    ['a repeated name gets a suffix', ['x', 'x', 'x'], ['x', 'x_1', 'x_2']],
    ['a suffix the result has already is skipped', ['x', 'x_1', 'x'], ['x', 'x_1', 'x_2']],
  ])('uniqueColumnNames: %s', (_name, names, expected) => {
    expect(uniqueColumnNames(names)).toEqual(expected);
  });

  it.each<[string, unknown, string]>([
    ['null', null, 'NULL'],
    ['a string as it is', 'event 1', 'event 1'],
    ['a BIGINT (a string in DuckDB JSON)', '9007199254740993', '9007199254740993'],
    ['a string with a line break as JSON', 'a\nb', '"a\\nb"'],
    ['a number', 2.5, '2.5'],
    ['a boolean', true, 'true'],
    ['a list', [1, 2], '[1,2]'],
  ])('formatCell: %s', (_name, value, expected) => {
    expect(formatCell(value)).toBe(expected);
  });

  it('renders an aligned table with a row count', () => {
    expect(renderQueryTable(['id', 'note'], [['1', 'first'], ['10', null]])).toBe(['id  note', '1   first', '10  NULL', '(2 rows)'].join('\n'));
    expect(renderQueryTable(['n'], [['1']])).toBe(['n', '1', '(1 row)'].join('\n'));
    expect(renderQueryTable(['n'], [])).toBe(['n', '(0 rows)'].join('\n'));
  });

  it('renders JSON Lines keyed by unique column names', () => {
    expect(renderQueryJsonLines(['n', 'n', 'total'], [['3', '4', null]])).toBe('{"n":"3","n_1":"4","total":null}\n');
    expect(renderQueryJsonLines(['n'], [])).toBe('');
  });
});
