/**
 * The SQL side of `mink lake query`, as pure functions: which mink tables a query names, the DuckDB views
 * that stand for them over local copies of their live Parquet files, DuckDB's errors in one line, and the
 * rows of a result as text or JSON Lines.
 */
import type { IcebergSchema, IcebergType } from '@mink/lake';
import { renderTable } from './render';

/**
 * The names of `tables` that `sql` may refer to, in the order of `tables`: those equal, ignoring case as
 * DuckDB does, to a bare word or a double-quoted identifier of the query. String literals and comments are
 * skipped. A name that matches a column or an alias as well is included too: a view too many costs a
 * download, never a wrong answer. A name with characters a bare word cannot hold (`-`, `.`) has to be
 * double-quoted in the query, as DuckDB requires anyway.
 */
export function tablesNamedIn(sql: string, tables: readonly string[]): string[] {
  const named = new Set(identifiersOf(sql).map((identifier) => identifier.toLowerCase()));
  return [...new Set(tables)].filter((table) => named.has(table.toLowerCase()));
}

/** The bare words and double-quoted identifiers of `sql`, outside string literals and comments. */
export function identifiersOf(sql: string): string[] {
  const identifiers: string[] = [];
  let index = 0;
  while (index < sql.length) {
    const char = sql[index]!;
    if (char === "'" || char === '"') {
      const end = closingQuote(sql, index);
      if (char === '"') identifiers.push(sql.slice(index + 1, end).replaceAll('""', '"'));
      index = end + 1;
    } else if (sql.startsWith('--', index)) {
      const end = sql.indexOf('\n', index);
      index = end === -1 ? sql.length : end + 1;
    } else if (sql.startsWith('/*', index)) {
      const end = sql.indexOf('*/', index + 2);
      index = end === -1 ? sql.length : end + 2;
    } else if (/[A-Za-z_]/.test(char)) {
      const word = /^[A-Za-z_][A-Za-z0-9_$]*/.exec(sql.slice(index))![0];
      identifiers.push(word);
      index += word.length;
    } else {
      index += 1;
    }
  }
  return identifiers;
}

/** The index of the quote closing the one at `start` (a doubled quote is part of the text), or the end of `sql`. */
function closingQuote(sql: string, start: number): number {
  const quote = sql[start]!;
  let index = start + 1;
  while (index < sql.length) {
    if (sql[index] === quote) {
      if (sql[index + 1] !== quote) return index;
      index += 2;
    } else {
      index += 1;
    }
  }
  return sql.length;
}

/** `name` as a DuckDB identifier: double-quoted, its double quotes doubled. */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** `text` as a DuckDB string literal: single-quoted, its single quotes doubled. */
export function quoteLiteral(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** The DuckDB type each Iceberg type of a lake table reads as from its Parquet files. */
export const DUCKDB_TYPE_OF: Readonly<Record<IcebergType, string>> = {
  boolean: 'BOOLEAN',
  int: 'INTEGER',
  long: 'BIGINT',
  double: 'DOUBLE',
  string: 'VARCHAR',
  binary: 'BLOB',
  timestamptz: 'TIMESTAMP WITH TIME ZONE',
};

/**
 * The view that stands for table `table` in a query: every column of its live Parquet files at `paths`
 * (local files), or, when the lake holds no file (every key of a primary-key table deleted), no row with
 * the columns of `schema`, so the query still finds the table and its columns. Hive partitioning is off:
 * `__bucket` is read from the files themselves.
 */
export function viewSql(table: string, paths: readonly string[], schema: IcebergSchema): string {
  if (paths.length > 0) {
    return `CREATE VIEW ${quoteIdentifier(table)} AS SELECT * FROM read_parquet([${paths.map(quoteLiteral).join(', ')}], hive_partitioning = false)`;
  }
  const columns = schema.fields.map((field) => `CAST(NULL AS ${DUCKDB_TYPE_OF[field.type]}) AS ${quoteIdentifier(field.name)}`);
  return `CREATE VIEW ${quoteIdentifier(table)} AS SELECT ${columns.join(', ')} WHERE false`;
}

/**
 * DuckDB's error message in one line: its first paragraph (the message without the `LINE n:` excerpt and
 * caret, and without the advice to install extensions) with its lines joined; or, when it says a table does
 * not exist that is a mink table without a lake (`tablesWithoutLake`: name → why), why that table has none,
 * as `mink lake files` says it (DuckDB's guess at a table meant instead would only mislead).
 */
export function oneLineError(message: string, tablesWithoutLake: ReadonlyMap<string, string> = new Map()): string {
  const firstParagraph = message.trim().split(/\n\s*\n/)[0]!;
  const line = firstParagraph
    .split('\n')
    .map((part) => part.trim())
    .filter((part) => part !== '' && !/^LINE \d+:/.test(part))
    .join(' ');
  const missing = /Table with name (.+?) does not exist/.exec(line)?.[1]?.toLowerCase();
  const withoutLake = [...tablesWithoutLake].find(([table]) => table.toLowerCase() === missing);
  return withoutLake === undefined ? line : `table '${withoutLake[0]}' ${withoutLake[1]}`;
}

/**
 * Column names made unique for JSON objects, as a result may repeat one (`select 1 x, 2 x`): the second
 * `x` becomes `x_1`, the third `x_2`, skipping names the result has already.
 */
export function uniqueColumnNames(names: readonly string[]): string[] {
  const taken = new Set(names);
  const seen = new Set<string>();
  return names.map((name) => {
    if (!seen.has(name)) {
      seen.add(name);
      return name;
    }
    let suffix = 1;
    while (taken.has(`${name}_${suffix}`)) suffix += 1;
    const unique = `${name}_${suffix}`;
    taken.add(unique);
    return unique;
  });
}

/** A JSON value of a result as it is written in the text table: NULL for null, strings as they are, the rest as JSON. */
export function formatCell(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  // A line break or a tab would break the alignment; such a string is shown as its JSON.
  if (typeof value === 'string') return /[\u0000-\u001f]/.test(value) ? JSON.stringify(value) : value;
  return JSON.stringify(value);
}

/** A result as an aligned text table with a header, and a line counting its rows. */
export function renderQueryTable(names: readonly string[], rows: readonly (readonly unknown[])[]): string {
  const count = `(${rows.length} ${rows.length === 1 ? 'row' : 'rows'})`;
  if (names.length === 0) return count;
  return `${renderTable([...names], rows.map((row) => row.map(formatCell)))}\n${count}`;
}

/** A result as JSON Lines: one object per row, keyed by the (unique) column names, each line ending in a newline. */
export function renderQueryJsonLines(names: readonly string[], rows: readonly (readonly unknown[])[]): string {
  const keys = uniqueColumnNames(names);
  return rows.map((row) => `${JSON.stringify(Object.fromEntries(keys.map((key, column) => [key, row[column] ?? null])))}\n`).join('');
}
