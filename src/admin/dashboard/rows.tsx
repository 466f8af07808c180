// The tables of events, of outbox messages and of an event's deliveries (cards on a narrow screen), and what they share with
// the item pages: the status badge, times in UTC, an event's dashboard address. Pure rendering.
import type { Child, FC } from 'hono/jsx';
import type { LoggedDelivery } from '../../inbox/delivery-log.ts';
import { waitingNote } from '../../ops/reads/destinations-view.ts';
import { type EventListing, repeatsText } from '../../ops/reads/events.ts';
import type { OutboxListing } from '../../ops/reads/outbox-view.ts';
import { eventUrl } from '../event-urls.ts';

export const iso = (date: Date | null | undefined) =>
  date == null ? '' : date.toISOString().replace('T', ' ').slice(0, 19);

export const eventPath = (provider: string, eventId: string) => eventUrl('dashboard', { provider, eventId });
const messagePath = (id: string) => `/admin/outbox/${id}`;

export const Status: FC<{ status: string }> = ({ status }) => <span class={`status s-${status}`}>{status}</span>;

/** A labelled cell: on a narrow screen each row becomes a card and the label shows beside the value. */
const Cell: FC<{ label: string; class?: string; children?: Child }> = ({ label, class: className, children }) => (
  <td data-label={label} class={className}>
    {children}
  </td>
);

/** A table's column headers (hidden on a narrow screen, where each cell carries its label). */
export const ColumnHeads: FC<{ headers: readonly string[] }> = ({ headers }) => (
  <thead>
    <tr>
      {headers.map((header) => (
        <th scope="col">{header}</th>
      ))}
    </tr>
  </thead>
);

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
      <ColumnHeads headers={headers} />
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
    <Cell label="failed attempts" class="attempts">
      {String(attempts)}
    </Cell>
    <Cell label="last error" class="error">
      {lastError ?? ''}
    </Cell>
  </>
);

const EVENT_HEADERS = [
  'received (UTC)',
  'provider',
  'event',
  'type',
  'status',
  'failed attempts',
  'last error',
] as const;

export const EventTable: FC<{ events: EventListing[]; empty: string }> = ({ events, empty }) => (
  <Rows headers={EVENT_HEADERS} count={events.length} empty={empty}>
    {events.map((event) => (
      <tr data-event={`${event.provider}/${event.eventId}`}>
        <Cell label="received" class="time">
          {iso(event.receivedAt)}
        </Cell>
        <Cell label="provider" class="provider">
          {event.provider}
        </Cell>
        <Cell label="event" class="id">
          <a href={eventPath(event.provider, event.eventId)}>{event.eventId}</a>
        </Cell>
        <Cell label="type" class="type">
          {event.eventType}
        </Cell>
        <StateCells status={event.status} attempts={event.attempts} lastError={event.lastError} />
      </tr>
    ))}
  </Rows>
);

const MESSAGE_HEADERS = [
  'created (UTC)',
  'id',
  'topic',
  'destination',
  'status',
  'failed attempts',
  'last error',
] as const;

/**
 * Messages newest first. `waits` (destinationWaits): a pending message whose destination is not
 * publishing, and that has no error of its own, shows why it waits in its last error's place.
 */
export const OutboxTable: FC<{ messages: OutboxListing[]; empty: string; waits?: ReadonlyMap<string, string> }> = ({
  messages,
  empty,
  waits,
}) => (
  <Rows headers={MESSAGE_HEADERS} count={messages.length} empty={empty}>
    {messages.map((message) => (
      <tr data-message={message.id}>
        <Cell label="created" class="time">
          {iso(message.createdAt)}
        </Cell>
        <Cell label="id" class="id">
          <a href={messagePath(message.id)}>{message.id}</a>
        </Cell>
        <Cell label="topic" class="topic">
          {message.topic}
        </Cell>
        <Cell label="destination" class="destination">
          {message.destination}
        </Cell>
        <StateCells
          status={message.status}
          attempts={message.attempts}
          lastError={message.lastError ?? (waits === undefined ? null : waitingNote(message, waits))}
        />
      </tr>
    ))}
  </Rows>
);

const DELIVERY_HEADERS = ['delivered (UTC)', 'answer', 'took', 'trace id'] as const;

/** An event's delivery log, newest first: when, what we answered, how long it took, its trace. */
export const DeliveryTable: FC<{ deliveries: LoggedDelivery[]; empty: string }> = ({ deliveries, empty }) => (
  <Rows headers={DELIVERY_HEADERS} count={deliveries.length} empty={empty}>
    {deliveries.map((delivery) => (
      <tr data-delivery={delivery.traceId}>
        <Cell label="delivered" class="time">
          {iso(delivery.deliveredAt)}
        </Cell>
        <Cell label="answer" class="status-cell">
          {`${delivery.statusCode} `}
          <Status status={delivery.outcome} />
          {delivery.repeats === 0 ? null : <span class="repeats">{` ${repeatsText(delivery)}`}</span>}
        </Cell>
        <Cell label="took" class="attempts">
          {`${delivery.durationMs} ms`}
        </Cell>
        <Cell label="trace id" class="id">
          {delivery.traceId}
        </Cell>
      </tr>
    ))}
  </Rows>
);
