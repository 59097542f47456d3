import type { MinkClient } from '@mink/client';
import { bucketId, emptyShardedMap, shardedFrom, type View } from '@mink/meta';
import { NotFoundError } from '@mink/protocol';
import type { ClusterMember } from '@mink/runtime';
import { bucketRecordOf, logTableRecord } from '@mink/testing';
import { GatewayService } from './gateway-service';

/**
 * The gateway's tail of the log is paced, so its view may be up to a pace behind the log. These tests
 * prove that its metadata reads catch up first, and that a write to a table its view does not know yet
 * catches up before it is refused: a member whose view is behind and whose store's catchUp brings the
 * newer view, as a paced MetaStore does.
 */
function viewOf(...names: string[]): View {
  return { tables: shardedFrom(Object.fromEntries(names.map((name, index) => [name, logTableRecord(index + 1, name, 1)]))), buckets: emptyShardedMap(), nodes: {} } as unknown as View;
}

function memberBehind(seen: View, current: View): { member: ClusterMember; catchUps: () => number } {
  let catchUps = 0;
  const member = {
    view: seen,
    store: {
      catchUp: async () => {
        catchUps += 1;
        member.view = current;
        return current;
      },
    },
  };
  return { member: member as unknown as ClusterMember, catchUps: () => catchUps };
}

describe('GatewayService over a view that is behind the log', () => {
  it('lists and describes the tables as the log holds them now, not as the view held them', async () => {
    // Proves a table dropped through another process (a Kafka DeleteTopics) is gone at once for the HTTP API, and one created there is present.
    const { member } = memberBehind(viewOf('dropped', 'kept'), viewOf('kept', 'created'));
    const gateway = new GatewayService(member, {} as MinkClient);
    expect((await gateway.listTables()).tables.map((table) => table.name)).toEqual(['created', 'kept']);
    await expect(gateway.describeTable('dropped')).rejects.toBeInstanceOf(NotFoundError);
    await expect(gateway.describeTable('created')).resolves.toMatchObject({ name: 'created' });
  });

  it('sends a write to a table its view did not know yet once caught up, and refuses one the log does not hold either', async () => {
    // Proves an append right after a create through another process is not refused as NotFound.
    const { member, catchUps } = memberBehind(viewOf('kept'), viewOf('kept', 'created'));
    const deleted: string[] = [];
    const client = { table: (name: string) => ({ delete: async () => deleted.push(name) }) } as unknown as MinkClient;
    const gateway = new GatewayService(member, client);
    await gateway.delete('kept', { keys: [{ ts: 1 }] });
    expect(catchUps()).toBe(0);
    await gateway.delete('created', { keys: [{ ts: 1 }] });
    expect(catchUps()).toBe(1);
    await expect(gateway.delete('missing', { keys: [{ ts: 1 }] })).rejects.toBeInstanceOf(NotFoundError);
    expect(deleted).toEqual(['kept', 'created']);
  });
});

describe('GatewayService.clusterStatus', () => {
  // Two tables, their buckets' end offsets 10·(bucket + 1) for `clicks` and 5 for `views`; no node is live, so no status query goes out.
  const clicks = logTableRecord(1, 'clicks', 2);
  const views = logTableRecord(2, 'views', 1);
  const records = [bucketRecordOf(clicks, null, 0, '1', 1), bucketRecordOf(clicks, null, 1, '2', 1), bucketRecordOf(views, null, 0, '1', 1)].map((record) => ({
    ...record,
    stream: { ...record.stream, endOffset: record.table === 'clicks' ? 10 * (record.bucket + 1) : 5 },
  }));
  const view = {
    tables: shardedFrom({ clicks, views }),
    buckets: shardedFrom(Object.fromEntries(records.map((record) => [bucketId(record.tableId, record.partition, record.bucket), record]))),
    nodes: {},
    coordinator: { node: 'coordinator-1', epoch: 3 },
  } as unknown as View;
  const member = { view, store: { catchUp: async () => view }, liveNodes: () => new Set<string>() } as unknown as ClusterMember;
  const gateway = new GatewayService(member, {} as MinkClient);
  const TOTALS = [
    { table: 'clicks', buckets: 2, endOffset: 30, bytes: 0 },
    { table: 'views', buckets: 1, endOffset: 5, bytes: 0 },
  ];

  it('gives every table its totals in the summary, without the bucket list', async () => {
    // Proves a poller of ?buckets=false gets each table's records (for its rate) without one row per bucket.
    expect(await gateway.clusterStatus({ listBuckets: false })).toEqual({ coordinator: { node: 'coordinator-1', epoch: 3 }, nodes: [], bucketStates: { open: 0, opening: 0, unavailable: 3 }, tables: TOTALS });
  });

  it('lists the buckets of one table when asked for it, with the totals of every table', async () => {
    // Proves ?table= lists that table's buckets alone, in bucket order, while the counts and totals still cover the cluster.
    const status = await gateway.clusterStatus({ listBuckets: true, table: 'clicks' });
    expect(status.tables).toEqual(TOTALS);
    expect(status.bucketStates).toEqual({ open: 0, opening: 0, unavailable: 3 });
    expect(status.buckets!.map((bucket) => [bucket.table, bucket.bucket, bucket.leader, bucket.endOffset, bucket.state])).toEqual([
      ['clicks', 0, '1', 10, 'unavailable'],
      ['clicks', 1, '2', 20, 'unavailable'],
    ]);
    expect((await gateway.clusterStatus()).buckets!.map((bucket) => bucket.table)).toEqual(['clicks', 'clicks', 'views']);
  });

  it('refuses a table the view does not hold as NotFound', async () => {
    await expect(gateway.clusterStatus({ listBuckets: true, table: 'missing' })).rejects.toBeInstanceOf(NotFoundError);
  });
});
