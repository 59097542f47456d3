/**
 * Gathers the items that callers submit during one turn of the event loop and hands them to `flush` in
 * lists of at most `itemsPerFlushMax`, so many small proposals (open this stream, re-lead that bucket)
 * become one metadata log entry each turn instead of one entry per item.
 *
 * Contract: `flush(items)` resolves with exactly one result per item, in the same order; every caller gets
 * its own item's result. A flush that throws fails every item of that list with the same error. Lists are
 * flushed one after another, in submission order, and at most `flushesInFlightMax` at a time; items
 * submitted while lists are in flight wait for the next free slot and are gathered with the others
 * waiting, so a burst costs few entries.
 */
export class Batcher<Item, Result> {
  private waiting: { item: Item; resolve: (result: Result) => void; reject: (error: unknown) => void }[] = [];
  private scheduled = false;
  private inFlight = 0;

  constructor(
    private readonly flush: (items: Item[]) => Promise<Result[]>,
    private readonly itemsPerFlushMax: number,
    private readonly flushesInFlightMax: number = 1,
  ) {
    if (!Number.isSafeInteger(itemsPerFlushMax) || itemsPerFlushMax < 1) throw new Error(`a batch holds 1 or more items, not ${itemsPerFlushMax}`);
    if (!Number.isSafeInteger(flushesInFlightMax) || flushesInFlightMax < 1) throw new Error(`1 or more flushes run at once, not ${flushesInFlightMax}`);
  }

  /** Items waiting for a flush (not counting those in flight). */
  get waitingCount(): number {
    return this.waiting.length;
  }

  submit(item: Item): Promise<Result> {
    return new Promise<Result>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.waiting.length === 0 || this.inFlight >= this.flushesInFlightMax) return;
    this.scheduled = true;
    // Everything submitted in this turn joins the list; the flush starts once the turn is over.
    setImmediate(() => {
      this.scheduled = false;
      this.startFlushes();
    });
  }

  private startFlushes(): void {
    while (this.waiting.length > 0 && this.inFlight < this.flushesInFlightMax) {
      const list = this.waiting.splice(0, this.itemsPerFlushMax);
      this.inFlight += 1;
      void this.run(list).finally(() => {
        this.inFlight -= 1;
        this.schedule();
      });
    }
  }

  private async run(list: Batcher<Item, Result>['waiting']): Promise<void> {
    try {
      const results = await this.flush(list.map((entry) => entry.item));
      if (results.length !== list.length) throw new Error(`invariant broken: a flush of ${list.length} items returned ${results.length} results`);
      list.forEach((entry, index) => entry.resolve(results[index]!));
    } catch (error) {
      for (const entry of list) entry.reject(error);
    }
  }
}
