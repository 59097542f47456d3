import { NatsError, type KV, type KvEntry } from 'nats';
import { GatedDeliveries, gated, type ProcessGate } from './process-gate';

/** JetStream's API error code of a write at a revision that is not the key's last (see isWrongRevision). */
const WRONG_LAST_SEQUENCE = 10071;

interface StoredEntry {
  key: string;
  value: Uint8Array;
  revision: number;
  createdMs: number;
  operation: 'PUT' | 'DEL';
}

interface Watcher {
  deliver: (entry: KvEntry) => void;
  stopped: boolean;
}

function entryOf(bucket: string, stored: StoredEntry): KvEntry {
  const value = stored.value.slice();
  return {
    bucket,
    key: stored.key,
    value,
    created: new Date(stored.createdMs),
    revision: stored.revision,
    delta: 0,
    operation: stored.operation,
    length: value.length,
    json: <T>() => JSON.parse(new TextDecoder().decode(value)) as T,
    string: () => new TextDecoder().decode(value),
  } as KvEntry;
}

function wrongRevision(key: string): NatsError {
  const error = new NatsError(`wrong last sequence for ${key}`, '400');
  error.api_error = { code: 400, err_code: WRONG_LAST_SEQUENCE, description: 'wrong last sequence' };
  return error;
}

/**
 * One JetStream KV bucket in memory, with the semantics mink relies on (the lease, heartbeats, the clock
 * probe, the snapshot pointer): revisions numbered across the bucket, entries stamped with the (simulated)
 * server clock, create/update as compare-and-set on the key's last revision, watches that deliver the
 * latest entry of every key and then every change, asynchronously and in revision order. Processes reach
 * it through `as(gate)`.
 */
export class InMemoryKvBucket {
  private readonly latest = new Map<string, StoredEntry>();
  private lastRevision = 0;
  private readonly watchers = new Set<Watcher>();

  constructor(readonly name: string) {}

  private write(key: string, value: Uint8Array, operation: 'PUT' | 'DEL'): number {
    const stored: StoredEntry = { key, value: value.slice(), revision: ++this.lastRevision, createdMs: Date.now(), operation };
    this.latest.set(key, stored);
    for (const watcher of this.watchers) {
      const entry = entryOf(this.name, stored);
      setImmediate(() => {
        if (!watcher.stopped) watcher.deliver(entry);
      });
    }
    return stored.revision;
  }

  put(key: string, value: Uint8Array): number {
    return this.write(key, value, 'PUT');
  }

  create(key: string, value: Uint8Array): number {
    const existing = this.latest.get(key);
    if (existing && existing.operation === 'PUT') throw wrongRevision(key);
    return this.write(key, value, 'PUT');
  }

  update(key: string, value: Uint8Array, revision: number): number {
    const existing = this.latest.get(key);
    if (!existing || existing.revision !== revision) throw wrongRevision(key);
    return this.write(key, value, 'PUT');
  }

  delete(key: string): void {
    this.write(key, new Uint8Array(0), 'DEL');
  }

  get(key: string): KvEntry | null {
    const stored = this.latest.get(key);
    return stored ? entryOf(this.name, stored) : null;
  }

  /** Opens a watch of every key: the latest entries first (then `initialized`), then every change. */
  watch(deliver: (entry: KvEntry) => void, initialized: () => void): Watcher {
    const watcher: Watcher = { deliver, stopped: false };
    const current = [...this.latest.values()].sort((a, b) => a.revision - b.revision).map((stored) => entryOf(this.name, stored));
    setImmediate(() => {
      if (watcher.stopped) return;
      for (const entry of current) deliver(entry);
      this.watchers.add(watcher);
      initialized();
    });
    return watcher;
  }

  unwatch(watcher: Watcher): void {
    watcher.stopped = true;
    this.watchers.delete(watcher);
  }

  /** The bucket as process `gate` reaches it: the subset of nats.js's `KV` that mink uses. */
  as(gate: ProcessGate): KV {
    const kv = {
      put: (key: string, value: Uint8Array) => gated(gate, async () => this.put(key, value)),
      create: (key: string, value: Uint8Array) => gated(gate, async () => this.create(key, value)),
      update: (key: string, value: Uint8Array, revision: number) => gated(gate, async () => this.update(key, value, revision)),
      delete: (key: string) => gated(gate, async () => this.delete(key)),
      get: (key: string) => gated(gate, async () => this.get(key)),
      status: () => gated(gate, async () => ({ streamInfo: { state: { last_seq: this.lastRevision } } })),
      watch: (options: { initializedFn?: () => void } = {}) =>
        gated(gate, async () => {
          // The initial entries, then a marker for initializedFn (called once the consumer has taken them all),
          // then changes: one queue, so the consumer sees them in that order.
          const queue: (KvEntry | 'initialized')[] = [];
          let wake: (() => void) | null = null;
          let done = false;
          const deliveries = new GatedDeliveries<KvEntry | 'initialized'>(gate, (item) => {
            queue.push(item);
            wake?.();
          });
          const watcher = this.watch(
            (entry) => deliveries.push(entry),
            () => deliveries.push('initialized'),
          );
          const iterator: AsyncIterableIterator<KvEntry> & { stop(): void } = {
            stop: () => {
              done = true;
              this.unwatch(watcher);
              wake?.();
            },
            next: async () => {
              for (;;) {
                while (queue.length === 0 && !done) await new Promise<void>((resolve) => (wake = resolve));
                wake = null;
                const item = queue.shift();
                if (item === undefined || done) return { done: true, value: undefined };
                if (item === 'initialized') {
                  options.initializedFn?.();
                  continue;
                }
                return { done: false, value: item };
              }
            },
            [Symbol.asyncIterator]() {
              return iterator;
            },
          };
          return iterator;
        }),
    };
    return kv as unknown as KV;
  }
}
