/**
 * The four epochs of mink (DESIGN §3). Each is a positive integer that only grows; zero means "never
 * assigned". They are plain numbers at run time; the aliases document which epoch a field carries.
 */
export type NodeEpoch = number;
export type CoordinatorEpoch = number;
export type LeaderEpoch = number;
export type StreamEpoch = number;

export const NO_EPOCH = 0;

/** The epoch that follows `current`; asserts that epochs are whole, non-negative numbers. */
export function nextEpoch(current: number): number {
  if (!Number.isSafeInteger(current) || current < 0) {
    throw new Error(`invariant broken: epoch ${current} is not a non-negative safe integer`);
  }
  return current + 1;
}

/** True when `presented` is the current epoch; anything older (or newer, which cannot happen) is stale. */
export function isCurrentEpoch(presented: number, current: number): boolean {
  return presented === current;
}
