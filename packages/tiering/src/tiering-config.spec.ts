import { LAKE_LIMITS } from '@mink/lake';
import { TIERING_ENV, readTieringWorkerConfig } from './tiering-config';

describe('readTieringWorkerConfig', () => {
  it.each<[string, string | undefined, number]>([
    ['absent', undefined, LAKE_LIMITS.orphanGraceMs],
    ['empty', '', LAKE_LIMITS.orphanGraceMs],
    ['in seconds', '3s', 3_000],
    ['in minutes', '10m', 600_000],
    ['in plain milliseconds', '1500', 1_500],
  ])('takes the orphan grace period %s', (_case, value, expected) => {
    // Proves the default is LAKE_LIMITS' and the variable takes the durations other MINK_ variables take.
    expect(readTieringWorkerConfig({ [TIERING_ENV.orphanGraceMs]: value }).orphanGraceMs).toBe(expected);
  });

  it.each([['0'], ['-5s'], ['soon'], ['3 days']])('refuses the orphan grace period %s, naming the variable', (value) => {
    // Proves a worker never starts with a grace it did not mean: no grace at all would delete files readers may still fetch.
    expect(() => readTieringWorkerConfig({ [TIERING_ENV.orphanGraceMs]: value })).toThrow(TIERING_ENV.orphanGraceMs);
  });
});
