import {
  PARTITION_COLUMN_TYPES,
  PARTITION_INSTANT_MAX_MS,
  PARTITION_INSTANT_MIN_MS,
  PARTITION_PRECREATE_DEFAULT,
  partitionNameAt,
  partitionOfValue,
  partitionStartMs,
  partitionUnitMs,
} from './partitions';
import type { ColumnType, PartitionSpec } from './view';

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
/** 2026-12-01T17:00:00.000Z */
const DEC_1_17H = Date.UTC(2026, 11, 1, 17);
/** The last millisecond names can carry: 9999-12-31T23:59:59.999Z. */
const LAST_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

describe('partition constants', () => {
  it('precreates two partitions by default and partitions by timestamp or string columns only', () => {
    // Proves the defaults the schema, the planner and the write routing share.
    expect(PARTITION_PRECREATE_DEFAULT).toBe(2);
    expect(PARTITION_COLUMN_TYPES).toEqual(['timestamp', 'string']);
  });

  it.each<[PartitionSpec['unit'], number]>([
    ['hour', HOUR_MS],
    ['day', DAY_MS],
  ])('a partition of unit %s lasts %d ms', (unit, ms) => {
    expect(partitionUnitMs(unit)).toBe(ms);
  });
});

describe('partitionNameAt names the UTC hour or day holding an instant', () => {
  it.each<[string, PartitionSpec['unit'], number, string]>([
    ['the first instant of an hour', 'hour', DEC_1_17H, '2026120117'],
    ['the last millisecond of that hour', 'hour', DEC_1_17H + HOUR_MS - 1, '2026120117'],
    ['the first instant of the next hour', 'hour', DEC_1_17H + HOUR_MS, '2026120118'],
    ['midnight, hour 00', 'hour', Date.UTC(2026, 0, 5), '2026010500'],
    ['the last hour of a year', 'hour', Date.UTC(2025, 11, 31, 23, 30), '2025123123'],
    ['the first instant of a day', 'day', Date.UTC(2026, 11, 1), '20261201'],
    ['the last millisecond of that day', 'day', Date.UTC(2026, 11, 2) - 1, '20261201'],
    ['the first instant of the next day', 'day', Date.UTC(2026, 11, 2), '20261202'],
    ['a leap day', 'day', Date.UTC(2024, 1, 29, 12), '20240229'],
    ['the epoch', 'day', 0, '19700101'],
    ['the epoch, by hour', 'hour', 0, '1970010100'],
    ['the last millisecond names can carry', 'hour', LAST_MS, '9999123123'],
  ])('%s (%s)', (_case, unit, epochMs, name) => {
    // Proves names are UTC, padded, and change exactly at the boundary.
    expect(partitionNameAt(unit, epochMs)).toBe(name);
  });

  it.each<[string, number]>([
    ['before 1970', -1],
    ['after 9999', LAST_MS + 1],
    ['a fraction of a millisecond', 1.5],
    ['NaN', Number.NaN],
    ['beyond what a Date holds', 9e15],
  ])('throws for an instant %s, a broken invariant of its caller', (_case, epochMs) => {
    // Proves no instant ever gets a name that partitionStartMs would not read back.
    expect(() => partitionNameAt('hour', epochMs)).toThrow('invariant broken');
  });
});

describe('partitionStartMs reads a partition name back, and nothing else', () => {
  it.each<[PartitionSpec['unit'], string, number]>([
    ['hour', '2026120117', DEC_1_17H],
    ['hour', '2026010500', Date.UTC(2026, 0, 5)],
    ['hour', '2024022923', Date.UTC(2024, 1, 29, 23)],
    ['hour', '1970010100', 0],
    ['hour', '9999123123', Date.UTC(9999, 11, 31, 23)],
    ['day', '20261201', Date.UTC(2026, 11, 1)],
    ['day', '20240229', Date.UTC(2024, 1, 29)],
    ['day', '19700101', 0],
    ['day', '99991231', Date.UTC(9999, 11, 31)],
  ])('unit %s: %s starts at %d', (unit, name, start) => {
    expect(partitionStartMs(unit, name)).toBe(start);
    // The round trip: the start is named by the same name.
    expect(partitionNameAt(unit, start)).toBe(name);
  });

  it.each<[string, PartitionSpec['unit'], string]>([
    ['month 13', 'hour', '2026130101'],
    ['month 00', 'day', '20260001'],
    ['day 00', 'day', '20260100'],
    ['day 32', 'day', '20260132'],
    ['February 29 of a common year', 'hour', '2026022930'],
    ['February 29 of a common year, by day', 'day', '20260229'],
    ['April 31', 'day', '20260431'],
    ['hour 24', 'hour', '2026120124'],
    ['hour 24 of the last day names can carry', 'hour', '9999123124'],
    ['month 13 of the last year', 'day', '99991301'],
    ['a year before 1970', 'day', '19691231'],
    ['year 0000', 'hour', '0000010100'],
    ['a day name for unit hour', 'hour', '20261201'],
    ['an hour name for unit day', 'day', '2026120117'],
    ['one digit short', 'hour', '202612011'],
    ['one digit too many', 'day', '202612011'],
    ['a leading +', 'day', '+2026120'],
    ['a leading + on an hour', 'hour', '+202612011'],
    ['a leading -', 'day', '-2026120'],
    ['dashes', 'day', '2026-12-01'],
    ['spaces around it', 'day', ' 20261201'],
    ['a trailing newline', 'day', '20261201\n'],
    ['non-ASCII digits', 'day', '２０２６１２０１'],
    ['the empty string', 'hour', ''],
    ['letters', 'hour', 'p1'],
  ])('refuses %s (%s %p)', (_case, unit, name) => {
    // Proves only a name that partitionNameAt would give reads back: no rollover, no other length or sign.
    expect(partitionStartMs(unit, name)).toBeNull();
  });
});

describe('partitionOfValue places a row by its partition column, or says why not', () => {
  const hourly: PartitionSpec = { column: 'at', unit: 'hour' };
  const daily: PartitionSpec = { column: 'day', unit: 'day' };

  it.each<[string, PartitionSpec, ColumnType, unknown, string]>([
    ['a timestamp at the start of an hour', hourly, 'timestamp', DEC_1_17H, '2026120117'],
    ['a timestamp a millisecond before the next hour', hourly, 'timestamp', DEC_1_17H + HOUR_MS - 1, '2026120117'],
    ['a timestamp at the start of the next hour', hourly, 'timestamp', DEC_1_17H + HOUR_MS, '2026120118'],
    ['a timestamp by day', daily, 'timestamp', DEC_1_17H, '20261201'],
    ['the epoch', daily, 'timestamp', 0, '19700101'],
    ['the last instant names can carry', hourly, 'timestamp', LAST_MS, '9999123123'],
    ['a string holding a day name', daily, 'string', '20261201', '20261201'],
    ['a string holding an hour name', hourly, 'string', '2026120117', '2026120117'],
  ])('%s', (_case, spec, type, value, partition) => {
    expect(partitionOfValue(spec, type, value)).toEqual({ partition });
  });

  it.each<[string, PartitionSpec, ColumnType, unknown, string]>([
    ['null', hourly, 'timestamp', null, "partition column 'at' must hold a value"],
    ['a missing value', daily, 'string', undefined, "partition column 'day' must hold a value"],
    ['a timestamp before 1970', hourly, 'timestamp', -1, "partition column 'at' holds -1, outside the years 1970 to 9999"],
    ['a timestamp after 9999', hourly, 'timestamp', LAST_MS + 1, 'outside the years 1970 to 9999'],
    ['a timestamp beyond what a Date holds', hourly, 'timestamp', 9e15, "partition column 'at' holds 9000000000000000, outside the years 1970 to 9999"],
    ['a fractional timestamp', hourly, 'timestamp', 1.5, "partition column 'at' holds 1.5, not a whole number of epoch milliseconds"],
    ['NaN', hourly, 'timestamp', Number.NaN, 'not a whole number of epoch milliseconds'],
    ['a timestamp given as a string', hourly, 'timestamp', '2026120117', "partition column 'at' of type timestamp cannot hold string"],
    ['a timestamp given as a bigint', hourly, 'timestamp', 5n, 'of type timestamp cannot hold bigint'],
    ['a string that is not a name', daily, 'string', 'monday', "partition column 'day' holds 'monday', not a partition name of unit 'day' (UTC yyyyMMdd, e.g. '20261201')"],
    ['an hour name in a day-partitioned column', daily, 'string', '2026120117', "holds '2026120117', not a partition name of unit 'day'"],
    ['a day name in an hour-partitioned column', hourly, 'string', '20261201', "not a partition name of unit 'hour' (UTC yyyyMMddHH, e.g. '2026120117')"],
    ['an impossible date', daily, 'string', '20260229', "holds '20260229', not a partition name"],
    ['a number in a string column', daily, 'string', 20261201, "partition column 'day' of type string cannot hold number"],
    ['a column of another type', daily, 'int64', 20261201n, "partition column 'day' of type int64 cannot hold bigint"],
  ])('refuses %s', (_case, spec, type, value, message) => {
    const placed = partitionOfValue(spec, type, value);
    expect(placed).toEqual({ refused: expect.stringContaining(message) });
  });

  it('quotes at most 64 characters of a long string', () => {
    // Proves a huge value cannot blow up the refusal message.
    const placed = partitionOfValue(daily, 'string', 'x'.repeat(10_000));
    expect('refused' in placed && placed.refused).toContain(`'${'x'.repeat(64)}'`);
    expect('refused' in placed && placed.refused.length).toBeLessThan(200);
  });
});

describe('the instants partition names can carry', () => {
  it('run from the epoch to the last millisecond of year 9999', () => {
    // Proves the bounds the planner stops at are exactly where partitionNameAt stops naming.
    expect(new Date(PARTITION_INSTANT_MIN_MS).toISOString()).toBe('1970-01-01T00:00:00.000Z');
    expect(new Date(PARTITION_INSTANT_MAX_MS).toISOString()).toBe('9999-12-31T23:59:59.999Z');
    expect(partitionNameAt('day', PARTITION_INSTANT_MAX_MS)).toBe('99991231');
    expect(() => partitionNameAt('day', PARTITION_INSTANT_MAX_MS + 1)).toThrow('invariant broken');
  });
});
