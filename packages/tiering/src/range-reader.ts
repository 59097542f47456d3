import type { TieringRange } from '@mink/meta';
import type { TieringReadBatch, TieringRoundDeps } from './round-executor';

/** The offsets of a batch that fall in the range being walked: [fromOffset, endOffset), never empty. */
export interface RangeShare {
  fromOffset: number;
  endOffset: number;
}

/**
 * Walks the committed batches of one tiering range in offset order, handing `visit` each batch with the
 * offsets of it that fall in the range (the first batch may start before the range, the last may end
 * after it). A heartbeat comes before every read. Every record of the range is visited exactly once:
 * a read that leaves a gap or gives nothing though the range goes on is a broken invariant of the stream
 * (a plain Error naming it).
 */
export async function forEachBatchOfRange(
  deps: Pick<TieringRoundDeps, 'read' | 'heartbeat'>,
  where: { tableName: string; tieringEpoch: number },
  range: TieringRange,
  visit: (batch: TieringReadBatch, share: RangeShare) => Promise<void> | void,
): Promise<void> {
  let next = range.startOffset;
  while (next < range.endOffset) {
    await deps.heartbeat();
    const { batches } = await deps.read(range.bucket, next);
    const before = next;
    for (const batch of batches) {
      if (next >= range.endOffset) break;
      if (batch.endOffset <= next) continue;
      if (!(batch.startOffset <= next && batch.startOffset < batch.endOffset)) {
        throw new Error(`reading bucket ${range.bucket} of '${where.tableName}' from offset ${next} gave the batch [${batch.startOffset}, ${batch.endOffset}): a gap`);
      }
      const share = { fromOffset: next, endOffset: Math.min(batch.endOffset, range.endOffset) };
      await visit(batch, share);
      next = share.endOffset;
    }
    if (next === before) {
      throw new Error(`reading bucket ${range.bucket} of '${where.tableName}' from offset ${next} gave no batch holding it, though round ${where.tieringEpoch} tiers it up to ${range.endOffset}`);
    }
  }
}
