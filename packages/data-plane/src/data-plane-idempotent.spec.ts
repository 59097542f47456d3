import { WRITER_SHARDS, bucketId, emptyView, getIn, shardedFrom, type BucketRecord, type TableRecord, type View, type WriterState } from '@mink/meta';
import { MinkError, type AppendBucketRequest, type AppendBucketResult } from '@mink/protocol';
import type { StreamReader, WalAppendRequest, WalWriter } from '@mink/s3stream';
import type { ClusterMember } from '@mink/runtime';

import type { BucketSync } from './bucket-sync';
import { DataPlane } from './data-plane';
import type { PkBuckets } from './pk-buckets';

/**
 * DataPlane carrying out decideWriterSequence for idempotent appends (the decision itself is table-tested in
 * @mink/meta): a batch the view remembers is answered from the view without a write, a retry of a batch in
 * flight here joins it, a refused sequence gets its typed error, and a failed attempt leaves nothing in
 * flight. Node 1 leads bucket 0 of log table `events`, whose view remembers writer `w` at sequence 3.
 */

const EVENTS: TableRecord = {
  id: 7,
  name: 'events',
  kind: 'log',
  columns: [{ name: 'x', type: 'int64' }],
  primaryKey: [],
  bucketKey: [],
  buckets: 1,
  properties: {},
  createdAtMs: 0,
  partitions: [],
};
const REMEMBERED: WriterState = { seq: 3, baseOffset: 30, count: 2, earlier: [{ seq: 2, baseOffset: 28, count: 2 }] };

function view(): View {
  const record: BucketRecord = {
    tableId: 7,
    table: 'events',
    partition: null,
    bucket: 0,
    leader: '1',
    leaderEpoch: 2,
    stream: { state: 'open', epoch: 2, node: '1', nodeEpoch: 1, startOffset: 0, endOffset: 32, slices: [], writers: shardedFrom({ w: REMEMBERED }, WRITER_SHARDS) },
    kvSnapshots: [],
  };
  const result = emptyView();
  result.nodes = { '1': { id: '1', epoch: 1, address: 'mink.node.1', kafka: 'localhost:9091', http: 'localhost:8091' } };
  result.tables = shardedFrom({ events: EVENTS });
  result.buckets = shardedFrom({ [bucketId(7, null, 0)]: record });
  return result;
}

/** A WAL whose appends settle when the test says so, each at the next offset from 32. */
class HeldWal {
  readonly appended: WalAppendRequest[] = [];
  private readonly settles: ((error?: Error) => void)[] = [];
  private nextOffset = 32;

  append(request: WalAppendRequest): Promise<{ baseOffset: number; count: number }> {
    this.appended.push(request);
    return new Promise((resolve, reject) => {
      this.settles.push((error) => {
        if (error) return reject(error);
        resolve({ baseOffset: this.nextOffset, count: request.recordCount });
        this.nextOffset += request.recordCount;
      });
    });
  }

  /** Commits (or fails) the oldest append not settled yet. */
  settleNext(error?: Error): void {
    this.settles.shift()!(error);
  }
}

function start(): { data: DataPlane; wal: HeldWal; member: { view: View } } {
  const wal = new HeldWal();
  const member = { view: view() } as unknown as ClusterMember;
  const sync = { isOpen: () => true, streamEpochOf: () => 2 } as unknown as BucketSync;
  const data = new DataPlane(member, { nodeId: '1', nodeEpoch: 1 }, sync, wal as unknown as WalWriter, {} as StreamReader, {} as PkBuckets, undefined, undefined, () => 1_000);
  return { data, wal, member };
}

/** The view after writer `w`'s sequence 4 committed at [32, 34) of bucket 0. */
function viewWithSequence4Committed(): View {
  const result = view();
  const id = bucketId(7, null, 0);
  const before = getIn(result.buckets, id)!;
  result.buckets = shardedFrom({
    [id]: { ...before, stream: { ...before.stream, endOffset: 34, writers: shardedFrom({ w: { seq: 4, baseOffset: 32, count: 2, earlier: [{ seq: 3, baseOffset: 30, count: 2 }] } }, WRITER_SHARDS) } },
  });
  return result;
}

function append(data: DataPlane, writer: AppendBucketRequest['writer']): Promise<AppendBucketResult> {
  return data.append({ op: 'append', table: 'events', tableId: 7, partition: null, bucket: 0, rows: [{ x: 1 }, { x: 2 }], writer });
}

async function errorOf(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof MinkError) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error('the append was accepted');
}

describe('DataPlane idempotent appends', () => {
  it.each<[string, AppendBucketRequest['writer'], AppendBucketResult]>([
    ['the last batch the view remembers is answered with its offsets, marked duplicate', { id: 'w', seq: 3, acked: 2 }, { bucket: 0, baseOffset: 30, count: 2, duplicate: true }],
    ['an earlier remembered batch is answered with its offsets', { id: 'w', seq: 2, acked: 1 }, { bucket: 0, baseOffset: 28, count: 2, duplicate: true }],
  ])('%s, without a write', async (_name, writer, expected) => {
    // Proves a retry of a committed batch (even one a previous leader committed) never writes its rows again.
    const { data, wal } = start();
    expect(await append(data, writer)).toEqual(expected);
    expect(wal.appended).toHaveLength(0);
  });

  it.each<[string, AppendBucketRequest['writer'], { code: string; message: string }]>([
    [
      'a sequence older than those remembered: Conflict',
      { id: 'w', seq: 1, acked: 0 },
      { code: 'Conflict', message: 'writer w sequence 1 is older than the batches remembered of it (last committed 3)' },
    ],
    [
      'a sequence after a gap: Unavailable until the one before it arrives',
      { id: 'w', seq: 5, acked: 3 },
      { code: 'Unavailable', message: 'writer w sequence 5 arrived before sequence 4: send it again after that one' },
    ],
    [
      'a new writer whose first batch has not arrived: Unavailable',
      { id: 'v', seq: 1, acked: -1 },
      { code: 'Unavailable', message: 'writer v sequence 1 arrived before sequence 0: send it again after that one' },
    ],
    ['an empty writer id: InvalidArgument', { id: '', seq: 0 }, { code: 'InvalidArgument', message: 'writer must be {id: a non-empty string, seq: a non-negative integer, acked?: an integer from -1}' }],
    ['a negative sequence: InvalidArgument', { id: 'w', seq: -1 }, { code: 'InvalidArgument', message: 'writer must be {id: a non-empty string, seq: a non-negative integer, acked?: an integer from -1}' }],
    ['acked at the sequence itself: InvalidArgument', { id: 'w', seq: 4, acked: 4 }, { code: 'InvalidArgument', message: 'writer.acked must be an integer from -1 below the sequence 4, got 4' }],
    ['acked below -1: InvalidArgument', { id: 'w', seq: 4, acked: -2 }, { code: 'InvalidArgument', message: 'writer.acked must be an integer from -1 below the sequence 4, got -2' }],
  ])('refuses %s, unwritten', async (_name, writer, expected) => {
    // Proves each refused sequence reaches the writer as the typed error its client acts on, and writes nothing.
    const { data, wal } = start();
    expect(await errorOf(append(data, writer))).toEqual(expected);
    expect(wal.appended).toHaveLength(0);
  });

  it('writes the next sequence with its writer, joins a retry of it in flight, and orders the one after it behind it', async () => {
    // Proves a fast retry shares the first attempt (one write), and the in-flight sequence is what the next is ordered after.
    const { data, wal } = start();
    const first = append(data, { id: 'w', seq: 4, acked: 3 });
    const retry = append(data, { id: 'w', seq: 4, acked: 3 });
    const next = append(data, { id: 'w', seq: 5, acked: 3 });
    expect(wal.appended.map((request) => request.writer)).toEqual([
      { id: 'w', seq: 4 },
      { id: 'w', seq: 5 },
    ]);
    expect(await errorOf(append(data, { id: 'w', seq: 7, acked: 3 }))).toEqual({ code: 'Unavailable', message: 'writer w sequence 7 arrived before sequence 6: send it again after that one' });
    wal.settleNext();
    wal.settleNext();
    expect(await first).toEqual({ bucket: 0, baseOffset: 32, count: 2 });
    expect(await retry).toEqual({ bucket: 0, baseOffset: 32, count: 2 });
    expect(await next).toEqual({ bucket: 0, baseOffset: 34, count: 2 });
  });

  it('forgets a failed attempt, so its retry is written again', async () => {
    // Proves a failed write leaves no sequence in flight that would join or block the retry.
    const { data, wal } = start();
    const first = append(data, { id: 'w', seq: 4, acked: 3 });
    wal.settleNext(new Error('upload failed'));
    await expect(first).rejects.toThrow('upload failed');
    const retry = append(data, { id: 'w', seq: 4, acked: 3 });
    wal.settleNext();
    expect(await retry).toEqual({ bucket: 0, baseOffset: 32, count: 2 });
    expect(wal.appended).toHaveLength(2);
  });

  it('answers a retry refused because its first attempt committed meanwhile with that attempt\'s offsets', async () => {
    // Proves the exactly-once rule holds when a first attempt's commit had an unknown outcome (a metadata
    // leader failover) and applied after the retry was taken: the WAL writer (or the commit) refuses the
    // retry, and the writer is answered from the view instead of getting an error or a second copy.
    const { data, wal, member } = start();
    const first = append(data, { id: 'w', seq: 4, acked: 3 });
    wal.settleNext(new MinkError('Unavailable', 'commit of WAL object k failed: TIMEOUT'));
    await expect(first).rejects.toThrow('TIMEOUT');
    const retry = append(data, { id: 'w', seq: 4, acked: 3 });
    expect(wal.appended).toHaveLength(2);
    member.view = viewWithSequence4Committed();
    wal.settleNext(new MinkError('Conflict', 'bucket 7//0: writer w sequence 4 is already committed (its last committed sequence is 4): not written twice'));
    expect(await retry).toEqual({ bucket: 0, baseOffset: 32, count: 2, duplicate: true });
  });

  it('passes on the refusal of a retry when the view does not show its batch committed', async () => {
    // Proves only a batch the view holds is answered as a duplicate: any other failure reaches the writer.
    const { data, wal } = start();
    const attempt = append(data, { id: 'w', seq: 4, acked: 3 });
    wal.settleNext(new MinkError('Conflict', 'range [32, 34) does not start at the committed end 40'));
    expect(await errorOf(attempt)).toEqual({ code: 'Conflict', message: 'range [32, 34) does not start at the committed end 40' });
  });

  it('writes an append without a writer as it comes', async () => {
    // Proves the idempotent path is taken only for a request that names a writer.
    const { data, wal } = start();
    const written = append(data, undefined);
    expect(wal.appended[0]!.writer).toBeUndefined();
    wal.settleNext();
    expect(await written).toEqual({ bucket: 0, baseOffset: 32, count: 2 });
  });
});
