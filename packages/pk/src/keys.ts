/**
 * The byte keys under which a PK bucket's KV tablet stores rows.
 *
 * A key is the encoding of the primary key values in KEY ORDER: first the bucket-key columns in bucket-key
 * order, then the remaining primary key columns in primary key order (see `keyColumnOrder`). The table
 * schema guarantees that every bucket-key column is a primary key column, so key order always holds each
 * primary key column exactly once. Putting the bucket key first is what makes prefix lookup a range scan:
 * the encoding of the bucket-key values is a byte prefix of the key of every row that has those values.
 *
 * The encoding is the bucket-key encoding of @mink/records (`bucketKeyBytes`): each value is a one-byte
 * type tag, then, where the length varies, a four-byte length, then the content. Because every value
 * carries its own length, the concatenation is unambiguous (distinct canonical keys give distinct bytes)
 * and the encoding of the first k values is a prefix of the encoding of all of them. The bytes do NOT sort
 * in value order (numbers are decimal text behind a length), so a range scan over the tablet groups rows
 * by prefix but does not return them in key order.
 */
import { LIMITS } from '@mink/config';
import { InvalidArgumentError } from '@mink/protocol';
import { type Row, bucketKeyBytes, fieldOf, setField } from '@mink/records';

/**
 * The primary key columns in key order: the bucket-key columns first (in bucket-key order), then the
 * other primary key columns in primary key order. An empty bucket key means the primary key itself.
 */
export function keyColumnOrder(primaryKey: readonly string[], bucketKey: readonly string[]): string[] {
  if (primaryKey.length === 0) throw new Error('a table without a primary key has no key order');
  const stranger = bucketKey.find((column) => !primaryKey.includes(column));
  // The metadata schema rejects such a table, so reaching this is a bug rather than a bad request.
  if (stranger !== undefined) throw new Error(`bucket key column '${stranger}' is not part of the primary key`);
  return [...bucketKey, ...primaryKey.filter((column) => !bucketKey.includes(column))];
}

/**
 * The tablet key of `row`: its values of `keyColumns` (from `keyColumnOrder`) encoded as described at the
 * top of this file. Throws InvalidArgumentError when a key column has no value or the key is longer than
 * `LIMITS.primaryKeyBytesMax`, since the row came from a client.
 */
export function primaryKeyBytes(row: Row, keyColumns: readonly string[]): Uint8Array {
  for (const column of keyColumns) {
    const value = fieldOf(row, column);
    if (value === null || value === undefined) throw new InvalidArgumentError(`primary key column '${column}' must have a value`);
  }
  return checkedLength(bucketKeyBytes(row, keyColumns), 'primary key');
}

/**
 * The tablet key prefix shared by every row whose first `values.length` key columns hold `values`, for a
 * prefix lookup by bucket key. `columns` are those key columns, the leading columns of `keyColumnOrder`;
 * the caller names them so that a mismatch of values and columns fails here rather than matching nothing.
 */
export function prefixBytes(values: readonly unknown[], columns: readonly string[]): Uint8Array {
  if (values.length !== columns.length) {
    throw new InvalidArgumentError(`a key prefix of ${columns.length} columns needs ${columns.length} values, got ${values.length}`);
  }
  const row: Row = {};
  for (let index = 0; index < columns.length; index++) {
    const value = values[index];
    if (value === null || value === undefined) throw new InvalidArgumentError(`key prefix column '${columns[index]}' must have a value`);
    setField(row, columns[index], value);
  }
  return checkedLength(bucketKeyBytes(row, columns), 'key prefix');
}

function checkedLength(bytes: Uint8Array, what: string): Uint8Array {
  if (bytes.byteLength > LIMITS.primaryKeyBytesMax) {
    throw new InvalidArgumentError(`${what} encodes to ${bytes.byteLength} bytes, more than the ${LIMITS.primaryKeyBytesMax} allowed`);
  }
  return bytes;
}

/** Text form of a tablet key, for use as a Map key (Uint8Array compares by identity). */
export function keyText(key: Uint8Array): string {
  return Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('hex');
}
