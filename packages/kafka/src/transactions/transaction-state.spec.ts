import {
  PRODUCER_EPOCH_MAX,
  TRANSACTION_ERRORS,
  addOffsetsTransition,
  addPartitionsTransition,
  completeTransition,
  endTxnTransition,
  initProducerIdTransition,
  needsProducerId,
  timeoutTransition,
  txnOffsetCommitTransition,
  type TransactionState,
  type TransactionTransition,
} from './transaction-state';

const NOW = 1_000_000;
const base: TransactionState = {
  transactionalId: 'tx',
  producerId: 7,
  producerEpoch: 3,
  timeoutMs: 60_000,
  state: 'Empty',
  partitions: [],
  groups: [],
  pendingOffsets: [],
  startedAtMs: 0,
  updatedAtMs: 0,
};
const ongoing: TransactionState = { ...base, state: 'Ongoing', partitions: [{ topic: 'a', partition: 0 }], groups: ['g'], startedAtMs: 500, updatedAtMs: 500 };
const offset = { group: 'g', topic: 'in', partition: 1, offset: 42, leaderEpoch: -1, metadata: null };

/** A transition's outcome in a comparable form: the error code, and the fields of the next state a case looks at. */
function outcome(transition: TransactionTransition): { error: number | null; next: Partial<TransactionState> | null } {
  const next = transition.next ?? null;
  return {
    error: transition.refusal?.errorCode ?? null,
    next: next && { producerId: next.producerId, producerEpoch: next.producerEpoch, state: next.state, partitions: next.partitions, groups: next.groups, pendingOffsets: next.pendingOffsets },
  };
}

describe('initProducerIdTransition', () => {
  it.each<[string, TransactionState | null, number, number | null, ReturnType<typeof outcome>]>([
    ['a new id: the fresh producer id at epoch 0', null, 60_000, 11, { error: null, next: { producerId: 11, producerEpoch: 0, state: 'Empty', partitions: [], groups: [], pendingOffsets: [] } }],
    ['a known id with no open transaction: the next epoch, fencing older producers', base, 60_000, null, { error: null, next: { producerId: 7, producerEpoch: 4, state: 'Empty', partitions: [], groups: [], pendingOffsets: [] } }],
    ['a completed transaction: the next epoch', { ...ongoing, state: 'CompleteCommit' }, 60_000, null, { error: null, next: { producerId: 7, producerEpoch: 4, state: 'Empty', partitions: [], groups: [], pendingOffsets: [] } }],
    [
      'an open transaction: aborted at a bumped epoch first, the client retries',
      { ...ongoing, pendingOffsets: [offset] },
      60_000,
      null,
      { error: TRANSACTION_ERRORS.CONCURRENT_TRANSACTIONS, next: { producerId: 7, producerEpoch: 4, state: 'PrepareAbort', partitions: ongoing.partitions, groups: ['g'], pendingOffsets: [] } },
    ],
    ['markers being written: retry later', { ...ongoing, state: 'PrepareCommit' }, 60_000, null, { error: TRANSACTION_ERRORS.CONCURRENT_TRANSACTIONS, next: null }],
    ['epochs used up: a fresh producer id', { ...base, producerEpoch: PRODUCER_EPOCH_MAX - 1 }, 60_000, 12, { error: null, next: { producerId: 12, producerEpoch: 0, state: 'Empty', partitions: [], groups: [], pendingOffsets: [] } }],
    ['a timeout of 0', null, 0, 11, { error: TRANSACTION_ERRORS.INVALID_TRANSACTION_TIMEOUT, next: null }],
    ['a timeout over 15 minutes', null, 900_001, 11, { error: TRANSACTION_ERRORS.INVALID_TRANSACTION_TIMEOUT, next: null }],
  ])('%s', (_case, current, timeoutMs, fresh, expected) => {
    expect(outcome(initProducerIdTransition(current, 'tx', timeoutMs, NOW, fresh))).toEqual(expected);
  });

  it('refuses an empty transactional id', () => {
    expect(initProducerIdTransition(null, '', 60_000, NOW, 11).refusal?.message).toBe('a transactional id must not be empty');
  });

  it.each([
    [null, true],
    [base, false],
    [{ ...base, producerEpoch: PRODUCER_EPOCH_MAX - 2 }, false],
    [{ ...base, producerEpoch: PRODUCER_EPOCH_MAX - 1 }, true],
  ])('needsProducerId(%p) is %p', (current, expected) => {
    expect(needsProducerId(current)).toBe(expected);
  });

  it('asserts the caller gave a fresh producer id exactly when one is needed', () => {
    expect(() => initProducerIdTransition(null, 'tx', 60_000, NOW, null)).toThrow('invariant broken');
    expect(() => initProducerIdTransition(base, 'tx', 60_000, NOW, 11)).toThrow('invariant broken');
  });
});

describe('producer checks shared by AddPartitionsToTxn, AddOffsetsToTxn and TxnOffsetCommit', () => {
  const calls: [string, (current: TransactionState | null, producerId: number, producerEpoch: number) => TransactionTransition][] = [
    ['AddPartitionsToTxn', (current, id, epoch) => addPartitionsTransition(current, 'tx', id, epoch, [{ topic: 'b', partition: 1 }], NOW)],
    ['AddOffsetsToTxn', (current, id, epoch) => addOffsetsTransition(current, 'tx', id, epoch, 'g2', NOW)],
    ['TxnOffsetCommit', (current, id, epoch) => txnOffsetCommitTransition(current, 'tx', id, epoch, [offset], NOW)],
  ];
  it.each(
    calls.flatMap(([name, call]) => [
      [`${name}: an unknown id`, call, null, 7, 3, TRANSACTION_ERRORS.INVALID_PRODUCER_ID_MAPPING],
      [`${name}: another producer id`, call, ongoing, 8, 3, TRANSACTION_ERRORS.INVALID_PRODUCER_ID_MAPPING],
      [`${name}: an older epoch (a zombie)`, call, ongoing, 7, 2, TRANSACTION_ERRORS.INVALID_PRODUCER_EPOCH],
      [`${name}: markers being written`, call, { ...ongoing, state: 'PrepareAbort' as const }, 7, 3, TRANSACTION_ERRORS.CONCURRENT_TRANSACTIONS],
    ]),
  )('%s', (_case, call, current, producerId, producerEpoch, error) => {
    const transition = call(current, producerId, producerEpoch);
    expect(transition.refusal?.errorCode).toBe(error);
    expect(transition.next ?? null).toBeNull();
  });
});

describe('addPartitionsTransition and addOffsetsTransition', () => {
  it.each<[string, TransactionTransition, ReturnType<typeof outcome>]>([
    [
      'partitions open a transaction from Empty',
      addPartitionsTransition(base, 'tx', 7, 3, [{ topic: 'a', partition: 0 }, { topic: 'a', partition: 1 }, { topic: 'a', partition: 0 }], NOW),
      { error: null, next: { producerId: 7, producerEpoch: 3, state: 'Ongoing', partitions: [{ topic: 'a', partition: 0 }, { topic: 'a', partition: 1 }], groups: [], pendingOffsets: [] } },
    ],
    [
      'a new transaction after a commit starts with nothing of the last',
      addPartitionsTransition({ ...ongoing, state: 'CompleteCommit' }, 'tx', 7, 3, [{ topic: 'b', partition: 0 }], NOW),
      { error: null, next: { producerId: 7, producerEpoch: 3, state: 'Ongoing', partitions: [{ topic: 'b', partition: 0 }], groups: [], pendingOffsets: [] } },
    ],
    [
      'more partitions join the open transaction',
      addPartitionsTransition(ongoing, 'tx', 7, 3, [{ topic: 'b', partition: 0 }], NOW),
      { error: null, next: { producerId: 7, producerEpoch: 3, state: 'Ongoing', partitions: [{ topic: 'a', partition: 0 }, { topic: 'b', partition: 0 }], groups: ['g'], pendingOffsets: [] } },
    ],
    ['partitions already in the open transaction: nothing to store', addPartitionsTransition(ongoing, 'tx', 7, 3, [{ topic: 'a', partition: 0 }], NOW), { error: null, next: null }],
    [
      "a group's offsets open a transaction",
      addOffsetsTransition(base, 'tx', 7, 3, 'g', NOW),
      { error: null, next: { producerId: 7, producerEpoch: 3, state: 'Ongoing', partitions: [], groups: ['g'], pendingOffsets: [] } },
    ],
    ['a group already in: nothing to store', addOffsetsTransition(ongoing, 'tx', 7, 3, 'g', NOW), { error: null, next: null }],
  ])('%s', (_case, transition, expected) => {
    expect(outcome(transition)).toEqual(expected);
  });

  it('starts the clock of a new transaction, not of one already open', () => {
    expect(addPartitionsTransition(base, 'tx', 7, 3, [{ topic: 'a', partition: 0 }], NOW).next!.startedAtMs).toBe(NOW);
    expect(addPartitionsTransition(ongoing, 'tx', 7, 3, [{ topic: 'b', partition: 0 }], NOW).next!.startedAtMs).toBe(500);
  });
});

describe('txnOffsetCommitTransition', () => {
  it.each<[string, TransactionState, ReturnType<typeof outcome>['next'] | number]>([
    ['offsets of an added group are kept', ongoing, { producerId: 7, producerEpoch: 3, state: 'Ongoing', partitions: ongoing.partitions, groups: ['g'], pendingOffsets: [offset] }],
    [
      'a later offset of the same partition replaces the earlier',
      { ...ongoing, pendingOffsets: [{ ...offset, offset: 7 }, { ...offset, partition: 2 }] },
      { producerId: 7, producerEpoch: 3, state: 'Ongoing', partitions: ongoing.partitions, groups: ['g'], pendingOffsets: [{ ...offset, partition: 2 }, offset] },
    ],
    ['a group not added', { ...ongoing, groups: [] }, TRANSACTION_ERRORS.INVALID_TXN_STATE],
    ['no open transaction', { ...base, groups: ['g'] }, TRANSACTION_ERRORS.INVALID_TXN_STATE],
  ])('%s', (_case, current, expected) => {
    const result = outcome(txnOffsetCommitTransition(current, 'tx', 7, 3, [offset], NOW));
    expect(typeof expected === 'number' ? result.error : result.next).toEqual(expected);
  });
});

describe('endTxnTransition', () => {
  it.each<[string, TransactionState | null, number, boolean, ReturnType<typeof outcome>]>([
    [
      'commit of an open transaction: PrepareCommit, offsets kept for the commit',
      { ...ongoing, pendingOffsets: [offset] },
      3,
      true,
      { error: null, next: { producerId: 7, producerEpoch: 3, state: 'PrepareCommit', partitions: ongoing.partitions, groups: ['g'], pendingOffsets: [offset] } },
    ],
    [
      'abort of an open transaction: PrepareAbort, offsets dropped',
      { ...ongoing, pendingOffsets: [offset] },
      3,
      false,
      { error: null, next: { producerId: 7, producerEpoch: 3, state: 'PrepareAbort', partitions: ongoing.partitions, groups: ['g'], pendingOffsets: [] } },
    ],
    ['a retried commit already complete: done', { ...ongoing, state: 'CompleteCommit' }, 3, true, { error: null, next: null }],
    ['a retried abort already complete: done', { ...ongoing, state: 'CompleteAbort' }, 3, false, { error: null, next: null }],
    ['a commit still being written: retry later', { ...ongoing, state: 'PrepareCommit' }, 3, true, { error: TRANSACTION_ERRORS.CONCURRENT_TRANSACTIONS, next: null }],
    ['an abort of a transaction being committed', { ...ongoing, state: 'PrepareCommit' }, 3, false, { error: TRANSACTION_ERRORS.INVALID_TXN_STATE, next: null }],
    ['a commit of an aborted transaction', { ...ongoing, state: 'CompleteAbort' }, 3, true, { error: TRANSACTION_ERRORS.INVALID_TXN_STATE, next: null }],
    ['a commit with no transaction open', base, 3, true, { error: TRANSACTION_ERRORS.INVALID_TXN_STATE, next: null }],
    ['a zombie (older epoch)', ongoing, 2, true, { error: TRANSACTION_ERRORS.INVALID_PRODUCER_EPOCH, next: null }],
    ['an unknown id', null, 3, true, { error: TRANSACTION_ERRORS.INVALID_PRODUCER_ID_MAPPING, next: null }],
  ])('%s', (_case, current, epoch, commit, expected) => {
    expect(outcome(endTxnTransition(current, 'tx', 7, epoch, commit, NOW))).toEqual(expected);
  });
});

describe('completeTransition and timeoutTransition', () => {
  it('completes a commit and an abort, dropping the offsets they carried', () => {
    expect(completeTransition({ ...ongoing, state: 'PrepareCommit', pendingOffsets: [offset] }, NOW)).toMatchObject({ state: 'CompleteCommit', pendingOffsets: [], updatedAtMs: NOW });
    expect(completeTransition({ ...ongoing, state: 'PrepareAbort' }, NOW)).toMatchObject({ state: 'CompleteAbort' });
  });

  it('asserts only a transaction being completed completes', () => {
    expect(() => completeTransition(ongoing, NOW)).toThrow('invariant broken');
  });

  it.each<[string, TransactionState, number, Partial<TransactionState> | null]>([
    ['an open transaction past its timeout: aborted at a bumped epoch', ongoing, 500 + 60_001, { state: 'PrepareAbort', producerEpoch: 4, pendingOffsets: [] }],
    ['an open transaction at its timeout: not yet', ongoing, 500 + 60_000, null],
    ['a transaction not open: nothing to time out', { ...base, startedAtMs: 0 }, NOW * 10, null],
  ])('%s', (_case, current, nowMs, expected) => {
    const next = timeoutTransition(current, nowMs);
    if (expected === null) expect(next).toBeNull();
    else expect(next).toMatchObject(expected);
  });
});
