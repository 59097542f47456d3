import { CliError } from './io';

/** Rows of a JSON Lines input, as their original text (big integers stay exact), ready to send as one call. */
export interface JsonlBatch {
  /** Each row's JSON text, as it stood on its line. */
  rows: string[];
  /** The line number (from 1) of the first row, for messages. */
  firstLine: number;
  /** Bytes of input the batch consumed, its blank lines and line ends included (for progress). */
  inputBytes: number;
}

export interface JsonlBounds {
  /** Rows per batch at most. */
  rowsMax: number;
  /** Bytes of row text per batch at most; a single longer row makes a batch of its own. */
  bytesMax: number;
}

/**
 * The rows of JSON Lines `chunks` (UTF-8 bytes, split anywhere) in batches within `bounds`, in input order. Each
 * non-blank line must be one JSON object (a row); blank lines are skipped. A line that is not throws a CliError
 * naming its number, once the batches before it have been yielded (so a caller knows what was sent).
 */
export async function* jsonlBatches(chunks: AsyncIterable<Uint8Array>, bounds: JsonlBounds): AsyncGenerator<JsonlBatch> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let pending = '';
  let lineNumber = 0;
  let batch: JsonlBatch = { rows: [], firstLine: 1, inputBytes: 0 };
  let batchTextBytes = 0;

  function* take(line: string, inputBytes: number): Generator<JsonlBatch> {
    lineNumber++;
    const text = line.endsWith('\r') ? line.slice(0, -1) : line;
    if (text.trim() === '') {
      batch.inputBytes += inputBytes;
      return;
    }
    let row: unknown;
    let refusal: string | null = null;
    try {
      row = JSON.parse(text);
      if (typeof row !== 'object' || row === null || Array.isArray(row)) refusal = `line ${lineNumber} is not a JSON object (one row per line, such as {"id": 1})`;
    } catch (error) {
      refusal = `line ${lineNumber} is not JSON (${error instanceof Error ? error.message : String(error)})`;
    }
    if (refusal !== null) {
      // The rows before the bad line go first, so the caller has sent everything before it when it stops.
      if (batch.rows.length > 0) yield batch;
      batch = { rows: [], firstLine: lineNumber, inputBytes: 0 };
      throw new CliError(refusal);
    }
    const textBytes = Buffer.byteLength(text);
    if (batch.rows.length > 0 && (batch.rows.length >= bounds.rowsMax || batchTextBytes + textBytes > bounds.bytesMax)) {
      yield batch;
      batch = { rows: [], firstLine: lineNumber, inputBytes: 0 };
      batchTextBytes = 0;
    }
    if (batch.rows.length === 0) batch.firstLine = lineNumber;
    batch.rows.push(text);
    batch.inputBytes += inputBytes;
    batchTextBytes += textBytes;
  }

  for await (const chunk of chunks) {
    let text: string;
    try {
      text = decoder.decode(chunk, { stream: true });
    } catch {
      throw new CliError(`the input after line ${lineNumber} is not UTF-8`);
    }
    pending += text;
    let newline = pending.indexOf('\n');
    while (newline >= 0) {
      const line = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      yield* take(line, Buffer.byteLength(line) + 1);
      newline = pending.indexOf('\n');
    }
  }
  try {
    pending += decoder.decode();
  } catch {
    throw new CliError(`the input after line ${lineNumber} is not UTF-8`);
  }
  if (pending !== '') yield* take(pending, Buffer.byteLength(pending));
  if (batch.rows.length > 0 || batch.inputBytes > 0) yield batch;
}

/** The body of an append or put call: the rows' own text inside `{"rows":[…]}`. */
export function rowsBody(rows: readonly string[]): string {
  return `{"rows":[${rows.join(',')}]}`;
}
