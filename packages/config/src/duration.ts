/**
 * Parses a duration as written on a command line or in an environment variable: `3s`, `500ms`, `2m`
 * or plain milliseconds (`1500`). Returns milliseconds; throws with a message naming the bad input.
 */
export function parseDurationMs(text: string, what = 'duration'): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(text);
  if (!match) {
    throw new Error(`${what}: '${text}' is not a duration (use e.g. 3s, 500ms, 2m or plain milliseconds)`);
  }
  const value = Number(match[1]);
  const unit = match[2] ?? 'ms';
  const factor = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[unit]!;
  const milliseconds = Math.round(value * factor);
  if (milliseconds <= 0) throw new Error(`${what}: '${text}' must be greater than zero`);
  return milliseconds;
}
