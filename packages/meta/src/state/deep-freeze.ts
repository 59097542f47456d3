/**
 * Freezes a plain JSON value and everything it holds, and returns it. Tests freeze views before handing
 * them to `apply`, so any mutation of an input throws (modules run in strict mode) instead of silently
 * corrupting a copy that other replicas would not share.
 *
 * An object that is already frozen is assumed to be frozen deeply (it was frozen by this function), which
 * keeps freezing a view that shares most of its records with a frozen predecessor cheap.
 */
export function deepFreeze<T>(value: T): T {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return value;
  Object.freeze(value);
  for (const child of Object.values(value as object)) deepFreeze(child);
  return value;
}
