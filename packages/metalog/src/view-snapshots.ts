import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import type { KV, KvEntry, NatsConnection } from 'nats';
import { DEFAULTS, LIMITS } from '@mink/config';
import { NO_WRITERS, WRITER_SHARDS, recordOf, shardedFrom, type BucketRecord, type GarbageRecord, type ObjectRecord, type ShardedMap, type StreamRecord, type TableRecord, type View, type WriterState } from '@mink/meta';
import { NotFoundError, UnavailableError } from '@mink/protocol';
import type { ObjectStore } from '@mink/s3stream';
import { isWrongRevision, openLatestValueBucket, translateNatsError, type BucketCreationOptions } from './nats-errors';

/** The KV bucket that holds, per metadata log, the pointer to its newest snapshots. */
export const SNAPSHOT_BUCKET = 'mink_meta_snapshots';
/** Where snapshots of the default metadata log live in the object store (docs/architecture.md §5: `meta/snapshots/{seq}`). */
export const SNAPSHOT_KEY_PREFIX = 'meta/snapshots/';
/** Digits of the sequence in a snapshot's key, zero-padded so keys sort in sequence order. */
const SEQ_DIGITS = 16;
/** Version of the snapshot body; a loader refuses any other, rather than misreading it. */
const SNAPSHOT_FORMAT = 1;

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** One snapshot named by the pointer: the view after entry `seq`, stored at `key`. */
export interface SnapshotReference {
  seq: number;
  key: string;
}

/** What `write` did: the snapshot it stored and the snapshots the pointer names afterwards, newest first. */
export interface SnapshotWriteResult extends SnapshotReference {
  kept: SnapshotReference[];
}

/** The value of the pointer key: the kept snapshots, newest first. */
interface SnapshotPointer {
  snapshots: SnapshotReference[];
}

/** A bucket record as a snapshot stores it: its stream's writers as a flat record. */
type StoredBucketRecord = Omit<BucketRecord, 'stream'> & { stream: Omit<StreamRecord, 'writers'> & { writers: Record<string, WriterState> } };

/** A view as a snapshot stores it: the tables, the buckets, the object registry and the garbage as flat records. */
type StoredView = Omit<View, 'tables' | 'buckets' | 'objects' | 'garbage'> & {
  tables: Record<string, TableRecord>;
  buckets: Record<string, StoredBucketRecord>;
  objects: Record<string, ObjectRecord>;
  garbage: Record<string, GarbageRecord>;
};

/** The body of a snapshot object, before gzip. */
interface SnapshotBody {
  format: number;
  view: StoredView;
}

export interface ViewSnapshotsOptions {
  store: ObjectStore;
  /** The pointer bucket, e.g. from `openSnapshotBucket`. */
  kv: KV;
  /** The key of the pointer in `kv`; `DEFAULTS.metaStream` when absent (one pointer per metadata log). */
  pointerKey?: string;
  /** Prefix of snapshot keys in the store; `SNAPSHOT_KEY_PREFIX` when absent. */
  keyPrefix?: string;
  /** Snapshots the pointer keeps; `LIMITS.metaSnapshotsKept` when absent. */
  keptMax?: number;
}

/** Pointer key and object prefix for the snapshots of one metadata log, so several logs can share a bucket. */
export function snapshotLocation(streamName: string): { pointerKey: string; keyPrefix: string } {
  const keyPrefix = streamName === DEFAULTS.metaStream ? SNAPSHOT_KEY_PREFIX : `${SNAPSHOT_KEY_PREFIX}${streamName}/`;
  return { pointerKey: streamName, keyPrefix };
}

/** Opens (creating if needed) the pointer bucket; only the latest pointer of each key is kept. */
export function openSnapshotBucket(connection: NatsConnection, bucket: string = SNAPSHOT_BUCKET, options: BucketCreationOptions = {}): Promise<KV> {
  return openLatestValueBucket(connection, bucket, options);
}

/**
 * Snapshots of the metadata view in object storage (docs/architecture.md §3, §4). A snapshot is the view after entry
 * `seq` as gzipped JSON at `{keyPrefix}{seq, 16 digits}`. A pointer in a KV bucket names the kept snapshots,
 * newest first, so a reader finds the newest with one KV read and one GET and never lists the store.
 *
 * Ordering and concurrency:
 * - `write` uploads the object first and only then names it in the pointer, so the pointer never names a
 *   missing object. The pointer is changed with compare-and-set on its revision and keeps the `keptMax`
 *   highest sequences of everything written, so concurrent writers never clobber each other and the newer
 *   sequence wins whatever the order of their writes.
 * - The oldest kept sequence therefore only grows, which is what makes purging the log below it safe even
 *   when a stale writer is still at work.
 * - Objects that fall out of the pointer are deleted after the pointer changed. A reader that read the
 *   pointer just before may then miss its object; `loadNewest` reads the pointer again and retries.
 * - Any process may write: all copies of the view agree at each sequence, so two snapshots of one
 *   sequence are the same bytes before gzip and overwriting one with the other changes nothing.
 */
export class ViewSnapshots {
  private readonly store: ObjectStore;
  private readonly kv: KV;
  readonly pointerKey: string;
  readonly keyPrefix: string;
  readonly keptMax: number;

  constructor(options: ViewSnapshotsOptions) {
    this.store = options.store;
    this.kv = options.kv;
    this.pointerKey = options.pointerKey ?? DEFAULTS.metaStream;
    this.keyPrefix = options.keyPrefix ?? SNAPSHOT_KEY_PREFIX;
    this.keptMax = options.keptMax ?? LIMITS.metaSnapshotsKept;
    if (!Number.isSafeInteger(this.keptMax) || this.keptMax < 1) throw new Error(`at least one snapshot must be kept, not ${this.keptMax}`);
  }

  /** Snapshots of the metadata log `streamName`, with the pointer bucket opened on `connection`. */
  static async open(
    connection: NatsConnection,
    store: ObjectStore,
    streamName: string = DEFAULTS.metaStream,
    options: BucketCreationOptions = {},
  ): Promise<ViewSnapshots> {
    return new ViewSnapshots({ store, kv: await openSnapshotBucket(connection, SNAPSHOT_BUCKET, options), ...snapshotLocation(streamName) });
  }

  /** The object key of the snapshot after entry `seq`. */
  keyOf(seq: number): string {
    return `${this.keyPrefix}${String(seq).padStart(SEQ_DIGITS, '0')}`;
  }

  /**
   * Stores `view` as the snapshot after entry `view.seq`, names it in the pointer and deletes the snapshots
   * that no longer fit. A snapshot older than every kept one is deleted again at once: it is of no use.
   */
  async write(view: View): Promise<SnapshotWriteResult> {
    if (!Number.isSafeInteger(view.seq) || view.seq < 1) throw new Error(`only a view that applied an entry is snapshotted, not one at ${view.seq}`);
    const written: SnapshotReference = { seq: view.seq, key: this.keyOf(view.seq) };
    await this.store.put(written.key, await encodeSnapshot(view));
    const { before, after } = await this.addToPointer(written);
    const keptKeys = new Set(after.map((reference) => reference.key));
    const unused = [...before, written].map((reference) => reference.key).filter((key) => !keptKeys.has(key));
    if (unused.length > 0) await this.store.delete([...new Set(unused)]);
    return { ...written, kept: after };
  }

  /** The newest snapshot's view, or null when none was written yet. */
  async loadNewest(): Promise<View | null> {
    for (let attempt = 1; attempt <= LIMITS.metaSnapshotLoadAttemptsMax; attempt++) {
      const newest = (await this.kept())[0];
      if (newest === undefined) return null;
      try {
        return await this.load(newest);
      } catch (error) {
        // Writers dropped it from the pointer after we read the pointer: the pointer now names newer ones.
        if (!(error instanceof NotFoundError)) throw error;
      }
    }
    throw new UnavailableError(`the newest snapshot of the metadata view kept disappearing (${LIMITS.metaSnapshotLoadAttemptsMax} attempts)`);
  }

  /** The snapshots the pointer names, newest first; empty when none was written yet. */
  async kept(): Promise<SnapshotReference[]> {
    const entry = await this.readPointer();
    return entry === null ? [] : decodePointer(entry);
  }

  /** The sequence of the oldest kept snapshot, or null when there is none. The log is purged below it + 1. */
  async oldestKeptSeq(): Promise<number | null> {
    const kept = await this.kept();
    return kept.length === 0 ? null : kept[kept.length - 1]!.seq;
  }

  /** Reads one snapshot; a missing object is `NotFoundError`, a body that is not one of ours an Error. */
  async load(reference: SnapshotReference): Promise<View> {
    const view = await decodeSnapshot(await this.store.get(reference.key), reference.key);
    if (view.seq !== reference.seq) throw new Error(`snapshot ${reference.key} holds the view at entry ${view.seq}, not ${reference.seq}`);
    return view;
  }

  /** Adds `written` to the pointer with compare-and-set, retrying when another writer changed it first. */
  private async addToPointer(written: SnapshotReference): Promise<{ before: SnapshotReference[]; after: SnapshotReference[] }> {
    for (let attempt = 1; attempt <= LIMITS.metaSnapshotPointerAttemptsMax; attempt++) {
      const entry = await this.readPointer();
      const before = entry === null ? [] : decodePointer(entry);
      const after = newestFirst([...before, written]).slice(0, this.keptMax);
      if (sameReferences(before, after)) return { before, after };
      const value = encoder.encode(JSON.stringify({ snapshots: after } satisfies SnapshotPointer));
      try {
        if (entry === null) await this.kv.create(this.pointerKey, value);
        else await this.kv.update(this.pointerKey, value, entry.revision);
        return { before, after };
      } catch (error) {
        if (!isWrongRevision(error)) throw translateNatsError(error, `update the snapshot pointer ${this.pointerKey}`);
      }
    }
    throw new UnavailableError(
      `the snapshot pointer ${this.pointerKey} kept changing under us (${LIMITS.metaSnapshotPointerAttemptsMax} attempts)`,
    );
  }

  /** The pointer entry, or null when the key was never written (or was deleted by hand). */
  private async readPointer(): Promise<KvEntry | null> {
    try {
      const entry = await this.kv.get(this.pointerKey);
      return entry !== null && entry.operation === 'PUT' ? entry : null;
    } catch (error) {
      throw translateNatsError(error, `read the snapshot pointer ${this.pointerKey}`);
    }
  }
}

/** Kept snapshots by descending sequence, one per sequence. */
function newestFirst(references: SnapshotReference[]): SnapshotReference[] {
  const bySeq = new Map<number, SnapshotReference>();
  for (const reference of references) if (!bySeq.has(reference.seq)) bySeq.set(reference.seq, reference);
  return [...bySeq.values()].sort((a, b) => b.seq - a.seq);
}

function sameReferences(a: SnapshotReference[], b: SnapshotReference[]): boolean {
  return a.length === b.length && a.every((reference, index) => reference.seq === b[index]!.seq && reference.key === b[index]!.key);
}

/** The pointer's references; a value that is not a pointer is a broken invariant, never silently "no snapshot". */
function decodePointer(entry: KvEntry): SnapshotReference[] {
  const value = JSON.parse(decoder.decode(entry.value)) as Partial<SnapshotPointer>;
  const snapshots = value?.snapshots;
  const valid =
    Array.isArray(snapshots) &&
    snapshots.every((reference) => Number.isSafeInteger(reference?.seq) && reference.seq >= 1 && typeof reference?.key === 'string');
  if (!valid) throw new Error(`the snapshot pointer ${entry.key} holds no list of snapshots: ${decoder.decode(entry.value)}`);
  return newestFirst(snapshots);
}

async function encodeSnapshot(view: View): Promise<Uint8Array> {
  const json = await snapshotJson(view);
  const jsonBytes = Buffer.byteLength(json);
  if (jsonBytes > LIMITS.metaSnapshotJsonBytesMax) {
    throw new Error(`the metadata view at entry ${view.seq} is ${jsonBytes} bytes of JSON, over LIMITS.metaSnapshotJsonBytesMax`);
  }
  return gzipAsync(json);
}

/**
 * The JSON of a snapshot body: the view with the tables, the buckets (each stream's writers flat), the object registry
 * and the garbage as flat records, whatever the sharding in memory; the same text as `JSON.stringify` of
 * that body. It is written shard by shard, and yields to the event loop whenever `yieldEveryMs` of work has
 * passed: the lease holder writes snapshots, and encoding a view of 100 000 buckets in one go held its event
 * loop long enough to lose the lease.
 */
export async function snapshotJson(view: View, yieldEveryMs: number = LIMITS.metaSnapshotYieldEveryMs): Promise<string> {
  const parts: string[] = [];
  let sliceStartedAt = performance.now();
  const yieldIfDue = async (): Promise<void> => {
    if (performance.now() - sliceStartedAt < yieldEveryMs) return;
    await new Promise((resolve) => setImmediate(resolve));
    sliceStartedAt = performance.now();
  };
  const flat = async <V>(map: ShardedMap<V>, stored: (value: V) => unknown): Promise<void> => {
    parts.push('{');
    let first = true;
    for (const shard of map.shards) {
      for (const key of Object.keys(shard)) {
        const text = JSON.stringify(stored(shard[key]!));
        if (text === undefined) continue;
        parts.push(`${first ? '' : ','}${JSON.stringify(key)}:${text}`);
        first = false;
      }
      await yieldIfDue();
    }
    parts.push('}');
  };
  parts.push(`{"format":${SNAPSHOT_FORMAT},"view":{`);
  let firstField = true;
  for (const field of Object.keys(view) as (keyof View)[]) {
    const comma = firstField ? '' : ',';
    if (field === 'buckets') {
      parts.push(`${comma}"buckets":`);
      await flat(view.buckets, (record): StoredBucketRecord => ({ ...record, stream: { ...record.stream, writers: recordOf(record.stream.writers) } }));
    } else if (field === 'tables' || field === 'objects' || field === 'garbage') {
      parts.push(`${comma}${JSON.stringify(field)}:`);
      await flat<TableRecord | ObjectRecord | GarbageRecord>(view[field], (value) => value);
    } else {
      const text = JSON.stringify(view[field]);
      if (text === undefined) continue;
      parts.push(`${comma}${JSON.stringify(field)}:${text}`);
    }
    firstField = false;
  }
  parts.push('}}');
  return parts.join('');
}

async function decodeSnapshot(body: Uint8Array, key: string): Promise<View> {
  // The bound on the inflated size keeps a corrupt or hostile object from exhausting memory.
  const json = await gunzipAsync(body, { maxOutputLength: LIMITS.metaSnapshotJsonBytesMax });
  const parsed = JSON.parse(json.toString('utf8')) as Partial<SnapshotBody>;
  if (parsed?.format !== SNAPSHOT_FORMAT || typeof parsed.view !== 'object' || parsed.view === null) {
    throw new Error(`snapshot ${key} is not a metadata view snapshot of format ${SNAPSHOT_FORMAT}`);
  }
  // The parsed records are this function's own, so they are completed in place and go into the map as
  // they are: a copy of each (with the record of all 100 000 that held the copies) was a second view's
  // worth of garbage at the start of every process.
  const stored = parsed.view;
  const storedBuckets = stored.buckets ?? {};
  for (const id of Object.keys(storedBuckets)) {
    const bucket = storedBuckets[id]!;
    // Snapshots written before PK tables kept KV snapshots have buckets without the list: they had none.
    bucket.kvSnapshots ??= [];
    const writers = bucket.stream.writers ?? {};
    // Streams without writers share one empty map, as the streams of a view built by `apply` do.
    (bucket.stream as unknown as StreamRecord).writers = Object.keys(writers).length === 0 ? NO_WRITERS : shardedFrom(writers, WRITER_SHARDS);
  }
  const buckets = shardedFrom(storedBuckets as unknown as Record<string, BucketRecord>);
  // Snapshots written before Kafka producer ids existed had allocated none.
  return {
    ...stored,
    nextProducerId: stored.nextProducerId ?? 0,
    tables: shardedFrom(stored.tables ?? {}),
    buckets,
    objects: shardedFrom(stored.objects ?? {}),
    garbage: shardedFrom(stored.garbage ?? {}),
  };
}
