/**
 * Lookups in the plain maps of a view (nodes, tables) by a key that came from outside: a command, a
 * request, a user. The maps are plain objects so the view stays plain JSON, which means an indexing
 * expression such as `view.tables['constructor']` finds `Object.prototype.constructor` instead of
 * nothing. Valid table names include `constructor` and `toString`, so every lookup by such a key must
 * go through this function. The sharded maps (buckets, objects, garbage) have `getIn`, which makes the
 * same check.
 */
export function ownRecord<T>(records: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.prototype.hasOwnProperty.call(records, key) ? records[key] : undefined;
}
