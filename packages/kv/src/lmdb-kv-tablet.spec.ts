import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeKvTabletContract, text } from './kv-tablet.contract';
import { LmdbKvTablet } from './lmdb-kv-tablet';
import { packSnapshotFile, restoreTabletFromFile } from './snapshot-archive';

// LMDB on disk: the concurrent-applies snapshot test writes and restores thousands of keys, which took over Jest's default
// 5 s once on a loaded machine.
jest.setTimeout(30_000);

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

/** True when this process may mount a tmpfs (root on Linux): the full-disk test needs a small file system of its own. */
function canMountTmpfs(directory: string): boolean {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return false;
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', directory], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe('LmdbKvTablet on a full disk', () => {
  it('refuses an apply with KvCommitFailedError (Unavailable), keeps its state, leaves nothing unhandled, and takes the same batch once space returns', () => {
    // Proves a full disk is an outage of the tablet, not a crash of the node: nothing of the failed batch is
    // applied, no rejection goes unhandled (a data node would exit on one), and once space returns the same
    // tablet takes the batch (as a PK bucket's catch-up offers it again). Run in a process of its own on
    // the built package (fixtures/full-disk-probe.cjs), as a data node runs it.
    const mountPoint = mkdtempSync(join(tmpdir(), 'mink-kv-full-'));
    if (!canMountTmpfs(mountPoint)) {
      // eslint-disable-next-line no-console
      console.warn('LmdbKvTablet on a full disk: skipped, mounting a tmpfs needs root on Linux');
      rmSync(mountPoint, { recursive: true, force: true });
      return;
    }
    try {
      const output = execFileSync(process.execPath, [join(__dirname, '..', 'fixtures', 'full-disk-probe.cjs'), mountPoint], { encoding: 'utf8', timeout: 60_000 });
      const result = JSON.parse(output.trim().split('\n').at(-1)!);
      expect(result).toEqual({
        refused: { commitFailed: true, code: 'Unavailable', message: expect.stringMatching(/could not commit writes up to offset 2: .*No space left on device/) },
        offsetWhileFull: 1,
        bigWhileFull: false,
        offsetAfter: 2,
        lastAfter: true,
        firstAfter: 'kept',
        commitRefused: { commitFailed: true, code: 'Unavailable', message: expect.stringMatching(/could not commit writes up to offset 3: /) },
        offsetAfterCommitRefused: 2,
        moreAfterCommitRefused: false,
        offsetAfterFreed: 3,
        moreAfterFreed: true,
        unhandled: [],
      });
    } finally {
      execFileSync('umount', ['-l', mountPoint], { stdio: 'ignore' });
      rmSync(mountPoint, { recursive: true, force: true });
    }
  });
});
