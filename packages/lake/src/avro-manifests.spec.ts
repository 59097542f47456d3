import { ENTRY_STATUS, type ManifestEntry, type ManifestFile, decodeManifest, decodeManifestList, encodeManifest, encodeManifestList } from './avro-manifests';
import { type DataFile, intBound, longBound } from './data-file';
import { icebergSchemaOf } from './iceberg-schema';
import { partitionSpecOf } from './table-metadata';

const SCHEMA = icebergSchemaOf([{ name: 'id', type: 'int64' }], ['id']);
const CONTEXT = { schema: SCHEMA, partitionSpec: partitionSpecOf(SCHEMA) };

function dataFile(bucket: number, path: string): DataFile {
  return {
    path,
    bucket,
    recordCount: 10,
    fileSizeBytes: 1234,
    columnSizes: new Map([[1, 100], [3, 40]]),
    valueCounts: new Map([[1, 10], [3, 10]]),
    nullValueCounts: new Map([[1, 0], [3, 0]]),
    lowerBounds: new Map([[3, longBound(0)]]),
    upperBounds: new Map([[3, longBound(9)]]),
    splitOffsets: [4],
  };
}

/** Every `field-id` and `element-id` attribute of an Avro schema, depth first. */
function idsOf(schema: unknown): number[] {
  if (Array.isArray(schema)) return schema.flatMap(idsOf);
  if (typeof schema !== 'object' || schema === null) return [];
  const node = schema as Record<string, unknown>;
  const own = ['field-id', 'element-id'].filter((key) => typeof node[key] === 'number').map((key) => node[key] as number);
  return [...own, ...Object.entries(node).filter(([key]) => key !== 'field-id' && key !== 'element-id').flatMap(([, value]) => idsOf(value))];
}

describe('manifests', () => {
  const entries: ManifestEntry[] = [
    { status: ENTRY_STATUS.added, snapshotId: 7, sequenceNumber: null, fileSequenceNumber: null, dataFile: dataFile(0, 's3://b/lake/t/data/a.parquet') },
    { status: ENTRY_STATUS.deleted, snapshotId: 8, sequenceNumber: 2, fileSequenceNumber: 2, dataFile: dataFile(3, 's3://b/lake/t/data/b.parquet') },
  ];

  it('round-trips entries, with inherited (null) and explicit sequence numbers', async () => {
    // Proves what commit writes is what dataFiles reads back: paths, partitions, counts, bounds, statuses.
    const { entries: read } = await decodeManifest(await encodeManifest(CONTEXT, entries));
    expect(read).toEqual(entries);
  });

  it('carries the header keys the v2 spec requires and the spec field ids in its Avro schema', async () => {
    // Proves Iceberg readers find the table schema, partition spec and content type, and can project the
    // entries by field id (manifest_entry 0-4, data_file 100-140, map key/value ids, partition field 1000).
    const { metadata } = await decodeManifest(await encodeManifest(CONTEXT, entries));
    expect(JSON.parse(metadata.get('schema')!)).toEqual(SCHEMA);
    expect(JSON.parse(metadata.get('partition-spec')!)).toEqual([{ name: '__bucket', transform: 'identity', 'source-id': 2, 'field-id': 1000 }]);
    expect(Object.fromEntries([...metadata].filter(([key]) => ['schema-id', 'partition-spec-id', 'format-version', 'content', 'avro.codec'].includes(key)))).toEqual({
      'schema-id': '0',
      'partition-spec-id': '0',
      'format-version': '2',
      content: 'data',
      'avro.codec': 'deflate',
    });
    expect(idsOf(JSON.parse(metadata.get('avro.schema')!)).sort((a, b) => a - b)).toEqual(
      [0, 1, 2, 3, 4, 100, 101, 102, 103, 104, 108, 109, 110, 117, 118, 119, 120, 121, 122, 125, 126, 127, 128, 129, 130, 131, 132, 133, 134, 135, 136, 137, 138, 139, 140, 1000].sort(
        (a, b) => a - b,
      ),
    );
  });
});

describe('manifest lists', () => {
  const manifests: ManifestFile[] = [
    {
      path: 's3://b/lake/t/metadata/x-m0.avro',
      length: 4321,
      partitionSpecId: 0,
      content: 0,
      sequenceNumber: 3,
      minSequenceNumber: 1,
      addedSnapshotId: 99,
      addedFilesCount: 1,
      existingFilesCount: 2,
      deletedFilesCount: 1,
      addedRowsCount: 10,
      existingRowsCount: 20,
      deletedRowsCount: 5,
      partitions: [{ containsNull: false, lowerBound: intBound(0), upperBound: intBound(7) }],
    },
  ];

  it('round-trips manifest files and records the snapshot in the header', async () => {
    // Proves the manifest list commit writes is the one dataFiles walks, and that its schema carries ids 500-519.
    const { manifests: read, metadata } = await decodeManifestList(await encodeManifestList({ snapshotId: 99, parentSnapshotId: 98, sequenceNumber: 3 }, manifests));
    expect(read).toEqual(manifests);
    expect([metadata.get('snapshot-id'), metadata.get('parent-snapshot-id'), metadata.get('sequence-number'), metadata.get('format-version')]).toEqual(['99', '98', '3', '2']);
    expect(idsOf(JSON.parse(metadata.get('avro.schema')!)).sort((a, b) => a - b)).toEqual([500, 501, 502, 503, 504, 505, 506, 507, 508, 509, 510, 511, 512, 513, 514, 515, 516, 517, 518, 519]);
  });

  it('writes a readable file for a snapshot without manifests', async () => {
    // Proves a snapshot that removed every file still has a valid (empty) manifest list.
    const { manifests: read, metadata } = await decodeManifestList(await encodeManifestList({ snapshotId: 1, parentSnapshotId: null, sequenceNumber: 1 }, []));
    expect(read).toEqual([]);
    expect(metadata.get('parent-snapshot-id')).toBe('null');
  });
});
