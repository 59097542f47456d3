/** Number formats of the bench report: grouped integers, short decimals, sizes in KiB or MiB. */
import { MEGABYTE_BYTES, formatCount, formatMegabytes } from '@mink/cli';

// Grouped integers and megabytes (10^6 bytes, as network and disk rates are quoted) are the CLI's formats.
export { MEGABYTE_BYTES, formatCount, formatMegabytes };

/** Milliseconds with precision that suits their size: 0.42, 4.2, 42, 420. */
export function formatMilliseconds(valueMs: number): string {
  if (valueMs < 1) return valueMs.toFixed(2);
  if (valueMs < 10) return valueMs.toFixed(1);
  return formatCount(valueMs);
}

/** A ratio with two significant digits below 10 ("0.42", "3.1") and none above ("42"). */
export function formatRatio(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  if (value < 1) return value.toFixed(2);
  if (value < 10) return value.toFixed(1);
  return formatCount(value);
}

/** Megabytes (10^6 bytes) per second with one decimal. */
export function formatMegabytesPerSecond(bytesPerSecond: number): string {
  return formatMegabytes(bytesPerSecond);
}

/** A size in the largest binary unit that keeps it at least 1: 262144 → "256 KiB", 91234 → "89 KiB", 1.5 MiB → "1.5 MiB". */
export function formatSize(bytes: number): string {
  const gibibytes = bytes / 1024 ** 3;
  if (gibibytes >= 1) return `${oneDecimalUnlessWhole(gibibytes)} GiB`;
  const mebibytes = bytes / 1024 ** 2;
  if (mebibytes >= 1) return `${oneDecimalUnlessWhole(mebibytes)} MiB`;
  if (bytes >= 1024) return `${formatCount(bytes / 1024)} KiB`;
  return `${formatCount(bytes)} B`;
}

function oneDecimalUnlessWhole(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toFixed(1);
}

/** Milliseconds shown as seconds with two significant digits below 10 s: 620 → "0.62", 3_940 → "3.9", 12_300 → "12". */
export function formatSeconds(valueMs: number): string {
  return formatRatio(valueMs / 1_000);
}
