import type { NatsConnection } from 'nats';
import { LIMITS } from '@mink/config';
import { UnavailableError } from '@mink/protocol';
import { eventually } from '@mink/testing';
import type { ObjectStore } from '@mink/s3stream';
import { historyCommand, historyView } from './metadata-history.fixture';
import { JetStreamMetaLog } from './meta-log';
import { MetaStore } from './meta-store';
import { SnapshotScheduler, type SnapshotRound } from './snapshot-scheduler';
import { startSnapshotTestServers, type SnapshotTestServers } from './snapshot-servers.fixture';
import { startMetaStore } from './start-from-snapshot';
import { SNAPSHOT_KEY_PREFIX, ViewSnapshots, openSnapshotBucket } from './view-snapshots';

const CATCH_UP_TIMEOUT_MS = 30_000;
const APPENDS_IN_FLIGHT = 250;
const SNAPSHOT_EVERY_COMMANDS = 200;

describe('SnapshotScheduler on a real nats-server and S3 server', () => {
  let servers: SnapshotTestServers;
  let connection: NatsConnection;
  const stoppers: (() => Promise<void>)[] = [];
  let logCounter = 0;

  /** A fresh log and its snapshots, as the lease holder's process would have them. */
  async function newCluster(options: { objectStore?: ObjectStore } = {}) {
    logCounter += 1;
    const streamName = `SCHEDULER_META_${logCounter}`;
    const log = await JetStreamMetaLog.create(connection, { streamName });
    const snapshots = new ViewSnapshots({
      store: options.objectStore ?? servers.objectStore(),
      kv: await openSnapshotBucket(connection),
      pointerKey: streamName,
      keyPrefix: `${SNAPSHOT_KEY_PREFIX}${streamName}/`,
    });
    return { streamName, log, snapshots };
  }

  /** Appends history entries [from, to) in index order (one connection keeps publishes in call order). */
  async function appendHistory(log: JetStreamMetaLog, streamName: string, from: number, to: number): Promise<void> {
    for (let first = from; first < to; first += APPENDS_IN_FLIGHT) {
      const indexes = Array.from({ length: Math.min(APPENDS_IN_FLIGHT, to - first) }, (_unused, offset) => first + offset);
      await Promise.all(indexes.map((index) => log.append(historyCommand(index), `${streamName}-${index}`)));
    }
  }

  async function startStore(log: JetStreamMetaLog, snapshots: ViewSnapshots) {
    const started = await startMetaStore({ log, snapshots, catchUpTimeoutMs: CATCH_UP_TIMEOUT_MS });
    stoppers.push(() => started.store.stop());
    return started;
  }

  function startScheduler(store: MetaStore, log: JetStreamMetaLog, snapshots: ViewSnapshots, everyCommands = SNAPSHOT_EVERY_COMMANDS, retryDelayMs?: number) {
    const rounds: SnapshotRound[] = [];
    const errors: Error[] = [];
    const scheduler = new SnapshotScheduler({
      store,
      log,
      snapshots,
      everyCommands,
      onSnapshot: (round) => rounds.push(round),
      onError: (error) => errors.push(error),
      ...(retryDelayMs === undefined ? {} : { retryDelayMs }),
    });
    stoppers.push(() => scheduler.stop());
    return { scheduler, rounds, errors };
  }

  beforeAll(async () => {
    servers = await startSnapshotTestServers('snapshot-scheduler');
    connection = await servers.connect();
  }, 30_000);

  afterEach(async () => {
    for (const stop of stoppers.splice(0).reverse()) await stop();
  });

  afterAll(async () => {
    await servers?.stop();
  });

  /**
   * Runs a lease holder (a store plus a scheduler every 200 entries) over a log of `length` entries, then
   * starts a fresh process from the snapshots and reports what its start cost. Appends go as fast as the
   * server takes them, so rounds fall behind and skip ahead as they would under load; with `pacedBy` they
   * go in chunks of that many, each waited for until the scheduler is idle, so every due round happens.
   */
  async function startAfterHistoryOf(length: number, pacedBy: number = length) {
    const { streamName, log, snapshots } = await newCluster();
    const holder = await startStore(log, snapshots);
    const { scheduler, rounds, errors } = startScheduler(holder.store, log, snapshots);
    await scheduler.start();
    for (let from = 0; from < length; from += pacedBy) {
      const to = Math.min(length, from + pacedBy);
      await appendHistory(log, streamName, from, to);
      await holder.store.waitForSeq(to, CATCH_UP_TIMEOUT_MS);
      await scheduler.idle();
    }

    const late = await startStore(log, snapshots);
    return { log, snapshots, holder, scheduler, rounds, errors, late };
  }

  it('keeps the entries a starting process replays below the snapshot interval, for a log of 500 and of 5 000 entries', async () => {
    // Proves startup cost does not grow with the age of the cluster: the replayed count is < 200 for both lengths, while a full replay would be 500 and 5 000.
    const replayed: { length: number; appends: string; replayedEntries: number; heldEntries: number }[] = [];
    for (const length of [500, 5_000]) {
      // In bursts rounds fall behind and skip ahead; in steady chunks of 50 every due round happens.
      for (const [appends, pacedBy] of [['burst', length], ['steady', 50]] as const) {
        const { log, holder, rounds, errors, late } = await startAfterHistoryOf(length, pacedBy);
        expect(errors).toEqual([]);
        expect(holder.replayedEntries).toBe(0);
        // Steady chunks make every due round happen; a burst is applied in a few batches (the store applies
        // what one turn delivers at once), so its rounds may see only the end of it: at least one round then.
        expect(rounds.length).toBeGreaterThanOrEqual(appends === 'steady' ? 2 : 1);
        const heldEntries = (await log.lastSeq()) - (await log.firstSeq()) + 1;
        expect(late.replayedEntries).toBe(length - late.snapshotSeq);
        expect(late.store.view).toEqual(holder.store.view);
        expect(late.store.view).toEqual(historyView(length));
        replayed.push({ length, appends, replayedEntries: late.replayedEntries, heldEntries });
      }
    }
    for (const run of replayed) {
      expect(run.replayedEntries).toBeLessThan(SNAPSHOT_EVERY_COMMANDS);
      // In steady state the log stays bounded too: the kept snapshots' intervals plus the one in progress.
      // (After a burst the purge point lags until enough rounds have rotated the kept snapshots.)
      if (run.appends === 'steady') expect(run.heldEntries).toBeLessThanOrEqual((LIMITS.metaSnapshotsKept + 1) * SNAPSHOT_EVERY_COMMANDS);
    }
    expect(replayed.map((run) => run.length)).toEqual([500, 500, 5_000, 5_000]);
  }, 60_000);

  it('never purges an entry above the oldest kept snapshot: every kept snapshot can still be started from', async () => {
    // Proves each round purged below exactly oldest kept + 1, and tailing from each kept snapshot rebuilds the full view.
    const { log, snapshots, rounds, errors } = await startAfterHistoryOf(1_300, SNAPSHOT_EVERY_COMMANDS);
    expect(errors).toEqual([]);
    expect(rounds.map((round) => round.seq)).toEqual([200, 400, 600, 800, 1_000, 1_200]);
    expect(rounds.map((round) => round.purgedBeforeSeq)).toEqual([201, 201, 201, 401, 601, 801]);
    for (const round of rounds) {
      expect(round.kept.length).toBeLessThanOrEqual(3);
      expect(round.purgedBeforeSeq).toBe(Math.min(...round.kept.map((reference) => reference.seq)) + 1);
      expect(round.kept.map((reference) => reference.seq)).toContain(round.seq);
    }
    const kept = await snapshots.kept();
    expect(kept).toHaveLength(3);
    const oldestKeptSeq = kept[kept.length - 1]!.seq;
    expect(await log.firstSeq()).toBe(oldestKeptSeq + 1);

    for (const reference of kept) {
      const fromSnapshot = await MetaStore.open(log, { initialView: await snapshots.load(reference) });
      stoppers.push(() => fromSnapshot.stop());
      await fromSnapshot.start();
      expect(await fromSnapshot.catchUp(CATCH_UP_TIMEOUT_MS)).toEqual(historyView(1_300));
    }
  }, 30_000);

  it('snapshots at once a view that is already due when it starts, then every N entries, and stops on stop()', async () => {
    // Proves a new lease holder does not wait for N more entries, and a stopped scheduler writes nothing more.
    const { streamName, log, snapshots } = await newCluster();
    await appendHistory(log, streamName, 0, 450);
    const holder = await startStore(log, snapshots);
    const { scheduler, rounds } = startScheduler(holder.store, log, snapshots);
    await scheduler.start();
    await scheduler.idle();
    expect(rounds.map((round) => [round.seq, round.purgedBeforeSeq])).toEqual([[450, 451]]);
    expect(scheduler.lastSnapshotSeq).toBe(450);

    await appendHistory(log, streamName, 450, 649);
    await holder.store.waitForSeq(649, CATCH_UP_TIMEOUT_MS);
    await scheduler.idle();
    expect(rounds).toHaveLength(1);
    await appendHistory(log, streamName, 649, 650);
    await holder.store.waitForSeq(650, CATCH_UP_TIMEOUT_MS);
    await scheduler.idle();
    expect(rounds.map((round) => [round.seq, round.purgedBeforeSeq])).toEqual([
      [450, 451],
      [650, 451],
    ]);

    await scheduler.stop();
    await appendHistory(log, streamName, 650, 900);
    await holder.store.waitForSeq(900, CATCH_UP_TIMEOUT_MS);
    expect(rounds).toHaveLength(2);
    expect((await snapshots.kept()).map((reference) => reference.seq)).toEqual([650, 450]);
  });


  it('stopWithSnapshot leaves a snapshot of the view as it is, so the next start replays nothing; none when the view is at the newest', async () => {
    // Proves the holder's clean stop spares every process started next the replay since the last due snapshot.
    const { streamName, log, snapshots } = await newCluster();
    await appendHistory(log, streamName, 0, 250);
    const holder = await startStore(log, snapshots);
    const { scheduler, rounds, errors } = startScheduler(holder.store, log, snapshots);
    await scheduler.start();
    await scheduler.idle();
    await appendHistory(log, streamName, 250, 330);
    await holder.store.waitForSeq(330, CATCH_UP_TIMEOUT_MS);
    await scheduler.idle();
    expect(rounds.map((round) => round.seq)).toEqual([250]);

    await scheduler.stopWithSnapshot();
    expect(errors).toEqual([]);
    expect(rounds.map((round) => [round.seq, round.purgedBeforeSeq])).toEqual([
      [250, 251],
      [330, 251],
    ]);
    expect(rounds.every((round) => Number.isInteger(round.durationMs) && round.durationMs >= 0)).toBe(true);
    const next = await startStore(log, snapshots);
    expect(next.snapshotSeq).toBe(330);
    expect(next.replayedEntries).toBe(0);
    expect(next.store.view).toEqual(historyView(330));

    // A holder that stops right after a snapshot, with nothing new, writes no other.
    const again = startScheduler(next.store, log, snapshots);
    await again.scheduler.start();
    await again.scheduler.stopWithSnapshot();
    expect(again.rounds).toEqual([]);
    expect((await snapshots.kept()).map((reference) => reference.seq)).toEqual([330, 250]);
  });
  it('purges nothing when the snapshot cannot be stored, and reports the failure', async () => {
    // Proves the log is only purged behind a snapshot that is really in the object store.
    const failingStore: ObjectStore = {
      put: async () => {
        throw new UnavailableError('the object store is down');
      },
      get: async () => {
        throw new UnavailableError('the object store is down');
      },
      putFile: async () => {
        throw new UnavailableError('the object store is down');
      },
      getToFile: async () => {
        throw new UnavailableError('the object store is down');
      },
      delete: async () => undefined,
      list: async () => [],
    };
    const { streamName, log, snapshots } = await newCluster({ objectStore: failingStore });
    await appendHistory(log, streamName, 0, 300);
    const holder = await MetaStore.open(log);
    stoppers.push(() => holder.stop());
    await holder.start();
    await holder.catchUp(CATCH_UP_TIMEOUT_MS);
    const { scheduler, rounds, errors } = startScheduler(holder, log, snapshots);
    await scheduler.start();
    await scheduler.idle();
    expect(rounds).toEqual([]);
    expect(errors.map((error) => error.message)).toEqual(['the object store is down']);
    expect(await snapshots.kept()).toEqual([]);
    expect(await log.firstSeq()).toBe(1);
    expect(scheduler.lastSnapshotSeq).toBe(0);
  });

  it('tries a failed round again after the retry delay on a quiet log, with no entry to start it', async () => {
    // Proves a due snapshot (and its purge) is not left waiting for the next entry after a failed round:
    // the log stays quiet after the failure, and the retry alone writes the snapshot and purges.
    const working = servers.objectStore();
    let failuresLeft = 1;
    const onceFailingStore: ObjectStore = {
      put: async (key, body) => {
        if (failuresLeft > 0) {
          failuresLeft -= 1;
          throw new UnavailableError('the object store is down once');
        }
        return working.put(key, body);
      },
      get: (key, range) => working.get(key, range),
      putFile: (key, path) => working.putFile(key, path),
      getToFile: (key, path) => working.getToFile(key, path),
      delete: (key) => working.delete(key),
      list: (prefix) => working.list(prefix),
    };
    const { streamName, log, snapshots } = await newCluster({ objectStore: onceFailingStore });
    await appendHistory(log, streamName, 0, 300);
    const holder = await MetaStore.open(log);
    stoppers.push(() => holder.stop());
    await holder.start();
    await holder.catchUp(CATCH_UP_TIMEOUT_MS);
    const { scheduler, rounds, errors } = startScheduler(holder, log, snapshots, SNAPSHOT_EVERY_COMMANDS, 200);
    await scheduler.start();
    await scheduler.idle();
    expect(errors.map((error) => error.message)).toEqual(['the object store is down once']);
    expect(rounds).toEqual([]);
    await eventually('the retried round wrote its snapshot', () => rounds.length === 1, { timeoutMs: CATCH_UP_TIMEOUT_MS, intervalMs: 20 });
    expect(rounds[0]).toMatchObject({ seq: 300, purgedBeforeSeq: 301 });
    expect((await snapshots.kept()).map((reference) => reference.seq)).toEqual([300]);
    expect(await log.firstSeq()).toBe(301);
  });

  it('purges after a failed purge on a quiet log, behind the snapshot already written', async () => {
    // Proves the purge is owed, not forgotten: the snapshot was written, the purge failed, and no entry
    // arrives; the retry purges behind that snapshot without writing another.
    const { streamName, log, snapshots } = await newCluster();
    await appendHistory(log, streamName, 0, 300);
    const holder = await MetaStore.open(log);
    stoppers.push(() => holder.stop());
    await holder.start();
    await holder.catchUp(CATCH_UP_TIMEOUT_MS);
    let purgeFailures = 1;
    const purgeOnceFailing = Object.assign(Object.create(log) as JetStreamMetaLog, {
      purgeBefore: async (seq: number) => {
        if (purgeFailures > 0) {
          purgeFailures -= 1;
          throw new UnavailableError('the purge timed out');
        }
        return log.purgeBefore(seq);
      },
    });
    const { scheduler, rounds, errors } = startScheduler(holder, purgeOnceFailing, snapshots, SNAPSHOT_EVERY_COMMANDS, 200);
    await scheduler.start();
    await scheduler.idle();
    expect(errors.map((error) => error.message)).toEqual(['the purge timed out']);
    expect(await log.firstSeq()).toBe(1);
    await eventually('the owed purge', () => rounds.length === 1, { timeoutMs: CATCH_UP_TIMEOUT_MS, intervalMs: 20 });
    expect(rounds[0]).toMatchObject({ seq: 300, purgedBeforeSeq: 301 });
    expect((await snapshots.kept()).map((reference) => reference.seq)).toEqual([300]);
    expect(await log.firstSeq()).toBe(301);
  });
});
