import { type ShardedMap, type WriterState } from '@mink/meta';
import { producerEpochsOf } from '@mink/kafka';

/**
 * The newest epoch of each producer in one shard of a stream's writers, by shard. A shard never changes once
 * it is part of a view (a commit copies the shards it changes), so its index is built once and dropped with it.
 */
const epochsByShard = new WeakMap<object, Map<number, number>>();

/**
 * The newest epoch of `producerId` among a stream's writers, or -1: what `producerEpochsOf` finds over
 * every writer id, for the cost of one lookup per shard instead of a read of up to `writersPerStreamMax` ids
 * on each idempotent produce.
 */
export function newestProducerEpochIn(writers: ShardedMap<WriterState>, producerId: number): number {
  let newest = -1;
  for (const shard of writers.shards) {
    let epochs = epochsByShard.get(shard);
    if (epochs === undefined) {
      epochs = producerEpochsOf(Object.keys(shard));
      epochsByShard.set(shard, epochs);
    }
    newest = Math.max(newest, epochs.get(producerId) ?? -1);
  }
  return newest;
}
