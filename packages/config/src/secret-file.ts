import { closeSync, openSync, readSync } from 'node:fs';
import { inspect } from 'node:util';

/** Shortest secret taken from a file: shorter ones are guessable (the gateway's tokens have the same floor). */
export const SECRET_CHARS_MIN = 16;
/**
 * Longest secret taken from a file. A secret travels in an HTTP header on every request that carries it, and
 * a file is read up to this many bytes (plus one, to tell that it is longer), so a variable naming a large
 * file or a device (`/dev/zero`) fails at start instead of filling the heap.
 */
export const SECRET_CHARS_MAX = 4096;

/**
 * A secret read from a file (`MINK_CLUSTER_SECRET_FILE`, `MINK_METRICS_TOKEN_FILE`). Its text is reachable
 * through `reveal()` only: a config logged, printed or serialised shows `[secret]`, never the value.
 */
export class Secret {
  readonly #text: string;

  constructor(text: string) {
    this.#text = text;
  }

  /** The secret itself, for the one place that sends or compares it. */
  reveal(): string {
    return this.#text;
  }

  toJSON(): string {
    return '[secret]';
  }

  toString(): string {
    return '[secret]';
  }

  [inspect.custom](): string {
    return 'Secret([secret])';
  }
}

/**
 * The secret of a secret file's text: the text with surrounding white space (a trailing newline) removed,
 * `SECRET_CHARS_MIN` to `SECRET_CHARS_MAX` visible ASCII characters without spaces, since it is sent as
 * `Authorization: <scheme> <secret>`. Anything else throws an Error naming `variable` and `path` and what is
 * wrong, never quoting the text.
 */
export function parseSecretText(text: string, variable: string, path: string): Secret {
  const secret = text.trim();
  const where = `${variable}: the secret in ${path}`;
  if (secret === '') throw new Error(`${where} is empty`);
  if (secret.length < SECRET_CHARS_MIN) throw new Error(`${where} is shorter than ${SECRET_CHARS_MIN} characters`);
  if (secret.length > SECRET_CHARS_MAX) throw new Error(`${where} is longer than ${SECRET_CHARS_MAX} characters`);
  if (!/^[\x21-\x7e]+$/.test(secret)) throw new Error(`${where} must be visible ASCII characters without spaces (it is sent in an HTTP header)`);
  return new Secret(secret);
}

/** Reads at most `bytesMax` bytes of the file at `path`; throws when it holds more. */
export type ReadBoundedFile = (path: string, bytesMax: number) => string;

/**
 * The secret in the file `path` names (the value of `variable`), or null when the variable is unset or
 * empty (no secret asked for). A file that cannot be read, or whose content `parseSecretText` refuses,
 * throws an Error naming the variable and the file, so the service stops at start.
 */
export function readSecretFile(path: string | undefined, variable: string, read: ReadBoundedFile = readBoundedFile): Secret | null {
  if (path === undefined || path === '') return null;
  let text: string;
  try {
    // A trailing newline and other white space around the secret are trimmed, so allow for some beyond the maximum.
    text = read(path, SECRET_CHARS_MAX + 1024);
  } catch (error) {
    throw new Error(`${variable}: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  return parseSecretText(text, variable, path);
}

/** The UTF-8 text of the file at `path` when it holds at most `bytesMax` bytes; throws (code `EFBIG`) when it holds more. */
export function readBoundedFile(path: string, bytesMax: number): string {
  const descriptor = openSync(path, 'r');
  try {
    const buffer = Buffer.alloc(bytesMax + 1);
    let length = 0;
    for (;;) {
      const read = readSync(descriptor, buffer, length, buffer.byteLength - length, null);
      if (read === 0) break;
      length += read;
      if (length > bytesMax) throw Object.assign(new Error(`larger than ${bytesMax} bytes`), { code: 'EFBIG' });
    }
    return buffer.subarray(0, length).toString('utf8');
  } finally {
    closeSync(descriptor);
  }
}
