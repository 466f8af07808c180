// Summary statistics and the printed table shared by benchmarks.

/** Nearest-rank percentile (p in 0..100) of unsorted samples; NaN when there are none. */
export function percentile(samples: Float64Array, p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = Float64Array.from(samples).sort();
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] as number;
}

export function round(value: number, digits = 2): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

export interface TableRow {
  label: string;
  value: string | number;
  /** e.g. a target, or what the figure includes. */
  note?: string;
}

export function formatTable(title: string, rows: readonly TableRow[]): string {
  const labelWidth = Math.max(...rows.map((row) => row.label.length));
  const valueWidth = Math.max(...rows.map((row) => String(row.value).length));
  const lines = rows.map((row) => {
    const line = `  ${row.label.padEnd(labelWidth)}  ${String(row.value).padStart(valueWidth)}`;
    return row.note ? `${line}  ${row.note}` : line;
  });
  const width = Math.max(title.length, ...lines.map((line) => line.length));
  return [title, '-'.repeat(width), ...lines].join('\n');
}
