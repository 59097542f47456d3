import { UnavailableError, TimeoutError, ConflictError } from '@mink/protocol';
import { ownRecord, type Command, type MetaLog, type Outcome, type TailSubscription } from '@mink/meta';
import { MetaStore } from '@mink/metalog';
import { InMemoryMetaLog } from './in-memory-meta-log';

const WAIT_MS = 2_000;

async function startedStore(log: MetaLog, options: Parameters<typeof MetaStore.open>[1] = {}): Promise<MetaStore> {
  const store = await MetaStore.open(log, options);
  await store.start();
  return store;
}

describe('InMemoryMetaLog', () => {
  const stores: MetaStore[] = [];
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((store) => store.stop()));
  });
  async function store(log: MetaLog, options: Parameters<typeof MetaStore.open>[1] = {}): Promise<MetaStore> {
    const started = await startedStore(log, options);
    stores.push(started);
    return started;
  }

  it('numbers entries from 1, de-duplicates message ids and tails asynchronously in order', async () => {
    // Proves the fake keeps the port's contract: gap-free sequences, idempotent appends, never-synchronous delivery.
    const log = new InMemoryMetaLog();
    expect(await log.lastSeq()).toBe(0);
    expect(await log.append({ type: 'RegisterNode', nodeId: '1' }, 'a')).toEqual({ seq: 1, duplicate: false });
    expect(await log.append({ type: 'RegisterNode', nodeId: '2' }, 'b')).toEqual({ seq: 2, duplicate: false });
    expect(await log.append({ type: 'RegisterNode', nodeId: '9' }, 'a')).toEqual({ seq: 1, duplicate: true });
    expect(await log.lastSeq()).toBe(2);

    const delivered: [number, string][] = [];
    const subscription = log.tail(2, (seq, command) => delivered.push([seq, (command as { nodeId: string }).nodeId]));
    expect(delivered).toEqual([]);
    await log.append({ type: 'RegisterNode', nodeId: '3' }, 'c');
    await new Promise((resolve) => setImmediate(resolve));
    await subscription.stop();
    await log.append({ type: 'RegisterNode', nodeId: '4' }, 'd');
    await new Promise((resolve) => setImmediate(resolve));
    expect(delivered).toEqual([
      [2, '2'],
      [3, '3'],
    ]);
  });

  it('runs MetaStore to the same outcomes as over JetStream: epochs 1 then 2, typed rejections', async () => {
    // Proves MetaStore behaves over the fake as it does over the real log (see meta-store.spec.ts in @mink/meta).
    const log = new InMemoryMetaLog();
    const metaStore = await store(log);
    expect(await metaStore.propose({ type: 'RegisterNode', nodeId: '1' })).toEqual({ ok: true, epoch: 1 });
    expect(await metaStore.propose({ type: 'RegisterNode', nodeId: '1' })).toEqual({ ok: true, epoch: 2 });
    await metaStore.proposeOrThrow({ type: 'RegisterCoordinator', coordinatorId: 'c' });
    const spec = { name: 't', columns: [{ name: 'x', type: 'int64' as const }], buckets: 1 };
    await metaStore.proposeOrThrow({ type: 'CreateTable', coordinatorEpoch: 1, spec, createdAtMs: 0 });
    await expect(metaStore.proposeOrThrow({ type: 'CreateTable', coordinatorEpoch: 1, spec, createdAtMs: 0 })).rejects.toBeInstanceOf(
      ConflictError,
    );
    await expect(metaStore.proposeOrThrow({ type: 'RegisterNode', nodeId: '1', expectedEpoch: 1 })).rejects.toMatchObject({
      code: 'Fenced',
    });
    expect(metaStore.view.seq).toBe(6);
    expect(log.entries()).toHaveLength(6);
  });

  it('converges concurrent proposers on three stores to one view with contiguous epochs', async () => {
    // Proves the ordering guarantees the simulations rely on: each proposal gets a distinct epoch and all copies agree.
    const log = new InMemoryMetaLog();
    const members = await Promise.all([1, 2, 3].map(() => store(log)));
    const outcomes = await Promise.all(
      members.flatMap((member, memberIndex) =>
        Array.from({ length: 30 }, () => member.proposeOrThrow({ type: 'RegisterCoordinator', coordinatorId: `c${memberIndex}` })),
      ),
    );
    expect(outcomes.map((outcome) => outcome.epoch!).sort((a, b) => a - b)).toEqual(Array.from({ length: 90 }, (_unused, index) => index + 1));
    await Promise.all(members.map((member) => member.waitForSeq(90, WAIT_MS)));
    for (const member of members) expect(member.view).toEqual(members[0]!.view);

    const late = await store(log);
    expect(await late.catchUp(WAIT_MS)).toEqual(members[0]!.view);
  });

  it('retries a lost ack with the same message id, so the command lands once and its outcome is still found', async () => {
    // Proves de-duplicated retries: the entry applied before the proposer waited, and the duplicate ack leads to its outcome.
    const log = new InMemoryMetaLog();
    const metaStore = await store(log);
    log.failNextAppends(2, 'lost-ack');
    expect(await metaStore.propose({ type: 'RegisterNode', nodeId: '1' })).toEqual({ ok: true, epoch: 1 });
    expect(log.entries()).toEqual([{ seq: 1, command: { type: 'RegisterNode', nodeId: '1' } }]);

    log.failNextAppends(1, 'lost-request');
    expect(await metaStore.propose({ type: 'RegisterNode', nodeId: '1' })).toEqual({ ok: true, epoch: 2 });
    expect(log.entries()).toHaveLength(2);
  });

  it('lands an entry whose proposal failed later, when its first append lands late and the retries are lost', async () => {
    // Proves the fault the simulation uses for a JetStream leader failover: the proposer is told the
    // outcome is unknown (Unavailable), and the entry still applies afterwards, once.
    const log = new InMemoryMetaLog();
    const metaStore = await store(log, { proposeAttemptsMax: 2 });
    log.failNextAppends(1, 'lands-late', 200);
    log.failNextAppends(1, 'lost-request');
    await expect(metaStore.propose({ type: 'RegisterNode', nodeId: '1' })).rejects.toBeInstanceOf(UnavailableError);
    expect(log.entries()).toEqual([]);
    await metaStore.waitForSeq(1, WAIT_MS);
    expect(log.entries()).toEqual([{ seq: 1, command: { type: 'RegisterNode', nodeId: '1' } }]);
    expect(ownRecord(metaStore.view.nodes, '1')?.epoch).toBe(1);
  });

  it('gives up with Unavailable after proposeAttemptsMax failed appends', async () => {
    // Proves the retry loop is bounded and reports the log's typed error.
    const log = new InMemoryMetaLog();
    const metaStore = await store(log, { proposeAttemptsMax: 3 });
    log.failNextAppends(3, 'lost-request');
    await expect(metaStore.propose({ type: 'RegisterNode', nodeId: '1' })).rejects.toBeInstanceOf(UnavailableError);
    expect(log.entries()).toEqual([]);
    expect(await metaStore.propose({ type: 'RegisterNode', nodeId: '1' })).toEqual({ ok: true, epoch: 1 });
  });

  it('reports an unknown outcome as Timeout when it was evicted before the proposer looked', async () => {
    // Proves the recent-outcomes map is bounded and a proposer never gets another entry's outcome.
    const log = new InMemoryMetaLog();
    // The slow proposer's retry reaches the log only once the gate opens: its backoff (25-50 ms) alone raced
    // the fast proposals below, and on a loaded machine the retry looked before the evictions (a CI run).
    let openGate = (): void => undefined;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    let slowAppends = 0;
    const gatedLog: MetaLog = {
      append: async (command, messageId) => {
        slowAppends += 1;
        if (slowAppends > 1) await gate;
        return log.append(command, messageId);
      },
      tail: (fromSeq, onEntry, onError) => log.tail(fromSeq, onEntry, onError),
      lastSeq: () => log.lastSeq(),
    };
    const slow = await store(gatedLog, { recentOutcomesMax: 2 });
    const fast = await store(log);
    log.failNextAppends(1, 'lost-ack');
    // The slow proposer's entry lands as seq 1; while its retry waits, three more entries apply in its view.
    const slowProposal = slow.propose({ type: 'RegisterNode', nodeId: 'slow' });
    for (let index = 0; index < 3; index++) await fast.propose({ type: 'RegisterNode', nodeId: 'fast' });
    await slow.waitForSeq(4, WAIT_MS);
    openGate();
    await expect(slowProposal).rejects.toBeInstanceOf(TimeoutError);
    expect(slowAppends).toBe(2);
    expect(log.entries().filter((entry) => (entry.command as { nodeId: string }).nodeId === 'slow')).toHaveLength(1);
  });

  it('times out a proposal whose entry does not apply in time', async () => {
    // Proves proposeTimeoutMs bounds the wait when the store is not following the log.
    const log = new InMemoryMetaLog();
    const notStarted = await MetaStore.open(log, { proposeTimeoutMs: 50 });
    await expect(notStarted.propose({ type: 'RegisterNode', nodeId: '1' })).rejects.toBeInstanceOf(TimeoutError);
    await notStarted.stop();
  });

  it('treats a gap in sequences as a broken invariant: it stops and rejects waiting proposers', async () => {
    // Proves a log that skips an entry cannot silently diverge the view.
    const gappy: MetaLog = {
      append: async () => ({ seq: 3, duplicate: false }),
      lastSeq: async () => 3,
      tail: (_fromSeq, onEntry): TailSubscription => {
        setImmediate(() => {
          onEntry(1, { type: 'RegisterNode', nodeId: '1' });
          onEntry(3, { type: 'RegisterNode', nodeId: '1' });
        });
        return { stop: async () => undefined };
      },
    };
    const fatal: Error[] = [];
    const metaStore = await startedStore(gappy, { onFatal: (error) => fatal.push(error) });
    const waiting = metaStore.waitForSeq(3, WAIT_MS);
    await expect(waiting).rejects.toThrow(/invariant broken/);
    expect(fatal).toHaveLength(1);
    expect(metaStore.view.seq).toBe(1);
    await expect(metaStore.propose({ type: 'RegisterNode', nodeId: '2' })).rejects.toThrow(/invariant broken/);
    await metaStore.stop();
  });

  it('calls onApplied listeners in order, survives a failing listener and honours unsubscribe', async () => {
    // Proves listeners see every entry once, in sequence, with the outcome the proposer got.
    const log = new InMemoryMetaLog();
    const listenerErrors: Error[] = [];
    const metaStore = await store(log, { onListenerError: (error) => listenerErrors.push(error) });
    const seen: [number, Command['type'], Outcome][] = [];
    const unsubscribe = metaStore.onApplied((_view, seq, command, outcome) => seen.push([seq, command.type, outcome]));
    metaStore.onApplied(() => {
      throw new Error('listener bug');
    });
    const first = await metaStore.propose({ type: 'RegisterNode', nodeId: '1' });
    unsubscribe();
    await metaStore.propose({ type: 'RegisterNode', nodeId: '1' });
    expect(seen).toEqual([[1, 'RegisterNode', first]]);
    expect(listenerErrors.map((error) => error.message)).toEqual(['listener bug', 'listener bug']);
    expect(metaStore.view.nodes['1']!.epoch).toBe(2);
  });
});
