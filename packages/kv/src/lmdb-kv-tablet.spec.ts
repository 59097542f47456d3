import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeKvTabletContract, text } from './kv-tablet.contract';
import { LmdbKvTablet } from './lmdb-kv-tablet';
import { packSnapshotFile, restoreTabletFromFile } from './snapshot-archive';

describeKvTabletContract('LmdbKvTablet', {
  open: (directory) => LmdbKvTablet.open(directory),
  // The LMDB tablet restores the way a PK bucket on another node does: through one packed archive file.
  restore: async (snapshotDirectory, snapshot, directory) => {
    const archivePath = `${snapshotDirectory}.archive`;
    await packSnapshotFile(snapshotDirectory, snapshot, archivePath);
    try {
      return await restoreTabletFromFile(archivePath, directory);
    } finally {
      await rm(archivePath, { force: true });
    }
  },
});

describe('LmdbKvTablet on disk', () => {
  let workDirectory: string;
  beforeEach(async () => {
    workDirectory = await mkdtemp(join(tmpdir(), 'mink-kv-lmdb-'));
  });
  afterEach(async () => {
    await rm(workDirectory, { recursive: true, force: true });
  });

  it('keeps entries and the applied offset, in agreement, across close and reopen', async () => {
    // Proves persistence: after reopening, the offset is that of the last batch and the data is exactly its state.
    const directory = join(workDirectory, 'tablet');
    const first = await LmdbKvTablet.open(directory);
    for (let offset = 1; offset <= 5; offset++) {
      await first.apply(
        [
          { key: text(`k${offset}`), value: text(`v${offset}`) },
          { key: text('shared'), value: text(`s${offset}`) },
          { key: text(`k${offset - 1}`), value: offset % 2 === 0 ? null : text(`again${offset}`) },
        ],
        offset * 10,
      );
    }
    const before = first.scanPrefix(new Uint8Array(0), 100).map(({ key, value }) => `${Buffer.from(key)}=${Buffer.from(value)}`);
    await first.close();

    const reopened = await LmdbKvTablet.open(directory);
    expect(reopened.appliedOffset()).toBe(50);
    const after = reopened.scanPrefix(new Uint8Array(0), 100).map(({ key, value }) => `${Buffer.from(key)}=${Buffer.from(value)}`);
    expect(after).toEqual(before);
    expect(after).toEqual(['k0=again1', 'k2=again3', 'k4=again5', 'k5=v5', 'shared=s5']);
    await expect(reopened.apply([], 49)).rejects.toThrow('went backwards');
    await reopened.close();
  });

  it('snapshots only the data file and deletes its directory on destroy', async () => {
    // Proves a snapshot holds no per-process lock file and that destroy removes the tablet's data.
    const directory = join(workDirectory, 'tablet');
    const tablet = await LmdbKvTablet.open(directory);
    await tablet.apply([{ key: text('a'), value: text('1') }], 3);
    const snapshot = await tablet.snapshot(join(workDirectory, 'snapshot'));
    expect(snapshot.files).toEqual(['data.mdb']);
    expect(await readdir(join(workDirectory, 'snapshot'))).toEqual(['data.mdb']);
    expect(snapshot.appliedOffset).toBe(3);
    await tablet.destroy();
    expect(await readdir(workDirectory)).toEqual(['snapshot']);
  });
});
