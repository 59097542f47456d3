import { recordOf, shardedFrom, type GarbageRecord } from '@mink/meta';
import { setTimeout as sleep } from 'node:timers/promises';
import { LIMITS } from '@mink/config';
import { emptyView, type Command, type ForgetObjects, type Outcome, type View } from '@mink/meta';
import { MetaStore } from '@mink/metalog';
import { UnavailableError } from '@mink/protocol';
import { eventually, InMemoryMetaLog } from '@mink/testing';
import { GarbageCollector } from './garbage-collector';
import { DelegatingObjectStore, InMemoryObjectStore } from './object-store';
import type { MaintenanceLogger, MetaAccess } from './ports';

const GRACE_MS = 1_000;
const WAIT_MS = 2_000;

/** A clock the test moves by hand. */
class FakeClock {
  constructor(public nowMsValue: number) {}
  nowMs(): number {
    return this.nowMsValue;
  }
}

class RecordingLogger implements MaintenanceLogger {
  readonly messages: string[] = [];
  warn(_fields: Record<string, unknown>, message: string): void {
    this.messages.push(message);
  }
}

/** A MetaAccess over a real store whose next proposals fail with an unknown outcome, without being proposed. */
class FlakyMeta implements MetaAccess {
  unknownOutcomesLeft = 0;
  constructor(private readonly meta: MetaStore) {}

  get view(): View {
    return this.meta.view;
  }

  async propose(command: Command): Promise<Outcome> {
    if (this.unknownOutcomesLeft > 0) {
      this.unknownOutcomesLeft--;
      throw new UnavailableError('injected: the metadata log did not answer');
    }
    return this.meta.propose(command);
  }
}

function forgets(log: InMemoryMetaLog): string[][] {
  return log
    .entries()
    .map((entry) => entry.command)
    .filter((command): command is ForgetObjects => command.type === 'ForgetObjects')
    .map((command) => command.keys);
}

describe('GarbageCollector', () => {
  const stores: MetaStore[] = [];
  const collectors: GarbageCollector[] = [];
  afterEach(async () => {
    await Promise.all(collectors.splice(0).map((collector) => collector.stop()));
    await Promise.all(stores.splice(0).map((store) => store.stop()));
  });

  /**
   * A metadata store whose view starts with `garbage` (as compaction and drops leave it), and an object
   * store holding those objects plus one object that is still referenced.
   */
  async function setup(garbage: Record<string, GarbageRecord>): Promise<{ log: InMemoryMetaLog; meta: MetaStore; store: InMemoryObjectStore }> {
    const log = new InMemoryMetaLog();
    const meta = await MetaStore.open(log, { initialView: { ...emptyView(), objects: shardedFrom({ 'streams/live': { references: 1 } }), garbage: shardedFrom(garbage) } });
    await meta.start();
    stores.push(meta);
    const store = new InMemoryObjectStore();
    for (const key of [...Object.keys(garbage), 'streams/live']) await store.put(key, new Uint8Array([1, 2, 3]));
    return { log, meta, store };
  }

  function collector(options: ConstructorParameters<typeof GarbageCollector>[0]): GarbageCollector {
    const created = new GarbageCollector(options);
    collectors.push(created);
    return created;
  }

  it('deletes an object only once its grace period is over, then forgets it, and never touches a referenced object', async () => {
    // Proves the grace rule of docs/architecture.md §7: at unreferencedAtMs + graceMs - 1 nothing goes, at + graceMs it is deleted and forgotten, later objects wait their turn.
    const { log, meta, store } = await setup({ 'wal/1/1/a': { unreferencedAtMs: 100 }, 'wal/1/1/b': { unreferencedAtMs: 100 }, 'wal/2/1/c': { unreferencedAtMs: 5_000 } });
    const clock = new FakeClock(100 + GRACE_MS - 1);
    const gc = collector({ store, meta, clock, graceMs: GRACE_MS });

    expect(await gc.collectOnce()).toBe(0);
    expect(store.keys()).toEqual(['streams/live', 'wal/1/1/a', 'wal/1/1/b', 'wal/2/1/c']);
    expect(store.calls.delete).toBe(0);
    expect(forgets(log)).toEqual([]);

    clock.nowMsValue = 100 + GRACE_MS;
    expect(await gc.collectOnce()).toBe(2);
    expect(store.keys()).toEqual(['streams/live', 'wal/2/1/c']);
    expect(forgets(log)).toEqual([['wal/1/1/a', 'wal/1/1/b']]);
    expect(recordOf(meta.view.garbage)).toEqual({ 'wal/2/1/c': { unreferencedAtMs: 5_000 } });

    clock.nowMsValue = 5_000 + GRACE_MS;
    expect(await gc.collectOnce()).toBe(1);
    expect(store.keys()).toEqual(['streams/live']);
    expect(forgets(log)).toEqual([['wal/1/1/a', 'wal/1/1/b'], ['wal/2/1/c']]);
    expect(recordOf(meta.view.garbage)).toEqual({});
    expect(recordOf(meta.view.objects)).toEqual({ 'streams/live': { references: 1 } });
    expect(store.calls.list).toBe(0);
  });

  it('reports the objects and bytes of each forget, an object of unknown size counting 0 bytes', async () => {
    // Proves the figures behind mink_gc_objects_deleted_total and mink_gc_bytes_deleted_total.
    const { meta, store } = await setup({ 'wal/1/1/a': { unreferencedAtMs: 100, bytes: 3_000 }, 'kv/1/_/0/1-5': { unreferencedAtMs: 100, bytes: 40 }, 'wal/0/1/old': { unreferencedAtMs: 100 } });
    const reported: [objects: number, bytes: number][] = [];
    const gc = collector({ store, meta, clock: new FakeClock(100 + GRACE_MS), graceMs: GRACE_MS, onDeleted: (objects, bytes) => reported.push([objects, bytes]) });
    expect(await gc.collectOnce()).toBe(3);
    expect(reported).toEqual([[3, 3_040]]);
  });

  it(`deletes and forgets in batches of LIMITS.forgetObjectsKeysMax (${LIMITS.forgetObjectsKeysMax}) keys, each deleted before it is forgotten`, async () => {
    // Proves the batching bound and the order delete-then-forget for every batch.
    const count = 2 * LIMITS.forgetObjectsKeysMax + 5;
    const keys = Array.from({ length: count }, (_, index) => `wal/1/1/${String(index).padStart(6, '0')}`);
    const { log, meta, store } = await setup(Object.fromEntries(keys.map((key) => [key, { unreferencedAtMs: 0 }])));
    const order: string[] = [];
    const recordingStore = DelegatingObjectStore.overriding(store, {
      delete: async (deleted) => {
        order.push(`delete ${deleted.length} from ${deleted[0]}`);
        await store.delete(deleted);
      },
    });
    const recordingMeta: MetaAccess = {
      get view() {
        return meta.view;
      },
      propose: async (command) => {
        order.push(`forget ${(command as ForgetObjects).keys.length} from ${(command as ForgetObjects).keys[0]}`);
        return meta.propose(command);
      },
    };
    const gc = collector({ store: recordingStore, meta: recordingMeta, clock: new FakeClock(GRACE_MS), graceMs: GRACE_MS });

    expect(await gc.collectOnce()).toBe(count);
    const max = LIMITS.forgetObjectsKeysMax;
    expect(order).toEqual([
      `delete ${max} from ${keys[0]}`,
      `forget ${max} from ${keys[0]}`,
      `delete ${max} from ${keys[max]}`,
      `forget ${max} from ${keys[max]}`,
      `delete 5 from ${keys[2 * max]}`,
      `forget 5 from ${keys[2 * max]}`,
    ]);
    expect(forgets(log).flat()).toEqual(keys);
    expect(store.keys()).toEqual(['streams/live']);
    expect(recordOf(meta.view.garbage)).toEqual({});
  });

  it('forgets nothing when a delete fails, and deletes and forgets in the next round', async () => {
    // Proves an object is never forgotten before it is gone, and that a store failure is logged, not thrown.
    const { log, meta, store } = await setup({ 'wal/1/1/a': { unreferencedAtMs: 0 } });
    const logger = new RecordingLogger();
    const gc = collector({ store, meta, clock: new FakeClock(GRACE_MS), graceMs: GRACE_MS, logger });
    store.failNext('delete', new UnavailableError('injected outage'));

    expect(await gc.collectOnce()).toBe(0);
    expect(logger.messages).toEqual(['garbage collection could not delete objects; they stay in the garbage']);
    expect(store.keys()).toContain('wal/1/1/a');
    expect(forgets(log)).toEqual([]);
    expect(recordOf(meta.view.garbage)).toEqual({ 'wal/1/1/a': { unreferencedAtMs: 0 } });

    expect(await gc.collectOnce()).toBe(1);
    expect(store.keys()).toEqual(['streams/live']);
    expect(recordOf(meta.view.garbage)).toEqual({});
  });

  it('leaves keys whose ForgetObjects had an unknown outcome in the garbage, and deletes and forgets them again next round', async () => {
    // Proves the collector survives losing the forget: the deletion is repeated (the store allows it) and the keys are forgotten then.
    const { log, meta, store } = await setup({ 'wal/1/1/a': { unreferencedAtMs: 0 } });
    const flaky = new FlakyMeta(meta);
    flaky.unknownOutcomesLeft = 1;
    const logger = new RecordingLogger();
    const gc = collector({ store, meta: flaky, clock: new FakeClock(GRACE_MS), graceMs: GRACE_MS, logger });

    expect(await gc.collectOnce()).toBe(0);
    expect(store.keys()).toEqual(['streams/live']);
    expect(recordOf(meta.view.garbage)).toEqual({ 'wal/1/1/a': { unreferencedAtMs: 0 } });
    expect(logger.messages).toEqual(['the outcome of ForgetObjects is unknown']);

    expect(await gc.collectOnce()).toBe(1);
    expect(store.calls.delete).toBe(2);
    expect(forgets(log)).toEqual([['wal/1/1/a']]);
    expect(recordOf(meta.view.garbage)).toEqual({});
  });

  it('collects in the background after start, until stop', async () => {
    // Proves the background schedule: garbage that comes due is collected without a call, and stop ends the schedule.
    const { meta, store } = await setup({ 'wal/1/1/a': { unreferencedAtMs: 0 } });
    const clock = new FakeClock(GRACE_MS - 1);
    const gc = collector({ store, meta, clock, graceMs: GRACE_MS });
    gc.start(2);
    await sleep(20);
    expect(recordOf(meta.view.garbage)).toEqual({ 'wal/1/1/a': { unreferencedAtMs: 0 } });
    clock.nowMsValue = GRACE_MS;
    await eventually('the garbage is collected', () => meta.view.garbage.size === 0, { timeoutMs: WAIT_MS, intervalMs: 1 });
    await gc.stop();
    expect(store.keys()).toEqual(['streams/live']);
  });
});
