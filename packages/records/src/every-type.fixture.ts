import type { ColumnSpec } from '@mink/meta';

import type { Row } from './row';

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

const ALL_BYTE_VALUES = Uint8Array.from({ length: 256 }, (_, index) => index);

/** Rows covering the edge values of every type, a row of nulls, and empty string and bytes. */
export const EDGE_ROWS: Row[] = [
  { id: -(2n ** 63n), flag: true, count: -(2 ** 31), score: -0, name: '', payload: new Uint8Array(0), at: -1 },
  { id: 2n ** 63n - 1n, flag: false, count: 2 ** 31 - 1, score: Number.MAX_VALUE, name: 'grüße 👋', payload: ALL_BYTE_VALUES, at: 9007199254740991 },
  { id: null, flag: null, count: null, score: null, name: null, payload: null, at: null },
  { id: 2n ** 53n + 1n, flag: true, count: 0, score: Number.MIN_VALUE, name: 'x'.repeat(1000), payload: new Uint8Array([0]), at: 0 },
];

/** A small deterministic generator (a 32-bit LCG), so a failing randomized case replays the same way. */
function generator(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

/** `count` rows with about a third of the values null, so validity bitmaps span many bytes. */
export function randomRows(seed: number, count: number): Row[] {
  const random = generator(seed);
  const maybe = <T>(value: T): T | null => (random() < 0.33 ? null : value);
  return Array.from({ length: count }, (_, index) => ({
    id: maybe(BigInt(Math.floor(random() * 2 ** 40)) * (random() < 0.5 ? -1n : 1n) * 1000003n),
    flag: maybe(random() < 0.5),
    count: maybe(Math.floor(random() * 2 ** 32) - 2 ** 31),
    score: maybe((random() - 0.5) * 1e6),
    name: maybe(`name-${index}-${'é'.repeat(Math.floor(random() * 5))}`),
    payload: maybe(Uint8Array.from({ length: Math.floor(random() * 9) }, () => Math.floor(random() * 256))),
    at: maybe(Math.floor(random() * 2e12)),
  }));
}
