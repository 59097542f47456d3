import { decideWriterSequence, describeCommittedSequence, type WriterSequenceDecision, type WriterSequenceInput } from './writer-sequence';
import type { WriterState } from './view';

const committed7: WriterState = { seq: 7, baseOffset: 700, count: 10, earlier: [{ seq: 6, baseOffset: 650, count: 50 }, { seq: 5, baseOffset: 600, count: 50 }] };
/** A Kafka producer's runs: [0, 7] at offsets 90-97, then [8, 17] at 100-109 (a run takes one offset per sequence). */
const committedRuns: WriterState = { seq: 17, baseOffset: 100, count: 10, earlier: [{ seq: 7, baseOffset: 90, count: 8 }] };

const cases: [string, Partial<WriterSequenceInput> & { seq: number }, WriterSequenceDecision][] = [
  ['the last committed batch is a duplicate', { seq: 7, committed: committed7 }, { kind: 'duplicate', batch: { seq: 7, baseOffset: 700, count: 10 } }],
  ['a remembered earlier batch is a duplicate', { seq: 5, committed: committed7, ackedSeq: 4 }, { kind: 'duplicate', batch: { seq: 5, baseOffset: 600, count: 50 } }],
  ['an older batch no longer remembered conflicts', { seq: 4, committed: committed7, ackedSeq: 3 }, { kind: 'conflict', lastCommitted: 7 }],
  ['the batch after the last committed is written', { seq: 8, committed: committed7, ackedSeq: 6 }, { kind: 'write' }],
  ['a batch beyond the next is out of order', { seq: 9, committed: committed7, ackedSeq: 7 }, { kind: 'outOfOrder', expected: 8 }],
  ['a batch in flight here is joined', { seq: 8, committed: committed7, ackedSeq: 7, inFlight: new Set([8]) }, { kind: 'join' }],
  ['the batch after the newest in flight is written', { seq: 10, committed: committed7, ackedSeq: 7, inFlight: new Set([8, 9]) }, { kind: 'write' }],
  ['a gap after the newest in flight is out of order', { seq: 11, committed: committed7, ackedSeq: 7, inFlight: new Set([8, 9]) }, { kind: 'outOfOrder', expected: 10 }],
  ['a new writer starts after what it acknowledged', { seq: 0, ackedSeq: -1 }, { kind: 'write' }],
  ['a new writer whose first batch has not arrived is out of order', { seq: 1, ackedSeq: -1 }, { kind: 'outOfOrder', expected: 0 }],
  ['a forgotten writer continues after what it acknowledged', { seq: 42, ackedSeq: 41 }, { kind: 'write' }],
  ['a forgotten writer cannot skip a batch it has not had acknowledged', { seq: 43, ackedSeq: 41 }, { kind: 'outOfOrder', expected: 42 }],
  ['an unordered writer (no ackedSeq) is written as before', { seq: 12, committed: committed7 }, { kind: 'write' }],
  ['an unordered writer still gets duplicates and conflicts', { seq: 3, committed: committed7 }, { kind: 'conflict', lastCommitted: 7 }],
  // Batches covering runs of sequences (Kafka producers number records): known by their last sequence.
  ['a run starting after the last committed is written', { firstSeq: 8, seq: 17, committed: committed7, ackedSeq: -1 }, { kind: 'write' }],
  ['a run leaving a gap after the last committed is out of order', { firstSeq: 9, seq: 17, committed: committed7, ackedSeq: -1 }, { kind: 'outOfOrder', expected: 8 }],
  ['the last committed run again is a duplicate', { firstSeq: 8, seq: 17, committed: committedRuns, ackedSeq: -1 }, { kind: 'duplicate', batch: { seq: 17, baseOffset: 100, count: 10 } }],
  ['a remembered earlier run again is a duplicate', { firstSeq: 0, seq: 7, committed: committedRuns, ackedSeq: -1 }, { kind: 'duplicate', batch: { seq: 7, baseOffset: 90, count: 8 } }],
  ['a run ending where the last committed ended but starting elsewhere is out of order, not a duplicate', { firstSeq: 10, seq: 17, committed: committedRuns, ackedSeq: -1 }, { kind: 'outOfOrder', expected: 18 }],
  ['a run ending where a remembered earlier one ended but starting elsewhere conflicts', { firstSeq: 3, seq: 7, committed: committedRuns, ackedSeq: -1 }, { kind: 'conflict', lastCommitted: 17 }],
  ['a run starting after the last committed run is written', { firstSeq: 18, seq: 20, committed: committedRuns, ackedSeq: -1 }, { kind: 'write' }],
  // A run in flight here: joined by the same run, another run ending where it ends is out of order.
  ['a retry of the run in flight here is joined', { firstSeq: 18, seq: 20, committed: committedRuns, ackedSeq: -1, inFlight: new Set([20]), inFlightBatchOf: () => ({ firstSeq: 18 }) }, { kind: 'join' }],
  ['another run ending where the run in flight ends is out of order', { firstSeq: 19, seq: 20, committed: committedRuns, ackedSeq: -1, inFlight: new Set([20]), inFlightBatchOf: () => ({ firstSeq: 18 }) }, { kind: 'outOfOrder', expected: 21 }],
  ['a run starting after the newest run in flight is written', { firstSeq: 18, seq: 20, committed: committed7, ackedSeq: -1, inFlight: new Set([17]) }, { kind: 'write' }],
  ['a run in flight here is joined by its last sequence', { firstSeq: 8, seq: 17, committed: committed7, ackedSeq: -1, inFlight: new Set([17]) }, { kind: 'join' }],
  ['a new producer starts its runs at 0', { firstSeq: 0, seq: 4, ackedSeq: -1 }, { kind: 'write' }],
  ['a new producer whose first run has not arrived is out of order', { firstSeq: 5, seq: 9, ackedSeq: -1 }, { kind: 'outOfOrder', expected: 0 }],
];

describe('decideWriterSequence', () => {
  it.each(cases)('%s', (_name, input, expected) => {
    expect(decideWriterSequence({ ackedSeq: undefined, committed: undefined, inFlight: new Set(), ...input })).toEqual(expected);
  });
});

describe('describeCommittedSequence', () => {
  const cases: [string, WriterState | undefined, number, boolean][] = [
    ['a writer the stream does not know may commit', undefined, 0, false],
    ['the sequence after the last committed may commit', committed7, 8, false],
    ['a later sequence may commit (order is the leader check)', committed7, 12, false],
    ['the last committed sequence may not commit again', committed7, 7, true],
    ['a remembered earlier sequence may not commit again', committed7, 5, true],
    ['a forgotten older sequence may not commit either', committed7, 0, true],
  ];
  it.each(cases)('%s', (_name, committed, seq, refused) => {
    const refusal = describeCommittedSequence(committed, 'w', seq);
    expect(refusal === null ? null : refusal).toEqual(refused ? `writer w sequence ${seq} is already committed (its last committed sequence is 7): not written twice` : null);
  });
});
