// The dashboard's pages as hono/jsx components, fed with what src/ops reads: the overview (charts and
// what needs attention), the events list (filters, id search, counts per status as links, cursor
// paging), one event (its stored payload, the outbox messages it produced, replay), the outbox list
// and one message (retry). Pure rendering: the routes in dashboard.tsx read the data.
import type { Child, FC } from 'hono/jsx';
import { outboxStatuses, webhookEventStatuses } from '../db/schema.ts';
import type { LatencyQuantiles } from '../lib/metrics.ts';
import type { Page } from '../ops/cursor.ts';
import type { EventDetail, EventListing } from '../ops/events.ts';
import type { OutboxDetail, OutboxListing } from '../ops/outbox-view.ts';
import { OUTCOMES, type Outcome, type Overview } from '../ops/overview.ts';
import { Lines, StackedBars } from './charts.tsx';
import { eventUrl } from './event-urls.ts';

/** Above this many bytes a payload starts folded: the page stays readable, one click opens it. */
const FOLD_PAYLOAD_BYTES = 2048;

export const OUTCOME_COLOURS: Record<Outcome, string> = {
  completed: '#2e7d32',
  ignored: '#9e9e9e',
  pending: '#1e88e5',
  failed: '#ef6c00',
  parked: '#8e24aa',
  dead_letter: '#c62828',
};

const iso = (date: Date | null | undefined) => (date == null ? '' : date.toISOString().replace('T', ' ').slice(0, 19));

export function age(seconds: number): string {
  if (seconds < 120) return `${Math.round(seconds)} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172_800) return `${Math.round(seconds / 3600)} h`;
  return `${Math.round(seconds / 86_400)} d`;
}

const query = (params: Record<string, string | undefined>) => {
  const text = new URLSearchParams(
    Object.entries(params).filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== ''),
  ).toString();
  return text === '' ? '' : `?${text}`;
};

const eventPath = (provider: string, eventId: string) => eventUrl('dashboard', { provider, eventId });
const messagePath = (id: string) => `/admin/outbox/${id}`;

const Status: FC<{ status: string }> = ({ status }) => <span class={`status s-${status}`}>{status}</span>;

/** A labelled cell: on a narrow screen each row becomes a card and the label shows beside the value. */
const Cell: FC<{ label: string; class?: string; children?: Child }> = ({ label, class: className, children }) => (
  <td data-label={label} class={className}>
    {children}
  </td>
);

const ActionForm: FC<{ action: string; target: string; kind: 'replay' | 'retry'; label: string }> = ({
  action,
  target,
  kind,
  label,
}) => (
  <form method="post" data-action={action} data-target={target} data-kind={kind} class="action">
    <button type="submit">{label}</button>
  </form>
);

/** Counts per status, each a link to the list filtered by it. */
const StatusLinks: FC<{
  base: string;
  counts: Record<string, number>;
  statuses: readonly string[];
  current?: string;
}> = ({ base, counts, statuses, current }) => (
  <nav class="counts" aria-label="by status">
    <a href={base} aria-current={current === undefined ? 'page' : undefined}>
      all <span class="n">{Object.values(counts).reduce((sum, n) => sum + n, 0)}</span>
    </a>
    {statuses.map((status) => (
      <a href={`${base}?status=${status}`} aria-current={current === status ? 'page' : undefined}>
        <Status status={status} /> <span class="n">{counts[status] ?? 0}</span>
      </a>
    ))}
  </nav>
);

const Select: FC<{ name: string; label: string; options: readonly string[]; value?: string; any?: string }> = ({
  name,
  label,
  options,
  value,
  any = 'any',
}) => (
  <label>
    {label}
    <select name={name}>
      <option value="">{any}</option>
      {options.map((option) => (
        <option value={option} selected={option === value}>
          {option}
        </option>
      ))}
    </select>
  </label>
);

const RANGES = ['15m', '1h', '6h', '1d', '7d', '30d'] as const;

/** First and next page of a filtered list: the filters stay in both links. */
const Pager: FC<{ list: string; filter: Record<string, string | undefined>; next: string | null }> = ({
  list,
  filter,
  next,
}) => (
  <nav class="pager" aria-label="pages">
    <a href={`${list}${query(filter)}`}>First page</a>
    {next === null ? (
      <span>Last page</span>
    ) : (
      <a href={`${list}${query({ ...filter, cursor: next })}`} rel="next">
        Next page
      </a>
    )}
  </nav>
);

/** A list's filter form: its own fields, then the time range and the id search every list has. */
const FilterForm: FC<{ list: string; noun: string; when: string; since?: string; id?: string; children: Child }> = ({
  list,
  noun,
  when,
  since,
  id,
  children,
}) => (
  <form method="get" action={list} class="filters" aria-label="filters">
    {children}
    <label>
      {when} in the last
      <select name="since">
        <option value="">any time</option>
        {RANGES.map((range) => (
          <option value={range} selected={range === since}>
            {range}
          </option>
        ))}
      </select>
    </label>
    <label>
      {noun} id starts with
      <input name="id" value={id ?? ''} type="search" />
    </label>
    <button type="submit">Filter</button>
    <a href={list}>Clear</a>
  </form>
);

// ---------------------------------------------------------------- overview

export interface OverviewData {
  range: 'hour' | 'day';
  overview: Overview;
  latency: Array<LatencyQuantiles | null>;
  counts: Record<string, number>;
  attention: EventListing[];
}

export const OverviewPage: FC<OverviewData> = ({ range, overview, latency, counts, attention }) => {
  const { window } = overview;
  const perMinute = window.bucketMs / 60_000;
  const received: Array<{ name: string; colour: string; values: number[] }> = OUTCOMES.map((outcome) => ({
    name: outcome,
    colour: OUTCOME_COLOURS[outcome],
    values: overview.received.map((bucket) => bucket[outcome] / perMinute),
  }));
  const axis = (format: (v: number) => string, minTop: number) => ({
    fromMs: window.fromMs,
    bucketMs: window.bucketMs,
    format,
    minTop,
  });
  const rate = (v: number) => (v >= 10 || v === 0 ? String(Math.round(v)) : v.toFixed(1));
  const ms = (v: number) => (v >= 1 ? `${v.toFixed(1)} s` : `${Math.round(v * 1000)} ms`);
  const now = overview.backlog.at(-1) ?? { events: 0, oldestSeconds: 0 };
  const bucketWords = perMinute === 1 ? 'per minute' : `per minute, ${perMinute}-minute averages`;
  return (
    <>
      <h1 tabindex={-1}>Overview</h1>
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
          <a href="/admin/events?status=dead_letter" class="label">
            Dead letters
          </a>
          <strong>{counts.dead_letter ?? 0}</strong>
        </div>
        <div>
          <a href="/admin/outbox?status=dead" class="label">
            Dead messages
          </a>
          <strong>{overview.outbox.dead}</strong>
        </div>
      </section>
      <div class="charts">
        <StackedBars
          title={`Events received ${bucketWords}, by current status`}
          series={received}
          axis={axis(rate, 2)}
        />
        <Lines
          title="Processing time, p50 and p99"
          series={[
            { name: 'p50', colour: '#1e88e5', values: latency.map((q) => q?.p50 ?? null) },
            { name: 'p99', colour: '#c62828', values: latency.map((q) => q?.p99 ?? null) },
          ]}
          axis={axis(ms, 0.1)}
          note="Request time of stored deliveries served by this process since it started (per isolate on Workers)."
        />
        <Lines
          title="Backlog: events received and not yet done (parked aside)"
          series={[{ name: 'events', colour: '#1e88e5', values: overview.backlog.map((point) => point.events) }]}
          axis={axis((v) => String(Math.round(v)), 2)}
        />
        <Lines
          title="Age of the oldest event in the backlog"
          series={[{ name: 'oldest', colour: '#ef6c00', values: overview.backlog.map((point) => point.oldestSeconds) }]}
          axis={axis(age, 60)}
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

// ---------------------------------------------------------------- events

/** A table of rows (cards on a narrow screen), or a line saying there are none. */
const Rows: FC<{ headers: readonly string[]; count: number; empty: string; children: Child }> = ({
  headers,
  count,
  empty,
  children,
}) =>
  count === 0 ? (
    <p class="empty">{empty}</p>
  ) : (
    <table class="rows">
      <thead>
        <tr>
          {headers.map((header) => (
            <th scope="col">{header}</th>
          ))}
        </tr>
      </thead>
      <tbody>{children}</tbody>
    </table>
  );

/** The cells every row ends with: where it stands, how often it failed, and why. */
const StateCells: FC<{ status: string; attempts: number; lastError: string | null }> = ({
  status,
  attempts,
  lastError,
}) => (
  <>
    <Cell label="status" class="status-cell">
      <Status status={status} />
    </Cell>
    <Cell label="attempts">{String(attempts)}</Cell>
    <Cell label="last error" class="error">
      {lastError ?? ''}
    </Cell>
  </>
);

const EVENT_HEADERS = ['received (UTC)', 'provider', 'event', 'type', 'status', 'attempts', 'last error'] as const;

const EventTable: FC<{ events: EventListing[]; empty: string }> = ({ events, empty }) => (
  <Rows headers={EVENT_HEADERS} count={events.length} empty={empty}>
    {events.map((event) => (
      <tr data-event={`${event.provider}/${event.eventId}`}>
        <Cell label="received" class="time">
          {iso(event.receivedAt)}
        </Cell>
        <Cell label="provider">{event.provider}</Cell>
        <Cell label="event" class="id">
          <a href={eventPath(event.provider, event.eventId)}>{event.eventId}</a>
        </Cell>
        <Cell label="type">{event.eventType}</Cell>
        <StateCells status={event.status} attempts={event.attempts} lastError={event.lastError} />
      </tr>
    ))}
  </Rows>
);

export interface EventsFilter {
  status?: string | undefined;
  provider?: string | undefined;
  type?: string | undefined;
  id?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
  limit?: string | undefined;
}

export const EventsPage: FC<{
  filter: EventsFilter;
  providers: readonly string[];
  counts: Record<string, number>;
  page: Page<EventListing>;
}> = ({ filter, providers, counts, page }) => {
  return (
    <>
      <h1 tabindex={-1}>Events</h1>
      <StatusLinks base="/admin/events" counts={counts} statuses={webhookEventStatuses} current={filter.status} />
      <FilterForm list="/admin/events" noun="Event" when="Received" since={filter.since} id={filter.id}>
        <Select name="status" label="Status" options={webhookEventStatuses} value={filter.status} />
        <Select name="provider" label="Provider" options={providers} value={filter.provider} />
        <label>
          Type
          <input name="type" value={filter.type ?? ''} placeholder="subscription.updated" />
        </label>
      </FilterForm>
      <EventTable events={page.rows} empty="No event matches." />
      <Pager list="/admin/events" filter={{ ...filter }} next={page.nextCursor} />
    </>
  );
};

const Field: FC<{ name: string; children?: Child }> = ({ name, children }) => (
  <>
    <dt>{name}</dt>
    <dd>{children}</dd>
  </>
);

/** The stored payload as stored (jsonb's own rendering, indented); folded when large. */
const Payload: FC<{ payload: unknown }> = ({ payload }) => {
  if (payload === null || payload === undefined) return <p class="empty">Payload purged by retention.</p>;
  const text = JSON.stringify(payload, null, 2);
  const bytes = new TextEncoder().encode(JSON.stringify(payload)).length;
  return (
    <details open={bytes <= FOLD_PAYLOAD_BYTES} class="payload">
      <summary>Payload ({bytes.toLocaleString('en')} bytes)</summary>
      <pre id="payload">{text}</pre>
    </details>
  );
};

const MESSAGE_HEADERS = ['created (UTC)', 'id', 'topic', 'status', 'attempts', 'last error'] as const;

const OutboxTable: FC<{ messages: OutboxListing[]; empty: string }> = ({ messages, empty }) => (
  <Rows headers={MESSAGE_HEADERS} count={messages.length} empty={empty}>
    {messages.map((message) => (
      <tr data-message={message.id}>
        <Cell label="created" class="time">
          {iso(message.createdAt)}
        </Cell>
        <Cell label="id" class="id">
          <a href={messagePath(message.id)}>{message.id}</a>
        </Cell>
        <Cell label="topic">{message.topic}</Cell>
        <StateCells status={message.status} attempts={message.attempts} lastError={message.lastError} />
      </tr>
    ))}
  </Rows>
);

const REPLAYABLE_NOTE = 'Replay applies failed, parked and dead-lettered events again; others are only recorded.';

export const EventPage: FC<{ event: EventDetail; messages: OutboxListing[] }> = ({ event, messages }) => {
  const target = `${event.provider}/${event.eventId}`;
  return (
    <>
      <p class="crumbs">
        <a href="/admin/events">Events</a> / {event.provider}
      </p>
      <h1 tabindex={-1} class="id">
        {event.eventId}
      </h1>
      <dl class="fields" data-event={target}>
        <Field name="status">
          <Status status={event.status} />
        </Field>
        <Field name="provider">{event.provider}</Field>
        <Field name="type">{event.eventType}</Field>
        <Field name="attempts">{String(event.attempts)}</Field>
        <Field name="last error">
          <span class={event.lastError === null ? 'empty' : 'error'} id="last-error">
            {event.lastError ?? 'none'}
          </span>
        </Field>
        <Field name="received (UTC)">{iso(event.receivedAt)}</Field>
        <Field name="occurred (UTC)">{iso(event.occurredAt)}</Field>
        <Field name="completed (UTC)">{iso(event.completedAt)}</Field>
        <Field name="due (UTC)">{iso(event.availableAt)}</Field>
        {event.lockedUntil === null ? null : <Field name="leased until (UTC)">{iso(event.lockedUntil)}</Field>}
      </dl>
      <div class="act">
        <ActionForm action={eventUrl('api', event, '/replay')} target={target} kind="replay" label="Replay" />
        <span class="note">{REPLAYABLE_NOTE}</span>
      </div>
      <h2>Payload</h2>
      <Payload payload={event.payload} />
      <h2>Outbox messages it produced</h2>
      <OutboxTable messages={messages} empty="None." />
    </>
  );
};

// ---------------------------------------------------------------- outbox

export interface OutboxFilterView {
  status?: string | undefined;
  topic?: string | undefined;
  id?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
  limit?: string | undefined;
}

export const OutboxPage: FC<{
  filter: OutboxFilterView;
  counts: Record<string, number>;
  page: Page<OutboxListing>;
}> = ({ filter, counts, page }) => (
  <>
    <h1 tabindex={-1}>Outbox</h1>
    <StatusLinks base="/admin/outbox" counts={counts} statuses={outboxStatuses} current={filter.status} />
    <FilterForm list="/admin/outbox" noun="Message" when="Created" since={filter.since} id={filter.id}>
      <Select name="status" label="Status" options={outboxStatuses} value={filter.status} />
      <label>
        Topic
        <input name="topic" value={filter.topic ?? ''} />
      </label>
    </FilterForm>
    <OutboxTable messages={page.rows} empty="No message matches." />
    <Pager list="/admin/outbox" filter={{ ...filter }} next={page.nextCursor} />
  </>
);

export const MessagePage: FC<{ message: OutboxDetail }> = ({ message }) => {
  // The key is provider:event_id:topic; provider names hold no colon, event ids may.
  const source = message.deduplicationKey.slice(0, -(message.topic.length + 1));
  const colon = source.indexOf(':');
  const provider = colon > 0 ? source.slice(0, colon) : undefined;
  const eventId = colon > 0 ? source.slice(colon + 1) : '';
  return (
    <>
      <p class="crumbs">
        <a href="/admin/outbox">Outbox</a> / {message.topic}
      </p>
      <h1 tabindex={-1} class="id">
        {message.id}
      </h1>
      <dl class="fields" data-message={message.id}>
        <Field name="status">
          <Status status={message.status} />
        </Field>
        <Field name="topic">{message.topic}</Field>
        <Field name="from event">
          {provider === undefined || eventId === '' ? (
            message.deduplicationKey
          ) : (
            <a href={eventPath(provider, eventId)}>{`${provider}/${eventId}`}</a>
          )}
        </Field>
        <Field name="attempts">{String(message.attempts)}</Field>
        <Field name="last error">
          <span class={message.lastError === null ? 'empty' : 'error'}>{message.lastError ?? 'none'}</span>
        </Field>
        <Field name="created (UTC)">{iso(message.createdAt)}</Field>
        <Field name="due (UTC)">{iso(message.availableAt)}</Field>
        <Field name="published (UTC)">{iso(message.publishedAt)}</Field>
      </dl>
      <div class="act">
        {message.status === 'dead' ? (
          <ActionForm action={`/admin/api/outbox/${message.id}/retry`} target={message.id} kind="retry" label="Retry" />
        ) : null}
        <span class="note">Retry sends a dead message back to pending (attempts 0, due now).</span>
      </div>
      <h2>Payload</h2>
      <Payload payload={message.payload} />
    </>
  );
};
