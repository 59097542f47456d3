import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidArgumentError, UnavailableError } from '@mink/protocol';
import { InMemoryObjectStore } from './in-memory-object-store';
import { describeObjectStoreContract } from './object-store.contract';

describeObjectStoreContract('InMemoryObjectStore', () => new InMemoryObjectStore());

describe('InMemoryObjectStore clock', () => {
  it('lists each object with the time of its last write by the clock it was given', async () => {
    // Proves tests can drive object ages (orphan removal after a grace period) through the injected clock.
    let nowMs = 5_000;
    const store = new InMemoryObjectStore({ nowMs: () => nowMs });
    await store.put('a', Uint8Array.from([1]));
    nowMs = 9_000;
    await store.put('b', Uint8Array.from([2]));
    expect(await store.list('')).toEqual([
      { key: 'a', size: 1, lastModifiedMs: 5_000 },
      { key: 'b', size: 1, lastModifiedMs: 9_000 },
    ]);
    nowMs = 12_000;
    await store.put('a', Uint8Array.from([3, 3]));
    await store.delete(['b']);
    expect(await store.list('')).toEqual([{ key: 'a', size: 2, lastModifiedMs: 12_000 }]);
  });
});

describe('InMemoryObjectStore ranges', () => {
  it('refuses any range of an empty object, as S3 answers 416', async () => {
    // Proves the rule "a range starting at or after the end is refused" holds at size zero (s3rver hangs on this request, so the shared contract cannot check it).
    const store = new InMemoryObjectStore();
    await store.put('empty', new Uint8Array(0));
    await expect(store.get('empty', { start: 0, endExclusive: 1 })).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(await store.get('empty')).toEqual(new Uint8Array(0));
  });
});

describe('InMemoryObjectStore fault injection', () => {
  it('fails the next call of the named operation once, without applying it, and counts every call', async () => {
    // Proves an injected failure hits exactly one call of one operation, leaves the store unchanged, and shows in the counters.
    const store = new InMemoryObjectStore();
    store.failNext('put', new UnavailableError('injected put failure'));

    await expect(store.put('a', Uint8Array.from([1]))).rejects.toThrow('injected put failure');
    expect(store.keys()).toEqual([]);
    await store.put('a', Uint8Array.from([2]));
    expect(await store.get('a')).toEqual(Uint8Array.from([2]));
    expect(store.calls).toEqual({ put: 2, get: 1, delete: 0, list: 0 });
  });

  it('applies the operation before failing when asked to, like an upload whose acknowledgement was lost', async () => {
    // Proves simulations can model the ambiguous outcome: the caller sees an error, yet the object exists.
    const store = new InMemoryObjectStore();
    store.failNext('put', new Error('acknowledgement lost'), { afterApplying: true });
    await expect(store.put('wal/1/1/1', Uint8Array.from([5]))).rejects.toThrow('acknowledgement lost');
    expect(await store.get('wal/1/1/1')).toEqual(Uint8Array.from([5]));
  });

  it('fails putFile and getToFile with the failures injected into put and get, the wire operations they share', async () => {
    // Proves a simulation that makes uploads or downloads fail reaches the file variants too, before or after applying, and counts them.
    const directory = await mkdtemp(join(tmpdir(), 'mink-in-memory-files-'));
    try {
      const source = join(directory, 'source');
      const target = join(directory, 'target');
      await writeFile(source, Uint8Array.from([4, 2]));
      const store = new InMemoryObjectStore();
      store.failNext('put', new UnavailableError('injected put failure'));
      await expect(store.putFile('kv/1', source)).rejects.toThrow('injected put failure');
      expect(store.keys()).toEqual([]);
      store.failNext('put', new Error('acknowledgement lost'), { afterApplying: true });
      await expect(store.putFile('kv/1', source)).rejects.toThrow('acknowledgement lost');
      expect(store.keys()).toEqual(['kv/1']);

      store.failNext('get', new UnavailableError('injected get failure'));
      await expect(store.getToFile('kv/1', target)).rejects.toThrow('injected get failure');
      expect(await store.getToFile('kv/1', target)).toBe(2);
      expect(new Uint8Array(await readFile(target))).toEqual(Uint8Array.from([4, 2]));
      expect(store.calls).toEqual({ put: 2, get: 2, delete: 0, list: 0 });
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });

  it('consumes injected failures per operation in the order they were added', async () => {
    // Proves failures queue independently per operation: a get failure does not fire on delete, and two gets fail in turn.
    const store = new InMemoryObjectStore();
    await store.put('k', Uint8Array.from([1]));
    store.failNext('get', new Error('first'));
    store.failNext('get', new Error('second'));
    store.failNext('delete', new Error('delete failed'));

    await expect(store.get('k')).rejects.toThrow('first');
    await expect(store.get('k')).rejects.toThrow('second');
    expect(await store.get('k')).toEqual(Uint8Array.from([1]));
    await expect(store.delete(['k'])).rejects.toThrow('delete failed');
    expect(store.keys()).toEqual(['k']);
    await store.delete(['k']);
    expect(store.keys()).toEqual([]);
    expect(store.calls).toEqual({ put: 1, get: 3, delete: 2, list: 0 });
  });
});
