import { measureApplyCost } from './apply-cost';

describe('measureApplyCost', () => {
  it('applies every CommitWal it times on a view of the asked size', () => {
    // Proves the measurement runs the real apply on the view it claims (no timing is asserted: the bench reports it).
    const result = measureApplyCost(50, 500, 20, 4);
    expect(result).toMatchObject({ buckets: 50, slicesPerStream: 10, rangesPerCommit: 4, commits: 20 });
    // The stream objects plus one WAL object per applied commit (2 warm-up commits included).
    expect(result.liveObjects).toBe(500 + 22);
    expect(result.msPerCommitWal).toBeGreaterThan(0);
  });

  it('starts every stream remembering the asked writers, and the commits succeed at the bound', () => {
    // Proves the many-writers case runs: the remembered writers are shared by the streams and evicted past the bound without a refusal.
    const result = measureApplyCost(10, 100, 20, 4, 1_024);
    expect(result).toMatchObject({ buckets: 10, writersPerStream: 1_024, commits: 20 });
    expect(result.msPerCommitWal).toBeGreaterThan(0);
  });
});
