import { apply } from './apply';
import type { Command } from './commands';
import { deepFreeze } from './deep-freeze';
import { emptyView, type TableRecord, type View } from './view';
import { getIn, shardedFrom } from './sharded-map';

const EVENTS: TableRecord = {
  id: 2,
  name: 'events',
  kind: 'log',
  columns: [{ name: 'id', type: 'int64' }],
  primaryKey: [],
  bucketKey: [],
  buckets: 2,
  properties: { 'table.log.ttl': '1d', owner: 'team-a' },
  createdAtMs: 0,
  partitions: [],
};

function viewWith(table: TableRecord = EVENTS): View {
  return deepFreeze({ ...emptyView(), seq: 3, coordinator: { node: 'c1', epoch: 5 }, tables: shardedFrom({ [table.name]: table }), nextTableId: 3 });
}

function alter(view: View, properties: unknown, extra: object = {}) {
  return apply(view, view.seq + 1, { type: 'AlterTable', coordinatorEpoch: 5, name: 'events', properties, ...extra } as Command);
}

describe('AlterTable', () => {
  it.each<[string, Record<string, string | null>, Record<string, string>]>([
    ['turns the lake on with a freshness', { 'table.datalake.enabled': 'true', 'table.datalake.freshness': '30s' }, { 'table.log.ttl': '1d', owner: 'team-a', 'table.datalake.enabled': 'true', 'table.datalake.freshness': '30s' }],
    ['changes the TTL', { 'table.log.ttl': '0' }, { 'table.log.ttl': '0', owner: 'team-a' }],
    ['removes a property back to its default with null', { 'table.log.ttl': null }, { owner: 'team-a' }],
  ])('%s', (_case, properties, expected) => {
    const before = viewWith();
    const { view, outcome } = alter(before, properties);
    expect(outcome).toEqual({ ok: true });
    expect(getIn(view.tables, 'events')!.properties).toEqual(expected);
    expect(getIn(view.tables, 'events')!.columns).toBe(getIn(before.tables, 'events')!.columns);
  });

  it.each<[string, unknown, object, string, string]>([
    ['a deposed coordinator', { 'table.log.ttl': '2d' }, { coordinatorEpoch: 4 }, 'Fenced', 'coordinator epoch 4 is fenced: current is 5'],
    ['an unknown table', { 'table.log.ttl': '2d' }, { name: 'clicks' }, 'NotFound', "table 'clicks' does not exist"],
    ['a property fixed at creation', { 'table.log.format': 'kafka' }, {}, 'InvalidArgument', "property 'table.log.format' cannot be changed after the table is created"],
    ['a bad value', { 'table.datalake.freshness': 'often' }, {}, 'InvalidArgument', "property 'table.datalake.freshness': 'often' is not a duration"],
    ['a value that is not a string', { 'table.log.ttl': 7 }, {}, 'InvalidArgument', "property 'table.log.ttl' must be a string, or null to remove it"],
    ['no property at all', {}, {}, 'InvalidArgument', 'AlterTable names no property'],
    ['properties that are not an object', 'ttl=1d', {}, 'InvalidArgument', 'AlterTable.properties must be'],
  ])('refuses %s', (_case, properties, extra, code, message) => {
    const before = viewWith();
    const { view, outcome } = alter(before, properties, extra);
    expect(outcome).toMatchObject({ ok: false, rejection: { code } });
    expect((outcome as { rejection: { message: string } }).rejection.message).toContain(message);
    expect(view).toEqual({ ...before, seq: 4 });
  });

  it('refuses the lake on a Kafka topic', () => {
    const topic = { ...EVENTS, properties: { 'table.log.format': 'kafka' } };
    const { outcome } = alter(viewWith(topic), { 'table.datalake.enabled': 'true' });
    expect(outcome).toEqual({ ok: false, rejection: { code: 'InvalidArgument', message: "a Kafka topic cannot have 'table.datalake.enabled' yet" } });
  });
});
