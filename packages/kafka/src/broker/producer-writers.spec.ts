import { batchSequences, newestProducerEpoch, producerWriterId } from './producer-writers';

describe('producer writer ids', () => {
  it.each([
    [[], 7, -1],
    [['kafka:7:0'], 7, 0],
    [['kafka:7:0', 'kafka:7:3', 'kafka:7:1'], 7, 3],
    // Another producer whose id starts with the same digits, and mink's own writers, are not this one.
    [['kafka:70:9', 'kafka:17:9', 'client-7', 'kafka:7:x'], 7, -1],
  ])('the newest epoch among %j of producer %d is %d', (ids, producerId, newest) => {
    expect(newestProducerEpoch(ids, producerId)).toBe(newest);
  });

  it('names a producer at an epoch so that the newest epoch reads back', () => {
    expect(newestProducerEpoch([producerWriterId(12, 4), producerWriterId(12, 2), producerWriterId(3, 9)], 12)).toBe(4);
  });

  it.each([
    [0, 1, { firstSeq: 0, seq: 0 }],
    [0, 5, { firstSeq: 0, seq: 4 }],
    [5, 3, { firstSeq: 5, seq: 7 }],
  ])('a batch from sequence %d of %d records covers %j', (base, count, expected) => {
    expect(batchSequences(base, count)).toEqual(expected);
  });
});
