import fc from 'fast-check';
import { batchSequences, producerEpochsOf, producerWriterId } from './producer-writers';

/** The newest epoch of `producerId` among writer ids, or -1: the scan of every id the index replaced, kept as the reference. */
function newestByScan(writerIds: readonly string[], producerId: number): number {
  const prefix = `kafka:${producerId}:`;
  let newest = -1;
  for (const id of writerIds) {
    if (!id.startsWith(prefix)) continue;
    const epoch = Number(id.slice(prefix.length));
    if (Number.isSafeInteger(epoch) && epoch > newest) newest = epoch;
  }
  return newest;
}

/** What the index answers for one producer: its newest epoch, or -1. */
function newestIndexed(writerIds: readonly string[], producerId: number): number {
  return producerEpochsOf(writerIds).get(producerId) ?? -1;
}

describe('producer writer ids', () => {
  it.each([
    [[], 7, -1],
    [['kafka:7:0'], 7, 0],
    [['kafka:7:0', 'kafka:7:3', 'kafka:7:1'], 7, 3],
    // Another producer whose id starts with the same digits, and mink's own writers, are not this one.
    [['kafka:70:9', 'kafka:17:9', 'client-7', 'kafka:7:x'], 7, -1],
  ])('the newest epoch among %j of producer %d is %d', (ids, producerId, newest) => {
    expect(newestIndexed(ids, producerId)).toBe(newest);
  });

  it.each([
    [[], {}],
    [['kafka:7:0', 'kafka:7:3', 'kafka:7:1', 'kafka:12:4'], { 7: 3, 12: 4 }],
    [['kafka:70:9', 'kafka:07:9', 'client-7', 'kafka:7:x', 'kafka:8', 'kafka:-0:2', 'kafka:NaN:1'], { 70: 9, NaN: 1 }],
  ])('the newest epoch of every producer among %j is %j', (ids, expected) => {
    expect(Object.fromEntries(producerEpochsOf(ids))).toEqual(expected);
  });

  it('answers every producer as the scan of every id does', () => {
    // Proves the one-pass index agrees with the scan it replaces, on ids mixing producers, epochs, other writers and odd texts.
    const idText = fc.oneof(
      fc.tuple(fc.integer({ min: 0, max: 12 }), fc.integer({ min: 0, max: 5 })).map(([producer, epoch]) => producerWriterId(producer, epoch)),
      fc.constantFrom('client-7.0.1', 'kafka:', 'kafka:3', 'kafka:3:', 'kafka:03:1', 'kafka:3:1.5', 'kafka:3: 2', 'kafka:1e1:4', 'kafka:10:x'),
    );
    fc.assert(
      fc.property(fc.array(idText, { maxLength: 40 }), (ids) => {
        const index = producerEpochsOf(ids);
        for (let producer = 0; producer <= 12; producer++) expect(index.get(producer) ?? -1).toBe(newestByScan(ids, producer));
      }),
    );
  });

  it('names a producer at an epoch so that the newest epoch reads back', () => {
    expect(newestIndexed([producerWriterId(12, 4), producerWriterId(12, 2), producerWriterId(3, 9)], 12)).toBe(4);
  });

  it.each([
    [0, 1, { firstSeq: 0, seq: 0 }],
    [0, 5, { firstSeq: 0, seq: 4 }],
    [5, 3, { firstSeq: 5, seq: 7 }],
  ])('a batch from sequence %d of %d records covers %j', (base, count, expected) => {
    expect(batchSequences(base, count)).toEqual(expected);
  });
});
