import { parseDurationMs } from '@mink/config';
import { LAKE_LIMITS } from '@mink/lake';

/** The environment variables only the tiering worker reads (the shared ones are in @mink/config's ENV). */
export const TIERING_ENV = {
  /** How old an unreferenced lake object must be before an orphan sweep deletes it (`10m`, `30s`, or ms). */
  orphanGraceMs: 'MINK_LAKE_ORPHAN_GRACE_MS',
} as const;

/** The tiering worker's own settings. */
export interface TieringWorkerConfig {
  /** LAKE_LIMITS.orphanGraceMs unless MINK_LAKE_ORPHAN_GRACE_MS says otherwise; tests shorten it. */
  orphanGraceMs: number;
}

/**
 * Reads the tiering worker's settings from `env`. Throws (naming the variable) for a value that is not a
 * positive duration: a worker must not start with a grace it did not mean, as a short one deletes lake
 * files that readers of older metadata may still fetch.
 */
export function readTieringWorkerConfig(env: NodeJS.ProcessEnv = process.env): TieringWorkerConfig {
  const grace = env[TIERING_ENV.orphanGraceMs];
  return { orphanGraceMs: grace === undefined || grace === '' ? LAKE_LIMITS.orphanGraceMs : parseDurationMs(grace, TIERING_ENV.orphanGraceMs) };
}
