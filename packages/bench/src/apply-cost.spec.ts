import { measureApplyCost } from './apply-cost';

describe('measureApplyCost', () => {
  it('applies every CommitWal it times on a view of the asked size', () => {
    // Proves the measurement runs the real apply on the view it claims (no timing is asserted: the bench reports it).
    const result = measureApplyCost(50, 500, 20, 4);
    expect(result).toMatchObject({ buckets: 50, rangesPerCommit: 4, commits: 20 });
    // The stream objects plus one WAL object per applied commit (2 warm-up commits included).
    expect(result.liveObjects).toBe(500 + 22);
    expect(result.msPerCommitWal).toBeGreaterThan(0);
  });
});
