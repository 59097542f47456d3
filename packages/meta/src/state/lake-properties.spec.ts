import { checkLakeProperties, checkLakeSpec, lakeBucketOf, lakeSettingsOf, streamBucketOfLake } from './lake-properties';

describe('lake and retention properties', () => {
  it.each([
    [{}, { enabled: false, freshnessMs: 180_000, logTtlMs: 604_800_000 }],
    [{ 'table.datalake.enabled': 'true' }, { enabled: true, freshnessMs: 180_000, logTtlMs: 604_800_000 }],
    [{ 'table.datalake.enabled': 'false', 'table.datalake.freshness': '30s' }, { enabled: false, freshnessMs: 30_000, logTtlMs: 604_800_000 }],
    [{ 'table.datalake.freshness': '1500', 'table.log.ttl': '2d' }, { enabled: false, freshnessMs: 1_500, logTtlMs: 172_800_000 }],
    [{ 'table.log.ttl': '0' }, { enabled: false, freshnessMs: 180_000, logTtlMs: null }],
    [{ 'table.log.ttl': '12h', 'other.property': 'kept' }, { enabled: false, freshnessMs: 180_000, logTtlMs: 43_200_000 }],
  ])('%j reads as %j', (properties, settings) => {
    expect(lakeSettingsOf(properties)).toEqual(settings);
    expect(checkLakeProperties(properties)).toBeNull();
  });

  it.each([
    [{ 'table.datalake.enabled': 'yes' }, "property 'table.datalake.enabled' must be 'true' or 'false', got 'yes'"],
    [{ 'table.datalake.freshness': 'soon' }, "property 'table.datalake.freshness': 'soon' is not a duration"],
    [{ 'table.datalake.freshness': '0' }, "property 'table.datalake.freshness': '0' must be greater than zero"],
    [{ 'table.log.ttl': '-1d' }, "property 'table.log.ttl': '-1d' is not a duration"],
    [{ 'table.log.ttl': '0d' }, "property 'table.log.ttl': '0d' must be greater than zero"],
  ])('%j is refused: %s', (properties, message) => {
    expect(checkLakeProperties(properties)).toContain(message);
  });

  it.each([
    [{ name: 't', columns: [{ name: 'a', type: 'int64' as const }], buckets: 1, properties: { 'table.datalake.enabled': 'true' } }, null],
    [
      { name: 't', columns: [{ name: 'a', type: 'timestamp' as const }], buckets: 1, partition: { column: 'a', unit: 'day' as const }, properties: { 'table.datalake.enabled': 'true' } },
      null,
    ],
    [
      { name: 't', columns: [{ name: 'a', type: 'int64' as const }], buckets: 1, properties: { 'table.datalake.enabled': 'true', 'table.log.format': 'kafka' } },
      "a Kafka topic cannot have 'table.datalake.enabled' yet",
    ],
    [{ name: 't', columns: [{ name: 'a', type: 'int64' as const }], buckets: 1, properties: { 'table.datalake.enabled': 'false', 'table.log.format': 'kafka' } }, null],
  ])('a spec %j: %s', (spec, message) => {
    expect(checkLakeSpec(spec)).toBe(message);
  });

  describe('lake buckets', () => {
    const plain = { buckets: 8 };
    const hourly = { buckets: 8, partition: { column: 'at', unit: 'hour' as const } };
    const daily = { buckets: 3, partition: { column: 'day', unit: 'day' as const } };

    it.each<[string, { buckets: number; partition?: { column: string; unit: 'hour' | 'day' } }, string | null, number, number | null]>([
      ['an unpartitioned bucket is its number', plain, null, 5, 5],
      ['an unpartitioned table has no partition buckets', plain, '2026120117', 5, null],
      ['a partitioned table needs a partition', hourly, null, 5, null],
      ['the first hour of the epoch', hourly, '1970010100', 0, 0],
      ['hours since the epoch times the buckets plus the bucket', hourly, '2026120117', 3, 498_929 * 8 + 3],
      ['days since the epoch times the buckets plus the bucket', daily, '20261201', 2, 20_788 * 3 + 2],
      ['a name of another unit', daily, '2026120117', 0, null],
      ['a name that is not a time', hourly, '2026133117', 0, null],
      ['past what an Iceberg int holds', { buckets: 1024, partition: { column: 'at', unit: 'hour' as const } }, '22100101000', 0, null],
    ])('%s', (_case, table, partition, bucket, expected) => {
      expect(lakeBucketOf(table, partition, bucket)).toBe(expected);
      if (expected !== null) expect(streamBucketOfLake(table, expected)).toEqual({ partition, bucket });
    });

    it('gives every bucket of every partition its own lake bucket, and reads each back', () => {
      const seen = new Map<number, string>();
      for (let hour = 0; hour < 72; hour++) {
        const partition = new Date(Date.UTC(2026, 11, 1) + hour * 3_600_000).toISOString().slice(0, 13).replace(/[-T]/g, '');
        for (let bucket = 0; bucket < hourly.buckets; bucket++) {
          const lakeBucket = lakeBucketOf(hourly, partition, bucket)!;
          expect(seen.has(lakeBucket)).toBe(false);
          seen.set(lakeBucket, `${partition}/${bucket}`);
          expect(streamBucketOfLake(hourly, lakeBucket)).toEqual({ partition, bucket });
        }
      }
    });
  });
});
