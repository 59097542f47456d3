import { UnavailableError } from '@mink/protocol';
import { Semaphore } from './semaphore';

/** A promise with its resolve function, so a test decides when a task finishes. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
}

/** Lets every already-settled promise callback run. */
function flush(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

describe('Semaphore', () => {
  it('runs at most slotsMax tasks at once and starts waiting tasks in arrival order', async () => {
    // Proves the bound and the fairness: with 2 slots and 5 tasks, tasks start 0,1 then one per finished task, in order.
    const semaphore = new Semaphore(2, 10);
    const gates = Array.from({ length: 5 }, () => deferred());
    const started: number[] = [];
    let running = 0;
    let runningMax = 0;
    const tasks = gates.map((gate, index) =>
      semaphore.run(async () => {
        started.push(index);
        running++;
        runningMax = Math.max(runningMax, running);
        await gate.promise;
        running--;
        return index;
      }),
    );

    await flush();
    expect(started).toEqual([0, 1]);
    expect([semaphore.inFlight, semaphore.queued]).toEqual([2, 3]);
    gates[1].resolve();
    await flush();
    expect(started).toEqual([0, 1, 2]);
    gates.forEach((gate) => gate.resolve());
    expect(await Promise.all(tasks)).toEqual([0, 1, 2, 3, 4]);
    expect(started).toEqual([0, 1, 2, 3, 4]);
    expect(runningMax).toBe(2);
    expect([semaphore.inFlight, semaphore.queued]).toEqual([0, 0]);
  });

  it('frees the slot of a task that throws', async () => {
    // Proves a failed request cannot leak its slot: after a throw in a 1-slot semaphore the next task still runs.
    const semaphore = new Semaphore(1, 10);
    await expect(semaphore.run(async () => Promise.reject(new Error('task failed')))).rejects.toThrow('task failed');
    expect(await semaphore.run(async () => 'next')).toBe('next');
    expect(semaphore.inFlight).toBe(0);
  });

  it('refuses a task with UnavailableError once queuedMax tasks wait, and accepts again after the queue drains', async () => {
    // Proves the waiting queue is bounded: slot taken, one waiter allowed, the next caller is told to back off.
    const semaphore = new Semaphore(1, 1);
    const releaseFirst = await semaphore.acquire();
    const second = semaphore.acquire();
    await expect(semaphore.acquire()).rejects.toBeInstanceOf(UnavailableError);

    releaseFirst();
    const releaseSecond = await second;
    expect([semaphore.inFlight, semaphore.queued]).toEqual([1, 0]);
    releaseSecond();
    expect(semaphore.inFlight).toBe(0);
  });

  it('throws when a slot is released twice, instead of silently raising the bound', async () => {
    // Proves a double release is caught as the bug it is: otherwise inFlight would drop below the truth and admit extra tasks.
    const semaphore = new Semaphore(1, 1);
    const release = await semaphore.acquire();
    release();
    expect(() => release()).toThrow('released twice');
    expect(semaphore.inFlight).toBe(0);
  });

  it.each([
    [0, 1],
    [1.5, 1],
    [1, -1],
  ])('refuses slotsMax %p with queuedMax %p', (slotsMax, queuedMax) => {
    // Proves nonsensical bounds fail at construction instead of deadlocking or admitting everything later.
    expect(() => new Semaphore(slotsMax, queuedMax)).toThrow();
  });
});
