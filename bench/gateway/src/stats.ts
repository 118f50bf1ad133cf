import type { LoadResult } from './load-protocol';

/** Nearest-rank percentile of unsorted values; NaN when there are none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length))) - 1]!;
}

/** One result of several runs of the same load, e.g. alternating blocks. */
export function mergeResults(results: readonly LoadResult[]): LoadResult {
  return {
    requests: results.reduce((sum, result) => sum + result.requests, 0),
    errors: results.reduce((sum, result) => sum + result.errors, 0),
    firstError: results.find((result) => result.firstError !== undefined)?.firstError,
    elapsedMs: results.reduce((sum, result) => sum + result.elapsedMs, 0),
    latenciesMs: results.flatMap((result) => result.latenciesMs),
    firstTokenMs: results.flatMap((result) => result.firstTokenMs),
  };
}

/** A plain-text table: the first column left-aligned, the others right-aligned. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]?.length ?? 0)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

export const fixed = (value: number, digits = 2): string => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');
export const megabytes = (bytes: number): string => fixed(bytes / (1024 * 1024), 0);
