import type { NatsConnection } from 'nats';
import type { View } from '@mink/meta';
import { historyCommand, historyView } from './metadata-history.fixture';
import { JetStreamMetaLog, LogPurgedError, type PurgeableMetaLog } from './meta-log';
import { MetaStore } from './meta-store';
import { startSnapshotTestServers, type SnapshotTestServers } from './snapshot-servers.fixture';
import { startMetaStore, type SnapshotSource } from './start-from-snapshot';
import { SNAPSHOT_KEY_PREFIX, ViewSnapshots, openSnapshotBucket } from './view-snapshots';

const CATCH_UP_TIMEOUT_MS = 20_000;
/** Appends in flight at once while a test fills a log. */
const APPENDS_IN_FLIGHT = 200;

describe('startMetaStore from the newest snapshot', () => {
  let servers: SnapshotTestServers;
  let connection: NatsConnection;
  const stores: MetaStore[] = [];
  let logCounter = 0;

  /** A fresh log holding the first `count` history entries, and snapshots under their own pointer and prefix. */
  async function filledLog(count: number, keptMax?: number): Promise<{ log: JetStreamMetaLog; snapshots: ViewSnapshots }> {
    logCounter += 1;
    const streamName = `START_META_${logCounter}`;
    const log = await JetStreamMetaLog.create(connection, { streamName });
    for (let first = 0; first < count; first += APPENDS_IN_FLIGHT) {
      const indexes = Array.from({ length: Math.min(APPENDS_IN_FLIGHT, count - first) }, (_unused, offset) => first + offset);
      // Publishes on one connection reach the server in call order, so entry index lands at sequence index + 1.
      await Promise.all(indexes.map((index) => log.append(historyCommand(index), `${streamName}-${index}`)));
    }
    const snapshots = new ViewSnapshots({
      store: servers.objectStore(),
      kv: await openSnapshotBucket(connection),
      pointerKey: streamName,
      keyPrefix: `${SNAPSHOT_KEY_PREFIX}${streamName}/`,
      keptMax,
    });
    return { log, snapshots };
  }

  async function start(log: PurgeableMetaLog, snapshots: SnapshotSource) {
    const started = await startMetaStore({ log, snapshots, catchUpTimeoutMs: CATCH_UP_TIMEOUT_MS });
    stores.push(started.store);
    return started;
  }

  beforeAll(async () => {
    servers = await startSnapshotTestServers('start-from-snapshot');
    connection = await servers.connect();
  }, 30_000);

  afterEach(async () => {
    await Promise.all(stores.splice(0).map((store) => store.stop()));
  });

  afterAll(async () => {
    await servers?.stop();
  });

  it('replays the whole log when there is no snapshot yet', async () => {
    // Proves the first process of a cluster starts from the empty view and applies every entry.
    const { log, snapshots } = await filledLog(120);
    const started = await start(log, snapshots);
    expect({ snapshotSeq: started.snapshotSeq, replayedEntries: started.replayedEntries, attempts: started.attempts }).toEqual({
      snapshotSeq: 0,
      replayedEntries: 120,
      attempts: 1,
    });
    expect(started.store.view).toEqual(historyView(120));
  });

  it('after a purge, reaches from the newest snapshot the same view as a store that replayed everything', async () => {
    // Proves snapshot + tail == full replay, entry for entry, and the started store keeps following new entries.
    const { log, snapshots } = await filledLog(1_000);
    const veteran = await start(log, snapshots);
    expect(veteran.replayedEntries).toBe(1_000);
    await snapshots.write(historyView(400));
    await snapshots.write(historyView(700));
    await log.purgeBefore(401);
    expect(await log.firstSeq()).toBe(401);

    const late = await start(log, snapshots);
    expect({ snapshotSeq: late.snapshotSeq, replayedEntries: late.replayedEntries, attempts: late.attempts }).toEqual({
      snapshotSeq: 700,
      replayedEntries: 300,
      attempts: 1,
    });
    expect(late.store.view).toEqual(veteran.store.view);
    expect(late.store.view).toEqual(historyView(1_000));

    await veteran.store.propose(historyCommand(1_000));
    await late.store.waitForSeq(1_001, CATCH_UP_TIMEOUT_MS);
    expect(late.store.view).toEqual(veteran.store.view);
    expect(late.store.view).toEqual(historyView(1_001));
  });

  it('loads the newest snapshot again when the one it loaded is already below the first held entry', async () => {
    // Proves the race "snapshot loaded, then a newer one written and the log purged" ends in a correct start.
    const { log, snapshots } = await filledLog(600, 1);
    await snapshots.write(historyView(200));
    let loads = 0;
    const racingSnapshots: SnapshotSource = {
      loadNewest: async () => {
        loads += 1;
        const loaded = await snapshots.loadNewest();
        if (loads === 1) {
          // Between this load and the start, the holder snapshots again and purges below its new snapshot.
          await snapshots.write(historyView(500));
          await log.purgeBefore(501);
        }
        return loaded;
      },
    };
    const started = await start(log, racingSnapshots);
    expect(loads).toBe(2);
    expect({ snapshotSeq: started.snapshotSeq, replayedEntries: started.replayedEntries, attempts: started.attempts }).toEqual({
      snapshotSeq: 500,
      replayedEntries: 100,
      attempts: 2,
    });
    expect(started.store.view).toEqual(historyView(600));
  });

  it('restarts from the newer snapshot when the purge lands between its check and its tail', async () => {
    // Proves the tail's LogPurgedError is caught during start: the store is replaced, never left with a hole.
    const { log, snapshots } = await filledLog(600, 1);
    await snapshots.write(historyView(200));
    let purged = false;
    const racingLog: PurgeableMetaLog = {
      append: (command, messageId) => log.append(command, messageId),
      tail: (fromSeq, onEntry, onError) => log.tail(fromSeq, onEntry, onError),
      lastSeq: () => log.lastSeq(),
      purgeBefore: (seq) => log.purgeBefore(seq),
      firstSeq: async () => {
        const firstSeq = await log.firstSeq();
        if (!purged) {
          purged = true;
          // The check has its answer; the purge it cannot see happens before the tail begins.
          await snapshots.write(historyView(450));
          await log.purgeBefore(451);
        }
        return firstSeq;
      },
    };
    const started = await start(racingLog, snapshots);
    expect(purged).toBe(true);
    expect({ snapshotSeq: started.snapshotSeq, replayedEntries: started.replayedEntries, attempts: started.attempts }).toEqual({
      snapshotSeq: 450,
      replayedEntries: 150,
      attempts: 2,
    });
    expect(started.store.view).toEqual(historyView(600));
  });

  it('gives up with LogPurgedError after a bounded number of attempts when no snapshot covers the purge', async () => {
    // Proves a start never loops forever and never builds a view with a hole (here: the pointer was lost).
    const { log } = await filledLog(50);
    await log.purgeBefore(21);
    let loads = 0;
    const noSnapshots: SnapshotSource = {
      loadNewest: async () => {
        loads += 1;
        return null;
      },
    };
    const failure = startMetaStore({ log, snapshots: noSnapshots, catchUpTimeoutMs: CATCH_UP_TIMEOUT_MS, attemptsMax: 3 });
    await expect(failure).rejects.toBeInstanceOf(LogPurgedError);
    await expect(failure).rejects.toMatchObject({ wantedSeq: 1, firstSeq: 21 });
    expect(loads).toBe(3);
  });

  it('refuses a snapshot that is ahead of the log', async () => {
    // Proves a log replaced under its snapshots (a wiped stream) is reported instead of silently waiting forever.
    const { log, snapshots } = await filledLog(10);
    const ahead: View = historyView(30);
    await snapshots.write(ahead);
    await expect(start(log, snapshots)).rejects.toThrow('the newest snapshot is at entry 30 but the metadata log ends at 10');
  });

  it('keeps a running store going when it falls behind the purged log: it reloads the newest snapshot and tails after it', async () => {
    // Proves item 2 of the metadata-plane issue: a slow process never exits for a purge; it jumps to the
    // newest snapshot, tells its reload listeners (which re-check their fences), and follows new entries.
    const { log, snapshots } = await filledLog(800);
    await snapshots.write(historyView(300));
    await snapshots.write(historyView(600));
    await log.purgeBefore(301);
    let fatal: Error | undefined;
    const behind = await MetaStore.open(log, { initialView: historyView(100), snapshots, onFatal: (error) => (fatal = error) });
    stores.push(behind);
    const reloads: { seq: number; skippedFromSeq: number }[] = [];
    behind.onReloaded((view, skippedFromSeq) => reloads.push({ seq: view.seq, skippedFromSeq }));
    const applied: number[] = [];
    behind.onApplied((_view, seq) => applied.push(seq));
    await behind.start();
    await behind.waitForSeq(800, CATCH_UP_TIMEOUT_MS);
    expect(fatal).toBeUndefined();
    expect(reloads).toEqual([{ seq: 600, skippedFromSeq: 101 }]);
    expect(applied).toEqual(Array.from({ length: 200 }, (_unused, index) => 601 + index));
    expect(behind.view).toEqual(historyView(800));
    await log.append(historyCommand(800), 'after-reload');
    await behind.waitForSeq(801, CATCH_UP_TIMEOUT_MS);
    expect(behind.view).toEqual(historyView(801));
  });

  it('without a snapshot source, a store behind the purged log stops with LogPurgedError', async () => {
    // Proves the reload is what keeps the store alive: the same situation without it is fatal, as before.
    const { log } = await filledLog(50);
    await log.purgeBefore(21);
    let fatal: Error | undefined;
    const behind = await MetaStore.open(log, { initialView: historyView(10), onFatal: (error) => (fatal = error) });
    stores.push(behind);
    await behind.start();
    await expect(behind.waitForSeq(50, CATCH_UP_TIMEOUT_MS)).rejects.toBeInstanceOf(LogPurgedError);
    expect(fatal).toBeInstanceOf(LogPurgedError);
  });
});
