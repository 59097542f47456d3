import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { getIn, type ColumnSpec } from '@mink/meta';
import { validateRows } from '@mink/records';
import { InMemoryObjectStore, StreamReader, WalWriter } from '@mink/s3stream';
import { eventually, startLedTable } from '@mink/testing';
import { PkBuckets } from './pk-buckets';

const COLUMNS: ColumnSpec[] = [
  { name: 'id', type: 'int64' },
  { name: 'name', type: 'string' },
];
const SILENT = { info: () => undefined, warn: () => undefined };

describe('PkBuckets', () => {
  it('serves a PK bucket only once restored, snapshots it on the interval while it changes, and takes no snapshot of an unchanged tablet', async () => {
    // Proves the lifecycle seen by the sync task and the periodic snapshot that the end-to-end test turns off.
    const led = await startLedTable(1, ['1'], { name: 'users', columns: COLUMNS, primaryKey: ['id'] });
    const stream = led.streams[0]!;
    const store = new InMemoryObjectStore();
    const folder = await mkdtemp(join(tmpdir(), 'mink-pk-buckets-'));
    const wal = new WalWriter({ nodeId: '1', nodeEpoch: 1, store, meta: led.meta, lingerMs: 1 });
    const buckets = new PkBuckets({
      nodeId: '1',
      nodeEpoch: 1,
      meta: led.meta,
      objectStore: store,
      wal,
      reader: new StreamReader({ store, meta: led.meta }),
      logger: SILENT,
      nowMs: Date.now,
      tabletsDir: folder,
      snapshotIntervalMs: 20,
    });
    const record = () => getIn(led.meta.view.buckets, stream.id)!;
    try {
      expect(buckets.isReady(stream.id, stream.streamEpoch)).toBe(false);
      await buckets.opened(stream.id, record(), stream.streamEpoch);
      expect(buckets.isReady(stream.id, stream.streamEpoch)).toBe(true);
      expect(buckets.isReady(stream.id, stream.streamEpoch + 1)).toBe(false);

      const put = (id: number, name: string) => buckets.get(stream.id)!.write(validateRows(COLUMNS, [{ id, name }]).map((row) => ({ kind: 'put', row })));
      await put(1, 'a');
      buckets.start();
      await eventually('the first periodic snapshot is committed', () => record().kvSnapshots.length === 1, { timeoutMs: 10_000, intervalMs: 5 });
      expect(record().kvSnapshots[0]!.appliedOffset).toBe(1);
      // Nothing changed: the next intervals take no snapshot.
      await sleep(100);
      expect(record().kvSnapshots).toHaveLength(1);
      await put(1, 'b');
      await eventually('a snapshot of the change is committed', () => record().kvSnapshots.length === 2, { timeoutMs: 10_000, intervalMs: 5 });
      expect(record().kvSnapshots.map((snapshot) => snapshot.appliedOffset)).toEqual([1, 3]);

      // A clean close takes no snapshot when nothing changed since the last one; a release takes none at all.
      await buckets.closing(stream.id);
      expect(record().kvSnapshots).toHaveLength(2);
      expect(buckets.get(stream.id)).toBeUndefined();
    } finally {
      await buckets.stop();
      await wal.close();
      await rm(folder, { recursive: true, force: true });
    }
  });
});
