import { InvalidArgumentError } from '@mink/protocol';
import { InMemoryObjectStore } from '@mink/s3stream';
import { type LakeObjectName, lakeMetadataKey, lakeObjectOf, parseLakeMetadataKey, publishLakeHint, readLakeHint, roundTag, tableIdOfTag } from './metadata-keys';

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

  const uuid = '0b6f1c1e-7d1f-4c55-9a55-2f0e1f7f0a01';
  it.each<[string, LakeObjectName]>([
    ['lake/events/metadata/v12-t4r9.metadata.json', { kind: 'metadata', tag: 't4r9' }],
    ['lake/events/metadata/version-hint.text', { kind: 'hint', tag: null }],
    [`lake/events/metadata/snap-281474976710655-t4r9-${uuid}.avro`, { kind: 'manifest-list', tag: 't4r9' }],
    [`lake/events/metadata/t4r9-${uuid}-m0.avro`, { kind: 'manifest', tag: 't4r9' }],
    [`lake/events/metadata/t4r9-${uuid}-m17.avro`, { kind: 'manifest', tag: 't4r9' }],
    [`lake/events/data/__bucket=3/t4r9-100-199-${uuid}.parquet`, { kind: 'data', tag: 't4r9' }],
    [`lake/events/data/__bucket=0/r2-0-9-${uuid}.parquet`, { kind: 'data', tag: 'r2' }],
    ['lake/events/metadata/v1.metadata.json', { kind: 'other', tag: null }],
    [`lake/events/data/t4r9-0-9-${uuid}.parquet`, { kind: 'other', tag: null }],
    [`lake/events/data/__bucket=0/t4r9-0-9-${uuid}.parquet.tmp`, { kind: 'other', tag: null }],
    [`lake/events/metadata/${'t'.repeat(33)}-${uuid}-m0.avro`, { kind: 'other', tag: null }],
    [`lake/events2/metadata/t4r9-${uuid}-m0.avro`, { kind: 'other', tag: null }],
    [`lake/other/metadata/t4r9-${uuid}-m0.avro`, { kind: 'other', tag: null }],
    ['lake/events/notes.txt', { kind: 'other', tag: null }],
    ['wal/events/metadata/v1-t4r9.metadata.json', { kind: 'other', tag: null }],
  ])('names %s of table events by its kind and round', (key, expected) => {
    // Proves orphan removal recognises exactly the names IcebergTable gives, and nothing of another folder.
    expect(lakeObjectOf('events', key)).toEqual(expected);
  });
});
