/** Bytes in a megabyte (10^6), as MB and MB/s are shown everywhere in the CLI and the bench. */
export const MEGABYTE_BYTES = 1_000_000;

/** A whole number with spaces between groups of three digits: 1234567 → "1 234 567", -1500 → "-1 500". */
export function formatCount(value: number): string {
  const rounded = Math.round(value);
  const digits = String(Math.abs(rounded)).replace(/\B(?=(\d{3})+(?!\d))/g, ' ');
  return rounded < 0 ? `-${digits}` : digits;
}

/** Megabytes (10^6 bytes) with one decimal. */
export function formatMegabytes(bytes: number): string {
  return (bytes / MEGABYTE_BYTES).toFixed(1);
}
