import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidArgumentError } from '@mink/protocol';
import { compareBytes } from './bytes';
import type { KvSnapshot, KvTablet, KvWrite } from './kv-tablet';

/** How the contract suite makes, and restores from snapshots, one implementation of the port. */
export interface KvTabletHarness {
  open(directory: string): Promise<KvTablet>;
  /** Opens a tablet in `directory` from the snapshot written into `snapshotDirectory`. */
  restore(snapshotDirectory: string, snapshot: KvSnapshot, directory: string): Promise<KvTablet>;
}

export const bytes = (...values: number[]): Uint8Array => Uint8Array.from(values);
export const text = (value: string): Uint8Array => Buffer.from(value, 'utf8');
const hex = (value: Uint8Array | undefined): string | undefined => (value === undefined ? undefined : Buffer.from(value).toString('hex'));
const entriesAsHex = (entries: { key: Uint8Array; value: Uint8Array }[]): [string, string][] =>
  entries.map(({ key, value }) => [hex(key)!, hex(value)!]);

/** Runs the behaviour every `KvTablet` must share against the implementation `harness` makes. */
export function describeKvTabletContract(name: string, harness: KvTabletHarness): void {
  describe(`${name} (KvTablet contract)`, () => {
    let workDirectory: string;
    const opened: KvTablet[] = [];
    const open = async (directoryName = 'tablet'): Promise<KvTablet> => {
      const tablet = await harness.open(join(workDirectory, directoryName));
      opened.push(tablet);
      return tablet;
    };

    beforeEach(async () => {
      workDirectory = await mkdtemp(join(tmpdir(), 'mink-kv-'));
    });
    afterEach(async () => {
      for (const tablet of opened.splice(0)) await tablet.close().catch(() => undefined);
      await rm(workDirectory, { recursive: true, force: true });
    });

    it('starts empty at offset 0', async () => {
      // Proves a new tablet holds no entries and asks replay to start at the first changelog offset.
      const tablet = await open();
      expect(tablet.appliedOffset()).toBe(0);
      expect(tablet.get(text('a'))).toBeUndefined();
      expect(tablet.scanPrefix(new Uint8Array(0), 10)).toEqual([]);
    });

    it('puts, overwrites and deletes through apply, the last write of a key in a batch winning', async () => {
      // Proves upsert and delete semantics, including several writes to one key in one batch.
      const tablet = await open();
      await tablet.apply([{ key: text('a'), value: text('1') }, { key: text('b'), value: text('2') }], 1);
      await tablet.apply(
        [
          { key: text('a'), value: text('3') },
          { key: text('b'), value: null },
          { key: text('c'), value: text('4') },
          { key: text('c'), value: text('5') },
          { key: text('d'), value: text('6') },
          { key: text('d'), value: null },
          { key: text('missing'), value: null },
          { key: text('empty'), value: new Uint8Array(0) },
        ],
        2,
      );
      expect(hex(tablet.get(text('a')))).toBe(hex(text('3')));
      expect(tablet.get(text('b'))).toBeUndefined();
      expect(hex(tablet.get(text('c')))).toBe(hex(text('5')));
      expect(tablet.get(text('d'))).toBeUndefined();
      expect(hex(tablet.get(text('empty')))).toBe('');
      expect(tablet.appliedOffset()).toBe(2);
    });

    it('returns copies that later writes, reads and caller changes do not alter', async () => {
      // Proves returned and passed-in byte arrays share no memory with the tablet.
      const tablet = await open();
      const value = text('original');
      await tablet.apply([{ key: text('k'), value }, { key: text('l'), value: text('other') }], 1);
      value.fill(0);
      const first = tablet.get(text('k'))!;
      tablet.get(text('l'));
      await tablet.apply([{ key: text('k'), value: text('changed') }], 2);
      expect(Buffer.from(first).toString()).toBe('original');
      first.fill(0);
      expect(Buffer.from(tablet.get(text('k'))!).toString()).toBe('changed');
    });

    it('returns getMany values in key order with misses as undefined', async () => {
      // Proves a batched lookup keeps the caller's order, repeats and misses.
      const tablet = await open();
      await tablet.apply([{ key: text('x'), value: text('1') }, { key: text('y'), value: text('2') }], 1);
      const values = tablet.getMany([text('y'), text('nope'), text('x'), text('y')]);
      expect(values.map(hex)).toEqual([hex(text('2')), undefined, hex(text('1')), hex(text('2'))]);
      expect(tablet.getMany([])).toEqual([]);
    });

    it('scans a prefix in bytewise order, including 0x00 and 0xff bytes, and honours the limit', async () => {
      // Proves prefix bounds are exact at 0x00/0xff edges and that order is unsigned bytewise, shorter first.
      const tablet = await open();
      const keys = [
        bytes(0x01),
        bytes(0x01, 0x00),
        bytes(0x01, 0x00, 0x00),
        bytes(0x01, 0x7f),
        bytes(0x01, 0x80),
        bytes(0x01, 0xff),
        bytes(0x01, 0xff, 0xff),
        bytes(0x02),
        bytes(0x00, 0xff),
        bytes(0xff),
        bytes(0xff, 0x00),
        bytes(0xff, 0xff, 0x01),
      ];
      // Applied in a shuffled order so the tablet, not the input, has to produce the order.
      const shuffled = [...keys].reverse();
      await tablet.apply(shuffled.map((key, index) => ({ key, value: bytes(index) })), 1);
      const scanned = (prefix: Uint8Array, limit: number): (string | undefined)[] =>
        tablet.scanPrefix(prefix, limit).map((entry) => hex(entry.key));
      const sortedHex = (selected: Uint8Array[]): (string | undefined)[] => [...selected].sort(compareBytes).map(hex);

      expect(scanned(bytes(0x01), 100)).toEqual(['01', '0100', '010000', '017f', '0180', '01ff', '01ffff']);
      expect(scanned(bytes(0x01, 0x00), 100)).toEqual(['0100', '010000']);
      expect(scanned(bytes(0x01, 0xff), 100)).toEqual(['01ff', '01ffff']);
      expect(scanned(bytes(0xff), 100)).toEqual(['ff', 'ff00', 'ffff01']);
      expect(scanned(bytes(0xff, 0xff), 100)).toEqual(['ffff01']);
      expect(scanned(bytes(0x00), 100)).toEqual(['00ff']);
      expect(scanned(bytes(0x03), 100)).toEqual([]);
      expect(scanned(new Uint8Array(0), 100)).toEqual(sortedHex(keys));
      expect(scanned(bytes(0x01), 3)).toEqual(['01', '0100', '010000']);
      expect(scanned(bytes(0x01), 0)).toEqual([]);
      // Paging: keys after the one given, within the prefix, whether or not `after` is a stored key.
      const after = (prefix: Uint8Array, limit: number, from: Uint8Array): (string | undefined)[] => tablet.scanPrefix(prefix, limit, from).map((entry) => hex(entry.key));
      expect(after(bytes(0x01), 2, bytes(0x01, 0x00))).toEqual(['010000', '017f']);
      expect(after(bytes(0x01), 100, bytes(0x01, 0x00, 0x01))).toEqual(['017f', '0180', '01ff', '01ffff']);
      expect(after(bytes(0x01), 100, bytes(0x01, 0xff, 0xff))).toEqual([]);
      expect(after(bytes(0x01), 100, bytes(0x00))).toEqual(['01', '0100', '010000', '017f', '0180', '01ff', '01ffff']);
      expect(after(bytes(0x01), 100, bytes(0x02))).toEqual([]);
      expect(after(new Uint8Array(0), 3, bytes(0x01, 0xff))).toEqual(['01ffff', '02', 'ff']);
      const paged: (string | undefined)[] = [];
      let last: Uint8Array | undefined;
      for (;;) {
        const page = tablet.scanPrefix(new Uint8Array(0), 4, last);
        if (page.length === 0) break;
        paged.push(...page.map((entry) => hex(entry.key)));
        last = page.at(-1)!.key;
      }
      expect(paged).toEqual(sortedHex(keys));
      const values = tablet.scanPrefix(bytes(0x01, 0x80), 10).map((entry) => hex(entry.value));
      expect(values).toEqual([hex(bytes(shuffled.findIndex((key) => hex(key) === '0180')))]);
    });

    it('rejects invalid keys, limits and offsets without writing anything', async () => {
      // Proves a rejected batch is all-or-nothing: neither its valid writes nor its offset land.
      const tablet = await open();
      await tablet.apply([{ key: text('kept'), value: text('1') }], 5);
      await expect(tablet.apply([{ key: text('new'), value: text('2') }, { key: new Uint8Array(0), value: text('3') }], 6)).rejects.toBeInstanceOf(
        InvalidArgumentError,
      );
      await expect(tablet.apply([{ key: new Uint8Array(1979), value: text('3') }], 6)).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(tablet.apply([{ key: text('new'), value: text('2') }], -1)).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(tablet.apply([{ key: text('new'), value: text('2') }], 4)).rejects.toThrow('went backwards');
      expect(() => tablet.scanPrefix(new Uint8Array(0), -1)).toThrow(InvalidArgumentError);
      expect(() => tablet.get(new Uint8Array(0))).toThrow(InvalidArgumentError);
      expect(tablet.get(text('new'))).toBeUndefined();
      expect(tablet.appliedOffset()).toBe(5);
      expect(tablet.scanPrefix(new Uint8Array(0), 10).map((entry) => hex(entry.key))).toEqual([hex(text('kept'))]);
    });

    it('makes a batch and its offset visible together to readers polling while it commits', async () => {
      // Proves atomicity as a reader sees it: offset 2 is never seen without all of batch 2, nor the reverse.
      const tablet = await open();
      const count = 20_000;
      const key = (index: number): Uint8Array => text(`key-${String(index).padStart(6, '0')}`);
      await tablet.apply([{ key: key(0), value: text('old') }], 1);
      const batch: KvWrite[] = Array.from({ length: count }, (_, index) => ({ key: key(index), value: text('new') }));
      let done = false;
      const applying = tablet.apply(batch, 2).then(() => (done = true));
      const observations: string[] = [];
      while (!done) {
        const offset = tablet.appliedOffset();
        const [first, last] = tablet.getMany([key(0), key(count - 1)]);
        observations.push(`${offset}:${Buffer.from(first ?? []).toString()}:${last === undefined ? '-' : Buffer.from(last).toString()}`);
        await new Promise((resolve) => setImmediate(resolve));
      }
      await applying;
      observations.push(`${tablet.appliedOffset()}:${Buffer.from(tablet.get(key(0))!).toString()}:${Buffer.from(tablet.get(key(count - 1))!).toString()}`);
      expect(new Set(observations)).toEqual(new Set(observations.filter((seen) => seen === '1:old:-' || seen === '2:new:new')));
      expect(observations[observations.length - 1]).toBe('2:new:new');
    });

    it('restores from a snapshot taken during concurrent applies exactly the state at the snapshot offset', async () => {
      // Proves a snapshot is consistent while writes continue and that its offset names exactly the state copied.
      const tablet = await open();
      const keyCount = 2_000;
      const key = (index: number): Uint8Array => text(`row-${String(index).padStart(5, '0')}`);
      /** The expected full contents after each offset, as hex pairs, built by a model of the batches. */
      const model = new Map<string, string>();
      const stateAt = new Map<number, [string, string][]>();
      const record = (offset: number): void => {
        stateAt.set(offset, [...model.entries()].sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0)));
      };
      const batchFor = (offset: number): KvWrite[] =>
        Array.from({ length: keyCount }, (_, index) => {
          // Every batch rewrites each key with its offset and deletes a rotating tenth, so states differ.
          const value = (index + offset) % 10 === 0 ? null : text(`v${offset}`);
          return { key: key(index), value };
        });
      const applyModelled = (offset: number): Promise<void> => {
        const batch = batchFor(offset);
        for (const write of batch) {
          if (write.value === null) model.delete(hex(write.key)!);
          else model.set(hex(write.key)!, hex(write.value)!);
        }
        record(offset);
        return tablet.apply(batch, offset);
      };
      record(0);
      await applyModelled(1);
      // Snapshots start while applies are in flight, so each copy races commits; each must still equal the
      // modelled state at the offset it reports.
      const snapshotting: Promise<{ snapshot: KvSnapshot; directory: string }>[] = [];
      const concurrent: Promise<void>[] = [];
      for (let offset = 2; offset <= 20; offset++) {
        concurrent.push(applyModelled(offset));
        if (offset % 6 === 0) {
          const directory = join(workDirectory, `snapshot-${offset}`);
          snapshotting.push(tablet.snapshot(directory).then((snapshot) => ({ snapshot, directory })));
        }
        // Spreading the applies over time lets copies start between commits rather than after all of them.
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
      const snapshots = await Promise.all(snapshotting);
      await Promise.all(concurrent);
      expect(entriesAsHex(tablet.scanPrefix(new Uint8Array(0), 10 * keyCount))).toEqual(stateAt.get(20));

      for (const [index, { snapshot, directory }] of snapshots.entries()) {
        expect(snapshot.files.length).toBeGreaterThan(0);
        expect(snapshot.bytes).toBeGreaterThan(0);
        expect(stateAt.has(snapshot.appliedOffset)).toBe(true);
        const restored = await harness.restore(directory, snapshot, join(workDirectory, `restored-${index}`));
        opened.push(restored);
        expect(restored.appliedOffset()).toBe(snapshot.appliedOffset);
        expect(entriesAsHex(restored.scanPrefix(new Uint8Array(0), 10 * keyCount))).toEqual(stateAt.get(snapshot.appliedOffset));
        // A restored tablet replays the rest of the changelog from its own offset and reaches the same state.
        for (let offset = snapshot.appliedOffset + 1; offset <= 20; offset++) await restored.apply(batchFor(offset), offset);
        expect(entriesAsHex(restored.scanPrefix(new Uint8Array(0), 10 * keyCount))).toEqual(stateAt.get(20));
        expect(restored.appliedOffset()).toBe(20);
      }
    });

    it('refuses to snapshot into a directory that holds files', async () => {
      // Proves a snapshot never mixes its files with leftovers of another.
      const tablet = await open();
      await tablet.apply([{ key: text('a'), value: text('1') }], 1);
      await tablet.snapshot(join(workDirectory, 'snapshot'));
      await expect(tablet.snapshot(join(workDirectory, 'snapshot'))).rejects.toBeInstanceOf(InvalidArgumentError);
    });
  });
}
