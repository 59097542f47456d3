import { walObjectDue, type WalObjectReason, type WalQueueState } from './wal-flush';

const WAITING: WalQueueState = { closing: false, queuedBytes: 100, flushBytes: 1_024, inFlight: 0, lingerExpired: false, idleTurnEnded: false };

describe('walObjectDue', () => {
  it.each<[string, Partial<WalQueueState>, WalObjectReason | null]>([
    ['a small queue that has neither lingered nor seen its turn end waits', {}, null],
    ['a full queue goes out with nothing in flight', { queuedBytes: 1_024 }, 'full'],
    ['a full queue goes out beside objects in flight', { queuedBytes: 2_000, inFlight: 3 }, 'full'],
    ['a lingered small queue goes out with nothing in flight', { lingerExpired: true }, 'lingered'],
    ['a lingered small queue waits for the object in flight', { lingerExpired: true, inFlight: 1 }, null],
    ['appends that came to an idle writer go out when their turn ends', { idleTurnEnded: true }, 'idle'],
    ['… but wait if an object went in flight meanwhile, and gather behind it', { idleTurnEnded: true, inFlight: 1 }, null],
    ['a closing writer sends what is queued, in flight or not', { closing: true, inFlight: 2 }, 'closing'],
  ])('%s', (_case, change, expected) => {
    // Proves the one rule that trades a lone request's latency against fewer, larger objects under load.
    expect(walObjectDue({ ...WAITING, ...change })).toBe(expected);
  });
});
