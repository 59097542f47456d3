import { LIMITS } from '@mink/config';
import { SimCoordinator, SimWorld, SIM_TICK_MS } from '../simulation/sim-cluster';
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
});
