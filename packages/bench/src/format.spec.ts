import { formatCount, formatMegabytes, formatMilliseconds, formatRatio, formatSize } from './format';

describe('bench number formats', () => {
  it.each<[number, string]>([
    [0, '0'],
    [999, '999'],
    [12_345.6, '12 346'],
    [1_000_000, '1 000 000'],
    [-1_234, '-1 234'],
  ])('groups the count %p as %p', (value, expected) => {
    // Proves thousands are grouped by spaces after rounding, as the progress lines and tables print them.
    expect(formatCount(value)).toBe(expected);
  });

  it.each<[number, string]>([
    [0.284, '0.28'],
    [4.25, '4.3'],
    [42.4, '42'],
    [1_234.5, '1 235'],
  ])('prints %p ms as %p', (valueMs, expected) => {
    // Proves precision follows magnitude: two decimals below 1 ms, one below 10 ms, none above.
    expect(formatMilliseconds(valueMs)).toBe(expected);
  });

  it.each<[number, string]>([
    [0.256, '0.26'],
    [3.14, '3.1'],
    [53.2, '53'],
  ])('prints the ratio %p as %p', (value, expected) => {
    // Proves ratios keep two significant digits where they matter.
    expect(formatRatio(value)).toBe(expected);
  });

  it.each<[number, string]>([
    [512, '512 B'],
    [262_144, '256 KiB'],
    [12_345, '12 KiB'],
    [1024 * 1024, '1 MiB'],
    [1.5 * 1024 * 1024, '1.5 MiB'],
    [24_105 * 1024 * 1024, '23.5 GiB'],
  ])('prints %p bytes as %p', (bytes, expected) => {
    // Proves sizes use the largest binary unit that keeps them at least 1.
    expect(formatSize(bytes)).toBe(expected);
  });

  it.each<[number, string]>([
    [12_050_894, '12.1'],
    [999_999, '1.0'],
    [0, '0.0'],
  ])('prints %p bytes as %p MB', (bytes, expected) => {
    // Proves MB figures use 10^6 bytes, as MB/s does, with one decimal.
    expect(formatMegabytes(bytes)).toBe(expected);
  });
});
