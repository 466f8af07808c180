// The overview's charts as inline SVG drawn on the server: no script, no library, nothing fetched,
// so the dashboard's CSP stays as strict as it is and a chart is in the page the moment it arrives.
// Each SVG scales to its container (viewBox, width 100%) and carries a text summary for screen
// readers; colours are paired with legend labels, never the only carrier of meaning.
import type { FC } from 'hono/jsx';

const WIDTH = 480;
const HEIGHT = 190;
const PAD = { left: 58, right: 12, top: 14, bottom: 28 };
const PLOT_W = WIDTH - PAD.left - PAD.right;
const PLOT_H = HEIGHT - PAD.top - PAD.bottom;

export interface Series {
  name: string;
  colour: string;
  values: ReadonlyArray<number | null>;
}

export interface Axis {
  /** Start of the first bucket and each bucket's length, for the time labels. */
  fromMs: number;
  bucketMs: number;
  /** How a value reads on the axis and in the summary. */
  format: (value: number) => string;
  /** The least top of the scale, so a flat or tiny series still gets distinct labels (0, 1, 2). */
  minTop?: number;
}

/** A round number at or above `value` (1, 2 or 5 times a power of ten), so axis labels read well. */
function niceCeiling(value: number): number {
  if (value <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  const step = [1, 2, 5, 10].find((factor) => factor * power >= value) ?? 10;
  return step * power;
}

const clock = (ms: number) => new Date(ms).toISOString().slice(11, 16);

const Frame: FC<{ label: string; max: number; axis: Axis; buckets: number; children: unknown }> = ({
  label,
  max,
  axis,
  buckets,
  children,
}) => {
  const ticks = [0, max / 2, max];
  const times = [0, Math.floor(buckets / 2), buckets];
  return (
    <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-label={label} class="chart">
      {ticks.map((tick) => {
        const y = PAD.top + PLOT_H - (tick / max) * PLOT_H;
        return (
          <g>
            <line x1={PAD.left} x2={WIDTH - PAD.right} y1={y} y2={y} class="grid" />
            <text x={PAD.left - 6} y={y + 4} text-anchor="end">
              {axis.format(tick)}
            </text>
          </g>
        );
      })}
      {times.map((index) => (
        <text
          x={PAD.left + (index / buckets) * PLOT_W}
          y={HEIGHT - 8}
          text-anchor={index === 0 ? 'start' : index === buckets ? 'end' : 'middle'}
        >
          {clock(axis.fromMs + index * axis.bucketMs)}
        </text>
      ))}
      {children}
    </svg>
  );
};

const Legend: FC<{ series: readonly Series[] }> = ({ series }) => (
  <ul class="legend">
    {series.map((entry) => (
      <li>
        <span class="swatch" style={`background:${entry.colour}`} />
        {entry.name}
      </li>
    ))}
  </ul>
);

/** Bars per bucket, one segment per series stacked in order (events per minute by outcome). */
export const StackedBars: FC<{ title: string; series: readonly Series[]; axis: Axis }> = ({ title, series, axis }) => {
  const buckets = series[0]?.values.length ?? 0;
  const totals = Array.from({ length: buckets }, (_, i) =>
    series.reduce((sum, entry) => sum + (entry.values[i] ?? 0), 0),
  );
  const max = niceCeiling(Math.max(axis.minTop ?? 0, ...totals));
  const barW = PLOT_W / Math.max(1, buckets);
  const summary = `${title}: ${series
    .map(
      (entry) => `${entry.name} ${axis.format(entry.values.reduce<number>((sum, v) => sum + (v ?? 0), 0) / buckets)}`,
    )
    .join(', ')} on average`;
  return (
    <figure>
      <figcaption>{title}</figcaption>
      <Frame label={summary} max={max} axis={axis} buckets={buckets}>
        {Array.from({ length: buckets }, (_, i) => {
          let base = PAD.top + PLOT_H;
          return series.map((entry) => {
            const value = entry.values[i] ?? 0;
            if (value <= 0) return null;
            const h = (value / max) * PLOT_H;
            base -= h;
            return (
              <rect
                x={PAD.left + i * barW + barW * 0.1}
                y={base}
                width={Math.max(0.5, barW * 0.8)}
                height={h}
                fill={entry.colour}
              />
            );
          });
        })}
      </Frame>
      <Legend series={series} />
    </figure>
  );
};

/** One line per series; buckets without a value leave a gap instead of a misleading zero. */
export const Lines: FC<{ title: string; series: readonly Series[]; axis: Axis; note?: string }> = ({
  title,
  series,
  axis,
  note,
}) => {
  const buckets = series[0]?.values.length ?? 0;
  const values = series.flatMap((entry) => entry.values.filter((v): v is number => v !== null));
  const max = niceCeiling(Math.max(axis.minTop ?? 0, ...values));
  const x = (i: number) => PAD.left + (i + 0.5) * (PLOT_W / Math.max(1, buckets));
  const y = (v: number) => PAD.top + PLOT_H - (v / max) * PLOT_H;
  const last = (entry: Series) => [...entry.values].reverse().find((v) => v !== null);
  const summary = `${title}: ${series
    .map((entry) => {
      const latest = last(entry);
      return `${entry.name} ${latest === undefined || latest === null ? 'no data' : axis.format(latest)} latest`;
    })
    .join(', ')}`;
  return (
    <figure>
      <figcaption>{title}</figcaption>
      <Frame label={summary} max={max} axis={axis} buckets={buckets}>
        {series.map((entry) => {
          let d = '';
          let pen = false;
          entry.values.forEach((v, i) => {
            if (v === null) {
              pen = false;
              return;
            }
            d += `${pen ? 'L' : 'M'}${x(i).toFixed(1)},${y(v).toFixed(1)}`;
            pen = true;
          });
          // A lone point draws no segment: mark it so it is seen.
          const points = entry.values.flatMap((v, i) =>
            v !== null && entry.values[i - 1] == null && entry.values[i + 1] == null
              ? [<circle cx={x(i)} cy={y(v)} r="2.5" fill={entry.colour} />]
              : [],
          );
          return (
            <g>
              <path d={d} fill="none" stroke={entry.colour} stroke-width="2" />
              {points}
            </g>
          );
        })}
      </Frame>
      <Legend series={series} />
      {values.length === 0 ? <p class="note">Nothing observed in this range.</p> : null}
      {note === undefined ? null : <p class="note">{note}</p>}
    </figure>
  );
};
