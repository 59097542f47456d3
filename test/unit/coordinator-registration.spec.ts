import { LIMITS } from '@mink/config';
import { SUBJECTS } from '@mink/protocol';
import { requestJson } from '@mink/transport';
import { SimClient, SimCoordinator, SimDataNode, SimWorld, SIM_TICK_MS } from '../simulation/sim-cluster';
import { SimRandom } from '../simulation/sim-random';
import { useSimulatedClock } from '../simulation/sim-run';

/**
 * The production Coordinator over the simulation's in-memory ports (test/simulation): a replica that takes
 * the lease while the metadata log refuses appends cannot register as coordinator at once; it must not
 * sit on the lease doing nothing (no orphaned bucket would be re-led until it lost the lease), so it
 * registers at a later tick, once the log takes appends again.
 */
describe('a coordinator whose registration fails when it takes the lease', () => {
  useSimulatedClock();

  it('registers at a later tick while it holds the lease, and acts as the coordinator from then on', async () => {
    const world = new SimWorld(new SimRandom(1));
    const lines = () => world.logLines.map((line) => JSON.parse(line) as { msg: string; coordinatorEpoch?: number });
    // Every append of the first proposal is lost: RegisterCoordinator fails with Unavailable.
    world.log.failNextAppends(LIMITS.proposeAttemptsMax, 'lost-request');
    const coordinator = new SimCoordinator(world, 'c1', 1);
    let started = false;
    void coordinator.start().then(() => (started = true));
    for (let step = 0; step < 100 && !started; step++) await jest.advanceTimersByTimeAsync(20);
    expect(started).toBe(true);
    for (let step = 0; step < 100 && !lines().some((line) => line.msg === 'acquired the coordinator lease'); step++) await jest.advanceTimersByTimeAsync(SIM_TICK_MS / 5);

    const messages = lines().map((line) => line.msg);
    expect(messages.filter((msg) => msg === 'could not register as coordinator; trying again at the next tick while the lease is held')).toHaveLength(1);
    expect(lines().find((line) => line.msg === 'acquired the coordinator lease')?.coordinatorEpoch).toBe(1);
    expect(world.log.entries().map((entry) => entry.command)).toEqual([{ type: 'RegisterCoordinator', coordinatorId: 'c1' }]);
    coordinator.kill();
  });

  it('registers again when a later registration fences it while it holds the lease', async () => {
    // A registration that landed late (another replica's, made before this one took the lease) names
    // another coordinator in the view; the holder proposes nothing that would be refused, yet must act.
    const world = new SimWorld(new SimRandom(2));
    const lines = () => world.logLines.map((line) => JSON.parse(line) as { msg: string; coordinatorEpoch?: number; reason?: string });
    const coordinator = new SimCoordinator(world, 'c1', 1);
    let started = false;
    void coordinator.start().then(() => (started = true));
    for (let step = 0; step < 100 && !lines().some((line) => line.msg === 'acquired the coordinator lease'); step++) await jest.advanceTimersByTimeAsync(20);
    expect(started).toBe(true);
    await world.log.append({ type: 'RegisterCoordinator', coordinatorId: 'c2' }, 'late-registration-of-c2');
    for (let step = 0; step < 100 && lines().filter((line) => line.msg === 'acquired the coordinator lease').length < 2; step++) await jest.advanceTimersByTimeAsync(SIM_TICK_MS / 5);

    expect(lines().find((line) => line.msg === 'no longer the coordinator')).toMatchObject({ coordinatorEpoch: 1, reason: 'a newer coordinator epoch is in the view' });
    expect(lines().filter((line) => line.msg === 'acquired the coordinator lease').map((line) => line.coordinatorEpoch)).toEqual([1, 3]);
    expect(world.log.entries().map((entry) => entry.command)).toEqual([
      { type: 'RegisterCoordinator', coordinatorId: 'c1' },
      { type: 'RegisterCoordinator', coordinatorId: 'c2' },
      { type: 'RegisterCoordinator', coordinatorId: 'c1' },
    ]);
    coordinator.kill();
  });

  it('answers a create its fenced epoch made the log refuse as Unavailable (ask again), not as the caller\'s conflict', async () => {
    // A lease that changed hands under load answered creates with 409 Fenced in the 100 000-bucket bench: the
    // log refused the entry, so nothing was done, and the caller is told to ask again (the TypeScript client does).
    const world = new SimWorld(new SimRandom(3));
    const lines = () => world.logLines.map((line) => JSON.parse(line) as { msg: string; coordinatorEpoch?: number });
    const coordinator = new SimCoordinator(world, 'c1', 1);
    let started = false;
    void coordinator.start().then(() => (started = true));
    for (let step = 0; step < 100 && !(started && lines().some((line) => line.msg === 'acquired the coordinator lease')); step++) await jest.advanceTimersByTimeAsync(20);
    // A live data node to lead the table's buckets.
    const node = new SimDataNode(world, '1', 1);
    let nodeStarted = false;
    void node.start().then(() => (nodeStarted = true));
    for (let step = 0; step < 200 && !(nodeStarted && node.member?.liveNodes().has('1') === true); step++) await jest.advanceTimersByTimeAsync(20);
    const client = new SimClient(world, 'client');
    await world.log.append({ type: 'RegisterCoordinator', coordinatorId: 'c2' }, 'late-registration-of-c2');
    let outcome: { created: unknown } | { error: unknown } | undefined;
    const spec = { name: 'events', columns: [{ name: 'id', type: 'int64' }], buckets: 2 };
    void requestJson(client.connection.asNats(), SUBJECTS.coordinatorRpc, { op: 'createTable', spec }, 5_000).then(
      (created) => (outcome = { created }),
      (error: unknown) => (outcome = { error }),
    );
    for (let step = 0; step < 100 && outcome === undefined; step++) await jest.advanceTimersByTimeAsync(20);

    expect(outcome).toEqual({ error: expect.objectContaining({ code: 'Unavailable', message: expect.stringMatching(/^the coordinator changed while this request was decided, and nothing was done; ask again/) }) });
    // The create carried the fenced epoch 1 and the log refused it: no table.
    const creates = world.log.entries().filter((entry) => entry.command.type === 'CreateTable');
    expect(creates.map((entry) => (entry.command as { coordinatorEpoch: number }).coordinatorEpoch)).toEqual([1]);
    coordinator.kill();
    node.kill();
  });
});
