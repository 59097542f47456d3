import type { DataFile } from '@mink/lake';
import { CliError } from './io';
import { lakeFileListing, lakeOfTable, noLakeReason, renderLakeFiles, requireLake, type DescribedTable } from './lake-tables';

describe('lakeOfTable and requireLake', () => {
  // Proves that a table's lake is the metadata object the log names, and that each way of having none is
  // told in one line that says what to do.
  const columns = [{ name: 'id', type: 'int64' as const }];
  it.each<[string, DescribedTable, string | null]>([
    ['a committed round', { name: 't', columns, properties: { 'table.datalake.enabled': 'true' }, lake: { metadataKey: 'lake/t/metadata/v3-t1r3.metadata.json' } }, null],
    ['the lake off', { name: 't', columns, properties: {} }, "table 't' has no lake: table.datalake.enabled is not true (mink table alter t --property table.datalake.enabled=true)"],
    ['the lake switched off again, its old lake kept', { name: 't', columns, properties: { 'table.datalake.enabled': 'false' }, lake: { metadataKey: null } }, "table 't' has no lake: table.datalake.enabled is not true (mink table alter t --property table.datalake.enabled=true)"],
    ['on, no round committed', { name: 't', columns, properties: { 'table.datalake.enabled': 'true', 'table.datalake.freshness': '1h' } }, "table 't' has no lake yet: no tiering round has committed (rounds are due every 1h)"],
    ['on, a round started, none committed, default freshness', { name: 't', columns, properties: { 'table.datalake.enabled': 'true' }, lake: { metadataKey: null } }, "table 't' has no lake yet: no tiering round has committed (rounds are due every 3m)"],
  ])('%s', (_name, described, error) => {
    if (error === null) {
      expect(requireLake('t', described)).toEqual({ table: 't', metadataKey: 'lake/t/metadata/v3-t1r3.metadata.json', columns, primaryKey: [] });
      return;
    }
    expect(lakeOfTable('t', described)).toBeNull();
    expect(() => requireLake('t', described)).toThrow(new CliError(error));
    expect(`table 't' ${noLakeReason(described)}`).toBe(error);
  });

  it('reads a table switched off with a committed lake as having its lake', () => {
    // The lake stays readable: its files are still the table's tiered records.
    expect(lakeOfTable('t', { properties: {}, lake: { metadataKey: 'lake/t/metadata/v1-t1r1.metadata.json' } })?.metadataKey).toBe('lake/t/metadata/v1-t1r1.metadata.json');
  });
});

describe('lakeFileListing and renderLakeFiles', () => {
  const file = (bucket: number, name: string, recordCount: number, fileSizeBytes: number): DataFile =>
    ({ path: `s3://mink/lake/t/data/__bucket=${bucket}/${name}.parquet`, bucket, recordCount, fileSizeBytes }) as DataFile;
  const keyOf = (path: string) => path.slice('s3://mink/'.length);
  const lake = { table: 't', metadataKey: 'lake/t/metadata/v2-t1r2.metadata.json' };

  it('lists files by bucket, then key, and sums them up', () => {
    const listing = lakeFileListing(lake, 's3://mink', 42, [file(1, 'r2-0-9', 10, 900), file(0, 'r2-5-9', 5, 500), file(0, 'r1-0-4', 5, 480)], keyOf);
    expect(listing).toEqual({
      table: 't',
      metadataKey: 'lake/t/metadata/v2-t1r2.metadata.json',
      metadataLocation: 's3://mink/lake/t/metadata/v2-t1r2.metadata.json',
      snapshotId: 42,
      files: [
        { key: 'lake/t/data/__bucket=0/r1-0-4.parquet', path: 's3://mink/lake/t/data/__bucket=0/r1-0-4.parquet', bucket: 0, records: 5, bytes: 480 },
        { key: 'lake/t/data/__bucket=0/r2-5-9.parquet', path: 's3://mink/lake/t/data/__bucket=0/r2-5-9.parquet', bucket: 0, records: 5, bytes: 500 },
        { key: 'lake/t/data/__bucket=1/r2-0-9.parquet', path: 's3://mink/lake/t/data/__bucket=1/r2-0-9.parquet', bucket: 1, records: 10, bytes: 900 },
      ],
    });
    expect(renderLakeFiles(listing)).toBe(
      [
        'KEY                                    BUCKET  RECORDS  BYTES',
        'lake/t/data/__bucket=0/r1-0-4.parquet  0       5        480',
        'lake/t/data/__bucket=0/r2-5-9.parquet  0       5        500',
        'lake/t/data/__bucket=1/r2-0-9.parquet  1       10       900',
        '3 files, 20 records, 1880 bytes in snapshot 42 of s3://mink/lake/t/metadata/v2-t1r2.metadata.json',
      ].join('\n'),
    );
  });

  it('says so when the snapshot holds no file', () => {
    expect(renderLakeFiles(lakeFileListing(lake, 's3://mink', 43, [], keyOf))).toBe('0 files, 0 records, 0 bytes in snapshot 43 of s3://mink/lake/t/metadata/v2-t1r2.metadata.json');
  });
});
