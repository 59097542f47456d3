import { icebergSchemaOf } from './iceberg-schema';
import { LAKE_LIMITS } from './lake-limits';
import {
  type Snapshot,
  type SummaryChange,
  TIERED_OFFSETS_SUMMARY_KEY,
  currentSnapshotOf,
  mergeTieredOffsets,
  newTableMetadata,
  partitionSpecOf,
  retainedMetadataFilesOf,
  snapshotSummaryOf,
  tieredOffsetsOf,
  tieredOffsetsText,
  withSnapshot,
} from './table-metadata';

const SCHEMA = icebergSchemaOf([{ name: 'v', type: 'string' }]);
const LOCATION = 's3://bucket/lake/t';

describe('tieredOffsetsOf', () => {
  it.each<[string, Record<string, string>, [number, number][]]>([
    ['a summary without the key', { operation: 'append' }, []],
    ['no buckets', { [TIERED_OFFSETS_SUMMARY_KEY]: '{}' }, []],
    ['two buckets', { [TIERED_OFFSETS_SUMMARY_KEY]: '{"0":120,"7":3}' }, [[0, 120], [7, 3]]],
  ])('reads %s', (_case, summary, offsets) => {
    // Proves the per-bucket offsets come back from a summary exactly as written.
    expect([...tieredOffsetsOf(summary)]).toEqual(offsets);
  });

  it.each<[string, string]>([
    ['an array', '[1,2]'],
    ['a negative offset', '{"0":-1}'],
    ['a fractional offset', '{"0":1.5}'],
    ['an offset as a string', '{"0":"5"}'],
    ['a bucket that is not a number', '{"x":5}'],
    ['a bucket with a leading zero', '{"01":5}'],
    ['a negative bucket', '{"-1":5}'],
  ])('refuses %s', (_case, text) => {
    // Proves a corrupt summary fails loudly instead of being read as some other tiering state.
    expect(() => tieredOffsetsOf({ [TIERED_OFFSETS_SUMMARY_KEY]: text })).toThrow(TIERED_OFFSETS_SUMMARY_KEY);
  });
});

describe('mergeTieredOffsets', () => {
  it.each<[string, [number, number][], [number, number][], [number, number][]]>([
    ['the first round', [], [[1, 10]], [[1, 10]]],
    ['a round of another bucket keeps the others', [[0, 5]], [[1, 10]], [[0, 5], [1, 10]]],
    ['a round that advances a bucket', [[0, 5], [1, 10]], [[1, 25]], [[0, 5], [1, 25]]],
    ['a round that tiered nothing new', [[0, 5]], [[0, 5]], [[0, 5]]],
    ['an empty round', [[0, 5]], [], [[0, 5]]],
  ])('merges %s', (_case, previous, round, merged) => {
    // Proves the summary always holds every bucket ever tiered, each at its latest end offset.
    expect([...mergeTieredOffsets(new Map(previous), new Map(round))].sort(([a], [b]) => a - b)).toEqual(merged);
  });

  it.each<[string, [number, number][], [number, number][], RegExp]>([
    ['a bucket going back', [[0, 5]], [[0, 4]], /go back from 5 to 4/],
    ['a negative bucket', [], [[-1, 4]], /bucket -1/],
    ['a fractional offset', [], [[0, 1.5]], /offset 1.5/],
    ['an unsafe offset', [], [[0, 2 ** 53]], /offset/],
  ])('refuses %s', (_case, previous, round, message) => {
    // Proves a writer tiering from a stale view (or a caller bug) is stopped, not recorded.
    expect(() => mergeTieredOffsets(new Map(previous), new Map(round))).toThrow(message);
  });

  it('writes the buckets in ascending order', () => {
    // Proves the summary text is canonical, so equal states give equal summaries.
    expect(tieredOffsetsText(new Map([[10, 1], [2, 7], [0, 3]]))).toBe('{"0":3,"2":7,"10":1}');
  });
});

describe('snapshotSummaryOf', () => {
  const append: SummaryChange = { addedFiles: 2, addedRecords: 30, addedBytes: 900, removedFiles: 0, removedRecords: 0, removedBytes: 0, changedPartitions: 2 };
  const overwrite: SummaryChange = { addedFiles: 1, addedRecords: 12, addedBytes: 400, removedFiles: 1, removedRecords: 10, removedBytes: 300, changedPartitions: 1 };
  const parent = { 'total-records': '30', 'total-files-size': '900', 'total-data-files': '2' };

  it.each<[string, Record<string, string> | null, SummaryChange, Record<string, string>]>([
    [
      'a first append',
      null,
      append,
      { operation: 'append', 'added-data-files': '2', 'added-records': '30', 'added-files-size': '900', 'total-records': '30', 'total-files-size': '900', 'total-data-files': '2' },
    ],
    [
      'a copy-on-write replacement',
      parent,
      overwrite,
      {
        operation: 'overwrite',
        'deleted-data-files': '1',
        'deleted-records': '10',
        'removed-files-size': '300',
        'total-records': '32',
        'total-files-size': '1000',
        'total-data-files': '2',
        'changed-partition-count': '1',
      },
    ],
    [
      'a removal of a bucket\'s only file',
      parent,
      { addedFiles: 0, addedRecords: 0, addedBytes: 0, removedFiles: 1, removedRecords: 10, removedBytes: 300, changedPartitions: 1 },
      { operation: 'delete', 'deleted-data-files': '1', 'total-records': '20', 'total-data-files': '1' },
    ],
    [
      'a snapshot that only records more tiered',
      parent,
      { addedFiles: 0, addedRecords: 0, addedBytes: 0, removedFiles: 0, removedRecords: 0, removedBytes: 0, changedPartitions: 0 },
      { operation: 'append', 'added-data-files': '0', 'total-records': '30', 'total-data-files': '2' },
    ],
  ])('summarises %s', (_case, parentSummary, change, expected) => {
    // Proves the operation and the spec's counts and totals (Appendix F), carried from the parent's totals.
    const summary = snapshotSummaryOf(parentSummary, change, new Map([[0, 10]]));
    expect(summary).toMatchObject(expected);
    expect(summary).toMatchObject({ 'total-delete-files': '0', 'total-position-deletes': '0', 'total-equality-deletes': '0' });
  });

  it('keeps the caller keys but not over the spec keys and the offsets', () => {
    // Proves a caller's summary cannot make an overwrite look like an append or forge the tiered offsets.
    const summary = snapshotSummaryOf(null, overwrite, new Map([[3, 99]]), { 'mink.round': '7', operation: 'append', [TIERED_OFFSETS_SUMMARY_KEY]: '{}' });
    expect(summary['mink.round']).toBe('7');
    expect(summary.operation).toBe('overwrite');
    expect([...tieredOffsetsOf(summary)]).toEqual([[3, 99]]);
  });

  it('refuses a parent summary without totals', () => {
    // Proves totals are never silently restarted from zero.
    expect(() => snapshotSummaryOf({ operation: 'append' }, append, new Map())).toThrow('total-records');
  });
});

describe('table metadata', () => {
  const snapshot = (id: number, sequenceNumber: number): Snapshot => ({
    'snapshot-id': id,
    'sequence-number': sequenceNumber,
    'timestamp-ms': 1_000 + sequenceNumber,
    'manifest-list': `${LOCATION}/metadata/snap-${id}.avro`,
    summary: { operation: 'append' },
    'schema-id': 0,
  });

  it('starts a table with its schema, the bucket partition spec and no snapshot', () => {
    // Proves the fields every Iceberg v2 reader requires are there from the first version.
    const metadata = newTableMetadata('uuid-1', LOCATION, SCHEMA, 500);
    expect(metadata).toMatchObject({
      'format-version': 2,
      'table-uuid': 'uuid-1',
      location: LOCATION,
      'last-sequence-number': 0,
      'last-column-id': 4,
      'current-schema-id': 0,
      'default-spec-id': 0,
      'last-partition-id': 1000,
      'default-sort-order-id': 0,
    });
    expect(metadata['partition-specs']).toEqual([partitionSpecOf(SCHEMA)]);
    expect(partitionSpecOf(SCHEMA).fields).toEqual([{ name: '__bucket', transform: 'identity', 'source-id': 2, 'field-id': 1000 }]);
    expect(currentSnapshotOf(metadata)).toBeNull();
  });

  it('makes a snapshot current, moves main and logs the metadata file it replaces', () => {
    // Proves the pointers a reader follows (current-snapshot-id, refs.main) and the logs after two commits.
    const first = withSnapshot(newTableMetadata('u', LOCATION, SCHEMA, 500), snapshot(11, 1), null, 600);
    const second = withSnapshot(first, snapshot(22, 2), `${LOCATION}/metadata/v1.metadata.json`, 700);
    expect(currentSnapshotOf(second)?.['snapshot-id']).toBe(22);
    expect(second.refs).toEqual({ main: { 'snapshot-id': 22, type: 'branch' } });
    expect(second['last-sequence-number']).toBe(2);
    expect(second['last-updated-ms']).toBe(700);
    expect(second['snapshot-log'].map((entry) => entry['snapshot-id'])).toEqual([11, 22]);
    expect(second['metadata-log']).toEqual([{ 'timestamp-ms': 600, 'metadata-file': `${LOCATION}/metadata/v1.metadata.json` }]);
  });

  it('refuses a snapshot whose sequence number does not follow', () => {
    // Proves two snapshots can never share a sequence number (an assertion, not an expected outcome).
    expect(() => withSnapshot(newTableMetadata('u', LOCATION, SCHEMA, 500), snapshot(11, 2), null, 600)).toThrow('does not follow');
  });

  it('expires all but the newest snapshotsRetainedMax snapshots, and keeps one metadata file per kept snapshot in its logs', () => {
    // Proves the metadata file stays bounded however many rounds a table sees, and that its logs name only
    // what is kept: the snapshot log the kept snapshots, the metadata log the files whose current snapshots they are.
    const retained = LAKE_LIMITS.snapshotsRetainedMax;
    let metadata = newTableMetadata('u', LOCATION, SCHEMA, 0);
    const rounds = retained + 5;
    for (let round = 1; round <= rounds; round++) {
      metadata = withSnapshot(metadata, snapshot(round, round), round === 1 ? null : `${LOCATION}/metadata/v${round - 1}.metadata.json`, round);
      const kept = Array.from({ length: Math.min(round, retained) }, (_, index) => round - Math.min(round, retained) + 1 + index);
      expect(metadata.snapshots.map((entry) => entry['snapshot-id'])).toEqual(kept);
      expect(metadata['snapshot-log'].map((entry) => entry['snapshot-id'])).toEqual(kept);
      // Version v holds snapshot v as its current one: the log names the versions of the kept older snapshots.
      expect(retainedMetadataFilesOf(metadata)).toEqual(kept.slice(0, -1).map((version) => `${LOCATION}/metadata/v${version}.metadata.json`));
    }
    expect(metadata.snapshots).toHaveLength(retained);
    expect(metadata['metadata-log']).toHaveLength(LAKE_LIMITS.metadataLogEntriesMax);
    expect(currentSnapshotOf(metadata)?.['snapshot-id']).toBe(rounds);
  });

  it('trims the long logs of metadata written with the earlier bounds on its next commit', () => {
    // Proves a table whose metadata kept 100 snapshots before expiry became short is brought within the bounds at once.
    const legacy = newTableMetadata('u', LOCATION, SCHEMA, 0);
    legacy.snapshots = Array.from({ length: 100 }, (_, index) => snapshot(index + 1, index + 1));
    legacy['snapshot-log'] = legacy.snapshots.map((entry) => ({ 'timestamp-ms': entry['timestamp-ms'], 'snapshot-id': entry['snapshot-id'] }));
    legacy['metadata-log'] = Array.from({ length: 99 }, (_, index) => ({ 'timestamp-ms': index, 'metadata-file': `${LOCATION}/metadata/v${index + 1}.metadata.json` }));
    legacy['last-sequence-number'] = 100;
    legacy['current-snapshot-id'] = 100;
    const next = withSnapshot(legacy, snapshot(101, 101), `${LOCATION}/metadata/v100.metadata.json`, 200);
    expect(next.snapshots.map((entry) => entry['snapshot-id'])).toEqual([94, 95, 96, 97, 98, 99, 100, 101].slice(-LAKE_LIMITS.snapshotsRetainedMax));
    expect(next['snapshot-log']).toHaveLength(LAKE_LIMITS.snapshotsRetainedMax);
    expect(retainedMetadataFilesOf(next)).toEqual([94, 95, 96, 97, 98, 99, 100].slice(-LAKE_LIMITS.metadataLogEntriesMax).map((version) => `${LOCATION}/metadata/v${version}.metadata.json`));
  });
});
