import { UnavailableError } from '@mink/protocol';

/** Gives back the slot taken by `acquire`; calling it a second time is a bug and throws. */
export type ReleaseSlot = () => void;

/**
 * Bounds how many tasks run at once. Waiting tasks get their slot in arrival order, so a burst of requests
 * cannot starve the one that came first. The queue of waiters is bounded too: once `queuedMax` tasks wait,
 * further ones are refused with `UnavailableError`, which tells the caller to back off instead of piling up
 * memory behind a slow store.
 */
export class Semaphore {
  private inFlightCount = 0;
  private readonly waiters: Array<() => void> = [];

  constructor(
    readonly slotsMax: number,
    readonly queuedMax: number,
  ) {
    if (!Number.isSafeInteger(slotsMax) || slotsMax < 1) throw new Error(`a semaphore needs at least one slot, got ${slotsMax}`);
    if (!Number.isSafeInteger(queuedMax) || queuedMax < 0) throw new Error(`a semaphore's queue bound must be a whole number, got ${queuedMax}`);
  }

  /** Tasks holding a slot right now. */
  get inFlight(): number {
    return this.inFlightCount;
  }

  /** Tasks waiting for a slot right now. */
  get queued(): number {
    return this.waiters.length;
  }

  /** Resolves with a release function once a slot is free. */
  acquire(): Promise<ReleaseSlot> {
    if (this.inFlightCount < this.slotsMax) {
      this.inFlightCount++;
      return Promise.resolve(this.releaseOnce());
    }
    if (this.waiters.length >= this.queuedMax) {
      return Promise.reject(new UnavailableError(`${this.waiters.length} requests already wait for one of ${this.slotsMax} slots`));
    }
    return new Promise((resolve) => {
      // The releasing task hands its slot over directly, so inFlightCount stays the same and no newcomer can
      // take the slot between the release and this waiter's turn.
      this.waiters.push(() => resolve(this.releaseOnce()));
    });
  }

  /** Runs `task` in a slot and frees the slot when it settles, whether it resolves or throws. */
  async run<T>(task: () => Promise<T>): Promise<T> {
    const release = await this.acquire();
    try {
      return await task();
    } finally {
      release();
    }
  }

  private releaseOnce(): ReleaseSlot {
    let released = false;
    return () => {
      if (released) throw new Error('a semaphore slot was released twice');
      released = true;
      const next = this.waiters.shift();
      if (next) next();
      else this.inFlightCount--;
    };
  }
}
