/**
 * The body of an append (`{"rows":[{…},…]}` as UTF-8 bytes) read in one pass into Arrow column buffers per
 * bucket, with no JSON value tree, no row objects and no JavaScript strings for string values: a string
 * column's bytes go from the body into the column's data buffer as they are.
 *
 * It is a fast path, not a second definition of what an append accepts. For every body it either returns
 * exactly the batches the general path would send (`JSON.parse`, `validateRows`, `splitByBucket`,
 * `encodeRows` of each bucket's rows: the same bytes, in the same buckets, in the same order), or null,
 * and the caller then takes the general path, which gives any error its usual message. It returns null for
 * everything outside the common shape: invalid UTF-8 or JSON, a top-level key other than `rows`, an empty
 * row list, a key that is not a column or appears twice in a row, a value of the wrong type, an escaped
 * key, a number with a fraction or exponent in an integer column, a base64 (`bytes`) value, integers
 * beyond 15 digits. Rows may hold their keys in any order and omit columns (null).
 */
import type { ColumnSpec, ColumnType } from '@mink/meta';
import { isUtf8 } from 'node:buffer';

import { encodeRowBuffers } from './arrow-codec';
import type { ColumnBuffers } from './arrow-ipc';
import { bytesOf } from './arrow-ipc';
import { BucketKeyWriter } from './bucketing';
import { INT32_MAX, INT32_MIN } from './row';

/** One bucket's rows as column buffers; `encodeRange` lays out rows [start, end) as `encodeRows` would. */
export interface BucketRows {
  readonly count: number;
  encodeRange(start: number, end: number): Uint8Array;
}

/** The rows of an append body by bucket, in the order of each bucket's first row. */
export interface RowsByBucket {
  rowCount: number;
  buckets: Map<number, BucketRows>;
}

/** Where rows go: the table's columns, bucket key and bucket count, and for a table without bucket key the spread start (see `splitByBucket`). */
export interface BucketingOfRows {
  columns: ColumnSpec[];
  bucketKey: string[];
  buckets: number;
  spreadStart: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const MINUS = 0x2d;
const ZERO = 0x30;
const NINE = 0x39;
const DOT = 0x2e;
const LOWER_E = 0x65;
const UPPER_E = 0x45;
const PLUS = 0x2b;

/** Digits of an integer read as a plain number: 15 are always exact in a double. */
const INTEGER_DIGITS_MAX = 15;
/** 10^22 is the largest power of ten a double holds exactly. */
const EXACT_POWERS_OF_TEN_MAX = 22;
const POWERS_OF_TEN = Array.from({ length: EXACT_POWERS_OF_TEN_MAX + 1 }, (_, exponent) => 10 ** exponent);

/**
 * The double nearest to ±`significand` × 10^-`fractionDigits`: both are exact doubles (at most 15 digits,
 * at most 10^22), so their quotient is correctly rounded by IEEE division, as `Number` and `JSON.parse`
 * round the decimal text (Clinger's fast path).
 */
function decimalValue(negative: boolean, significand: number, fractionDigits: number): number {
  const magnitude = fractionDigits === 0 ? significand : significand / POWERS_OF_TEN[fractionDigits]!;
  return negative ? -magnitude : magnitude;
}

const ROWS_KEY = Buffer.from('rows');
const LITERAL_TRUE = Buffer.from('true');
const LITERAL_FALSE = Buffer.from('false');
const LITERAL_NULL = Buffer.from('null');

/** Thrown inside the parser to give up; never escapes `readAppendBody`. */
class Unsupported {}
const UNSUPPORTED = new Unsupported();

/**
 * The rows of an append body by bucket, or null when the body is outside the shape this reader handles
 * (the caller then parses it the general way, which also reports any error).
 */
export function readAppendBody(body: Uint8Array, bucketing: BucketingOfRows): RowsByBucket | null {
  if (!isUtf8(body)) return null;
  try {
    return new AppendBodyReader(Buffer.from(body.buffer, body.byteOffset, body.byteLength), bucketing).read();
  } catch (error) {
    if (error instanceof Unsupported) return null;
    throw error;
  }
}

/** One value of the row being read, before it goes to its bucket's columns. */
interface ScratchValue {
  present: boolean;
  /** boolean, int32, float64, timestamp: the value; int64: the value when it is a plain number. */
  number: number;
  /**
   * string: where its bytes are in the body, or `text` when it held escapes. int32, int64, timestamp: where
   * the decimal text of `number` is in the body, when `decimal` says the body holds it as `Number#toString`
   * writes it (the bucket key's encoding, see bucketing.ts).
   */
  start: number;
  end: number;
  text: string | null;
  decimal: boolean;
}

class AppendBodyReader {
  private position = 0;
  private readonly columnNames: Buffer[];
  private readonly types: ColumnType[];
  private readonly scratch: ScratchValue[];
  private readonly keyColumns: number[];
  private readonly byBucket = new Map<number, BucketColumns>();
  private readonly keyWriter = new BucketKeyWriter();

  /** The body's whole aligned 32-bit words, the first at position `wordsAt` (0 to 3) of the body, for `plainRunEnd`. */
  private readonly words: Int32Array;
  private readonly wordsAt: number;

  constructor(
    private readonly body: Buffer,
    private readonly bucketing: BucketingOfRows,
  ) {
    const wordsStart = (body.byteOffset + 3) & ~3;
    this.wordsAt = wordsStart - body.byteOffset;
    const wordCount = Math.max(0, (body.byteOffset + body.length - wordsStart) >> 2);
    // A body too short to hold a whole aligned word may end before `wordsStart` is inside its buffer.
    this.words = wordCount > 0 ? new Int32Array(body.buffer, wordsStart, wordCount) : NO_WORDS;
    this.columnNames = bucketing.columns.map((column) => Buffer.from(column.name, 'utf8'));
    this.types = bucketing.columns.map((column) => column.type);
    this.scratch = bucketing.columns.map(() => ({ present: false, number: 0, start: 0, end: 0, text: null, decimal: false }));
    this.keyColumns = bucketing.bucketKey.map((name) => bucketing.columns.findIndex((column) => column.name === name));
    if (this.keyColumns.some((index) => index < 0)) throw UNSUPPORTED;
    // bytes columns are read by the general path only (base64).
    if (this.types.includes('bytes')) throw UNSUPPORTED;
  }

  read(): RowsByBucket {
    this.expect(OPEN_BRACE);
    const keyStart = this.stringStart();
    const keyEnd = this.stringEnd(keyStart, true);
    if (!this.equalBytes(keyStart, keyEnd, ROWS_KEY)) throw UNSUPPORTED;
    this.expect(COLON);
    this.expect(OPEN_BRACKET);
    this.rowsStart = this.position;
    let rowCount = 0;
    if (this.peek() === CLOSE_BRACKET) throw UNSUPPORTED;
    for (;;) {
      this.readRow();
      rowCount++;
      const next = this.next();
      if (next === COMMA) continue;
      if (next === CLOSE_BRACKET) break;
      throw UNSUPPORTED;
    }
    this.expect(CLOSE_BRACE);
    this.skipWhitespace();
    if (this.position !== this.body.length) throw UNSUPPORTED;
    return { rowCount, buckets: new Map([...this.byBucket].map(([bucket, columns]) => [bucket, columns.rows()])) };
  }

  private readRow(): void {
    for (const value of this.scratch) value.present = false;
    this.expect(OPEN_BRACE);
    if (this.peek() === CLOSE_BRACE) {
      this.position++;
    } else {
      let expected = 0;
      for (;;) {
        const keyStart = this.stringStart();
        const keyEnd = this.stringEnd(keyStart, true);
        const column = this.columnOf(keyStart, keyEnd, expected);
        const value = this.scratch[column]!;
        if (value.present) throw UNSUPPORTED;
        this.expect(COLON);
        this.readValue(column, value);
        expected = column + 1;
        const next = this.next();
        if (next === COMMA) continue;
        if (next === CLOSE_BRACE) break;
        throw UNSUPPORTED;
      }
    }
    this.columnsOf(this.bucketOfRow()).push(this.body, this.scratch);
  }

  /** The column a key names: tried first at `expected` (keys usually come in column order), else any. */
  private columnOf(start: number, end: number, expected: number): number {
    if (expected < this.columnNames.length && this.equalBytes(start, end, this.columnNames[expected]!)) return expected;
    for (let index = 0; index < this.columnNames.length; index++) {
      if (index !== expected && this.equalBytes(start, end, this.columnNames[index]!)) return index;
    }
    throw UNSUPPORTED;
  }

  private readValue(column: number, value: ScratchValue): void {
    this.skipWhitespace();
    const first = this.body[this.position];
    if (first === LITERAL_NULL[0]) {
      this.literal(LITERAL_NULL);
      // A null is an absent value, as `validateRows` reads it.
      return;
    }
    value.present = true;
    switch (this.types[column]) {
      case 'boolean':
        if (first === LITERAL_TRUE[0]) {
          this.literal(LITERAL_TRUE);
          value.number = 1;
        } else {
          this.literal(LITERAL_FALSE);
          value.number = 0;
        }
        return;
      case 'int32': {
        const number = this.integer();
        if (number < INT32_MIN || number > INT32_MAX) throw UNSUPPORTED;
        value.number = number;
        this.noteDecimal(value);
        return;
      }
      case 'int64':
      case 'timestamp':
        value.number = first === QUOTE ? this.quotedInteger() : this.integer();
        this.noteDecimal(value);
        return;
      case 'float64':
        value.number = this.float();
        return;
      case 'string': {
        const start = this.stringStart();
        const end = this.stringEnd(start, false);
        value.start = start;
        value.end = end;
        value.text = this.escaped ? this.unescaped(start, end) : null;
        return;
      }
      default:
        throw UNSUPPORTED;
    }
  }

  /** Notes where the text of the integer just read is (as `signedDigits` left it) and whether it is canonical. */
  private noteDecimal(value: ScratchValue): void {
    value.start = this.integerTextStart;
    value.end = this.integerTextEnd;
    value.decimal = this.integerTextCanonical;
  }

  /**
   * Set by `signedDigits`: where the text of the integer it read is in the body (sign included), and whether
   * it is the text `Number#toString` gives for its value: no leading zero (a quoted int64 may have them)
   * and not `-0` (which reads as 0).
   */
  private integerTextStart = 0;
  private integerTextEnd = 0;
  private integerTextCanonical = false;

  /** The bucket of the row in the scratch values, by the same hash as `splitByBucket`. */
  private bucketOfRow(): number {
    const { bucketKey, buckets, spreadStart } = this.bucketing;
    if (bucketKey.length === 0) return ((spreadStart % buckets) + buckets) % buckets;
    const writer = this.keyWriter;
    writer.reset();
    for (const column of this.keyColumns) {
      const value = this.scratch[column]!;
      if (!value.present) writer.value(null);
      else if (this.types[column] === 'string') {
        if (value.text === null) writer.utf8String(this.body, value.start, value.end);
        else writer.value(value.text);
      } else if (this.types[column] === 'boolean') writer.value(value.number === 1);
      // int32, int64, float64 and timestamp values hash by their decimal text, alike as number or bigint:
      // an integer's text is taken from the body when it is written as Number#toString writes it.
      else if (value.decimal && this.types[column] !== 'float64') writer.asciiNumber(this.body, value.start, value.end);
      else writer.value(value.number);
    }
    return writer.bucket(buckets);
  }

  private columnsOf(bucket: number): BucketColumns {
    let columns = this.byBucket.get(bucket);
    if (columns === undefined) {
      this.sizing ??= this.sizingFromFirstRow();
      columns = new BucketColumns(this.bucketing.columns, this.sizing);
      this.byBucket.set(bucket, columns);
    }
    return columns;
  }

  /** Where the row list starts in the body. */
  private rowsStart = 0;
  /** What each bucket's buffers start with, estimated once the first row is read (see `sizingFromFirstRow`). */
  private sizing: BucketSizing | null = null;

  /**
   * Rows and string bytes a bucket's buffers start with so that they rarely grow: the body holds about
   * `body.length / (bytes of the first row)` rows, spread over the buckets (all in one without a bucket
   * key), with a quarter more for an uneven spread; string columns get as many bytes per row as the first
   * row's value had. Called right after the first row is read, with its values in `scratch`.
   */
  private sizingFromFirstRow(): BucketSizing {
    const rowsEstimate = this.body.length / Math.max(1, this.position - this.rowsStart);
    const buckets = this.bucketing.bucketKey.length === 0 ? 1 : this.bucketing.buckets;
    const rows = Math.min(BUCKET_ROWS_INITIAL_MAX, Math.max(BUCKET_ROWS_INITIAL_MIN, Math.ceil((1.25 * rowsEstimate) / buckets)));
    const stringBytes = this.scratch.map((value) => (value.present ? rows * Math.max(1, value.end - value.start) : 0));
    return { rows, stringBytes };
  }

  /** Set by `stringEnd`: whether the string just read held an escape. */
  private escaped = false;

  /** Skips whitespace and a string's opening quote; returns where its content starts. */
  private stringStart(): number {
    this.expect(QUOTE);
    return this.position;
  }

  /**
   * Finds the closing quote of the string whose content starts at `start`, leaves the position after it
   * and returns where the content ends. A raw control character is invalid JSON; an escape is allowed in
   * values (then `escaped` is set) and refused in keys.
   */
  private stringEnd(start: number, isKey: boolean): number {
    const body = this.body;
    const length = body.length;
    let escaped = false;
    for (let index = this.plainRunEnd(start); index < length; index++) {
      const byte = body[index]!;
      if (byte === QUOTE) {
        this.position = index + 1;
        this.escaped = escaped;
        return index;
      }
      if (byte < 0x20) throw UNSUPPORTED;
      if (byte === BACKSLASH) {
        if (isKey) throw UNSUPPORTED;
        escaped = true;
        index++;
      }
    }
    throw UNSUPPORTED;
  }

  /**
   * The first position from `start` whose byte may be a quote, a backslash or a control character: plain
   * bytes are skipped one by one up to a word boundary, then whole plain words four bytes at a time. It
   * never skips such a byte, so `stringEnd` reads on from there as if it had read every byte itself.
   */
  private plainRunEnd(start: number): number {
    const body = this.body;
    const length = body.length;
    let index = start;
    while (((index - this.wordsAt) & 3) !== 0) {
      if (index >= length) return index;
      const byte = body[index]!;
      if (byte === QUOTE || byte === BACKSLASH || byte < 0x20) return index;
      index++;
    }
    const words = this.words;
    for (let word = (index - this.wordsAt) >> 2; index + 4 <= length && isPlainWord(words[word]!); word++) index += 4;
    return index;
  }

  /** A string with escapes, decoded as JSON decodes it; one that is not well-formed Unicode goes the general way. */
  private unescaped(start: number, end: number): string {
    let text: unknown;
    try {
      text = JSON.parse(this.body.toString('utf8', start - 1, end + 1));
    } catch {
      throw UNSUPPORTED;
    }
    if (typeof text !== 'string' || !(text as string & { isWellFormed(): boolean }).isWellFormed()) throw UNSUPPORTED;
    return text;
  }

  /** An integer written as JSON allows (`-?(0|[1-9][0-9]*)`) of at most INTEGER_DIGITS_MAX digits, with no fraction or exponent. */
  private integer(): number {
    const value = this.signedDigits(true);
    const after = this.body[this.position];
    if (after === DOT || after === LOWER_E || after === UPPER_E) throw UNSUPPORTED;
    return value;
  }

  /** An int64 or timestamp as a decimal string: `"-?[0-9]+"` of at most INTEGER_DIGITS_MAX digits. */
  private quotedInteger(): number {
    this.position++;
    const value = this.signedDigits(false);
    if (this.body[this.position] !== QUOTE) throw UNSUPPORTED;
    this.position++;
    return value;
  }

  /**
   * `-?[0-9]+` of at most INTEGER_DIGITS_MAX digits at the position (without leading zeros when `strict`,
   * as JSON numbers are), as a number; leaves the position after the digits.
   */
  private signedDigits(strict: boolean): number {
    const body = this.body;
    let index = this.position;
    const negative = body[index] === MINUS;
    if (negative) index++;
    const digitsStart = index;
    let value = 0;
    while (index < body.length && body[index]! >= ZERO && body[index]! <= NINE) {
      value = value * 10 + (body[index]! - ZERO);
      index++;
    }
    const digits = index - digitsStart;
    if (digits === 0 || digits > INTEGER_DIGITS_MAX || (strict && digits > 1 && body[digitsStart] === ZERO)) throw UNSUPPORTED;
    this.position = index;
    this.integerTextStart = negative ? digitsStart - 1 : digitsStart;
    this.integerTextEnd = index;
    this.integerTextCanonical = !(body[digitsStart] === ZERO && (digits > 1 || negative));
    // `- 0` would be -0; the canonical forms of int32, int64 and timestamp have no negative zero.
    return negative && value !== 0 ? -value : value;
  }

  /** A JSON number, checked against JSON's grammar and converted as `JSON.parse` converts it. */
  private float(): number {
    const body = this.body;
    const start = this.position;
    let index = start;
    const negative = body[index] === MINUS;
    if (negative) index++;
    const integerStart = index;
    // The digits as one integer while they stay exact (-1 once they do not, or with an exponent).
    let significand = 0;
    let digits = 0;
    while (index < body.length && body[index]! >= ZERO && body[index]! <= NINE) {
      significand = significand * 10 + (body[index]! - ZERO);
      digits++;
      index++;
    }
    if (index === integerStart || (index - integerStart > 1 && body[integerStart] === ZERO)) throw UNSUPPORTED;
    let fractionDigits = 0;
    if (body[index] === DOT) {
      index++;
      const fractionStart = index;
      while (index < body.length && body[index]! >= ZERO && body[index]! <= NINE) {
        significand = significand * 10 + (body[index]! - ZERO);
        digits++;
        index++;
      }
      fractionDigits = index - fractionStart;
      if (fractionDigits === 0) throw UNSUPPORTED;
    }
    if (digits > INTEGER_DIGITS_MAX || fractionDigits > EXACT_POWERS_OF_TEN_MAX) significand = -1;
    if (body[index] === LOWER_E || body[index] === UPPER_E) {
      significand = -1;
      index++;
      if (body[index] === PLUS || body[index] === MINUS) index++;
      const exponentStart = index;
      while (index < body.length && body[index]! >= ZERO && body[index]! <= NINE) index++;
      if (index === exponentStart) throw UNSUPPORTED;
    }
    const value = significand >= 0 ? decimalValue(negative, significand, fractionDigits) : Number(body.toString('latin1', start, index));
    // JSON.parse reads a huge exponent as Infinity, which a float64 column refuses.
    if (!Number.isFinite(value)) throw UNSUPPORTED;
    this.position = index;
    return value;
  }

  private literal(bytes: Buffer): void {
    if (!this.equalBytes(this.position, this.position + bytes.length, bytes)) throw UNSUPPORTED;
    this.position += bytes.length;
  }

  private equalBytes(start: number, end: number, expected: Buffer): boolean {
    if (end - start !== expected.length || end > this.body.length) return false;
    for (let index = 0; index < expected.length; index++) if (this.body[start + index] !== expected[index]) return false;
    return true;
  }

  /** Skips whitespace and takes `byte`, or gives up. */
  private expect(byte: number): void {
    if (this.next() !== byte) throw UNSUPPORTED;
  }

  /** Skips whitespace and takes the next byte. */
  private next(): number | undefined {
    this.skipWhitespace();
    return this.body[this.position++];
  }

  /** Skips whitespace and looks at the next byte without taking it. */
  private peek(): number | undefined {
    this.skipWhitespace();
    return this.body[this.position];
  }

  private skipWhitespace(): void {
    const body = this.body;
    let index = this.position;
    for (;;) {
      const byte = body[index];
      if (byte !== 0x20 && byte !== 0x0a && byte !== 0x0d && byte !== 0x09) break;
      index++;
    }
    this.position = index;
  }
}

const NO_WORDS = new Int32Array(0);

/**
 * Whether none of the four bytes of `word` is a quote, a backslash or below 0x20 (SWAR: a word has a zero
 * byte iff `(w - 0x01010101) & ~w & 0x80808080` is not zero; XOR with a repeated byte finds that byte, and
 * subtracting 0x20 from each byte finds those below it).
 */
function isPlainWord(word: number): boolean {
  const quote = word ^ 0x22222222;
  const backslash = word ^ 0x5c5c5c5c;
  return ((((quote - 0x01010101) & ~quote) | ((backslash - 0x01010101) & ~backslash) | ((word - 0x20202020) & ~word)) & 0x80808080) === 0;
}

/** Rows, and bytes per string column, a bucket's buffers are made for at first. */
interface BucketSizing {
  rows: number;
  stringBytes: number[];
}

/** Bounds of the rows a bucket's buffers start with (they grow beyond it as needed). */
const BUCKET_ROWS_INITIAL_MIN = 8;
const BUCKET_ROWS_INITIAL_MAX = 65_536;
/** Bounds of the bytes a string column's buffer starts with. */
const STRING_BYTES_INITIAL_MIN = 1_024;
const STRING_BYTES_INITIAL_MAX = 16 * 1024 * 1024;

/** Growable buffers of one bucket's columns, filled a row at a time, read as `ColumnBuffers` of row ranges. */
class BucketColumns {
  private count = 0;
  private capacity: number;
  /** Per column, one byte per row: 1 when the row holds a value. */
  private readonly present: Uint8Array[];
  /** Per fixed-width column (null for strings): the values, zero where absent; booleans as 0/1 bytes. */
  private readonly values: (Int32Array | Float64Array | BigInt64Array | Uint8Array | null)[];
  /** Per string column: end offset of each row's bytes in `data` (the start of row 0 is 0). */
  private readonly ends: (Int32Array | null)[];
  private readonly data: (Buffer | null)[];
  private readonly dataLength: number[];
  /** Per int64 or timestamp column: its values array seen as 32-bit words. */
  private readonly words: (Int32Array | null)[];

  constructor(
    private readonly columns: ColumnSpec[],
    sizing: BucketSizing,
  ) {
    this.capacity = sizing.rows;
    this.present = columns.map(() => new Uint8Array(this.capacity));
    this.values = columns.map((column) => fixedArrayOf(column.type, this.capacity));
    this.words = this.values.map(wordsOf);
    this.ends = columns.map((column) => (column.type === 'string' ? new Int32Array(this.capacity) : null));
    this.data = columns.map((column, index) =>
      column.type === 'string' ? Buffer.allocUnsafe(Math.min(STRING_BYTES_INITIAL_MAX, Math.max(STRING_BYTES_INITIAL_MIN, Math.ceil(1.25 * sizing.stringBytes[index]!)))) : null,
    );
    this.dataLength = columns.map(() => 0);
  }

  push(body: Buffer, scratch: readonly ScratchValue[]): void {
    if (this.count === this.capacity) this.grow();
    const row = this.count;
    for (let column = 0; column < this.columns.length; column++) {
      const value = scratch[column]!;
      this.present[column]![row] = value.present ? 1 : 0;
      const type = this.columns[column]!.type;
      if (type === 'string') {
        let length = this.dataLength[column]!;
        if (value.present) {
          const byteLength = value.text === null ? value.end - value.start : Buffer.byteLength(value.text, 'utf8');
          let data = this.data[column]!;
          if (length + byteLength > data.length) {
            const grown = Buffer.allocUnsafe(Math.max(data.length * 2, length + byteLength));
            data.copy(grown, 0, 0, length);
            this.data[column] = data = grown;
          }
          if (value.text === null) body.copy(data, length, value.start, value.end);
          else data.write(value.text, length, 'utf8');
          length += byteLength;
          this.dataLength[column] = length;
        }
        this.ends[column]![row] = length;
        continue;
      }
      const values = this.values[column]!;
      if (type === 'int64' || type === 'timestamp') {
        // A safe integer as its two's complement words, little-endian, without a BigInt per value.
        const words = this.words[column]!;
        const number = value.present ? value.number : 0;
        words[2 * row] = number >>> 0;
        words[2 * row + 1] = Math.floor(number / 4294967296);
      } else values[row] = value.present ? value.number : 0;
    }
    this.count++;
  }

  rows(): BucketRows {
    const count = this.count;
    return { count, encodeRange: (start, end) => encodeRowBuffers(this.columns, end - start, this.columns.map((_, column) => this.bufferOf(column, start, end))) };
  }

  /** The buffers of rows [start, end) of one column, laid out as `encodeRows` lays them out. */
  private bufferOf(column: number, start: number, end: number): ColumnBuffers {
    const length = end - start;
    const present = this.present[column]!;
    let nullCount = 0;
    for (let row = start; row < end; row++) if (present[row] === 0) nullCount++;
    let bitmap = EMPTY;
    if (nullCount > 0) {
      bitmap = new Uint8Array(Math.ceil(length / 8));
      for (let row = start; row < end; row++) if (present[row] === 1) bitmap[(row - start) >> 3]! |= 1 << ((row - start) & 7);
    }
    const type = this.columns[column]!.type;
    if (type === 'string') {
      const ends = this.ends[column]!;
      const first = start === 0 ? 0 : ends[start - 1]!;
      const offsets = new Int32Array(length + 1);
      for (let row = start; row < end; row++) offsets[row - start + 1] = ends[row]! - first;
      const data = this.data[column]!.subarray(first, first + offsets[length]!);
      return { length, nullCount, buffers: [bitmap, bytesOf(offsets), data] };
    }
    if (type === 'boolean') {
      const flags = this.values[column] as Uint8Array;
      const bits = new Uint8Array(Math.ceil(length / 8));
      for (let row = start; row < end; row++) if (flags[row] === 1) bits[(row - start) >> 3]! |= 1 << ((row - start) & 7);
      return { length, nullCount, buffers: [bitmap, bits] };
    }
    return { length, nullCount, buffers: [bitmap, bytesOf(this.values[column]!.subarray(start, end))] };
  }

  private grow(): void {
    const capacity = this.capacity * 2;
    for (let column = 0; column < this.columns.length; column++) {
      this.present[column] = grownCopy(this.present[column]!, new Uint8Array(capacity));
      const values = this.values[column];
      if (values) {
        this.values[column] = grownCopy(values, fixedArrayOf(this.columns[column]!.type, capacity)!);
        this.words[column] = wordsOf(this.values[column]!);
      }
      const ends = this.ends[column];
      if (ends) this.ends[column] = grownCopy(ends, new Int32Array(capacity));
    }
    this.capacity = capacity;
  }
}

const EMPTY = new Uint8Array(0);

function fixedArrayOf(type: ColumnType, capacity: number): Int32Array | Float64Array | BigInt64Array | Uint8Array | null {
  switch (type) {
    case 'boolean':
      return new Uint8Array(capacity);
    case 'int32':
      return new Int32Array(capacity);
    case 'float64':
      return new Float64Array(capacity);
    case 'int64':
    case 'timestamp':
      return new BigInt64Array(capacity);
    default:
      return null;
  }
}

function wordsOf(values: Int32Array | Float64Array | BigInt64Array | Uint8Array | null): Int32Array | null {
  return values instanceof BigInt64Array ? new Int32Array(values.buffer, values.byteOffset, values.length * 2) : null;
}

function grownCopy<T extends Int32Array | Float64Array | BigInt64Array | Uint8Array>(from: T, to: T): T {
  (to as Uint8Array).set(from as Uint8Array);
  return to;
}
