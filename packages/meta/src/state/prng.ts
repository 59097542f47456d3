/**
 * A small seeded pseudo-random generator (mulberry32) for simulations and for pure functions that take
 * randomness as a parameter. The same seed always yields the same sequence on every platform, which is
 * what makes a failing simulation replayable from its seed. Not for anything that needs to be secret.
 */
export type Random = () => number;

/** Returns a generator of numbers in [0, 1) determined by the 32-bit `seed`. */
export function mulberry32(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let mixed = state;
    mixed = Math.imul(mixed ^ (mixed >>> 15), mixed | 1);
    mixed ^= mixed + Math.imul(mixed ^ (mixed >>> 7), mixed | 61);
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4294967296;
  };
}

/** A whole number in [low, high], both included. */
export function randomInteger(random: Random, low: number, high: number): number {
  return low + Math.floor(random() * (high - low + 1));
}

/** One element of a non-empty list. */
export function randomChoice<T>(random: Random, items: readonly T[]): T {
  if (items.length === 0) throw new Error('randomChoice needs at least one item');
  return items[Math.floor(random() * items.length)];
}

/** True with probability `probability`. */
export function randomChance(random: Random, probability: number): boolean {
  return random() < probability;
}
