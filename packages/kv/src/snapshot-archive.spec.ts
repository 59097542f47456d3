import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { gunzipSync, gzipSync } from 'node:zlib';
import { InvalidArgumentError } from '@mink/protocol';
import { text } from './kv-tablet.contract';
import { LmdbKvTablet } from './lmdb-kv-tablet';
import { packSnapshotFile, restoreTabletFromFile, unpackSnapshotFile } from './snapshot-archive';

const MEBIBYTE_BYTES = 1024 * 1024;
/** The bounded-memory test packs and restores a data file at least this large... */
const LARGE_DATA_FILE_BYTES = 64 * MEBIBYTE_BYTES;
/** ...while the memory the process holds may grow by less than this, half the file. */
const MEMORY_GROWTH_BYTES_MAX = 32 * MEBIBYTE_BYTES;
/** Random values of this size fill the large tablet; random bytes keep the archive as large as the data. */
const LARGE_VALUE_BYTES = 64 * 1024;
const LARGE_VALUES_PER_APPLY = 64;
const MEMORY_SAMPLE_INTERVAL_MS = 2;
/** A sample that shows more growth than this is taken again after collecting garbage (see `peakGrowthDuring`). */
const MEMORY_COLLECT_ABOVE_BYTES = MEMORY_GROWTH_BYTES_MAX / 2;
const LARGE_TEST_TIMEOUT_MS = 120_000;

/**
 * The MINKKVS1 layout as snapshot-archive.ts documents it, encoded here independently of the module, so the
 * tests pin the format that archives uploaded by earlier versions have.
 */
function documentedLayout(appliedOffset: number, files: readonly (readonly [string, Uint8Array])[], fileCount = files.length): Buffer {
  const header = Buffer.alloc(20);
  Buffer.from('MINKKVS1').copy(header);
  header.writeBigUInt64BE(BigInt(appliedOffset), 8);
  header.writeUInt32BE(fileCount, 16);
  const parts: Buffer[] = [header];
  for (const [name, content] of files) {
    const nameBytes = Buffer.from(name, 'utf8');
    const entry = Buffer.alloc(2 + nameBytes.length + 8);
    entry.writeUInt16BE(nameBytes.length, 0);
    nameBytes.copy(entry, 2);
    entry.writeBigUInt64BE(BigInt(content.length), 2 + nameBytes.length);
    parts.push(entry, Buffer.from(content));
  }
  return Buffer.concat(parts);
}

/** The memory the process holds in JavaScript objects and array buffers (Node's Buffers live in the latter). */
function heldBytes(): number {
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
}

/**
 * V8's full collection, exposed at run time: streaming leaves a trail of dead chunk Buffers that V8 collects
 * only when its own heuristics say so, which lets the apparent growth wander between 20 and 40 MiB however
 * little is alive. Collecting before a sample is counted makes the figure what is really held.
 */
function exposedGarbageCollection(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

/**
 * Runs `action` while sampling `heldBytes`, and returns by how much the samples rose above the start at most.
 * A sample above `collectAboveBytes` of growth is taken again after a full collection, so dead chunks do not
 * count, while anything alive (such as a whole file or archive in one buffer) still does. Collecting only then
 * keeps the number of collections, which are slow in a Jest worker, to a handful.
 */
async function peakGrowthDuring(action: () => Promise<unknown>, collectAboveBytes: number): Promise<MemoryGrowth> {
  const collectGarbage = exposedGarbageCollection();
  collectGarbage();
  const baseline = heldBytes();
  const growth: MemoryGrowth = { heldBytes: 0, apparentBytes: 0, collections: 0, afterCollectionBytes: 0 };
  const sample = (): void => {
    let held = heldBytes() - baseline;
    growth.apparentBytes = Math.max(growth.apparentBytes, held);
    if (held > collectAboveBytes) {
      collectGarbage();
      held = heldBytes() - baseline;
      growth.collections++;
      growth.afterCollectionBytes = Math.max(growth.afterCollectionBytes, held);
    }
    growth.heldBytes = Math.max(growth.heldBytes, held);
  };
  const sampler = setInterval(sample, MEMORY_SAMPLE_INTERVAL_MS);
  try {
    await action();
  } finally {
    clearInterval(sampler);
  }
  sample();
  return growth;
}

/** What `peakGrowthDuring` saw, all relative to the start. */
interface MemoryGrowth {
  /** The largest sample counted: taken as it was below the threshold, after a collection above it. */
  heldBytes: number;
  /** The largest sample before any collection, dead chunks included. */
  apparentBytes: number;
  collections: number;
  /** The largest sample taken right after a collection, i.e. what was alive. */
  afterCollectionBytes: number;
}

describe('snapshot archive', () => {
  let workDirectory: string;
  beforeEach(async () => {
    workDirectory = await mkdtemp(join(tmpdir(), 'mink-kv-archive-'));
  });
  afterEach(async () => {
    await rm(workDirectory, { recursive: true, force: true });
  });

  async function writeArchive(name: string, bytes: Uint8Array): Promise<string> {
    const path = join(workDirectory, name);
    await writeFile(path, bytes);
    return path;
  }

  it('round-trips several files byte for byte with the offset, and reports the archive size', async () => {
    // Proves the archive file keeps names, contents (empty files and files of many stream chunks) and the offset.
    const source = join(workDirectory, 'source');
    await mkdir(source);
    const contents: [string, Buffer][] = [
      ['one', Buffer.from([0, 1, 2, 255])],
      ['empty', Buffer.alloc(0)],
      ['several-chunks', randomBytes(3 * MEBIBYTE_BYTES + 5)],
    ];
    for (const [name, content] of contents) await writeFile(join(source, name), content);
    const archivePath = join(workDirectory, 'snapshot.archive');

    const packed = await packSnapshotFile(source, { appliedOffset: 2 ** 40, files: contents.map(([name]) => name), bytes: 0 }, archivePath);
    expect(packed.bytes).toBe((await stat(archivePath)).size);

    const target = join(workDirectory, 'target');
    expect(await unpackSnapshotFile(archivePath, target)).toEqual({ appliedOffset: 2 ** 40, files: ['one', 'empty', 'several-chunks'] });
    expect((await readdir(target)).sort()).toEqual(['empty', 'one', 'several-chunks']);
    for (const [name, content] of contents) expect((await readFile(join(target, name))).equals(content)).toBe(true);
  });

  it('writes exactly the documented MINKKVS1 layout inside the gzip layer', async () => {
    // Proves the streaming packer did not change the format: older readers and the layout's documentation still hold.
    const source = join(workDirectory, 'source');
    await mkdir(source);
    await writeFile(join(source, 'data.mdb'), Buffer.from('pages'));
    await writeFile(join(source, 'é'), Buffer.alloc(0));
    const archivePath = join(workDirectory, 'snapshot.archive');
    await packSnapshotFile(source, { appliedOffset: 42, files: ['data.mdb', 'é'], bytes: 5 }, archivePath);
    expect(gunzipSync(await readFile(archivePath)).equals(documentedLayout(42, [['data.mdb', Buffer.from('pages')], ['é', Buffer.alloc(0)]]))).toBe(true);
  });

  it('restores an LMDB tablet into another directory from the archive file alone', async () => {
    // Proves a PK bucket on another node can restore from the one downloaded archive file after the source is gone.
    const tablet = await LmdbKvTablet.open(join(workDirectory, 'source'));
    await tablet.apply([{ key: text('a'), value: text('1') }, { key: text('b'), value: text('2') }], 7);
    const snapshot = await tablet.snapshot(join(workDirectory, 'snapshot'));
    const archivePath = join(workDirectory, 'snapshot.archive');
    await packSnapshotFile(join(workDirectory, 'snapshot'), snapshot, archivePath);
    await tablet.destroy();
    await rm(join(workDirectory, 'snapshot'), { recursive: true });

    const restored = await restoreTabletFromFile(archivePath, join(workDirectory, 'elsewhere'));
    expect(restored.appliedOffset()).toBe(7);
    expect(restored.getMany([text('a'), text('b'), text('c')]).map((value) => value && Buffer.from(value).toString())).toEqual(['1', '2', undefined]);
    await restored.close();
  });

  it('restores an archive built the way the earlier in-memory packer built it', async () => {
    // Proves compatibility: archives uploaded before streaming (the layout gzip-compressed in one piece) restore unchanged.
    const tablet = await LmdbKvTablet.open(join(workDirectory, 'source'));
    await tablet.apply([{ key: text('old'), value: text('archive') }], 11);
    const snapshot = await tablet.snapshot(join(workDirectory, 'snapshot'));
    await tablet.destroy();
    const dataFile = await readFile(join(workDirectory, 'snapshot', 'data.mdb'));
    const archivePath = await writeArchive('earlier.archive', gzipSync(documentedLayout(snapshot.appliedOffset, [['data.mdb', dataFile]]), { level: 1 }));

    const restored = await restoreTabletFromFile(archivePath, join(workDirectory, 'restored'));
    expect(restored.appliedOffset()).toBe(11);
    expect(Buffer.from(restored.get(text('old'))!).toString()).toBe('archive');
    await restored.close();
  });

  it('rejects corrupt archives, unsafe or repeated names and non-empty targets with InvalidArgument', async () => {
    // Proves the streaming parser refuses what the in-memory one refused: garbage, truncation anywhere, unsafe names, trailing bytes, overwriting.
    const cases: [string, Buffer, string][] = [
      ['not gzip', Buffer.from('not gzip'), 'not valid gzip'],
      ['gzip cut off', gzipSync(documentedLayout(1, [['a', randomBytes(10_000)]])).subarray(0, 2_000), 'not valid gzip'],
      ['another magic', gzipSync(Buffer.from('WRONGMAG' + '\0'.repeat(12))), 'MINKKVS1'],
      ['header cut off', gzipSync(documentedLayout(1, []).subarray(0, 15)), 'truncated'],
      ['file missing', gzipSync(documentedLayout(1, [], 1)), 'truncated'],
      ['content cut off', gzipSync(documentedLayout(1, [['a', Buffer.alloc(100)]]).subarray(0, 20 + 11 + 50)), 'truncated'],
      ['unsafe name', gzipSync(documentedLayout(1, [['../x', Buffer.alloc(1)]])), 'bare file name'],
      ['repeated name', gzipSync(documentedLayout(1, [['a', Buffer.alloc(1)], ['a', Buffer.alloc(2)]])), 'twice'],
      ['trailing bytes', gzipSync(Buffer.concat([documentedLayout(1, [['a', Buffer.alloc(1)]]), Buffer.from([0])])), 'after its last file'],
    ];
    for (const [name, archive, message] of cases) {
      const archivePath = await writeArchive(`${name}.archive`, archive);
      const failure = await unpackSnapshotFile(archivePath, join(workDirectory, `target-${name}`)).then(
        () => new Error(`${name}: unpacked`),
        (error: unknown) => error,
      );
      expect([name, failure]).toEqual([name, expect.any(InvalidArgumentError)]);
      expect([name, (failure as Error).message]).toEqual([name, expect.stringContaining(message)]);
    }

    const valid = await writeArchive('valid.archive', gzipSync(documentedLayout(1, [['a', Buffer.alloc(1)]])));
    await mkdir(join(workDirectory, 'occupied'));
    await writeFile(join(workDirectory, 'occupied', 'leftover'), 'x');
    await expect(unpackSnapshotFile(valid, join(workDirectory, 'occupied'))).rejects.toThrow('not empty');
  });

  it('refuses an archive whose offset disagrees with the tablet inside it', async () => {
    // Proves restore checks the tablet's own stored offset against the archive's, as the in-memory restore did.
    const tablet = await LmdbKvTablet.open(join(workDirectory, 'source'));
    await tablet.apply([{ key: text('a'), value: text('1') }], 7);
    await tablet.snapshot(join(workDirectory, 'snapshot'));
    await tablet.destroy();
    const dataFile = await readFile(join(workDirectory, 'snapshot', 'data.mdb'));
    const archivePath = await writeArchive('lying.archive', gzipSync(documentedLayout(8, [['data.mdb', dataFile]])));
    await expect(restoreTabletFromFile(archivePath, join(workDirectory, 'restored'))).rejects.toThrow('names offset 8 but its tablet holds offset 7');
  });

  it(
    `packs and restores a tablet of ${LARGE_DATA_FILE_BYTES / MEBIBYTE_BYTES} MiB while held memory grows by less than ${MEMORY_GROWTH_BYTES_MAX / MEBIBYTE_BYTES} MiB`,
    async () => {
      // Proves snapshot and restore memory is bounded independently of the table: neither the data file nor the archive is ever held whole.
      const tablet = await LmdbKvTablet.open(join(workDirectory, 'source'));
      let offset = 0;
      for (let written = 0; written < LARGE_DATA_FILE_BYTES; written += LARGE_VALUES_PER_APPLY * LARGE_VALUE_BYTES) {
        offset++;
        const batch = Array.from({ length: LARGE_VALUES_PER_APPLY }, (_, index) => ({
          key: text(`key-${String(offset).padStart(4, '0')}-${String(index).padStart(3, '0')}`),
          value: randomBytes(LARGE_VALUE_BYTES),
        }));
        await tablet.apply(batch, offset);
      }
      const snapshotDirectory = join(workDirectory, 'snapshot');
      const snapshot = await tablet.snapshot(snapshotDirectory);
      const lastKey = text(`key-${String(offset).padStart(4, '0')}-${String(LARGE_VALUES_PER_APPLY - 1).padStart(3, '0')}`);
      const lastValue = Buffer.from(tablet.get(lastKey)!);
      await tablet.destroy();
      expect(snapshot.bytes).toBeGreaterThanOrEqual(LARGE_DATA_FILE_BYTES);

      const archivePath = join(workDirectory, 'snapshot.archive');
      let archiveBytes = 0;
      const packGrowth = await peakGrowthDuring(async () => {
        archiveBytes = (await packSnapshotFile(snapshotDirectory, snapshot, archivePath)).bytes;
      }, MEMORY_COLLECT_ABOVE_BYTES);
      // Random values do not compress: the archive is as large as the data, so holding it would show as well.
      expect(archiveBytes).toBeGreaterThanOrEqual(LARGE_DATA_FILE_BYTES);
      await rm(snapshotDirectory, { recursive: true });

      let restored: LmdbKvTablet | undefined;
      const restoreGrowth = await peakGrowthDuring(async () => {
        restored = await restoreTabletFromFile(archivePath, join(workDirectory, 'restored'));
      }, MEMORY_COLLECT_ABOVE_BYTES);
      const mebibytes = (bytes: number): string => `${(bytes / MEBIBYTE_BYTES).toFixed(1)} MiB`;
      const account = (growth: MemoryGrowth): string =>
        `at most ${mebibytes(growth.heldBytes)} counted, ${mebibytes(growth.apparentBytes)} apparent, ` +
        `${mebibytes(growth.afterCollectionBytes)} alive after ${growth.collections} collections`;
      console.log(
        `snapshot archive memory: data file ${mebibytes(snapshot.bytes)}, archive ${mebibytes(archiveBytes)}; ` +
          `packing grew ${account(packGrowth)}; restoring grew ${account(restoreGrowth)}`,
      );
      expect(restored!.appliedOffset()).toBe(offset);
      expect(Buffer.from(restored!.get(lastKey)!).equals(lastValue)).toBe(true);
      await restored!.close();
      expect(packGrowth.heldBytes).toBeLessThan(MEMORY_GROWTH_BYTES_MAX);
      expect(restoreGrowth.heldBytes).toBeLessThan(MEMORY_GROWTH_BYTES_MAX);
    },
    LARGE_TEST_TIMEOUT_MS,
  );
});
