/*
 * Measures the KV tablet for the report: `npx tsc -b packages/kv && node packages/kv/dist/measure.js [keys]`.
 * Not a test; figures depend on the machine. The optional argument sets the key count of the
 * snapshot/archive/restore round (default 1 000 000).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { KvWrite } from './kv-tablet';
import { LmdbKvTablet } from './lmdb-kv-tablet';
import { packSnapshotFile, restoreTabletFromFile } from './snapshot-archive';

const PUT_COUNT = 200_000;
const GET_COUNT = 100_000;
const SCAN_COUNT = 10_000;

const key = (index: number): Buffer => Buffer.from(`user:${String(index).padStart(9, '0')}`);
const value = (index: number): Buffer => Buffer.from(`{"id":${index},"name":"name-${index}","score":${index % 1000}}`);

async function timed<T>(label: string, action: () => Promise<T> | T): Promise<T> {
  const started = performance.now();
  const result = await action();
  console.log(`${label}: ${(performance.now() - started).toFixed(0)} ms`);
  return result;
}

function randomIndexes(count: number, range: number): number[] {
  // A fixed linear congruential sequence keeps runs comparable without Math.random.
  let state = 12345;
  return Array.from({ length: count }, () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state % range;
  });
}

async function measureLmdb(workDirectory: string): Promise<void> {
  const tablet = await LmdbKvTablet.open(join(workDirectory, 'lmdb'));
  const batch: KvWrite[] = Array.from({ length: PUT_COUNT }, (_, index) => ({ key: key(index), value: value(index) }));
  await timed(`lmdb: ${PUT_COUNT} puts in one apply`, () => tablet.apply(batch, 1));
  const indexes = randomIndexes(GET_COUNT, PUT_COUNT);
  await timed(`lmdb: ${GET_COUNT} random gets (synchronous)`, () => {
    for (const index of indexes) if (tablet.get(key(index)) === undefined) throw new Error('missing key');
  });
  await timed(`lmdb: getMany of ${GET_COUNT} keys`, () => tablet.getMany(indexes.map(key)));
  const scanned = await timed(`lmdb: prefix scan of ${SCAN_COUNT} keys`, () => tablet.scanPrefix(Buffer.from('user:00005'), SCAN_COUNT));
  if (scanned.length !== SCAN_COUNT) throw new Error(`scan returned ${scanned.length}`);
  await tablet.destroy();
}

async function measureSnapshotRound(workDirectory: string, keyCount: number): Promise<void> {
  const tablet = await LmdbKvTablet.open(join(workDirectory, 'big'));
  const loadStarted = performance.now();
  for (let start = 0, offset = 1; start < keyCount; start += PUT_COUNT, offset++) {
    const end = Math.min(keyCount, start + PUT_COUNT);
    const batch: KvWrite[] = [];
    for (let index = start; index < end; index++) batch.push({ key: key(index), value: value(index) });
    await tablet.apply(batch, offset);
  }
  console.log(`lmdb: load of ${keyCount} keys in batches of ${PUT_COUNT}: ${(performance.now() - loadStarted).toFixed(0)} ms`);
  const snapshot = await timed(`lmdb: snapshot (compacting backup) of ${keyCount} keys`, () => tablet.snapshot(join(workDirectory, 'snapshot')));
  console.log(`lmdb: snapshot size ${(snapshot.bytes / 1e6).toFixed(1)} MB`);
  const archivePath = join(workDirectory, 'snapshot.archive');
  const archive = await timed('archive: pack + gzip', () => packSnapshotFile(join(workDirectory, 'snapshot'), snapshot, archivePath));
  console.log(`archive: ${(archive.bytes / 1e6).toFixed(1)} MB`);
  const restored = await timed('archive: gunzip + unpack + open', () => restoreTabletFromFile(archivePath, join(workDirectory, 'restored')));
  if (restored.appliedOffset() !== snapshot.appliedOffset) throw new Error('offset mismatch');
  if (restored.get(key(keyCount - 1)) === undefined) throw new Error('last key missing after restore');
  console.log(`memory: rss ${(process.memoryUsage().rss / 1e6).toFixed(0)} MB`);
  await restored.destroy();
  await tablet.destroy();
}

interface ClassicLevelLike {
  open(): Promise<void>;
  batch(operations: { type: 'put'; key: Uint8Array; value: Uint8Array }[]): Promise<void>;
  get(key: Uint8Array): Promise<Uint8Array | undefined>;
  getMany(keys: Uint8Array[]): Promise<(Uint8Array | undefined)[]>;
  close(): Promise<void>;
}

async function measureClassicLevel(workDirectory: string): Promise<void> {
  let ClassicLevel: new (path: string, options: object) => ClassicLevelLike;
  try {
    // Loaded by name at run time because classic-level is only a root dev install for this comparison.
    ({ ClassicLevel } = require('classic-level'));
  } catch {
    console.log('classic-level: not installed, skipped');
    return;
  }
  const db = new ClassicLevel(join(workDirectory, 'level'), { keyEncoding: 'view', valueEncoding: 'view' });
  await db.open();
  const operations = Array.from({ length: PUT_COUNT }, (_, index) => ({ type: 'put' as const, key: key(index), value: value(index) }));
  await timed(`classic-level: ${PUT_COUNT} puts in one batch`, () => db.batch(operations));
  const indexes = randomIndexes(GET_COUNT, PUT_COUNT);
  await timed(`classic-level: ${GET_COUNT} random gets (awaited one by one)`, async () => {
    for (const index of indexes) if ((await db.get(key(index))) === undefined) throw new Error('missing key');
  });
  await timed(`classic-level: getMany of ${GET_COUNT} keys`, () => db.getMany(indexes.map(key)));
  await db.close();
}

async function main(): Promise<void> {
  const keyCount = Number(process.argv[2] ?? 1_000_000);
  const workDirectory = await mkdtemp(join(tmpdir(), 'mink-kv-measure-'));
  try {
    await measureLmdb(workDirectory);
    await measureClassicLevel(workDirectory);
    await measureSnapshotRound(workDirectory, keyCount);
  } finally {
    await rm(workDirectory, { recursive: true, force: true });
  }
}

void main();
