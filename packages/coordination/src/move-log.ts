/**
 * What the coordinator logs of the moves one tick or rebalance carried out. A move is one bucket, and a
 * cluster of 100 000 buckets moves tens of thousands at once (a node seen dead, a lease that changed hands):
 * one line per bucket, each failure with its stack, filled 300 MB of logs in minutes. Lines are per outcome
 * instead: each bucket re-led while there are few, else one line with the count per route; failures and
 * refusals one line per distinct reason, with the count and the first buckets. Pure: no I/O.
 */
import type { BucketLeadOutcome } from '@mink/meta';
import type { Move } from '@mink/ownership';

/** Buckets re-led that are logged one line each; more are logged as counts per route. */
export const MOVES_LOGGED_EACH_MAX = 16;
/** Buckets named in a line that stands for many. */
export const MOVES_NAMED_MAX = 5;

/** One move's outcome as applyMoves has it. */
export type MoveResult = { move: Move; error: unknown } | { move: Move; outcome: BucketLeadOutcome };

/** One log line: its level, its fields and its message. */
export interface MoveLogLine {
  level: 'info' | 'warn';
  fields: Record<string, unknown>;
  msg: string;
}

/** The lines that tell `results`, failures first. */
export function moveLogLines(results: readonly MoveResult[]): MoveLogLine[] {
  const failed = new Map<string, { err: unknown; moves: Move[] }>();
  const refused = new Map<string, { rejection: unknown; moves: Move[] }>();
  const led: { move: Move; leaderEpoch: number }[] = [];
  for (const result of results) {
    if ('error' in result) {
      const key = result.error instanceof Error ? `${result.error.name}: ${result.error.message}` : String(result.error);
      const group = failed.get(key) ?? { err: result.error, moves: [] };
      group.moves.push(result.move);
      failed.set(key, group);
    } else if (!result.outcome.ok) {
      const rejection = result.outcome.rejection;
      const key = `${rejection.code}: ${rejection.message}`;
      const group = refused.get(key) ?? { rejection, moves: [] };
      group.moves.push(result.move);
      refused.set(key, group);
    } else {
      led.push({ move: result.move, leaderEpoch: result.outcome.leaderEpoch });
    }
  }
  const lines: MoveLogLine[] = [];
  for (const { err, moves } of failed.values()) {
    lines.push({ level: 'warn', fields: { count: moves.length, moves: moves.slice(0, MOVES_NAMED_MAX).map(describe), err }, msg: 'LeadBucket not carried out' });
  }
  for (const { rejection, moves } of refused.values()) {
    lines.push({ level: 'warn', fields: { count: moves.length, moves: moves.slice(0, MOVES_NAMED_MAX).map(describe), rejection }, msg: 'LeadBucket refused' });
  }
  if (led.length <= MOVES_LOGGED_EACH_MAX) {
    for (const { move, leaderEpoch } of led) {
      lines.push({ level: 'info', fields: { table: move.table, bucket: move.bucket, from: move.from, to: move.to, leaderEpoch }, msg: 'bucket re-led' });
    }
  } else {
    const routes: Record<string, number> = {};
    for (const { move } of led) {
      const route = `${move.from ?? 'none'}->${move.to}`;
      routes[route] = (routes[route] ?? 0) + 1;
    }
    lines.push({ level: 'info', fields: { count: led.length, routes, first: led.slice(0, MOVES_NAMED_MAX).map(({ move }) => describe(move)) }, msg: 'buckets re-led' });
  }
  return lines;
}

/** "events/3 2->1" (a partitioned bucket: "events/2026-12-06/3 2->1"). */
function describe(move: Move): string {
  return `${move.table}/${move.partition === null ? '' : `${move.partition}/`}${move.bucket} ${move.from ?? 'none'}->${move.to}`;
}
