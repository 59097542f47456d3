import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { gunzip, gzip, constants as zlibConstants } from 'node:zlib';
import { InvalidArgumentError } from '@mink/protocol';
import type { KvSnapshot } from './kv-tablet';
import { LmdbKvTablet, type LmdbKvTabletOptions } from './lmdb-kv-tablet';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/** Identifies version 1 of the archive layout; a different layout gets a different magic. */
const ARCHIVE_MAGIC = Buffer.from('MINKKVS1');

/**
 * Packs the files of a snapshot into one gzip-compressed byte array, so a PK bucket uploads a snapshot as a
 * single object. Layout before compression, all integers big-endian:
 * `MINKKVS1`, applied offset (u64), file count (u32), then per file: name length (u16), UTF-8 name, byte
 * length (u64), bytes. gzip runs at its fastest level on the libuv thread pool: LMDB pages of small entries
 * hold much slack, so even the fastest level shrinks them well without blocking the event loop.
 *
 * The whole archive is held in memory, so unlike the tablet its size grows with the table; a streamed
 * multipart upload would remove that, and is left for when tables outgrow it.
 */
export async function packSnapshot(directory: string, snapshot: KvSnapshot): Promise<Uint8Array> {
  const parts: Buffer[] = [];
  const header = Buffer.alloc(ARCHIVE_MAGIC.length + 12);
  ARCHIVE_MAGIC.copy(header, 0);
  header.writeBigUInt64BE(BigInt(snapshot.appliedOffset), ARCHIVE_MAGIC.length);
  header.writeUInt32BE(snapshot.files.length, ARCHIVE_MAGIC.length + 8);
  parts.push(header);
  for (const file of snapshot.files) {
    assertPlainFileName(file);
    const name = Buffer.from(file, 'utf8');
    const content = await readFile(join(directory, file));
    const fileHeader = Buffer.alloc(2 + name.length + 8);
    fileHeader.writeUInt16BE(name.length, 0);
    name.copy(fileHeader, 2);
    fileHeader.writeBigUInt64BE(BigInt(content.length), 2 + name.length);
    parts.push(fileHeader, content);
  }
  return gzipAsync(Buffer.concat(parts), { level: zlibConstants.Z_BEST_SPEED });
}

/** Writes the files of an archive into `directory`, which must be empty or missing, and returns what it held. */
export async function unpackSnapshot(archive: Uint8Array, directory: string): Promise<{ appliedOffset: number; files: string[] }> {
  let packed: Buffer;
  try {
    packed = await gunzipAsync(archive);
  } catch (error) {
    throw new InvalidArgumentError(`a KV snapshot archive is not valid gzip: ${(error as Error).message}`);
  }
  const reader = new ArchiveReader(packed);
  if (!reader.take(ARCHIVE_MAGIC.length).equals(ARCHIVE_MAGIC)) {
    throw new InvalidArgumentError('a KV snapshot archive does not start with MINKKVS1');
  }
  const appliedOffset = Number(reader.take(8).readBigUInt64BE());
  const fileCount = reader.take(4).readUInt32BE();
  await mkdir(directory, { recursive: true });
  if ((await readdir(directory)).length > 0) throw new InvalidArgumentError(`restore directory ${directory} is not empty`);
  const files: string[] = [];
  for (let index = 0; index < fileCount; index++) {
    const nameLength = reader.take(2).readUInt16BE();
    const name = reader.take(nameLength).toString('utf8');
    assertPlainFileName(name);
    const length = Number(reader.take(8).readBigUInt64BE());
    await writeFile(join(directory, name), reader.take(length));
    files.push(name);
  }
  if (!reader.atEnd()) throw new InvalidArgumentError('a KV snapshot archive has bytes after its last file');
  return { appliedOffset, files };
}

/**
 * Unpacks an archive made by `packSnapshot` from an `LmdbKvTablet` into `directory` and opens the tablet
 * there. The tablet's own stored offset must equal the archive's, or the archive is corrupt.
 */
export async function restoreTablet(archive: Uint8Array, directory: string, options?: LmdbKvTabletOptions): Promise<LmdbKvTablet> {
  const { appliedOffset } = await unpackSnapshot(archive, directory);
  const tablet = await LmdbKvTablet.open(directory, options);
  if (tablet.appliedOffset() !== appliedOffset) {
    await tablet.close();
    throw new InvalidArgumentError(
      `a KV snapshot archive names offset ${appliedOffset} but its tablet holds offset ${tablet.appliedOffset()}`,
    );
  }
  return tablet;
}

/** Only bare file names may appear in an archive, so unpacking cannot write outside its directory. */
function assertPlainFileName(name: string): void {
  if (name.length === 0 || name === '.' || name === '..' || basename(name) !== name || name.includes('\\')) {
    throw new InvalidArgumentError(`a KV snapshot file name must be a bare file name (got ${JSON.stringify(name)})`);
  }
}

/** Reads consecutive fields of the archive, rejecting a truncated one. */
class ArchiveReader {
  private position = 0;
  constructor(private readonly bytes: Buffer) {}

  take(length: number): Buffer {
    if (this.position + length > this.bytes.length) throw new InvalidArgumentError('a KV snapshot archive is truncated');
    const field = this.bytes.subarray(this.position, this.position + length);
    this.position += length;
    return field;
  }

  atEnd(): boolean {
    return this.position === this.bytes.length;
  }
}
