/**
 * Plain-text rendering of command results: aligned columns with a header, no colours, so the output reads
 * the same in a terminal, a log file and a test.
 */
export function renderTable(headers: string[], rows: string[][]): string {
  const widths = headers.map((header, column) => Math.max(header.length, ...rows.map((row) => (row[column] ?? '').length)));
  const renderRow = (cells: string[]): string =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column]!)))
      .join('  ')
      .trimEnd();
  return [renderRow(headers), ...rows.map(renderRow)].join('\n');
}

/** Two columns of label and value, for describing one thing. */
export function renderFields(fields: [string, string][]): string {
  const width = Math.max(...fields.map(([label]) => label.length));
  return fields.map(([label, value]) => `${label.padEnd(width)}  ${value}`).join('\n');
}

/** A short text for any JSON value: strings as they are, lists joined by commas, empty as '-'. */
export function formatValue(value: unknown): string {
  if (value === undefined || value === null || value === '') return '-';
  if (Array.isArray(value)) return value.length === 0 ? '-' : value.map(formatValue).join(',');
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** Pretty JSON for `--json`, ending in a newline. */
export function renderJson(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}
