import { InvalidArgumentError } from '@mink/protocol';
import { assertValidByteRange, clipByteRange, httpRangeHeader } from './byte-range';

describe('byte ranges', () => {
  it.each([
    [{ start: 0, endExclusive: 1 }, 'bytes=0-0'],
    [{ start: 10, endExclusive: 20 }, 'bytes=10-19'],
    [{ start: 5, endExclusive: 2 ** 40 }, `bytes=5-${2 ** 40 - 1}`],
  ])('writes %p as the header %p', (range, expected) => {
    // Proves the exclusive end becomes HTTP's inclusive last byte and both ends are always explicit (no suffix ranges).
    expect(httpRangeHeader(range)).toBe(expected);
  });

  it.each([
    { start: 3, endExclusive: 3 },
    { start: 4, endExclusive: 3 },
    { start: -1, endExclusive: 3 },
    { start: 0.5, endExclusive: 3 },
    { start: 0, endExclusive: Number.POSITIVE_INFINITY },
    { start: Number.NaN, endExclusive: 3 },
  ])('refuses the malformed range %p', (range) => {
    // Proves ranges S3 cannot express fail as InvalidArgument before any request.
    expect(() => assertValidByteRange(range)).toThrow(InvalidArgumentError);
  });

  it.each([
    [{ start: 0, endExclusive: 10 }, 10, { start: 0, endExclusive: 10 }],
    [{ start: 5, endExclusive: 100 }, 10, { start: 5, endExclusive: 10 }],
    [{ start: 9, endExclusive: 10 }, 10, { start: 9, endExclusive: 10 }],
  ])('clips %p on an object of %p bytes to %p', (range, objectSizeBytes, expected) => {
    // Proves the end is clipped to the object, as S3 returns the available tail.
    expect(clipByteRange(range, objectSizeBytes)).toEqual(expected);
  });

  it.each([
    [{ start: 10, endExclusive: 11 }, 10],
    [{ start: 0, endExclusive: 1 }, 0],
  ])('refuses %p on an object of %p bytes', (range, objectSizeBytes) => {
    // Proves a start at or past the end is refused like S3's 416, including on empty objects.
    expect(() => clipByteRange(range, objectSizeBytes)).toThrow(InvalidArgumentError);
  });
});
