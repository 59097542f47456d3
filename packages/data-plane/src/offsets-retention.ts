import { LIMITS } from '@mink/config';
import { bucketOfRow } from '@mink/records';
import { getIn } from '@mink/meta';
import { sweepOffsetRetention } from '@mink/kafka';
import type { ClusterMember, Logger } from '@mink/runtime';
import type { DataPlane } from './data-plane';

/**
 * Expires the committed offsets of consumer groups that have had no members for the retention
 * (`kafkaOffsetsRetentionMs`, Kafka's offsets.retention.minutes; the rule is sweepOffsetRetention), in the
 * buckets of `__consumer_offsets` this node leads, the ones whose groups it coordinates. Every
 * `kafkaOffsetsSweepMs` (a quarter of a shorter retention) it pages through each such bucket for the groups with offsets and deletes the rows
 * of the expired ones. Commits count as activity (`touched`, called before their put is queued, so a sweep
 * never deletes offsets committed after it decided).
 */
export class OffsetsRetention {
  /** Last activity of the groups of each bucket led here, by bucket. */
  private readonly activity = new Map<number, Map<string, number>>();
  private timer: NodeJS.Timeout | undefined;
  private sweeping = false;

  constructor(
    private readonly member: ClusterMember,
    private readonly dataPlane: () => DataPlane | null,
    private readonly table: string,
    private readonly bucketKey: string[],
    /** Whether the group has members now, as this node's group coordinator knows it. */
    private readonly hasMembers: (groupId: string) => boolean,
    private readonly retentionMs: number,
    private readonly logger: Logger,
    private readonly nowMs: () => number = Date.now,
  ) {}

  start(): void {
    if (this.timer) return;
    // A retention shorter than the sweep interval (tests, demos) is swept four times per retention, so offsets go within 1.25 retentions.
    const everyMs = Math.max(500, Math.min(LIMITS.kafkaOffsetsSweepMs, Math.floor(this.retentionMs / 4)));
    this.timer = setInterval(() => void this.sweep(), everyMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** A commit of `groupId`'s offsets: the group is active now. */
  touched(groupId: string): void {
    const table = getIn(this.member.view.tables, this.table);
    if (!table) return;
    const bucket = bucketOfRow({ group: groupId }, this.bucketKey, table.buckets);
    let groups = this.activity.get(bucket);
    if (!groups) this.activity.set(bucket, (groups = new Map()));
    groups.set(groupId, this.nowMs());
  }

  /** One sweep of every bucket led here; a sweep still running when the next is due makes that one skip. */
  async sweep(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      const table = getIn(this.member.view.tables, this.table);
      const data = this.dataPlane();
      if (!table || !data) return;
      for (let bucket = 0; bucket < table.buckets; bucket++) {
        // A bucket that moved away is counted anew if it comes back: offsets are then kept longer, never shorter.
        if (!data.serves(this.table, bucket)) this.activity.delete(bucket);
        else await this.sweepBucket(data, { table: this.table, tableId: table.id, partition: null, bucket });
      }
    } catch (error) {
      this.logger.warn({ err: error, table: this.table }, 'the offsets retention sweep stopped early; the next one tries again');
    } finally {
      this.sweeping = false;
    }
  }

  private async sweepBucket(data: DataPlane, address: { table: string; tableId: number; partition: null; bucket: number }): Promise<void> {
    const groups = new Set<string>();
    let after: Uint8Array | null = null;
    do {
      const page = data.pkRowsAfter(address, after, LIMITS.kafkaOffsetsSweepPageRows);
      for (const row of page.rows) groups.add(String(row.group));
      after = page.rows.length < LIMITS.kafkaOffsetsSweepPageRows ? null : page.lastKey;
      // Yields between pages: a bucket of many offsets never holds up the node's requests.
      await new Promise((resolve) => setImmediate(resolve));
    } while (after !== null);

    const outcome = sweepOffsetRetention(
      [...groups].map((groupId) => ({ groupId, hasMembers: this.hasMembers(groupId) })),
      this.activity.get(address.bucket) ?? new Map(),
      this.nowMs(),
      this.retentionMs,
    );
    const activity = outcome.activeMs;
    this.activity.set(address.bucket, activity);
    for (const groupId of outcome.expired) await this.expire(data, address, groupId, activity);
  }

  /** Deletes an expired group's offsets, unless it committed or got members since the sweep decided. */
  private async expire(data: DataPlane, address: { table: string; tableId: number; partition: null; bucket: number }, groupId: string, activity: Map<string, number>): Promise<void> {
    for (;;) {
      // Checked right before the delete is queued: a commit touches the group before its put is queued, so
      // a put queued before this delete is seen here, and one queued after it lands after the delete.
      if (activity.has(groupId) || this.hasMembers(groupId)) return;
      const found = data.prefixLookup({ op: 'prefixLookup', ...address, prefixes: [{ group: groupId }], columns: ['group', 'topic', 'partition'], limit: Math.min(LIMITS.pkBatchOperationsMax, LIMITS.prefixLookupRowsMax) });
      const { rows, truncated } = found.results[0]!;
      if (rows.length === 0) return;
      await data.delete({ op: 'delete', ...address, keys: rows });
      this.logger.info({ group: groupId, offsets: rows.length, retentionMs: this.retentionMs }, 'offsets of a consumer group without members expired');
      if (!truncated) return;
    }
  }
}
