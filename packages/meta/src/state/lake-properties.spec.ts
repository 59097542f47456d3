import { checkLakeProperties, checkLakeSpec, lakeSettingsOf } from './lake-properties';

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
      "a partitioned table cannot have 'table.datalake.enabled' yet",
    ],
    [
      { name: 't', columns: [{ name: 'a', type: 'int64' as const }], buckets: 1, properties: { 'table.datalake.enabled': 'true', 'table.log.format': 'kafka' } },
      "a Kafka topic cannot have 'table.datalake.enabled' yet",
    ],
    [{ name: 't', columns: [{ name: 'a', type: 'int64' as const }], buckets: 1, properties: { 'table.datalake.enabled': 'false', 'table.log.format': 'kafka' } }, null],
  ])('a spec %j: %s', (spec, message) => {
    expect(checkLakeSpec(spec)).toBe(message);
  });
});
