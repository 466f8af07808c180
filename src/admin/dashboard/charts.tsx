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
  /**
   * What the values are, for where ticks may fall: `count` whole numbers (1, 2, 5, 10, 20 …),
   * `decimal` any 1, 2 or 5 times a power of ten (0.05 s, 0.5 events a minute), `seconds` the steps
   * a clock reads (15 s, 1 min, 5 min, 30 min, 1 h, 6 h, 1 d …).
   */
  scale: 'count' | 'decimal' | 'seconds';
}

/** At most this many intervals between 0 and the top: five labels fit a 390 px screen's chart. */
const MAX_INTERVALS = 4;

/** 1, 2 and 5 times each power of ten from 10^-3 up to past `max`. */
function decimalSteps(max: number): number[] {
  const steps: number[] = [];
  for (let power = -3; 10 ** power <= Math.max(1, max); power++) {
    for (const factor of [1, 2, 5]) steps.push(Number((factor * 10 ** power).toPrecision(1)));
  }
  return steps;
}

/** Steps of a clock's reading up to half a day; beyond, whole days (1, 2, 5, 10 … of them). */
const SECOND_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10_800, 21_600, 43_200];
const DAY = 86_400;

/** The steps an axis of that scale may take, smallest first, up to one past `max`. */
function stepsFor(scale: Axis['scale'], max: number): number[] {
  if (scale === 'decimal') return decimalSteps(max);
  if (scale === 'count') return decimalSteps(max).filter((step) => step >= 1);
  const days = decimalSteps(max / DAY).filter((step) => step >= 1);
  return [...SECOND_STEPS, ...days.map((step) => step * DAY)];
}

/**
 * The value ticks of an axis whose data reach `max`: 0 and each multiple of the smallest round step
 * (for its scale) that covers `max` in at most MAX_INTERVALS, the last tick being the scale's top.
 */
export function valueTicks(max: number, scale: Axis['scale']): number[] {
  const top = Math.max(max, Number.MIN_VALUE);
  const steps = stepsFor(scale, top);
  // A hair of tolerance: 0.3 / 0.1 is 2.9999999999999996 in floating point.
  const step = steps.find((candidate) => Math.ceil(top / candidate - 1e-9) <= MAX_INTERVALS) ?? steps.at(-1) ?? 1;
  const intervals = Math.max(1, Math.ceil(top / step - 1e-9));
  return Array.from({ length: intervals + 1 }, (_, i) => Number((i * step).toPrecision(12)));
}

/** Minutes between time labels, each a divisor of an hour or a day, so labels fall on round clock times. */
const TIME_STEPS_MINUTES = [1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440];

/** The round clock times (UTC) from `fromMs` to `toMs` to label: at most MAX_INTERVALS + 1 of them. */
export function timeTicks(fromMs: number, toMs: number): number[] {
  const minutes = (toMs - fromMs) / 60_000;
  const stepMinutes =
    TIME_STEPS_MINUTES.find((step) => minutes / step <= MAX_INTERVALS) ?? TIME_STEPS_MINUTES.at(-1) ?? 60;
  const stepMs = stepMinutes * 60_000;
  const ticks: number[] = [];
  for (let at = Math.ceil(fromMs / stepMs) * stepMs; at <= toMs; at += stepMs) ticks.push(at);
  return ticks;
}

const clock = (ms: number) => new Date(ms).toISOString().slice(11, 16);

/** Where a time label sits, and which way its text runs so that it stays inside the chart. */
function timeLabel(x: number): { x: number; anchor: 'start' | 'middle' | 'end' } {
  const halfLabel = 20;
  if (x + halfLabel > WIDTH) return { x, anchor: 'end' };
  if (x - halfLabel < 0) return { x, anchor: 'start' };
  return { x, anchor: 'middle' };
}

const Frame: FC<{ label: string; ticks: readonly number[]; axis: Axis; buckets: number; children: unknown }> = ({
  label,
  ticks,
  axis,
  buckets,
  children,
}) => {
  const max = ticks.at(-1) ?? 1;
  const toMs = axis.fromMs + buckets * axis.bucketMs;
  const times = timeTicks(axis.fromMs, toMs).map((at) => ({
    ...timeLabel(PAD.left + ((at - axis.fromMs) / (toMs - axis.fromMs)) * PLOT_W),
    text: clock(at),
  }));
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
      {times.map((at) => (
        <g>
          <line x1={at.x} x2={at.x} y1={PAD.top + PLOT_H} y2={PAD.top + PLOT_H + 4} class="grid" />
          <text x={at.x} y={HEIGHT - 8} text-anchor={at.anchor} class="time">
            {at.text}
          </text>
        </g>
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
  const ticks = valueTicks(Math.max(axis.minTop ?? 0, ...totals), axis.scale);
  const max = ticks.at(-1) ?? 1;
  const barW = PLOT_W / Math.max(1, buckets);
  const summary = `${title}: ${series
    .map(
      (entry) => `${entry.name} ${axis.format(entry.values.reduce<number>((sum, v) => sum + (v ?? 0), 0) / buckets)}`,
    )
    .join(', ')} on average`;
  return (
    <figure>
      <figcaption>{title}</figcaption>
      <Frame label={summary} ticks={ticks} axis={axis} buckets={buckets}>
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
  const ticks = valueTicks(Math.max(axis.minTop ?? 0, ...values), axis.scale);
  const max = ticks.at(-1) ?? 1;
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
      <Frame label={summary} ticks={ticks} axis={axis} buckets={buckets}>
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
