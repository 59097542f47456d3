/**
 * Lookups in plain records (the view's nodes, a table's properties or lake offsets) by a key that came
 * from outside: a command, a request, a user. The records are plain objects so the view stays plain JSON,
 * which means an indexing expression such as `view.nodes['constructor']` finds
 * `Object.prototype.constructor` instead of nothing, so every lookup by such a key must go through this
 * function. The sharded maps (tables, buckets, objects, garbage) have `getIn`, which makes the same check;
 * valid table names include `constructor` and `toString`.
 */
export function ownRecord<T>(records: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.prototype.hasOwnProperty.call(records, key) ? records[key] : undefined;
}
