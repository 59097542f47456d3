import { apply, emptyView, type Command, type View } from '@mink/meta';

/** Buckets of the one table the history creates; each has its own stream that CommitWal entries extend. */
const HISTORY_BUCKETS = 4;
const HISTORY_NODES = ['1', '2', '3'];
/** One steady entry in this many is a WAL commit (each names a new object); the others re-register spare nodes. */
const COMMIT_EVERY_ENTRIES = 5;
/** Entries before the first CommitWal: coordinator, nodes, table, one LeadBucket and one OpenStream per bucket. */
const SETUP_ENTRIES = 1 + HISTORY_NODES.length + 1 + 2 * HISTORY_BUCKETS;

function leaderOf(bucket: number): string {
  return HISTORY_NODES[bucket % HISTORY_NODES.length]!;
}

/**
 * The command at position `index` (0-based; it lands at log sequence index + 1 in a fresh log) of a
 * deterministic history that builds a view with every kind of record: a coordinator, nodes, a table with
 * leaders and open streams, and then, forever, WAL commits that add slices and idempotent writers to the
 * streams, between re-registrations of spare nodes that move node epochs. The spare nodes lead nothing, so
 * every entry is accepted and the view keeps growing like a real cluster's.
 */
export function historyCommand(index: number): Command {
  if (index === 0) return { type: 'RegisterCoordinator', coordinatorId: 'coordinator-1' };
  if (index <= HISTORY_NODES.length) {
    const nodeId = HISTORY_NODES[index - 1]!;
    return { type: 'RegisterNode', nodeId, address: `mink.node.${nodeId}`, kafka: `127.0.0.1:${9091 + Number(nodeId)}`, http: `127.0.0.1:${8080 + Number(nodeId)}` };
  }
  if (index === HISTORY_NODES.length + 1) {
    return {
      type: 'CreateTable',
      coordinatorEpoch: 1,
      createdAtMs: 1_700_000_000_000,
      spec: { name: 'events', columns: [{ name: 'id', type: 'int64' }, { name: 'body', type: 'string' }], buckets: HISTORY_BUCKETS, properties: { owner: 'tests' } },
    };
  }
  const leadIndex = index - (HISTORY_NODES.length + 2);
  if (leadIndex < HISTORY_BUCKETS) {
    return { type: 'LeadBucket', coordinatorEpoch: 1, tableId: 1, partition: null, bucket: leadIndex, leader: leaderOf(leadIndex) };
  }
  const openIndex = leadIndex - HISTORY_BUCKETS;
  if (openIndex < HISTORY_BUCKETS) {
    return { type: 'OpenStream', nodeId: leaderOf(openIndex), nodeEpoch: 1, tableId: 1, partition: null, bucket: openIndex, leaderEpoch: 1 };
  }
  const steadyIndex = index - SETUP_ENTRIES;
  if (steadyIndex % COMMIT_EVERY_ENTRIES !== 0) return { type: 'RegisterNode', nodeId: `spare-${steadyIndex % 7}` };
  const commitIndex = steadyIndex / COMMIT_EVERY_ENTRIES;
  const bucket = commitIndex % HISTORY_BUCKETS;
  const batch = Math.floor(commitIndex / HISTORY_BUCKETS);
  const nodeId = leaderOf(bucket);
  return {
    type: 'CommitWal',
    nodeId,
    nodeEpoch: 1,
    object: `wal/${nodeId}/1/${index}`,
    ranges: [
      { tableId: 1, partition: null, bucket, streamEpoch: 1, startOffset: batch * 10, endOffset: batch * 10 + 10, position: 0, length: 640, writer: { id: `writer-${bucket}`, seq: batch } },
    ],
  };
}

/** The view after the first `count` entries of the history, computed with the pure `apply`: a full replay. */
export function historyView(count: number): View {
  let view = emptyView();
  for (let index = 0; index < count; index++) view = apply(view, index + 1, historyCommand(index)).view;
  return view;
}

/** Counts of accepted and rejected entries in the first `count`, so tests can check the history is valid. */
export function historyRejections(count: number): number {
  let view = emptyView();
  let rejected = 0;
  for (let index = 0; index < count; index++) {
    const applied = apply(view, index + 1, historyCommand(index));
    view = applied.view;
    if (!applied.outcome.ok) rejected += 1;
  }
  return rejected;
}
