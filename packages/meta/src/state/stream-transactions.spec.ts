import { LIMITS } from '@mink/config';
import {
  abortedTransactionsIn,
  describeMalformedTransaction,
  lastStableOffsetOf,
  markerEpochOf,
  noTransactions,
  trimmedTransactions,
  withTransactionRange,
  type StreamTransactions,
  type WalTransaction,
} from './stream-transactions';

/** The transactions after committing `ranges` ([startOffset, transaction]) in order. */
function after(ranges: [number, WalTransaction][], from: StreamTransactions | undefined = undefined): StreamTransactions {
  let transactions = from;
  for (const [startOffset, transaction] of ranges) transactions = withTransactionRange(transactions, startOffset, transaction);
  return transactions ?? noTransactions();
}

describe('withTransactionRange', () => {
  it.each<[string, [number, WalTransaction][], StreamTransactions]>([
    ['a transactional batch opens its producer\'s transaction at its first offset', [[10, { producerId: 7, producerEpoch: 0 }]], { open: { '7': 10 }, aborted: [], markerEpochs: {} }],
    ['later batches of the open transaction leave its first offset', [[10, { producerId: 7, producerEpoch: 0 }], [12, { producerId: 7, producerEpoch: 0 }]], { open: { '7': 10 }, aborted: [], markerEpochs: {} }],
    ['two producers each have their own', [[10, { producerId: 7, producerEpoch: 0 }], [12, { producerId: 8, producerEpoch: 2 }]], { open: { '7': 10, '8': 12 }, aborted: [], markerEpochs: {} }],
    ['a commit marker closes it', [[10, { producerId: 7, producerEpoch: 0 }], [12, { producerId: 7, producerEpoch: 0, marker: 'commit' }]], { open: {}, aborted: [], markerEpochs: { '7': 0 } }],
    [
      'an abort marker closes it and records it as aborted, up to the marker',
      [[10, { producerId: 7, producerEpoch: 0 }], [12, { producerId: 7, producerEpoch: 0, marker: 'abort' }]],
      { open: {}, aborted: [{ producerId: 7, firstOffset: 10, lastOffset: 12 }], markerEpochs: { '7': 0 } },
    ],
    [
      'a fencing abort at a bumped epoch records the epoch',
      [[10, { producerId: 7, producerEpoch: 0 }], [12, { producerId: 7, producerEpoch: 1, marker: 'abort' }]],
      { open: {}, aborted: [{ producerId: 7, firstOffset: 10, lastOffset: 12 }], markerEpochs: { '7': 1 } },
    ],
    ['a marker with no transaction open (written again) only records its epoch', [[5, { producerId: 7, producerEpoch: 3, marker: 'abort' }]], { open: {}, aborted: [], markerEpochs: { '7': 3 } }],
    ['an older marker epoch does not lower the newest', [[5, { producerId: 7, producerEpoch: 3, marker: 'abort' }], [6, { producerId: 7, producerEpoch: 2, marker: 'commit' }]], { open: {}, aborted: [], markerEpochs: { '7': 3 } }],
    [
      'the next transaction after a marker opens anew',
      [[10, { producerId: 7, producerEpoch: 0 }], [12, { producerId: 7, producerEpoch: 0, marker: 'commit' }], [13, { producerId: 7, producerEpoch: 0 }]],
      { open: { '7': 13 }, aborted: [], markerEpochs: { '7': 0 } },
    ],
  ])('%s', (_case, ranges, expected) => {
    expect(after(ranges)).toEqual(expected);
  });

  it(`forgets the oldest aborted transaction beyond LIMITS.abortedTransactionsPerStreamMax (${LIMITS.abortedTransactionsPerStreamMax})`, () => {
    const ranges: [number, WalTransaction][] = [];
    for (let index = 0; index <= LIMITS.abortedTransactionsPerStreamMax; index++) ranges.push([2 * index, { producerId: 7, producerEpoch: 0 }], [2 * index + 1, { producerId: 7, producerEpoch: 0, marker: 'abort' }]);
    const aborted = after(ranges).aborted;
    expect(aborted).toHaveLength(LIMITS.abortedTransactionsPerStreamMax);
    expect(aborted[0]).toEqual({ producerId: 7, firstOffset: 2, lastOffset: 3 });
  });

  it('never changes the record it was given', () => {
    const before = after([[10, { producerId: 7, producerEpoch: 0 }]]);
    const frozen = JSON.stringify(before);
    withTransactionRange(before, 12, { producerId: 7, producerEpoch: 0, marker: 'abort' });
    expect(JSON.stringify(before)).toBe(frozen);
  });

  it('keeps producer ids named like prototype members as plain keys', () => {
    // Producer ids are numbers, but a key of a record built from input never reaches the prototype.
    expect(Object.getPrototypeOf(after([[1, { producerId: 0, producerEpoch: 0 }]]).open)).toBe(Object.prototype);
  });
});

describe('lastStableOffsetOf, abortedTransactionsIn, markerEpochOf, trimmedTransactions', () => {
  const transactions: StreamTransactions = { open: { '7': 40, '8': 35 }, aborted: [{ producerId: 9, firstOffset: 10, lastOffset: 20 }, { producerId: 7, firstOffset: 25, lastOffset: 30 }], markerEpochs: { '7': 2 } };

  it.each<[string, { endOffset: number; transactions?: StreamTransactions }, number]>([
    ['no transactions: the committed end', { endOffset: 50 }, 50],
    ['the first offset of the oldest open transaction', { endOffset: 50, transactions }, 35],
    ['none open: the committed end', { endOffset: 50, transactions: { ...transactions, open: {} } }, 50],
  ])('last stable offset, %s', (_case, stream, expected) => {
    expect(lastStableOffsetOf(stream)).toBe(expected);
  });

  it.each<[number, number, number[]]>([
    [0, 50, [9, 7]],
    [21, 50, [7]],
    [20, 24, [9]],
    [0, 10, []],
    [31, 50, []],
  ])('aborted transactions a fetch of [%i, %i) is told of: producers %p', (from, to, producers) => {
    expect(abortedTransactionsIn(transactions, from, to).map((aborted) => aborted.producerId)).toEqual(producers);
  });

  it('names the newest marker epoch of a producer, -1 for none', () => {
    expect([markerEpochOf(transactions, 7), markerEpochOf(transactions, 8), markerEpochOf(undefined, 7)]).toEqual([2, -1, -1]);
  });

  it('drops the aborted transactions wholly below a trimmed stream\'s start, and keeps the record when none is', () => {
    expect(trimmedTransactions(transactions, 21)!.aborted).toEqual([{ producerId: 7, firstOffset: 25, lastOffset: 30 }]);
    expect(trimmedTransactions(transactions, 5)).toBe(transactions);
    expect(trimmedTransactions(undefined, 5)).toBeUndefined();
  });
});

describe('describeMalformedTransaction', () => {
  it.each<[unknown, string | null]>([
    [{ producerId: 7, producerEpoch: 0 }, null],
    [{ producerId: 7, producerEpoch: 3, marker: 'abort' }, null],
    [null, 'transaction must be an object'],
    [[], 'transaction must be an object'],
    [{ producerId: -1, producerEpoch: 0 }, 'transaction.producerId must be a non-negative integer'],
    [{ producerId: '7', producerEpoch: 0 }, 'transaction.producerId must be a non-negative integer'],
    [{ producerId: 7, producerEpoch: 40_000 }, 'transaction.producerEpoch must be an integer from 0 to 32767'],
    [{ producerId: 7, producerEpoch: 0, marker: 'done' }, "transaction.marker must be absent, 'commit' or 'abort'"],
  ])('%p: %p', (value, expected) => {
    expect(describeMalformedTransaction(value)).toBe(expected);
  });
});
