// The outbox's destinations on the dashboard: the Destinations page (/admin/destinations: every
// configured destination with its state badge, backlog, rate, filters and redacted target, and Pause
// or Resume), the overview's panel of destinations that are not healthy, and a message's
// per-destination outcomes. The forms post to the admin API's pause and resume routes through the
// page's script, Pause after a confirmation. Pure rendering: the routes read the views.
import type { FC } from 'hono/jsx';
import { PAUSE_NOTE_MAX } from '../../ops/pauses/sender-pauses.ts';
import { type DestinationView, targetText } from '../../ops/reads/destinations-view.ts';
import type { OutboxListing } from '../../ops/reads/outbox-view.ts';
import { iso, Status } from './rows.tsx';

export const DESTINATIONS_PATH = '/admin/destinations';

const destinationApi = (name: string, verb: 'pause' | 'resume') =>
  `/admin/api/destinations/${encodeURIComponent(name)}/${verb}`;

/** healthy green, open red, half_open orange, paused grey (a class of its own: a paused sender is red). */
export const StateBadge: FC<{ state: DestinationView['state'] }> = ({ state }) => (
  <span class={`status d-${state}`}>{state}</span>
);

const ResumeForm: FC<{ name: string }> = ({ name }) => (
  <form method="post" data-action={destinationApi(name, 'resume')} data-target={name} data-kind="destination-resume">
    <button type="submit">Resume {name}</button>
  </form>
);

const PauseForm: FC<{ name: string }> = ({ name }) => (
  <form
    method="post"
    class="pause-form"
    data-action={destinationApi(name, 'pause')}
    data-target={name}
    data-kind="destination-pause"
    data-confirm={`Pause ${name}? Its messages stay pending (nothing is published to it) until someone resumes it.`}
  >
    <label>
      Note <input name="note" maxlength={PAUSE_NOTE_MAX} placeholder="why (optional)" />
    </label>
    <button type="submit">Pause {name}</button>
  </form>
);

/** The outbox list of one destination's rows in one status: where its backlog figures lead. */
const outboxOf = (name: string, status: 'pending' | 'dead') =>
  `/admin/outbox?destination=${encodeURIComponent(name)}&status=${status}`;

const patterns = (list: readonly string[] | null) => (list === null ? 'any' : list.join(', '));

/** State, circuit details, backlog, rate, target and filters of one destination, and its action. */
const DestinationCard: FC<{ destination: DestinationView }> = ({ destination }) => (
  <div class={`sender destination d-card-${destination.state}`} data-destination={destination.name}>
    <strong class="name">{destination.name}</strong> <StateBadge state={destination.state} />{' '}
    <span class="note">{destination.kind}</span>
    <dl class="facts">
      <dt>backlog</dt>
      <dd>
        <a href={outboxOf(destination.name, 'pending')}>
          <span data-figure="pending">{String(destination.backlog.pending)}</span> pending
        </a>
        ,{' '}
        <a href={outboxOf(destination.name, 'dead')}>
          <span data-figure="dead">{String(destination.backlog.dead)}</span> dead
        </a>
      </dd>
      <dt>published</dt>
      <dd>
        <span data-figure="rate">{String(destination.publishedPerMinute)}</span> per minute (last 5 minutes)
      </dd>
      <dt>target</dt>
      <dd class="id">{targetText(destination.target)}</dd>
      <dt>filters</dt>
      <dd>
        topics {patterns(destination.filters.topics)}; senders {patterns(destination.filters.senders)}; types{' '}
        {patterns(destination.filters.types)}
      </dd>
      {destination.circuit === 'closed' ? null : (
        <>
          <dt>circuit</dt>
          <dd>
            {destination.circuit} after {String(destination.consecutiveFailures)} failures in a row, opened{' '}
            {iso(destination.openedAt)} UTC
            {destination.probeAt === null ? null : `, next probe ${iso(destination.probeAt)} UTC`}
          </dd>
        </>
      )}
      {destination.waiting === null ? null : (
        <>
          <dt>waiting</dt>
          <dd class="error waiting">{destination.waiting}</dd>
        </>
      )}
      {destination.pausedAt === null ? null : (
        <>
          <dt>paused</dt>
          <dd class="pause-facts">
            by <strong>{destination.pausedBy ?? 'unknown'}</strong> since {iso(destination.pausedAt)} UTC
          </dd>
        </>
      )}
    </dl>
    {destination.pausedAt === null ? <PauseForm name={destination.name} /> : <ResumeForm name={destination.name} />}
  </div>
);

export const DestinationsPage: FC<{ destinations: readonly DestinationView[] }> = ({ destinations }) => (
  <>
    <h1 tabindex={-1}>Destinations</h1>
    <p class="note">
      Where the outbox publishes (OUTBOX_DESTINATIONS, OUTBOX_TARGET_URL). A paused destination's messages stay pending
      until it is resumed; an open circuit stops publishing after failures in a row and sends one probe when it is due
      (half_open). Every pause and resume is recorded with the operator's name.
    </p>
    <div class="senders">
      {destinations.map((destination) => (
        <DestinationCard destination={destination} />
      ))}
    </div>
  </>
);

/** On the overview, while any destination is paused or its circuit is not closed; nothing otherwise. */
export const UnhealthyDestinations: FC<{ destinations: readonly DestinationView[] }> = ({ destinations }) => {
  const unhealthy = destinations.filter((destination) => destination.state !== 'healthy');
  return unhealthy.length === 0 ? null : (
    <section class="paused" aria-label="destinations not healthy" id="unhealthy-destinations">
      <h2>
        Destinations not healthy: {unhealthy.length} (<a href={DESTINATIONS_PATH}>all destinations</a>)
      </h2>
      {unhealthy.map((destination) => (
        <div class="sender" data-destination={destination.name}>
          <strong class="name">{destination.name}</strong> <StateBadge state={destination.state} />{' '}
          <span class="note">
            {String(destination.backlog.pending)} pending, {String(destination.backlog.dead)} dead
            {destination.pausedBy === null ? '' : `; paused by ${destination.pausedBy}`}
          </span>
          {destination.waiting === null ? null : <p class="error waiting">{destination.waiting}</p>}
          {destination.pausedAt === null ? null : <ResumeForm name={destination.name} />}
        </div>
      ))}
    </section>
  );
};

const OUTCOME_HEADERS = ['destination', 'status', 'attempts', 'published (UTC)', 'last error'] as const;

/** A message's row for every destination it goes to: each destination's outcome, this row marked. */
export const DestinationOutcomes: FC<{ rows: readonly OutboxListing[]; current: string }> = ({ rows, current }) => (
  <table class="rows outcomes">
    <thead>
      <tr>
        {OUTCOME_HEADERS.map((header) => (
          <th scope="col">{header}</th>
        ))}
      </tr>
    </thead>
    <tbody>
      {rows.map((row) => (
        <tr data-outcome={row.destination} aria-current={row.id === current ? 'true' : undefined}>
          <td data-label="destination" class="dest">
            {row.id === current ? row.destination : <a href={`/admin/outbox/${row.id}`}>{row.destination}</a>}
          </td>
          <td data-label="status" class="status-cell">
            <Status status={row.status} />
          </td>
          <td data-label="attempts" class="attempts">
            {String(row.attempts)}
          </td>
          <td data-label="published" class="time">
            {iso(row.publishedAt)}
          </td>
          <td data-label="last error" class="error">
            {row.lastError ?? ''}
          </td>
        </tr>
      ))}
    </tbody>
  </table>
);
