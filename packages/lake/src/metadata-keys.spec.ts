import { InvalidArgumentError } from '@mink/protocol';
import { InMemoryObjectStore } from '@mink/s3stream';
import { lakeMetadataKey, parseLakeMetadataKey, publishLakeHint, readLakeHint, roundTag, tableIdOfTag } from './metadata-keys';

describe('lake metadata keys', () => {
  it.each([
    ['events', 1, 'r1', 'lake/events/metadata/v1-r1.metadata.json'],
    ['a.b-c_d', 12, 'r9007199254740991', 'lake/a.b-c_d/metadata/v12-r9007199254740991.metadata.json'],
    ['_t', 3, 'manual_1', 'lake/_t/metadata/v3-manual_1.metadata.json'],
  ])('names version %#: %s v%d by %s as %s, and parses it back', (tableName, version, tag, key) => {
    // Proves the key layout and that parsing inverts it, table names with dots and dashes included.
    expect(lakeMetadataKey(tableName, version, tag)).toBe(key);
    expect(parseLakeMetadataKey(key)).toEqual({ tableName, version, tag });
  });

  it.each([
    ['no tag', 'lake/events/metadata/v1.metadata.json'],
    ['version 0', 'lake/events/metadata/v0-r1.metadata.json'],
    ['a leading zero', 'lake/events/metadata/v01-r1.metadata.json'],
    ['a tag with a dash', 'lake/events/metadata/v1-r-1.metadata.json'],
    ['a tag that is too long', `lake/events/metadata/v1-${'r'.repeat(33)}.metadata.json`],
    ['a version beyond the safe integers', 'lake/events/metadata/v9007199254740993-r1.metadata.json'],
    ['another folder', 'lake/events/data/v1-r1.metadata.json'],
    ['a key prefix', 'x/lake/events/metadata/v1-r1.metadata.json'],
    ['a nested table folder', 'lake/a/b/metadata/v1-r1.metadata.json'],
  ])('refuses to parse a key with %s', (_case, key) => {
    // Proves a key the view holds by mistake is refused as InvalidArgumentError rather than read.
    expect(() => parseLakeMetadataKey(key)).toThrow(InvalidArgumentError);
  });

  it.each<[string, () => unknown]>([
    ['version 0', () => lakeMetadataKey('events', 0, 'r1')],
    ['a fractional version', () => lakeMetadataKey('events', 1.5, 'r1')],
    ['an empty tag', () => lakeMetadataKey('events', 1, '')],
    ['a table name with a slash', () => lakeMetadataKey('a/b', 1, 'r1')],
  ])('refuses to name a key with %s', (_case, name) => {
    // Proves nothing is written under a key the parser would not take back.
    expect(name).toThrow(InvalidArgumentError);
  });

  it('publishes hints that resolve by the v%s.metadata.json rule and only move forward', async () => {
    // Proves the free function the tiering loop calls after the log commit: the hint text, its resolution
    // by a file-system catalog reader, a late older publish leaving a newer hint, and a garbled hint replaced.
    const store = new InMemoryObjectStore();
    expect(await readLakeHint(store, 'events')).toBeNull();
    expect(await publishLakeHint(store, 'lake/events/metadata/v2-r5.metadata.json')).toBe(true);
    expect(Buffer.from(await store.get('lake/events/metadata/version-hint.text')).toString()).toBe('2-r5');
    expect(await readLakeHint(store, 'events')).toBe('lake/events/metadata/v2-r5.metadata.json');
    expect(await publishLakeHint(store, 'lake/events/metadata/v1-r4.metadata.json')).toBe(false);
    expect(await publishLakeHint(store, 'lake/events/metadata/v2-r6.metadata.json')).toBe(false);
    expect(await publishLakeHint(store, 'lake/events/metadata/v3-r6.metadata.json')).toBe(true);
    expect(await readLakeHint(store, 'events')).toBe('lake/events/metadata/v3-r6.metadata.json');
    await store.put('lake/events/metadata/version-hint.text', Buffer.from('7'));
    await expect(readLakeHint(store, 'events')).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(await publishLakeHint(store, 'lake/events/metadata/v1-r1.metadata.json')).toBe(true);
    expect(await readLakeHint(store, 'events')).toBe('lake/events/metadata/v1-r1.metadata.json');
    await expect(publishLakeHint(store, 'lake/events/metadata/v1.metadata.json')).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it('tags rounds by table id and tiering epoch, and replaces the hint of a dropped table of the same name', async () => {
    expect(roundTag(4, 17)).toBe('t4r17');
    expect([tableIdOfTag('t4r17'), tableIdOfTag('r5'), tableIdOfTag('t4')]).toEqual([4, null, null]);
    const store = new InMemoryObjectStore();
    expect(await publishLakeHint(store, 'lake/events/metadata/v9-t4r9.metadata.json')).toBe(true);
    // Table 4 was dropped and 'events' created again as table 7: its first round's hint wins.
    expect(await publishLakeHint(store, 'lake/events/metadata/v1-t7r1.metadata.json')).toBe(true);
    expect(await readLakeHint(store, 'events')).toBe('lake/events/metadata/v1-t7r1.metadata.json');
    expect(await publishLakeHint(store, 'lake/events/metadata/v1-t7r2.metadata.json')).toBe(false);
  });
});
