import { measureTrial, spreadOf, summarizeFailover } from './failover-figures';
import type { FailoverTrial } from './results';

describe('measureTrial', () => {
  it.each<[string, number[], number, { unavailableMs: number | null; longestGapMs: number | null }]>([
    ['a recovery with a later, longer gap', [0, 100, 200, 3_200, 3_300, 7_000], 200, { unavailableMs: 3_000, longestGapMs: 3_700 }],
    ['acknowledgements in any order', [3_300, 200, 0, 3_200], 200, { unavailableMs: 3_000, longestGapMs: 3_000 }],
    ['a gap counted from the last acknowledgement before the signal', [100, 1_100], 150, { unavailableMs: 950, longestGapMs: 1_000 }],
    ['no acknowledgement before the signal', [400, 450], 100, { unavailableMs: 300, longestGapMs: 300 }],
    ['no acknowledgement after the signal', [0, 100], 100, { unavailableMs: null, longestGapMs: null }],
    ['no acknowledgement at all', [], 100, { unavailableMs: null, longestGapMs: null }],
  ])('measures %s', (_case, acknowledgedAtMs, signalMs, expected) => {
    // Proves unavailability runs from the signal to the first later acknowledgement, and the gap from the last earlier one.
    expect(measureTrial(acknowledgedAtMs, signalMs)).toEqual(expected);
  });
});

describe('spreadOf', () => {
  it('takes min, nearest-rank median and max, and null for no samples', () => {
    // Proves the median is a measured trial and an empty series has no spread rather than throwing.
    expect(spreadOf([3_900, 3_600, 4_200])).toEqual({ minimumMs: 3_600, medianMs: 3_900, maximumMs: 4_200 });
    expect(spreadOf([])).toBeNull();
  });
});

describe('summarizeFailover', () => {
  const trial = (unavailableMs: number | null): FailoverTrial => ({ fault: 'kill-9', victimNodeId: '1', unavailableMs, longestGapMs: unavailableMs, failedCalls: 0, loadRows: 0, loadFailedCalls: 0 });

  it('states the median as a ratio to lease_ttl + coordinator_tick, leaving out trials that never recovered', () => {
    // Proves the printed sentence and that an unrecovered trial is kept but not counted.
    const summary = summarizeFailover('kill-9', [trial(3_600), trial(3_900), trial(null), trial(4_200)], 3_500);
    expect(summary.trials).toHaveLength(4);
    expect(summary.unavailable).toEqual({ minimumMs: 3_600, medianMs: 3_900, maximumMs: 4_200 });
    expect(summary.ratio?.text).toBe('kill -9: median 3.9 s = 1.1 × (lease_ttl + coordinator_tick)');
    expect(summarizeFailover('sigterm', [trial(600)], 3_500).ratio?.text).toBe('SIGTERM: median 0.60 s = 0.17 × (lease_ttl + coordinator_tick)');
  });

  it('has no figures when no trial recovered, and refuses a bound that is not positive', () => {
    // Proves a broken failover prints no ratio, and a bad bound is a bug of the caller.
    expect(summarizeFailover('kill-9', [trial(null)], 3_500)).toEqual(expect.objectContaining({ unavailable: null, ratio: null }));
    expect(() => summarizeFailover('kill-9', [], 0)).toThrow(/positive/);
  });
});
