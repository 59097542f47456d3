import type { ByteRange, ListedObject, ObjectBody, ObjectStore } from './object-store';

/**
 * An ObjectStore that passes every call to `inner`. A wrapper that intercepts one operation (to hold an
 * upload, count deletes, inject a race) extends it, or builds one with `overriding`, and so stays complete
 * when the port gains an operation.
 */
export class DelegatingObjectStore<Inner extends ObjectStore = ObjectStore> implements ObjectStore {
  constructor(readonly inner: Inner) {}

  /** A store that runs `overrides` for the operations they name and passes the others to `inner`. */
  static overriding(inner: ObjectStore, overrides: Partial<ObjectStore>): ObjectStore {
    return Object.assign(new DelegatingObjectStore(inner), overrides);
  }

  put(key: string, body: ObjectBody): Promise<void> {
    return this.inner.put(key, body);
  }

  putFile(key: string, path: string): Promise<void> {
    return this.inner.putFile(key, path);
  }

  get(key: string, range?: ByteRange): Promise<Uint8Array> {
    return this.inner.get(key, range);
  }

  getToFile(key: string, path: string): Promise<number> {
    return this.inner.getToFile(key, path);
  }

  delete(keys: string[]): Promise<void> {
    return this.inner.delete(keys);
  }

  list(prefix: string): Promise<ListedObject[]> {
    return this.inner.list(prefix);
  }
}
