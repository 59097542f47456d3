import type { MinkClient } from '@mink/client';
import { emptyShardedMap, shardedFrom, type View } from '@mink/meta';
import { NotFoundError } from '@mink/protocol';
import type { ClusterMember } from '@mink/runtime';
import { logTableRecord } from '@mink/testing';
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
