import { runSeed, useSimulatedClock, type SeedReport } from './sim-run';

/**
 * The deterministic whole-cluster simulation (issue 12 item 1, Kafka producers issue 40; test/simulation): every seed runs the
 * production coordinator, data node and client code over in-memory ports in simulated time, with faults
 * drawn from the seed, and checks the invariants of test/simulation/invariants.ts.
 *
 *   MINK_SIM_SEED=<n>      replays one seed
 *   MINK_SIM_SEEDS=<n>     how many seeds (default below); MINK_SIM_FIRST_SEED=<n> where they start
 *   MINK_SIM_STEPS=<n>     steps per seed
 *
 * The seeds are split into SIMULATION_PARTS spec files of consecutive seeds (test/unit/cluster-simulation-<k>.spec.ts),
 * so that jest's workers share them: one file of all 100 seeds took 300 s of one worker and, being a small
 * file, was started last in a clean checkout (jest schedules files it has no timings for by size), which made
 * it the unit tier's tail. A replayed seed runs in part 1 only.
 */
export const SIMULATION_PARTS = 4;
const SEEDS = Number(process.env.MINK_SIM_SEEDS ?? 100);
const FIRST_SEED = Number(process.env.MINK_SIM_FIRST_SEED ?? 1);
const STEPS = Number(process.env.MINK_SIM_STEPS ?? 200);
const REPLAY = process.env.MINK_SIM_SEED === undefined ? undefined : Number(process.env.MINK_SIM_SEED);

/** The seeds part `part` (1..parts) runs: a replayed seed in part 1, otherwise its share of consecutive seeds. */
export function seedsOfPart(part: number, parts: number, seeds: { count: number; first: number; replay?: number }): number[] {
  if (seeds.replay !== undefined) return part === 1 ? [seeds.replay] : [];
  const size = Math.ceil(seeds.count / parts);
  const start = (part - 1) * size;
  return Array.from({ length: Math.max(0, Math.min(size, seeds.count - start)) }, (_, index) => seeds.first + start + index);
}

/** Part `part` of the simulation's seeds as a jest suite. */
export function simulationSuite(part: number): void {
  describe(`whole-cluster simulation, part ${part} of ${SIMULATION_PARTS}`, () => {
    useSimulatedClock();

    const seeds = seedsOfPart(part, SIMULATION_PARTS, { count: SEEDS, first: FIRST_SEED, ...(REPLAY === undefined ? {} : { replay: REPLAY }) });
    if (seeds.length === 0) {
      it('has no seed in this part', () => expect(seeds).toEqual([]));
      return;
    }

    it(`keeps every invariant over seeds ${seeds[0]}-${seeds[seeds.length - 1]} (${STEPS} steps each)`, async () => {
      const reports: SeedReport[] = [];
      for (const seed of seeds) {
        reports.push(await runSeed(seed, { steps: STEPS }, (ms) => jest.advanceTimersByTimeAsync(ms).then(() => undefined)));
      }
      const total = (pick: (report: SeedReport) => number) => reports.reduce((sum, report) => sum + pick(report), 0);
      const faults: Record<string, number> = {};
      for (const report of reports) for (const [fault, count] of Object.entries(report.faults)) faults[fault] = (faults[fault] ?? 0) + count;
      // eslint-disable-next-line no-console
      console.log(
        JSON.stringify({
          seeds: reports.length,
          acknowledgedRows: total((r) => r.acknowledgedRows),
          acknowledgedPuts: total((r) => r.acknowledgedPuts),
          acknowledgedKafkaRecords: total((r) => r.acknowledgedKafkaRecords),
          unacknowledgedRows: total((r) => r.unacknowledgedRows),
          faults,
          simulatedS: total((r) => r.simulatedMs) / 1000,
        }),
      );
      // The workload did something and the faults happened: a run that acknowledged nothing checks nothing.
      expect(total((report) => report.acknowledgedRows)).toBeGreaterThan(0);
      expect(total((report) => report.acknowledgedPuts)).toBeGreaterThan(0);
      expect(total((report) => report.acknowledgedKafkaRecords)).toBeGreaterThan(0);
      if (REPLAY === undefined) {
        for (const fault of ['kill data node', 'restart data node', 'pause data node', 'kill coordinator', 'pause coordinator', 'storage call failed', 'metadata append lost', 'metadata append landed late', 'metadata log stalled', 'KV snapshot committed', 'PK bucket restored from a snapshot', 'Kafka batch refused for reusing sequences']) {
          expect([fault, faults[fault] ?? 0]).toEqual([fault, expect.any(Number)]);
          expect(faults[fault]).toBeGreaterThan(0);
        }
      }
    }, 600_000);
  });
}
