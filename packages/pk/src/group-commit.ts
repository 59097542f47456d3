/**
 * The group commit of one PK bucket (issue 5, write order): requests are queued in arrival order, the
 * queued ones are planned together as one group, and the group's change records go to the changelog as
 * one batch. Groups are pipelined: a bounded number may be in the WAL at once, each planned on the state
 * the groups before it leave. After a group fails, no new group starts until those in flight have
 * settled and the tablet has caught up with the committed changelog.
 *
 * These functions decide and plan; the bucket keeps the queue, the WAL appends and the tablet.
 */
import type { PkOptions, TableRecord } from '@mink/meta';
import { InvalidArgumentError } from '@mink/protocol';
import type { Row } from '@mink/records';

import { planBatch, type PkOperation, type PkWrite } from './batch';
import type { ChangeRecord } from './changelog';

/** What the bucket's write queue looks like when it decides its next step. */
export interface GroupCommitState {
  /** The bucket is closing: nothing starts again. */
  closed: boolean;
  /** A catch-up with the committed changelog is running. */
  catchingUp: boolean;
  /** A group failed: the changelog may hold records the tablet lacks, so the tablet must catch up first. */
  mustCatchUp: boolean;
  /** Groups started and not settled. */
  groupsInFlight: number;
  /** The queued requests, oldest first: each holds the operations of one put or delete request. */
  queued: readonly { operations: readonly unknown[] }[];
}

/**
 * The bounds of group commit: groups of one bucket in the WAL at once, operations one group plans at most,
 * and operations queued that start another group while one is in flight.
 */
export interface GroupCommitLimits {
  groupsInFlightMax: number;
  groupOperationsMax: number;
  groupOperationsPipelined: number;
}

/**
 * The bucket's next step: start a group of the oldest `requests` queued requests, catch the tablet up with
 * the committed changelog, or nothing for now (the next queued request or settled group asks again).
 */
export type GroupCommitStep = { step: 'idle' } | { step: 'catchUp' } | { step: 'startGroup'; requests: number };

/**
 * Decides the bucket's next step. Nothing starts while the bucket is closed, catching up, or has nothing
 * queued. After a failure, the catch-up waits for every group in flight to settle (their outcomes decide
 * what the changelog holds). Otherwise a group starts at once when none is in flight; while some are (fewer
 * than `groupsInFlightMax`), only when the queue holds `groupOperationsPipelined` operations: smaller
 * requests wait for the group in flight to settle and go out together, since a group's fixed cost is paid
 * per group, not per request. A group takes the oldest request, and the ones after it while the group's
 * operations stay within `groupOperationsMax` (a request is never split, so a group holds at least one
 * whatever its size).
 */
export function nextGroupCommitStep(state: GroupCommitState, limits: GroupCommitLimits): GroupCommitStep {
  if (state.closed || state.catchingUp || state.queued.length === 0) return { step: 'idle' };
  if (state.mustCatchUp) return state.groupsInFlight > 0 ? { step: 'idle' } : { step: 'catchUp' };
  if (state.groupsInFlight >= limits.groupsInFlightMax) return { step: 'idle' };
  if (state.groupsInFlight > 0 && !holdsOperations(state.queued, limits.groupOperationsPipelined)) return { step: 'idle' };
  let requests = 1;
  let operations = state.queued[0]!.operations.length;
  while (requests < state.queued.length && operations + state.queued[requests]!.operations.length <= limits.groupOperationsMax) {
    operations += state.queued[requests]!.operations.length;
    requests += 1;
  }
  return { step: 'startGroup', requests };
}

/** Whether the queued requests hold at least `count` operations together. */
function holdsOperations(queued: readonly { operations: readonly unknown[] }[], count: number): boolean {
  let operations = 0;
  for (const request of queued) {
    operations += request.operations.length;
    if (operations >= count) return true;
  }
  return false;
}

/** The plan of one request of a group: its change records and final key states, or why it was refused. */
export type GroupRequestPlan = { planned: true; changes: ChangeRecord[]; writes: PkWrite[] } | { planned: false; error: unknown };

/** The plan of one group: one entry per request in queue order, and the change records of the planned ones in that order (the group's batch). */
export interface GroupPlan {
  requests: GroupRequestPlan[];
  changes: ChangeRecord[];
}

/**
 * Plans the requests of one group in order (planBatch), each against the state the earlier ones leave:
 * `lookup` answers for keys no earlier request of the group wrote (the tablet plus the writes of the
 * groups before this one), given the key and its `keyText`. A request whose plan throws is refused on its
 * own, with what it threw, and changes nothing; the others go on.
 */
export function planGroup(
  options: PkOptions,
  table: Pick<TableRecord, 'columns' | 'primaryKey' | 'bucketKey'>,
  lookup: (key: Uint8Array, text: string) => Row | undefined,
  requests: readonly (readonly PkOperation[])[],
): GroupPlan {
  // The writes of the requests planned so far, by key text: the row, or null when deleted.
  const written = new Map<string, Row | null>();
  const lookupAfterEarlier = (key: Uint8Array, text: string): Row | undefined => (written.has(text) ? (written.get(text) ?? undefined) : lookup(key, text));
  const plans: GroupRequestPlan[] = [];
  for (const operations of requests) {
    try {
      const plan = planBatch(options, table, lookupAfterEarlier, operations);
      for (const write of plan.writes) written.set(write.text, write.row);
      plans.push({ planned: true, changes: plan.changes, writes: plan.writes });
    } catch (error) {
      plans.push({ planned: false, error });
    }
  }
  return { requests: plans, changes: plans.flatMap((plan) => (plan.planned ? plan.changes : [])) };
}

/**
 * The incoming record batches a group's changelog batch can be built from, in order, instead of encoding
 * its change records: when every planned request came with the Arrow batches of its whole rows (`inserts`)
 * and each of its operations made exactly one `+I` (a new key, stored as sent), its change records are its
 * rows in order. Null otherwise (a request without batches, an update, a delete, a key left as it was).
 * `planned` are the group's planned requests in queue order, with their operation counts and change records.
 */
export function insertBatchesOf<B>(planned: readonly { operations: number; changes: readonly ChangeRecord[]; inserts?: readonly B[] }[]): B[] | null {
  const batches: B[] = [];
  for (const request of planned) {
    if (request.inserts === undefined || request.changes.length !== request.operations) return null;
    if (request.changes.some((change) => change.changeType !== '+I')) return null;
    batches.push(...request.inserts);
  }
  return batches.length > 0 ? batches : null;
}

/**
 * The changelog offsets each request of a committed group took, in queue order: the group's batch starts
 * at `startOffset`, and each request's change records follow those of the requests before it. A request
 * that changed nothing takes no offsets and is answered with the offset where the next record goes.
 */
export function rangesOfRequests(changeCounts: readonly number[], startOffset: number): { baseOffset: number; count: number }[] {
  let offset = startOffset;
  return changeCounts.map((count) => {
    const range = { baseOffset: offset, count };
    offset += count;
    return range;
  });
}

/**
 * The operations of a request of several parts (puts of several calls a client merged into one request),
 * cut into its parts of `counts` operations each, in order; each is planned as a request of its own.
 * Throws InvalidArgumentError when the counts are not positive integers adding up to the operations.
 */
export function operationsOfParts<T>(operations: readonly T[], counts: readonly number[]): T[][] {
  if (counts.length === 0 || counts.some((count) => !Number.isSafeInteger(count) || count < 1)) {
    throw new InvalidArgumentError(`parts must be positive integers, got [${counts.join(', ')}]`);
  }
  const total = counts.reduce((sum, count) => sum + count, 0);
  if (total !== operations.length) throw new InvalidArgumentError(`parts add up to ${total} operations, the request holds ${operations.length}`);
  const parts: T[][] = [];
  let start = 0;
  for (const count of counts) {
    parts.push(operations.slice(start, start + count));
    start += count;
  }
  return parts;
}

/** One part of a request of several as its group planned it: the change records it made, or why it was refused. */
export type PartPlan = { planned: true; operations: number; changes: number } | { planned: false; error: unknown };

/**
 * What each part of a request of several did once its group committed: the parts' change records follow
 * each other from the request's `baseOffset` (as the group's requests do, see rangesOfRequests), a refused
 * part makes none and keeps its error.
 */
export function partOutcomesOf(parts: readonly PartPlan[], baseOffset: number): ({ operations: number; baseOffset: number; count: number } | { error: unknown })[] {
  let offset = baseOffset;
  return parts.map((part) => {
    if (!part.planned) return { error: part.error };
    const outcome = { operations: part.operations, baseOffset: offset, count: part.changes };
    offset += part.changes;
    return outcome;
  });
}
