import { bucketsOfTable, lakeBucketOf, lakeSettingsOf, ownRecord, valuesIn, type TableRecord, type TieringRange, type View } from '@mink/meta';

/**
 * A table's place in the lease holder's tiering schedule (docs/architecture.md §9, Fluss's table states):
 * - `scheduled`: its lake is fresh enough; the next round is due at `dueAtMs`;
 * - `pending`: a round is due and waits for a worker;
 * - `tiering`: a round is in progress and its worker heartbeats;
 * - `failed`: a round is in progress but its worker has not been heard from for `roundTimeoutMs` (or
 *   never, by this holder): the round is given to the next worker that asks, under a new tiering epoch.
 * The state follows from the view and the heartbeats this holder has seen; a new holder starts with none,
 * so a round in progress that it never heard of is `failed` at once and goes to the next worker that asks.
 */
export type TieringState = { state: 'scheduled'; dueAtMs: number } | { state: 'pending' } | { state: 'tiering' } | { state: 'failed' };

export interface TieringTiming {
  nowMs: number;
  /** A round's worker must heartbeat within this, or its round is given to another worker. */
  roundTimeoutMs: number;
  /** When this holder last heard from the worker of each table's round in progress, by table name. */
  heartbeatAtMs: ReadonlyMap<string, number>;
}

/** The tiering state of a table with the lake enabled; null for a table without it. */
export function tieringStateOf(table: TableRecord, timing: TieringTiming): TieringState | null {
  const settings = lakeSettingsOf(table.properties);
  if (!settings.enabled) return null;
  const lake = table.lake;
  if (lake?.round) {
    const heardAtMs = timing.heartbeatAtMs.get(table.name);
    return heardAtMs !== undefined && timing.nowMs - heardAtMs <= timing.roundTimeoutMs ? { state: 'tiering' } : { state: 'failed' };
  }
  // The first round is due one freshness after the table was created, the next one after the last commit.
  const dueAtMs = (lake && lake.tieredAtMs > 0 ? lake.tieredAtMs : table.createdAtMs) + settings.freshnessMs;
  return timing.nowMs >= dueAtMs ? { state: 'pending' } : { state: 'scheduled', dueAtMs };
}

/** A round to start: the table, and per bucket with records not yet tiered, [its lake offset, its committed end). */
export interface PlannedRound {
  table: TableRecord;
  ranges: TieringRange[];
}

/**
 * The round a worker asking now should take: among tables whose state is `pending` or `failed`, the one
 * whose lake is oldest (the lowest id among equals), with a range for every bucket that has committed records beyond its lake offset.
 * A due table without new records gets no round (nothing to tier); null when no round is due.
 */
export function planTieringRound(view: View, timing: TieringTiming): PlannedRound | null {
  let best: PlannedRound | null = null;
  let bestTieredAtMs = Infinity;
  for (const table of valuesIn(view.tables)) {
    const state = tieringStateOf(table, timing);
    if (state === null || (state.state !== 'pending' && state.state !== 'failed')) continue;
    // Ranges name lake buckets (lakeBucketOf): the bucket numbers, or every bucket of every live partition.
    const ranges: TieringRange[] = [];
    for (const record of bucketsOfTable(view, table.name)) {
      const lakeBucket = lakeBucketOf(table, record.partition, record.bucket);
      if (lakeBucket === null) continue;
      const startOffset = ownRecord(table.lake?.offsets ?? {}, String(lakeBucket)) ?? 0;
      const endOffset = record.stream.endOffset;
      if (endOffset > startOffset) ranges.push({ bucket: lakeBucket, startOffset, endOffset });
    }
    if (ranges.length === 0) continue;
    const tieredAtMs = table.lake?.tieredAtMs ?? 0;
    // Ties go to the older table (the lower id), whatever order the table map iterates in.
    if (tieredAtMs < bestTieredAtMs || (tieredAtMs === bestTieredAtMs && table.id < best!.table.id)) {
      best = { table, ranges };
      bestTieredAtMs = tieredAtMs;
    }
  }
  return best;
}
