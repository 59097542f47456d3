import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, readdir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip, constants as zlibConstants } from 'node:zlib';
import { InvalidArgumentError } from '@mink/protocol';
import type { KvSnapshot } from './kv-tablet';
import { LmdbKvTablet, type LmdbKvTabletOptions } from './lmdb-kv-tablet';

/** Identifies version 1 of the archive layout; a different layout gets a different magic. */
const ARCHIVE_MAGIC = Buffer.from('MINKKVS1');
/** Bytes of the fixed fields around a file's name: name length (u16) before it, byte length (u64) after it. */
const FILE_HEADER_FIXED_BYTES = 2 + 8;
/**
 * Bytes zlib writes per output chunk in either direction. Node's default (16 KiB) makes gzip about a quarter
 * slower than compressing in one piece; 64 KiB, the size of a file stream's chunks, matches it.
 */
const ZLIB_CHUNK_BYTES = 64 * 1024;

/** What an archive held, as `unpackSnapshotFile` wrote it out. */
export interface UnpackedSnapshot {
  appliedOffset: number;
  files: string[];
}

/*
 * The archive layout (MINKKVS1), which archives uploaded by earlier versions share, before gzip compression and
 * with all integers big-endian:
 *
 *   `MINKKVS1`, applied offset (u64), file count (u32),
 *   then per file: name length (u16), UTF-8 name (a bare file name), byte length (u64), the file's bytes.
 *
 * Both directions stream: packing reads each file in chunks through gzip into the archive file, and unpacking
 * reads the archive file through gunzip and writes each entry's bytes to its file as they come. Node's streams
 * wait for the slower side, so only a few chunks are in memory at any time, however large the table: memory is
 * bounded independently of the snapshot's size. Unpacking parses the layout incrementally and never holds more
 * of it than one field (at most a 64 KiB name) or one decompressed chunk.
 */

/**
 * Packs the files of a snapshot taken into `directory` into one gzip-compressed archive file at `archivePath`
 * (created or replaced), so a PK bucket uploads a snapshot as a single object. Resolves with the archive's size.
 * gzip runs at its fastest level on the libuv thread pool: LMDB pages of small entries hold much slack, so even
 * the fastest level shrinks them well without blocking the event loop.
 */
export async function packSnapshotFile(directory: string, snapshot: KvSnapshot, archivePath: string): Promise<{ bytes: number }> {
  snapshot.files.forEach(assertPlainFileName);
  const archive = createWriteStream(archivePath);
  const gzip = createGzip({ level: zlibConstants.Z_BEST_SPEED, chunkSize: ZLIB_CHUNK_BYTES });
  await pipeline(archiveLayout(directory, snapshot), gzip, archive);
  return { bytes: archive.bytesWritten };
}

/**
 * Writes the files of the archive file at `archivePath` into `directory`, which must be empty or missing, and
 * returns what the archive held. A malformed archive (not gzip, another magic, an unsafe or repeated name,
 * truncated, bytes after the last file) is refused with `InvalidArgumentError`; files written before the fault
 * was found stay in `directory` for the caller to remove.
 */
export async function unpackSnapshotFile(archivePath: string, directory: string): Promise<UnpackedSnapshot> {
  let unpacked: UnpackedSnapshot | undefined;
  try {
    await pipeline(createReadStream(archivePath), createGunzip({ chunkSize: ZLIB_CHUNK_BYTES }), async (layout: AsyncIterable<Buffer>) => {
      unpacked = await writeArchiveEntries(new ArchiveReader(layout[Symbol.asyncIterator]()), directory);
    });
  } catch (error) {
    if (isZlibError(error)) throw new InvalidArgumentError(`a KV snapshot archive is not valid gzip: ${error.message}`);
    throw error;
  }
  // The consumer either set it or threw, and a throw leaves through the catch above.
  if (unpacked === undefined) throw new Error('unpacking a KV snapshot archive ended without a result');
  return unpacked;
}

/**
 * Unpacks an archive file made by `packSnapshotFile` from an `LmdbKvTablet` into `directory` and opens the
 * tablet there. The tablet's own stored offset must equal the archive's, or the archive is corrupt.
 */
export async function restoreTabletFromFile(archivePath: string, directory: string, options?: LmdbKvTabletOptions): Promise<LmdbKvTablet> {
  const { appliedOffset } = await unpackSnapshotFile(archivePath, directory);
  const tablet = await LmdbKvTablet.open(directory, options);
  const storedOffset = tablet.appliedOffset();
  if (storedOffset !== appliedOffset) {
    await tablet.close();
    throw new InvalidArgumentError(`a KV snapshot archive names offset ${appliedOffset} but its tablet holds offset ${storedOffset}`);
  }
  return tablet;
}

/** The uncompressed layout of a snapshot's archive, chunk by chunk, reading each file as it goes. */
async function* archiveLayout(directory: string, snapshot: KvSnapshot): AsyncGenerator<Buffer> {
  const header = Buffer.alloc(ARCHIVE_MAGIC.length + 8 + 4);
  ARCHIVE_MAGIC.copy(header, 0);
  header.writeBigUInt64BE(BigInt(snapshot.appliedOffset), ARCHIVE_MAGIC.length);
  header.writeUInt32BE(snapshot.files.length, ARCHIVE_MAGIC.length + 8);
  yield header;
  for (const file of snapshot.files) {
    const handle = await open(join(directory, file), 'r');
    try {
      // The length is written before the bytes, so it is taken from the open file and the bytes are checked against it.
      const { size } = await handle.stat();
      const name = Buffer.from(file, 'utf8');
      const fileHeader = Buffer.alloc(FILE_HEADER_FIXED_BYTES + name.length);
      fileHeader.writeUInt16BE(name.length, 0);
      name.copy(fileHeader, 2);
      fileHeader.writeBigUInt64BE(BigInt(size), 2 + name.length);
      yield fileHeader;
      let copied = 0;
      for await (const chunk of handle.createReadStream({ autoClose: false })) {
        copied += (chunk as Buffer).length;
        // A snapshot's files are a private copy that nothing writes to; more or fewer bytes would corrupt the layout.
        if (copied > size) throw new Error(`snapshot file ${file} grew while it was packed (beyond ${size} bytes)`);
        yield chunk as Buffer;
      }
      if (copied !== size) throw new Error(`snapshot file ${file} shrank while it was packed (${copied} of ${size} bytes)`);
    } finally {
      await handle.close();
    }
  }
}

/** Parses the layout after the gzip layer and writes each entry's file, returning what the archive held. */
async function writeArchiveEntries(reader: ArchiveReader, directory: string): Promise<UnpackedSnapshot> {
  if (!(await reader.take(ARCHIVE_MAGIC.length)).equals(ARCHIVE_MAGIC)) {
    throw new InvalidArgumentError('a KV snapshot archive does not start with MINKKVS1');
  }
  const appliedOffset = safeNumber((await reader.take(8)).readBigUInt64BE(), 'applied offset');
  const fileCount = (await reader.take(4)).readUInt32BE();
  await mkdir(directory, { recursive: true });
  if ((await readdir(directory)).length > 0) throw new InvalidArgumentError(`restore directory ${directory} is not empty`);
  const files: string[] = [];
  for (let index = 0; index < fileCount; index++) {
    const nameLength = (await reader.take(2)).readUInt16BE();
    const name = (await reader.take(nameLength)).toString('utf8');
    assertPlainFileName(name);
    if (files.includes(name)) throw new InvalidArgumentError(`a KV snapshot archive holds file ${JSON.stringify(name)} twice`);
    const length = safeNumber((await reader.take(8)).readBigUInt64BE(), `length of ${JSON.stringify(name)}`);
    await pipeline(reader.bytes(length), createWriteStream(join(directory, name), { flags: 'wx' }));
    files.push(name);
  }
  if (!(await reader.atEnd())) throw new InvalidArgumentError('a KV snapshot archive has bytes after its last file');
  return { appliedOffset, files };
}

/** Only bare file names may appear in an archive, so unpacking cannot write outside its directory. */
function assertPlainFileName(name: string): void {
  if (name.length === 0 || name === '.' || name === '..' || basename(name) !== name || name.includes('\\')) {
    throw new InvalidArgumentError(`a KV snapshot file name must be a bare file name (got ${JSON.stringify(name)})`);
  }
}

function safeNumber(value: bigint, field: string): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new InvalidArgumentError(`a KV snapshot archive's ${field} (${value}) is out of range`);
  }
  return Number(value);
}

/** zlib's failures carry its own codes (Z_DATA_ERROR, Z_BUF_ERROR for a cut-off stream, ...). */
function isZlibError(error: unknown): error is { code: string; message: string } {
  // Not `instanceof Error`: Node's own errors may come from another realm (as inside Jest's sandbox).
  const { code, message } = (typeof error === 'object' && error !== null ? error : {}) as { code?: unknown; message?: unknown };
  return typeof code === 'string' && code.startsWith('Z_') && typeof message === 'string';
}

function truncated(): InvalidArgumentError {
  return new InvalidArgumentError('a KV snapshot archive is truncated');
}

/**
 * Reads consecutive fields of the decompressed layout from its chunks as they arrive, rejecting a truncated
 * one. It holds at most the rest of one chunk plus the field being assembled.
 */
class ArchiveReader {
  private pending: Buffer = Buffer.alloc(0);
  private ended = false;

  constructor(private readonly chunks: AsyncIterator<Buffer>) {}

  /** The next `length` bytes as one buffer; for the small fixed fields and names only. */
  async take(length: number): Promise<Buffer> {
    while (this.pending.length < length) {
      if (!(await this.pull())) throw truncated();
    }
    const field = this.pending.subarray(0, length);
    this.pending = this.pending.subarray(length);
    return field;
  }

  /** The next `length` bytes in pieces as they arrive, for a file's content of any size. */
  async *bytes(length: number): AsyncGenerator<Buffer> {
    let remaining = length;
    while (remaining > 0) {
      if (this.pending.length === 0 && !(await this.pull())) throw truncated();
      const piece = this.pending.subarray(0, Math.min(remaining, this.pending.length));
      this.pending = this.pending.subarray(piece.length);
      remaining -= piece.length;
      yield piece;
    }
  }

  /** Whether the layout has no bytes left. */
  async atEnd(): Promise<boolean> {
    while (this.pending.length === 0) {
      if (!(await this.pull())) return true;
    }
    return false;
  }

  /** Appends the next chunk to what is pending; false once the layout has ended. */
  private async pull(): Promise<boolean> {
    if (this.ended) return false;
    const next = await this.chunks.next();
    if (next.done) {
      this.ended = true;
      return false;
    }
    this.pending = this.pending.length === 0 ? next.value : Buffer.concat([this.pending, next.value]);
    return true;
  }
}
