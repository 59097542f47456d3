import { SIMULATION_PARTS, seedsOfPart } from '../simulation/simulation-suite';

describe('seedsOfPart', () => {
  it.each<[string, number, number, { count: number; first: number; replay?: number }, number[]]>([
    ['the first quarter of 100 seeds', 1, 4, { count: 100, first: 1 }, Array.from({ length: 25 }, (_, index) => 1 + index)],
    ['the last quarter of 100 seeds', 4, 4, { count: 100, first: 1 }, Array.from({ length: 25 }, (_, index) => 76 + index)],
    ['a part of seeds moved on by MINK_SIM_FIRST_SEED', 2, 4, { count: 8, first: 101 }, [103, 104]],
    ['an uneven split: the last part takes what is left', 3, 3, { count: 7, first: 1 }, [7]],
    ['a part beyond the seeds', 4, 4, { count: 3, first: 1 }, []],
    ['a replayed seed in part 1', 1, 4, { count: 100, first: 1, replay: 37 }, [37]],
    ['a replayed seed in no other part', 2, 4, { count: 100, first: 1, replay: 37 }, []],
  ])('%s', (_name, part, parts, seeds, expected) => {
    expect(seedsOfPart(part, parts, seeds)).toEqual(expected);
  });

  it('runs every seed once over the parts', () => {
    const all = Array.from({ length: SIMULATION_PARTS }, (_, index) => seedsOfPart(index + 1, SIMULATION_PARTS, { count: 100, first: 1 })).flat();
    expect(all).toEqual(Array.from({ length: 100 }, (_, index) => 1 + index));
  });
});
