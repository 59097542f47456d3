/**
 * Retention's fence in the log (docs/architecture.md §9): TrimStreams releases whole slices below the new start, never
 * moves a start above the lake offset of a lake table or above the newest KV snapshot of a PK bucket,
 * and hands objects nothing points into any more to the garbage collector.
 */
import { apply } from './apply';
import type { Command } from './commands';
import { deepFreeze } from './deep-freeze';
import { getIn, recordOf, shardedFrom } from './sharded-map';
import { NO_WRITERS, bucketId, emptyView, slicesOf, type BucketRecord, type DataSlice, type TableRecord, type View } from './view';

const SLICES: DataSlice[] = [
  { object: 'wal/1/1/a', startOffset: 0, endOffset: 10, position: 0, length: 100 },
  { object: 'wal/1/1/b', startOffset: 10, endOffset: 20, position: 0, length: 100 },
  { object: 'wal/1/1/a', startOffset: 20, endOffset: 30, position: 100, length: 100 },
];

function tableOf(kind: 'log' | 'pk', properties: Record<string, string>, lakeOffset?: number): TableRecord {
  return {
    id: 3,
    name: 'events',
    kind,
    columns: [{ name: 'id', type: 'int64' }],
    primaryKey: kind === 'pk' ? ['id'] : [],
    bucketKey: kind === 'pk' ? ['id'] : [],
    buckets: 1,
    properties,
    createdAtMs: 0,
    partitions: [],
    ...(lakeOffset === undefined ? {} : { lake: { metadataKey: 'lake/events/metadata/v1-t3r1.metadata.json', snapshotId: '1', offsets: { '0': lakeOffset }, tieringEpoch: 1, round: null, tieredAtMs: 1 } }),
  };
}

function viewOf(table: TableRecord, kvSnapshotOffset?: number): View {
  const record: BucketRecord = {
    tableId: 3,
    table: 'events',
    partition: null,
    bucket: 0,
    leader: '1',
    leaderEpoch: 1,
    stream: { state: 'open', epoch: 1, node: '1', nodeEpoch: 1, startOffset: 0, endOffset: 30, slices: SLICES, writers: NO_WRITERS },
    kvSnapshots: kvSnapshotOffset === undefined ? [] : [{ object: 'kv/3//0/s', appliedOffset: kvSnapshotOffset, bytes: 10, streamEpoch: 1 }],
  };
  const objects: Record<string, { references: number }> = { 'wal/1/1/a': { references: 2 }, 'wal/1/1/b': { references: 1 } };
  if (kvSnapshotOffset !== undefined) objects['kv/3//0/s'] = { references: 1 };
  return deepFreeze({ ...emptyView(), seq: 7, coordinator: { node: 'c1', epoch: 2 }, tables: shardedFrom({ events: table }), buckets: shardedFrom({ [bucketId(3, null, 0)]: record }), nextTableId: 4, objects: shardedFrom(objects) });
}

function trim(view: View, startOffset: number, extra: Partial<Record<string, unknown>> = {}) {
  return apply(view, view.seq + 1, { type: 'TrimStreams', coordinatorEpoch: 2, streams: [{ tableId: 3, partition: null, bucket: 0, startOffset }], atMs: 9_000, ...extra } as Command);
}

const LOG = tableOf('log', {});

describe('TrimStreams', () => {
  it('forgets the aborted transactions wholly below the new start, keeping the open ones and the marker epochs', () => {
    // Proves a read_committed fetch is never told of aborted records the stream no longer holds.
    const plain = viewOf(LOG);
    const id = bucketId(3, null, 0);
    const record = getIn(plain.buckets, id)!;
    const transactions = {
      open: { '8': 25 },
      aborted: [
        { producerId: 7, firstOffset: 2, lastOffset: 9 },
        { producerId: 7, firstOffset: 15, lastOffset: 22 },
      ],
      markerEpochs: { '7': 1 },
    };
    const before = deepFreeze({ ...plain, buckets: shardedFrom({ [id]: { ...record, stream: { ...record.stream, transactions } } }) });
    const stream = getIn(trim(before, 20).view.buckets, id)!.stream;
    expect(stream.transactions).toEqual({ ...transactions, aborted: [{ producerId: 7, firstOffset: 15, lastOffset: 22 }] });
  });

  it.each<[string, TableRecord, number | undefined, number, number, string[]]>([
    // name, table, newest KV snapshot offset, asked start, resulting start, objects left referenced
    ['drops the slices wholly below the start asked for', LOG, undefined, 20, 20, ['wal/1/1/a']],
    ['keeps a slice the start falls inside, starting the stream at it', LOG, undefined, 15, 10, ['wal/1/1/a', 'wal/1/1/b']],
    ['drops every slice at the committed end', LOG, undefined, 30, 30, []],
    ['never goes beyond the committed end', LOG, undefined, 99, 30, []],
    ['stops at the lake offset of a lake table', tableOf('log', { 'table.datalake.enabled': 'true' }, 10), undefined, 30, 10, ['wal/1/1/a', 'wal/1/1/b']],
    ['trims nothing of a lake table before its first round', tableOf('log', { 'table.datalake.enabled': 'true' }), undefined, 30, 0, ['wal/1/1/a', 'wal/1/1/b']],
    ['stops at the newest KV snapshot of a PK bucket', tableOf('pk', {}), 20, 30, 20, ['wal/1/1/a', 'kv/3//0/s']],
    ['trims nothing of a PK bucket without a snapshot', tableOf('pk', {}), undefined, 30, 0, ['wal/1/1/a', 'wal/1/1/b']],
  ])('%s', (_case, table, kvOffset, asked, start, referenced) => {
    const before = viewOf(table, kvOffset);
    const { view, outcome } = trim(before, asked);
    expect(outcome).toEqual({ ok: true });
    const stream = getIn(view.buckets, bucketId(3, null, 0))!.stream;
    expect(stream.startOffset).toBe(start);
    expect(stream.slices).toEqual(SLICES.filter((slice) => slice.endOffset > start));
    expect(stream.endOffset).toBe(30);
    for (const key of ['wal/1/1/a', 'wal/1/1/b', 'kv/3//0/s']) {
      const expectedReferenced = referenced.includes(key);
      expect({ key, referenced: getIn(view.objects, key) !== undefined }).toEqual({ key, referenced: expectedReferenced });
    }
    // A WAL object released by its last slice waits in the garbage, stamped with the command's time.
    if (!referenced.includes('wal/1/1/b') && start > 10) expect(getIn(view.garbage, 'wal/1/1/b')).toEqual({ unreferencedAtMs: 9_000 });
  });

  it('leaves a view without change but for the sequence when nothing is below the start asked', () => {
    const before = viewOf(LOG);
    const { view } = trim(before, 5);
    expect(view).toEqual({ ...before, seq: 8 });
  });

  it.each<[string, Record<string, unknown>, string, string]>([
    ['a deposed coordinator', { coordinatorEpoch: 1 }, 'Fenced', 'coordinator epoch 1 is fenced: current is 2'],
    ['a malformed stream', { streams: [{ tableId: 3, bucket: -1, partition: null, startOffset: 1 }] }, 'InvalidArgument', 'TrimStreams.streams[0]: bucket must be a non-negative integer'],
  ])('refuses %s', (_case, extra, code, message) => {
    const before = viewOf(LOG);
    const { view, outcome } = trim(before, 20, extra);
    expect(outcome).toMatchObject({ ok: false, rejection: { code } });
    expect((outcome as { rejection: { message: string } }).rejection.message).toContain(message);
    expect(view).toEqual({ ...before, seq: 8 });
  });

  it('skips a stream that no longer exists', () => {
    const before = viewOf(LOG);
    const { view, outcome } = apply(before, 8, { type: 'TrimStreams', coordinatorEpoch: 2, streams: [{ tableId: 9, partition: null, bucket: 0, startOffset: 20 }], atMs: 1 } as Command);
    expect(outcome).toEqual({ ok: true });
    expect(view).toEqual({ ...before, seq: 8 });
  });
});

describe('DeleteRecords', () => {
  function deleteRecords(view: View, startOffset: number, extra: Partial<Record<string, unknown>> = {}) {
    return apply(view, view.seq + 1, { type: 'DeleteRecords', coordinatorEpoch: 2, tableId: 3, partition: null, bucket: 0, startOffset, atMs: 9_000, ...extra } as Command);
  }

  it.each<[string, TableRecord, number, number[], string[]]>([
    // name, table, asked start, slices kept (their start offsets), objects left referenced
    ['starts the stream exactly at the offset asked, keeping the slice it falls inside', LOG, 15, [10, 20], ['wal/1/1/a', 'wal/1/1/b']],
    ['drops the slices wholly below the offset asked', LOG, 20, [20], ['wal/1/1/a']],
    ['takes the high watermark, dropping every slice', LOG, 30, [], []],
    ['takes an offset a lake table holds already', tableOf('log', { 'table.datalake.enabled': 'true' }, 20), 12, [10, 20], ['wal/1/1/a', 'wal/1/1/b']],
  ])('%s', (_case, table, asked, kept, referenced) => {
    const { view, outcome } = deleteRecords(viewOf(table), asked);
    expect(outcome).toEqual({ ok: true });
    const stream = getIn(view.buckets, bucketId(3, null, 0))!.stream;
    expect(stream.startOffset).toBe(asked);
    expect(stream.slices.map((slice) => slice.startOffset)).toEqual(kept);
    expect(stream.endOffset).toBe(30);
    for (const key of ['wal/1/1/a', 'wal/1/1/b']) expect({ key, referenced: getIn(view.objects, key) !== undefined }).toEqual({ key, referenced: referenced.includes(key) });
  });

  it('changes nothing but the sequence for an offset at or below the start', () => {
    const started = deleteRecords(viewOf(LOG), 15).view;
    expect(deleteRecords(started, 12).view).toEqual({ ...started, seq: started.seq + 1 });
  });

  it('lets a later trim drop the slice the start fell inside once the start passes its end', () => {
    // Proves retention keeps working on a stream DeleteRecords started inside a slice.
    const started = deleteRecords(viewOf(LOG), 15).view;
    const stream = getIn(trim(started, 20).view.buckets, bucketId(3, null, 0))!.stream;
    expect(stream.startOffset).toBe(20);
    expect(stream.slices.map((slice) => slice.startOffset)).toEqual([20]);
  });

  it('lets compaction replace the slice the start fell inside', () => {
    // A stream object of [10, 30) replaces both kept slices, though 10 is below the stream's start 15.
    const deleted = deleteRecords(viewOf(LOG), 15).view;
    const started: View = { ...deleted, nodes: { '1': { id: '1', epoch: 1, address: 'mink.node.1', kafka: 'host1:9092', http: 'host1:8081' } } };
    const { outcome } = apply(started, started.seq + 1, {
      type: 'CommitStreamObject',
      tableId: 3,
      partition: null,
      bucket: 0,
      nodeId: '1',
      nodeEpoch: 1,
      streamEpoch: 1,
      object: 'so/3//0/10-30',
      startOffset: 10,
      endOffset: 30,
      slices: [{ startOffset: 10, endOffset: 30, position: 0, length: 150 }],
      atMs: 9_500,
    } as Command);
    expect(outcome).toEqual({ ok: true });
  });

  it.each<[string, TableRecord, number, Record<string, unknown>, string, string]>([
    ['a deposed coordinator', LOG, 20, { coordinatorEpoch: 1 }, 'Fenced', 'coordinator epoch 1 is fenced'],
    ['an unknown bucket', LOG, 20, { bucket: 4 }, 'NotFound', 'bucket 3//4 does not exist'],
    ['an offset beyond the high watermark', LOG, 31, {}, 'InvalidArgument', 'offset 31 is beyond the high watermark 30'],
    ['a primary-key table', tableOf('pk', {}), 20, {}, 'InvalidArgument', 'primary-key table'],
    ['an offset beyond what the lake holds', tableOf('log', { 'table.datalake.enabled': 'true' }, 10), 20, {}, 'InvalidArgument', 'tiered to the lake up to offset 10'],
    ['a negative offset', LOG, -1, {}, 'InvalidArgument', 'startOffset must be a non-negative integer'],
  ])('refuses %s', (_case, table, asked, extra, code, message) => {
    const before = viewOf(table);
    const { view, outcome } = deleteRecords(before, asked, extra);
    expect(outcome).toMatchObject({ ok: false, rejection: { code } });
    expect((outcome as { rejection: { message: string } }).rejection.message).toContain(message);
    expect(view).toEqual({ ...before, seq: 8 });
  });
});

describe('a stream whose older slices are in its history', () => {
  // Proves TrimStreams, DeleteRecords and DROP read a stream's history and its newest slices as one list: from
  // every offset, a stream split between the two ends exactly where the same stream in one list does.
  const id = bucketId(3, null, 0);
  /** The fixture's stream with its first `inHistory` slices moved into `history`. */
  function split(view: View, inHistory: number): View {
    const record = getIn(view.buckets, id)!;
    const stream = { ...record.stream, history: SLICES.slice(0, inHistory), slices: SLICES.slice(inHistory) };
    return deepFreeze({ ...view, buckets: shardedFrom({ [id]: { ...record, stream } }) });
  }
  const deleteRecords = (view: View, startOffset: number) =>
    apply(view, view.seq + 1, { type: 'DeleteRecords', coordinatorEpoch: 2, tableId: 3, partition: null, bucket: 0, startOffset, atMs: 9_000 } as Command);
  const flatOf = (view: View) => {
    const stream = getIn(view.buckets, id)!.stream;
    return { startOffset: stream.startOffset, slices: slicesOf(stream).slice(), objects: recordOf(view.objects), garbage: recordOf(view.garbage) };
  };

  it.each([1, 2, 3])('trims and deletes records with %i of its slices in its history as it does with none', (inHistory) => {
    const flatView = viewOf(LOG);
    const historyView = split(flatView, inHistory);
    for (let offset = 0; offset <= 30; offset++) {
      for (const change of [trim, deleteRecords]) {
        const flat = change(flatView, offset);
        const withHistory = change(historyView, offset);
        expect(withHistory.outcome).toEqual(flat.outcome);
        expect(flatOf(withHistory.view)).toEqual(flatOf(flat.view));
        const stream = getIn(withHistory.view.buckets, id)!.stream;
        // An emptied history is left out, as a stream that never had one has none.
        expect(stream.history === undefined || stream.history.length > 0).toBe(true);
      }
    }
  });

  it('releases the slices of its history when its table is dropped', () => {
    const dropped = apply(split(viewOf(LOG), 2), 8, { type: 'DropTable', coordinatorEpoch: 2, name: 'events', atMs: 9_000 } as Command);
    expect(dropped.outcome).toMatchObject({ ok: true });
    expect(recordOf(dropped.view.objects)).toEqual({});
    expect(Object.keys(recordOf(dropped.view.garbage)).sort()).toEqual(['wal/1/1/a', 'wal/1/1/b']);
  });
});
