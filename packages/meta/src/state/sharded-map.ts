/**
 * An immutable map from string keys to values, split into `SHARDS` plain records by a hash of the key, so
 * that a change copies the list of shards and the shards it touches, not the whole map. The view keeps its
 * object references, its garbage and its buckets this way: the registry and the garbage grow with every
 * stream object, and copying a record of 100 000 keys for each applied `CommitWal` took 150–250 ms in every
 * process; copying a bucket map of 10 000 buckets for each took ten times what the rest of the apply does.
 *
 * Shards are records without a prototype (own enumerable properties only, so no key can reach
 * `__proto__`), so the map stays JSON data that `deepFreeze` and structural equality understand. Snapshots
 * store the flat record (`recordOf`), so their format does not depend on the sharding.
 */
export interface ShardedMap<V> {
  readonly size: number;
  readonly shards: readonly Readonly<Record<string, V>>[];
}

/**
 * Shards of the view's maps (a power of two); at 100 000 keys a change copies a record of about 25 and the
 * list of shards (32 KiB of pointers). A map keeps the number of shards it was made with (the length of
 * `shards`), so a small map, such as the writers of one stream, can have fewer.
 *
 * 4 096, measured at 100 000 buckets (6 250 `CreateTable`s of 16 buckets applied in one process, the last
 * 1 000 timed): with shards copied by spread, 256 shards took 2.5 ms per create and 1 024 took 0.93 ms; with
 * `copyOfShard`, 256 took 1.7 ms, 4 096 0.15–0.36 ms, 8 192 0.30 ms and 16 384 1.6 ms (copying the list of
 * shards dominates there).
 */
export const SHARDS = 4096;

const EMPTY_SHARD: Readonly<Record<string, never>> = Object.freeze(Object.create(null) as Record<string, never>);

/** An empty map of `shards` shards (a power of two). */
export function emptyShardedMap<V>(shards: number = SHARDS): ShardedMap<V> {
  if (!(Number.isSafeInteger(shards) && shards >= 1 && (shards & (shards - 1)) === 0)) throw new Error(`a sharded map needs a power of two of shards, got ${shards}`);
  return { size: 0, shards: new Array<Readonly<Record<string, V>>>(shards).fill(EMPTY_SHARD) };
}

/**
 * The shard of a key among `shards` (a power of two): FNV-1a over its UTF-16 code units. Stored maps depend
 * on it only in memory.
 */
export function shardOf(key: string, shards: number = SHARDS): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < key.length; index++) {
    hash ^= key.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) & (shards - 1);
}

/** The value of `key`, or undefined; a key that is not a string (from a malformed command) has none. */
export function getIn<V>(map: ShardedMap<V>, key: string): V | undefined {
  if (typeof key !== 'string') return undefined;
  const shard = map.shards[shardOf(key, map.shards.length)]!;
  return Object.prototype.hasOwnProperty.call(shard, key) ? shard[key] : undefined;
}

/**
 * Every entry, shard by shard (not in key order). Shards never written are the one shared empty shard and
 * are passed over without listing their keys: most maps of a small view (its tables, a cluster's few
 * thousand buckets) leave most of their 4 096 shards empty, and listing each one's keys was most of what a
 * pass over such a map cost (80 % of the metadata simulation's time).
 */
export function* entriesIn<V>(map: ShardedMap<V>): IterableIterator<[string, V]> {
  for (const shard of map.shards) {
    if (shard === EMPTY_SHARD) continue;
    for (const key of Object.keys(shard)) yield [key, shard[key]!];
  }
}

/** Every value, shard by shard (not in key order: sort when the order matters); empty shards as in `entriesIn`. */
export function* valuesIn<V>(map: ShardedMap<V>): IterableIterator<V> {
  for (const shard of map.shards) {
    if (shard === EMPTY_SHARD) continue;
    for (const key of Object.keys(shard)) yield shard[key]!;
  }
}

/**
 * `summarize` of every shard of `map`, each cached in `cache` under the shard itself. A shard is never changed
 * once a map holds it (an editor changes copies of the shards it touches, see ShardedMapEditor), so a pass
 * that summarizes a view's map again after a few entries costs the shards those entries copied, not every
 * value: the coordinator asks on every tick which leaders its 100 000 buckets have.
 */
export function* shardSummariesIn<V, S>(map: ShardedMap<V>, cache: WeakMap<object, S>, summarize: (shard: Readonly<Record<string, V>>) => S): IterableIterator<S> {
  for (const shard of map.shards) {
    let summary = cache.get(shard);
    if (summary === undefined) {
      summary = summarize(shard);
      cache.set(shard, summary);
    }
    yield summary;
  }
}

/** The map as one flat record (for snapshots and tests). */
export function recordOf<V>(map: ShardedMap<V>): Record<string, V> {
  const record: Record<string, V> = {};
  for (const [key, value] of entriesIn(map)) setOwn(record, key, value);
  return record;
}

/** A map of `shards` shards holding the entries of a flat record. */
export function shardedFrom<V>(record: Readonly<Record<string, V>>, shards: number = SHARDS): ShardedMap<V> {
  const editor = new ShardedMapEditor<V>(emptyShardedMap<V>(shards));
  for (const key of Object.keys(record)) editor.set(key, record[key]!);
  return editor.result();
}

/**
 * Changes to a map, made on copies of the shards they touch; `result()` is the new map. No map is ever
 * changed once made: neither the one the editor started from nor one `result()` returned, since a write after
 * `result()` copies the list of shards and the shard again (apply.ts reads an intermediate result and edits
 * on, and `shardSummariesIn` caches by shard).
 */
export class ShardedMapEditor<V> {
  private shards: Readonly<Record<string, V>>[] | undefined;
  private readonly copied = new Set<number>();
  private count: number;
  /** The map `result()` last returned, while no write has followed it: its shards are no longer writable. */
  private published: ShardedMap<V> | undefined;

  constructor(private readonly base: ShardedMap<V>) {
    this.count = base.size;
  }

  /** Entries of the map as edited so far. */
  get size(): number {
    return this.count;
  }

  get(key: string): V | undefined {
    const shard = (this.shards ?? this.base.shards)[this.shardOf(key)]!;
    return Object.prototype.hasOwnProperty.call(shard, key) ? shard[key] : undefined;
  }

  set(key: string, value: V): void {
    const shard = this.writableShard(this.shardOf(key));
    if (!Object.prototype.hasOwnProperty.call(shard, key)) this.count++;
    // A writable shard has no prototype (copyOfShard), so even `__proto__` is set as an own property.
    shard[key] = value;
  }

  delete(key: string): void {
    const index = this.shardOf(key);
    if (!Object.prototype.hasOwnProperty.call((this.shards ?? this.base.shards)[index]!, key)) return;
    delete this.writableShard(index)[key];
    this.count--;
  }

  result(): ShardedMap<V> {
    if (this.shards === undefined) return this.base;
    this.published ??= { size: this.count, shards: this.shards };
    return this.published;
  }

  private shardOf(key: string): number {
    return shardOf(key, this.base.shards.length);
  }

  private writableShard(index: number): Record<string, V> {
    if (this.published !== undefined) {
      this.shards = this.published.shards.slice();
      this.copied.clear();
      this.published = undefined;
    }
    this.shards ??= this.base.shards.slice();
    if (!this.copied.has(index)) {
      this.shards[index] = copyOfShard(this.shards[index]!);
      this.copied.add(index);
    }
    return this.shards[index] as Record<string, V>;
  }
}

/**
 * A writable copy of a shard: a record without a prototype, filled by assignment. V8 keeps such a record
 * as a hash table; a copy by spread (`{ ...shard }`) built a new hidden class per copy instead, which cost
 * about 10 times as much, and the copies were most of what applying an entry cost at 100 000 buckets.
 */
function copyOfShard<V>(shard: Readonly<Record<string, V>>): Record<string, V> {
  const copy = Object.create(null) as Record<string, V>;
  for (const key of Object.keys(shard)) copy[key] = shard[key]!;
  return copy;
}

function setOwn<V>(record: Record<string, V>, key: string, value: V): void {
  Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true });
}
