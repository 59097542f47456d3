/**
 * A row in canonical internal form: one property per column, keyed by column name.
 *
 * Values by column type: `boolean` → boolean, `int32` → number, `int64` → bigint, `float64` → number,
 * `string` → string, `bytes` → Uint8Array, `timestamp` → number (epoch milliseconds), and null for a
 * missing value. `validateRows` produces this form from JSON, `decodeBatch` from Arrow, and `encodeBatch`,
 * `rowToJson` and the bucketing functions consume it.
 */
export type Row = Record<string, unknown>;

/** Smallest and largest int64, the range `int64` columns accept. */
export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

/** Smallest and largest int32. */
export const INT32_MIN = -(2 ** 31);
export const INT32_MAX = 2 ** 31 - 1;

/**
 * The value of column `name` in `row`, or undefined when the row has no own property of that name.
 *
 * Column names such as `constructor`, `toString` or `__proto__` are valid (see NAME_PATTERN in
 * @mink/meta), so a plain `row[name]` could return something inherited from Object.prototype.
 */
export function fieldOf(row: Row, name: string): unknown {
  return Object.hasOwn(row, name) ? row[name] : undefined;
}

/**
 * Sets column `name` of `row` as an own property. Assigning to `__proto__` would replace the object's
 * prototype instead, so that one name is defined explicitly.
 */
export function setField(row: Row, name: string, value: unknown): void {
  if (name === '__proto__') {
    Object.defineProperty(row, name, { value, enumerable: true, writable: true, configurable: true });
  } else {
    row[name] = value;
  }
}
