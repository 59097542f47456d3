import { InvalidArgumentError } from '@mink/protocol';
import type { ByteRange } from './object-store';

/**
 * Refuses ranges S3 cannot express with an explicit `bytes=first-last` header: fractions, negative starts and
 * empty or inverted ranges. Both stores call it first, so a caller's bug fails the same way in simulation and
 * against S3.
 */
export function assertValidByteRange(range: ByteRange): void {
  const { start, endExclusive } = range;
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(endExclusive)) {
    throw new InvalidArgumentError(`byte range [${start}, ${endExclusive}) is not made of whole numbers`);
  }
  if (start < 0) throw new InvalidArgumentError(`byte range [${start}, ${endExclusive}) starts before the object`);
  if (endExclusive <= start) throw new InvalidArgumentError(`byte range [${start}, ${endExclusive}) is empty`);
}

/**
 * The part of a valid range that lies inside an object of `objectSizeBytes`, with S3's rules: the end is clipped
 * to the object, and a range that starts at or after the end is refused (S3 answers 416 InvalidRange).
 */
export function clipByteRange(range: ByteRange, objectSizeBytes: number): ByteRange {
  if (range.start >= objectSizeBytes) {
    throw new InvalidArgumentError(
      `byte range [${range.start}, ${range.endExclusive}) starts at or after the end of an object of ${objectSizeBytes} bytes`,
    );
  }
  return { start: range.start, endExclusive: Math.min(range.endExclusive, objectSizeBytes) };
}

/**
 * The HTTP Range header of a valid range. It always names both ends, because suffix ranges (`bytes=-N`)
 * return wrong bytes on s3rver (TOOLCHAIN) and the inclusive last byte is what HTTP expects.
 */
export function httpRangeHeader(range: ByteRange): string {
  return `bytes=${range.start}-${range.endExclusive - 1}`;
}
