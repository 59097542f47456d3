import { CommitWaiters } from './commit-waiters';

describe('CommitWaiters', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('wakes the scans waiting on a bucket at its commit, and only those', async () => {
    const waiters = new CommitWaiters();
    const woken: string[] = [];
    void waiters.wait('1//0', 30_000).then(() => woken.push('a'));
    void waiters.wait('1//0', 30_000).then(() => woken.push('b'));
    void waiters.wait('1//1', 30_000).then(() => woken.push('other'));
    expect(waiters.waitingCount).toBe(3);

    waiters.notify('1//0');
    await Promise.resolve();
    expect(woken.sort()).toEqual(['a', 'b']);
    expect(waiters.waitingCount).toBe(1);
  });

  it('resolves at the deadline without a commit and forgets the waiter', async () => {
    const waiters = new CommitWaiters();
    let done = false;
    void waiters.wait('1//0', 500).then(() => (done = true));
    await jest.advanceTimersByTimeAsync(499);
    expect(done).toBe(false);
    await jest.advanceTimersByTimeAsync(1);
    expect(done).toBe(true);
    expect(waiters.waitingCount).toBe(0);
  });
});
