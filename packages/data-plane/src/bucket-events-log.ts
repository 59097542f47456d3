import type { Logger } from '@mink/runtime';

/**
 * What happened to a bucket on this node that the log reports: opened, closed, or taken over from a dead
 * incarnation of another node (its stream closed here at a new epoch, to be opened here next).
 */
export type BucketEvent = 'opened' | 'closed' | 'taken over';

/**
 * One bucket's event: where, and at which epoch (the leader epoch of an open, the stream epoch of a close or a
 * takeover), and for a takeover the dead incarnation it was taken from.
 */
export interface BucketEventEntry {
  table: string;
  partition: string | null;
  bucket: number;
  epoch: number;
  from?: { node: string; nodeEpoch: number };
}

/** The events of one kind gathered since the last line: how many, and the first few of them. */
export interface BucketEventSummary {
  buckets: number;
  first: string[];
}

/**
 * `orders/3@7`, or `events/2026-12-07/3@7` for a bucket of a partition: the table, bucket and epoch of an
 * entry; a takeover adds the incarnation it was taken from (`orders/3@7 from 2@1`).
 */
export function describeBucketEvent(entry: BucketEventEntry): string {
  const bucket = `${entry.table}/${entry.partition === null ? '' : `${entry.partition}/`}${entry.bucket}@${entry.epoch}`;
  return entry.from === undefined ? bucket : `${bucket} from ${entry.from.node}@${entry.from.nodeEpoch}`;
}

/** `summary` with `entry` added: counted, and named while fewer than `namedMax` are. A pure step of BucketEventsLog. */
export function withBucketEvent(summary: BucketEventSummary | undefined, entry: BucketEventEntry, namedMax: number): BucketEventSummary {
  const current = summary ?? { buckets: 0, first: [] };
  return { buckets: current.buckets + 1, first: current.first.length < namedMax ? [...current.first, describeBucketEvent(entry)] : current.first };
}

/**
 * Bucket opens, closes and takeovers of a data node, logged at info as one line per kind per `intervalMs`
 * ("buckets opened", "buckets closed", "buckets taken over", with their count and the first few), and each
 * at debug. A node that opens the buckets of a whole-cluster restart opens tens of thousands at once: a line
 * each was 67 000 info lines per node at 100 000 buckets, and their formatting a noticeable share of the
 * node's CPU while it was the restart's bottleneck; the survivors of a dead node of such a cluster take over
 * 33 000 buckets. A single failover still shows within `intervalMs`, naming its buckets.
 */
export class BucketEventsLog {
  private pending = new Map<BucketEvent, BucketEventSummary>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly logger: Logger,
    private readonly intervalMs: number,
    private readonly namedMax = 8,
  ) {}

  /** Counts `entry` under `event`; the line with it is written within `intervalMs`. */
  note(event: BucketEvent, entry: BucketEventEntry): void {
    if (this.logger.isLevelEnabled('debug')) {
      const from = entry.from === undefined ? {} : { deadNode: entry.from.node, deadNodeEpoch: entry.from.nodeEpoch };
      this.logger.debug({ table: entry.table, partition: entry.partition, bucket: entry.bucket, epoch: entry.epoch, ...from }, `bucket ${event}`);
    }
    this.pending.set(event, withBucketEvent(this.pending.get(event), entry, this.namedMax));
    if (this.timer === null) {
      this.timer = setTimeout(() => this.flush(), this.intervalMs);
      this.timer.unref();
    }
  }

  /** Writes what was counted since the last line, now. */
  flush(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    const pending = this.pending;
    this.pending = new Map();
    for (const [event, summary] of pending) this.logger.info(summary, `buckets ${event}`);
  }
}
