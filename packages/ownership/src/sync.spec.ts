import { NO_WRITERS, bucketId, emptyView, shardedFrom, type BucketRecord, type StreamRecord, type View } from '@mink/meta';
import { bucketsToSync, bucketsTouchedBy, decideSync, type SyncDecision } from './sync';
import type { Command, Outcome } from '@mink/meta';

/**
 * The cluster of every row: node 1 is us at node epoch 5; node 2 is live at epoch 3; node 3 is dead at
 * epoch 7. The bucket under test is bucket 0 of table 1.
 */
const self = { nodeId: '1', nodeEpoch: 5 };
const live = new Set(['1', '2']);
const BUCKET = bucketId(1, null, 0);

function node(id: string, epoch: number) {
  return { id, epoch, address: `mink.node.${id}`, kafka: `localhost:${9090 + Number(id)}`, http: `localhost:${8090 + Number(id)}` };
}

function record(leader: string | null, leaderEpoch: number, stream: StreamRecord, tableId = 1, number = 0): BucketRecord {
  return { tableId, table: `t${tableId}`, partition: null, bucket: number, leader, leaderEpoch, stream, kvSnapshots: [] };
}

function viewWith(records: readonly BucketRecord[]): View {
  const view = emptyView();
  view.nodes = { '1': node('1', 5), '2': node('2', 3), '3': node('3', 7) };
  view.buckets = shardedFrom(Object.fromEntries(records.map((each) => [bucketId(each.tableId, each.partition, each.bucket), each])));
  return view;
}

const STORAGE_EMPTY = { startOffset: 0, endOffset: 0, slices: [], writers: NO_WRITERS };
const open = (node: string, nodeEpoch: number, epoch: number): StreamRecord => ({ state: 'open', epoch, node, nodeEpoch, ...STORAGE_EMPTY });
const closed = (epoch: number, node: string | null = null, nodeEpoch = 0): StreamRecord => ({ state: 'closed', epoch, node, nodeEpoch, ...STORAGE_EMPTY });

describe('decideSync', () => {
  it.each<{ name: string; leader: string | null; leaderEpoch: number; stream: StreamRecord; decision: SyncDecision }>([
    // The four rows of the "Opening a bucket" table (docs/ownership.md §3), for a bucket we lead.
    { name: 'seed: opened by another node that is live → heldBy', leader: '1', leaderEpoch: 4, stream: open('2', 3, 3), decision: { action: 'heldBy', node: '2' } },
    {
      name: 'seed: opened by a node that is dead → take over, registering it first',
      leader: '1',
      leaderEpoch: 4,
      stream: open('3', 7, 3),
      decision: { action: 'takeOver', node: '3', nodeEpoch: 7, streamEpoch: 3, registerFirst: true },
    },
    { name: 'seed: closed at the current leader epoch → relead', leader: '1', leaderEpoch: 4, stream: closed(4, '1', 4), decision: { action: 'relead', leaderEpoch: 4 } },
    { name: 'seed: closed at an older epoch → open at the leader epoch', leader: '1', leaderEpoch: 4, stream: closed(3, '3', 7), decision: { action: 'open', leaderEpoch: 4 } },
    // Extra cases for a bucket we lead.
    { name: 'never opened → open at the leader epoch', leader: '1', leaderEpoch: 1, stream: closed(0), decision: { action: 'open', leaderEpoch: 1 } },
    { name: 'open by this incarnation at the leader epoch → serve', leader: '1', leaderEpoch: 4, stream: open('1', 5, 4), decision: { action: 'serve' } },
    { name: 're-led at a newer epoch while open by us → close', leader: '1', leaderEpoch: 4, stream: open('1', 5, 3), decision: { action: 'close', streamEpoch: 3 } },
    {
      name: 'open by our previous incarnation → take over without registering (our restart fenced it)',
      leader: '1',
      leaderEpoch: 4,
      stream: open('1', 4, 4),
      decision: { action: 'takeOver', node: '1', nodeEpoch: 4, streamEpoch: 4, registerFirst: false },
    },
    {
      name: 'open by a fenced incarnation of a live node → take over without registering',
      leader: '1',
      leaderEpoch: 4,
      stream: open('2', 2, 3),
      decision: { action: 'takeOver', node: '2', nodeEpoch: 2, streamEpoch: 3, registerFirst: false },
    },
    {
      name: 'open by a dead node already fenced by another takeover → take over without registering',
      leader: '1',
      leaderEpoch: 4,
      stream: open('3', 6, 3),
      decision: { action: 'takeOver', node: '3', nodeEpoch: 6, streamEpoch: 3, registerFirst: false },
    },
    // A bucket led by another node (or by nobody yet).
    { name: 'led elsewhere, still open by us → close', leader: '2', leaderEpoch: 5, stream: open('1', 5, 4), decision: { action: 'close', streamEpoch: 4 } },
    { name: 'led elsewhere, open by the leader → none', leader: '2', leaderEpoch: 5, stream: open('2', 3, 5), decision: { action: 'none' } },
    { name: 'led elsewhere, closed after we opened it → none', leader: '2', leaderEpoch: 5, stream: closed(4, '1', 5), decision: { action: 'none' } },
    {
      name: 'led elsewhere, open by our previous incarnation → none (the leader takes it over)',
      leader: '2',
      leaderEpoch: 5,
      stream: open('1', 4, 4),
      decision: { action: 'none' },
    },
    { name: 'no leader yet → none', leader: null, leaderEpoch: 0, stream: closed(0), decision: { action: 'none' } },
  ])('$name', ({ leader, leaderEpoch, stream, decision }) => {
    // Proves each row of the decision table returns the action (and its epochs) the rule prescribes.
    expect(decideSync(viewWith([record(leader, leaderEpoch, stream)]), self, live, BUCKET)).toEqual(decision);
  });

  it('drops a bucket that is gone from the view', () => {
    // Proves the close case "a bucket it leads disappears": local state is dropped.
    expect(decideSync(viewWith([]), self, live, BUCKET)).toEqual({ action: 'drop' });
  });

  it.each([
    { name: 'a closed stream above the leader epoch', leader: '1', stream: closed(5) },
    { name: 'an open stream above the leader epoch', leader: '2', stream: open('1', 5, 5) },
    { name: 'an open stream without a node', leader: '1', stream: { state: 'open', epoch: 3, node: null, nodeEpoch: 0, ...STORAGE_EMPTY } as StreamRecord },
  ])('asserts on a broken invariant: $name', ({ leader, stream }) => {
    // Proves impossible views crash instead of being acted upon.
    expect(() => decideSync(viewWith([record(leader, 4, stream)]), self, live, BUCKET)).toThrow(/invariant broken/);
  });
});

describe('bucketsToSync', () => {
  it('lists the buckets we lead and those open by any incarnation of us, in bucket order', () => {
    // Proves the sync task looks at exactly the buckets it may have to open, close or take over.
    const view = viewWith([
      record('1', 2, closed(0), 10, 0), // led by us: included
      record('2', 2, open('1', 4, 1), 9, 3), // open by our previous incarnation: included
      record('2', 2, open('1', 5, 1), 9, 1), // open by us: included
      record('2', 2, closed(1, '1', 5), 9, 2), // closed by us, led elsewhere: excluded
      record('3', 2, open('3', 7, 2), 9, 0), // someone else's: excluded
      record('1', 2, open('2', 3, 1), 2, 0), // led by us, held by another: included
    ]);
    expect(bucketsToSync(view, self)).toEqual(['2//0', '9//1', '9//3', '10//0']);
  });

  it('is empty for a node that leads and holds nothing', () => {
    // Proves a node with no buckets has nothing to sync.
    expect(bucketsToSync(viewWith([record('2', 1, open('2', 3, 1))]), { nodeId: '3', nodeEpoch: 8 })).toEqual([]);
  });
});

describe('bucketsTouchedBy', () => {
  const ok: Outcome = { ok: true };
  const spec = { name: 't', columns: [{ name: 'id', type: 'int64' as const }], buckets: 2 };
  const address = { tableId: 4, partition: null, bucket: 1 };
  it.each<[string, Command, Outcome, ReturnType<typeof bucketsTouchedBy>]>([
    ['a rejected command touches nothing', { type: 'LeadBucket', coordinatorEpoch: 1, ...address, leader: '1' }, { ok: false, rejection: { code: 'Fenced', message: 'x' } }, 'none'],
    ['a CreateTable with leaders touches its buckets', { type: 'CreateTable', coordinatorEpoch: 1, spec, createdAtMs: 1, leaders: ['1', '2'] }, { ok: true, tableId: 7 }, ['7//0', '7//1']],
    ['a CreateTable without leaders touches nothing (its buckets have no leader yet)', { type: 'CreateTable', coordinatorEpoch: 1, spec, createdAtMs: 1 }, { ok: true, tableId: 7 }, 'none'],
    ['a LeadBucket touches its bucket', { type: 'LeadBucket', coordinatorEpoch: 1, ...address, leader: '1' }, ok, ['4//1']],
    ['an OpenStream touches its bucket', { type: 'OpenStream', nodeId: '1', nodeEpoch: 1, ...address, leaderEpoch: 1 }, ok, ['4//1']],
    ['a CloseStream touches its bucket', { type: 'CloseStream', nodeId: '1', nodeEpoch: 1, ...address, streamEpoch: 1 }, ok, ['4//1']],
    ['a LeadBuckets touches every bucket it names', { type: 'LeadBuckets', coordinatorEpoch: 1, buckets: [{ ...address, leader: '1' }, { tableId: 5, partition: 'p', bucket: 0, leader: '2' }] }, { ok: true, led: [] }, ['4//1', '5/p/0']],
    ['an OpenStreams touches every stream it names', { type: 'OpenStreams', nodeId: '1', nodeEpoch: 1, streams: [{ ...address, leaderEpoch: 1 }] }, { ok: true, opened: [] }, ['4//1']],
    ['a CloseStreams touches every stream it names', { type: 'CloseStreams', nodeId: '1', nodeEpoch: 1, streams: [{ ...address, streamEpoch: 1 }] }, { ok: true, closed: [] }, ['4//1']],
    ['a RegisterNode may fence streams anywhere', { type: 'RegisterNode', nodeId: '3' }, { ok: true, epoch: 2 }, 'all'],
    ['a DropTable removes buckets only the sync task knows it held', { type: 'DropTable', coordinatorEpoch: 1, name: 't' }, { ok: true, tableId: 4 }, 'all'],
    ['a CommitWal changes no ownership', { type: 'CommitWal', nodeId: '1', nodeEpoch: 1, object: 'o', ranges: [] }, ok, 'none'],
    ['a ForgetObjects changes no ownership', { type: 'ForgetObjects', keys: [] }, ok, 'none'],
  ])('%s', (_name, command, outcome, expected) => {
    expect(bucketsTouchedBy(command, outcome)).toEqual(expected);
  });
});
