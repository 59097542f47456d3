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
 *
 * With `groupOf`, a burst that takes several lists is split by group: the items waiting are ordered by
 * their group (items that waited through an earlier split first, so none starves) before they are cut into
 * lists. Applying an entry copies every shard of the view's bucket map it touches, so 1 024 buckets in
 * the order they came touched nearly all of the 256 shards the map then had, and every process copied the
 * whole map of 100 000 buckets per entry; grouped by shard (`bucketShardOf`), a list touches fewer.
 */
export class Batcher<Item, Result> {
  private waiting: { item: Item; resolve: (result: Result) => void; reject: (error: unknown) => void }[] = [];
  /**
   * How many items at the head of `waiting` are already in group order: those a split ordered and no flush
   * took yet. Every item behind them was submitted after that split, so a split orders only those.
   */
  private grouped = 0;
  private scheduled = false;
  private inFlight = 0;

  constructor(
    private readonly flush: (items: Item[]) => Promise<Result[]>,
    private readonly itemsPerFlushMax: number,
    private readonly flushesInFlightMax: number = 1,
    private readonly groupOf?: (item: Item) => number,
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
    if (this.waiting.length > this.itemsPerFlushMax && this.groupOf) this.groupWaiting(this.groupOf);
    while (this.waiting.length > 0 && this.inFlight < this.flushesInFlightMax) {
      const list = this.waiting.splice(0, this.itemsPerFlushMax);
      this.grouped = Math.max(0, this.grouped - list.length);
      this.inFlight += 1;
      void this.run(list).finally(() => {
        this.inFlight -= 1;
        this.schedule();
      });
    }
  }

  /**
   * Orders the waiting items: those that waited through an earlier split keep their place at the head
   * (already ordered then), and the ones submitted since follow, by group.
   * Ordering only the new ones keeps a burst of 30 000 items, flushed 256 at a time, from sorting all
   * that still wait at every flush.
   */
  private groupWaiting(groupOf: (item: Item) => number): void {
    const fresh = this.waiting.slice(this.grouped).map((entry) => ({ entry, group: groupOf(entry.item) }));
    fresh.sort((a, b) => a.group - b.group);
    this.waiting.length = this.grouped;
    for (const { entry } of fresh) this.waiting.push(entry);
    this.grouped = this.waiting.length;
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
