import { apply, emptyView, getIn, valuesIn, type Command, type Outcome, type TableSpec, type View } from '@mink/meta';
import { PartitionLifecycle, type PartitionLifecyclePorts } from './partition-lifecycle';

/** 2026-12-01T17:30:00Z: hour 2026120117, day 20261201. */
const NOW_MS = Date.UTC(2026, 11, 1, 17, 30);
const WALL_MS = 1_000_000;

const HOURLY: TableSpec = {
  name: 'events',
  columns: [
    { name: 'id', type: 'int64' },
    { name: 'at', type: 'timestamp' },
  ],
  buckets: 3,
  partition: { column: 'at', unit: 'hour', retain: 2, precreate: 1 },
};

/**
 * The ports of one coordinator replica over a metadata log that the real state machine applies: nodes 1 to 3
 * registered, coordinator epoch 1, and the tables given created. Records every proposal, every count and
 * every log line.
 */
class FakeReplica implements PartitionLifecyclePorts {
  view_: View = emptyView();
  epoch: number | null = 1;
  live = new Set(['1', '2', '3']);
  planningMs = NOW_MS;
  proposed: Command[] = [];
  counted: string[] = [];
  lines: { level: string; fields: Record<string, unknown>; message: string }[] = [];
  /** Runs before each proposal applies: a test's chance to change the world under a round. */
  beforeApply: (command: Command) => void = () => undefined;

  logger = {
    info: (fields: Record<string, unknown>, message: string) => this.lines.push({ level: 'info', fields, message }),
    warn: (fields: Record<string, unknown>, message: string) => this.lines.push({ level: 'warn', fields, message }),
    debug: (fields: Record<string, unknown>, message: string) => this.lines.push({ level: 'debug', fields, message }),
  };

  constructor(tables: TableSpec[] = [HOURLY]) {
    for (const nodeId of ['1', '2', '3']) this.append({ type: 'RegisterNode', nodeId });
    this.append({ type: 'RegisterCoordinator', coordinatorId: 'c1' });
    for (const spec of tables) this.append({ type: 'CreateTable', coordinatorEpoch: 1, spec, createdAtMs: 0 });
  }

  append(command: Command): Outcome {
    const applied = apply(this.view_, this.view_.seq + 1, command);
    if (!applied.outcome.ok && !command.type.includes('Partition')) throw new Error(`setup refused: ${applied.outcome.rejection.message}`);
    this.view_ = applied.view;
    return applied.outcome;
  }

  view(): View {
    return this.view_;
  }
  actingEpoch(): number | null {
    return this.epoch;
  }
  liveNodes(): ReadonlySet<string> {
    return this.live;
  }
  async propose(command: Command): Promise<Outcome> {
    this.proposed.push(command);
    this.beforeApply(command);
    return this.append(command);
  }
  planningNowMs(): number {
    return this.planningMs;
  }
  wallNowMs(): number {
    return WALL_MS;
  }
  changed(action: 'create' | 'drop'): void {
    this.counted.push(action);
  }

  partitionsOf(table: string): string[] {
    return getIn(this.view_.tables, table)!.partitions;
  }
  messages(level: string): string[] {
    return this.lines.filter((line) => line.level === level).map((line) => line.message);
  }
}

describe('PartitionLifecycle: the lease holder creates partitions ahead and drops those past retain', () => {
  it('creates the current hour and the next precreate, each led by the assignment rule in the create itself, and counts and logs them', async () => {
    // Proves a round turns the planner's plan into CreatePartition entries under the lease's epoch, with leaders.
    const replica = new FakeReplica();
    await new PartitionLifecycle(replica, 64).requestRound();
    expect(replica.partitionsOf('events')).toEqual(['2026120117', '2026120118']);
    const creates = replica.proposed.filter((command) => command.type === 'CreatePartition');
    expect(creates).toHaveLength(2);
    for (const command of creates) {
      expect(command).toMatchObject({ coordinatorEpoch: 1, table: 'events' });
      // Bucket i on live node (i + start) % 3: three buckets over three nodes, one each.
      expect([...(command as { leaders: string[] }).leaders].sort()).toEqual(['1', '2', '3']);
    }
    // Consecutive partitions begin on different nodes.
    expect((creates[0] as { leaders: string[] }).leaders[0]).not.toBe((creates[1] as { leaders: string[] }).leaders[0]);
    expect(replica.counted).toEqual(['create', 'create']);
    expect(replica.lines.filter((line) => line.message === 'partition created').map((line) => line.fields)).toEqual([
      { action: 'create', table: 'events', tableId: 1, partition: '2026120117', coordinatorEpoch: 1, leaders: (creates[0] as { leaders: string[] }).leaders },
      { action: 'create', table: 'events', tableId: 1, partition: '2026120118', coordinatorEpoch: 1, leaders: (creates[1] as { leaders: string[] }).leaders },
    ]);
    // The new buckets are led at once, above the epoch floor of their entry.
    const buckets = [...valuesIn(replica.view_.buckets)];
    expect(buckets).toHaveLength(6);
    expect(buckets.every((record) => record.leader !== null && record.leaderEpoch > 1)).toBe(true);
  });

  it('does nothing more on a second round at the same time, and nothing at all on a replica without the lease', async () => {
    const replica = new FakeReplica();
    const lifecycle = new PartitionLifecycle(replica, 64);
    await lifecycle.requestRound();
    const proposedAfterFirst = replica.proposed.length;
    await lifecycle.requestRound();
    expect(replica.proposed).toHaveLength(proposedAfterFirst);

    const follower = new FakeReplica();
    follower.epoch = null;
    await new PartitionLifecycle(follower, 64).requestRound();
    expect(follower.proposed).toEqual([]);
  });

  it('drops the partitions past retain when the planning clock moves on, stamping the drops with the wall clock', async () => {
    // Proves MINK_PARTITION_CLOCK_OFFSET_MS moves only the plan: the grace period of released objects starts at the real time.
    const replica = new FakeReplica();
    const lifecycle = new PartitionLifecycle(replica, 64);
    await lifecycle.requestRound();
    replica.planningMs = NOW_MS + 2 * 3_600_000;
    await lifecycle.requestRound();
    expect(replica.partitionsOf('events')).toEqual(['2026120118', '2026120119', '2026120120']);
    expect(replica.proposed.filter((command) => command.type === 'DropPartition')).toEqual([
      { type: 'DropPartition', coordinatorEpoch: 1, table: 'events', partition: '2026120117', atMs: WALL_MS },
    ]);
    expect(replica.counted).toEqual(['create', 'create', 'create', 'create', 'drop']);
    expect(replica.messages('info')).toContain('partition dropped');
  });

  it('creates leaderless partitions when no node is live, for the orphan re-leading to lead', async () => {
    const replica = new FakeReplica();
    replica.live = new Set();
    await new PartitionLifecycle(replica, 64).requestRound();
    expect(replica.proposed.every((command) => command.type === 'CreatePartition' && command.leaders === undefined)).toBe(true);
    expect(replica.partitionsOf('events')).toHaveLength(2);
  });

  it('proposes at most actionsPerRoundMax entries a round, the rest in later rounds', async () => {
    const replica = new FakeReplica([{ ...HOURLY, partition: { column: 'at', unit: 'hour', precreate: 5 } }]);
    const lifecycle = new PartitionLifecycle(replica, 4);
    await lifecycle.requestRound();
    expect(replica.partitionsOf('events')).toHaveLength(4);
    await lifecycle.requestRound();
    expect(replica.partitionsOf('events')).toHaveLength(6);
  });

  it('treats a partition another round created meanwhile as done, and goes on with the plan', async () => {
    // Proves a Conflict refusal is normal: it is logged at debug, not as a problem, and the round continues.
    const replica = new FakeReplica();
    replica.beforeApply = (command) => {
      if (command.type === 'CreatePartition' && command.partition === '2026120117' && !replica.partitionsOf('events').includes('2026120117')) {
        replica.append({ type: 'CreatePartition', coordinatorEpoch: 1, table: 'events', partition: '2026120117' });
      }
    };
    await new PartitionLifecycle(replica, 64).requestRound();
    expect(replica.partitionsOf('events')).toEqual(['2026120117', '2026120118']);
    expect(replica.messages('debug')).toEqual(['partition already as planned']);
    expect(replica.messages('warn')).toEqual([]);
    expect(replica.counted).toEqual(['create']);
  });

  it('stops a round at the first refusal for a stale coordinator epoch', async () => {
    // Proves a deposed holder stops proposing: another replica registered as coordinator under the round.
    const replica = new FakeReplica();
    replica.beforeApply = () => {
      if (replica.view_.coordinator.epoch === 1) replica.append({ type: 'RegisterCoordinator', coordinatorId: 'c2' });
    };
    await new PartitionLifecycle(replica, 64).requestRound();
    expect(replica.proposed).toHaveLength(1);
    expect(replica.partitionsOf('events')).toEqual([]);
    expect(replica.messages('warn')).toEqual(['partition round fenced: this replica is no longer the coordinator']);
  });

  it('stops a round when the lease is lost between two proposals', async () => {
    const replica = new FakeReplica();
    replica.beforeApply = () => {
      replica.epoch = null;
    };
    await new PartitionLifecycle(replica, 64).requestRound();
    expect(replica.proposed).toHaveLength(1);
  });

  it('runs one more round right after the one in flight when asked during it, so a table created meanwhile gets its partitions', async () => {
    // Proves the trigger after CreateTable is never lost to a round that planned before the table existed.
    const replica = new FakeReplica([]);
    const lifecycle = new PartitionLifecycle(replica, 64);
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    replica.append({ type: 'CreateTable', coordinatorEpoch: 1, spec: { ...HOURLY, name: 'first' }, createdAtMs: 0 });
    const propose = replica.propose.bind(replica);
    let calls = 0;
    replica.propose = async (command) => {
      calls += 1;
      if (calls === 1) await held;
      return propose(command);
    };
    const first = lifecycle.requestRound();
    replica.append({ type: 'CreateTable', coordinatorEpoch: 1, spec: { ...HOURLY, name: 'second' }, createdAtMs: 0 });
    const second = lifecycle.requestRound();
    release();
    await Promise.all([first, second]);
    expect(replica.partitionsOf('first')).toEqual(['2026120117', '2026120118']);
    expect(replica.partitionsOf('second')).toEqual(['2026120117', '2026120118']);
  });

  it('logs a round that failed and keeps running later rounds', async () => {
    const replica = new FakeReplica();
    replica.propose = () => Promise.reject(new Error('log unavailable'));
    const lifecycle = new PartitionLifecycle(replica, 64);
    await expect(lifecycle.requestRound()).resolves.toBeUndefined();
    expect(replica.messages('warn')).toEqual(['partition round failed']);
  });

  it('runs rounds on its interval once started, and none after it stopped', async () => {
    jest.useFakeTimers();
    try {
      const replica = new FakeReplica();
      const lifecycle = new PartitionLifecycle(replica, 64);
      lifecycle.start(5_000);
      expect(() => lifecycle.start(5_000)).toThrow('started once');
      expect(replica.proposed).toEqual([]);
      await jest.advanceTimersByTimeAsync(5_000);
      expect(replica.partitionsOf('events')).toHaveLength(2);
      await lifecycle.stop();
      replica.planningMs = NOW_MS + 3_600_000;
      await jest.advanceTimersByTimeAsync(20_000);
      expect(replica.partitionsOf('events')).toHaveLength(2);
    } finally {
      jest.useRealTimers();
    }
  });
});
