import { LIMITS } from '@mink/config';
import { emptyView, type View } from '@mink/meta';
import { LogPurgedError, type PurgeableMetaLog } from './meta-log';
import { MetaStore, type MetaStoreOptions, type SnapshotSource } from './meta-store';

export type { SnapshotSource } from './meta-store';

export interface StartMetaStoreOptions {
  log: PurgeableMetaLog;
  snapshots: SnapshotSource;
  /** How long catching up with the log may take, per attempt. */
  catchUpTimeoutMs: number;
  /** Options of the store; `initialView` is the loaded snapshot. `onFatal` applies once the store is returned. */
  storeOptions?: Omit<MetaStoreOptions, 'initialView'>;
  /** Starts tried when purges keep overtaking the loaded snapshot; `LIMITS.metaSnapshotLoadAttemptsMax` when absent. */
  attemptsMax?: number;
}

/** A started store that has caught up with the log, and how it got there. */
export interface StartedMetaStore {
  store: MetaStore;
  /** Sequence of the snapshot the store started from; 0 when it replayed the log from the start. */
  snapshotSeq: number;
  /** Entries applied while catching up: the work a start costs, bounded by the snapshot interval, not the log's age. */
  replayedEntries: number;
  /** Starts it took; more than 1 when the log was purged beyond a loaded snapshot. */
  attempts: number;
}

/**
 * Starts a metadata store from the newest snapshot of the view and the log entries after it (docs/architecture.md §3),
 * and waits until it has caught up with the log, so startup costs one snapshot and fewer entries than the
 * snapshot interval, however old the cluster is.
 *
 * The race it handles: between loading a snapshot and reading the entries after it, writers may store a
 * newer snapshot and purge the log beyond the loaded one. That shows as a first held sequence above the
 * snapshot's, or as a tail that ends with `LogPurgedError`; either way the store is dropped and the newest
 * snapshot loaded again, up to `attemptsMax` times. Any other failure is thrown at once.
 */
export async function startMetaStore(options: StartMetaStoreOptions): Promise<StartedMetaStore> {
  const attemptsMax = options.attemptsMax ?? LIMITS.metaSnapshotLoadAttemptsMax;
  let lastPurge: LogPurgedError | undefined;
  for (let attempt = 1; attempt <= attemptsMax; attempt++) {
    const view = (await options.snapshots.loadNewest()) ?? emptyView();
    const [firstSeq, lastSeq] = [await options.log.firstSeq(), await options.log.lastSeq()];
    if (view.seq > lastSeq) {
      // The log never shrinks below a snapshot taken from it, so this log is not the one snapshotted.
      throw new Error(`the newest snapshot is at entry ${view.seq} but the metadata log ends at ${lastSeq}: the log was replaced under its snapshots`);
    }
    if (view.seq + 1 < firstSeq) {
      lastPurge = new LogPurgedError(view.seq + 1, firstSeq);
      continue;
    }
    try {
      return { ...(await startFrom(view, lastSeq, options)), attempts: attempt };
    } catch (error) {
      if (!(error instanceof LogPurgedError)) throw error;
      lastPurge = error;
    }
  }
  throw lastPurge ?? new Error('no start attempt was made');
}

/** One attempt: a store from `view`, started, caught up to `lastSeq`. The store is stopped when this fails. */
async function startFrom(view: View, lastSeq: number, options: StartMetaStoreOptions): Promise<Omit<StartedMetaStore, 'attempts'>> {
  const storeOptions = options.storeOptions ?? {};
  let starting = true;
  const store = await MetaStore.open(options.log, {
    ...storeOptions,
    initialView: view,
    // While starting, a fatal error reaches us through the rejected catch-up; afterwards it is the caller's.
    onFatal: (error) => {
      if (starting) return;
      if (storeOptions.onFatal) {
        storeOptions.onFatal(error);
        return;
      }
      setImmediate(() => {
        throw error;
      });
    },
  });
  let replayedEntries = 0;
  const stopCounting = store.onApplied(() => {
    replayedEntries += 1;
  });
  try {
    await store.start();
    await store.waitForSeq(lastSeq, options.catchUpTimeoutMs);
  } catch (error) {
    await store.stop();
    throw error;
  } finally {
    stopCounting();
    starting = false;
  }
  return { store, snapshotSeq: view.seq, replayedEntries };
}
