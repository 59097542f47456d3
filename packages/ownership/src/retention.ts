import { bucketsOfTable, bucketId, firstSliceOf, getIn, lakeSettingsOf, ownRecord, tablesInIdOrder, type StreamTrim, type View } from '@mink/meta';

/**
 * One observation of a stream by the lease holder's retention loop: at `atMs` its committed end was
 * `offset`, so every record below `offset` had been committed by then. Records carry no commit time in the
 * view; these samples bound their age from above, which errs on the side of keeping data longer.
 */
export interface EndSample {
  offset: number;
  atMs: number;
}

/**
 * How the retention loop, which runs every `loopEveryMs`, paces one table of TTL `ttlMs`: a new sample of
 * a stream's end at most every `sampleSpacingMs` (about `samplesPerTtl` per TTL), and the table's buckets
 * looked at again every `visitEveryMs`, a quarter of that; neither more often than the loop runs. Looking
 * at every bucket on every round (each 5 s) took a quarter of the lease holder's CPU at 100 000 buckets,
 * for tables whose default TTL of 7 days asks for a sample every 10.5 hours. A trim comes at most sampleSpacingMs +
 * visitEveryMs after its records are a TTL old.
 */
export function retentionPace(ttlMs: number, loopEveryMs: number, samplesPerTtl: number): { sampleSpacingMs: number; visitEveryMs: number } {
  const sampleSpacingMs = Math.max(loopEveryMs, Math.floor(ttlMs / samplesPerTtl));
  return { sampleSpacingMs, visitEveryMs: Math.max(loopEveryMs, Math.floor(sampleSpacingMs / 4)) };
}

/**
 * A stream's samples after seeing its committed end `endOffset` at `nowMs`: a new sample when the end moved
 * and the newest sample is at least `spacingMs` old (so a table keeps about ttl / spacing samples per
 * bucket), and of the samples older than `ttlMs` only the newest, the one a trim needs.
 */
export function withEndSample(samples: readonly EndSample[], endOffset: number, nowMs: number, spacingMs: number, ttlMs: number): EndSample[] {
  const newest = samples.at(-1);
  const next = newest === undefined || (newest.offset !== endOffset && nowMs - newest.atMs >= spacingMs) ? [...samples, { offset: endOffset, atMs: nowMs }] : [...samples];
  let oldEnough = -1;
  for (let index = 0; index < next.length; index++) if (next[index]!.atMs <= nowMs - ttlMs) oldEnough = index;
  return oldEnough > 0 ? next.slice(oldEnough) : next;
}

/**
 * The trims retention asks for now (docs/architecture.md §9): for every stream of a table with a TTL (`table.log.ttl`,
 * not `0`), the end of its newest sample at least one TTL old, when that is above the stream's start and
 * at or past the end of its first slice (so something would go). The log clamps each trim to the lake
 * offset and to a PK bucket's newest KV snapshot; the planner applies the same clamps so it does not ask
 * for trims that would change nothing. Only the tables named in `tables` when given (those the loop
 * looked at this round).
 */
export function planStreamTrims(
  view: View,
  samplesOf: (bucketId: string, tableId: number) => readonly EndSample[] | undefined,
  nowMs: number,
  tables?: readonly string[],
): StreamTrim[] {
  const trims: StreamTrim[] = [];
  for (const name of tables ?? tablesInIdOrder(view).map((table) => table.name)) {
    const table = getIn(view.tables, name);
    if (!table) continue;
    const settings = lakeSettingsOf(table.properties);
    if (settings.logTtlMs === null) continue;
    for (const record of bucketsOfTable(view, name)) {
      const samples = samplesOf(bucketId(record.tableId, record.partition, record.bucket), record.tableId) ?? [];
      let target = -1;
      for (const sample of samples) if (sample.atMs <= nowMs - settings.logTtlMs) target = sample.offset;
      if (target <= 0) continue;
      if (settings.enabled) target = Math.min(target, ownRecord(table.lake?.offsets ?? {}, String(record.bucket)) ?? 0);
      if (table.kind === 'pk') target = Math.min(target, record.kvSnapshots.at(-1)?.appliedOffset ?? 0);
      const first = firstSliceOf(record.stream);
      if (first === undefined || target <= record.stream.startOffset || first.endOffset > target) continue;
      trims.push({ tableId: record.tableId, partition: record.partition, bucket: record.bucket, startOffset: target });
    }
  }
  return trims;
}
