import { afterAccepting, afterFailing, decidePkWriterOrder, mayPlan, type PkWriterDecision, type PkWriterKnown } from './writer-order';

function known(next: number, options: { failedAt?: number; pending?: number[]; remembered?: number[] } = {}): PkWriterKnown {
  return { next, failedAt: options.failedAt ?? null, pending: new Set(options.pending ?? []), remembered: new Set(options.remembered ?? []) };
}

describe('decidePkWriterOrder', () => {
  const cases: [string, number, number, PkWriterKnown | undefined, PkWriterDecision][] = [
    // [what, seq, acked, known, decision]
    ['a new writer starts at 0', 0, -1, undefined, { kind: 'accept' }],
    ['an unknown writer whose earlier requests were all acknowledged (a new leader)', 7, 6, undefined, { kind: 'accept' }],
    ['an unknown writer with an earlier request outstanding waits for it', 7, 5, undefined, { kind: 'outOfOrder', expected: 6 }],
    ['a new writer whose first request has not arrived yet', 1, -1, undefined, { kind: 'outOfOrder', expected: 0 }],
    ['the next sequence', 3, 1, known(3), { kind: 'accept' }],
    ['a sequence in flight is joined', 2, 1, known(3, { pending: [2] }), { kind: 'join' }],
    ['a settled sequence still remembered is answered', 1, 0, known(3, { remembered: [1, 2] }), { kind: 'answer' }],
    ['an older sequence no longer remembered', 0, -1, known(3, { remembered: [1, 2] }), { kind: 'forgotten', next: 3 }],
    ['a sequence ahead of the next waits', 5, 2, known(3), { kind: 'outOfOrder', expected: 3 }],
    ['a sequence ahead of the next whose predecessors were all acknowledged', 5, 4, known(3), { kind: 'accept' }],
    ['after a failure the failed sequence is taken again', 4, 3, known(7, { failedAt: 4 }), { kind: 'accept' }],
    ['after a failure a later sequence waits for the failed one', 5, 3, known(7, { failedAt: 4 }), { kind: 'outOfOrder', expected: 4 }],
    ['after a failure the next sequence waits for the failed one too', 7, 3, known(7, { failedAt: 4 }), { kind: 'outOfOrder', expected: 4 }],
    ['after a failure a later one waits even when its predecessors are said acknowledged', 6, 5, known(7, { failedAt: 4 }), { kind: 'outOfOrder', expected: 4 }],
    ['after a failure an older sequence not remembered', 2, 1, known(7, { failedAt: 4 }), { kind: 'forgotten', next: 4 }],
    ['after a failure a remembered later one (planned with it, succeeded) is answered', 5, 3, known(7, { failedAt: 4, remembered: [5] }), { kind: 'answer' }],
    ['after a failure a pending later one is joined', 6, 3, known(7, { failedAt: 4, pending: [6] }), { kind: 'join' }],
  ];
  it.each(cases)('%s', (_what, seq, acked, state, decision) => {
    expect(decidePkWriterOrder({ seq, acked, known: state })).toEqual(decision);
  });

  // Found by the cluster simulation: seq 3's reply was lost after seq 4 (same key, newer value) was
  // acknowledged; its retry reached a new leader with acked 2 and was written again, over seq 4's value.
  const withNewestAcked: [string, number, number, number, PkWriterKnown | undefined, PkWriterDecision][] = [
    // [what, seq, acked, newestAcked, known, decision]
    ['a retry at a new leader after a later sequence was acknowledged was written before', 3, 2, 4, undefined, { kind: 'written' }],
    ['a retry of the newest acknowledged sequence itself', 4, 3, 4, undefined, { kind: 'written' }],
    ['a request after the newest acknowledged one is decided as before', 5, 4, 4, undefined, { kind: 'accept' }],
    ['a retry still in flight here is joined, not answered without its outcome', 3, 2, 4, known(5, { pending: [3] }), { kind: 'join' }],
    ['a retry remembered here is answered with its outcome', 3, 2, 4, known(5, { remembered: [3] }), { kind: 'answer' }],
    ['a retry this leader forgot, below the newest acknowledged', 1, 0, 4, known(5), { kind: 'written' }],
    ['after a failure, an earlier acknowledged-past retry', 2, 1, 3, known(6, { failedAt: 4 }), { kind: 'written' }],
  ];
  it.each(withNewestAcked)('%s', (_what, seq, acked, newestAcked, state, decision) => {
    expect(decidePkWriterOrder({ seq, acked, newestAcked, known: state })).toEqual(decision);
  });
});

describe('the writer state around a decision', () => {
  it('accepting a sequence makes the one after it next and clears a failure', () => {
    expect(afterAccepting(4)).toEqual({ next: 5, failedAt: null });
  });

  it('keeps the lowest failed sequence', () => {
    expect(afterFailing(null, 6)).toBe(6);
    expect(afterFailing(6, 4)).toBe(4);
    expect(afterFailing(4, 6)).toBe(4);
  });

  it('plans a waiting request unless an earlier sequence of its writer failed', () => {
    expect(mayPlan(5, null)).toBe(true);
    expect(mayPlan(3, 4)).toBe(true);
    expect(mayPlan(4, 4)).toBe(true);
    expect(mayPlan(5, 4)).toBe(false);
  });
});
