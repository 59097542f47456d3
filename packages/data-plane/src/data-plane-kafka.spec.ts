import { WRITER_SHARDS, bucketId, emptyView, kafkaTopicSpec, shardedFrom, type BucketRecord, type TableRecord, type View, type WriterState } from '@mink/meta';
import { ConflictError } from '@mink/protocol';
import { KafkaError, encodeRecordBatch, producerWriterId, setBaseOffset } from '@mink/kafka';
import type { StreamReader, WalAppendRequest, WalWriter } from '@mink/s3stream';
import type { ClusterMember } from '@mink/runtime';

import type { BucketSync } from './bucket-sync';
import { DataPlane, type IdempotentWriter, type RefusedSequence } from './data-plane';
import type { PkBuckets } from './pk-buckets';

/**
 * The Kafka side of DataPlane. A producer's retry must hold the records of the batch it repeats
 * (appendRecordBatch): a batch with the sequences of a committed one, or of one in flight here, is answered
 * with that batch's offsets only when it holds the same records (read back from storage for a committed
 * one); with other records it is refused as `reused`, unwritten. Transactions on a partition: read_committed
 * reads stop at the last stable offset and name the aborted transactions, and a queued marker fences older
 * epochs at once. Node 1 leads partition 0 of topic `orders`, whose view remembers producer 7 epoch 0 with
 * the run of sequences [0, 1] stored at offsets [30, 32).
 */

const WRITER = producerWriterId(7, 0);
const TOPIC = kafkaTopicSpec('orders', 1);
const ORDERS: TableRecord = { id: 9, name: 'orders', kind: 'log', columns: TOPIC.columns, primaryKey: [], bucketKey: [], buckets: 1, properties: TOPIC.properties ?? {}, createdAtMs: 0, partitions: [] };
const ID = bucketId(9, null, 0);

function batchOf(values: string[], timestamp = 1_700_000_000_000, baseSequence = 0): Uint8Array {
  return encodeRecordBatch({ baseOffset: 0, records: values.map((value) => ({ key: null, value: Buffer.from(value), timestamp })), producerId: 7, producerEpoch: 0, baseSequence });
}

/** The batch stored at offset 30: records a and b, as the first attempt sent them. */
const STORED = (() => {
  const bytes = batchOf(['a', 'b']);
  setBaseOffset(bytes, 30);
  return bytes;
})();

function view(writer: WriterState | undefined): View {
  const record: BucketRecord = {
    tableId: 9,
    table: 'orders',
    partition: null,
    bucket: 0,
    leader: '1',
    leaderEpoch: 2,
    stream: { state: 'open', epoch: 2, node: '1', nodeEpoch: 1, startOffset: 0, endOffset: 32, slices: [], writers: writer ? shardedFrom({ [WRITER]: writer }, WRITER_SHARDS) : shardedFrom({}, WRITER_SHARDS) },
    kvSnapshots: [],
  };
  const result = emptyView();
  result.nodes = { '1': { id: '1', epoch: 1, address: 'mink.node.1', kafka: 'localhost:9091', http: 'localhost:8091' } };
  result.tables = shardedFrom({ orders: ORDERS });
  result.buckets = shardedFrom({ [ID]: record });
  return result;
}

/** A WAL whose appends settle when the test says so, each at the next offset from 32. */
class HeldWal {
  readonly appended: WalAppendRequest[] = [];
  private readonly settles: ((error?: Error) => void)[] = [];

  append(request: WalAppendRequest): Promise<{ baseOffset: number; count: number }> {
    this.appended.push(request);
    return new Promise((resolve, reject) => this.settles.push((error) => (error ? reject(error) : resolve({ baseOffset: 32, count: request.recordCount }))));
  }

  settleNext(error?: Error): void {
    this.settles.shift()!(error);
  }
}

function start(writer: WriterState | undefined, stored: { startOffset: number; payload: Uint8Array }[] = [{ startOffset: 30, payload: STORED }]) {
  const wal = new HeldWal();
  const member = { view: view(writer) };
  const reads: number[] = [];
  const reader = {
    read: async (_id: string, offset: number) => {
      reads.push(offset);
      return { batches: stored.map((batch) => ({ ...batch, endOffset: batch.startOffset + 2 })), highWatermark: 32, startOffset: 0 };
    },
  } as unknown as StreamReader;
  const sync = { isOpen: () => true, streamEpochOf: () => 2 } as unknown as BucketSync;
  const data = new DataPlane(member as unknown as ClusterMember, { nodeId: '1', nodeEpoch: 1 }, sync, wal as unknown as WalWriter, reader, {} as PkBuckets, undefined, undefined, () => 1_000);
  return { data, wal, member, reads };
}

const refuse = (_writer: IdempotentWriter, decision: RefusedSequence) => new KafkaError(45, JSON.stringify(decision));

function produce(data: DataPlane, bytes: Uint8Array, firstSeq: number, seq: number) {
  return data.appendRecordBatch('orders', 0, { bytes, offsetCount: seq - firstSeq + 1, stampBaseOffset: setBaseOffset }, { writer: { id: WRITER, firstSeq, seq, acked: -1 }, refuse });
}

async function refusalOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof KafkaError) return error.message;
    throw error;
  }
  throw new Error('the batch was accepted');
}

const REMEMBERED: WriterState = { seq: 1, baseOffset: 30, count: 2 };

describe('DataPlane: a Kafka producer\'s retry holds the records it repeats', () => {
  it('answers a retry of a committed batch holding its records (stamped at another time) with its offset, unwritten', async () => {
    const { data, wal, reads } = start(REMEMBERED);
    expect(await produce(data, batchOf(['a', 'b'], 1_700_000_009_999), 0, 1)).toEqual({ baseOffset: 30, startOffset: 0 });
    expect(reads).toEqual([30]);
    expect(wal.appended).toHaveLength(0);
  });

  it('refuses other records under the sequences of a committed batch as reused, unwritten', async () => {
    // Proves a kafkajs producer that took back a committed batch's sequences is not told its new records are stored.
    const { data, wal } = start(REMEMBERED);
    expect(JSON.parse(await refusalOf(produce(data, batchOf(['c', 'd']), 0, 1)))).toEqual({ kind: 'reused', baseOffset: 30 });
    expect(wal.appended).toHaveLength(0);
  });

  it('takes a committed batch no longer stored (trimmed) for the same, as Kafka does', async () => {
    const { data, wal } = start(REMEMBERED, [{ startOffset: 40, payload: batchOf(['x', 'y']) }]);
    expect(await produce(data, batchOf(['c', 'd']), 0, 1)).toEqual({ baseOffset: 30, startOffset: 0 });
    expect(wal.appended).toHaveLength(0);
  });

  it('joins a retry of the batch in flight holding its records, and refuses other records under its sequences', async () => {
    const { data, wal, member } = start(undefined);
    const first = produce(data, batchOf(['a', 'b']), 0, 1);
    const retry = produce(data, batchOf(['a', 'b'], 1_700_000_009_999), 0, 1);
    expect(JSON.parse(await refusalOf(produce(data, batchOf(['c', 'd']), 0, 1)))).toEqual({ kind: 'reused', baseOffset: null });
    expect(wal.appended).toHaveLength(1);
    member.view = view({ seq: 1, baseOffset: 32, count: 2 });
    wal.settleNext();
    expect(await first).toEqual({ baseOffset: 32, startOffset: 0 });
    expect(await retry).toEqual({ baseOffset: 32, startOffset: 0 });
  });

  it('answers an attempt refused because an earlier one of its sequences committed meanwhile only when that one held its records', async () => {
    // Proves the path of a commit of unknown outcome that lands late checks the records too.
    const same = start(undefined);
    const sameAttempt = produce(same.data, batchOf(['a', 'b']), 0, 1);
    same.member.view = view(REMEMBERED);
    same.wal.settleNext(new ConflictError('writer sequence 1 is already committed'));
    expect(await sameAttempt).toEqual({ baseOffset: 30, startOffset: 0 });

    const other = start(undefined);
    const otherAttempt = produce(other.data, batchOf(['c', 'd']), 0, 1);
    other.member.view = view(REMEMBERED);
    other.wal.settleNext(new ConflictError('writer sequence 1 is already committed'));
    expect(JSON.parse(await refusalOf(otherAttempt))).toEqual({ kind: 'reused', baseOffset: 30 });
  });
});


describe('DataPlane: transactions on a partition', () => {
  /** A view whose stream holds transactions: producer 7's open from offset 30, and producer 9's aborted over [10, 20]. */
  function withTransactions(view: View): View {
    const id = ID;
    const record = (view.buckets.shards.flatMap((shard) => Object.values(shard)) as BucketRecord[])[0]!;
    view.buckets = shardedFrom({ [id]: { ...record, stream: { ...record.stream, transactions: { open: { '7': 30 }, aborted: [{ producerId: 9, firstOffset: 10, lastOffset: 20 }], markerEpochs: { '7': 2 } } } } });
    return view;
  }

  function startWith(stored: { startOffset: number; endOffset: number; payload: Uint8Array }[]) {
    const started = start(undefined);
    withTransactions(started.member.view);
    const reads: { offset: number; records: number }[] = [];
    const reader = {
      read: async (_id: string, offset: number, records: number) => {
        reads.push({ offset, records });
        return { batches: stored.filter((batch) => batch.endOffset > offset), highWatermark: 32, startOffset: 0 };
      },
    } as unknown as StreamReader;
    const sync = { isOpen: () => true, streamEpochOf: () => 2 } as unknown as BucketSync;
    const data = new DataPlane(started.member as unknown as ClusterMember, { nodeId: '1', nodeEpoch: 1 }, sync, started.wal as unknown as WalWriter, reader, {} as PkBuckets, undefined, undefined, () => 1_000);
    return { ...started, data, reads };
  }

  const stored = [
    { startOffset: 5, endOffset: 20, payload: batchOf(['x']) },
    { startOffset: 20, endOffset: 30, payload: batchOf(['y']) },
    { startOffset: 30, endOffset: 32, payload: batchOf(['z']) },
  ];

  it('read_committed stops at the last stable offset (the open transaction\'s first) and names the aborted transactions among what it returns', async () => {
    const { data, reads } = startWith(stored);
    const read = await data.readRecordBatches('orders', 0, 5, 1_000_000, true);
    expect(reads).toEqual([{ offset: 5, records: 25 }]);
    expect(read.batches).toHaveLength(2);
    expect({ lastStableOffset: read.lastStableOffset, highWatermark: read.highWatermark, aborted: read.abortedTransactions }).toEqual({
      lastStableOffset: 30,
      highWatermark: 32,
      aborted: [{ producerId: 9, firstOffset: 10, lastOffset: 20 }],
    });
  });

  it('read_committed at the last stable offset reads nothing; read_uncommitted reads on, naming no aborted transactions', async () => {
    const { data, reads } = startWith(stored);
    expect((await data.readRecordBatches('orders', 0, 30, 1_000_000, true)).batches).toEqual([]);
    expect(reads).toEqual([]);
    const uncommitted = await data.readRecordBatches('orders', 0, 5, 1_000_000, false);
    expect(uncommitted.batches).toHaveLength(3);
    expect(uncommitted.abortedTransactions).toEqual([]);
  });

  it('fences a producer\'s older epochs from the moment a marker of a newer one is queued, before it commits', async () => {
    // Proves no batch of a fenced epoch can be queued behind the marker and open a transaction nobody ends.
    const { data, wal } = startWith(stored);
    expect(data.producerEpochFloorOf(ID, 7)).toBe(2);
    const marker = data.appendTransactionMarker('orders', 0, { producerId: 7, producerEpoch: 5, commit: false, coordinatorEpoch: 1 });
    expect(data.producerEpochFloorOf(ID, 7)).toBe(5);
    expect(wal.appended[0]!.transaction).toEqual({ producerId: 7, producerEpoch: 5, marker: 'abort' });
    expect(wal.appended[0]!.recordCount).toBe(1);
    wal.settleNext();
    expect(await marker).toEqual({ offset: 32 });
    // Committed, the view holds the epoch (this test's view does not move): the queued one is forgotten.
    expect(data.producerEpochFloorOf(ID, 7)).toBe(2);
  });
});
