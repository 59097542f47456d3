import { InvalidArgumentError } from '@mink/protocol';
import { lakeStoreUri } from './lake-store';

describe('lakeStoreUri', () => {
  it.each([
    ['mink-data', '', 's3://mink-data'],
    ['mink-data', 'cluster-a/', 's3://mink-data/cluster-a'],
    ['mink.data', 'a/b/', 's3://mink.data/a/b'],
  ])('gives bucket %s with prefix "%s" the URI %s', (bucket, prefix, uri) => {
    // Proves the locations manifests record are the store's keys under the bucket and prefix S3ObjectStore uses.
    expect(lakeStoreUri(bucket, prefix)).toBe(uri);
  });

  it.each([
    ['a prefix without a trailing slash', 'mink-data', 'cluster-a'],
    ['a prefix starting with a slash', 'mink-data', '/cluster-a/'],
    ['a prefix with an empty folder', 'mink-data', 'a//b/'],
    ['an empty bucket', '', ''],
    ['a bucket with a slash', 'mink/data', ''],
  ])('refuses %s', (_case, bucket, prefix) => {
    // Proves a store whose keys would not be folders of the URI is refused before any location is written.
    expect(() => lakeStoreUri(bucket, prefix)).toThrow(InvalidArgumentError);
  });
});
