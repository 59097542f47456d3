/**
 * An immutable map from string keys to values, split into `SHARDS` plain records by a hash of the key, so
 * that a change copies the list of shards and the shards it touches, not the whole map. The view keeps its
 * object references, its garbage and its buckets this way: the registry and the garbage grow with every
 * stream object, and copying a record of 100 000 keys for each applied `CommitWal` took 150–250 ms in every
 * process; copying a bucket map of 10 000 buckets for each took ten times what the rest of the apply does.
 *
 * Shards are plain records (own enumerable properties, set with `defineProperty` so that no key can reach
 * `__proto__`), so the map stays JSON data that `deepFreeze` and structural equality understand. Snapshots
 * store the flat record (`recordOf`), so their format does not depend on the sharding.
 */
export interface ShardedMap<V> {
  readonly size: number;
  readonly shards: readonly Readonly<Record<string, V>>[];
}

/** Shards of every map; a power of two. At 100 000 keys a change copies a record of about 400. */
export const SHARDS = 256;

const EMPTY_SHARD: Readonly<Record<string, never>> = Object.freeze({});

export function emptyShardedMap<V>(): ShardedMap<V> {
  return { size: 0, shards: new Array<Readonly<Record<string, V>>>(SHARDS).fill(EMPTY_SHARD) };
}

/** The shard of a key: FNV-1a over its UTF-16 code units. Stored maps depend on it only in memory. */
export function shardOf(key: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < key.length; index++) {
    hash ^= key.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) & (SHARDS - 1);
}

/** The value of `key`, or undefined; a key that is not a string (from a malformed command) has none. */
export function getIn<V>(map: ShardedMap<V>, key: string): V | undefined {
  if (typeof key !== 'string') return undefined;
  const shard = map.shards[shardOf(key)]!;
  return Object.prototype.hasOwnProperty.call(shard, key) ? shard[key] : undefined;
}

/** Every entry, shard by shard (not in key order). */
export function* entriesIn<V>(map: ShardedMap<V>): IterableIterator<[string, V]> {
  for (const shard of map.shards) for (const key of Object.keys(shard)) yield [key, shard[key]!];
}

/** Every value, shard by shard (not in key order: sort when the order matters). */
export function* valuesIn<V>(map: ShardedMap<V>): IterableIterator<V> {
  for (const shard of map.shards) for (const key of Object.keys(shard)) yield shard[key]!;
}

/** The map as one flat record (for snapshots and tests). */
export function recordOf<V>(map: ShardedMap<V>): Record<string, V> {
  const record: Record<string, V> = {};
  for (const [key, value] of entriesIn(map)) setOwn(record, key, value);
  return record;
}

/** A map holding the entries of a flat record. */
export function shardedFrom<V>(record: Readonly<Record<string, V>>): ShardedMap<V> {
  const editor = new ShardedMapEditor<V>(emptyShardedMap<V>());
  for (const key of Object.keys(record)) editor.set(key, record[key]!);
  return editor.result();
}

/**
 * Changes to a map, made on copies of the shards they touch; `result()` is the new map, and the map the
 * editor started from is never changed.
 */
export class ShardedMapEditor<V> {
  private shards: Readonly<Record<string, V>>[] | undefined;
  private readonly copied = new Set<number>();
  private size: number;

  constructor(private readonly base: ShardedMap<V>) {
    this.size = base.size;
  }

  get(key: string): V | undefined {
    const shard = (this.shards ?? this.base.shards)[shardOf(key)]!;
    return Object.prototype.hasOwnProperty.call(shard, key) ? shard[key] : undefined;
  }

  set(key: string, value: V): void {
    const shard = this.writableShard(shardOf(key));
    if (!Object.prototype.hasOwnProperty.call(shard, key)) this.size++;
    setOwn(shard, key, value);
  }

  delete(key: string): void {
    const index = shardOf(key);
    if (!Object.prototype.hasOwnProperty.call((this.shards ?? this.base.shards)[index]!, key)) return;
    delete this.writableShard(index)[key];
    this.size--;
  }

  result(): ShardedMap<V> {
    return this.shards === undefined ? this.base : { size: this.size, shards: this.shards };
  }

  private writableShard(index: number): Record<string, V> {
    this.shards ??= [...this.base.shards];
    if (!this.copied.has(index)) {
      this.shards[index] = { ...this.shards[index]! };
      this.copied.add(index);
    }
    return this.shards[index] as Record<string, V>;
  }
}

function setOwn<V>(record: Record<string, V>, key: string, value: V): void {
  Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true });
}
