import { isIP } from 'node:net';
import { InvalidArgumentError } from 'commander';
import { parseDurationMs } from '@mink/config';

/**
 * Parsers for option values. Each throws commander's InvalidArgumentError, which commander prints as one
 * line naming the option and the value; `run` turns it into exit code 2.
 */
export function integerInRange(minimum: number, maximum: number): (text: string) => number {
  return (text) => {
    const value = /^\d+$/.test(text.trim()) ? Number(text.trim()) : Number.NaN;
    if (!Number.isSafeInteger(value) || value < minimum || value > maximum) {
      throw new InvalidArgumentError(`expected an integer from ${minimum} to ${maximum}.`);
    }
    return value;
  };
}

/** A TCP port; 0 asks for a free one where the option says so. */
export const parsePort = integerInRange(0, 65_535);

/** An IP address to bind a listener to (IPv4 or IPv6, e.g. 127.0.0.1, 0.0.0.0, ::). */
export function parseBindHost(text: string): string {
  const address = text.trim();
  if (isIP(address) === 0) throw new InvalidArgumentError('expected an IP address to bind, such as 127.0.0.1 or 0.0.0.0.');
  return address;
}

/** A duration such as 3s, 500ms, 2m or plain milliseconds; returns milliseconds. */
export function parseDurationOption(text: string): number {
  try {
    return parseDurationMs(text);
  } catch {
    throw new InvalidArgumentError('expected a duration such as 3s, 500ms, 2m or plain milliseconds.');
  }
}

/** The items of a comma-separated list, trimmed, blanks removed: " a, ,b" → ["a", "b"]. */
export function commaSeparated(text: string): string[] {
  return text
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

/** A comma-separated list of names with blanks removed: "id, name" → ["id", "name"]. */
export function parseNameList(text: string): string[] {
  const names = commaSeparated(text);
  if (names.length === 0) throw new InvalidArgumentError('expected one or more comma-separated column names.');
  return names;
}

/** Collects a repeatable option into an array. */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}
