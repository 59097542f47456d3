import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type NatsConnection } from 'nats';
import { startNatsServer, type NatsServerHandle } from '@mink/devcluster';
import { MinkError, NotFoundError } from '@mink/protocol';
import type { Command, Outcome } from '@mink/meta';
import { JetStreamMetaLog } from './meta-log';
import { MetaStore } from './meta-store';

const CATCH_UP_TIMEOUT_MS = 10_000;

describe('MetaStore over JetStream', () => {
  let dataDir: string;
  let server: NatsServerHandle;
  const connections: NatsConnection[] = [];
  const stores: MetaStore[] = [];
  let streamCounter = 0;

  /** A fresh stream per test, so tests do not see each other's entries. */
  function newStreamName(): string {
    streamCounter += 1;
    return `STORE_META_${streamCounter}`;
  }

  /** A started store on its own connection, as a separate process would have. */
  async function openStore(streamName: string, tailPaceMs = 0): Promise<{ store: MetaStore; log: JetStreamMetaLog }> {
    const connection = await connect({ servers: server.url });
    connections.push(connection);
    const log = await JetStreamMetaLog.create(connection, { streamName, tailPaceMs });
    const store = await MetaStore.open(log);
    stores.push(store);
    await store.start();
    return { store, log };
  }

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'mink-meta-store-'));
    server = await startNatsServer({ dataDir });
  });

  afterEach(async () => {
    await Promise.all(stores.splice(0).map((store) => store.stop()));
    await Promise.all(connections.splice(0).map((connection) => connection.close()));
  });

  afterAll(async () => {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('returns the outcome computed by the local view for each proposal', async () => {
    // Proves propose → publish → wait for the local apply → outcome: a node registered twice gets epochs 1 then 2.
    const { store } = await openStore(newStreamName());
    expect(await store.propose({ type: 'RegisterNode', nodeId: '1', address: 'mink.node.1' })).toEqual({ ok: true, epoch: 1 });
    expect(await store.propose({ type: 'RegisterNode', nodeId: '1' })).toEqual({ ok: true, epoch: 2 });
    expect(store.view.seq).toBe(2);
    expect(store.view.nodes['1']).toMatchObject({ id: '1', epoch: 2, address: 'mink.node.1' });
  });

  it('turns rejections into typed errors in proposeOrThrow and keeps accepted outcomes', async () => {
    // Proves a stale takeover is Fenced and an unknown table is NotFound, each as its wire code.
    const { store } = await openStore(newStreamName());
    await expect(store.proposeOrThrow({ type: 'RegisterCoordinator', coordinatorId: 'c1' })).resolves.toEqual({ ok: true, epoch: 1 });
    await store.proposeOrThrow({ type: 'RegisterNode', nodeId: '1' });
    const staleTakeover = store.proposeOrThrow({ type: 'RegisterNode', nodeId: '1', expectedEpoch: 7 });
    await expect(staleTakeover).rejects.toBeInstanceOf(MinkError);
    await expect(staleTakeover).rejects.toMatchObject({ code: 'Fenced' });
    const dropMissing = store.proposeOrThrow({ type: 'DropTable', coordinatorEpoch: 1, name: 'missing' });
    await expect(dropMissing).rejects.toBeInstanceOf(NotFoundError);
    expect(store.view.seq).toBe(4);
  });

  it('gives two stores on two connections identical views, entry by entry', async () => {
    // Proves all copies agree at each sequence: both stores see the same commands and compute the same outcomes.
    const streamName = newStreamName();
    const first = await openStore(streamName);
    const second = await openStore(streamName);
    const seenBySecond: { seq: number; outcome: Outcome }[] = [];
    second.store.onApplied((_view, seq, _command, outcome) => seenBySecond.push({ seq, outcome }));

    const outcomes: Outcome[] = [];
    outcomes.push(await first.store.propose({ type: 'RegisterCoordinator', coordinatorId: 'c1' }));
    outcomes.push(await second.store.propose({ type: 'RegisterNode', nodeId: '1' }));
    outcomes.push(await first.store.propose({ type: 'RegisterNode', nodeId: '2' }));
    await second.store.waitForSeq(3, CATCH_UP_TIMEOUT_MS);
    await first.store.waitForSeq(3, CATCH_UP_TIMEOUT_MS);

    expect(first.store.view).toEqual(second.store.view);
    expect(seenBySecond).toEqual(outcomes.map((outcome, index) => ({ seq: index + 1, outcome })));
  });

  it('gives a store whose tail is paced its own entries and the entries it waits for without waiting out the pace', async () => {
    // Proves a gateway or coordinator (paced tail) proposes, and waits for another process's entry (a table the
    // coordinator created), as promptly as before: the pace is a minute, and the collector of waits allows 10 s.
    const streamName = newStreamName();
    const eager = await openStore(streamName);
    const paced = await openStore(streamName, 60_000);
    expect(await paced.store.propose({ type: 'RegisterCoordinator', coordinatorId: 'c1' })).toEqual({ ok: true, epoch: 1 });
    await eager.store.propose({ type: 'RegisterNode', nodeId: '1' });
    await eager.store.propose({ type: 'RegisterNode', nodeId: '2' });
    await paced.store.waitForSeq(3, 10_000);
    expect(paced.store.view).toEqual(eager.store.view);
    expect(await paced.store.propose({ type: 'RegisterNode', nodeId: '1' })).toEqual({ ok: true, epoch: 2 });
  }, 30_000);

  it('orders concurrent proposals from three stores into contiguous epochs, identical on every store', async () => {
    // Proves concurrent proposers each get a distinct outcome and every copy converges on one view.
    const streamName = newStreamName();
    const members = await Promise.all([1, 2, 3].map(() => openStore(streamName)));
    const proposalsPerStore = 30;
    const results = await Promise.all(
      members.map(({ store }, storeIndex) =>
        Promise.all(
          Array.from({ length: proposalsPerStore }, (_unused, index) => {
            const command: Command =
              index % 2 === 0
                ? { type: 'RegisterCoordinator', coordinatorId: `c${storeIndex}` }
                : { type: 'RegisterNode', nodeId: 'shared' };
            return store.proposeOrThrow(command).then((outcome) => ({ type: command.type, epoch: outcome.epoch! }));
          }),
        ),
      ),
    );
    const all = results.flat();
    const epochsOf = (type: Command['type']) =>
      all
        .filter((result) => result.type === type)
        .map((result) => result.epoch)
        .sort((a, b) => a - b);
    const coordinatorEpochs = epochsOf('RegisterCoordinator');
    const nodeEpochs = epochsOf('RegisterNode');
    expect(coordinatorEpochs).toEqual(Array.from({ length: coordinatorEpochs.length }, (_unused, index) => index + 1));
    expect(nodeEpochs).toEqual(Array.from({ length: nodeEpochs.length }, (_unused, index) => index + 1));
    expect(all).toHaveLength(3 * proposalsPerStore);

    const lastSeq = 3 * proposalsPerStore;
    await Promise.all(members.map(({ store }) => store.waitForSeq(lastSeq, CATCH_UP_TIMEOUT_MS)));
    for (const { store } of members) {
      expect(store.view.seq).toBe(lastSeq);
      expect(store.view).toEqual(members[0]!.store.view);
    }
    expect(members[0]!.store.view.nodes.shared!.epoch).toBe(nodeEpochs.length);
    expect(members[0]!.store.view.coordinator.epoch).toBe(coordinatorEpochs.length);
  }, 30_000);

  it('lets a store that starts late catch up to the same view', async () => {
    // Proves a process started after the fact replays the log to exactly the view the others hold.
    const streamName = newStreamName();
    const early = await openStore(streamName);
    for (let index = 1; index <= 10; index++) await early.store.propose({ type: 'RegisterNode', nodeId: String(index % 3) });

    const connection = await connect({ servers: server.url });
    connections.push(connection);
    const log = await JetStreamMetaLog.create(connection, { streamName });
    const late = await MetaStore.open(log);
    stores.push(late);
    expect(late.view.seq).toBe(0);
    await late.start();
    const caughtUp = await late.catchUp(CATCH_UP_TIMEOUT_MS);
    expect(caughtUp.seq).toBe(10);
    expect(late.view).toEqual(early.store.view);

    // And it keeps following what is proposed afterwards.
    expect(await late.propose({ type: 'RegisterNode', nodeId: '1' })).toEqual({ ok: true, epoch: 5 });
    await early.store.waitForSeq(11, CATCH_UP_TIMEOUT_MS);
    expect(late.view).toEqual(early.store.view);
  });
});
