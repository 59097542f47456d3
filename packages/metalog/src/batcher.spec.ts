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

  it('with groupOf, cuts a burst of several lists by group, and never lets later items pass those already waiting', async () => {
    // Proves a burst's lists each hold few groups (few shards of the bucket map touched per log entry), and
    // that items arriving meanwhile, whatever their group, wait for those of the earlier burst.
    const { lists, flush, releaseAll } = recordingFlush();
    const batcher = new Batcher(flush, 3, 1, (item: number) => item % 3);
    const burst = Promise.all([1, 2, 3, 4, 5, 6, 7].map((item) => batcher.submit(item)));
    await turn();
    expect(lists).toEqual([[3, 6, 1]]);
    const later = Promise.all([9, 12].map((item) => batcher.submit(item)));
    releaseAll();
    await turn();
    await turn();
    expect(lists).toEqual([
      [3, 6, 1],
      [4, 7, 2],
    ]);
    releaseAll();
    await turn();
    await turn();
    expect(lists.slice(2)).toEqual([[5, 9, 12]]);
    releaseAll();
    await expect(burst).resolves.toEqual([10, 20, 30, 40, 50, 60, 70]);
    await expect(later).resolves.toEqual([90, 120]);
  });

  it('with groupOf, orders each item once: a long burst is not sorted again at every flush', async () => {
    // Proves the cost of a burst of n items is n group lookups, not one per item per flush (at 33 000 buckets
    // opened 256 per entry, sorting all still waiting at every flush was a tenth of a data node's restart),
    // and that a second wave still follows the first in group order.
    const { lists, flush, releaseAll } = recordingFlush();
    const grouped: number[] = [];
    const batcher = new Batcher(flush, 4, 1, (item: number) => {
      grouped.push(item);
      return item % 4;
    });
    const first = Promise.all(Array.from({ length: 20 }, (_unused, index) => batcher.submit(index)));
    await turn();
    const second = Promise.all([101, 102, 103, 104, 105].map((item) => batcher.submit(item)));
    for (let flushes = 0; flushes < 8; flushes++) {
      releaseAll();
      await turn();
      await turn();
    }
    await expect(first).resolves.toHaveLength(20);
    await expect(second).resolves.toEqual([1010, 1020, 1030, 1040, 1050]);
    expect([...grouped].sort((a, b) => a - b)).toEqual([...Array.from({ length: 20 }, (_unused, index) => index), 101, 102, 103, 104, 105]);
    expect(lists.flat()).toEqual([0, 4, 8, 12, 16, 1, 5, 9, 13, 17, 2, 6, 10, 14, 18, 3, 7, 11, 15, 19, 104, 101, 105, 102, 103]);
  });

  it('without more than one list waiting, keeps the order of submission', async () => {
    // Proves grouping only reorders what is cut into several lists.
    const { lists, flush, releaseAll } = recordingFlush();
    const batcher = new Batcher(flush, 3, 1, (item: number) => -item);
    const results = Promise.all([1, 2, 3].map((item) => batcher.submit(item)));
    await turn();
    expect(lists).toEqual([[1, 2, 3]]);
    releaseAll();
    await expect(results).resolves.toEqual([10, 20, 30]);
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
