import { Batcher } from './batcher';

/** A flush that records the lists it got and answers each item with `item * 10`, after `release` is called. */
function recordingFlush() {
  const lists: number[][] = [];
  const pending: (() => void)[] = [];
  const flush = (items: number[]) =>
    new Promise<number[]>((resolve) => {
      lists.push(items);
      pending.push(() => resolve(items.map((item) => item * 10)));
    });
  const releaseAll = () => pending.splice(0).forEach((release) => release());
  return { lists, flush, releaseAll };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('Batcher', () => {
  it('gathers the items of one turn into one flush and gives each caller its own result', async () => {
    // Proves a burst of submissions costs one flush, and results are not mixed up.
    const { lists, flush, releaseAll } = recordingFlush();
    const batcher = new Batcher(flush, 100);
    const results = Promise.all([1, 2, 3].map((item) => batcher.submit(item)));
    await turn();
    expect(lists).toEqual([[1, 2, 3]]);
    releaseAll();
    await expect(results).resolves.toEqual([10, 20, 30]);
  });

  it('splits a burst into lists of at most itemsPerFlushMax, and gathers what arrives during a flush into the next', async () => {
    // Proves the bound on a list and that waiting items are coalesced while one flush is in flight.
    const { lists, flush, releaseAll } = recordingFlush();
    const batcher = new Batcher(flush, 2);
    const first = Promise.all([1, 2, 3].map((item) => batcher.submit(item)));
    await turn();
    expect(lists).toEqual([[1, 2]]);
    const later = Promise.all([4, 5].map((item) => batcher.submit(item)));
    await turn();
    expect(lists).toEqual([[1, 2]]);
    releaseAll();
    await turn();
    await turn();
    expect(lists).toEqual([[1, 2], [3, 4]]);
    releaseAll();
    await turn();
    await turn();
    expect(lists).toEqual([[1, 2], [3, 4], [5]]);
    releaseAll();
    await expect(first).resolves.toEqual([10, 20, 30]);
    await expect(later).resolves.toEqual([40, 50]);
  });

  it('fails every item of a list whose flush throws, and flushes the next list normally', async () => {
    // Proves one failing flush neither hangs its callers nor poisons later submissions.
    let calls = 0;
    const batcher = new Batcher(async (items: number[]) => {
      calls += 1;
      if (calls === 1) throw new Error('log unavailable');
      return items.map((item) => item + 1);
    }, 10);
    const failed = [batcher.submit(1), batcher.submit(2)];
    await expect(Promise.all(failed)).rejects.toThrow('log unavailable');
    await expect(failed[1]).rejects.toThrow('log unavailable');
    await expect(batcher.submit(7)).resolves.toBe(8);
  });

  it('treats a flush that answers the wrong number of results as a failure of its items', async () => {
    // Proves a miscounted answer is never delivered to the wrong caller.
    const batcher = new Batcher(async (items: number[]) => items.slice(1), 10);
    await expect(Promise.all([batcher.submit(1), batcher.submit(2)])).rejects.toThrow('a flush of 2 items returned 1 results');
  });
});
