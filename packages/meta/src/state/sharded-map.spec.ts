import { deepFreeze } from './deep-freeze';
import { SHARDS, ShardedMapEditor, emptyShardedMap, entriesIn, getIn, recordOf, shardOf, shardSummariesIn, shardedFrom, valuesIn } from './sharded-map';

describe('ShardedMap', () => {
  it('holds what a flat record holds, prototype-like keys included, and gives it back flat', () => {
    // Proves shardedFrom/recordOf/getIn agree with a plain record for ordinary and hostile keys.
    const record = { 'wal/1/1/1': 1, 'streams/a': 2, __proto__: 3, constructor: 4, toString: 5 } as unknown as Record<string, number>;
    Object.defineProperty(record, '__proto__', { value: 3, enumerable: true, writable: true, configurable: true });
    const map = shardedFrom(record);
    expect(map.size).toBe(5);
    for (const key of Object.keys(record)) expect(getIn(map, key)).toBe(record[key]);
    expect(getIn(map, 'hasOwnProperty')).toBeUndefined();
    expect(getIn(map, undefined as unknown as string)).toBeUndefined();
    expect(recordOf(map)).toEqual(record);
    expect(Object.getOwnPropertyDescriptor(recordOf(map), '__proto__')?.value).toBe(3);
    expect([...entriesIn(map)].length).toBe(5);
  });

  it('copies only the shards a change touches, and never changes the map it started from', () => {
    // Proves the structural sharing that makes a CommitWal cheap: one shard copied, the others shared.
    const before = deepFreeze(shardedFrom(Object.fromEntries(Array.from({ length: 2_000 }, (_, index) => [`key/${index}`, index]))));
    const editor = new ShardedMapEditor(before);
    editor.set('key/7', 70);
    editor.set('new', 1);
    editor.delete('key/8');
    editor.delete('absent');
    const after = editor.result();
    expect([after.size, before.size]).toEqual([2_000, 2_000]);
    expect([getIn(after, 'key/7'), getIn(after, 'new'), getIn(after, 'key/8'), getIn(before, 'key/7'), getIn(before, 'key/8')]).toEqual([70, 1, undefined, 7, 8]);
    const touched = new Set([shardOf('key/7'), shardOf('new'), shardOf('key/8')]);
    after.shards.forEach((shard, index) => (touched.has(index) ? expect(shard).not.toBe(before.shards[index]) : expect(shard).toBe(before.shards[index])));
  });

  it('keeps the number of shards it was made with, and an editor edits in those shards', () => {
    // Proves a small map (a stream's writers) can have fewer shards: lookups, edits and copies use its own count.
    const before = deepFreeze(shardedFrom(Object.fromEntries(Array.from({ length: 300 }, (_, index) => [`writer/${index}`, index])), 32));
    expect(before.shards).toHaveLength(32);
    expect(emptyShardedMap(32).shards).toHaveLength(32);
    for (let index = 0; index < 300; index++) expect(getIn(before, `writer/${index}`)).toBe(index);
    for (const [index, shard] of before.shards.entries()) for (const key of Object.keys(shard)) expect(shardOf(key, 32)).toBe(index);
    const editor = new ShardedMapEditor(before);
    editor.set('writer/7', 70);
    editor.set('writer/new', 1);
    expect(editor.size).toBe(301);
    editor.delete('writer/8');
    expect(editor.size).toBe(300);
    const after = editor.result();
    expect(after.shards).toHaveLength(32);
    expect([after.size, getIn(after, 'writer/7'), getIn(after, 'writer/new'), getIn(after, 'writer/8'), getIn(before, 'writer/8')]).toEqual([300, 70, 1, undefined, 8]);
    const touched = new Set(['writer/7', 'writer/new', 'writer/8'].map((key) => shardOf(key, 32)));
    after.shards.forEach((shard, index) => (touched.has(index) ? expect(shard).not.toBe(before.shards[index]) : expect(shard).toBe(before.shards[index])));
    expect(recordOf(after)).toEqual({ ...recordOf(before), 'writer/7': 70, 'writer/new': 1, 'writer/8': undefined });
  });

  it.each([0, 3, 48, -4, 1.5])('refuses %p shards: a count must be a power of two', (shards) => {
    expect(() => emptyShardedMap(shards)).toThrow(`a sharded map needs a power of two of shards, got ${shards}`);
  });

  it.each<[string, [string, number][]]>([
    ['an empty map', []],
    ['one key', [['1//0', 7]]],
    ['prototype-like keys', [['__proto__', 1], ['constructor', 2], ['toString', 3]]],
    ['keys spread over every shard', Array.from({ length: 2_000 }, (_, index): [string, number] => [`key/${index}`, index])],
  ])('gives every value of %s exactly once, as entriesIn gives the entries', (_case, entries) => {
    // Proves valuesIn visits what the map holds, no more and no less (callers sort when the order matters).
    const record: Record<string, number> = {};
    for (const [key, value] of entries) Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true });
    const map = shardedFrom(record);
    const values = [...valuesIn(map)];
    expect(values).toEqual([...entriesIn(map)].map(([, value]) => value));
    expect([...values].sort((a, b) => a - b)).toEqual(entries.map(([, value]) => value).sort((a, b) => a - b));
  });

  it('summarizes each shard once while it lives, and again only the shards a change copied', () => {
    // Proves shardSummariesIn answers what a fresh pass would, and summarizes only what changed since the last pass.
    const summarized: Readonly<Record<string, number>>[] = [];
    const sum = (shard: Readonly<Record<string, number>>): number => {
      summarized.push(shard);
      return Object.values(shard).reduce((total, value) => total + value, 0);
    };
    const cache = new WeakMap<object, number>();
    const total = (map: ReturnType<typeof shardedFrom<number>>): number => [...shardSummariesIn(map, cache, sum)].reduce((all, each) => all + each, 0);
    const before = shardedFrom(Object.fromEntries(Array.from({ length: 1_000 }, (_, index) => [`key/${index}`, index])), 64);
    expect(total(before)).toBe(499_500);
    expect(summarized).toHaveLength(64);
    expect(total(before)).toBe(499_500);
    expect(summarized).toHaveLength(64);
    const editor = new ShardedMapEditor(before);
    editor.set('key/7', 1_007);
    editor.delete('key/9');
    const after = editor.result();
    expect(total(after)).toBe(499_500 + 1_000 - 9);
    expect(summarized.slice(64)).toEqual([...new Set([shardOf('key/7', 64), shardOf('key/9', 64)])].sort((a, b) => a - b).map((index) => after.shards[index]));
    expect(total(before)).toBe(499_500);
    expect(summarized).toHaveLength(64 + new Set([shardOf('key/7', 64), shardOf('key/9', 64)]).size);
  });

  it('never changes a map result() returned, when the editor writes on after it', () => {
    // Proves an intermediate result (apply.ts reads one and edits on) stays as returned, so shardSummariesIn may cache its shards.
    const editor = new ShardedMapEditor(shardedFrom({ a: 1, b: 2 }, 4));
    editor.set('a', 10);
    const first = editor.result();
    const firstShards = [...first.shards];
    const firstRecord = recordOf(first);
    expect(editor.result()).toBe(first);
    editor.set('a', 100);
    editor.set('b', 200);
    editor.set('c', 3);
    editor.delete('a');
    const second = editor.result();
    expect([first.size, recordOf(first), first.shards]).toEqual([2, firstRecord, firstShards]);
    expect(first.shards.every((shard, index) => shard === firstShards[index])).toBe(true);
    expect([second.size, recordOf(second)]).toEqual([2, { b: 200, c: 3 }]);
    expect(firstRecord).toEqual({ a: 10, b: 2 });
    editor.delete('c');
    expect([recordOf(second), recordOf(editor.result())]).toEqual([{ b: 200, c: 3 }, { b: 200 }]);
  });

  it('returns the same map when nothing changed', () => {
    // Proves an entry that changes nothing shares the registry with its input (apply's identity checks rely on it).
    const map = shardedFrom({ a: 1 });
    const editor = new ShardedMapEditor(map);
    editor.delete('b');
    expect(editor.result()).toBe(map);
    expect(emptyShardedMap().shards).toHaveLength(SHARDS);
  });
});
