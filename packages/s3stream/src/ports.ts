import type { Command, Outcome, View } from '@mink/meta';

/**
 * What s3stream needs from the process's copy of the metadata view (docs/architecture.md §3). `MetaStore` from
 * @mink/metalog satisfies it structurally; tests wrap it to delay proposals or to show a stale view.
 *
 * Contract: `view` is the view after the last applied entry and only moves forward. `propose` resolves
 * with the outcome computed when the command applied (a rejection is `{ ok: false }`, not a throw), and
 * by then `view` includes that entry. It throws `UnavailableError` or `TimeoutError` when the outcome is
 * unknown: the command may still apply later.
 */
export interface MetaAccess {
  readonly view: View;
  propose(command: Command): Promise<Outcome>;
}

/** Wall-clock time in milliseconds, injected wherever time matters so tests and simulations can steer it. */
export interface Clock {
  nowMs(): number;
}

/**
 * Where background work (compaction, garbage collection) reports what it could not do; a pino `Logger`
 * fits. Background rounds do not throw expected failures at their caller, so this is where they show.
 */
export interface MaintenanceLogger {
  warn(fields: Record<string, unknown>, message: string): void;
}

/** A logger that drops everything, for components constructed without one. */
export const SILENT_LOGGER: MaintenanceLogger = { warn: () => undefined };
