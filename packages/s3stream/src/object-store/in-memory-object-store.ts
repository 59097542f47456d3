import { readFile, writeFile } from 'node:fs/promises';
import { NotFoundError } from '@mink/protocol';
import { assertValidByteRange, clipByteRange } from './byte-range';
import { sizeOfFileToPut } from './file-bodies';
import { assertValidKey, compareKeys } from './keys';
import { lengthOfBody, partsOfBody, type ByteRange, type ListedObject, type ObjectBody, type ObjectStore } from './object-store';

/**
 * The operations faults are injected into and calls are counted for, named after the request each one is on the
 * wire: `put` covers `put` and `putFile` (both PutObject), `get` covers `get` and `getToFile` (both GetObject).
 */
export type ObjectStoreOperation = 'put' | 'get' | 'delete' | 'list';

/** When an injected failure strikes relative to the operation's effect. */
export interface InjectedFailureOptions {
  /**
   * When true the operation takes effect and only then fails, like an upload whose acknowledgement was lost:
   * the object is stored but the caller sees an error. Default false: the call fails and changes nothing.
   */
  afterApplying?: boolean;
}

interface InjectedFailure {
  error: Error;
  afterApplying: boolean;
}

/**
 * `ObjectStore` in memory for simulation and unit tests. It keeps the contract of the port exactly as the S3
 * adapter does (copies in and out, S3's range rules, NotFoundError, sorted listings), so a test that passes
 * here makes no assumption the real store breaks. Being in memory, it reads a `putFile` file whole and holds
 * every object, so unlike the S3 adapter its memory does grow with the objects.
 *
 * Faults are injected per operation with `failNext`; injected failures are consumed in the order they were
 * added. `calls` counts every call per operation, failed ones included, so tests can assert how often a
 * component touched the store (for example, that a cached read did not).
 */
export interface InMemoryObjectStoreOptions {
  /** The store's clock, which `list` reports each object's last write by (`lastModifiedMs`); `Date.now` when absent. */
  nowMs?: () => number;
}

export class InMemoryObjectStore implements ObjectStore {
  private readonly objects = new Map<string, Uint8Array>();
  /** When each object was last written, by `nowMs`. */
  private readonly modifiedMs = new Map<string, number>();
  private readonly nowMs: () => number;
  private readonly injectedFailures: Record<ObjectStoreOperation, InjectedFailure[]> = { put: [], get: [], delete: [], list: [] };
  private readonly callCounts: Record<ObjectStoreOperation, number> = { put: 0, get: 0, delete: 0, list: 0 };

  constructor(options: InMemoryObjectStoreOptions = {}) {
    this.nowMs = options.nowMs ?? Date.now;
  }

  /** Calls so far per operation, failed ones included; a copy. */
  get calls(): Record<ObjectStoreOperation, number> {
    return { ...this.callCounts };
  }

  /** Makes the next call of `operation` fail with `error` (queued after failures injected earlier). */
  failNext(operation: ObjectStoreOperation, error: Error, options: InjectedFailureOptions = {}): void {
    this.injectedFailures[operation].push({ error, afterApplying: options.afterApplying ?? false });
  }

  /** Every stored key in listing order; for assertions, not counted as a call. */
  keys(): string[] {
    return [...this.objects.keys()].sort(compareKeys);
  }

  async put(key: string, body: ObjectBody): Promise<void> {
    this.perform('put', () => {
      assertValidKey(key);
      const stored = new Uint8Array(lengthOfBody(body));
      let position = 0;
      for (const part of partsOfBody(body)) {
        stored.set(part, position);
        position += part.byteLength;
      }
      this.objects.set(key, stored);
      this.modifiedMs.set(key, this.nowMs());
    });
  }

  async putFile(key: string, path: string): Promise<void> {
    await this.performAsync('put', async () => {
      assertValidKey(key);
      await sizeOfFileToPut(path);
      const content = await readFile(path);
      this.objects.set(key, new Uint8Array(content.buffer, content.byteOffset, content.byteLength));
      this.modifiedMs.set(key, this.nowMs());
    });
  }

  async getToFile(key: string, path: string): Promise<number> {
    return this.performAsync('get', async () => {
      assertValidKey(key);
      const stored = this.objects.get(key);
      if (stored === undefined) throw new NotFoundError(`GetObject: '${key}' does not exist`);
      await writeFile(path, stored);
      return stored.byteLength;
    });
  }

  async get(key: string, range?: ByteRange): Promise<Uint8Array> {
    return this.perform('get', () => {
      assertValidKey(key);
      // The range is checked before the key is looked up, as the S3 adapter checks it before sending.
      if (range !== undefined) assertValidByteRange(range);
      const stored = this.objects.get(key);
      if (stored === undefined) throw new NotFoundError(`GetObject: '${key}' does not exist`);
      if (range === undefined) return Uint8Array.from(stored);
      const clipped = clipByteRange(range, stored.byteLength);
      return stored.slice(clipped.start, clipped.endExclusive);
    });
  }

  async delete(keys: string[]): Promise<void> {
    this.perform('delete', () => {
      keys.forEach(assertValidKey);
      for (const key of keys) {
        this.objects.delete(key);
        this.modifiedMs.delete(key);
      }
    });
  }

  async list(prefix: string): Promise<ListedObject[]> {
    return this.perform('list', () =>
      this.keys()
        .filter((key) => key.startsWith(prefix))
        .map((key) => ({ key, size: this.objects.get(key)!.byteLength, lastModifiedMs: this.modifiedMs.get(key)! })),
    );
  }

  private perform<T>(operation: ObjectStoreOperation, apply: () => T): T {
    this.callCounts[operation]++;
    const failure = this.injectedFailures[operation].shift();
    if (failure === undefined) return apply();
    if (failure.afterApplying) apply();
    throw failure.error;
  }

  /** `perform` for operations that touch local files; the call is counted and its failure taken when it starts. */
  private async performAsync<T>(operation: ObjectStoreOperation, apply: () => Promise<T>): Promise<T> {
    this.callCounts[operation]++;
    const failure = this.injectedFailures[operation].shift();
    if (failure === undefined) return apply();
    if (failure.afterApplying) await apply();
    throw failure.error;
  }
}
