import { mulberry32, randomChance, randomChoice, randomInteger, type Random } from '@mink/meta';

/** The simulation's one source of randomness: every choice of a run comes from its seed. */
export class SimRandom {
  readonly next: Random;

  constructor(readonly seed: number) {
    this.next = mulberry32(seed);
  }

  integer(low: number, high: number): number {
    return randomInteger(this.next, low, high);
  }

  choice<T>(items: readonly T[]): T {
    return randomChoice(this.next, items);
  }

  chance(probability: number): boolean {
    return probability > 0 && randomChance(this.next, probability);
  }
}
