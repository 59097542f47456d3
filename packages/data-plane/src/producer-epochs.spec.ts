import { NO_WRITERS, ShardedMapEditor, WRITER_SHARDS, recordOf, shardedFrom, type ShardedMap, type WriterState } from '@mink/meta';
import { producerEpochsOf, producerWriterId } from '@mink/kafka';
import { newestProducerEpochIn } from './producer-epochs';

const BATCH: WriterState = { seq: 0, baseOffset: 0, count: 1 };

describe('newestProducerEpochIn', () => {
  it('answers as the index of every writer id does, after each change to the writers', () => {
    // Proves the per-shard index follows the map: a changed shard is a new object and is read afresh.
    let writers: ShardedMap<WriterState> = shardedFrom(
      Object.fromEntries(Array.from({ length: 1_024 }, (_, index) => [index % 3 === 0 ? `client-${index}` : producerWriterId(index, index % 4), BATCH])),
      WRITER_SHARDS,
    );
    const steps: [string, 'set' | 'delete'][] = [
      [producerWriterId(5, 9), 'set'],
      [producerWriterId(5, 9), 'delete'],
      [producerWriterId(1_000, 0), 'set'],
      [producerWriterId(7, 3), 'delete'],
      [producerWriterId(2_000, 2), 'set'],
    ];
    const producers = [1, 2, 5, 7, 1_000, 1_001, 2_000, 3_000];
    const agree = () => {
      const whole = producerEpochsOf(Object.keys(recordOf(writers)));
      for (const producer of producers) expect([producer, newestProducerEpochIn(writers, producer)]).toEqual([producer, whole.get(producer) ?? -1]);
    };
    agree();
    for (const [id, change] of steps) {
      const editor = new ShardedMapEditor(writers);
      if (change === 'set') editor.set(id, BATCH);
      else editor.delete(id);
      writers = editor.result();
      agree();
    }
    expect(newestProducerEpochIn(writers, 5)).toBe(1);
    expect(newestProducerEpochIn(writers, 7)).toBe(-1);
  });

  it('finds no producer in a stream without writers', () => {
    expect(newestProducerEpochIn(NO_WRITERS, 0)).toBe(-1);
  });
});
