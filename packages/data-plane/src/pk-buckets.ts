import { join } from 'node:path';
import { getIn, type BucketRecord } from '@mink/meta';
import type { BucketLifecycle } from './bucket-sync';
import { PkBucket, type PkBucketDeps } from './pk-bucket';

export interface PkBucketsOptions extends Omit<PkBucketDeps, 'directory'> {
  /** The folder under which each bucket's tablet gets a folder of its own. */
  tabletsDir: string;
  snapshotIntervalMs: number;
}

/**
 * The primary-key buckets one incarnation serves, and their part of opening and closing (BucketLifecycle):
 * a PK bucket serves only once its tablet is restored, snapshots on a timer while it is open, and takes a
 * last snapshot when it closes cleanly. Log buckets pass through untouched.
 */
export class PkBuckets implements BucketLifecycle {
  private readonly buckets = new Map<string, PkBucket>();
  private timer: NodeJS.Timeout | null = null;
  private snapshotRound: Promise<void> | null = null;

  constructor(private readonly options: PkBucketsOptions) {}

  /** The open PK bucket, or undefined when it is not (yet) restored here. */
  get(bucketId: string): PkBucket | undefined {
    return this.buckets.get(bucketId);
  }

  async opened(bucketId: string, record: BucketRecord, streamEpoch: number): Promise<void> {
    const table = getIn(this.options.meta.view.tables, record.table);
    if (!table || table.kind !== 'pk') return;
    const previous = this.buckets.get(bucketId);
    if (previous?.streamEpoch === streamEpoch) return;
    this.buckets.delete(bucketId);
    await previous?.close({ finalSnapshot: false });
    const directory = join(this.options.tabletsDir, `${bucketId.replaceAll('/', '-')}-${streamEpoch}`);
    const bucket = await PkBucket.open({ ...this.options, directory }, record, streamEpoch);
    this.buckets.set(bucketId, bucket);
  }

  isReady(bucketId: string, streamEpoch: number): boolean {
    const record = getIn(this.options.meta.view.buckets, bucketId);
    const table = record ? getIn(this.options.meta.view.tables, record.table) : undefined;
    if (!table || table.kind !== 'pk') return true;
    return this.buckets.get(bucketId)?.streamEpoch === streamEpoch;
  }

  async closing(bucketId: string): Promise<void> {
    const bucket = this.buckets.get(bucketId);
    if (!bucket) return;
    this.buckets.delete(bucketId);
    await bucket.close({ finalSnapshot: true });
  }

  released(bucketId: string): void {
    const bucket = this.buckets.get(bucketId);
    if (!bucket) return;
    this.buckets.delete(bucketId);
    void bucket.close({ finalSnapshot: false });
  }

  /** Snapshots every open bucket that changed, one after another, every `snapshotIntervalMs`. */
  start(): void {
    this.timer = setInterval(() => {
      this.snapshotRound ??= this.snapshotAll().finally(() => {
        this.snapshotRound = null;
      });
    }, this.options.snapshotIntervalMs);
    this.timer.unref();
  }

  async snapshotAll(): Promise<void> {
    for (const bucket of [...this.buckets.values()]) {
      try {
        await bucket.snapshot();
      } catch (error) {
        this.options.logger.warn({ err: error, bucketId: bucket.id }, 'KV snapshot failed; retrying on the next interval');
      }
    }
  }

  /** Stops the timer and drops every tablet without snapshots (a fenced incarnation may not commit any). */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.snapshotRound?.catch(() => undefined);
    const buckets = [...this.buckets.values()];
    this.buckets.clear();
    await Promise.all(buckets.map((bucket) => bucket.close({ finalSnapshot: false })));
  }
}
