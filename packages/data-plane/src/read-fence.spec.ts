import { MinkError } from '@mink/protocol';
import { ReadFence } from './read-fence';

function codeOf(call: () => void): string | null {
  try {
    call();
    return null;
  } catch (error) {
    return (error as MinkError).code;
  }
}

describe('ReadFence', () => {
  it('serves reads only under a held lease and after a catch-up that started within its current chain', async () => {
    // Proves a node that resumes after a pause (a new chain of renewals) catches up before it reads again.
    let nowMs = 100;
    let leaseSince: number | null = null;
    let catchUps = 0;
    let release: () => void = () => undefined;
    const fence = new ReadFence(
      '1',
      () => leaseSince,
      () => {
        catchUps++;
        return new Promise<void>((resolve) => (release = resolve));
      },
      () => undefined,
      () => nowMs,
    );
    expect(codeOf(() => fence.check())).toBe('Unavailable'); // no lease yet
    expect(catchUps).toBe(0);

    leaseSince = 50;
    expect(codeOf(() => fence.check())).toBe('Unavailable'); // lease, but no catch-up yet: one starts
    expect(codeOf(() => fence.check())).toBe('Unavailable'); // joins the one in flight
    expect(catchUps).toBe(1);
    release();
    await fence.startCatchUp().then(() => undefined);
    // startCatchUp above started a second catch-up (the first had finished); let it finish too.
    release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(codeOf(() => fence.check())).toBeNull();

    // A pause: the lease lapses, then a new chain starts after the last catch-up.
    leaseSince = null;
    expect(codeOf(() => fence.check())).toBe('Unavailable');
    nowMs = 5_000;
    leaseSince = 4_000;
    const before = catchUps;
    expect(codeOf(() => fence.check())).toBe('Unavailable');
    expect(catchUps).toBe(before + 1);
    release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(codeOf(() => fence.check())).toBeNull();
  });

  it('keeps refusing when a catch-up fails, and reports it', async () => {
    const errors: unknown[] = [];
    const fence = new ReadFence('1', () => 0, () => Promise.reject(new Error('log unreachable')), (error) => errors.push(error), () => 10);
    expect(codeOf(() => fence.check())).toBe('Unavailable');
    await new Promise((resolve) => setImmediate(resolve));
    expect(errors).toHaveLength(1);
    expect(codeOf(() => fence.check())).toBe('Unavailable');
  });
});
