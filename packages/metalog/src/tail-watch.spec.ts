import { appendedEntryAction, type AppendedEntryAction, type AppendedEntryState } from './tail-watch';

describe('appendedEntryAction: what a tail does about an entry of its own process it has not delivered', () => {
  const cases: [string, AppendedEntryState, AppendedEntryAction][] = [
    ['entry delivered (the tail is past it)', { appendedSeq: 9, expectedSeq: 10, consuming: true, progressedSinceLastLook: false }, 'delivered'],
    ['entry delivered long ago, no consumer now', { appendedSeq: 3, expectedSeq: 10, consuming: false, progressedSinceLastLook: false }, 'delivered'],
    ['entry is the next one, consumer silent since the last look', { appendedSeq: 10, expectedSeq: 10, consuming: true, progressedSinceLastLook: false }, 'replace'],
    ['entry ahead, consumer silent', { appendedSeq: 300, expectedSeq: 257, consuming: true, progressedSinceLastLook: false }, 'replace'],
    ['entry ahead, entries arriving (behind, not stuck)', { appendedSeq: 300, expectedSeq: 257, consuming: true, progressedSinceLastLook: true }, 'wait'],
    ['entry ahead, no consumer yet (one is being created)', { appendedSeq: 300, expectedSeq: 257, consuming: false, progressedSinceLastLook: false }, 'wait'],
    ['entry ahead, consumer just started', { appendedSeq: 300, expectedSeq: 257, consuming: true, progressedSinceLastLook: true }, 'wait'],
  ];
  it.each(cases)('%s', (_name, state, expected) => {
    expect(appendedEntryAction(state)).toBe(expected);
  });
});
