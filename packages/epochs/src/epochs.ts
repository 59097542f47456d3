/**
 * The epochs of mink (docs/architecture.md, "Epochs and fences"): node, coordinator, leader and stream
 * epochs are whole numbers that only grow; zero means "never assigned". `apply` raises them, by one at a
 * time, with this function.
 */

/** The epoch that follows `current`; asserts that epochs are whole, non-negative numbers. */
export function nextEpoch(current: number): number {
  if (!Number.isSafeInteger(current) || current < 0) {
    throw new Error(`invariant broken: epoch ${current} is not a non-negative safe integer`);
  }
  return current + 1;
}
