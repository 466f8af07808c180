// The overview page (/admin): figures for now, five charts over the last hour or day, and the
// newest events that need attention. Pure rendering: the route reads the window (dashboard/routes.tsx).
import type { FC } from 'hono/jsx';
import type { LatencyQuantiles } from '../../lib/metrics.ts';
import type { SenderPause } from '../../ops/pauses/sender-pauses.ts';
import type { DestinationView } from '../../ops/reads/destinations-view.ts';
import type { EventListing } from '../../ops/reads/events.ts';
import { OUTCOMES, type Outcome, type Overview } from '../../ops/reads/overview.ts';
import { Lines, StackedBars } from './charts.tsx';
import { UnhealthyDestinations } from './destinations-page.tsx';
import { EventTable } from './rows.tsx';
import { PausedSenders } from './senders-page.tsx';

/** Each outcome's colour in the received chart. */
const OUTCOME_COLOURS: Record<Outcome, string> = {
  completed: '#2e7d32',
  ignored: '#9e9e9e',
  pending: '#1e88e5',
  failed: '#ef6c00',
  parked: '#8e24aa',
  dead_letter: '#c62828',
};

/**
 * Each outcome's name in the legend: the event statuses themselves, except the overview's one group
 * of two (`pending` in the API), which is no status an operator could filter by.
 */
const OUTCOME_NAMES: Record<Outcome, string> = {
  completed: 'completed',
  ignored: 'ignored',
  pending: 'received or processing',
  failed: 'failed',
  parked: 'parked',
  dead_letter: 'dead_letter',
};

/** A duration in seconds in its largest sensible unit, rounded (90 s, 14 min, 3 h, 2 d). */
function age(seconds: number): string {
  if (seconds < 120) return `${Math.round(seconds)} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172_800) return `${Math.round(seconds / 3600)} h`;
  return `${Math.round(seconds / 86_400)} d`;
}

/**
 * A count of items that wait for an operator (dead letters, dead messages): highlighted, and said in
 * words, not by colour alone, when there is any; plain when there is none.
 */
const DeadFigure: FC<{ id: string; href: string; label: string; count: number }> = ({ id, href, label, count }) => (
  <div class={count > 0 ? 'alert' : undefined}>
    <a href={href} class="label">
      {label}
    </a>
    <strong id={id}>{count}</strong>
    {count > 0 ? <span class="label">need an operator</span> : null}
  </div>
);

export interface OverviewData {
  range: 'hour' | 'day';
  overview: Overview;
  latency: Array<LatencyQuantiles | null>;
  counts: Record<string, number>;
  attention: EventListing[];
  /** Senders paused now: shown first, with Resume. */
  paused: SenderPause[];
  /** Every configured destination: the ones not healthy are shown beside the paused senders. */
  destinations: readonly DestinationView[];
}

export const OverviewPage: FC<OverviewData> = ({
  range,
  overview,
  latency,
  counts,
  attention,
  paused,
  destinations,
}) => {
  const { window } = overview;
  const perMinute = window.bucketMs / 60_000;
  const received: Array<{ name: string; colour: string; values: number[] }> = OUTCOMES.map((outcome) => ({
    name: OUTCOME_NAMES[outcome],
    colour: OUTCOME_COLOURS[outcome],
    values: overview.received.map((bucket) => bucket[outcome] / perMinute),
  }));
  const axis = (format: (v: number) => string, minTop: number, scale: 'count' | 'decimal' | 'seconds') => ({
    fromMs: window.fromMs,
    bucketMs: window.bucketMs,
    format,
    minTop,
    scale,
  });
  const rate = (v: number) => (v >= 10 || Number.isInteger(v) ? String(Math.round(v)) : v.toFixed(1));
  const ms = (v: number) => (v >= 1 ? `${v.toFixed(1)} s` : `${Math.round(v * 1000)} ms`);
  const now = overview.backlog.at(-1) ?? { events: 0, oldestSeconds: 0 };
  const deadLetters = counts.dead_letter ?? 0;
  const bucketWords = perMinute === 1 ? 'per minute' : `per minute, ${perMinute}-minute averages`;
  // Beside each other: a sender whose deliveries all fail shows as refusals, not as silence.
  const accepted = overview.received.map((bucket) => OUTCOMES.reduce((sum, outcome) => sum + bucket[outcome], 0));
  const windowMinutes = window.buckets * perMinute;
  const acceptedTotal = accepted.reduce((sum, n) => sum + n, 0);
  const refusedTotal = overview.refused.reduce((sum, n) => sum + n, 0);
  const refusedShare =
    refusedTotal === 0 ? '' : `, ${Math.round((100 * refusedTotal) / (refusedTotal + acceptedTotal))}% of deliveries`;
  // A rate as small as one event an hour still reads as more than none.
  const perMinuteOf = (total: number) => {
    const value = total / windowMinutes;
    return `${value === 0 || value >= 0.1 ? rate(value) : value.toPrecision(1)} a minute`;
  };
  const windowWords = range === 'day' ? 'last day' : 'last hour';
  return (
    <>
      <h1 tabindex={-1}>Overview</h1>
      <PausedSenders paused={paused} />
      <UnhealthyDestinations destinations={destinations} />
      <nav class="tabs" aria-label="time range">
        <a href="/admin?range=hour" aria-current={range === 'hour' ? 'page' : undefined}>
          Last hour
        </a>
        <a href="/admin?range=day" aria-current={range === 'day' ? 'page' : undefined}>
          Last day
        </a>
      </nav>
      <section class="figures" aria-label="now">
        <div>
          <span class="label">Events to apply</span>
          <strong id="backlog">{now.events}</strong>
        </div>
        <div>
          <span class="label">Oldest waiting</span>
          <strong id="oldest-event">{age(now.oldestSeconds)}</strong>
        </div>
        <div>
          <span class="label">Outbox pending</span>
          <strong id="outbox-pending">{overview.outbox.pending}</strong>
        </div>
        <div>
          <span class="label">Oldest pending message</span>
          <strong id="oldest-outbox">{age(overview.outbox.oldestPendingSeconds)}</strong>
        </div>
        <div>
          <span class="label">{`Events accepted, ${windowWords}`}</span>
          <strong id="accepted">{acceptedTotal}</strong>
          <span class="label" id="accepted-rate">
            {perMinuteOf(acceptedTotal)}
          </span>
        </div>
        <div class={refusedTotal > 0 ? 'warn' : undefined}>
          <a href={`/admin/rejections?since=${range === 'day' ? '1d' : '1h'}`} class="label">
            {`Deliveries refused, ${windowWords}`}
          </a>
          <strong id="refused">{refusedTotal}</strong>
          <span class="label" id="refused-rate">
            {`${perMinuteOf(refusedTotal)}${refusedShare}`}
          </span>
        </div>
        <DeadFigure
          id="dead-letters"
          href="/admin/events?status=dead_letter"
          label="Dead letters"
          count={deadLetters}
        />
        <DeadFigure
          id="dead-messages"
          href="/admin/outbox?status=dead"
          label="Dead messages"
          count={overview.outbox.dead}
        />
      </section>
      <div class="charts">
        <StackedBars
          title={`Events received ${bucketWords}, by current status`}
          series={received}
          axis={axis(rate, 2, perMinute === 1 ? 'count' : 'decimal')}
        />
        <Lines
          title={`Events accepted and deliveries refused ${bucketWords}`}
          series={[
            { name: 'accepted', colour: '#2e7d32', values: accepted.map((n) => n / perMinute) },
            { name: 'refused', colour: '#c62828', values: overview.refused.map((n) => n / perMinute) },
          ]}
          axis={axis(rate, 2, perMinute === 1 ? 'count' : 'decimal')}
          note="Refused: answered 404, 413, 415, 401, 400 or 503 (see Refused)."
        />
        <Lines
          title="Processing time, p50 and p99"
          series={[
            { name: 'p50', colour: '#1e88e5', values: latency.map((q) => q?.p50 ?? null) },
            { name: 'p99', colour: '#c62828', values: latency.map((q) => q?.p99 ?? null) },
          ]}
          axis={axis(ms, 0.1, 'decimal')}
          note="Request time of stored deliveries served by this process since it started (per isolate on Workers)."
        />
        <Lines
          title="Backlog: events received and not yet done (parked aside)"
          series={[{ name: 'events', colour: '#1e88e5', values: overview.backlog.map((point) => point.events) }]}
          axis={axis((v) => String(Math.round(v)), 2, 'count')}
        />
        <Lines
          title="Age of the oldest event in the backlog"
          series={[{ name: 'oldest', colour: '#ef6c00', values: overview.backlog.map((point) => point.oldestSeconds) }]}
          axis={axis(age, 60, 'seconds')}
        />
      </div>
      <section>
        <h2>Needs attention</h2>
        <EventTable events={attention} empty="Nothing failed, parked or dead-lettered." />
        <p>
          <a href="/admin/events?status=failed">All failed</a> · <a href="/admin/events?status=parked">All parked</a> ·{' '}
          <a href="/admin/events?status=dead_letter">All dead letters</a>
        </p>
      </section>
    </>
  );
};
