import { setTimeout as sleep } from 'node:timers/promises';
import { PeriodicRounds } from './periodic-rounds';

describe('PeriodicRounds', () => {
  it('never runs two rounds at once, even when a round outlasts the interval, and stop waits for the round in flight', async () => {
    // Proves the schedule starts the next round only after the previous one finished, and that nothing runs after stop resolves.
    let running = 0;
    let runningMax = 0;
    let finished = 0;
    const rounds = new PeriodicRounds(async () => {
      running++;
      runningMax = Math.max(runningMax, running);
      await sleep(15);
      running--;
      finished++;
    }, () => undefined);
    rounds.start(1);
    // Wait for rounds by count, not by time: on a loaded machine 60 ms may hold a single round.
    const deadline = Date.now() + 10_000;
    while (finished < 3 && Date.now() < deadline) await sleep(5);
    await rounds.stop();
    expect(runningMax).toBe(1);
    expect(running).toBe(0);
    expect(finished).toBeGreaterThanOrEqual(2);
    const finishedAtStop = finished;
    await sleep(30);
    expect(finished).toBe(finishedAtStop);
  });

  it('reports a failing round and keeps the schedule going, even when the reporter throws', async () => {
    // Proves one bad round (or a broken reporter) does not end the background work.
    const errors: string[] = [];
    let calls = 0;
    const rounds = new PeriodicRounds(
      async () => {
        calls++;
        throw new Error(`round ${calls} failed`);
      },
      (error) => {
        errors.push((error as Error).message);
        throw new Error('the reporter is broken too');
      },
    );
    rounds.start(1);
    while (calls < 3) await sleep(1);
    await rounds.stop();
    expect(errors.slice(0, 3)).toEqual(['round 1 failed', 'round 2 failed', 'round 3 failed']);
  });

  it('joins a round in flight when asked to run one on demand, and stop waits for an on-demand round', async () => {
    // Proves runOnce never starts a second round beside a running one and resolves every caller with that round's result.
    let started = 0;
    let release: (value: number) => void = () => undefined;
    const rounds = new PeriodicRounds(() => {
      started++;
      return new Promise<number>((resolve) => (release = resolve));
    }, () => undefined);
    const first = rounds.runOnce();
    const second = rounds.runOnce();
    expect(started).toBe(1);
    let stopped = false;
    const stopping = rounds.stop().then(() => (stopped = true));
    await sleep(5);
    expect(stopped).toBe(false);
    release(7);
    expect(await Promise.all([first, second])).toEqual([7, 7]);
    await stopping;
    expect(stopped).toBe(true);
    const third = rounds.runOnce();
    expect(started).toBe(2);
    release(8);
    expect(await third).toBe(8);
  });

  it('refuses a non-positive interval and a second start', () => {
    // Proves the schedule's preconditions are checked as broken invariants.
    const rounds = new PeriodicRounds(async () => undefined, () => undefined);
    expect(() => rounds.start(0)).toThrow('a periodic round needs a positive interval, not 0');
    rounds.start(1_000);
    expect(() => rounds.start(1_000)).toThrow('periodic rounds are started once');
    return rounds.stop();
  });
});
