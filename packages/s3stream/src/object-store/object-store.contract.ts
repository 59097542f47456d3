/// <reference types="jest" />
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidArgumentError, NotFoundError } from '@mink/protocol';
import { OBJECT_PUT_BYTES_MAX, type ObjectStore } from './object-store';

/** Listing tests put more keys than one ListObjectsV2 page (1000) holds, so paging must work. */
const PAGED_KEY_COUNT = 1_005;
/** The paging test writes over a thousand objects; s3rver takes a few seconds for that. */
const PAGED_TEST_TIMEOUT_MS = 30_000;
const MEBIBYTE_BYTES = 1024 * 1024;
/** The file round trip uses several MiB, so a body goes through many stream chunks on both sides. */
const LARGE_FILE_BYTES = 5 * MEBIBYTE_BYTES + 17;
/** Slack for comparing a listed write time with this host's clock: the servers under test run on this host. */
const LISTED_TIME_MARGIN_MS = 2_000;

/** Every byte value once, so an encoding that mangles any byte (UTF-8, framing) shows. */
function allByteValues(): Uint8Array {
  return Uint8Array.from({ length: 256 }, (_, index) => index);
}

/** Bytes whose value names their position, so a range that is off by one shows in the data. */
function countingBytes(length: number): Uint8Array {
  return Uint8Array.from({ length }, (_, index) => index % 251);
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to fail, but it succeeded');
}

/**
 * The behaviour every `ObjectStore` must share (see the port's contract). `makeStore` is called once per test
 * and must return a store that is empty, so tests never see each other's keys.
 */
export function describeObjectStoreContract(name: string, makeStore: () => ObjectStore | Promise<ObjectStore>): void {
  describe(`ObjectStore contract: ${name}`, () => {
    let store: ObjectStore;

    beforeEach(async () => {
      store = await makeStore();
    });

    it('returns every byte value, 1 MiB of random bytes and an empty object unchanged', async () => {
      // Proves bodies are stored as raw bytes of any length, including zero, with no framing or re-encoding.
      const random = new Uint8Array(randomBytes(MEBIBYTE_BYTES));
      await store.put('bytes/all', allByteValues());
      await store.put('bytes/random', random);
      await store.put('bytes/empty', new Uint8Array(0));

      expect(await store.get('bytes/all')).toEqual(allByteValues());
      const readBack = await store.get('bytes/random');
      expect(readBack.byteLength).toBe(MEBIBYTE_BYTES);
      expect(Buffer.compare(readBack, random)).toBe(0);
      expect(await store.get('bytes/empty')).toEqual(new Uint8Array(0));
    });

    it('stores a body given as parts as their bytes end to end, empty parts and views into larger arrays included', async () => {
      // Proves a WAL or stream object put as its batches reads back as one object, byte for byte, and ranges
      // across part boundaries see the joined bytes.
      const backing = new Uint8Array(randomBytes(300_000));
      const parts = [backing.subarray(7, 100_007), new Uint8Array(0), Uint8Array.from([1, 2, 3]), backing.subarray(150_001, 299_999)];
      const joined = Buffer.concat(parts);
      await store.put('parts/many', parts);
      await store.put('parts/none', []);
      const readBack = await store.get('parts/many');
      expect(readBack.byteLength).toBe(joined.byteLength);
      expect(Buffer.compare(readBack, joined)).toBe(0);
      expect(Buffer.compare(await store.get('parts/many', { start: 99_990, endExclusive: 100_020 }), joined.subarray(99_990, 100_020))).toBe(0);
      expect(await store.get('parts/none')).toEqual(new Uint8Array(0));
    });

    describe('with local files', () => {
      let fileDirectory: string;

      beforeEach(async () => {
        fileDirectory = await mkdtemp(join(tmpdir(), 'mink-object-store-files-'));
      });

      afterEach(async () => {
        await rm(fileDirectory, { recursive: true, force: true });
      });

      it('round-trips every byte value, several MiB of random bytes and an empty file through putFile and getToFile', async () => {
        // Proves file uploads and downloads carry raw bytes of any length, and agree with put and get in both directions.
        const bodies: [string, Uint8Array][] = [
          ['all', allByteValues()],
          ['large', new Uint8Array(randomBytes(LARGE_FILE_BYTES))],
          ['empty', new Uint8Array(0)],
        ];
        for (const [name, body] of bodies) {
          const source = join(fileDirectory, `${name}.source`);
          await writeFile(source, body);
          await store.putFile(`files/${name}`, source);
          expect(Buffer.compare(await store.get(`files/${name}`), body)).toBe(0);

          const target = join(fileDirectory, `${name}.target`);
          expect(await store.getToFile(`files/${name}`, target)).toBe(body.byteLength);
          expect(Buffer.compare(await readFile(target), body)).toBe(0);
        }
        const putInMemory = countingBytes(3_000);
        await store.put('files/from-memory', putInMemory);
        expect(await store.getToFile('files/from-memory', join(fileDirectory, 'from-memory'))).toBe(3_000);
        expect(Buffer.compare(await readFile(join(fileDirectory, 'from-memory')), putInMemory)).toBe(0);
        expect((await store.list('files/')).map((object) => [object.key, object.size])).toEqual([
          ['files/all', 256],
          ['files/empty', 0],
          ['files/from-memory', 3_000],
          ['files/large', LARGE_FILE_BYTES],
        ]);
      });

      it('replaces the content of an existing file on getToFile instead of appending to it', async () => {
        // Proves the target file is truncated: a longer file left there before holds exactly the object afterwards.
        const target = join(fileDirectory, 'target');
        await writeFile(target, countingBytes(10_000));
        await store.put('replace/short', Uint8Array.from([9, 8, 7]));
        expect(await store.getToFile('replace/short', target)).toBe(3);
        expect(new Uint8Array(await readFile(target))).toEqual(Uint8Array.from([9, 8, 7]));
      });

      it('replaces an object as a whole when putFile writes a key again', async () => {
        // Proves putFile is an overwrite like put, even when the new file is shorter.
        const source = join(fileDirectory, 'source');
        await store.put('replace/object', countingBytes(500));
        await writeFile(source, Uint8Array.from([1, 2]));
        await store.putFile('replace/object', source);
        expect(await store.get('replace/object')).toEqual(Uint8Array.from([1, 2]));
      });

      it('fails getToFile with NotFoundError for a missing key, and putFile of a missing file with the file system error', async () => {
        // Proves a missing object is the typed NotFound on the file path too, and a missing local file stores nothing.
        expect(await rejection(store.getToFile('missing/file', join(fileDirectory, 'target')))).toBeInstanceOf(NotFoundError);
        const missingFile = await rejection(store.putFile('missing/source', join(fileDirectory, 'no-such-file')));
        expect((missingFile as NodeJS.ErrnoException).code).toBe('ENOENT');
        expect(await store.list('missing/')).toEqual([]);
      });

      it('refuses a file larger than one PutObject may carry, and empty keys, before sending anything', async () => {
        // Proves the 5 GiB limit of a single PutObject is checked up front (on a sparse file, so nothing is written or read).
        const huge = join(fileDirectory, 'huge');
        await writeFile(huge, new Uint8Array(0));
        await truncate(huge, OBJECT_PUT_BYTES_MAX + 1);
        expect((await stat(huge)).size).toBe(OBJECT_PUT_BYTES_MAX + 1);
        const refused = await rejection(store.putFile('huge', huge));
        expect(refused).toBeInstanceOf(InvalidArgumentError);
        expect((refused as Error).message).toContain('5 GiB');
        expect(await store.list('huge')).toEqual([]);

        const small = join(fileDirectory, 'small');
        await writeFile(small, Uint8Array.from([1]));
        expect(await rejection(store.putFile('', small))).toBeInstanceOf(InvalidArgumentError);
        expect(await rejection(store.getToFile('', join(fileDirectory, 'target')))).toBeInstanceOf(InvalidArgumentError);
      });
    });

    it('keeps what was put apart from the arrays the caller passes in and gets back', async () => {
      // Proves neither side shares memory with the store: mutating the input after put, or an output after get, changes nothing stored.
      const body = Uint8Array.from([1, 2, 3]);
      await store.put('copies', body);
      body[0] = 99;
      const first = await store.get('copies');
      first[1] = 99;
      expect(await store.get('copies')).toEqual(Uint8Array.from([1, 2, 3]));
    });

    it('replaces an object as a whole when the same key is put again', async () => {
      // Proves put is an overwrite, not an append or a merge, even when the new body is shorter.
      await store.put('replaced', countingBytes(100));
      await store.put('replaced', Uint8Array.from([7, 7]));
      expect(await store.get('replaced')).toEqual(Uint8Array.from([7, 7]));
    });

    it('returns exactly the bytes of ranges at the start, in the middle and at the end of an object', async () => {
      // Proves endExclusive is exclusive and translated to HTTP's inclusive last byte without an off-by-one.
      const body = countingBytes(1_000);
      await store.put('ranged', body);
      expect(await store.get('ranged', { start: 0, endExclusive: 10 })).toEqual(body.slice(0, 10));
      expect(await store.get('ranged', { start: 400, endExclusive: 613 })).toEqual(body.slice(400, 613));
      expect(await store.get('ranged', { start: 990, endExclusive: 1_000 })).toEqual(body.slice(990, 1_000));
      expect(await store.get('ranged', { start: 999, endExclusive: 1_000 })).toEqual(Uint8Array.from([body[999]]));
      expect(await store.get('ranged', { start: 0, endExclusive: 1_000 })).toEqual(body);
    });

    it('clips a range that ends beyond the object and refuses one that starts at or after its end', async () => {
      // Proves S3's range rules hold: the tail is returned when the end overshoots; a start past the data is an InvalidArgument.
      const body = countingBytes(50);
      await store.put('clipped', body);
      expect(await store.get('clipped', { start: 40, endExclusive: 5_000 })).toEqual(body.slice(40));
      expect(await rejection(store.get('clipped', { start: 50, endExclusive: 60 }))).toBeInstanceOf(InvalidArgumentError);
      expect(await rejection(store.get('clipped', { start: 70, endExclusive: 80 }))).toBeInstanceOf(InvalidArgumentError);
      // A ranged get of an empty object is left out: S3 refuses it with 416, but s3rver never answers it.
    });

    it('refuses malformed ranges and empty keys before touching any object', async () => {
      // Proves callers' bugs fail as InvalidArgument in both stores instead of as odd server answers.
      await store.put('malformed', countingBytes(10));
      for (const range of [
        { start: 5, endExclusive: 5 },
        { start: 6, endExclusive: 5 },
        { start: -1, endExclusive: 5 },
        { start: 0.5, endExclusive: 5 },
      ]) {
        expect(await rejection(store.get('malformed', range))).toBeInstanceOf(InvalidArgumentError);
      }
      expect(await rejection(store.get('', undefined))).toBeInstanceOf(InvalidArgumentError);
      expect(await rejection(store.put('', new Uint8Array(1)))).toBeInstanceOf(InvalidArgumentError);
    });

    it('fails with NotFoundError for a key that was never put or was deleted, with or without a range', async () => {
      // Proves a missing object is the typed NotFound outcome, not a generic or retried error.
      expect(await rejection(store.get('missing/never'))).toBeInstanceOf(NotFoundError);
      expect(await rejection(store.get('missing/never', { start: 0, endExclusive: 4 }))).toBeInstanceOf(NotFoundError);
      await store.put('missing/deleted', countingBytes(4));
      await store.delete(['missing/deleted']);
      expect(await rejection(store.get('missing/deleted'))).toBeInstanceOf(NotFoundError);
    });

    it('deletes exactly the listed keys and ignores keys that do not exist', async () => {
      // Proves delete is idempotent and precise: missing keys, repeats and an empty list are fine; unlisted keys stay.
      await store.put('delete/a', countingBytes(1));
      await store.put('delete/b', countingBytes(2));
      await store.put('delete/c', countingBytes(3));
      await store.delete(['delete/a', 'delete/never-existed', 'delete/c']);
      await store.delete(['delete/a']);
      await store.delete([]);
      expect(await store.list('delete/')).toEqual([{ key: 'delete/b', size: 2, lastModifiedMs: expect.any(Number) }]);
    });

    it(
      'lists more keys than one page holds, in key order with sizes, and deletes them all again',
      async () => {
        // Proves list follows continuation tokens across pages and delete splits requests above S3's 1000 keys.
        const keys = Array.from({ length: PAGED_KEY_COUNT }, (_, index) => `paged/${String(index).padStart(5, '0')}`);
        await Promise.all(keys.map((key, index) => store.put(key, countingBytes(index % 7))));

        const listed = await store.list('paged/');
        expect(listed.length).toBe(PAGED_KEY_COUNT);
        expect(listed.map((object) => object.key)).toEqual(keys);
        expect(listed.map((object) => object.size)).toEqual(keys.map((_, index) => index % 7));

        await store.delete(keys);
        expect(await store.list('paged/')).toEqual([]);
      },
      PAGED_TEST_TIMEOUT_MS,
    );

    it('lists when each object was last written, by whole seconds at least, and a rewrite moves it on', async () => {
      // Proves lastModifiedMs is the write time (servers round it down to the second): within a second of the
      // calls around the put on this host's clock, and not earlier after a later put of the same key.
      const before = Date.now();
      await store.put('modified/a', countingBytes(1));
      const after = Date.now();
      const [first] = await store.list('modified/');
      expect(first!.lastModifiedMs).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 - LISTED_TIME_MARGIN_MS);
      expect(first!.lastModifiedMs).toBeLessThanOrEqual(after + LISTED_TIME_MARGIN_MS);
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      await store.put('modified/a', countingBytes(2));
      const [second] = await store.list('modified/');
      expect(second!.lastModifiedMs).toBeGreaterThan(first!.lastModifiedMs);
    });

    it('lists only keys that start with the prefix, and everything for the empty prefix', async () => {
      // Proves prefix isolation is a plain string prefix: 'p/' excludes 'p2/x' and 'p', '' includes all.
      for (const key of ['p/1', 'p/2', 'p2/1', 'p', 'q/1']) await store.put(key, countingBytes(1));
      expect((await store.list('p/')).map((object) => object.key)).toEqual(['p/1', 'p/2']);
      expect((await store.list('p')).map((object) => object.key)).toEqual(['p', 'p/1', 'p/2', 'p2/1']);
      expect((await store.list('none/')).map((object) => object.key)).toEqual([]);
      expect((await store.list('')).map((object) => object.key)).toEqual(['p', 'p/1', 'p/2', 'p2/1', 'q/1']);
    });
  });
}
