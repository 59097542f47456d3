import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { InvalidArgumentError } from '@mink/protocol';
import { text } from './kv-tablet.contract';
import { LmdbKvTablet } from './lmdb-kv-tablet';
import { packSnapshot, restoreTablet, unpackSnapshot } from './snapshot-archive';

describe('snapshot archive', () => {
  let workDirectory: string;
  beforeEach(async () => {
    workDirectory = await mkdtemp(join(tmpdir(), 'mink-kv-archive-'));
  });
  afterEach(async () => {
    await rm(workDirectory, { recursive: true, force: true });
  });

  it('round-trips several files byte for byte with the offset', async () => {
    // Proves the archive layout keeps names, contents (including empty files) and the applied offset.
    const source = join(workDirectory, 'source');
    await mkdir(source);
    await writeFile(join(source, 'one'), Buffer.from([0, 1, 2, 255]));
    await writeFile(join(source, 'empty'), Buffer.alloc(0));
    const archive = await packSnapshot(source, { appliedOffset: 2 ** 40, files: ['one', 'empty'], bytes: 4 });
    const unpacked = await unpackSnapshot(archive, join(workDirectory, 'target'));
    expect(unpacked).toEqual({ appliedOffset: 2 ** 40, files: ['one', 'empty'] });
    expect((await readdir(join(workDirectory, 'target'))).sort()).toEqual(['empty', 'one']);
  });

  it('restores an LMDB tablet into another directory from the archive alone', async () => {
    // Proves a PK bucket on another node can restore from the one uploaded object after the source is gone.
    const tablet = await LmdbKvTablet.open(join(workDirectory, 'source'));
    await tablet.apply([{ key: text('a'), value: text('1') }, { key: text('b'), value: text('2') }], 7);
    const snapshot = await tablet.snapshot(join(workDirectory, 'snapshot'));
    const archive = await packSnapshot(join(workDirectory, 'snapshot'), snapshot);
    await tablet.destroy();
    await rm(join(workDirectory, 'snapshot'), { recursive: true });

    const restored = await restoreTablet(archive, join(workDirectory, 'elsewhere'));
    expect(restored.appliedOffset()).toBe(7);
    expect(restored.getMany([text('a'), text('b'), text('c')]).map((value) => value && Buffer.from(value).toString())).toEqual(['1', '2', undefined]);
    await restored.close();
  });

  it('rejects corrupt archives and non-empty targets', async () => {
    // Proves unpacking refuses garbage, truncation, unsafe names and overwriting, with InvalidArgument.
    const target = join(workDirectory, 'target');
    await expect(unpackSnapshot(Buffer.from('not gzip'), target)).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(unpackSnapshot(gzipSync(Buffer.from('WRONGMAG' + '\0'.repeat(12))), target)).rejects.toThrow('MINKKVS1');
    const header = Buffer.alloc(20);
    Buffer.from('MINKKVS1').copy(header);
    header.writeUInt32BE(1, 16);
    const unsafeName = Buffer.from('../x');
    const entry = Buffer.alloc(2 + unsafeName.length + 8);
    entry.writeUInt16BE(unsafeName.length, 0);
    unsafeName.copy(entry, 2);
    await expect(unpackSnapshot(gzipSync(Buffer.concat([header, entry])), target)).rejects.toThrow('bare file name');
    await expect(unpackSnapshot(gzipSync(header), join(workDirectory, 'truncated'))).rejects.toThrow('truncated');
    const source = await LmdbKvTablet.open(join(workDirectory, 'source'));
    const snapshot = await source.snapshot(join(workDirectory, 'snapshot'));
    const archive = await packSnapshot(join(workDirectory, 'snapshot'), snapshot);
    await source.close();
    await expect(unpackSnapshot(archive, join(workDirectory, 'snapshot'))).rejects.toThrow('not empty');
  });
});
