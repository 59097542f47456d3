/**
 * Long-poll scans (docs/architecture.md §12, `wait=`): a scan at a bucket's high watermark parks here until a commit to
 * that bucket wakes it or its time runs out. The WAL writer's commit listener calls `notify`, so a waiting
 * scan is answered as soon as the batch is committed, not on a timer's next tick.
 */
export class CommitWaiters {
  private readonly waiting = new Map<string, Set<() => void>>();

  /** Scans parked on any bucket. */
  get waitingCount(): number {
    let count = 0;
    for (const wakers of this.waiting.values()) count += wakers.size;
    return count;
  }

  /** Wakes every scan waiting on `bucketId`. */
  notify(bucketId: string): void {
    const wakers = this.waiting.get(bucketId);
    if (wakers === undefined) return;
    this.waiting.delete(bucketId);
    for (const wake of wakers) wake();
  }

  /** Resolves at the next commit to `bucketId` or after `timeoutMs`, whichever comes first. */
  wait(bucketId: string, timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      let wakers = this.waiting.get(bucketId);
      if (wakers === undefined) this.waiting.set(bucketId, (wakers = new Set()));
      const wake = (): void => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        const current = this.waiting.get(bucketId);
        current?.delete(wake);
        if (current?.size === 0) this.waiting.delete(bucketId);
        resolve();
      }, Math.max(0, timeoutMs));
      wakers.add(wake);
    });
  }
}
