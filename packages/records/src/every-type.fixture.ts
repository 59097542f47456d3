import type { ColumnSpec } from '@mink/meta';

/** A column of every type, for the specs of this package (a fixture, not exported by the package). */
export const EVERY_TYPE_COLUMNS: ColumnSpec[] = [
  { name: 'id', type: 'int64' },
  { name: 'flag', type: 'boolean' },
  { name: 'count', type: 'int32' },
  { name: 'score', type: 'float64' },
  { name: 'name', type: 'string' },
  { name: 'payload', type: 'bytes' },
  { name: 'at', type: 'timestamp' },
];
